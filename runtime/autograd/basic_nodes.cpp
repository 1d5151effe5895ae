#include "kiln/runtime/autograd/basic_nodes.h"

#include "kiln/base/error.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln::autograd {

GraphRoot::GraphRoot(edge_list roots, variable_list grads)
    : Node(std::move(roots)), grads_(std::move(grads)) {
  for (const Tensor& g : grads_) {
    if (g.defined()) {
      add_input_metadata(g);
    } else {
      add_undefined_input();
    }
  }
}

variable_list GraphRoot::apply(variable_list&&) {
  return grads_;
}

AccumulateGrad::AccumulateGrad(Tensor variable)
    : Node(UINT64_MAX, edge_list()), variable_(std::move(variable)) {
  add_input_metadata(variable_);
  // The leaf's hook list lives on the tensor (so hooks outlive this Node); this Node runs it.
  AutogradMeta& meta = variable_.impl()->ensure_autograd_meta();
  if (!meta.hooks) meta.hooks = std::make_shared<TensorHookList>();
  tensor_pre_hooks_.push_back(std::make_unique<TensorHooksPreHook>(meta.hooks, 0));
}

std::unique_ptr<PostAccumulateGradHook>& AccumulateGrad::tensor_post_acc_grad_hooks() {
  return variable_.impl()->ensure_autograd_meta().post_acc_grad_hook;
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor& new_grad = grads.at(0);
  if (!new_grad.defined()) return {};
  // Concurrent backward passes on different threads may end in the same leaf.
  std::lock_guard<std::mutex> lock(mutex());
  AutogradMeta& meta = variable_.impl()->ensure_autograd_meta();
  Tensor& grad = meta.grad;
  if (!grad.defined()) {
    // Steal the incoming gradient when nothing else can see it (the engine's buffer held the
    // only handle); otherwise .grad must not alias a tensor someone else may modify.
    bool sole_owner = new_grad.impl_ptr().use_count() == 1 &&
                      new_grad.impl()->storage().use_count() == 1 && new_grad.is_contiguous();
    if (GradMode::is_enabled() || sole_owner) {
      grad = std::move(new_grad);
    } else {
      grad = new_grad.clone();
    }
  } else if (!GradMode::is_enabled() && !requires_grad(grad)) {
    // As in libtorch, .grad accumulates in place: a handle the user took earlier sees the sum.
    grad.add_(new_grad);
  } else {
    // create_graph: the sum is recorded; a .grad the user still holds is not modified.
    grad = grad + new_grad;
  }
  if (std::unique_ptr<PostAccumulateGradHook>& hook = meta.post_acc_grad_hook) (*hook)(variable_);
  return {};
}

ErrorNode::ErrorNode(std::string message, edge_list next_edges)
    : Node(std::move(next_edges)), message_(std::move(message)) {}

variable_list ErrorNode::apply(variable_list&&) {
  KILN_ERROR("{}", message_);
}

}  // namespace kiln::autograd
