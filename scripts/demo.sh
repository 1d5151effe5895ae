#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
# Only the library and the kiln tool: the test suites and benchmarks are the second command's.
KILN_BUILD_TARGETS=kiln_cli bash scripts/build.sh build
# The demo trains the built-in models eagerly and compiled; extra arguments go to it
# (bash scripts/demo.sh --help).
./build/kiln demo "$@"
