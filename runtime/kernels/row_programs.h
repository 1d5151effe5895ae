// softmax, log_softmax and layer_norm as kernel IR over rows whose length is a size parameter
// (Note [Row programs] in row_programs.cpp): the one description of each op's arithmetic that
// the eager CUDA kernels are generated from and the CPU kernels are tested against.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

struct OpDef;

// What one call of a row program takes: the kernel's buffers in order (the output first, then
// the inputs as the program reads them: contiguous, the affine tensors in the compute dtype)
// and its sizes. `result` is the op's output, or a contiguous tensor to copy into it after the
// launch when `copy_back` is set.
struct RowCall {
  std::vector<Tensor> buffers;
  std::vector<int64_t> sizes;
  int64_t rows = 0;        // rows of the launch: one block each on CUDA
  int64_t row_length = 0;  // elements each row reduces
  Tensor result;
  bool copy_back = false;
};

// The op's row program (OpDef::row_program) for inputs of `dtype` and these attributes.
kir::Kernel row_program(const OpDef& op, DType dtype, const void* attrs);

// The buffers and sizes for the call op(inputs) -> out (Note [Row programs]).
RowCall row_call(const OpDef& op, std::span<const Tensor> inputs, const Tensor& out,
                 const void* attrs);

}  // namespace kiln
