// The kernel-IR interpreter: the reference executor of kernel IR (Note [Kernel IR]). Every
// backend's generated code is tested against it, and Backend::Interpreter runs fusion groups
// through it.
#pragma once

#include <cstdint>
#include <span>

#include "kiln/kernel_ir/interpreter_plan.h"
#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir {

// Runs `kernel` once (verified first) on buffers bound to its buffer list in order; the
// kernel's index expressions carry the strides. Binding tensors, with the checks of count,
// dtype and extent, is the runtime's (runtime/kernel_args.h): the kernel IR knows no tensors.
// A kernel with size parameters (Note [Size parameters]) takes their values in `sizes`.
void run_kernel(const Kernel& kernel, std::span<const BoundBuffer> buffers,
                std::span<const int64_t> sizes = {});

}  // namespace kiln::kir
