#!/usr/bin/env bash
# The GPU checks behind bench/results/gpu.md, in one run on a machine with
# one NVIDIA GPU (CUDA 13 driver) and a Python with PyTorch, transformers,
# onnx and tokenizers (the torch peer). It needs no Go and no network: the
# bundle that bench/gpu/bundle.sh makes (GPU_BUNDLE, default .gpu) holds
# the bench binary, the models/ort test binary, ONNX Runtime 1.29 with its
# CUDA provider, the tokenizer assets and scifact. Results go to OUT
# (default /tmp/gpu-out): log.txt and one file per step (the bench's JSON
# lines, read back with `bench rerank --report-from` and friends).
#
# PROVIDER=cpu SMALL=1 bench/gpu/device.sh is a dry run of every step on a
# machine without a GPU (the torch peer fails there without torch).
# STEPS="rerank_peer test" runs only those steps; PROFILES=fast narrows the
# real-pair steps to those profiles; INT8_QUERIES sets the scifact queries
# of the CPU int8 step (default 10, as in rerank.md; 1 with SMALL).
#
# Each step has its own time limit and the steps run in order of
# importance, so a short lease still brings back the first ones; DEADLINE
# (seconds from the start, default 540: under the device tool's 600 s a
# command) skips the steps that would start after it. The script exits
# non-zero when a step failed or was skipped for time (log.txt says
# which), and the test step fails, not skips, without CUDA
# (HYBRANK_REQUIRE_CUDA; not with PROVIDER=cpu).
set -u
DEADLINE=${DEADLINE:-540}
failed=0
OUT=${OUT:-/tmp/gpu-out}
B=${GPU_BUNDLE:-.gpu}
W=${GPU_WORK:-/tmp/hybrank-gpu}
mkdir -p "$OUT" "$W/ort" "$W/data" "$W/assets" "$W/cache"
LOG=$OUT/log.txt
log() { echo "== $(date +%T) $*" | tee -a "$LOG"; }
# step NAME[:TAG] SECONDS CMD...: stdout to OUT/NAME.txt (OUT/NAME-TAG.txt
# with a tag), stderr to the log; skipped when STEPS (a space-separated
# list) does not name NAME.
step() {
	local name=${1%%:*} file=${1/:/-} secs=$2
	shift 2
	case " ${STEPS:-$name} " in *" $name "*) ;; *) return ;; esac
	local left=$((DEADLINE - SECONDS))
	if [ "$left" -lt 30 ]; then
		log "$file: skipped, ${left}s left before the ${DEADLINE}s deadline"
		failed=1
		return
	fi
	secs=$((secs < left ? secs : left))
	log "$file (limit ${secs}s): $*"
	local t0=$SECONDS rc
	# -k: a step stuck where it does not watch its context (a model load,
	# the CUDA start) is killed 10 s after the TERM.
	timeout -k 10 "$secs" "$@" >>"$OUT/$file.txt" 2>>"$LOG"
	rc=$?
	log "$file: exit $rc after $((SECONDS - t0))s"
	[ "$rc" -eq 0 ] || failed=1
}

