#include "kiln/runtime/api/nn_ops.h"

#include "kiln/base/call_site.h"
#include "kiln/base/error.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/api/reduction_ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor softmax(const Tensor& x, int64_t dim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("softmax"), {x}, SoftmaxAttrs{dim});
}
Tensor log_softmax(const Tensor& x, int64_t dim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("log_softmax"), {x}, SoftmaxAttrs{dim});
}

Tensor layer_norm(const Tensor& x, Shape normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps, std::source_location loc) {
  CallSiteScope site(loc);
  LayerNormAttrs a{std::move(normalized_shape), eps, weight.defined(), bias.defined()};
  std::vector<Tensor> inputs{x};
  if (weight.defined()) inputs.push_back(weight);
  if (bias.defined()) inputs.push_back(bias);
  return std::move(call_op(KILN_OP("layer_norm"), inputs, &a)[0]);
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                int64_t ignore_index, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("nll_loss"), {input, target}, NllLossAttrs{reduction, ignore_index});
}

// cross_entropy = nll_loss(log_softmax(logits, class dim)), as in PyTorch.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction,
                     int64_t ignore_index, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(target.dtype() == kInt64,
             "cross_entropy: expected target of dtype int64 (class indices), got {} (target "
             "shape {}, logits shape {}); probability targets are not supported",
             target.dtype(), shape_str(target.sizes()), shape_str(logits.sizes()));
  KILN_CHECK(logits.dim() == 1 || logits.dim() == 2,
             "cross_entropy: expected logits of shape [N, C] or [C], got {}",
             shape_str(logits.sizes()));
  bool batched = logits.dim() == 2;
  // Sizes compared as expressions first: equal ones need no integer read (Note [Symbolic
  // tracing]); others are read, which specializes them under a symbolic trace.
  KILN_CHECK(batched ? (target.dim() == 1 && (target.sym_size(0) == logits.sym_size(0) ||
                                              target.size(0) == logits.size(0)))
                     : target.dim() == 0,
             "cross_entropy: logits of shape {} expect a target of shape {}, got {}",
             shape_str(logits.sizes()), batched ? shape_str(Shape{logits.size(0)}) : "[]",
             shape_str(target.sizes()));
  try {
    return nll_loss(log_softmax(logits, batched ? 1 : 0), target, reduction, ignore_index);
  } catch (const Error& e) {
    // nll_loss's own checks (a class index out of range) name nll_loss: say which call it was.
    std::string_view what = e.what();
    if (what.rfind("nll_loss", 0) != 0) throw;
    KILN_ERROR("cross_entropy (logits of shape {}, target of shape {}): {}",
               shape_str(logits.sizes()), shape_str(target.sizes()), what);
  }
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(reduction == "none" || reduction == "mean" || reduction == "sum",
             "mse_loss: reduction must be \"none\", \"mean\" or \"sum\", got \"{}\"", reduction);
  // Compared as SymInts first (Note [Size reads while tracing]).
  KILN_CHECK(input.sym_sizes() == target.sym_sizes() || input.sizes() == target.sizes(),
             "mse_loss: input of shape {} and target of shape {} must have the same shape",
             shape_str(input.sizes()), shape_str(target.sizes()));
  Tensor d = sub(input, target);
  Tensor sq = mul(d, d);
  if (reduction == "none") return sq;
  return reduction == "sum" ? sum(sq) : mean(sq);
}

}  // namespace kiln
