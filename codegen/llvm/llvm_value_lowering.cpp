#include "kiln/codegen/llvm/llvm_value_lowering.h"

#include <cmath>

#include "kiln/base/error.h"
#include "kiln/codegen/llvm/llvm_emitter.h"
#include "kiln/codegen/llvm/llvm_math.h"

namespace kiln::codegen::llvm_backend {

using kir::BinaryOp;
using kir::UnaryOp;

namespace {

// float -> bfloat16 bits as base/half.h's float_to_bfloat16_bits: round to nearest even,
// NaN kept quiet.
llvm::Value* bfloat16_bits(llvm::IRBuilder<>& b, llvm::Value* f) {
  llvm::Value* x = b.CreateBitCast(f, b.getInt32Ty());
  llvm::Value* is_nan =
      b.CreateICmpUGT(b.CreateAnd(x, b.getInt32(0x7fffffff)), b.getInt32(0x7f800000));
  llvm::Value* nan_bits = b.CreateOr(b.CreateLShr(x, 16), b.getInt32(0x40));
  llvm::Value* bias =
      b.CreateAdd(b.getInt32(0x7fff), b.CreateAnd(b.CreateLShr(x, 16), b.getInt32(1)));
  llvm::Value* rounded = b.CreateLShr(b.CreateAdd(x, bias), 16);
  return b.CreateTrunc(b.CreateSelect(is_nan, nan_bits, rounded), b.getInt16Ty());
}
// A float rounded to a 16-bit dtype, back as float (the lane form of a 16-bit value).
llvm::Value* round16(llvm::IRBuilder<>& b, llvm::Value* f, DType t) {
  if (t == kFloat16) return b.CreateFPExt(b.CreateFPTrunc(f, b.getHalfTy()), b.getFloatTy());
  llvm::Value* bits = b.CreateZExt(bfloat16_bits(b, f), b.getInt32Ty());
  return b.CreateBitCast(b.CreateShl(bits, 16), b.getFloatTy());
}

}  // namespace

llvm::Type* lane_type(llvm::IRBuilder<>& b, DType t) {
  switch (t) {
    case DType::Bool:
      return b.getInt1Ty();
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
      return b.getInt32Ty();  // small integers computed in i32 (Note [Kernel IR dtypes])
    case DType::Int64:
      return b.getInt64Ty();
    case DType::Float64:
      return b.getDoubleTy();
    default:
      return b.getFloatTy();  // f32, and 16-bit floats computed in f32
  }
}
llvm::Type* storage_type(llvm::IRBuilder<>& b, DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return b.getInt8Ty();
    case DType::Float16:
      return b.getHalfTy();
    case DType::BFloat16:
    case DType::Int16:
      return b.getInt16Ty();
    default:
      return lane_type(b, t);
  }
}

llvm::Value* from_storage(llvm::IRBuilder<>& b, llvm::Value* x, DType t) {
  switch (t) {
    case DType::Bool:
      return b.CreateICmpNE(x, b.getInt8(0));
    case DType::UInt8:
      return b.CreateZExt(x, b.getInt32Ty());
    case DType::Int8:
    case DType::Int16:
      return b.CreateSExt(x, b.getInt32Ty());
    case DType::Float16:
      return b.CreateFPExt(x, b.getFloatTy());
    case DType::BFloat16:
      return b.CreateBitCast(b.CreateShl(b.CreateZExt(x, b.getInt32Ty()), 16), b.getFloatTy());
    default:
      return x;
  }
}
llvm::Value* to_storage(llvm::IRBuilder<>& b, llvm::Value* x, DType t) {
  switch (t) {
    case DType::Bool:
      return b.CreateZExt(x, b.getInt8Ty());
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
      return b.CreateTrunc(x, storage_type(b, t));  // the i32 lane already holds a wrapped value
    case DType::Float16:
      return b.CreateFPTrunc(x, b.getHalfTy());
    case DType::BFloat16:
      return bfloat16_bits(b, x);
    default:
      return x;
  }
}

llvm::Value* convert(llvm::IRBuilder<>& b, llvm::Value* x, DType from, DType to) {
  if (from == to) return x;
  llvm::Type* to_ty = lane_type(b, to);
  bool from_float = is_floating(from);
  if (to == kFloat16 || to == kBFloat16) {
    // static_cast<Half>(x) goes through float.
    return round16(b, convert(b, x, from, kFloat32), to);
  }
  if (is_small_integral(to)) {
    // Through i32, then wrapped to the narrow type and held widened again, as the
    // interpreter's cast.
    llvm::Value* wide = convert(b, x, from, kInt32);
    return from_storage(b, to_storage(b, wide, to), to);
  }
  if (to == kBool) {
    return from_float ? b.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0))
                      : b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  }
  if (is_floating(to)) {
    if (from_float) {
      if (x->getType() == to_ty) return x;
      return to_ty->getPrimitiveSizeInBits() > x->getType()->getPrimitiveSizeInBits()
                 ? b.CreateFPExt(x, to_ty)
                 : b.CreateFPTrunc(x, to_ty);
    }
    return from == kBool ? b.CreateUIToFP(x, to_ty) : b.CreateSIToFP(x, to_ty);
  }
  // to an integer
  if (from == kBool) return b.CreateZExt(x, to_ty);
  if (!from_float) return b.CreateSExtOrTrunc(x, to_ty);
  unsigned bits = to_ty->getIntegerBitWidth();
  double lim = std::ldexp(1.0, static_cast<int>(bits) - 1);
  llvm::Value* lo = llvm::ConstantFP::get(x->getType(), -lim);
  llvm::Value* hi = llvm::ConstantFP::get(x->getType(), lim);
  llvm::Value* in_range = b.CreateAnd(b.CreateFCmpOGE(x, lo), b.CreateFCmpOLT(x, hi));
  // fptosi of an out-of-range value is poison, which the select does not pick.
  llvm::Value* fx = b.CreateFPToSI(x, to_ty);
  return b.CreateSelect(
      in_range, fx, llvm::ConstantInt::get(b.getContext(), llvm::APInt::getSignedMinValue(bits)));
}

