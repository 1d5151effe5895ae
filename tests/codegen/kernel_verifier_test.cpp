// The kernel-IR verifier: one kernel breaking each rule, checked for the message's wording
// (kernel name, statement path, problem), and valid kernels it must accept.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kir_test_util.h"
#include "test_util.h"

namespace {

using namespace kir_test;
using kiln_test::throws_error_containing;
using kir::BinaryOp;
using kir::ExprId;
using kir::LoopKind;
using kir::ReduceOp;

// A kernel `k` with an f32 input %x[64], an f32 output %y[64] and loop indices %i, %j.
struct Base {
  kir::Kernel k;
  kir::Builder b{k};
  kir::BufferId x, y;
  kir::VarId i, j;
  Base() {
    k.name = "k";
    x = b.buffer("x", kiln::kFloat32, false, 64);
    y = b.buffer("y", kiln::kFloat32, true, 64);
    i = b.var("i", kiln::kInt64);
    j = b.var("j", kiln::kInt64);
  }
  ExprId iv() { return b.var_ref(i); }
  ExprId c(int64_t v) { return b.iconstant(v); }
  ExprId bin(BinaryOp op, ExprId a, ExprId c2) { return b.binary(op, a, c2); }
  // y[i] = x[i] over i in 0..64.
  kir::Stmt copy_loop() { return loop(i, 64, {store(y, iv(), b.load(x, iv()))}, LoopKind::Vector); }
  ::testing::AssertionResult rejects(std::initializer_list<std::string> needles) {
    return throws_error_containing([&] { kir::verify(k); }, needles);
  }
};

TEST(KernelVerifier, AcceptsValidKernels) {
  Base t;
  t.k.body.push_back(t.copy_loop());
  EXPECT_NO_THROW(kir::verify(t.k));

  // Indices through a let, a remainder and a division: i in 0..16, l = i * 3 + 1 in [1, 46],
  // l % 5 + (l / 2) in [0, 27].
  Base u;
  kir::VarId l = u.b.var("l", kiln::kInt64);
  ExprId lv = u.b.var_ref(l);
  ExprId idx =
      u.bin(BinaryOp::Add, u.bin(BinaryOp::Rem, lv, u.c(5)), u.bin(BinaryOp::Div, lv, u.c(2)));
  u.k.body.push_back(
      loop(u.i, 16,
           {let(l, u.bin(BinaryOp::Add, u.bin(BinaryOp::Mul, u.iv(), u.c(3)), u.c(1))),
            store(u.y, lv, u.b.load(u.x, idx))}));
  EXPECT_NO_THROW(kir::verify(u.k));
}

TEST(KernelVerifier, IndexOutOfBoundsNamesThePath) {
  // A store one past the end, inside a loop nest: body[0].loop %i > body[1].loop %j > ...
  Base t;
  kir::VarId s = t.b.var("s", kiln::kFloat32);
  ExprId idx = t.bin(BinaryOp::Add, t.bin(BinaryOp::Mul, t.iv(), t.c(8)), t.b.var_ref(t.j));
  ExprId past = t.bin(BinaryOp::Add, idx, t.c(1));
  t.k.body.push_back(loop(
      t.i, 8,
      {accumulator(s, ReduceOp::Sum),
       loop(t.j, 8,
            {accumulate(s, ReduceOp::Sum, t.b.load(t.x, idx)), store(t.y, past, t.b.var_ref(s))},
            LoopKind::Vector)},
      LoopKind::Parallel));
  EXPECT_TRUE(
      t.rejects({"kernel-IR verifier: kernel k: body[0].loop %i > body[1].loop %j > "
                 "body[1].store: index `%i * 8 + %j + 1` of store into %y ranges over "
                 "[1, 64], outside the buffer's extent 64"}));
}

TEST(KernelVerifier, LoadIndexOutOfBounds) {
  Base t;
  ExprId neg = t.bin(BinaryOp::Sub, t.iv(), t.c(1));
  t.k.body.push_back(loop(t.i, 64, {store(t.y, t.iv(), t.b.load(t.x, neg))}));
  EXPECT_TRUE(
      t.rejects({"body[0].loop %i > body[0].store: index `%i - 1` of load from %x ranges "
                 "over [-1, 62], outside the buffer's extent 64"}));
}

TEST(KernelVerifier, IndexThatReadsAnAccumulatorCannotBeBounded) {
  Base t;
  kir::VarId a = t.b.var("a", kiln::kInt64);
  t.k.body = {accumulator(a, ReduceOp::Sum), loop(t.i, 4, {accumulate(a, ReduceOp::Sum, t.iv())}),
              store(t.y, t.b.var_ref(a), t.b.constant(1, kiln::kFloat32))};
  EXPECT_TRUE(
      t.rejects({"body[2].store: index `%a` of store into %y cannot be bounded: it reads "
                 "accumulator %a"}));
}

TEST(KernelVerifier, IndexThatReadsABufferCannotBeBounded) {
  Base t;
  kir::BufferId idx = t.b.buffer("idx", kiln::kInt64, false, 64);
  t.k.body.push_back(loop(t.i, 64, {store(t.y, t.iv(), t.b.load(t.x, t.b.load(idx, t.iv())))}));
  EXPECT_TRUE(
      t.rejects({"index `load %idx[%i]` of load from %x cannot be bounded: it reads "
                 "buffer %idx"}));
}

TEST(KernelVerifier, IndexThatMayDivideByZeroCannotBeBounded) {
  Base t;
  t.k.body.push_back(
      loop(t.i, 64, {store(t.y, t.bin(BinaryOp::Div, t.c(10), t.iv()), t.b.load(t.x, t.iv()))}));
  EXPECT_TRUE(
      t.rejects({"index `10 / %i` of store into %y cannot be bounded: div may divide by "
                 "zero"}));
}

TEST(KernelVerifier, StoreIntoInputBuffer) {
  Base t;
  t.k.body.push_back(loop(t.i, 64, {store(t.x, t.iv(), t.b.load(t.x, t.iv()))}));
  EXPECT_TRUE(t.rejects({"kernel k: body[0].loop %i > body[0].store: store into input buffer %x"}));
}

TEST(KernelVerifier, StoreIntoUnknownBuffer) {
  Base t;
  t.k.body.push_back(loop(t.i, 64, {store(9, t.iv(), t.b.load(t.x, t.iv()))}));
  EXPECT_TRUE(t.rejects({"store into buffer id 9, out of range (the kernel has 2)"}));
}

TEST(KernelVerifier, ExpressionIdOutOfRange) {
  Base t;
  t.k.body.push_back(loop(t.i, 64, {store(t.y, t.iv(), 1000)}));
  EXPECT_TRUE(
      t.rejects({"body[0].loop %i > body[0].store: the value is expression 1000, out of "
                 "range"}));
}

// Appends an expression as written, without the Builder's checks.
ExprId raw_binary(kir::Kernel& k, BinaryOp op, kiln::DType dtype, ExprId a, ExprId b) {
  kir::Expr e;
  e.kind = kir::ExprKind::Binary;
  e.op = static_cast<uint8_t>(op);
  e.dtype = dtype;
  e.args[0] = a;
  e.args[1] = b;
  k.exprs.push_back(e);
  return static_cast<ExprId>(k.exprs.size() - 1);
}

TEST(KernelVerifier, OperandsMustBeEarlierExpressions) {
  Base t;
  ExprId load = t.b.load(t.x, t.iv());
  auto self = static_cast<ExprId>(t.k.exprs.size());
  raw_binary(t.k, BinaryOp::Add, kiln::kFloat32, load, self);  // a cycle
  t.k.body.push_back(loop(t.i, 64, {store(t.y, t.iv(), self)}));
  EXPECT_TRUE(
      t.rejects({"binary operand 1 is expression 2, which is not an earlier expression "
                 "(ids 0..1)"}));
}

TEST(KernelVerifier, OperandDtypes) {
  Base t;
  ExprId load = t.b.load(t.x, t.iv());
  ExprId bad =
      raw_binary(t.k, BinaryOp::Add, kiln::kFloat32, load, t.b.constant(1, kiln::kFloat64));
  t.k.body.push_back(loop(t.i, 64, {store(t.y, t.iv(), bad)}));
  EXPECT_TRUE(
      t.rejects({"body[0].loop %i > body[0].store: expression `load %x[%i] + 1.0`: add "
                 "of f32 and f64 operands: both operands must have one dtype"}));
}

TEST(KernelVerifier, SixteenBitArithmetic) {
  Base t;
  kir::BufferId h = t.b.buffer("h", kiln::kFloat16, false, 64);
  ExprId hl = t.b.load(h, t.iv());
  kir::Expr neg;
  neg.kind = kir::ExprKind::Unary;
  neg.op = static_cast<uint8_t>(kir::UnaryOp::Neg);
  neg.dtype = kiln::kFloat16;
  neg.args[0] = hl;
  t.k.exprs.push_back(neg);
  t.k.body.push_back(
      loop(t.i, 64, {store(t.y, t.iv(), static_cast<ExprId>(t.k.exprs.size() - 1))}));
  EXPECT_TRUE(
      t.rejects({"expression `-load %h[%i]`: unary is typed f16; 16-bit floats and 8- and "
                 "16-bit integers exist only as loads and casts"}));
}

TEST(KernelVerifier, VariableUsedBeforeDefinition) {
  Base t;
  kir::VarId v = t.b.var("v", kiln::kFloat32);
  t.k.body.push_back(
      loop(t.i, 64, {store(t.y, t.iv(), t.b.var_ref(v)), let(v, t.b.load(t.x, t.iv()))}));
  EXPECT_TRUE(t.rejects({"body[0].loop %i > body[0].store: %v is used before its definition"}));
}

TEST(KernelVerifier, LoopIndexUsedOutsideItsLoop) {
  Base t;
  t.k.body = {t.copy_loop(), store(t.y, t.iv(), t.b.constant(0, kiln::kFloat32))};
  EXPECT_TRUE(
      t.rejects({"kernel k: body[1].store: %i is used outside its scope (defined at "
                 "body[0].loop %i)"}));
}

TEST(KernelVerifier, LetScopeEndsWithItsBlock) {
  Base t;
  kir::VarId v = t.b.var("v", kiln::kFloat32);
  ExprId cond = t.bin(BinaryOp::Lt, t.iv(), t.c(3));
  t.k.body.push_back(loop(
      t.i, 64, {if_(cond, {let(v, t.b.load(t.x, t.iv()))}), store(t.y, t.iv(), t.b.var_ref(v))}));
  EXPECT_TRUE(
      t.rejects({"body[0].loop %i > body[1].store: %v is used outside its scope (defined "
                 "at body[0].loop %i > body[0].if > body[0].let %v)"}));
}

TEST(KernelVerifier, VariableDefinedTwice) {
  Base t;
  t.k.body = {t.copy_loop(), t.copy_loop()};
  EXPECT_TRUE(t.rejects({"body[1].loop %i: %i is defined twice (first at body[0].loop %i)"}));
}

TEST(KernelVerifier, NonPositiveLoopExtent) {
  Base t;
  t.k.body.push_back(loop(t.i, 0, {}));
  EXPECT_TRUE(t.rejects({"body[0].loop %i: loop %i has extent 0; it must be positive"}));
}

TEST(KernelVerifier, LoopIndexMustBeI64) {
  Base t;
  kir::VarId n = t.b.var("n", kiln::kInt32);
  t.k.body.push_back(loop(n, 4, {}));
  EXPECT_TRUE(t.rejects({"loop index %n is i32; it must be i64"}));
}

TEST(KernelVerifier, VectorLoopMustBeInnermost) {
  Base t;
  t.k.body.push_back(loop(t.i, 8, {loop(t.j, 8, {})}, LoopKind::Vector));
  EXPECT_TRUE(
      t.rejects({"body[0].loop %i: vector loop %i is not innermost: its body contains a "
                 "loop"}));
}

TEST(KernelVerifier, LetValueDtype) {
  Base t;
  kir::VarId v = t.b.var("v", kiln::kFloat64);
  t.k.body.push_back(loop(t.i, 64, {let(v, t.b.load(t.x, t.iv()))}));
  EXPECT_TRUE(t.rejects({"body[0].loop %i > body[0].let %v: let %v: f64 is given a f32 value"}));
}

TEST(KernelVerifier, SixteenBitVariable) {
  Base t;
  kir::BufferId h = t.b.buffer("h", kiln::kBFloat16, false, 64);
  kir::VarId v = t.b.var("v", kiln::kBFloat16);
  t.k.body.push_back(loop(t.i, 64, {let(v, t.b.load(h, t.iv()))}));
  EXPECT_TRUE(t.rejects({"let %v is typed bf16; variables are b8, i32, i64, f32 or f64"}));
}

TEST(KernelVerifier, AccumulateIntoANonAccumulator) {
  Base t;
  kir::VarId v = t.b.var("v", kiln::kFloat32);
  ExprId xv = t.b.load(t.x, t.iv());
  t.k.body.push_back(loop(t.i, 64, {let(v, xv), accumulate(v, ReduceOp::Sum, xv)}));
  EXPECT_TRUE(
      t.rejects({"body[0].loop %i > body[1].accumulate %v: accumulate into %v, which is not "
                 "an accumulator"}));
}

TEST(KernelVerifier, AccumulateWithAnotherReduction) {
  Base t;
  kir::VarId a = t.b.var("a", kiln::kFloat32);
  t.k.body = {accumulator(a, ReduceOp::Max),
              loop(t.i, 64, {accumulate(a, ReduceOp::Sum, t.b.load(t.x, t.iv()))})};
  EXPECT_TRUE(t.rejects({"sum accumulate into %a, declared as a max accumulator"}));
}

TEST(KernelVerifier, AccumulateValueDtype) {
  Base t;
  kir::VarId a = t.b.var("a", kiln::kFloat64);
  t.k.body = {accumulator(a, ReduceOp::Sum),
              loop(t.i, 64, {accumulate(a, ReduceOp::Sum, t.b.load(t.x, t.iv()))})};
  EXPECT_TRUE(t.rejects({"accumulate of a f32 value into %a: f64"}));
}

TEST(KernelVerifier, AccumulateAcrossAParallelLoop) {
  Base t;
  kir::VarId a = t.b.var("a", kiln::kFloat32);
  t.k.body = {
      accumulator(a, ReduceOp::Sum),
      loop(t.i, 64, {accumulate(a, ReduceOp::Sum, t.b.load(t.x, t.iv()))}, LoopKind::Parallel)};
  EXPECT_TRUE(
      t.rejects({"body[1].loop %i > body[0].accumulate %a: accumulate into %a, declared "
                 "outside the parallel loop %i (parallel iterations must be "
                 "independent)"}));
}

TEST(KernelVerifier, AccumulateOutOfScope) {
  Base t;
  kir::VarId a = t.b.var("a", kiln::kFloat32);
  t.k.body = {loop(t.i, 4, {accumulator(a, ReduceOp::Sum)}),
              accumulate(a, ReduceOp::Sum, t.b.constant(1, kiln::kFloat32))};
  EXPECT_TRUE(t.rejects({"body[1].accumulate %a: accumulate into %a, which is not in scope"}));
}

TEST(KernelVerifier, IfConditionMustBeBool) {
  Base t;
  t.k.body.push_back(loop(t.i, 64, {if_(t.iv(), {})}));
  EXPECT_TRUE(
      t.rejects({"body[0].loop %i > body[0].if: the condition `%i` is i64; it must be b8"}));
}

TEST(KernelVerifier, BufferAndVariableNames) {
  Base t;
  t.k.buffers[1].name = "x";
  EXPECT_TRUE(t.rejects({"kernel-IR verifier: kernel k: buffers: two buffers are named %x"}));
  Base u;
  u.k.vars[1].name = "i";
  EXPECT_TRUE(u.rejects({"kernel k: variables: two variables are named %i"}));
  Base v;
  v.k.buffers[0].extent = -2;
  EXPECT_TRUE(v.rejects({"buffer %x has negative extent -2"}));
  // -1 is kRuntimeExtent, which only a kernel with size parameters may use.
  Base w;
  w.k.buffers[0].extent = kir::kRuntimeExtent;
  EXPECT_TRUE(w.rejects({"buffer %x has a runtime extent in a kernel without size parameters"}));
}

TEST(KernelVerifier, VariableReferenceDtype) {
  Base t;
  ExprId ref = t.iv();
  t.k.exprs[static_cast<size_t>(ref)].dtype = kiln::kInt32;
  t.k.body.push_back(loop(t.i, 64, {store(t.y, t.c(0), t.b.cast(ref, kiln::kFloat32))}));
  EXPECT_TRUE(
      t.rejects({"expression `%i`: reference to %i is typed i32, but the variable is i64"}));
}

}  // namespace

namespace {

TEST(KernelVerifier, UnknownEnumValues) {
  Base t;
  kir::Stmt l = t.copy_loop();
  l.loop_kind = static_cast<LoopKind>(7);
  t.k.body.push_back(l);
  EXPECT_TRUE(t.rejects({"body[0].loop %i: unknown loop kind 7"}));
  Base u;
  kir::VarId a = u.b.var("a", kiln::kFloat32);
  u.k.body.push_back(accumulator(a, static_cast<ReduceOp>(9)));
  EXPECT_TRUE(u.rejects({"body[0].acc %a: unknown reduction 9"}));
  Base v;
  ExprId one = v.b.constant(1, kiln::kFloat32);
  v.k.exprs[static_cast<size_t>(one)].dtype = static_cast<kiln::DType>(42);
  v.k.body.push_back(store(v.y, v.c(0), one));
  EXPECT_TRUE(v.rejects({"body[0].store: expression", "unknown dtype 42"}));
}

}  // namespace
