#!/usr/bin/env bash
# The README's second command (and what CI runs): install what is missing, build, and run every
# test twice: in the normal build, and in an AddressSanitizer + UndefinedBehaviorSanitizer build.
#   KILN_TEST_SANITIZE=0 skips the sanitizer pass (for quick local runs).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
start=$SECONDS

# Build and test times are reported separately (the CI budget is 30 minutes cold).
phase() { echo "kiln: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }
phase_start=$SECONDS

echo "== build (RelWithDebInfo) =="
bash scripts/build.sh build
phase "the build"
echo "== tests =="
ctest --test-dir build --output-on-failure -j "$(nproc)"
phase "the tests"

if [[ ${KILN_TEST_SANITIZE:-1} != 0 ]]; then
  echo "== build (ASan + UBSan) =="
  # Benchmarks and the install test add nothing under the sanitizers.
  # The layer link checks prove the same thing in both builds; the normal build has run them.
  bash scripts/build.sh build-asan -DKILN_SANITIZE=ON -DKILN_BUILD_BENCH=OFF -DKILN_CHECK_LAYERS=OFF
  phase "the ASan + UBSan build"
  echo "== tests under ASan + UBSan =="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE install
  phase "the tests under ASan + UBSan"
fi

echo "kiln: all tests passed in $((SECONDS - start)) s"
