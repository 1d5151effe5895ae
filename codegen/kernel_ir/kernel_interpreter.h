// The kernel-IR interpreter: the reference executor of kernel IR (Note [Kernel IR]). Every
// backend's generated code is tested against it, and Backend::Interpreter runs fusion groups
// through it.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "kiln/codegen/kernel_ir/interpreter_plan.h"
#include "kiln/codegen/kernel_ir/kernel_ir.h"
#include "kiln/runtime/tensor.h"

namespace kiln::kir {

// Runs `kernel` once. args[i] binds buffers[i]: its dtype must match, and the buffer's element 0
// is the tensor's first element (data pointer, storage offset included). The kernel's index
// expressions carry the strides, so the tensors' own strides are not consulted. Throws
// kiln::Error naming the kernel and buffer on a count, dtype or extent mismatch.
void run_kernel(const Kernel& kernel, std::span<const Tensor> args);

// The checks and binding of run_kernel, for the compiled backends' launchers; `who` starts the
// error messages ("kernel-IR interpreter", "llvm backend").
std::vector<BoundBuffer> bind_arguments(const Kernel& kernel, std::span<const Tensor> args,
                                        std::string_view who);

}  // namespace kiln::kir
