// CUDA kernels of sort, argsort, topk, cumsum and cumprod (Note [Eager CUDA sort kernels] in
// eager_sort.cpp). They take the CPU kernels' row form: contiguous [outer, r] rows in a compute
// dtype (float32, float64 or int64). Building the source needs neither NVRTC nor a GPU.
#pragma once

#include "kiln/codegen/cuda/cuda_emitter.h"

namespace kiln::codegen::cuda {

// kiln_eager_rank_<compute>(values, indices, rows, long long outer, long long r, long long k,
// int descending): Elementwise over outer * r elements; element j of a row whose stable rank is
// below k is written at [row, rank] of the [outer, k] outputs. `values` may be null.
CudaSource eager_rank_source(DType compute);

// kiln_eager_<cumsum|cumprod>_<compute>(out, rows, long long outer, long long r): a thread per
// row, accumulating in the compute dtype (float64 or int64) from the row's start.
CudaSource eager_scan_source(DType compute, bool prod);

}  // namespace kiln::codegen::cuda
