// The kernel-IR text: a deterministic, readable rendering of a Kernel for dumps
// (KILN_DEBUG_DIR), logs, error messages and golden tests. The format is described in
// kernel_ir/README.md ("Kernel-IR text"); Kernel::str() returns the same text.
#pragma once

#include <iosfwd>
#include <string>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir {

std::string print(const Kernel& kernel);
std::ostream& operator<<(std::ostream& os, const Kernel& kernel);

// One expression written out in full (no `let` temporaries), as the kernel text would show it
// inline: "%i0 * 64 + %i1". Tolerates malformed kernels (out-of-range ids print as <bad ...>),
// since the verifier quotes expressions of kernels it is rejecting.
std::string expr_str(const Kernel& kernel, ExprId e);

}  // namespace kiln::kir
