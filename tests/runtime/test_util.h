// Helpers for the runtime suite: everything in tests/test_util.h plus tools for poking at the
// global op table.
#pragma once

#include "../test_util.h"
#include "kiln/runtime/dispatch_key.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/op_table.h"

namespace kiln_test {

// Installs a boxed kernel in one dispatch-key slot of a global op and restores the previous
// kernel (normally nullptr) when destroyed, so that no test leaks a kernel into another.
class BoxedKernelSlot {
 public:
  BoxedKernelSlot(std::string_view op, kiln::DispatchKey key, kiln::BoxedKernel kernel)
      : op_(kiln::OpTable::instance().mutable_op(op)), key_(static_cast<int>(key)) {
    saved_ = op_.boxed[static_cast<size_t>(key_)];
    op_.boxed[static_cast<size_t>(key_)] = kernel;
  }
  ~BoxedKernelSlot() { op_.boxed[static_cast<size_t>(key_)] = saved_; }
  BoxedKernelSlot(const BoxedKernelSlot&) = delete;
  BoxedKernelSlot& operator=(const BoxedKernelSlot&) = delete;

 private:
  kiln::OpDef& op_;
  int key_;
  kiln::BoxedKernel saved_ = nullptr;
};

}  // namespace kiln_test
