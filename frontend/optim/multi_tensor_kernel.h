// One compiled kernel that applies an optimizer's update to every parameter in one launch.
//
// Note [Multi-tensor kernels]
// An optimizer step applies the same elementwise rule to many tensors of different sizes.
// Compiled as a graph, each tensor is its own fusion group (its own launch, and a group has at
// most 32 arguments), and the step costs a launch per tensor and state update. Here the rule is
// one kernel-IR kernel over a chunk of one tensor: buffers `param` (read and written), `grad`,
// the state tensors (read and written) and `scalars`, the tensor's row of the per-step scalar
// table; its one loop runs to the size parameter `n`. A launch is a table of chunks (the
// buffers' addresses and a length of at most kChunkElements) over every parameter that has a
// gradient, and one parallel_for over that table runs the compiled function on each chunk. So
// a step over 50 parameters is one compile (once per optimizer and dtype), one parallel region
// and no per-tensor dispatch, and the table has no argument limit.
//
// The buffers of one chunk must not overlap (the generated code assumes noalias), which the
// optimizer checks before it launches (Optimizer::disjoint in optimizer.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/dtype.h"
#include "kiln/codegen/compiled_kernel.h"
#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::optim::detail {

// Given the loaded values (param, grad, then the states) and the scalars of the tensor's row,
// in the compute dtype, returns the new values of param and the states in that order.
using KernelBody = std::function<std::vector<kir::Val>(std::span<const kir::Val> values,
                                                       std::span<const kir::Val> scalars)>;

// The kernel IR of a multi-tensor update (exposed for tests and dumps).
kir::Kernel multi_tensor_kernel_ir(const std::string& name, DType dtype, int states, int scalars,
                                   const KernelBody& body);

class MultiTensorKernel {
 public:
  static constexpr int64_t kChunkElements = int64_t{1} << 14;

  // Compiles the kernel with the LLVM backend. Returns nullptr where this build has no LLVM or
  // the compile failed (which warns once and is logged under "fallbacks"); the optimizer then
  // runs its tensor-op path.
  static std::shared_ptr<const MultiTensorKernel> compile(const std::string& name, DType dtype,
                                                          int states, int scalars,
                                                          const KernelBody& body);

  struct Row {
    std::vector<void*> buffers;  // param, grad, states (element 0 of each, contiguous)
    int64_t numel = 0;
    const void* scalars = nullptr;  // this tensor's scalars, in the kernel's dtype
  };
  // Runs the kernel over every row, split into chunks across Kiln's threads.
  void run(std::span<const Row> rows) const;

  const kir::Kernel& kernel_ir() const { return *kernel_; }
  DType dtype() const { return dtype_; }

 private:
  MultiTensorKernel(std::shared_ptr<const kir::Kernel> kernel,
                    std::shared_ptr<const codegen::CompiledKernel> compiled, DType dtype)
      : kernel_(std::move(kernel)), compiled_(std::move(compiled)), dtype_(dtype) {}
  std::shared_ptr<const kir::Kernel> kernel_;
  std::shared_ptr<const codegen::CompiledKernel> compiled_;
  DType dtype_;
};

}  // namespace kiln::optim::detail