llvm::Value* emit_unary(llvm::IRBuilder<>& b, llvm::Module& module, const std::string& kernel,
                        UnaryOp op, DType t, llvm::Value* x) {
  if (t == kBool) return b.CreateNot(x);  // the verifier allows only `not` on b8
  if (is_floating(t)) return emit_float_unary(b, module, op, t, x);
  llvm::Value* zero = llvm::ConstantInt::get(x->getType(), 0);
  llvm::Value* neg = b.CreateSub(zero, x);  // wraps, as the interpreter's wrap_sub
  if (op == UnaryOp::Neg) return neg;
  if (op == UnaryOp::Abs) return b.CreateSelect(b.CreateICmpSLT(x, zero), neg, x);
  KILN_ERROR("llvm backend: kernel {}: unary '{}' on {} has no lowering", kernel,
             kir::unary_op_name(op), dtype_name(t));
}

llvm::Value* emit_bool_binary(llvm::IRBuilder<>& b, const std::string& kernel, BinaryOp op,
                              llvm::Value* x, llvm::Value* y) {
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Max:
    case BinaryOp::Or:
      return b.CreateOr(x, y);
    case BinaryOp::Mul:
    case BinaryOp::Min:
    case BinaryOp::And:
      return b.CreateAnd(x, y);
    case BinaryOp::Sub:
    case BinaryOp::Ne:
      return b.CreateXor(x, y);
    case BinaryOp::Eq:
      return b.CreateICmpEQ(x, y);
    case BinaryOp::Lt:
      return b.CreateICmpULT(x, y);
    case BinaryOp::Le:
      return b.CreateICmpULE(x, y);
    default:
      break;
  }
  KILN_ERROR("llvm backend: kernel {}: binary '{}' on b8 has no lowering", kernel,
             kir::binary_op_name(op));
}

llvm::Value* emit_float_binary(llvm::IRBuilder<>& b, llvm::Module& module,
                               const std::string& kernel, BinaryOp op, DType t, llvm::Value* x,
                               llvm::Value* y) {
  switch (op) {
    case BinaryOp::Add:
      return b.CreateFAdd(x, y);
    case BinaryOp::Sub:
      return b.CreateFSub(x, y);
    case BinaryOp::Mul:
      return b.CreateFMul(x, y);
    case BinaryOp::Div:
      return b.CreateFDiv(x, y);
    case BinaryOp::Rem:
      return b.CreateFRem(x, y);  // fmod
    case BinaryOp::Pow:
      return emit_float_pow(b, module, t, x, y);
    // x != x ? x : max_nan(x, y), as the interpreter (torch.maximum's NaN propagation).
    case BinaryOp::Max:
    case BinaryOp::Min: {
      llvm::Value* y_wins = op == BinaryOp::Max ? b.CreateFCmpOGT(y, x) : b.CreateFCmpOLT(y, x);
      llvm::Value* m = b.CreateSelect(b.CreateOr(b.CreateFCmpUNO(y, y), y_wins), y, x);
      return b.CreateSelect(b.CreateFCmpUNO(x, x), x, m);
    }
    case BinaryOp::Eq:
      return b.CreateFCmpOEQ(x, y);
    case BinaryOp::Ne:
      return b.CreateFCmpUNE(x, y);
    case BinaryOp::Lt:
      return b.CreateFCmpOLT(x, y);
    case BinaryOp::Le:
      return b.CreateFCmpOLE(x, y);
    case BinaryOp::And:
    case BinaryOp::Or:
      break;
  }
  KILN_ERROR("llvm backend: kernel {}: binary '{}' on {} has no lowering", kernel,
             kir::binary_op_name(op), dtype_name(t));
}

llvm::Value* emit_int_pow(llvm::IRBuilder<>& b, llvm::Module& module, DType t, llvm::Value* x,
                          llvm::Value* y) {
  llvm::Type* ty = x->getType();
  const char* name = t == kInt32 ? kIpow32Symbol : kIpow64Symbol;
  llvm::FunctionCallee f =
      module.getOrInsertFunction(name, llvm::FunctionType::get(ty, {ty, ty}, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->addFnAttr(llvm::Attribute::WillReturn);
  }
  return b.CreateCall(f, {x, y});
}

}  // namespace kiln::codegen::llvm_backend
