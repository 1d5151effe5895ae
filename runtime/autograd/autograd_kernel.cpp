// The Autograd dispatch key's kernel, shared by every op of the table: it runs the op below
// the Autograd key, then records an OpBackward Node whose next edges are the inputs' gradient
// edges, saves what the op's derivative reads, and gives the outputs their history.
#include <optional>

#include "kiln/runtime/autograd/anomaly_mode.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/copy_slices.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/autograd/op_backward.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {
namespace autograd {
namespace {

bool saves(uint32_t mask, size_t i) {
  return mask == kSaveAll || (i < 32 && ((mask >> i) & 1u) != 0);
}

std::vector<Tensor> redispatch(const OpDef& op, std::span<const Tensor> inputs, const void* attrs) {
  ExcludeDispatchKeysGuard below(DispatchKey::Autograd);
  return call_op(op, inputs, attrs);
}

std::shared_ptr<OpBackward> make_node(const OpDef& op, std::span<const Tensor> inputs,
                                      const void* attrs) {
  auto node = autograd::make_node<OpBackward>(op, attrs, collect_next_edges(inputs));
  std::vector<InputMetadata> metas;
  metas.reserve(inputs.size());
  for (const Tensor& t : inputs)
    metas.push_back(t.defined() ? InputMetadata(t) : InputMetadata());
  node->set_forward_input_meta(std::move(metas));
  if (AnomalyMode::is_enabled()) node->metadata()->forward_op = op.name;
  return node;
}

// Records `outputs[0]` as a view of inputs[0] (Note [Views in autograd]): in grad mode always,
// in no-grad mode only for a source that requires grad (to refuse an in-place op on it later).
void record_view(const OpDef& op, std::span<const Tensor> inputs, const void* attrs,
                 const std::vector<Tensor>& outputs) {
  if (outputs.empty()) return;
  bool no_grad = !GradMode::is_enabled();
  if (no_grad && !requires_grad(inputs[0])) return;
  AutogradMeta& meta = outputs[0].impl()->ensure_autograd_meta();
  meta.view_source = inputs[0];
  meta.view_op = &op;
  meta.view_attrs =
      std::shared_ptr<void>(op.attrs->clone(attrs), [&op](void* p) { op.attrs->destroy(p); });
  meta.view_version = outputs[0].version();
  meta.view_made_in_no_grad = no_grad;
}

// A copy of `t`'s value before an in-place op overwrites it. This runs below the Tracer key, so
// a trace cannot see the clone; it is told instead that the copy holds t's current value, which
// the backward formula then reads (Note [Tracing state]).
Tensor saved_copy(const Tensor& t) {
  Tensor copy = t.clone();
  if (TracingState* state = current_tracing_state()) state->note_same_value(copy, t);
  return copy;
}

std::vector<Tensor> in_place_kernel(const OpDef& op, std::span<const Tensor> inputs,
                                    const void* attrs) {
  const Tensor& self = inputs[0];
  check_in_place(op.name, self);
  // Note [In-place ops on views]: the op changes the view's base, whose history it rewrites.
  std::optional<ViewChain> chain;
  if (self.is_view()) chain = view_chain(self);
  // self's value before the op, when the formula reads it. The clone is recorded, so that a
  // create_graph backward can differentiate through the saved value too.
  Tensor self_before;
  if (saves(op.save_inputs, 0)) self_before = saved_copy(self);
  std::shared_ptr<OpBackward> node = make_node(op, inputs, attrs);
  if (chain) node->set_next_edge(0, gradient_edge(chain->base));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!saves(op.save_inputs, i)) continue;
    // An operand that aliases self (x.mul_(x)) is saved as self's value before the op.
    bool aliases_self =
        i > 0 && inputs[i].defined() && inputs[i].impl()->storage() == self.impl()->storage();
    if (i == 0 || aliases_self) {
      if (!self_before.defined() || (aliases_self && !inputs[i].is_same(self))) {
        node->save_input(i, saved_copy(inputs[i]));
      } else {
        node->save_input(i, self_before);
      }
    } else {
      node->save_input(i, inputs[i]);
    }
  }
  std::vector<Tensor> outputs = redispatch(op, inputs, attrs);
  node->add_input_metadata(self);
  if (!chain) {
    rebase_history(self, node);
    if (saves(op.save_outputs, 0)) node->save_output(0, self);
    return outputs;
  }
  Tensor base = chain->base;
  rebase_history(base, make_node<CopySlices>(base, std::move(*chain), node));
  if (saves(op.save_outputs, 0)) {
    // The view's own history comes from the base; the formula reads its value as node's output
    // (Note [Saved outputs and cycles]).
    Tensor as_output = self.detach();
    AutogradMeta& meta = as_output.impl()->ensure_autograd_meta();
    meta.grad_fn = node;
    meta.requires_grad = true;
    node->save_output(0, as_output);
  }
  return outputs;
}

std::vector<Tensor> autograd_kernel(const OpDef& op, std::span<const Tensor> inputs,
                                    const void* attrs) {
  bool any_requires_grad = false;
  if (GradMode::is_enabled() && !op.has(kNonDifferentiable)) {
    for (const Tensor& t : inputs)
      any_requires_grad = any_requires_grad || (t.defined() && requires_grad(t));
  }
  if (!any_requires_grad) {
    std::vector<Tensor> outputs = redispatch(op, inputs, attrs);
    if (op.has(kView)) record_view(op, inputs, attrs, outputs);
    return outputs;
  }
  KILN_CHECK(op.derivative != nullptr,
             "{}: the op has no derivative formula, but an input requires grad", op.name);
  if (op.has(kInPlace)) return in_place_kernel(op, inputs, attrs);

  std::shared_ptr<OpBackward> node = make_node(op, inputs, attrs);
  std::vector<Tensor> outputs = redispatch(op, inputs, attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (saves(op.save_inputs, i)) node->save_input(i, inputs[i]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (is_floating(outputs[i].dtype())) {
      set_history(outputs[i], node, static_cast<uint32_t>(i));
    } else {
      node->add_undefined_input();
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (saves(op.save_outputs, i)) node->save_output(i, outputs[i]);
  }
  if (op.has(kView)) record_view(op, inputs, attrs, outputs);
  return outputs;
}

}  // namespace
}  // namespace autograd

void register_autograd_kernels(OpTable& table) {
  for (OpDef* op : table.ops())
    op->boxed[static_cast<int>(DispatchKey::Autograd)] = autograd::autograd_kernel;
}

}  // namespace kiln