# The bundle is unpacked when it differs from what was unpacked last (a
# warm machine keeps /tmp between runs: its second run must not run the
# previous bundle's binaries).
stamp=$(cat "$B"/*.xz | sha256sum | cut -c1-16)
if [ -x "$W/bench" ] && [ -x "$W/ort.test" ] && [ "$(cat "$W/bundle.stamp" 2>/dev/null)" = "$stamp" ]; then
	log "bundle $stamp unpacked already in $W (a warm machine's second run)"
else
	log "unpack $B (bundle $stamp)"
	rm -rf "$W/models" "$W/quant" "$W/cache"/* "$W/bundle.stamp"
	xz -dc "$B/ort-core.so.xz" >"$W/ort/libonnxruntime.so.1" &&
		xz -dc "$B/ort-cuda.so.xz" >"$W/ort/libonnxruntime_providers_cuda.so" &&
		cp "$B/libonnxruntime_providers_shared.so" "$W/ort/" &&
		xz -dc "$B/bench.xz" >"$W/bench" && chmod +x "$W/bench" &&
		xz -dc "$B/ort.test.xz" >"$W/ort.test" && chmod +x "$W/ort.test" &&
		tar -xJf "$B/data.tar.xz" -C "$W/data" &&
		tar -xJf "$B/assets.tar.xz" -C "$W/assets" || {
		log "unpack failed"
		exit 1
	}
	echo "$stamp" >"$W/bundle.stamp"
fi
log "bench $(sha256sum "$W/bench" | cut -c1-16), ort.test $(sha256sum "$W/ort.test" | cut -c1-16)"

# The A/B's older bench follows the bundle, also on a warm machine.
rm -f "$W/bench-old"
if [ -s "$B/bench-old.xz" ]; then xz -dc "$B/bench-old.xz" >"$W/bench-old" && chmod +x "$W/bench-old"; fi

# The CUDA 13 libraries the provider links (cuBLAS, cuRAND, the runtime)
# and loads (cuDNN, cuFFT): from the Python environment's nvidia-*
# packages or a CUDA install.
libdirs=$(find / -xdev \( -name 'libcublasLt.so.13*' -o -name 'libcurand.so.10*' -o -name 'libcudart.so.13*' \
	-o -name 'libcudnn.so.9*' -o -name 'libcufft.so.12*' \) -printf '%h\n' 2>/dev/null | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH=${libdirs}${LD_LIBRARY_PATH:-}
export HYBRANK_ORT_LIB=$W/ort/libonnxruntime.so.1 HYBRANK_ASSETS=$W/assets HYBRANK_DATASETS=$W/data
export XDG_CACHE_HOME=$W/cache
SCIFACT=$W/data/scifact
P=${PROVIDER:-cuda}
# SMALL=1: a few calls per step, for a dry run.
queries=20 int8queries=${INT8_QUERIES:-10} batches=1,4,16,64,128,256 mintime=1s secs=6s searches=100
if [ -n "${SMALL:-}" ]; then queries=1 int8queries=1 batches=1,4 mintime=50ms secs=1s searches=4; fi
{
	echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
	nvidia-smi | head -4
	python3 -c 'import torch, transformers, onnx, tokenizers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "onnx", onnx.__version__, "tokenizers", tokenizers.__version__)'
	lscpu | grep -E 'Model name|^CPU\(s\)'
	ldd "$W/ort/libonnxruntime_providers_cuda.so" | grep -E 'not found|cublas|cudart|curand'
} >>"$LOG" 2>&1

M=$W/models
[ -d "$W/models/embed" ] || timeout 120 "$W/bench" models --out "$M" --vocab "$W/assets/bert-base-uncased-vocab.txt" --tokenizer-json "$W/assets/all-minilm-l6-v2-tokenizer.json" >>"$LOG" 2>&1

# 1. The CUDA path's test: auto picks CUDA; every profile and the embedder
#    score as on the CPU within 1e-4 relative, on scifact pairs.
[ "$P" = cpu ] || export HYBRANK_REQUIRE_CUDA=1
step test 240 "$W/ort.test" -test.run 'TestCUDAProvider' -test.v -test.count=1

common=(--models-root "$M" --provider "$P" --real-data "$SCIFACT" --real-queries "$queries" --real-profiles "${PROFILES:-fast,balanced,accurate}" --synthetic=false --quantize-cache "$W/quant" --json --out "")
# 2. Real scifact pairs, float32 and the float16 copy, per profile: pairs/s,
#    GPU memory, per-query Spearman of float16 vs float32. With an older
#    bench in the bundle (bench-old.xz), an A/B: old, new, old, new, rows in
#    rerank_fp16-old.txt and rerank_fp16-new.txt.
if [ -x "$W/bench-old" ]; then
	for round in 1 2; do
		step rerank_fp16:old 120 "$W/bench-old" rerank "${common[@]}" --fp16 --peers=false
		step rerank_fp16:new 120 "$W/bench" rerank "${common[@]}" --fp16 --peers=false
	done
else
	step rerank_fp16 240 "$W/bench" rerank "${common[@]}" --fp16 --peers=false
fi
# 3. hybrank float16 beside PyTorch float16 (SDPA) on the same pairs and
#    weights, batches 16 to 128.
step rerank_peer 300 "$W/bench" rerank "${common[@]}" --quantize fp16 --peers --peer torch --peer-batches 16,32,64,128 --peer-rounds 2
# 4. The batch curve: one batch per call, 1 to 256 pairs, 128-token and
#    scifact-length (384) text, float16 for every profile, float32 for
#    balanced.
sweep=(--models-root "$M" --provider "$P" --sweep --sweep-call-per-batch --sweep-batches "$batches" --sweep-threads 1
	--sweep-doc-tokens 128,384 --data "$SCIFACT" --real-data "" --peers=false --peak-n 0 --min-time "$mintime" --json --out "")
step sweep 300 "$W/bench" rerank "${sweep[@]}" --quantize fp16 --sweep-profiles fast,balanced,accurate
step sweep 150 "$W/bench" rerank "${sweep[@]}" --sweep-profiles balanced
# 5. The server's dynamic batching on the GPU: 16 clients × 8 documents.
step serve 120 "$W/bench" serve --models-root "$M" --provider "$P" --quantize fp16 --profile balanced --clients 16 --docs 8 \
	--batching both --duration "$secs" --warmup 1s --curve=false --json --out ""
# 6. Budgeted search on scifact: BM25 candidates (100) reranked within
#    each of BUDGETS (default 25, 50 and 100 ms) by each of RERANKS
#    (default balanced), float32 and the float16 copy (QUANTS, default
#    "fp32 fp16"); the check is at TARGET_BUDGET (default 50 ms, one of
#    BUDGETS). With an older bench in the bundle (bench-old.xz: bundle.sh
#    with OLD_BENCH), an A/B: old, new, old, new, rows in hybrid-old.txt
#    and hybrid-new.txt. Both write the same calibration cache, so each
#    leg starts from the cost table the one before it learned.
hybrid=(hybrid --data "$SCIFACT" --models-root "$M" --provider "$P" --no-dense --configs none
	--budget-sweep "${BUDGETS:-25ms,50ms,100ms}" --rerank "${RERANKS:-balanced}" --candidates 100 --sweep-searches "$searches" --target-budget "${TARGET_BUDGET:-50ms}" --json --out "")
for q in ${QUANTS:-fp32 fp16}; do
	q=${q#fp32}
	if [ -x "$W/bench-old" ]; then
		for round in 1 2; do
			step hybrid:old 180 "$W/bench-old" "${hybrid[@]}" --quantize "$q"
			step hybrid:new 180 "$W/bench" "${hybrid[@]}" --quantize "$q"
		done
	else
		step hybrid 180 "$W/bench" "${hybrid[@]}" --quantize "$q"
	fi
done
# 7. The embedder, float32 and float16, on scifact text.
step embed 120 "$W/bench" embed --models-root "$M" --provider "$P" --profile embed --data "$SCIFACT" --doc-tokens 256 --pairs 64 --min-time "$mintime" --peak-n 0 --json --out ""
step embed 120 "$W/bench" embed --models-root "$M" --provider "$P" --profile embed --quantize fp16 --data "$SCIFACT" --doc-tokens 256 --pairs 64 --min-time "$mintime" --peak-n 0 --json --out ""
# 8. int8 on this machine's CPU (last: the GPU steps come first), not its GPU: float32 and the int8 copy
#    (onnx/quantize's default) of each profile on real scifact pairs,
#    two intra-op threads and 10 queries as in rerank.md. The hosts of
#    these GPUs have been Intel Xeons, and ONNX Runtime's integer GEMMs use
#    AMX-INT8 where the CPU has it (the flags go to the log). A 2-core
#    development VM with AMX measured it on 2026-11-27 (int8 1.17–2.11×
#    float32; bench/results/rerank_int8_profile.md): with fast weight
#    products the int8 ≥ 2.5× check of #10 is decided by the float32 rest
#    of the graph. This step gives the figure for a server-class host.
{
	echo "CPU flags (int8): $(grep -o -w -E 'amx_(tile|int8|bf16)|avx512_vnni|avx_vnni|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
} >>"$LOG" 2>&1
step int8_cpu 420 "$W/bench" rerank --models-root "$M" --provider cpu --threads 2 --real-data "$SCIFACT" --real-queries "$int8queries" \
	--real-profiles "${PROFILES:-fast,balanced,accurate}" --synthetic=false --int8 --quantize-cache "$W/quant" --peers=false --peak-n 1024 --min-time "$mintime" --json --out ""

nvidia-smi --query-gpu=name,memory.used,temperature.gpu --format=csv >>"$LOG" 2>&1
log "done (failed=$failed)"
exit "$failed"
