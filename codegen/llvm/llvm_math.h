// Pointwise math primitives as LLVM IR (Note [Pointwise math is written once]). The float32
// exp, log, tanh, erf, pow and the others of the eager kernels are the polynomial templates of
// base/pointwise_math.h; instantiating the same templates with IRVal emits the same arithmetic
// as vectorizable IR, so compiled and eager code compute one function. Everything else maps to an
// LLVM instruction, an intrinsic, or the libm function the eager kernel calls.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "kiln/base/pointwise_math.h"
#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::llvm_backend {

// A value being emitted: wraps an llvm::Value of a float (or i1, for comparisons). Constants
// take the float type of the innermost IRScope, as kir::Val's take its MathScope's dtype.
class IRVal {
 public:
  IRVal(llvm::Value* v) : v_(v) {}  // NOLINT: an emitted value is a value
  IRVal(double c);                  // NOLINT: a constant of the scope's float type
  IRVal(int c);                     // NOLINT
  llvm::Value* get() const { return v_; }

 private:
  llvm::Value* v_;
};

class IRScope {
 public:
  IRScope(llvm::IRBuilder<>& b, llvm::Type* float_type);
  ~IRScope();
  IRScope(const IRScope&) = delete;
  IRScope& operator=(const IRScope&) = delete;
  static llvm::IRBuilder<>& builder();
  static llvm::Type* float_type();

 private:
  llvm::IRBuilder<>* prev_builder_;
  llvm::Type* prev_type_;
};

IRVal operator+(IRVal a, IRVal b);
IRVal operator-(IRVal a, IRVal b);
IRVal operator*(IRVal a, IRVal b);
IRVal operator/(IRVal a, IRVal b);
IRVal operator-(IRVal a);
IRVal operator<(IRVal a, IRVal b);
IRVal operator>(IRVal a, IRVal b);
IRVal operator<=(IRVal a, IRVal b);
IRVal operator!=(IRVal a, IRVal b);
IRVal operator==(IRVal a, IRVal b);
IRVal select(IRVal c, IRVal a, IRVal b);
IRVal abs(IRVal x);
// Note [Clamps and signs by bits] (pointwise_math.h): copysign and the bit-pattern min.
IRVal copysign(IRVal magnitude, IRVal sign);
IRVal min_nonnegative(IRVal a, IRVal c);
// a * b + c rounded once (llvm.fma, never split), as kiln::math::fma.
IRVal fma(IRVal a, IRVal b, IRVal c);
// The bit tricks of pointwise_math.h's float helpers, on IR.
IRVal exp2i(IRVal n);
IRVal round_int(IRVal x);
IRVal negate_if_odd(IRVal y, IRVal k);
kiln::math::MantissaExponent<IRVal> centred_mantissa_exponent(IRVal x);

// The runtime's float32 sin and cos (libm's, by another name: see reduced_or_libm in
// llvm_math.cpp), which compiled kernels call beyond kiln::math::kSinCosReducedLimit.
inline constexpr const char* kSinfSymbol = "kiln_llvm_sinf";
inline constexpr const char* kCosfSymbol = "kiln_llvm_cosf";

// Emits kir primitive `op` on x, whose lane type is that of dtype t (Float32 or Float64), as the
// eager kernel computes it. `module` receives the libm declarations it calls. sin and cos add
// blocks: the builder is left at the end of a new one.
llvm::Value* emit_float_unary(llvm::IRBuilder<>& b, llvm::Module& module, kir::UnaryOp op, DType t,
                              llvm::Value* x);
// f32 sin or cos (op) of x by the polynomial alone, and whether x lies beyond its range (or is
// NaN), where kiln::math::sin and cos give libm's value instead: for loops that check the whole
// range once (Note [Reduced-range LLVM loops]).
struct ReducedRangeValue {
  llvm::Value* value;
  llvm::Value* beyond;  // i1
};
ReducedRangeValue emit_sin_cos_reduced(llvm::IRBuilder<>& b, kir::UnaryOp op, llvm::Value* x);
// x ** y for floats, as kiln::math::pow: the pow_poly template for float32 (Note [pow in
// double-float]), libm's pow for float64.
llvm::Value* emit_float_pow(llvm::IRBuilder<>& b, llvm::Module& module, DType t, llvm::Value* x,
                            llvm::Value* y);

}  // namespace kiln::codegen::llvm_backend
