#!/usr/bin/env bash
# The README's second command (and what CI runs): install what is missing, build, run every test
# of the normal build (the C++ suites and the Python package's pytest files), pip install the
# package into a fresh virtual environment, then build again with AddressSanitizer +
# UndefinedBehaviorSanitizer and run the C++ tests there (the Python package is not built
# under the sanitizers).
#   KILN_TEST_SANITIZE=0 skips the sanitizer pass (for quick local runs).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
start=$SECONDS
bash scripts/python-env.sh
python=$PWD/.venv/bin/python

# Build and test times are reported separately (the CI budget is 30 minutes cold).
phase() { echo "kiln: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }
phase_start=$start
phase "the Python environment"

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
  # The two tests that hand every generated CUDA kernel to NVRTC take 100 s here and check
  # NVRTC's work again; the emitters still run instrumented in CudaCodegen.KernelsOfEach*.
  # DynamicTraining trains a transformer block at twelve drawn sizes: slow when instrumented, and
  # the same code runs there in DynamicCompile's training test.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE install \
    -E "EveryKernelCompilesToPtxForSm80AndSm90|EveryReductionProgramCompilesToPtxForSm80AndSm90|DynamicTraining"
  phase "the tests under ASan + UBSan"
fi

echo "kiln: all tests passed in $((SECONDS - start)) s"
