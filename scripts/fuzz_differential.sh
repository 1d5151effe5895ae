#!/usr/bin/env bash
# Long runs of the differential fuzz test (tests/differential/program.h): COUNT random programs
# from seed FIRST, each run in float64 eager (the reference), float32 eager, and compiled with the
# interpreter and the LLVM backend. Prints a progress line every 100 programs and each
# disagreement with its program; exits 1 if any disagreed. Uses the normal build (build/).
#   scripts/fuzz_differential.sh [COUNT] [FIRST]      (defaults: 10000, 1000000)
# CI runs seeds 0-199 as kiln_differential_tests; the default FIRST keeps long runs off them.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-10000}
first=${2:-1000000}
if [[ $count == -h || $count == --help ]]; then
  sed -n '2,7p' "$0"
  exit 0
fi
bash scripts/build.sh build >/dev/null
# A cache folder of its own, so that the run compiles its kernels, not reuses the tests'.
export KILN_CACHE_DIR=${KILN_CACHE_DIR:-$PWD/build/kiln_cache_differential}
# Signatures that run eagerly warn once each; the disagreements are what matter here.
exec build/tests/kiln_differential_fuzz "$first" "$count" 2> >(grep -v "^kiln: warning" >&2)
