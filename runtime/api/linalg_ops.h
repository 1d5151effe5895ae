// Matrix products (OpenBLAS on the CPU).
#pragma once

#include <optional>
#include <source_location>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// ---- linear algebra ----
Tensor mm(const Tensor& a, const Tensor& b,
          std::source_location loc = std::source_location::current());
Tensor bmm(const Tensor& a, const Tensor& b,
           std::source_location loc = std::source_location::current());
// torch.matmul: 1-D x 1-D is a dot product, 2-D x 2-D mm, a 1-D operand gains (then loses) a
// dim, and higher dims are broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b,
              std::source_location loc = std::source_location::current());
// torch.nn.functional.linear: x @ weight^T + bias, for weight [out, in] (or 1-D [in]) and an
// optional bias broadcast against the result (an undefined tensor also means no bias).
Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = {},
              std::source_location loc = std::source_location::current());

}  // namespace kiln
