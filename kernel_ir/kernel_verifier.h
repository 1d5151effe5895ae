// The kernel-IR verifier (Note [Kernel IR]).
#pragma once

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir {

// Throws kiln::Error naming the kernel, the statement path and the problem: ids out of range,
// operand dtypes, variables used outside their scope or defined twice, stores into input
// buffers, non-positive loop extents, a Vector loop that is not innermost, and index
// expressions that can leave their buffer's extent for some iteration. In a kernel with size
// parameters, indices into buffers of kRuntimeExtent are left to the launch: verify the kernel
// that specialize_sizes (kernel_passes.h) makes for the launch's sizes.
void verify(const Kernel& kernel);

}  // namespace kiln::kir
