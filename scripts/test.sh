#!/usr/bin/env bash
# The README's second command (and what CI runs): install what is missing, build, and run every
# test twice: in the normal build, and in an AddressSanitizer + UndefinedBehaviorSanitizer build.
#   KILN_TEST_SANITIZE=0 skips the sanitizer pass (for quick local runs).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/python-env.sh
python=$PWD/.venv/bin/python
start=$SECONDS

# Build and test times are reported separately (the CI budget is 30 minutes cold).
phase() { echo "kiln: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }
phase_start=$SECONDS

echo "== build (RelWithDebInfo) =="
bash scripts/build.sh build -DPython_EXECUTABLE="$python"
phase "the build"
echo "== tests (C++ suites and the Python package's pytest files) =="
ctest --test-dir build --output-on-failure -j "$(nproc)"
phase "the tests"

# `pip install .` as a user runs it, into a fresh virtual environment, but into the build folder
# above with the same configuration, so that it links the package instead of building the
# library a second time; then the installed package runs the example from outside the checkout.
echo "== pip install . (fresh virtual environment) =="
rm -rf build/pip-venv
"$python" -m venv build/pip-venv
build/pip-venv/bin/python -m pip install --quiet --disable-pip-version-check . \
  -C build-dir=build -C cmake.define.Python_EXECUTABLE="$python" \
  -C cmake.define.KILN_BUILD_TESTS=ON -C cmake.define.KILN_BUILD_BENCH=ON \
  -C cmake.define.KILN_CHECK_LAYERS=ON
(cd /tmp && "$OLDPWD/build/pip-venv/bin/python" "$OLDPWD/examples/python/train_mlp.py" --steps 12 --compile)
phase "pip install ."

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
