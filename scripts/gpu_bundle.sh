#!/usr/bin/env bash
# Packs a build tree for the lent GPU machine (/work/.library/device), which has the CUDA
# toolkit, CMake and Python but no package registry: the test and benchmark binaries, stripped,
# with the CTest files and the shared libraries that machine lacks (fmt, OpenBLAS and its
# Fortran runtime, Google Benchmark). Build the tree with -DKILN_WITH_LLVM=OFF first: libLLVM and its own
# dependencies would not fit in the 64 MiB that travels with a run.
#
#   scripts/gpu_bundle.sh [BUILD_DIR] [OUT_TARBALL]       (defaults: build-gpu, .gpu/bundle.tar.xz)
#
# On the GPU machine, from the repository root:
#   mkdir -p /work && ln -sfn "$PWD" /work/main   # CTest files name absolute paths
#   tar xJf .gpu/bundle.tar.xz && export LD_LIBRARY_PATH=$PWD/build-gpu/carried-libs:...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-gpu}
out=${2:-$root/.gpu/bundle.tar.xz}
cd "$root"
[[ -f $build/CMakeCache.txt ]] || { echo "gpu_bundle: $build is not a configured build tree" >&2; exit 1; }
if grep -q '^KILN_WITH_LLVM:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "gpu_bundle: $build links LLVM; configure it with -DKILN_WITH_LLVM=OFF" >&2
  exit 1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# Everything CTest reads, without objects or the kernel cache.
tar -cf - --exclude CMakeFiles --exclude '*.o' --exclude '*.a' --exclude kiln_cache \
  --exclude install_test --exclude subdir_test "$build" | tar -C "$stage" -xf -
find "$stage/$build" -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q ELF && strip "$1"' _ {} \;
libs=$stage/$build/carried-libs
mkdir -p "$libs"
for lib in libfmt.so.9 libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libbenchmark.so.1debian; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$libs/$lib"
done
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - "$build" | xz -T2 -6 > "$out"
echo "gpu_bundle: $(du -h "$out" | cut -f1) in $out"
