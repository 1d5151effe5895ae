#!/usr/bin/env bash
# The README's second command (and what CI runs): install what is missing, build, and run every
# test twice: in the normal build, and in an AddressSanitizer + UndefinedBehaviorSanitizer build.
#   KILN_TEST_SANITIZE=0 skips the sanitizer pass (for quick local runs).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
start=$SECONDS

echo "== build (RelWithDebInfo) =="
bash scripts/build.sh build
echo "== tests =="
ctest --test-dir build --output-on-failure -j "$(nproc)"

if [[ ${KILN_TEST_SANITIZE:-1} != 0 ]]; then
  echo "== build (ASan + UBSan) =="
  # Benchmarks and the install test add nothing under the sanitizers.
  bash scripts/build.sh build-asan -DKILN_SANITIZE=ON -DKILN_BUILD_BENCH=OFF
  echo "== tests under ASan + UBSan =="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE install
fi

echo "kiln: all tests passed in $((SECONDS - start)) s"
