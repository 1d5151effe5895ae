// Shape-generic CUDA kernels for eager softmax, log_softmax and layer_norm (Note [Eager CUDA
// normalization kernels] in eager_normalization.cpp). Building the source needs neither NVRTC
// nor a GPU.
#pragma once

#include "kiln/codegen/cuda/eager_pointwise.h"

namespace kiln::codegen::cuda {

// One entry, kiln_eager_<log_>softmax_<dtype>(out, in, KilnEagerIndexer rows, long long n,
// long long in_step, long long out_step): a block per row (BlockPerRow), the rows walked by the
// indexer (operand 0 the output's first element of each row, 1 the input's) and each row's n
// elements `step` apart.
CudaSource eager_softmax_source(DType dtype, bool log);

// One entry, kiln_eager_layer_norm_<dtype>(out, in, weight, bias, long long rows, long long n,
// double eps): a block per row of n contiguous elements; weight and bias are n contiguous
// elements each of the compute type (float32 for 16-bit dtypes), or null.
CudaSource eager_layer_norm_source(DType dtype);

}  // namespace kiln::codegen::cuda
