// Derivative formulas of the nn family (Note [Gradient shapes] in derivative.h): softmax,
// log_softmax, layer_norm and nll_loss.
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::kSaveNone;
using autograd::save_bit;

// Note [Fused normalization backward]
// The gradients of softmax, log_softmax and layer_norm are written twice on purpose: as Tensor
// ops here, and as the fused internal ops softmax_backward, log_softmax_backward and
// layer_norm_backward (kernels/nn_backward_ops.cpp; their row programs, which the CUDA kernels
// are generated from, in kernels/row_programs.cpp). The Tensor-op formula runs where something
// must see into it:
// - a backward that is itself differentiated (create_graph) records the formula, which has a
//   derivative of its own;
// - compile() traces the formula (TracingState::decomposes_fused_backwards), so that fusion
//   merges it with its neighbours: on an H100 the compiled layer_norm backward (one fused
//   kernel) took 382 us where the fused op takes 540; on the CPU the compiled attention,
//   cross-entropy and transformer steps measured the same either way.
// Every other backward runs the fused op, which reads each input once and writes once where the
// formula makes five to ten passes over memory, and trace() records that op, so that a traced
// backward replays eager exactly. The OpInfo gradcheck runs the fused ops, gradgradcheck
// (nn_grad_test.cpp) and the compile OpInfo test the formulas, and fused_backward_test.cpp
// compares the two.
bool fused_backward(const Tensor& g, const Tensor& other) {
  return !GradMode::is_enabled() && !tracing_decomposes_fused_backwards() &&
         g.dtype() == other.dtype() && g.device() == other.device();
}

// y = softmax(x): dx = y * (g - sum(g * y)) over the softmax dim.
std::vector<Tensor> softmax_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<SoftmaxAttrs>();
  const Tensor& y = args.outputs[0];
  const Tensor& g = args.grad();
  if (fused_backward(g, y)) return {call_op1(KILN_OP("softmax_backward"), {g, y}, a)};
  return {y * (g - sum(g * y, {a.dim}, /*keepdim=*/true))};
}

// y = log_softmax(x): dx = g - softmax(x) * sum(g), with softmax(x) = exp(y).
std::vector<Tensor> log_softmax_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<SoftmaxAttrs>();
  const Tensor& y = args.outputs[0];
  const Tensor& g = args.grad();
  if (fused_backward(g, y)) return {call_op1(KILN_OP("log_softmax_backward"), {g, y}, a)};
  return {g - exp(y) * sum(g, {a.dim}, /*keepdim=*/true)};
}

// layer_norm over the trailing dims D (N elements): xhat = (x - mean) * rstd with
// rstd = 1 / sqrt(var + eps), y = xhat * w + b. With gx = g * w (or g without a weight):
//   dx = rstd * (gx - mean_D(gx) - xhat * mean_D(gx * xhat))
//   dw = g * xhat, db = g  (the engine sums these over the leading dims)
// mean and rstd are recomputed from the saved input rather than saved by the forward kernel,
// so the formula is made of Tensor ops only and is differentiable again.
std::vector<Tensor> layer_norm_backward(const GradArgs& args) {
  const auto& a = args.attrs_as<LayerNormAttrs>();
  size_t weight_at = 1, bias_at = a.has_weight ? 2 : 1;
  bool need_x = args.needs(0), need_w = a.has_weight && args.needs(weight_at);
  bool need_b = a.has_bias && args.needs(bias_at);
  std::vector<Tensor> out(args.input_meta.size());
  if (need_b) out[bias_at] = args.grad();
  if (!need_x && !need_w) return out;

  const Tensor& x = args.inputs[0];
  const Tensor& g = args.grad();
  if (fused_backward(g, x)) {
    LayerNormAttrs fused{a.normalized_shape, a.eps, a.has_weight, false};
    std::vector<Tensor> in{g, x};
    if (a.has_weight) in.push_back(args.inputs[weight_at]);
    std::vector<Tensor> r = call_op(KILN_OP("layer_norm_backward"), in, &fused);
    if (need_x) out[0] = r[0];
    if (need_w) out[weight_at] = r[1];
    return out;
  }
  int64_t nd = x.dim(), k = static_cast<int64_t>(a.normalized_shape.size());
  Shape dims;
  for (int64_t d = nd - k; d < nd; ++d)
    dims.push_back(d);
  Tensor centered = x - mean(x, dims, /*keepdim=*/true);
  Tensor variance = mean(centered * centered, dims, /*keepdim=*/true);
  Tensor rstd = rsqrt(variance + a.eps);
  Tensor xhat = centered * rstd;
  if (need_w) out[weight_at] = g * xhat;
  if (need_x) {
    Tensor gx = a.has_weight ? g * args.inputs[weight_at] : g;
    out[0] = rstd * (gx - mean(gx, dims, /*keepdim=*/true) -
                     xhat * mean(gx * xhat, dims, /*keepdim=*/true));
  }
  return out;
}

// nll_loss: the loss of row i is -input[i, target_i] (scaled by 1 / (count of non-ignored
// targets) for "mean"), so its gradient is -g_i at the target's column and 0 elsewhere; rows
// whose target is ignore_index get 0. The column is picked by comparing the target with an
// arange of the classes (a one-hot mask), which keeps the formula pointwise. The target is an
// index tensor: no gradient.
std::vector<Tensor> nll_loss_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor(), Tensor()};
  const auto& a = args.attrs_as<NllLossAttrs>();
  const Tensor& target = args.inputs[1];
  // The class count over symbols (Note [Symbolic saved sizes]).
  SymInt classes = args.input_sym_sizes(0).back();
  Tensor counted = target.ne(a.ignore_index);
  Tensor coef = -args.grad() * counted;
  if (a.reduction == "mean") {
    // With every target ignored all coefficients are already 0; torch's gradient is 0 there
    // too, so the count is kept at least 1 instead of dividing 0 by 0.
    coef = coef / clamp(sum(counted), 1);
  }
  Tensor safe_target = target.masked_fill(logical_not(counted), 0);
  Tensor one_hot = eq(arange_symint(classes, TensorOptions(kInt64).device(target.device())),
                      safe_target.unsqueeze(-1));
  return {one_hot * coef.unsqueeze(-1), Tensor()};
}

}  // namespace

void register_nn_derivatives(OpTable& table) {
  table.set_derivative("softmax", softmax_backward, kSaveNone, save_bit(0));
  table.set_derivative("log_softmax", log_softmax_backward, kSaveNone, save_bit(0));
  // Input 1 is the weight when has_weight is set (the bias otherwise, saved but unread).
  table.set_derivative("layer_norm", layer_norm_backward, save_bit(0) | save_bit(1), kSaveNone);
  table.set_derivative("nll_loss", nll_loss_backward, save_bit(1), kSaveNone);
}

}  // namespace kiln
