// softmax, log_softmax, layer_norm and their backwards as kernel IR over rows whose length is a
// size parameter (Note [Row programs] in row_programs.cpp): the one description of each op's
// arithmetic that the eager CUDA kernels are generated from and the CPU kernels are tested against.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

struct OpDef;

// What one call of a row program takes: the kernel's buffers in order (the outputs first, then
// the inputs as the program reads them: contiguous, the affine tensors in the compute dtype)
// and its sizes. `results` are the op's outputs, or contiguous tensors that finish() copies
// into them after the launch.
struct RowCall {
  std::vector<Tensor> buffers;
  std::vector<int64_t> sizes;
  int64_t rows = 0;        // rows of the launch: one block each on CUDA
  int64_t row_length = 0;  // elements each row reduces
  std::vector<Tensor> results;
  void finish(std::span<const Tensor> outputs) const;
};

// The op's row program (OpDef::row_program) for inputs of `dtype` and these attributes.
kir::Kernel row_program(const OpDef& op, DType dtype, const void* attrs);

// The buffers and sizes for the call op(inputs) -> outputs (Note [Row programs]).
RowCall row_call(const OpDef& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                 const void* attrs);

}  // namespace kiln
