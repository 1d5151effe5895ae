#!/usr/bin/env bash
# ThreadSanitizer over the tests that run threads: the thread pool, concurrent and reentrant
# backward passes, and several threads sharing one compiled function. A build of its own in
# build-tsan/ (LLVM and CUDA off, so only Kiln's code is instrumented and the build stays
# small); OpenBLAS runs single-threaded (its threads are not instrumented), and
# scripts/tsan.supp names what is not Kiln's. Not part of CI: run it before a stop and report.
#   scripts/tsan.sh [GTEST_FILTER]
set -euo pipefail
cd "$(dirname "$0")/.."

filter=${1:-'ThreadPool.*:CompileThreads.*:Concurrency.*:Reentrant.*:Node.ThreadIdDiffersAcrossThreads:Modes.GradModeIsThreadLocal:*LargeInplaceUsesThreads:*IndependentOfThreadCount:*DoNotDependOnThreadCount:*AcrossThreads:*AboveParallelGrain'}
build_dir=build-tsan
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_TSAN=ON \
  -DKILN_WITH_LLVM=OFF -DKILN_WITH_CUDA=OFF -DKILN_BUILD_BENCH=OFF >/dev/null
suites=(kiln_runtime_tests kiln_autograd_tests kiln_compile_tests)
ninja -C "$build_dir" -j "$(nproc)" "${suites[@]}"
export OPENBLAS_NUM_THREADS=1
export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp halt_on_error=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export KILN_CACHE_DIR=$PWD/$build_dir/kiln_cache
status=0
for t in "${suites[@]}"; do
  echo "== $t ($filter)"
  "$build_dir/tests/$t" --gtest_filter="$filter" --gtest_brief=1 2>&1 | tee "$build_dir/$t.tsan.log" |
    grep -E "WARNING: ThreadSanitizer|SUMMARY|PASSED|FAILED|tests? from" || true
  if grep -q "WARNING: ThreadSanitizer" "$build_dir/$t.tsan.log"; then status=1; fi
done
exit $status
