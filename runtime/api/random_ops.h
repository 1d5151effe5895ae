// Random ops on tensors: dropout and the *_like samplers. They read the global generator
// (manual_seed) through Note [Random streams].
#pragma once

#include <source_location>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// torch.nn.functional.dropout: in training mode with 0 < p < 1, zeroes each element with
// probability p and scales the kept ones by 1 / (1 - p). With train == false or p == 0 it
// returns x itself (the same tensor, no copy, as torch does); p == 1 gives zeros. p outside
// [0, 1] throws.
Tensor dropout(const Tensor& x, double p = 0.5, bool train = true,
               std::source_location loc = std::source_location::current());

// rand/randn with x's shape, dtype and device; `options` overrides the dtype or device.
Tensor rand_like(const Tensor& x, TensorOptions options = {},
                 std::source_location loc = std::source_location::current());
Tensor randn_like(const Tensor& x, TensorOptions options = {},
                  std::source_location loc = std::source_location::current());

}  // namespace kiln
