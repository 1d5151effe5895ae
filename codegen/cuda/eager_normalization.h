// Shape-generic CUDA kernels for eager softmax, log_softmax and layer_norm (Note [Eager CUDA
// normalization kernels] in eager_normalization.cpp). Building the source needs neither NVRTC
// nor a GPU.
#pragma once

#include "kiln/codegen/cuda/eager_pointwise.h"

namespace kiln::codegen::cuda {

// Three entries, kiln_eager_<log_>softmax_<dtype>[_cached|_warp_cached](out, in, KilnEagerIndexer
// rows, long long n, long long in_step, long long out_step): a block per row (BlockPerRow). The
// first walks the rows by the indexer (operand 0 the output's first element of each row, 1 the
// input's) and each row's n elements `step` apart; the second and third (Note [Row-cached
// normalization entries]) take contiguous rows at row * n, a block or a warp per row, and read
// only the indexer's numel. The third is launched with one block per kBlock / 32 rows.
CudaSource eager_softmax_source(DType dtype, bool log);

// Three entries, kiln_eager_layer_norm_<dtype>[_cached|_warp_cached](out, in, weight, bias, long
// long rows, long long n, double eps): a block per row of n contiguous elements; weight and bias
// are n contiguous elements each of the compute type (float32 for 16-bit dtypes), or null. The
// second and third are the row-cached ones, as softmax's.
CudaSource eager_layer_norm_source(DType dtype);

// The entry to launch for contiguous rows of n elements of `dtype` at these pointers: 2 (a warp
// per row), 1 (a block per row, cached) or 0 (the strided entry).
int eager_normalization_entry(DType dtype, int64_t n, const void* in, const void* out);
// Rows a block of the warp-per-row entries takes.
inline constexpr int64_t kEagerNormalizationWarpRows = 8;

}  // namespace kiln::codegen::cuda
