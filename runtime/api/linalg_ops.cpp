#include "kiln/runtime/api/linalg_ops.h"

#include "kiln/runtime/api/pointwise_ops.h"

#include "kiln/base/call_site.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor mm(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("mm"), {a, b}, NoAttrs{});
}
Tensor bmm(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("bmm"), {a, b}, NoAttrs{});
}

Tensor matmul(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  int64_t da = a.dim(), db = b.dim();
  KILN_CHECK(da >= 1 && db >= 1,
             "matmul: both arguments need at least 1 dimension, got shapes {} and {}",
             shape_str(a.sizes()), shape_str(b.sizes()));
  // The inner dims must agree; checked here so that the message names matmul and the shapes
  // the user passed, not the internal mm/bmm call on reshaped operands. Compared as symbolic
  // sizes first: under a symbolic trace, equal expressions need no integer read, which would
  // specialize them (Note [Size reads while tracing]).
  if (!(a.sym_size(-1) == (db == 1 ? b.sym_size(0) : b.sym_size(-2)))) {
    int64_t k_a = a.size(-1), k_b = db == 1 ? b.size(0) : b.size(-2);
    KILN_CHECK(k_a == k_b,
               "matmul: shapes {} and {} cannot be multiplied (inner dimensions {} and {} differ)",
               shape_str(a.sizes()), shape_str(b.sizes()), k_a, k_b);
  }
  if (da == 1 && db == 1) return mm(a.unsqueeze(0), b.unsqueeze(1)).view({});
  if (da == 2 && db == 2) return mm(a, b);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 1) return mm(a, b.unsqueeze(1)).squeeze(1);
  // The shapes below are SymInts, so that under a symbolic trace the reshapes keep the batch
  // and sequence sizes symbolic (Note [Symbolic size attributes]); elsewhere they are integers.
  // Which path runs depends on sizes of 0 and on the layout, never on a symbol's value (a
  // symbol is never 0), so those reads need not specialize.
  const TensorImpl& ai = *a.impl();
  // [..., n, k] @ [k, m] folds the batch dims into the rows of one mm (as torch does) when
  // that needs no copy of `a`; a single large gemm beats a loop of small ones.
  if (da >= 3 && db == 2 && ai.numel() > 0) {
    SymShape a_sizes = a.sym_sizes();
    bool foldable = is_static(a_sizes)
                        ? view_strides(ai.sizes(), ai.strides(),
                                       Shape{ai.numel() / ai.sizes().back(), ai.sizes().back()})
                              .has_value()
                        : ai.is_contiguous();
    if (foldable) {
      SymShape out_shape(a_sizes.begin(), a_sizes.end() - 1);
      // The row count as the product of the batch dims, not -1: dividing the numel by a last
      // dim that is a sum of terms (floordiv(s0, 2) + 1) is not an exact division of monomials.
      SymInt rows = 1;
      for (const SymInt& s : out_shape)
        rows *= s;
      out_shape.push_back(b.sym_size(1));
      return mm(a.reshape_symint({rows, a_sizes.back()}), b).view_symint(std::move(out_shape));
    }
  }
  // Batched: a 1-D operand gains a matrix dim that is dropped from the result afterwards.
  Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
  SymShape a_sizes = a3.sym_sizes(), b_sizes = b3.sym_sizes();
  SymInt n = a_sizes[a_sizes.size() - 2], k = a_sizes.back(), m = b_sizes.back();
  SymShape batch_a(a_sizes.begin(), a_sizes.end() - 2);
  SymShape batch_b(b_sizes.begin(), b_sizes.end() - 2);
  SymShape batch;
  try {
    batch = broadcast_shapes("matmul", batch_a, batch_b);
  } catch (const Error&) {
    // Expressions that differ may still agree at these sizes: compare the integers (which, in
    // a symbolic trace, specializes them) and throw torch's message when they do not agree.
    const Shape& sa = a3.sizes();
    const Shape& sb = b3.sizes();
    batch = to_sym_shape(broadcast_shapes("matmul", Shape(sa.begin(), sa.end() - 2),
                                          Shape(sb.begin(), sb.end() - 2)));
  }
  SymInt batch_numel = 1;
  for (const SymInt& s : batch)
    batch_numel *= s;
  SymShape a_full = batch, b_full = batch;
  a_full.insert(a_full.end(), {n, k});
  b_full.insert(b_full.end(), {k, m});
  Tensor out = bmm(a3.expand_symint(std::move(a_full)).reshape_symint({batch_numel, n, k}),
                   b3.expand_symint(std::move(b_full)).reshape_symint({batch_numel, k, m}));
  SymShape out_shape = batch;
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(m);
  return out.view_symint(std::move(out_shape));
}

Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
              std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(weight.dim() == 1 || weight.dim() == 2,
             "linear: weight must be 1-D or 2-D, got shape {} (input shape {})",
             shape_str(weight.sizes()), shape_str(x.sizes()));
  // Sizes compared as SymInts first, so that symbolic ones are not specialized (Note [Size
  // reads while tracing]); only a mismatch between expressions reads the integers.
  KILN_CHECK(
      x.dim() >= 1 && (x.sym_size(-1) == weight.sym_size(-1) || x.size(-1) == weight.size(-1)),
      "linear: input of shape {} does not match weight of shape {} (expected the input's "
      "last dimension to be {})",
      shape_str(x.sizes()), shape_str(weight.sizes()), weight.size(-1));
  if (bias.has_value() && bias->defined()) {
    SymInt sym_out = weight.dim() == 2 ? weight.sym_size(0) : SymInt(1);
    auto out_features = [&] { return weight.dim() == 2 ? weight.size(0) : 1; };
    bool fits = bias->dim() == 0 ||
                (bias->dim() == 1 && (bias->sym_size(0) == sym_out || bias->sym_size(0) == 1 ||
                                      bias->size(0) == out_features() || bias->size(0) == 1));
    if (!((fits && weight.dim() == 2) || bias->dim() == 0)) {
      Shape out_shape(x.sizes().begin(), x.sizes().end() - 1);
      if (weight.dim() == 2) out_shape.push_back(out_features());
      KILN_ERROR(
          "linear: bias of shape {} does not match the output of shape {} (input {}, weight {}); "
          "expected a bias of shape [{}]",
          shape_str(bias->sizes()), shape_str(out_shape), shape_str(x.sizes()),
          shape_str(weight.sizes()), out_features());
    }
  }
  Tensor out = matmul(x, weight.t());
  if (bias.has_value() && bias->defined()) return add(out, *bias);
  return out;
}

