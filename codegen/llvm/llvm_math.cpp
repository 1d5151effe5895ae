#include "kiln/codegen/llvm/llvm_math.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "kiln/base/error.h"
#include "kiln/base/pointwise_math.h"

namespace kiln::codegen::llvm_backend {
namespace {

thread_local llvm::IRBuilder<>* tl_builder = nullptr;
thread_local llvm::Type* tl_float_type = nullptr;

llvm::IRBuilder<>& B() {
  return IRScope::builder();
}

// A libm function that reads no memory (Kiln never reads errno: -fno-math-errno), so that loops
// calling it can be optimized around it.
llvm::FunctionCallee libm(llvm::Module& m, const char* name, llvm::Type* t, int arity) {
  std::vector<llvm::Type*> params(static_cast<size_t>(arity), t);
  auto* fty = llvm::FunctionType::get(t, params, false);
  llvm::FunctionCallee callee = m.getOrInsertFunction(name, fty);
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->addFnAttr(llvm::Attribute::WillReturn);
  }
  return callee;
}

llvm::Value* call_libm(llvm::IRBuilder<>& b, llvm::Module& m, const char* f32_name,
                       const char* f64_name, DType t, llvm::Value* x) {
  const char* name = t == kFloat64 ? f64_name : f32_name;
  llvm::CallInst* c = b.CreateCall(libm(m, name, x->getType(), 1), {x});
  c->setDoesNotAccessMemory();
  return c;
}

}  // namespace

IRScope::IRScope(llvm::IRBuilder<>& b, llvm::Type* float_type)
    : prev_builder_(tl_builder), prev_type_(tl_float_type) {
  tl_builder = &b;
  tl_float_type = float_type;
}
IRScope::~IRScope() {
  tl_builder = prev_builder_;
  tl_float_type = prev_type_;
}
llvm::IRBuilder<>& IRScope::builder() {
  KILN_CHECK(tl_builder != nullptr, "llvm backend: IR math used outside an IRScope");
  return *tl_builder;
}
llvm::Type* IRScope::float_type() {
  KILN_CHECK(tl_float_type != nullptr, "llvm backend: IR math used outside an IRScope");
  return tl_float_type;
}

IRVal::IRVal(double c) : v_(llvm::ConstantFP::get(IRScope::float_type(), c)) {}
IRVal::IRVal(int c) : v_(llvm::ConstantFP::get(IRScope::float_type(), static_cast<double>(c))) {}

IRVal operator+(IRVal a, IRVal b) {
  return B().CreateFAdd(a.get(), b.get());
}
IRVal operator-(IRVal a, IRVal b) {
  return B().CreateFSub(a.get(), b.get());
}
IRVal operator*(IRVal a, IRVal b) {
  return B().CreateFMul(a.get(), b.get());
}
IRVal operator/(IRVal a, IRVal b) {
  return B().CreateFDiv(a.get(), b.get());
}
IRVal operator-(IRVal a) {
  return B().CreateFNeg(a.get());
}
IRVal operator<(IRVal a, IRVal b) {
  return B().CreateFCmpOLT(a.get(), b.get());
}
IRVal operator>(IRVal a, IRVal b) {
  return B().CreateFCmpOGT(a.get(), b.get());
}
IRVal operator<=(IRVal a, IRVal b) {
  return B().CreateFCmpOLE(a.get(), b.get());
}
IRVal operator!=(IRVal a, IRVal b) {
  return B().CreateFCmpUNE(a.get(), b.get());
}
IRVal operator==(IRVal a, IRVal b) {
  return B().CreateFCmpOEQ(a.get(), b.get());
}
IRVal select(IRVal c, IRVal a, IRVal b) {
  return B().CreateSelect(c.get(), a.get(), b.get());
}
IRVal abs(IRVal x) {
  return B().CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x.get());
}
IRVal copysign(IRVal magnitude, IRVal sign) {
  return B().CreateBinaryIntrinsic(llvm::Intrinsic::copysign, magnitude.get(), sign.get());
}
IRVal min_nonnegative(IRVal a, IRVal c) {
  llvm::IRBuilder<>& b = B();
  llvm::Type* f = a.get()->getType();
  llvm::Type* i = b.getIntNTy(f->getScalarSizeInBits());
  llvm::Value* m = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b.CreateBitCast(a.get(), i),
                                           b.CreateBitCast(c.get(), i));
  return b.CreateBitCast(m, f);
}
IRVal fma(IRVal a, IRVal b, IRVal c) {
  return B().CreateIntrinsic(llvm::Intrinsic::fma, {a.get()->getType()},
                             {a.get(), b.get(), c.get()});
}
// As kiln::math::exp2i: n + (1.5 * 2^23 + 127) holds n + 127 in its low mantissa bits, which the
// shift moves into the exponent field.
IRVal exp2i(IRVal n) {
  llvm::IRBuilder<>& b = B();
  llvm::Value* biased =
      b.CreateFAdd(n.get(), llvm::ConstantFP::get(n.get()->getType(), 12583039.0));
  llvm::Value* bits = b.CreateBitCast(biased, b.getInt32Ty());
  return b.CreateBitCast(b.CreateShl(bits, 23), n.get()->getType());
}
// As kiln::math::round_int. Without reassociation flags LLVM keeps (x + c) - c as written.
IRVal round_int(IRVal x) {
  llvm::Value* c = llvm::ConstantFP::get(x.get()->getType(), 12582912.0);
  return B().CreateFSub(B().CreateFAdd(x.get(), c), c);
}

