package measure

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// GPUMemoryMB returns the GPU memory this process holds in MiB, as
// nvidia-smi reports it (CUDA context, runtime arenas and buffers), or 0
// where nvidia-smi is missing or lists no process. Where the driver does
// not list this process (some containers hide processes' usage), it falls
// back to the memory used on all of the machine's GPUs together, which on
// a one-GPU machine of one's own is the same figure.
func GPUMemoryMB(ctx context.Context) float64 {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return 0
	}
	if mb, ok := gpuAppMemory(out, os.Getpid()); ok {
		return mb
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return 0 // no process on the GPU: not ours either
	}
	out, err = exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return 0
	}
	var total float64
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if v, err := strconv.ParseFloat(strings.TrimSpace(l), 64); err == nil {
			total += v
		}
	}
	return total
}

// gpuAppMemory sums the used_memory of pid's lines in nvidia-smi's
// "pid, used_memory" CSV (one line per GPU it uses).
func gpuAppMemory(csv []byte, pid int) (float64, bool) {
	var sum float64
	found := false
	for _, l := range strings.Split(string(csv), "\n") {
		f := strings.Split(l, ",")
		if len(f) != 2 {
			continue
		}
		p, err1 := strconv.Atoi(strings.TrimSpace(f[0]))
		mb, err2 := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
		if err1 == nil && err2 == nil && p == pid {
			sum, found = sum+mb, true
		}
	}
	return sum, found
}