Tensor outer(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(a.dim() == 1 && b.dim() == 1, "outer: expected two 1-D vectors, got shapes {} and {}",
             shape_str(a.sizes()), shape_str(b.sizes()));
  return mul(a.unsqueeze(1), b.unsqueeze(0));
}

namespace {

// beta * self + alpha * product, with self broadcast to the product's shape. beta = 0 leaves
// self out entirely (torch: NaN and inf in self do not propagate), and unit factors cost no op.
Tensor scaled_sum(const char* name, const Tensor& self, const Tensor& product, const Scalar& beta,
                  const Scalar& alpha) {
  // As expressions first (Note [Size reads while tracing]): self fits when each of its sizes is
  // 1 or the product's. Only a mismatch between expressions compares the integers.
  SymShape ss = self.sym_sizes(), ps = product.sym_sizes();
  bool fits = ss.size() <= ps.size();
  for (size_t i = 0; fits && i < ss.size(); ++i) {
    const SymInt& a = ss[ss.size() - 1 - i];
    fits = a == 1 || a == ps[ps.size() - 1 - i];
  }
  KILN_CHECK(fits || broadcast_shapes(name, self.sizes(), product.sizes()) == product.sizes(),
             "{}: self of shape {} cannot be broadcast to the product's shape {}", name,
             shape_str(self.sizes()), shape_str(product.sizes()));
  if (beta.to_double() == 0) return alpha.to_double() == 1 ? product : mul(product, alpha);
  Tensor scaled = beta.to_double() == 1 ? self : mul(self, beta);
  return add(scaled, product, alpha);
}

}  // namespace

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(mat1.dim() == 2 && mat2.dim() == 2,
             "addmm: expected 2-D matrices, got mat1 of shape {} and mat2 of shape {}",
             shape_str(mat1.sizes()), shape_str(mat2.sizes()));
  KILN_CHECK(mat1.sym_size(1) == mat2.sym_size(0) || mat1.size(1) == mat2.size(0),
             "addmm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", mat1.size(0),
             mat1.size(1), mat2.size(0), mat2.size(1));
  return scaled_sum("addmm", self, mm(mat1, mat2), beta, alpha);
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(batch1.dim() == 3 && batch2.dim() == 3,
             "baddbmm: expected 3-D tensors, got batch1 of shape {} and batch2 of shape {}",
             shape_str(batch1.sizes()), shape_str(batch2.sizes()));
  KILN_CHECK((batch1.sym_size(0) == batch2.sym_size(0) || batch1.size(0) == batch2.size(0)) &&
                 (batch1.sym_size(2) == batch2.sym_size(1) || batch1.size(2) == batch2.size(1)),
             "baddbmm: batch1 of shape {} and batch2 of shape {} cannot be multiplied (expected "
             "equal batch sizes and batch2.size(1) == batch1.size(2))",
             shape_str(batch1.sizes()), shape_str(batch2.sizes()));
  return scaled_sum("baddbmm", self, bmm(batch1, batch2), beta, alpha);
}

}  // namespace kiln
