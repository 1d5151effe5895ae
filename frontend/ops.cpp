#include "kiln/frontend/ops.h"

#include <algorithm>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call_op1(KILN_OP("add"), {a, b}, AlphaAttrs{alpha});
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return call_op1(KILN_OP("add_scalar"), {a}, ScalarOperandAttrs{b, alpha});
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call_op1(KILN_OP("sub"), {a, b}, AlphaAttrs{alpha});
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return call_op1(KILN_OP("sub_scalar"), {a}, ScalarOperandAttrs{b, alpha});
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return call_op1(KILN_OP("mul"), {a, b}, AlphaAttrs{});
}
Tensor mul(const Tensor& a, const Scalar& b) {
  return call_op1(KILN_OP("mul_scalar"), {a}, ScalarOperandAttrs{b});
}
Tensor div(const Tensor& a, const Tensor& b) {
  return call_op1(KILN_OP("div"), {a, b}, AlphaAttrs{});
}
Tensor div(const Tensor& a, const Scalar& b) {
  return call_op1(KILN_OP("div_scalar"), {a}, ScalarOperandAttrs{b});
}
Tensor neg(const Tensor& x) {
  return call_op1(KILN_OP("neg"), {x}, NoAttrs{});
}
Tensor exp(const Tensor& x) {
  return call_op1(KILN_OP("exp"), {x}, NoAttrs{});
}
Tensor log(const Tensor& x) {
  return call_op1(KILN_OP("log"), {x}, NoAttrs{});
}
Tensor tanh(const Tensor& x) {
  return call_op1(KILN_OP("tanh"), {x}, NoAttrs{});
}
Tensor sigmoid(const Tensor& x) {
  return call_op1(KILN_OP("sigmoid"), {x}, NoAttrs{});
}
Tensor relu(const Tensor& x) {
  return call_op1(KILN_OP("relu"), {x}, NoAttrs{});
}

Tensor sum(const Tensor& x, Shape dims, bool keepdim) {
  return call_op1(KILN_OP("sum"), {x}, ReduceAttrs{std::move(dims), keepdim});
}
Tensor mean(const Tensor& x, Shape dims, bool keepdim) {
  return call_op1(KILN_OP("mean"), {x}, ReduceAttrs{std::move(dims), keepdim});
}

Tensor mm(const Tensor& a, const Tensor& b) {
  return call_op1(KILN_OP("mm"), {a, b}, NoAttrs{});
}
Tensor bmm(const Tensor& a, const Tensor& b) {
  return call_op1(KILN_OP("bmm"), {a, b}, NoAttrs{});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  int64_t da = a.dim(), db = b.dim();
  KILN_CHECK(da >= 1 && db >= 1,
             "matmul: both arguments need at least 1 dimension, got shapes {} and {}",
             shape_str(a.sizes()), shape_str(b.sizes()));
  // The inner dims must agree; checked here so that the message names matmul and the shapes
  // the user passed, not the internal mm/bmm call on reshaped operands.
  int64_t k_a = a.size(-1), k_b = db == 1 ? b.size(0) : b.size(-2);
  KILN_CHECK(k_a == k_b,
             "matmul: shapes {} and {} cannot be multiplied (inner dimensions {} and {} differ)",
             shape_str(a.sizes()), shape_str(b.sizes()), k_a, k_b);
  if (da == 1 && db == 1) return mm(a.unsqueeze(0), b.unsqueeze(1)).view({});
  if (da == 2 && db == 2) return mm(a, b);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 1) return mm(a, b.unsqueeze(1)).squeeze(1);
  // Batched: a 1-D operand gains a matrix dim that is dropped from the result afterwards.
  Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
  int64_t n = a3.size(-2), k = a3.size(-1), m = b3.size(-1);
  Shape batch_a(a3.sizes().begin(), a3.sizes().end() - 2);
  Shape batch_b(b3.sizes().begin(), b3.sizes().end() - 2);
  Shape batch = broadcast_shapes("matmul", batch_a, batch_b);
  int64_t batch_numel = shape_numel(batch);
  Shape a_full = batch, b_full = batch;
  a_full.insert(a_full.end(), {n, k});
  b_full.insert(b_full.end(), {k, m});
  Tensor out = bmm(a3.expand(a_full).reshape({batch_numel, n, k}),
                   b3.expand(b_full).reshape({batch_numel, k, m}));
  Shape out_shape = batch;
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(m);
  return out.view(out_shape);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  DimAttrs attrs{dim};
  return std::move(call_op(KILN_OP("cat"), tensors, &attrs)[0]);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "stack: expects a non-empty list of tensors");
  const Shape& first = tensors[0].sizes();
  for (size_t i = 1; i < tensors.size(); ++i) {
    KILN_CHECK(tensors[i].sizes() == first,
               "stack: expects each tensor to be equal size, but got {} at entry 0 and {} at "
               "entry {}",
               shape_str(first), shape_str(tensors[i].sizes()), i);
  }
  int64_t d = wrap_dim("stack", dim, static_cast<int64_t>(first.size()) + 1);
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors)
    expanded.push_back(t.unsqueeze(d));
  return cat(expanded, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  KILN_CHECK(x.dim() > 0, "split: cannot split a 0-dim tensor");
  int64_t d = wrap_dim("split", dim, x.dim());
  int64_t size = x.size(d);
  KILN_CHECK(split_size > 0 || (split_size == 0 && size == 0),
             "split: split_size must be positive, got {} (shape {})", split_size,
             shape_str(x.sizes()));
  std::vector<Tensor> parts;
  if (size == 0) {
    parts.push_back(x);
    return parts;
  }
  for (int64_t start = 0; start < size; start += split_size) {
    parts.push_back(x.slice(d, start, std::min(size, start + split_size)));
  }
  return parts;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  KILN_CHECK(chunks > 0, "chunk: number of chunks must be positive, got {}", chunks);
  KILN_CHECK(x.dim() > 0, "chunk: cannot chunk a 0-dim tensor");
  int64_t size = x.size(wrap_dim("chunk", dim, x.dim()));
  int64_t split_size = (size + chunks - 1) / chunks;
  return split(x, std::max<int64_t>(split_size, size == 0 ? 0 : 1), dim);
}

}  // namespace kiln
