// The kernel-IR Builder (constant folding, typing errors), kir::Val and MathScope, and the
// printer's text, each against values or text written out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "kiln/base/pointwise_math.h"
#include "kir_test_util.h"
#include "test_util.h"

namespace {

using kiln_test::throws_error_containing;
using namespace kir_test;
using kiln::DType;
using kir::BinaryOp;
using kir::ExprId;
using kir::ExprKind;
using kir::UnaryOp;

struct Fixture {
  kir::Kernel k;
  kir::Builder b{k};
  kir::VarId i = b.var("i", kiln::kInt64);
  kir::ExprId iv = b.var_ref(i);
  kir::ExprId c(int64_t v) { return b.iconstant(v); }
  bool is_const(ExprId e, int64_t v) const {
    const kir::Expr& x = b.expr(e);
    return x.kind == ExprKind::Const && x.ivalue == v;
  }
};

TEST(KernelIRBuilder, FoldsIdentitiesOfIndexArithmetic) {
  Fixture f;
  EXPECT_EQ(f.b.binary(BinaryOp::Mul, f.iv, f.c(1)), f.iv);
  EXPECT_EQ(f.b.binary(BinaryOp::Mul, f.c(1), f.iv), f.iv);
  EXPECT_EQ(f.b.binary(BinaryOp::Add, f.iv, f.c(0)), f.iv);
  EXPECT_EQ(f.b.binary(BinaryOp::Add, f.c(0), f.iv), f.iv);
  EXPECT_EQ(f.b.binary(BinaryOp::Sub, f.iv, f.c(0)), f.iv);
  EXPECT_EQ(f.b.binary(BinaryOp::Div, f.iv, f.c(1)), f.iv);
  EXPECT_TRUE(f.is_const(f.b.binary(BinaryOp::Mul, f.iv, f.c(0)), 0));
  EXPECT_TRUE(f.is_const(f.b.binary(BinaryOp::Mul, f.c(0), f.iv), 0));
  EXPECT_TRUE(f.is_const(f.b.binary(BinaryOp::Rem, f.iv, f.c(1)), 0));
}

TEST(KernelIRBuilder, FoldsConstantOperations) {
  Fixture f;
  EXPECT_TRUE(f.is_const(f.b.binary(BinaryOp::Mul, f.c(6), f.c(7)), 42));
  EXPECT_TRUE(f.is_const(f.b.binary(BinaryOp::Sub, f.c(6), f.c(7)), -1));
  EXPECT_TRUE(f.is_const(f.b.binary(BinaryOp::Div, f.c(-7), f.c(2)), -3));  // truncates
  EXPECT_TRUE(f.is_const(f.b.binary(BinaryOp::Rem, f.c(-7), f.c(2)), -1));
  EXPECT_TRUE(f.is_const(f.b.binary(BinaryOp::Max, f.c(-7), f.c(2)), 2));
  EXPECT_TRUE(f.is_const(f.b.binary(BinaryOp::Pow, f.c(3), f.c(4)), 81));
  ExprId lt = f.b.binary(BinaryOp::Lt, f.c(1), f.c(2));
  EXPECT_EQ(f.b.dtype(lt), kiln::kBool);
  EXPECT_TRUE(f.is_const(lt, 1));
  // i32 constants wrap as the interpreter's i32 arithmetic does.
  ExprId big = f.b.iconstant(INT32_MAX, kiln::kInt32);
  EXPECT_TRUE(
      f.is_const(f.b.binary(BinaryOp::Add, big, f.b.iconstant(1, kiln::kInt32)), INT32_MIN));
  // A zero divisor is left for the run to report.
  ExprId div0 = f.b.binary(BinaryOp::Div, f.c(1), f.c(0));
  EXPECT_EQ(f.b.expr(div0).kind, ExprKind::Binary);
}

TEST(KernelIRBuilder, ReassociatesConstantsAndPutsThemRight) {
  Fixture f;
  ExprId e = f.b.binary(BinaryOp::Add, f.b.binary(BinaryOp::Add, f.iv, f.c(3)), f.c(4));
  EXPECT_EQ(kir::expr_str(f.k, e), "%i + 7");
  ExprId m = f.b.binary(BinaryOp::Mul, f.c(64), f.b.binary(BinaryOp::Mul, f.iv, f.c(2)));
  EXPECT_EQ(kir::expr_str(f.k, m), "%i * 128");
}

TEST(KernelIRBuilder, LeavesFloatingArithmeticAlone) {
  // x * 1.0 and x + 0.0 are not identities for every float (x + 0.0 turns -0.0 into 0.0).
  Fixture f;
  kir::BufferId in = f.b.buffer("in", kiln::kFloat32, false, 4);
  ExprId x = f.b.load(in, f.iv);
  ExprId add = f.b.binary(BinaryOp::Add, x, f.b.constant(0.0, kiln::kFloat32));
  EXPECT_NE(add, x);
  EXPECT_EQ(f.b.expr(add).kind, ExprKind::Binary);
}

TEST(KernelIRBuilder, ConstantsAreConvertedAsStaticCast) {
  Fixture f;
  EXPECT_EQ(f.b.expr(f.b.constant(0.1, kiln::kFloat32)).value, static_cast<double>(0.1f));
  EXPECT_EQ(f.b.expr(f.b.constant(0.1, kiln::kFloat64)).value, 0.1);
  EXPECT_EQ(f.b.expr(f.b.constant(-2.75, kiln::kInt64)).ivalue, -2);
  EXPECT_EQ(f.b.expr(f.b.iconstant(int64_t{1} << 40 | 5, kiln::kInt32)).ivalue, 5);
  EXPECT_EQ(f.b.expr(f.b.iconstant(7, kiln::kBool)).ivalue, 1);
  EXPECT_TRUE(throws_error_containing([&] { f.b.constant(1e30, kiln::kInt32); },
                                      {"constant 1e+30 does not fit i32"}));
  EXPECT_TRUE(throws_error_containing(
      [&] { f.b.constant(std::numeric_limits<double>::quiet_NaN(), kiln::kInt64); },
      {"does not fit i64"}));
}

TEST(KernelIRBuilder, RejectsIllTypedExpressions) {
  Fixture f;
  f.k.name = "bad";
  kir::BufferId in = f.b.buffer("in", kiln::kFloat32, false, 4);
  ExprId x = f.b.load(in, f.iv);
  ExprId d = f.b.constant(1.0, kiln::kFloat64);
  EXPECT_TRUE(throws_error_containing([&] { f.b.binary(BinaryOp::Add, x, d); },
                                      {"kernel IR builder (kernel bad)", "add of f32 and f64"}));
  EXPECT_TRUE(throws_error_containing([&] { f.b.unary(UnaryOp::Exp, f.iv); },
                                      {"exp takes an f32 or f64 operand, got i64"}));
  EXPECT_TRUE(throws_error_containing([&] { f.b.select(x, x, x); },
                                      {"select condition is f32; it must be b8"}));
  EXPECT_TRUE(throws_error_containing([&] { f.b.load(7, f.iv); }, {"buffer id 7 is out of range"}));
  EXPECT_TRUE(
      throws_error_containing([&] { f.b.load(in, x); }, {"index of dtype f32; indices are i64"}));
  EXPECT_TRUE(throws_error_containing([&] { f.b.constant(1.0, kiln::kFloat16); },
                                      {"constant is typed f16", "exist only as loads and casts"}));
  EXPECT_TRUE(throws_error_containing([&] { f.b.iconstant(1, kiln::kUInt8); },
                                      {"constant is typed u8", "exist only as loads and casts"}));
  EXPECT_TRUE(throws_error_containing([&] { f.b.binary(BinaryOp::Add, x, 99); },
                                      {"not an earlier expression"}));
}

TEST(KernelIRBuilder, NamesAreMadeUnique) {
  kir::Kernel k;
  kir::Builder b(k);
  b.var("t", kiln::kFloat32);
  b.var("t", kiln::kFloat32);
  b.var("t1", kiln::kFloat32);
  b.var("", kiln::kFloat32);
  ASSERT_EQ(k.vars.size(), 4u);
  EXPECT_EQ(k.vars[0].name, "t");
  EXPECT_EQ(k.vars[1].name, "t1");
  EXPECT_EQ(k.vars[2].name, "t11");
  EXPECT_EQ(k.vars[3].name, "v");
  b.buffer("in", kiln::kFloat32, false, 1);
  b.buffer("in", kiln::kFloat32, false, 1);
  EXPECT_EQ(k.buffers[1].name, "in1");
}

TEST(KernelIRBuilder, OpNames) {
  EXPECT_EQ(kir::unary_op_name(UnaryOp::Log1p), "log1p");
  EXPECT_EQ(kir::unary_op_name(UnaryOp::Not), "not");
  EXPECT_EQ(kir::binary_op_name(BinaryOp::Rem), "rem");
  EXPECT_EQ(kir::binary_op_name(BinaryOp::Or), "or");
  EXPECT_EQ(kir::binary_op_name(static_cast<BinaryOp>(99)), "?");
  EXPECT_EQ(kir::reduce_op_name(kir::ReduceOp::Prod), "prod");
  EXPECT_EQ(kir::loop_kind_name(kir::LoopKind::Vector), "vector");
  EXPECT_TRUE(kir::is_comparison(BinaryOp::Le));
  EXPECT_FALSE(kir::is_comparison(BinaryOp::And));
}

// ---- Val and MathScope ----

TEST(KernelIRVal, ConstantsTakeTheScopesComputeDtype) {
  Fixture f;
  {
    kir::MathScope s(f.b, kiln::kFloat64);
    kir::Val half(0.5), one(1), two(int64_t{2}), third(1.0f / 3.0f);
    EXPECT_EQ(half.dtype(), kiln::kFloat64);
    EXPECT_EQ(one.dtype(), kiln::kFloat64);
    EXPECT_EQ(f.b.expr(two.id()).value, 2.0);
    EXPECT_EQ(f.b.expr(third.id()).value, static_cast<double>(1.0f / 3.0f));
    {
      kir::MathScope inner(f.b, kiln::kInt64);
      kir::Val k(3);
      EXPECT_EQ(k.dtype(), kiln::kInt64);
      EXPECT_EQ(f.b.expr(k.id()).ivalue, 3);
    }
    EXPECT_EQ(kir::Val(1).dtype(), kiln::kFloat64);  // restored
    kir::Val t(true);
    EXPECT_EQ(t.dtype(), kiln::kBool);
    EXPECT_EQ(f.b.expr(t.id()).ivalue, 1);
    // An ExprId is an expression, not a constant (Note [ExprId is not int]).
    kir::Val e(f.iv);
    EXPECT_EQ(e.id(), f.iv);
    EXPECT_EQ(e.dtype(), kiln::kInt64);
  }
  EXPECT_TRUE(throws_error_containing([] { kir::Val v(1.0); }, {"outside a kir::MathScope"}));
}

TEST(KernelIRVal, MismatchedOperandDtypesThrow) {
  Fixture f;
  f.k.name = "mixed";
  kir::BufferId in = f.b.buffer("in", kiln::kFloat32, false, 4);
  kir::MathScope s(f.b, kiln::kFloat64);
  kir::Val x = f.b.load(in, f.iv);
  EXPECT_TRUE(throws_error_containing(
      [&] { (void)(x * kir::Val(2.0)); },
      {"kir::Val mul of f32 and f64 operands (kernel mixed)", "to_compute"}));
  EXPECT_TRUE(throws_error_containing([&] { (void)kir::select(x, x, x); },
                                      {"select with a f32 condition"}));
}

TEST(KernelIRVal, OperatorsBuildTheirPrimitives) {
  Fixture f;
  kir::BufferId in = f.b.buffer("in", kiln::kFloat32, false, 4);
  kir::MathScope s(f.b, kiln::kFloat32);
  kir::Val x = f.b.load(in, f.iv);
  EXPECT_EQ(kir::expr_str(f.k, (x > kir::Val(0)).id()), "0.0 < load %in[%i]");
  EXPECT_EQ(kir::expr_str(f.k, (x >= x).id()), "load %in[%i] <= load %in[%i]");
  EXPECT_EQ(kir::expr_str(f.k, (-x / kir::Val(2) - x).id()), "-load %in[%i] / 2.0 - load %in[%i]");
  EXPECT_EQ(kir::expr_str(f.k, kir::pow(x, kir::Val(0.5)).id()), "pow(load %in[%i], 0.5)");
  EXPECT_EQ(kir::expr_str(f.k, (!(x == x)).id()), "!(load %in[%i] == load %in[%i])");
}

TEST(KernelIRVal, ToComputeConvertsAsTheEagerKernels) {
  Fixture f;
  kir::BufferId h = f.b.buffer("h", kiln::kFloat16, false, 4);
  kir::BufferId n = f.b.buffer("n", kiln::kInt64, false, 4);
  kir::BufferId x = f.b.buffer("x", kiln::kFloat32, false, 4);
  kir::MathScope s(f.b, kiln::kFloat32);
  // f16 result: the operand is already f16, and computes in f32.
  EXPECT_EQ(kir::expr_str(f.k, kir::to_compute(f.b.load(h, f.iv), kiln::kFloat16).id()),
            "f32(load %h[%i])");
  // i64 operand of a bf16 op: converted to bf16 first (cast_inputs), then to f32 (compute_t).
  EXPECT_EQ(kir::expr_str(f.k, kir::to_compute(f.b.load(n, f.iv), kiln::kBFloat16).id()),
            "f32(bf16(load %n[%i]))");
  EXPECT_EQ(kir::expr_str(f.k, kir::to_compute(f.b.load(x, f.iv), kiln::kFloat32).id()),
            "load %x[%i]");
  EXPECT_EQ(kir::compute_dtype(kiln::kBFloat16), kiln::kFloat32);
  EXPECT_EQ(kir::compute_dtype(kiln::kInt32), kiln::kInt32);
}

// ---- printer ----

// kernel scale_rows: out[r, c] = relu(in[c, r]) * 2 for a 2 x 3 output read from a transposed
// input; one row's sum into out_sum[r].
kir::Kernel small_kernel() {
  kir::Kernel k;
  k.name = "scale_rows";
  kir::Builder b(k);
  kir::BufferId in = b.buffer("in0", kiln::kFloat32, false, 6);
  kir::BufferId out = b.buffer("out0", kiln::kFloat32, true, 6);
  kir::BufferId sum = b.buffer("out1", kiln::kFloat64, true, 2);
  kir::VarId r = b.var("r", kiln::kInt64), c = b.var("c", kiln::kInt64);
  kir::VarId acc = b.var("acc", kiln::kFloat64), t = b.var("t", kiln::kFloat32);
  ExprId rv = b.var_ref(r), cv = b.var_ref(c);
  ExprId x = b.load(in, b.binary(BinaryOp::Add, b.binary(BinaryOp::Mul, cv, b.iconstant(2)), rv));
  ExprId y;
  {
    kir::MathScope s(b, kiln::kFloat32);
    kir::Val v = x;
    y = (kiln::math::relu(v) * kir::Val(2)).id();
  }
  ExprId out_index = b.binary(BinaryOp::Add, b.binary(BinaryOp::Mul, rv, b.iconstant(3)), cv);
  ExprId tv = b.var_ref(t);
  k.body.push_back(loop(
      r, 2,
      {accumulator(acc, kir::ReduceOp::Sum),
       loop(c, 3,
            {let(t, y), store(out, out_index, tv),
             accumulate(acc, kir::ReduceOp::Sum, b.cast(tv, kiln::kFloat64))},
            kir::LoopKind::Vector),
       if_(b.binary(BinaryOp::Lt, b.var_ref(acc), b.constant(1e20, kiln::kFloat64)),
           {store(sum, rv, b.var_ref(acc))},
           {store(sum, rv, b.constant(std::numeric_limits<double>::infinity(), kiln::kFloat64))})},
      kir::LoopKind::Parallel));
  return k;
}

TEST(KernelIRPrinter, PrintsASmallKernel) {
  kir::Kernel k = small_kernel();
  EXPECT_NO_THROW(kir::verify(k));
  const char* expected =
      "kernel scale_rows(%in0: f32[6], %out0: f32[6] out, %out1: f64[2] out) {\n"
      "  parallel for %r in 0..2 {\n"
      "    acc %acc: f64 = sum\n"
      "    vector for %c in 0..3 {\n"
      "      let $0: f32 = load %in0[%c * 2 + %r]\n"
      "      let %t: f32 = select($0 < 0.0, 0.0, $0) * 2.0\n"
      "      store %out0[%r * 3 + %c] = %t\n"
      "      %acc += f64(%t)\n"
      "    }\n"
      "    if %acc < 1e+20 {\n"
      "      store %out1[%r] = %acc\n"
      "    } else {\n"
      "      store %out1[%r] = inf\n"
      "    }\n"
      "  }\n"
      "}\n";
  EXPECT_EQ(k.str(), expected);
  EXPECT_EQ(kir::print(k), expected);
  std::ostringstream os;
  os << k;
  EXPECT_EQ(os.str(), expected);
}

TEST(KernelIRPrinter, AccumulatorsIntegersAndPrecedence) {
  kir::Kernel k;
  k.name = "misc";
  kir::Builder b(k);
  kir::BufferId out = b.buffer("o", kiln::kInt32, true, 1);
  kir::VarId m = b.var("m", kiln::kInt32), p = b.var("p", kiln::kInt32);
  kir::VarId q = b.var("q", kiln::kInt32);
  ExprId mv = b.var_ref(m), pv = b.var_ref(p);
  ExprId three = b.iconstant(3, kiln::kInt32);
  ExprId sum = b.binary(BinaryOp::Sub, mv, b.binary(BinaryOp::Sub, pv, three));
  ExprId prod = b.binary(BinaryOp::Mul, b.binary(BinaryOp::Add, mv, pv), three);
  ExprId cond = b.binary(BinaryOp::Or, b.binary(BinaryOp::Lt, mv, pv),
                         b.binary(BinaryOp::And, b.binary(BinaryOp::Eq, mv, three),
                                  b.unary(UnaryOp::Not, b.binary(BinaryOp::Le, pv, mv))));
  k.body = {accumulator(m, kir::ReduceOp::Max),
            accumulator(p, kir::ReduceOp::Prod),
            accumulator(q, kir::ReduceOp::Min),
            accumulate(m, kir::ReduceOp::Max, b.iconstant(-5, kiln::kInt32)),
            accumulate(p, kir::ReduceOp::Prod, sum),
            accumulate(q, kir::ReduceOp::Min, b.binary(BinaryOp::Min, mv, pv)),
            if_(cond, {store(out, b.iconstant(0), prod)})};
  EXPECT_NO_THROW(kir::verify(k));
  EXPECT_EQ(k.str(),
            "kernel misc(%o: i32[1] out) {\n"
            "  acc %m: i32 = max\n"
            "  acc %p: i32 = prod\n"
            "  acc %q: i32 = min\n"
            "  %m max= -5\n"
            "  %p *= %m - (%p - 3)\n"
            "  %q min= min(%m, %p)\n"
            "  if %m < %p || %m == 3 && !(%p <= %m) {\n"
            "    store %o[0] = (%m + %p) * 3\n"
            "  }\n"
            "}\n");
}

TEST(KernelIRPrinter, ExprStrToleratesBadIds) {
  kir::Kernel k;
  k.name = "bad";
  kir::Expr e;
  e.kind = ExprKind::Binary;
  e.op = static_cast<uint8_t>(BinaryOp::Add);
  e.dtype = kiln::kInt64;
  e.args[0] = 5;
  e.args[1] = 0;
  k.exprs.push_back(e);
  EXPECT_EQ(kir::expr_str(k, 0), "<bad expr 5> + <bad expr 0>");
  EXPECT_EQ(kir::expr_str(k, 3), "<bad expr 3>");
}

TEST(KernelIRPrinter, FloatConstantsRoundTripTheirDtype) {
  Fixture f;
  auto str = [&](double v, DType t) { return kir::expr_str(f.k, f.b.constant(v, t)); };
  EXPECT_EQ(str(0.1, kiln::kFloat32), "0.1");
  EXPECT_EQ(str(0.1, kiln::kFloat64), "0.1");
  EXPECT_EQ(str(1.0 / 3.0, kiln::kFloat32), "0.33333334");
  EXPECT_EQ(str(3, kiln::kFloat64), "3.0");
  EXPECT_EQ(str(-std::numeric_limits<double>::infinity(), kiln::kFloat32), "-inf");
  EXPECT_EQ(str(std::nan(""), kiln::kFloat64), "nan");
  EXPECT_EQ(str(0x1p64, kiln::kFloat32), "1.8446744e+19");
}

}  // namespace
