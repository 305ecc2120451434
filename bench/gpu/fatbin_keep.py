"""Zero the GPU machine code of every architecture but one in a shared
library's .nv_fatbin section, keeping the file's layout, so that it
compresses to about what that GPU loads.

ONNX Runtime's CUDA provider carries SASS for sm_75 to sm_120 (about 166 MB
of its 230 MB); a Hopper GPU (sm_90) runs only the sm_90 entries (SASS is
not compatible across major versions; this build carries no PTX, which
the script would keep). The
device tool moves at most 64 MiB a call, so bench/gpu/bundle.sh ships the
library with the other architectures' payloads zeroed: entry headers stay,
so the CUDA runtime still finds and loads the sm_90 images; on any other GPU
the pruned library fails to load its kernels. Not for distribution: `make
runtime-gpu` installs the library as published.

usage: fatbin_keep.py SRC DST MAJOR   (MAJOR 9 keeps sm_90 and sm_90a)
"""
import struct
import subprocess
import sys

MAGIC = 0xBA55ED50


def fatbin_section(path):
    out = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if ".nv_fatbin" in f:
            k = f.index(".nv_fatbin")
            return int(f[k + 3], 16), int(f[k + 4], 16)
    raise SystemExit(f"{path}: no .nv_fatbin section")


def main():
    src, dst, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = bytearray(open(src, "rb").read())
    off, size = fatbin_section(src)
    i, kept, zeroed = off, 0, 0
    while i < off + size:
        magic, _, hsz, fsz = struct.unpack_from("<IHHQ", data, i)
        if magic != MAGIC:  # padding between fat binaries
            i += 8
            continue
        j, end = i + hsz, i + hsz + fsz
        while j < end:
            kind, _, ehs, pad = struct.unpack_from("<HHII", data, j)
            sm = struct.unpack_from("<I", data, j + 28)[0]
            if kind == 2 and sm // 10 != keep:  # 2 = ELF (SASS); 1 = PTX is kept
                data[j + ehs : j + ehs + pad] = bytes(pad)
                zeroed += pad
            else:
                kept += pad
            j += ehs + pad
        i = end
    open(dst, "wb").write(data)
    print(f"{dst}: kept {kept} bytes of sm_{keep}x (and PTX), zeroed {zeroed}")


if __name__ == "__main__":
    main()
