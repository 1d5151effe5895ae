// Kernel IR -> LLVM IR (Note [LLVM kernel ABI]).
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::llvm_backend {

// Note [LLVM kernel ABI]
// A kernel compiles to one exported function `void SYMBOL(void** args)`. args[i] is the address
// of element 0 of buffer i, for every buffer in order, and args[n] (n buffers) points to an
// int32 status word, 0 on entry, that the kernel sets to e + 1 when integer division expression
// e divided by zero (the quotient is then computed with divisor 1, and the launcher throws an
// error naming the expression). A kernel with size parameters (Note [Size parameters]) finds
// their values, in order, in an int64 array that args[n + 1] points to. Each statement at the top
// of the kernel becomes an internal function whose buffer parameters are `noalias` (the launcher
// guarantees that outputs overlap nothing). A top-level Parallel loop is split into ranges by
// calling back into the runtime's thread pool:
//   kiln_llvm_parallel_for(void (*body)(void** args, int64 begin, int64 end), void** args,
//                          int64 extent, int64 grain)
// Integer `pow` calls kiln_llvm_ipow_i32 / kiln_llvm_ipow_i64 (kiln::math::pow). The JIT defines
// these three symbols (llvm_jit.cpp).
// Note [LLVM agrees with the interpreter]
// Compiled code computes what the kernel-IR interpreter computes, bit for bit, with two
// exceptions that a Vector loop's promise allows:
// - a float accumulate may be split over partial accumulators (sums and products reassociate,
//   within their rounding); and
// - a float max/min accumulate may return either zero for max(-0, +0), where the interpreter
//   keeps the first;
// and one payload difference: a NaN max/min result is the canonical quiet NaN, not the NaN
// operand itself (Note [NaN flags]).
// Everything else matches: float operations carry no fast-math flags (but `contract` inside the
// polynomial math, which the eager build's -ffp-contract=fast fuses the same way), f32 exp, expm1,
// exp2, log, log1p, tanh, erf, gelu_exact, sin, cos and pow are the same templates (llvm_math.h;
// sin and cos with libm's values beyond their polynomial's range), f64 transcendental functions are
// the same libm calls, and integer division, casts and 16-bit rounding reproduce lanes::'s
// definitions. tests/codegen/kernel_interpreter_test.cpp runs every interpreter test on the backend
// too.
inline constexpr const char* kParallelForSymbol = "kiln_llvm_parallel_for";
inline constexpr const char* kIpow32Symbol = "kiln_llvm_ipow_i32";
inline constexpr const char* kIpow64Symbol = "kiln_llvm_ipow_i64";

// Emits `k` (which must verify) as a module defining `symbol`; the caller sets the target triple
// and data layout. `vector_bits` is the target's vector register width, which sizes loops that
// mix float32 data with float64 accumulators. Throws kiln::Error for a construct the backend
// cannot lower.
std::unique_ptr<llvm::Module> emit_kernel(const kir::Kernel& k, const std::string& symbol,
                                          llvm::LLVMContext& ctx, unsigned vector_bits);

}  // namespace kiln::codegen::llvm_backend
