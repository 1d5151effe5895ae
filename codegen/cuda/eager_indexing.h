// CUDA kernels for the eager ops that read through indices or return them: gather (which also
// runs index_select and embedding), scatter_add, the index reductions (max/min with indices,
// argmax/argmin) (Note [Eager CUDA index kernels] in eager_indexing.cpp). Building
// the source needs neither NVRTC nor a GPU.
#pragma once

#include <cstddef>
#include <string>

#include "kiln/codegen/cuda/eager_pointwise.h"

namespace kiln::codegen::cuda {

// kiln_eager_gather_b<bits>(out, x, index, KilnEagerIndexer ix, long long x_dim_stride,
// long long dim_size, long long* bad): Elementwise over ix, whose operand 0 is the output, 1 the
// input with a stride of 0 along the indexed dim, and 2 the int64 index; each element is
// x[offset + index * x_dim_stride], copied as `element_bytes` raw bytes.
CudaSource eager_gather_source(size_t element_bytes);

// kiln_eager_scatter_add_<dtype>(out, index, src, KilnEagerIndexer ix, long long n,
// long long index_step, long long src_step, long long out_dim_stride, long long dim_size,
// long long* bad): a thread per position of ix (the index's shape with the scattered dim
// removed; operand 0 the output with that dim's stride 0, 1 the index, 2 src), which adds its n
// src elements along the dim into out in order.
// With accumulate=false the kernel (kiln_eager_scatter_set_<dtype>) assigns instead, so the
// last of duplicate indices wins; bool is allowed then.
CudaSource eager_scatter_add_source(DType dtype, bool accumulate = true);

// kiln_eager_nonzero(long long* out, const long long* count, KilnNonzeroSizes s, long long
// numel): `count` is the inclusive running count of the nonzero elements of a row-major tensor
// of sizes s.sizes[0..s.ndim); each nonzero element writes its coordinates into row
// count[i] - 1 of out [n, ndim].
inline constexpr int kNonzeroMaxDims = 16;
struct NonzeroSizes {
  long long sizes[kNonzeroMaxDims] = {};
  int ndim = 0;
};
CudaSource eager_nonzero_source();

// kiln_eager_index_reduce_<max|min>_<compute>(values, indices, rows, long long outer,
// long long r): a block per row of the contiguous [outer, r] rows (in the compute dtype); the
// row's first NaN, else its first extreme element. `values` may be null.
CudaSource eager_index_reduce_source(DType compute, bool is_max);

// The opening line of a grid-stride loop over i in [0, bound) (a C expression), for kernels
// written as CUDA C text; the caller closes its brace.
std::string eager_grid_stride_loop(const std::string& bound);

// The `bad` argument of the kernels above: bad[0] is set to 1 and bad[1] to an index outside
// [0, dim_size). Other
// elements are still written; the op raises its error after the launch.
inline constexpr int kBadIndexWords = 2;

}  // namespace kiln::codegen::cuda
