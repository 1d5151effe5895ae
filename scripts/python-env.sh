#!/usr/bin/env bash
# Makes the Python environment the build and the tests use: a virtual environment at .venv
# (or $KILN_VENV) with the pinned tools of frontend/python/requirements-dev.txt (nanobind,
# scikit-build-core, pytest, numpy), from PyPI. Safe to run twice: it reinstalls only when the
# requirements changed. Prints nothing but progress; the interpreter is $KILN_VENV/bin/python.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${KILN_VENV:-$PWD/.venv}
requirements=frontend/python/requirements-dev.txt
stamp=$venv/.kiln-requirements
if [[ -x $venv/bin/python ]] && cmp -s "$requirements" "$stamp"; then
  echo "kiln: Python environment $venv is up to date"
  exit 0
fi
echo "kiln: making the Python environment $venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
cp "$requirements" "$stamp"
