#!/usr/bin/env bash
# Runs on the lent GPU machine (/work/.library/device), from the repository root, after
# scripts/gpu_bundle.sh packed a build here: the CUDA tests of every suite, the CUDA benchmarks,
# and the same workloads in PyTorch when torch imports there. Logs go to $OUT (or ./gpu-out).
#
#   scripts/gpu_run.sh [BUILD_DIR]        (default build-gpu)
#   KILN_GPU_BENCH=0 scripts/gpu_run.sh   (the tests only)
#   KILN_GPU_BENCH_FILTER='Sdpa|Conv' KILN_TORCH_BENCH_ARGS=--compute-only scripts/gpu_run.sh
#                                         (some benchmarks only)
#   KILN_GPU_SUITES='codegen compile' KILN_GPU_TORCH=0 scripts/gpu_run.sh
#                                         (some suites, in this order; no PyTorch run)
#   KILN_GPU_FILTER_opinfo='*Cuda*softmax*' scripts/gpu_run.sh
#                                         (one suite's filter instead of every CUDA test: the
#                                         opinfo suite compiles kernels for over 4 minutes on a
#                                         fresh machine)
set -uo pipefail
build=${1:-build-gpu}
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out" /work
[[ -e /work/main ]] || ln -sfn "$PWD" /work/main  # CTest files name absolute paths
tar xJf .gpu/bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/$build/carried-libs:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export KILN_CACHE_DIR=/tmp/kiln-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
status=0
# Each suite runs as gtest shards in parallel, one per core: most of a fresh machine's test time
# is NVRTC compiling kernels on the CPU, and the shards share the one GPU.
shards=${KILN_GPU_SHARDS:-$(nproc)}
for suite in ${KILN_GPU_SUITES:-runtime opinfo codegen compile}; do
  bin=$build/tests/kiln_${suite}_tests
  [[ -x $bin ]] || continue
  filter_var=KILN_GPU_FILTER_$suite
  filter=${!filter_var:-'*Cuda*:*CUDA*:*Gpu*:*Nvrtc*:SymbolicKernel*'}
  echo "== $suite: CUDA tests ($filter), $shards shards"
  pids=()
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$bin" --gtest_filter="$filter" \
      --gtest_brief=1 >"$out/shard_$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { status=1; echo "shard $i of $suite failed"; }
  done
  cat "$out"/shard_*.log >"$out/test_$suite.log" && rm -f "$out"/shard_*.log
  grep -E '^\[row|^\[  (PASSED|FAILED|SKIPPED)|FAILED|Failure|tests ran|^\[compile opinfo\]' \
    "$out/test_$suite.log" || true
done
bench=${KILN_GPU_BENCH:-1}
if [[ $bench == 1 && -x $build/bench/kiln_bench_cuda ]]; then
  echo "== kiln_bench_cuda"
  "$build/bench/kiln_bench_cuda" --benchmark_counters_tabular=true \
    --benchmark_filter="${KILN_GPU_BENCH_FILTER:-.}" 2>&1 | tee "$out/bench_cuda.log" | tail -25
fi
if [[ $bench == 1 && ${KILN_GPU_TORCH:-1} == 1 ]] && python3 -c 'import torch' 2>/dev/null; then
  echo "== torch_cuda_bench.py"
  # shellcheck disable=SC2086 # a word list
  PYTHONUNBUFFERED=1 timeout 240 python3 bench/torch_cuda_bench.py ${KILN_TORCH_BENCH_ARGS:-} \
    --json "$out/torch.json" 2>&1 | tee "$out/torch.log"
fi
exit $status
