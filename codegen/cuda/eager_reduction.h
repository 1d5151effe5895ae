// The launch layout of an eager CUDA reduction over dims (Note [Eager CUDA reduction layouts] in
// eager_reduction.cpp): the input's dims merged into kept and reduced ones, and the form.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kiln/codegen/cuda/eager_pointwise.h"

namespace kiln::codegen::cuda {

struct EagerReductionLayout {
  EagerIndexer kept;     // the output's elements: operand 0 the output's offsets, 1 the input's
  EagerIndexer reduced;  // one output's reduced elements: operand 0 the input's offsets
  int entry = 0;         // 0: a block per output, 1: a thread per output
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
