// Derivative formulas of the reduction family (Note [Gradient shapes] in derivative.h): sum,
// mean, prod, amax, amin, logsumexp, var, max/min over a dim; argmax/argmin are not
// differentiable. Each formula first brings the gradient (and any saved result) back to the
// input's rank, with size-1 dims where the reduction removed them, so that it broadcasts
// against the input.
#include <algorithm>

#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::kSaveNone;
using autograd::save_bit;

// The reduced dims of an input of rank nd, wrapped and ascending (empty dims: all of them).
Shape reduced_dims(std::string_view op, const Shape& dims, int64_t nd) {
  Shape out;
  if (dims.empty()) {
    for (int64_t d = 0; d < nd; ++d)
      out.push_back(d);
    return out;
  }
  if (nd == 0) return out;  // a 0-dim input "reduces" dim 0 or -1 without removing anything
  for (int64_t d : dims)
    out.push_back(wrap_dim(op, d, nd));
  std::sort(out.begin(), out.end());
  return out;
}

// A reduction's output (or its gradient) with the reduced dims reinserted as size 1.
Tensor unreduce(const Tensor& t, const Shape& reduced, bool keepdim) {
  if (keepdim) return t;
  Tensor out = t;
  for (int64_t d : reduced)
    out = out.unsqueeze(d);
  return out;
}

// How many input elements each output element reduces.
int64_t reduced_numel(const Shape& sizes, const Shape& reduced) {
  int64_t n = 1;
  for (int64_t d : reduced)
    n *= sizes[static_cast<size_t>(d)];
  return n;
}

// The gradient and the reduced dims of a ReduceAttrs reduction, as the formulas use them.
struct Reduced {
  Shape dims;   // wrapped, ascending
  Tensor grad;  // with the input's rank
};

Reduced reduced_grad(const GradArgs& args, const Shape& dims, bool keepdim) {
  // Only the rank is read, which no symbol changes (Note [Symbolic saved sizes]).
  auto rank = static_cast<int64_t>(args.input_meta[0].sizes.size());
  Reduced r;
  r.dims = reduced_dims(args.op.name, dims, rank);
  r.grad = unreduce(args.grad(), r.dims, keepdim);
  return r;
}

std::vector<Tensor> sum_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<ReduceAttrs>();
  Reduced r = reduced_grad(args, a.dims, a.keepdim);
  return {r.grad.expand_symint(args.input_sym_sizes(0))};
}

// The number of elements each output element of a mean averages, as a 0-dim int64 tensor when
// it is symbolic (Note [Symbolic saved sizes]): the sum of ones over the reduced dims, so the
// traced graph computes it at every size. Summing int64 ones is exact at any count.
// On the gradient's device: a count on another device would not divide it.
Tensor symbolic_count(const SymShape& sizes, const Shape& reduced, Device device) {
  SymShape counted;
  for (int64_t d : reduced)
    counted.push_back(sizes[static_cast<size_t>(d)]);
  return sum(
      ones({}, TensorOptions().dtype(kInt64).device(device)).expand_symint(std::move(counted)));
}

std::vector<Tensor> mean_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<ReduceAttrs>();
  Reduced r = reduced_grad(args, a.dims, a.keepdim);
  SymShape sizes = args.input_sym_sizes(0);
  if (is_static(sizes)) {
    auto n = static_cast<double>(reduced_numel(args.input_sizes(0), r.dims));
    return {div(r.grad, n).expand(args.input_sizes(0))};
  }
  // The same division with the count as a tensor: a float divided by an int64 count converts
  // the count to the float's dtype, as the scalar does.
  return {div(r.grad, symbolic_count(sizes, r.dims, r.grad.device())).expand_symint(sizes)};
}

// d prod / d x_i is the product of the other elements of x_i's group, P_i. prod / x_i is
// wrong where x_i == 0, so the formula splits each group into its zero elements Z and the rest,
// and takes every product without dividing by a zero:
//   i not in Z:  P_i = prod(Z) * prod(rest) / x_i
//   i in Z:      P_i = prod(Z without i) * prod(rest), where prod(Z without i) is 1 with one
//                zero, the other zero's value with two (the sum over Z minus x_i), and 0 with
//                more (a product of at least two zeros)
// The masks are constants, and each branch is the same polynomial as P_i wherever they hold, so
// the formula stays differentiable: every order is exact for up to two zeros in a group, and
// the first two orders are exact for any number (torch's prod is exact to every order only up
// to one zero).
std::vector<Tensor> prod_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<ReduceAttrs>();
  Reduced r = reduced_grad(args, a.dims, a.keepdim);
  const Tensor& x = args.inputs[0];
  Tensor is_zero = x.eq(0);
  Tensor x_safe = x.masked_fill(is_zero, 1);
  Tensor rest_prod = prod(x_safe, r.dims, /*keepdim=*/true);
  Tensor zero_prod = prod(x.masked_fill(logical_not(is_zero), 1), r.dims, /*keepdim=*/true);
  Tensor zero_count = sum(is_zero, r.dims, /*keepdim=*/true);
  Tensor zero_sum = sum(x * is_zero, r.dims, /*keepdim=*/true);
  Tensor other_zeros = zero_count.eq(1) + zero_count.eq(2) * (zero_sum - x);
  Tensor outside = zero_prod * rest_prod / x_safe;
  return {r.grad * where(is_zero, other_zeros * rest_prod, outside)};
}

