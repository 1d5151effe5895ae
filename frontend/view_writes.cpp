// Note [Writes through views]
// The graph IR has no aliasing: every tensor maps to a Value (Note [Tensor to Value map]). An
// in-place op on a view (`b[:, :2] *= w`, `cache[:, pos] = k`) writes into its base's storage,
// so after recording the op's functional form for the view, the tracer records the base's new
// Value too: where(A(ones), A(view), base), with A the adjoint of the view chain from the base
// (each view op's own derivative formula), the same merge CopySlices does for gradients (Note
// [In-place ops on views]). Any view of that storage read afterwards (the written one's
// siblings, or the chain's intermediate views) has a stale entry; it is recorded again by
// replaying its view ops on the base's current Value. Only views that autograd recorded (grad
// mode on, or a source that requires grad) have a chain; a write through any other alias still
// makes the aliases unreadable in the trace.
#include "kiln/frontend/graph_tracer.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/dispatcher.h"

namespace kiln {

std::optional<GraphTracer::ViewWrite> GraphTracer::begin_view_write(const Tensor& self) {
  if (!self.is_view()) return std::nullopt;
  ViewWrite w;
  w.chain = autograd::view_chain(self);
  // The base's Value before the write (a stale base cannot be expressed, and throws here).
  w.base_before = value_of(w.chain.base);
  return w;
}

void GraphTracer::finish_view_write(const ViewWrite& write, const Tensor& self) {
  const Tensor& base = write.chain.base;
  // Helper ops of the trace, not of the user's program: no autograd history for them.
  ExcludeDispatchKeysGuard no_autograd(DispatchKey::Autograd);
  // A stand-in that holds the base's old Value: the base tensor itself already holds the new
  // data, and its identity maps to one Value at a time. Zeros, not uninitialized memory: the
  // merge below also runs on the real tensors, and garbage is not a valid bool.
  Tensor before;
  {
    ExcludeDispatchKeysGuard untraced(DispatchKey::Tracer);
    before = zeros(base.sizes(), base.options());
  }
  set_value(before, write.base_before);
  Tensor merged = autograd::merge_into_base(write.chain.steps, self, before);
  set_value(base, value_of(merged));
  add_saved_symbolic_sizes(std::span<const Tensor>(&base, 1));
}

ir::Value* GraphTracer::replay_view(const Tensor& t) {
  if (!t.is_view()) return nullptr;
  autograd::ViewChain chain = autograd::view_chain(t);
  if (find_value(chain.base) == nullptr) return nullptr;
  ExcludeDispatchKeysGuard no_autograd(DispatchKey::Autograd);
  // The replayed view has t's identity (same storage, offset, sizes and strides), so recording
  // it maps t's entry to the new Value.
  Tensor replayed = autograd::apply_view_chain(chain, chain.base);
  return find_value(t);
}

}  // namespace kiln
