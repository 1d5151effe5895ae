// Batch, group and RMS normalization (torch.nn.functional's batch_norm, group_norm, rms_norm),
// composites of table ops: their backward is autograd's, and compile fuses them like any other
// chain of reductions and pointwise ops. layer_norm, an op of its own, is in nn_ops.h.
#pragma once

#include <optional>
#include <source_location>

#include "kiln/runtime/tensor.h"

namespace kiln {

// input [N, C, ...]. training: normalizes with the batch's statistics over every dim but C and,
// when running_mean/running_var are given, updates them in place (no autograd history):
// running = (1 - momentum) running + momentum stat, with the unbiased variance, as torch.
// Otherwise normalizes with the running statistics. weight and bias are [C] when given.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5,
                  std::source_location loc = std::source_location::current());

// input [N, C, ...] normalized over each group of C / num_groups channels (and every dim after
// C); weight and bias are [C].
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5,
                  std::source_location loc = std::source_location::current());

// x / sqrt(mean(x^2 over the last normalized_shape.size() dims) + eps) * weight. eps defaults to
// the machine epsilon of x's dtype, as torch.
Tensor rms_norm(const Tensor& input, Shape normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt,
                std::source_location loc = std::source_location::current());

}  // namespace kiln
