#!/usr/bin/env bash
# One check of the GPU road on a lent GPU machine, in about 9 minutes; each part has its own time limit, so a
# part that hangs costs only its own share and the others still run.
#
#   1. the GPU tests: an RLOO step per engine on CUDA, the device plumbing, chunked log-probs, the native
#      engine's captured decode graph against its eager loop (limit 100 s);
#   2. bench_gpu.py at Qwen2.5-0.5B's shape: the native engine (decode captured as a CUDA graph) and hf and,
#      where trl is installed, TRL's RLOOTrainer, one warm-up and one timed step each, with the FLOP floor
#      beside each time (limit 190 s); then the native engine decoding eagerly (COUNTDOWN_STUDY_CUDA_GRAPHS=0)
#      with its update's activations recomputed (--gradient-checkpointing): sampling and update each beside
#      the first run's (limit 80 s);
#   3. bench_packed_grid.py: the quick preset's uniform RLOO row at 8 seeds on cuda, trained by the local
#      executor at 8, 4 and 1 runs per GPU, printing runs per hour for each (limit 210 s; results are written
#      after each K, highest K first, so a cut-short run keeps the packed figures).
#
# Run from the repository root, with the package installed on a CUDA build of torch:
#   bash benchmarks/gpu_check.sh            # JSON into benchmarks/results/
#   OUT=/some/folder bash benchmarks/gpu_check.sh
# Exit status: the number of parts that failed or ran out of time (0: all passed).
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
failed=0
started=$(date +%s)

part() {  # part NAME LIMIT_SECONDS COMMAND...: run it under a time limit, say how it ended and when
    local name=$1 limit=$2
    shift 2
    echo "=== $name (limit ${limit} s, at $(( $(date +%s) - started )) s)"
    timeout --kill-after=10 "$limit" "$@"
    local status=$?
    if [ "$status" -ne 0 ]; then
        failed=$((failed + 1))
        [ "$status" -eq 124 ] && echo "=== $name: ran out of its ${limit} s" || echo "=== $name: exit $status"
    fi
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "no nvidia-smi"
python -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'available', torch.cuda.is_available(), 'transformers', transformers.__version__)"
python -c "import trl; print('trl', trl.__version__)" 2>/dev/null || echo "trl not installed: no TRL arm"

part "GPU tests" 100 python -m pytest -q -x tests/test_gpu.py tests/test_device_plumbing.py tests/test_logprobs_chunked.py \
    tests/test_static_decode.py
part "bench_gpu.py" 190 python benchmarks/bench_gpu.py --warmup 1 --steps 1 --engines native,hf \
    --out "$OUT/gpu_step.json"
part "bench_gpu.py, eager decode, checkpointed update" 80 env COUNTDOWN_STUDY_CUDA_GRAPHS=0 \
    python benchmarks/bench_gpu.py --warmup 1 --steps 1 --engines native --no-trl --gradient-checkpointing \
    --out "$OUT/gpu_step_eager.json"
part "packed grid" 210 python benchmarks/bench_packed_grid.py --preset quick --runs 8 --runs-per-gpu 8,4,1 \
    --device cuda --out "$OUT/packed_grid.json"

echo "=== done in $(( $(date +%s) - started )) s; parts failed: $failed; results in $OUT"
exit "$failed"
