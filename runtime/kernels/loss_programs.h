// nll_loss as kernel IR (Note [The nll_loss program] in loss_programs.cpp): the description the
// eager kernels are tested against and a CUDA kernel can be generated from.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

// The program of nll_loss with these attributes for log-probabilities of dtype `input` and a
// result of dtype `output`. Buffers: out, x ([n, c], contiguous), target (int64 [n]), and
// `bad` (int64 [2] out: the count of targets outside [0, c) that are not ignore_index, and the
// largest of them). Sizes: n, c (at least 1: the clamped index needs a class).
kir::Kernel nll_loss_program(const NllLossAttrs& attrs, DType input, DType output);

// The buffers (out, contiguous x, contiguous target, a fresh bad) and sizes of the call
// nll_loss(inputs) -> out; out must be contiguous.
struct NllLossCall {
  std::vector<Tensor> buffers;
  std::vector<int64_t> sizes;
};
NllLossCall nll_loss_call(std::span<const Tensor> inputs, const Tensor& out);

}  // namespace kiln
