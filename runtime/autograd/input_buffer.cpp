#include "kiln/runtime/autograd/input_buffer.h"

#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/dispatch_key.h"

namespace kiln::autograd {
namespace {

// In-place accumulation is safe when the held gradient is ours alone (no other handle, no view
// of its storage) and carries no history that an in-place op would have to rebase. The sizes
// are read below the tracer's notice: both branches compute the same values at any size.
bool can_accumulate_in_place(const Tensor& held, const Tensor& incoming) {
  return held.impl_ptr().use_count() == 1 && held.impl()->storage().use_count() == 1 &&
         !requires_grad(held) && !requires_grad(incoming) &&
         held.impl()->sizes() == incoming.impl()->sizes() && held.dtype() == incoming.dtype() &&
         held.is_contiguous();
}

}  // namespace

void InputBuffer::add(size_t pos, Tensor grad) {
  if (!grad.defined()) return;
  Tensor& held = buffer_.at(pos);
  if (!held.defined()) {
    held = std::move(grad);
  } else if (can_accumulate_in_place(held, grad)) {
    held.add_(grad);
  } else {
    held = held + grad;
  }
}

}  // namespace kiln::autograd
