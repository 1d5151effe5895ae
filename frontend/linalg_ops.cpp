#include "kiln/frontend/linalg_ops.h"

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

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

}  // namespace kiln
