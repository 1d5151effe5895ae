// Scalar pieces of the CUDA C emitter (cuda_emitter.h): C types and literals of the kernel-IR
// dtypes, the storage forms of Note [CUDA kernel ABI], conversions, and each kernel-IR operator
// as C. Operands are names or literals, so no result needs parentheses around its operands.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::cuda {

std::string_view value_type(DType t);    // the C type of a value (16-bit floats: float)
std::string_view storage_type(DType t);  // the element type of a buffer
std::string_view dtype_suffix(DType t);  // "f32", ... as the preamble's helpers are named
std::string int_literal(int64_t v, DType t);
std::string identity_literal(kir::ReduceOp op, DType t);
std::string_view combine_functor(kir::ReduceOp op, DType t);  // the preamble's KilnSum(), ...

std::string from_storage(const std::string& x, DType t);
std::string to_storage(const std::string& x, DType t);
// As the LLVM backend's convert (and so lanes::cast): a static_cast, except float -> int of NaN
// or out-of-range values gives the integer minimum, and 16-bit floats round through float.
std::string convert(const std::string& x, DType from, DType to);

// `a op b` on integers wrapping as the interpreter's do (computed unsigned).
std::string wrap_int(std::string_view op, const std::string& a, const std::string& b, DType t);
// An accumulator's combine of a and b.
std::string combine_code(kir::ReduceOp op, DType t, const std::string& a, const std::string& b);
// `data`: the operands derive from loaded values (integer arithmetic then wraps); index
// arithmetic, which the verifier bounds, stays plain. Errors name `kernel`.
std::string unary_code(std::string_view kernel, kir::UnaryOp op, DType t, const std::string& x,
                       bool data);
std::string binary_code(std::string_view kernel, kir::BinaryOp op, DType t, const std::string& a,
                        const std::string& b, bool rhs_positive_const, bool data);

}  // namespace kiln::codegen::cuda
