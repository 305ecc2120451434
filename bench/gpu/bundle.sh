#!/usr/bin/env bash
# Makes the bundle that bench/gpu/device.sh runs on a GPU machine without
# Go or network (GPU_BUNDLE, default .gpu, git-ignored): the bench binary
# and the models/ort test binary (stripped), ONNX Runtime 1.29 with the CUDA
# provider (make runtime-gpu) keeping only the sm_90 machine code
# (fatbin_keep.py: an H100 or H200), the tokenizer assets and scifact, all
# xz-compressed to fit the device tool's 64 MiB per call (about 60 MiB with
# the working tree).
set -eu
B=${GPU_BUNDLE:-.gpu}
ORT=${ORT_DIR:-.deps/ort}
DATA=${HYBRANK_DATASETS:-../shared/datasets}
mkdir -p "$B"
go build -buildvcs=auto -ldflags='-s -w' -o "$B/bench" ./cmd/bench
go test -c -ldflags='-s -w' -o "$B/ort.test" ./models/ort
xz -T0 -9e -f "$B/bench" "$B/ort.test"
# OLD_BENCH: a bench binary built at an earlier commit, for device.sh's
# A/B of the budgeted search.
rm -f "$B/bench-old.xz"
if [ -n "${OLD_BENCH:-}" ]; then xz -T0 -9e -c "$OLD_BENCH" >"$B/bench-old.xz"; fi
# The runtime (slow to compress) only when it changed.
if [ ! -s "$B/ort-cuda.so.xz" ] || [ "$ORT/libonnxruntime_providers_cuda.so" -nt "$B/ort-cuda.so.xz" ] || [ "$ORT/libonnxruntime.so.1" -nt "$B/ort-core.so.xz" ]; then
	python3 bench/gpu/fatbin_keep.py "$ORT/libonnxruntime_providers_cuda.so" "$B/ort-cuda.so" 9
	cp "$ORT/libonnxruntime.so.1" "$B/ort-core.so"
	xz -T0 -9e -f "$B/ort-cuda.so" "$B/ort-core.so"
fi
cp "$ORT/libonnxruntime_providers_shared.so" "$B/"
tar -cJf "$B/data.tar.xz" -C "$DATA" scifact
tar -cJf "$B/assets.tar.xz" -C .deps/assets bert-base-uncased-vocab.txt all-minilm-l6-v2-tokenizer.json
du -b "$B"/* | sort -n
