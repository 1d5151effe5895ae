#include "kiln/runtime/autograd/autograd_meta.h"

#include <mutex>

#include "kiln/runtime/autograd/basic_nodes.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/op_def.h"

namespace kiln::autograd {
namespace {

// Creating a leaf's AccumulateGrad must happen once even when two threads build graphs from
// the same parameter at the same time.
std::mutex& accumulator_mutex() {
  static std::mutex m;
  return m;
}

// Note [Views in autograd]: replay the view op on its (current) source with grad mode on, and
// take over the replayed view's history.
void refresh_view_history(AutogradMeta& meta, uint32_t version) {
  Tensor replayed;
  {
    AutoGradMode grad_on(true);
    // Bookkeeping for the view's history, not a value of the user's program: a trace must not
    // record it (the source was modified in place, so its traced value is stale anyway).
    ExcludeDispatchKeysGuard untraced(DispatchKey::Tracer);
    replayed = std::move(call_op(*meta.view_op, std::span<const Tensor>(&meta.view_source, 1),
                                 meta.view_attrs.get())[0]);
  }
  AutogradMeta* fresh = replayed.impl()->autograd_meta();
  if (fresh != nullptr && fresh->grad_fn) {
    meta.grad_fn = fresh->grad_fn;
    meta.output_nr = fresh->output_nr;
    meta.requires_grad = true;
  } else {
    meta.grad_fn = nullptr;
    meta.requires_grad = false;
  }
  meta.view_version = version;
}

}  // namespace

AutogradMeta::~AutogradMeta() {
  Tensor source = std::move(view_source);
  // Unlink the chain from the near end while this handle is the last owner of each link.
  while (source.defined() && source.impl_ptr().use_count() == 1) {
    AutogradMeta* next = source.impl()->autograd_meta();
    if (next == nullptr || !next->view_source.defined()) break;
    Tensor further = std::move(next->view_source);
    source = std::move(further);
  }
}

bool requires_grad(const Tensor& t) {
  const AutogradMeta* meta = t.impl()->autograd_meta();
  if (meta == nullptr) return false;
  if (meta->requires_grad) return true;
  // A view's history may have changed through its base (Note [Views in autograd]).
  return meta->is_view() ? grad_fn(t) != nullptr : meta->grad_fn != nullptr;
}

std::shared_ptr<Node> grad_fn(const Tensor& t) {
  AutogradMeta* meta = t.impl()->autograd_meta();
  if (meta == nullptr) return nullptr;
  // A view the user made a leaf (requires_grad_ on a view without history) keeps no history.
  bool user_leaf = meta->requires_grad && meta->grad_fn == nullptr;
  if (meta->is_view() && !meta->view_made_in_no_grad && !user_leaf) {
    uint32_t version = t.impl()->version();
    if (version != meta->view_version) refresh_view_history(*meta, version);
  }
  return meta->grad_fn;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta* meta = t.impl()->autograd_meta();
  if (meta == nullptr || !meta->requires_grad || meta->grad_fn != nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(accumulator_mutex());
  std::shared_ptr<Node> acc = meta->grad_accumulator.lock();
  if (!acc) {
    acc = autograd::make_node<AccumulateGrad>(Tensor(t.impl_ptr()));
    meta->grad_accumulator = acc;
  }
  return acc;
}

Edge gradient_edge(const Tensor& t) {
  if (std::shared_ptr<Node> fn = grad_fn(t)) {
    return Edge(std::move(fn), t.impl()->autograd_meta()->output_nr);
  }
  if (std::shared_ptr<Node> acc = grad_accumulator(t)) return Edge(std::move(acc), 0);
  return Edge();
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  AutogradMeta& meta = t.impl()->ensure_autograd_meta();
  uint32_t nr = fn->add_input_metadata(t);
  (void)nr;
  meta.grad_fn = fn;
  meta.output_nr = output_nr;
  meta.requires_grad = true;
}

void install_retains_grad_hook(const Tensor& t);

void rebase_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  AutogradMeta& meta = t.impl()->ensure_autograd_meta();
  // A retained gradient follows the tensor to its new history and leaves the old one: .grad
  // holds the gradient of the current version only, never a sum over the versions.
  if (meta.retains_grad && meta.grad_fn) meta.grad_fn->pop_retains_grad_hook(meta.output_nr);
  meta.grad_fn = fn;
  meta.output_nr = output_nr;
  meta.requires_grad = true;
  // Hooks registered on the old history stay there; new hooks attach to the new grad_fn.
  meta.hooks.reset();
  if (meta.retains_grad) install_retains_grad_hook(t);
}

}  // namespace kiln::autograd

namespace kiln::autograd {
namespace {

// Stores the gradient of a non-leaf in its .grad (Tensor::retain_grad).
struct RetainsGradHook : FunctionPreHook {
  RetainsGradHook(std::weak_ptr<TensorImpl> t, size_t idx) : tensor(std::move(t)), value_idx(idx) {}
  variable_list operator()(const variable_list& grads) override {
    std::shared_ptr<TensorImpl> impl = tensor.lock();
    if (!impl || value_idx >= grads.size() || !grads[value_idx].defined()) return grads;
    AutogradMeta& meta = impl->ensure_autograd_meta();
    const Tensor& g = grads[value_idx];
    if (!meta.grad.defined()) {
      meta.grad = GradMode::is_enabled() ? g : g.clone();
    } else {
      meta.grad = meta.grad + g;
    }
    return grads;
  }
  std::weak_ptr<TensorImpl> tensor;
  size_t value_idx;
};

}  // namespace

void install_retains_grad_hook(const Tensor& t) {
  AutogradMeta& meta = t.impl()->ensure_autograd_meta();
  meta.retains_grad = true;
  if (!meta.grad_fn) return;
  meta.grad_fn->add_retains_grad_hook(
      std::make_unique<RetainsGradHook>(std::weak_ptr<TensorImpl>(t.impl_ptr()), meta.output_nr),
      meta.output_nr);
}

}  // namespace kiln::autograd
