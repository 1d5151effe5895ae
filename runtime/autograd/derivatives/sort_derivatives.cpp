// Derivative formulas of sort, topk, cumsum and cumprod (Note [Gradient shapes] in
// derivative.h). sort and topk move values, so their gradient is gather's adjoint through the
// indices output: an out-of-place scatter_add into zeros, differentiable again. argsort returns
// positions only.
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/api/sort_ops.h"
#include "kiln/runtime/kernels/sort_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::kSaveNone;
using autograd::save_bit;

// Element j of the values output came from position indices[j] of the input. The zeros take
// the input's sizes over symbols (Note [Symbolic saved sizes]).
Tensor scatter_through_indices(const GradArgs& args, int64_t dim) {
  SymShape sizes = args.input_sym_sizes(0);
  const Tensor& g = args.grad();
  if (sizes.empty()) return g;  // the one element is its own sort
  return scatter_add(full_symint(std::move(sizes), 0, g.options()), dim, args.outputs[1], g);
}

std::vector<Tensor> sort_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  return {scatter_through_indices(args, args.attrs_as<SortAttrs>().dim)};
}

std::vector<Tensor> topk_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  return {scatter_through_indices(args, args.attrs_as<TopkAttrs>().dim)};
}

// The input's element i feeds every output j >= i with weight 1: the reversed running sum.
std::vector<Tensor> cumsum_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const Tensor& g = args.grad();
  if (g.dim() == 0) return {g};
  int64_t d = wrap_dim("cumsum", args.attrs_as<ScanAttrs>().dim, g.dim());
  return {flip(cumsum(flip(g, {d}), d), {d})};
}

// d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Dividing out_j by x_i fails at zeros,
// so the products leaving out x_i are formed directly: row i of an n x n matrix holds x with
// x_i replaced by 1, whose running product along the row gives every such product at once.
std::vector<Tensor> cumprod_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const Tensor& g = args.grad();
  const Tensor& x = args.inputs[0];
  if (g.dim() == 0) return {g};
  int64_t d = wrap_dim("cumprod", args.attrs_as<ScanAttrs>().dim, g.dim());
  int64_t last = g.dim() - 1;
  Tensor xl = x.transpose(d, last), gl = g.transpose(d, last);
  // Sizes over symbols (Note [Symbolic saved sizes]): a symbolic scan length stays symbolic.
  SymShape square = xl.sym_sizes();
  SymInt n = square.back();
  Tensor pos = arange_symint(n, TensorOptions(kInt64).device(x.device()));
  Tensor row = pos.unsqueeze(1), col = pos.unsqueeze(0);  // i and k (then j)
  square.insert(square.end() - 1, n);                     // [..., i, k]
  Tensor left_out = xl.unsqueeze(-2).expand_symint(square).masked_fill(row.eq(col), 1);
  Tensor products = cumprod(left_out, -1);                                   // [..., i, j]
  Tensor terms = (products * gl.unsqueeze(-2)).masked_fill(row.gt(col), 0);  // keep j >= i
  return {terms.sum({-1}).transpose(d, last)};
}

}  // namespace

void register_sort_derivatives(OpTable& table) {
  table.set_derivative("sort", sort_backward, kSaveNone, save_bit(1));
  table.set_derivative("topk", topk_backward, kSaveNone, save_bit(1));
  table.set_derivative("cumsum", cumsum_backward, kSaveNone, kSaveNone);
  table.set_derivative("cumprod", cumprod_backward, save_bit(0), kSaveNone);
  table.mutable_op("argsort").flags |= kNonDifferentiable;  // positions only
}

}  // namespace kiln