// amax/amin: as torch, the gradient is shared evenly among the elements equal to the extreme.
std::vector<Tensor> extremum_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<ReduceAttrs>();
  Reduced r = reduced_grad(args, a.dims, a.keepdim);
  const Tensor& x = args.inputs[0];
  Tensor is_extreme = x.eq(unreduce(args.outputs[0], r.dims, a.keepdim));
  Tensor count = sum(is_extreme, r.dims, /*keepdim=*/true);
  return {r.grad * is_extreme / count};
}

// d logsumexp / d x_i = exp(x_i - logsumexp(x)), the softmax of the group.
std::vector<Tensor> logsumexp_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<ReduceAttrs>();
  Reduced r = reduced_grad(args, a.dims, a.keepdim);
  Tensor result = unreduce(args.outputs[0], r.dims, a.keepdim);
  return {r.grad * exp(args.inputs[0] - result)};
}

// var = sum((x - mean)^2) / max(0, N - correction), so d var / d x_i =
// 2 (x_i - mean) / max(0, N - correction) (the mean's own dependence on x cancels, since the
// deviations sum to zero).
std::vector<Tensor> var_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<VarAttrs>();
  Reduced r = reduced_grad(args, a.dims, a.keepdim);
  const Tensor& x = args.inputs[0];
  Tensor deviation = r.grad * (x - mean(x, r.dims, /*keepdim=*/true));
  SymShape sizes = args.input_sym_sizes(0);
  // Over symbols (Note [Symbolic saved sizes]) the count is a tensor, converted to x's dtype:
  // float32 and float64 hold it exactly, and 2 / denom rounds once, as the scalar does.
  // Narrower dtypes would round the count, so they read the sizes and specialize.
  if (!is_static(sizes) && (x.dtype() == kFloat32 || x.dtype() == kFloat64)) {
    Tensor denom = (symbolic_count(sizes, r.dims, x.device()).to(x.dtype()) - a.correction)
                       .clamp(Scalar(0.0), std::nullopt);
    return {deviation * (2.0 / denom)};
  }
  double n = static_cast<double>(reduced_numel(args.input_sizes(0), r.dims));
  double denom = std::max(0.0, n - a.correction);
  return {deviation * (2.0 / denom)};
}

// max/min over a dim: the gradient goes to the position the indices output names (the first
// extreme element, as torch), zero elsewhere.
std::vector<Tensor> index_extremum_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<DimIndexAttrs>();
  SymShape sizes = args.input_sym_sizes(0);  // Note [Symbolic saved sizes]
  auto nd = static_cast<int64_t>(sizes.size());
  if (nd == 0) return {args.grad()};  // the one element is its own extreme
  int64_t d = wrap_dim(args.op.name, a.dim.value_or(0), nd);
  Tensor g = a.keepdim ? args.grad() : args.grad().unsqueeze(d);
  Tensor index = a.keepdim ? args.outputs[1] : args.outputs[1].unsqueeze(d);
  return {scatter_add(full_symint(std::move(sizes), 0, g.options()), d, index, g)};
}

}  // namespace

void register_reduction_derivatives(OpTable& table) {
  table.set_derivative("sum", sum_backward, kSaveNone, kSaveNone);
  table.set_derivative("mean", mean_backward, kSaveNone, kSaveNone);
  table.set_derivative("prod", prod_backward, save_bit(0), kSaveNone);
  table.set_derivative("amax", extremum_backward, save_bit(0), save_bit(0));
  table.set_derivative("amin", extremum_backward, save_bit(0), save_bit(0));
  table.set_derivative("logsumexp", logsumexp_backward, save_bit(0), save_bit(0));
  table.set_derivative("var", var_backward, save_bit(0), kSaveNone);
  table.set_derivative("max", index_extremum_backward, kSaveNone, save_bit(1));
  table.set_derivative("min", index_extremum_backward, kSaveNone, save_bit(1));
  // Integer positions: no gradient flows through them.
  table.mutable_op("argmax").flags |= kNonDifferentiable;
  table.mutable_op("argmin").flags |= kNonDifferentiable;
}

}  // namespace kiln
