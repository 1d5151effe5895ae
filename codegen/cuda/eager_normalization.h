// The hand-written CUDA entries of eager softmax, log_softmax and layer_norm for rows that fit in
// registers (Note [Eager CUDA normalization kernels] in eager_normalization.cpp). Building the
// source needs neither NVRTC nor a GPU.
#pragma once

#include "kiln/codegen/cuda/eager_pointwise.h"

namespace kiln::codegen::cuda {

// The row-cached entries of softmax and log_softmax (Note [Row-cached normalization entries]):
// kiln_eager_<log_>softmax_<dtype>_cached and _warp_cached(out, in, long long rows, long long
// n), contiguous rows at row * n, a block or a warp per row (the second is launched with one
// block per kEagerNormalizationWarpRows rows). Every other call runs the kernel generated from
// the op's row program (Note [Row programs] in runtime/kernels/row_programs.cpp).
CudaSource eager_softmax_source(DType dtype, bool log);

// The same two entries for layer_norm: kiln_eager_layer_norm_<dtype>_cached and _warp_cached(out,
// in, weight, bias, long long rows, long long n, double eps); weight and bias are n contiguous
// elements each of the compute type (float32 for 16-bit dtypes), or null.
CudaSource eager_layer_norm_source(DType dtype);

// Which row-cached entry takes contiguous rows of n elements of `dtype` at these pointers:
// 2 (a warp per row, the second entry), 1 (a block per row, the first) or 0 (none: the row
// program's kernel runs).
int eager_normalization_entry(DType dtype, int64_t n, const void* in, const void* out);
// Rows a block of the warp-per-row entries takes.
inline constexpr int64_t kEagerNormalizationWarpRows = 8;

}  // namespace kiln::codegen::cuda
