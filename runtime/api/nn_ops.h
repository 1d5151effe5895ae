// Normalization and loss functions.
#pragma once

#include <source_location>
#include <string>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// softmax / log_softmax over `dim` (floating inputs).
Tensor softmax(const Tensor& x, int64_t dim,
               std::source_location loc = std::source_location::current());
Tensor log_softmax(const Tensor& x, int64_t dim,
                   std::source_location loc = std::source_location::current());
// Normalizes over the trailing dims `normalized_shape`; weight and bias (of that shape) are
// optional: pass an undefined Tensor to leave one out.
Tensor layer_norm(const Tensor& x, Shape normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5,
                  std::source_location loc = std::source_location::current());
// Class-index losses: input [N, C] or [C], target int64 [N] or []. reduction: "none", "mean"
// (over the targets not equal to ignore_index) or "sum".
Tensor nll_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                int64_t ignore_index = -100,
                std::source_location loc = std::source_location::current());
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const std::string& reduction = "mean", int64_t ignore_index = -100,
                     std::source_location loc = std::source_location::current());
// (input - target)^2, reduced by "none", "mean" or "sum".
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                std::source_location loc = std::source_location::current());

// torch.nn.functional.pad: `pad` lists (before, after) pairs from the last dim backwards.
// mode "constant" fills with `value` (negative pads crop); "reflect" mirrors without repeating
// the edge (each pad below the dim's size), "replicate" repeats the edge element and
// "circular" wraps around (each pad at most the dim's size).
Tensor pad(const Tensor& x, Shape pad, const std::string& mode = "constant", double value = 0,
           std::source_location loc = std::source_location::current());
// torch.nn.functional.one_hot: int64 [..., num_classes] with a 1 at each index of the int64
// input. num_classes = -1 means max + 1, which reads the data (not traceable).
Tensor one_hot(const Tensor& x, int64_t num_classes = -1,
               std::source_location loc = std::source_location::current());

}  // namespace kiln
