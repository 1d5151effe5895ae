// Shape-generic CUDA kernels for eager reductions over dims (Note [Eager CUDA reduction kernels]
// in eager_reduction.cpp). Building the source needs neither NVRTC nor a GPU.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kiln/codegen/cuda/eager_pointwise.h"

namespace kiln::codegen::cuda {

struct EagerReductionSpec {
  std::string name;  // names the kernel: kiln_eager_reduce_<name>_rows and _cols
  kir::ReduceOp op = kir::ReduceOp::Sum;
  DType input = kFloat32;
  DType accumulate = kFloat32;  // what elements are converted to and combined in
  DType output = kFloat32;
  bool scaled = false;  // the result is multiplied by the launch's `scale` (mean)
};

// Two entries, each taking (output, input, KilnEagerIndexer kept, KilnEagerIndexer reduced,
// double scale):
// - 0, kiln_eager_reduce_<name>_rows (BlockPerRow): a block per output element, its threads
//   striding over the reduced elements, then a warp-shuffle and shared-memory reduction;
// - 1, kiln_eager_reduce_<name>_cols (ThreadPerRow): a thread per output element, reducing
//   serially, for layouts where neighbouring outputs read neighbouring inputs.
// Both walk their outputs with a grid-stride loop (CudaEntry::work is 0: the launch gives it).
CudaSource eager_reduction_source(const EagerReductionSpec& spec);

struct EagerReductionLayout {
  EagerIndexer kept;     // the output's elements: operand 0 the output's offsets, 1 the input's
  EagerIndexer reduced;  // one output's reduced elements: operand 0 the input's offsets
  int entry = 0;         // 0: block per output (rows), 1: thread per output (cols)
};

// The launch of a reduction of an input with `sizes` and `strides` over `reduced_dims` (in
// increasing order); `out_strides` has the output's stride for each kept dim, in order. Throws
// kiln::Error naming `op` when the kept or the reduced dims do not merge into kEagerMaxDims.
EagerReductionLayout make_eager_reduction_layout(std::string_view op,
                                                 std::span<const int64_t> sizes,
                                                 std::span<const int64_t> strides,
                                                 std::span<const int64_t> reduced_dims,
                                                 std::span<const int64_t> out_strides);

}  // namespace kiln::codegen::cuda
