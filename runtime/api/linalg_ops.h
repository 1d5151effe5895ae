// Matrix products (OpenBLAS on the CPU).
#pragma once

#include <optional>
#include <source_location>
#include <string>
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

// a[i] * b[j] for 1-D a and b.
Tensor outer(const Tensor& a, const Tensor& b,
             std::source_location loc = std::source_location::current());
// beta * self + alpha * (mat1 @ mat2), self broadcast to the product's shape; with beta = 0
// self's values are not read (NaN in it does not propagate), as torch.
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1, std::source_location loc = std::source_location::current());
// The batched form: beta * self + alpha * bmm(batch1, batch2).
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2,
               const Scalar& beta = 1, const Scalar& alpha = 1,
               std::source_location loc = std::source_location::current());
// torch.einsum: subscripts a-z A-Z, "..." for broadcast dims, an explicit output after "->" or
// the implicit one (the letters used once, sorted). Lowered to diagonals (index_select), sums,
// permutes, reshapes and bmm.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands,
              std::source_location loc = std::source_location::current());

}  // namespace kiln
