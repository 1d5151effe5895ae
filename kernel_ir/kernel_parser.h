// The kernel-IR text format read back: parse_kernels(print(k)) gives kernels that print as the
// same text (kernel_ir/README.md, "Kernel-IR text"), so kernel-IR tests can be text in, `kiln
// opt`, text out, like the graph IR's.
//
// Note [Kernel-IR constants in text]
// The text does not spell a constant's dtype: it comes from where the constant stands. An
// operand takes its sibling's dtype (the other side of `+`, the other branch of `select`), a
// `let`'s value the declared dtype, an accumulate the accumulator's, an index i64, a condition
// b8, and a stored value the buffer's unless its own operands say otherwise. Only under a cast
// is there no such context; there a floating constant is f64 when the cast is to another dtype
// than f64 (else f32), an integer one i64 (else i32), since the builder makes no cast to the
// dtype a value already has. `-2.0` is the constant -2.0, not a negation of 2.0 (they print
// alike). Expressions are appended as written, without the builder's folding.
#pragma once

#include <string_view>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir {

// Every kernel in `text`, in order; `#` starts a comment to the end of the line. Throws
// kiln::Error "kernel-IR parser: line L, column C: ..." on malformed text. The kernels are not
// verified (kernel_verifier.h).
std::vector<Kernel> parse_kernels(std::string_view text);

// True when the first token of `text` (after comments) is `kernel`: kernel-IR text rather than
// a graph.
bool looks_like_kernel_ir(std::string_view text);

}  // namespace kiln::kir