// As kiln::math::negate_if_odd: the low bit of k + 1.5 * 2^23, shifted to the sign, XORed in.
IRVal negate_if_odd(IRVal y, IRVal k) {
  llvm::IRBuilder<>& b = B();
  llvm::Type* f = y.get()->getType();
  llvm::Value* biased =
      b.CreateFAdd(k.get(), llvm::ConstantFP::get(k.get()->getType(), 12582912.0));
  llvm::Value* sign = b.CreateShl(b.CreateBitCast(biased, b.getInt32Ty()), 31);
  return b.CreateBitCast(b.CreateXor(b.CreateBitCast(y.get(), b.getInt32Ty()), sign), f);
}

// As kiln::math::centred_mantissa_exponent(float).
kiln::math::MantissaExponent<IRVal> centred_mantissa_exponent(IRVal x) {
  llvm::IRBuilder<>& b = B();
  llvm::Type* f = x.get()->getType();
  llvm::Value* bits = b.CreateBitCast(x.get(), b.getInt32Ty());
  llvm::Value* e = b.CreateAShr(b.CreateSub(bits, b.getInt32(0x3f3504f3)), 23);
  llvm::Value* m = b.CreateSub(bits, b.CreateShl(e, 23));
  return {IRVal(b.CreateBitCast(m, f)), IRVal(b.CreateSIToFP(e, f))};
}

// As kiln::math::sin(float) and cos(float): the polynomial (emit_sin_cos_reduced, in the current
// block) for |x| <= kSinCosReducedLimit, and a branch to libm's value for the other inputs (NaN
// included) through the runtime's `symbol` (kSinfSymbol, kCosfSymbol) rather than sinf itself:
// LLVM knows sinf as llvm.sin, which it may speculate, so the vectorizer turned the branch into
// a select and called sinf for every lane. An unknown function it calls only for the lanes that
// take the branch (and the branch keeps such a loop scalar: Note [Reduced-range LLVM loops]).
// Leaves the builder in a new block.
namespace {
llvm::Value* reduced_or_libm(llvm::IRBuilder<>& b, llvm::Module& m, kir::UnaryOp op,
                             llvm::Value* x) {
  auto [fast, beyond] = emit_sin_cos_reduced(b, op, x);
  const char* symbol = op == kir::UnaryOp::Sin ? kSinfSymbol : kCosfSymbol;
  llvm::BasicBlock* here = b.GetInsertBlock();
  llvm::Function* fn = here->getParent();
  llvm::BasicBlock* slow = llvm::BasicBlock::Create(b.getContext(), "libm", fn);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(b.getContext(), "reduced", fn);
  b.CreateCondBr(beyond, slow, join);
  b.SetInsertPoint(slow);
  llvm::Value* exact = call_libm(b, m, symbol, symbol, kFloat32, x);
  b.CreateBr(join);
  b.SetInsertPoint(join);
  llvm::PHINode* result = b.CreatePHI(x->getType(), 2);
  result->addIncoming(fast, here);
  result->addIncoming(exact, slow);
  return result;
}
}  // namespace

ReducedRangeValue emit_sin_cos_reduced(llvm::IRBuilder<>& b, kir::UnaryOp op, llvm::Value* x) {
  IRScope scope(b, x->getType());
  // The same contraction as emit_float_unary's (Note [LLVM agrees with the interpreter]).
  llvm::IRBuilderBase::FastMathFlagGuard guard(b);
  llvm::FastMathFlags fmf;
  fmf.setAllowContract(true);
  b.setFastMathFlags(fmf);
  IRVal v(x);
  llvm::Value* value =
      op == kir::UnaryOp::Sin ? kiln::math::sin_reduced(v).get() : kiln::math::cos_reduced(v).get();
  llvm::Value* beyond =
      b.CreateFCmpUGT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                      llvm::ConstantFP::get(x->getType(), kiln::math::kSinCosReducedLimit));
  return {value, beyond};
}

