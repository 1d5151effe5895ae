// The public ops as free functions (the common ones are also Tensor methods). Each builds its
// op's attribute struct and calls the dispatcher; composite ops (matmul, reshape, stack, ...)
// are written in terms of table ops so that tracing and autograd see only table ops.
#pragma once

#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// ---- pointwise ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);

// ---- reductions (empty dims: all dims) ----
Tensor sum(const Tensor& x, Shape dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, Shape dims = {}, bool keepdim = false);

// ---- linear algebra ----
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
// torch.matmul: 1-D x 1-D is a dot product, 2-D x 2-D mm, a 1-D operand gains (then loses) a
// dim, and higher dims are broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- joining and splitting ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);

}  // namespace kiln
