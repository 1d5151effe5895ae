#!/usr/bin/env bash
# Runs on the lent GPU machine (/work/.library/device), from the repository root, after
# scripts/gpu_bundle.sh packed a build here: the CUDA tests of every suite, the CUDA benchmarks,
# and the same workloads in PyTorch when torch imports there. Logs go to $OUT (or ./gpu-out).
#
#   scripts/gpu_run.sh [BUILD_DIR]        (default build-gpu)
#   KILN_GPU_BENCH=0 scripts/gpu_run.sh   (the tests only)
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
for suite in runtime opinfo codegen compile; do
  bin=$build/tests/kiln_${suite}_tests
  [[ -x $bin ]] || continue
  filter_var=KILN_GPU_FILTER_$suite
  filter=${!filter_var:-'*Cuda*:*CUDA*:*Gpu*:*Nvrtc*'}
  echo "== $suite: CUDA tests ($filter)"
  "$bin" --gtest_filter="$filter" --gtest_brief=1 2>&1 | tee "$out/test_$suite.log" |
    grep -E '^\[row|^\[  (PASSED|FAILED|SKIPPED)|FAILED|Failure|tests ran' || true
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
done
bench=${KILN_GPU_BENCH:-1}
if [[ $bench == 1 && -x $build/bench/kiln_bench_cuda ]]; then
  echo "== kiln_bench_cuda"
  "$build/bench/kiln_bench_cuda" --benchmark_counters_tabular=true 2>&1 | tee "$out/bench_cuda.log" | tail -25
fi
if [[ $bench == 1 ]] && python3 -c 'import torch' 2>/dev/null; then
  echo "== torch_cuda_bench.py"
  PYTHONUNBUFFERED=1 timeout 240 python3 bench/torch_cuda_bench.py --json "$out/torch.json" 2>&1 | tee "$out/torch.log"
fi
exit $status
