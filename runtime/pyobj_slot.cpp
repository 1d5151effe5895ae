#include "kiln/runtime/pyobj_slot.h"

#include <atomic>

namespace kiln {
namespace {
std::atomic<PyObjectSlot::ReleaseFn> g_release{nullptr};
}  // namespace

void PyObjectSlot::set_release(ReleaseFn fn) {
  g_release.store(fn);
}

PyObjectSlot::~PyObjectSlot() {
  if (!owned_ || wrapper_ == nullptr) return;
  if (ReleaseFn release = g_release.load()) release(wrapper_);
}

}  // namespace kiln
