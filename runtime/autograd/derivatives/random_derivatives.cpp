// Derivative formulas of the random family (Note [Gradient shapes] in derivative.h).
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/random_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;

// dropout is x * mask / (1 - p), linear in x: its gradient is the same dropout applied to the
// gradient. The attributes carry the seed and offset, so the call replays the forward's Philox
// mask exactly (Note [Random streams]), and it is itself differentiable the same way.
std::vector<Tensor> dropout_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<DropoutAttrs>();
  if (a.p == 0) return {args.grad()};  // every element kept, scale 1: the identity
  return {call_op1(args.op, {args.grad()}, a)};
}

}  // namespace

void register_random_derivatives(OpTable& table) {
  OpDef& dropout = table.mutable_op("dropout");
  dropout.derivative = dropout_backward;
  dropout.save_inputs = autograd::kSaveNone;
  dropout.save_outputs = autograd::kSaveNone;
}

}  // namespace kiln