llvm::Value* emit_float_unary(llvm::IRBuilder<>& b, llvm::Module& m, kir::UnaryOp op, DType t,
                              llvm::Value* x) {
  using kir::UnaryOp;
  bool f32 = t != kFloat64;
  IRScope scope(b, x->getType());
  // The eager kernels (and the interpreter) compile these templates with -ffp-contract=fast,
  // which fuses each multiply feeding an add into an FMA; `contract` lets LLVM fuse the same
  // pairs, for the same roundings (Note [LLVM agrees with the interpreter]).
  llvm::IRBuilderBase::FastMathFlagGuard guard(b);
  llvm::FastMathFlags fmf;
  fmf.setAllowContract(true);
  b.setFastMathFlags(fmf);
  switch (op) {
    case UnaryOp::Neg:
      return b.CreateFNeg(x);
    case UnaryOp::Abs:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    case UnaryOp::Sqrt:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case UnaryOp::Exp:
      if (f32) return kiln::math::exp_poly(IRVal(x)).get();
      return call_libm(b, m, "expf", "exp", t, x);
    case UnaryOp::Tanh:
      if (f32) return kiln::math::tanh_poly(IRVal(x)).get();
      return call_libm(b, m, "tanhf", "tanh", t, x);
    case UnaryOp::Erf:
      if (f32) return kiln::math::erf_poly(IRVal(x)).get();
      return call_libm(b, m, "erff", "erf", t, x);
    case UnaryOp::Exp2:
      if (f32) return kiln::math::exp2_poly(IRVal(x)).get();
      return call_libm(b, m, "exp2f", "exp2", t, x);
    case UnaryOp::GeluExact: {
      if (f32) return kiln::math::gelu_exact_poly(IRVal(x)).get();
      // kiln::math::gelu_exact(double): x < -40 ? -0 : x * (erfc(x * -1/sqrt 2) * 0.5).
      auto c = [&](double v) { return llvm::ConstantFP::get(x->getType(), v); };
      llvm::Value* erfc =
          call_libm(b, m, "erfcf", "erfc", t, b.CreateFMul(x, c(-0.70710678118654752440)));
      llvm::Value* product = b.CreateFMul(x, b.CreateFMul(erfc, c(0.5)));
      return b.CreateSelect(b.CreateFCmpOLT(x, c(-40.0)), c(-0.0), product);
    }
    case UnaryOp::Log:
      if (f32) return kiln::math::log_poly(IRVal(x)).get();
      return call_libm(b, m, "logf", "log", t, x);
    case UnaryOp::Log1p:
      if (f32) return kiln::math::log1p_poly(IRVal(x)).get();
      return call_libm(b, m, "log1pf", "log1p", t, x);
    case UnaryOp::Expm1:
      if (f32) return kiln::math::expm1_poly(IRVal(x)).get();
      return call_libm(b, m, "expm1f", "expm1", t, x);
    case UnaryOp::Sin:
      if (f32) return reduced_or_libm(b, m, op, x);
      return call_libm(b, m, "sinf", "sin", t, x);
    case UnaryOp::Cos:
      if (f32) return reduced_or_libm(b, m, op, x);
      return call_libm(b, m, "cosf", "cos", t, x);
    case UnaryOp::Not:
      break;
  }
  KILN_ERROR("llvm backend: no float lowering for unary op '{}'", kir::unary_op_name(op));
}

llvm::Value* emit_float_pow(llvm::IRBuilder<>& b, llvm::Module& m, DType t, llvm::Value* x,
                            llvm::Value* y) {
  if (t != kFloat64) {
    IRScope scope(b, x->getType());
    // As emit_float_unary: `contract` where the eager build fuses.
    llvm::IRBuilderBase::FastMathFlagGuard guard(b);
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    b.setFastMathFlags(fmf);
    return kiln::math::pow_poly(IRVal(x), IRVal(y)).get();
  }
  llvm::CallInst* c = b.CreateCall(libm(m, "pow", x->getType(), 2), {x, y});
  c->setDoesNotAccessMemory();
  return c;
}

}  // namespace kiln::codegen::llvm_backend
