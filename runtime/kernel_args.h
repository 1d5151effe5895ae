// Tensors as the arguments of a kernel-IR kernel: the binding that the kernel-IR interpreter and
// the compiled backends' launchers share. The kernel IR and the backends take bound buffers
// (kernel_ir/interpreter_plan.h); tensors, and the checks that a tensor fits its buffer, belong
// to the runtime.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kiln/kernel_ir/interpreter_plan.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/runtime/tensor.h"

namespace kiln::kir {

// args[i] binds buffers[i]: its dtype must match, and the buffer's element 0 is the tensor's
// first element (data pointer, storage offset included). The kernel's index expressions carry
// the strides, so the tensors' own strides are not consulted. Throws kiln::Error naming the
// kernel and buffer on a count, dtype, device or extent mismatch; `who` starts the messages
// ("kernel-IR interpreter", "llvm backend").
std::vector<BoundBuffer> bind_arguments(const Kernel& kernel, std::span<const Tensor> args,
                                        std::string_view who);

// Runs `kernel` once in the kernel-IR interpreter on tensors bound as above; `sizes` are the
// values of its size parameters (Note [Size parameters]), whose buffers of kRuntimeExtent
// extend over their tensors' elements.
void run_kernel(const Kernel& kernel, std::span<const Tensor> args,
                std::span<const int64_t> sizes = {});

}  // namespace kiln::kir
