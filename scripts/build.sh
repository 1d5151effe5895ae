#!/usr/bin/env bash
# Configures and builds Kiln into a build directory (default: build/). Extra arguments go to
# CMake, e.g. scripts/build.sh build-asan -DKILN_SANITIZE=ON. KILN_BUILD_TARGETS="a b" builds
# only those targets (and what they need) instead of everything.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build}
shift || true
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Paths under the checkout are hashed relative to it, so a fresh clone elsewhere (as CI makes)
# still hits the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
# The test suites use precompiled headers, which ccache caches only with these relaxations.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# Line tables (-g1) rather than full debug info: backtraces, profilers and sanitizer reports
# still name files and lines, and the build spends less time writing debug info. Configure
# a build of your own without this script for variables in a debugger.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "$@" >/dev/null
# Two jobs on the two-core machines this project is built on; more only where there are more.
# shellcheck disable=SC2086 # the targets are a word list
ninja -C "$build_dir" -j "$(nproc)" ${KILN_BUILD_TARGETS:-}
