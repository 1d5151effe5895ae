// Kernel-IR values as LLVM IR: the lane and storage types of each dtype, conversions, and the
// unary and binary operations, each computing what lanes:: computes for the interpreter (Note
// [LLVM agrees with the interpreter]). They need only the builder (and the module, for the calls
// they declare); llvm_emitter.cpp drives them with the kernel's statements and variables.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <string>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::llvm_backend {

// The type a value of dtype t has in registers (the interpreter's lane type).
llvm::Type* lane_type(llvm::IRBuilder<>& b, DType t);
// The type a buffer of dtype t stores.
llvm::Type* storage_type(llvm::IRBuilder<>& b, DType t);
// A loaded element as its lane value, and back (for the 16-bit floats, x is a float already
// rounded to t).
llvm::Value* from_storage(llvm::IRBuilder<>& b, llvm::Value* x, DType t);
llvm::Value* to_storage(llvm::IRBuilder<>& b, llvm::Value* x, DType t);
// x of dtype `from` converted as lanes::cast converts (a static_cast, with out-of-range and NaN
// float -> int giving the integer minimum, as x86's cvtt* does).
llvm::Value* convert(llvm::IRBuilder<>& b, llvm::Value* x, DType from, DType to);

// The operations; `kernel` names the kernel in the error thrown for one with no lowering.
llvm::Value* emit_unary(llvm::IRBuilder<>& b, llvm::Module& module, const std::string& kernel,
                        kir::UnaryOp op, DType t, llvm::Value* x);
llvm::Value* emit_bool_binary(llvm::IRBuilder<>& b, const std::string& kernel, kir::BinaryOp op,
                              llvm::Value* x, llvm::Value* y);
llvm::Value* emit_float_binary(llvm::IRBuilder<>& b, llvm::Module& module,
                               const std::string& kernel, kir::BinaryOp op, DType t, llvm::Value* x,
                               llvm::Value* y);
// Integer x ** y: a call to the runtime's kiln::math::pow (Note [LLVM kernel ABI]).
llvm::Value* emit_int_pow(llvm::IRBuilder<>& b, llvm::Module& module, DType t, llvm::Value* x,
                          llvm::Value* y);

}  // namespace kiln::codegen::llvm_backend
