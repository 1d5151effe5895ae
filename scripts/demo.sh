#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/python-env.sh
# Only the library, the kiln tool and the Python package: the test suites and benchmarks are the
# second command's.
KILN_BUILD_TARGETS="kiln_cli kiln_python" bash scripts/build.sh build \
  -DPython_EXECUTABLE="$PWD/.venv/bin/python"
# The demo trains the built-in models eagerly and compiled; extra arguments go to it
# (bash scripts/demo.sh --help).
./build/kiln demo "$@"
# The same from Python: a PyTorch-style training script (`import kiln as torch`), compiled.
[[ " $* " == *" --help "* || " $* " == *" -h "* ]] && exit 0
echo
echo "== Python: examples/python/train_mlp.py --compile =="
PYTHONPATH=build/python .venv/bin/python examples/python/train_mlp.py --compile
