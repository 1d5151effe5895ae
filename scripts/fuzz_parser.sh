#!/usr/bin/env bash
# Fuzzes the IR text parsers (graph IR and kernel IR) with libFuzzer for ${1:-60} seconds: a
# Clang build in build-fuzz/ (AddressSanitizer and UndefinedBehaviorSanitizer on, LLVM backend
# off to keep it small), run on a scratch copy of tests/fuzz/corpus/ so the seeds in the
# repository stay as they are. Crashing inputs are written to build-fuzz/crashes/. Needs Clang
# 15 or newer (the library uses std::source_location); set CXX_FUZZ to pick the compiler, e.g.
# CXX_FUZZ=clang++-19.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
build_dir=build-fuzz
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="${CXX_FUZZ:-clang++}" -DKILN_FUZZ=ON -DKILN_WITH_LLVM=OFF \
  -DKILN_WITH_CUDA=OFF -DKILN_SANITIZE=ON -DKILN_BUILD_BENCH=OFF >/dev/null
ninja -C "$build_dir" -j "$(nproc)" kiln_parser_fuzz

work="$build_dir/fuzz-corpus"
rm -rf "$work"
mkdir -p "$work" "$build_dir/crashes"
cp tests/fuzz/corpus/* "$work/"
"$build_dir/tests/kiln_parser_fuzz" "$work" -max_total_time="$seconds" -max_len=4096 \
  -timeout=10 -rss_limit_mb=4096 -artifact_prefix="$build_dir/crashes/" -print_final_stats=1
