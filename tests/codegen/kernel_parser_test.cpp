// The kernel-IR text parser (kernel_ir/kernel_parser.h), the Visitor and Mutator
// (kernel_visitor.h) and the kernel passes (kernel_passes.h). The round-trip tests take every
// kernel the compiler lowers for the demo models and for each pointwise and reduction op, and
// check that the parsed kernel prints as the same text and computes the same bits in the
// kernel-IR interpreter as the kernel it was printed from.
#include <gtest/gtest.h>

#include "codegen/lowering_util.h"

#include <cstring>
#include <string>
#include <vector>

#include "kiln/frontend/compile/plan.h"
#include "kiln/frontend/models.h"
#include "kiln/ir/graph.h"
#include "kiln/ir/parser.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/kernel_ir/kernel_parser.h"
#include "kiln/kernel_ir/kernel_passes.h"
#include "kiln/kernel_ir/kernel_printer.h"
#include "kiln/kernel_ir/kernel_verifier.h"
#include "kiln/kernel_ir/kernel_visitor.h"
#include "kiln/kiln.h"
#include "kiln/passes/pass_manager.h"
#include "kiln/runtime/kernel_args.h"
#include "test_util.h"

namespace {

namespace kir = kiln::kir;
using kiln::Tensor;
using kir::Kernel;

using kiln_test::fuse_and_lower;
using kiln_test::kernels_of;

// The compiler's kernels: the demo models' training steps and one graph per op and dtype.
std::vector<Kernel> lowered_kernels() {
  std::vector<Kernel> all;
  for (const std::string& name : kiln::models::model_names()) {
    kiln::models::Model m = kiln::models::make_model(name, 3);
    std::vector<Tensor> inputs = m.batch(0);
    auto plan = kiln::compile_detail::capture_plan(m.loss, inputs,
                                                   kiln::compile_detail::Signature::of(inputs));
    for (const auto& g : {plan->forward, plan->backward}) {
      std::vector<Kernel> ks = kernels_of(*g);
      all.insert(all.end(), ks.begin(), ks.end());
    }
  }
  for (std::string dt : {"f32", "f64", "f16", "i32", "i64", "u8", "i8", "i16"}) {
    bool flt = dt[0] == 'f';
    std::vector<std::string> unary = {"abs", "neg", "relu"};
    if (flt) {
      for (const char* op : {"exp", "log1p", "expm1", "rsqrt", "sign", "tanh", "sigmoid", "silu",
                             "sin", "erf", "gelu"})
        unary.push_back(op);
    }
    for (const std::string& op : unary) {
      for (Kernel& k :
           fuse_and_lower(fmt::format("graph(%x : {0}[5, 33]):\n  %0 : {0}[5, 33] = {1}(%x)\n"
                                      "  %1 : {0}[5, 33] = mul(%0, %x)\n  return (%1)\n",
                                      dt, op)))
        all.push_back(std::move(k));
    }
    for (const char* op : {"add", "sub", "mul", "maximum", "minimum"}) {
      for (Kernel& k : fuse_and_lower(fmt::format(
               "graph(%x : {0}[5, 33], %y : {0}[33]):\n  %0 : {0}[5, 33] = {1}(%x, %y)\n"
               "  %1 : {0}[5, 33] = mul(%0, %x)\n  return (%1)\n",
               dt, op)))
        all.push_back(std::move(k));
    }
    for (Kernel& k : fuse_and_lower(fmt::format(
             "graph(%x : {0}[6, 40], %y : {0}[6, 40]):\n  %0 : b8[6, 40] = lt(%x, %y)\n"
             "  %1 : {0}[6, 40] = where(%0, %x, %y)\n  %2 : {0}[6, 1] = amax(%1) "
             "{{dims=[-1], keepdim=true}}\n  %3 : {0}[6, 40] = mul(%1, %2)\n  return (%3)\n",
             dt)))
      all.push_back(std::move(k));
  }
  for (std::string dt : {"f32", "f64"}) {
    for (Kernel& k : fuse_and_lower(fmt::format(
             "graph(%x : {0}[7, 50]):\n  %0 : {0}[7, 1] = amax(%x) {{dims=[-1], keepdim=true}}\n"
             "  %1 : {0}[7, 50] = sub(%x, %0) {{alpha=1}}\n  %2 : {0}[7, 50] = exp(%1)\n"
             "  %3 : {0}[7, 1] = sum(%2) {{dims=[-1], keepdim=true}}\n"
             "  %4 : {0}[7, 50] = div(%2, %3) {{alpha=1}}\n  %5 : {0}[7, 50] = pow(%4, %x)\n"
             "  return (%5)\n",
             dt)))
      all.push_back(std::move(k));
  }
  return all;
}

// Deterministic arguments for a kernel's buffers: inputs from a seeded normal draw, outputs zero.
std::vector<Tensor> arguments(const Kernel& k) {
  std::vector<Tensor> args;
  kiln::manual_seed(7);
  for (const kir::Buffer& b : k.buffers) {
    if (b.output) {
      args.push_back(kiln::zeros({b.extent}, kiln::dtype(b.dtype)));
    } else {
      args.push_back(kiln::randn({b.extent}).mul(3).to(b.dtype));
    }
  }
  return args;
}

TEST(KernelParser, EveryLoweredKernelPrintsBackAndComputesTheSameBits) {
  std::vector<Kernel> kernels = lowered_kernels();
  ASSERT_GE(kernels.size(), 80u);
  for (const Kernel& k : kernels) {
    SCOPED_TRACE(k.name);
    std::string text = kir::print(k);
    std::vector<Kernel> parsed = kir::parse_kernels(text);
    ASSERT_EQ(parsed.size(), 1u);
    EXPECT_EQ(kir::print(parsed[0]), text);
    ASSERT_NO_THROW(kir::verify(parsed[0]));
    std::vector<Tensor> want = arguments(k), got = arguments(parsed[0]);
    kir::run_kernel(k, want);
    kir::run_kernel(parsed[0], got);
    for (size_t i = 0; i < want.size(); ++i) {
      if (!k.buffers[i].output) continue;
      ASSERT_EQ(std::memcmp(want[i].raw_data(), got[i].raw_data(),
                            static_cast<size_t>(want[i].numel()) * want[i].element_size()),
                0)
          << "buffer %" << k.buffers[i].name;
    }
  }
  std::cout << kernels.size() << " kernels printed, parsed back and run\n";
}

TEST(KernelParser, ConstantsTakeTheirDtypeFromWhereTheyStand) {
  std::vector<Kernel> ks = kir::parse_kernels(R"(# a comment line
kernel k(%in0: f32[4], %out0: f64[4] out, %out1: i32[4] out) {
  for %i in 0..4 {
    let %a: f64 = 2.0 * 3.0
    let %b: f32 = f32(0.1) + load %in0[%i]
    store %out0[%i] = %a + f64(-2.0)
    store %out1[%i] = 7
  }
}
)");
  ASSERT_EQ(ks.size(), 1u);
  const Kernel& k = ks[0];
  ASSERT_NO_THROW(kir::verify(k));
  auto dtype_of_let = [&](size_t i) {
    const kir::Stmt& s = k.body[0].body[i];
    const kir::Expr& v = k.exprs[static_cast<size_t>(s.value)];
    return k.exprs[static_cast<size_t>(v.args[0])].dtype;  // the left operand
  };
  EXPECT_EQ(dtype_of_let(0), kiln::kFloat64);  // 2.0 beside a f64 let
  const kir::Expr& cast =
      k.exprs[static_cast<size_t>(k.exprs[static_cast<size_t>(k.body[0].body[1].value)].args[0])];
  ASSERT_EQ(cast.kind, kir::ExprKind::Cast);
  EXPECT_EQ(k.exprs[static_cast<size_t>(cast.args[0])].dtype, kiln::kFloat64);  // under f32()
  EXPECT_EQ(k.exprs[static_cast<size_t>(cast.args[0])].value, 0.1);
  const kir::Expr& seven = k.exprs[static_cast<size_t>(k.body[0].body[3].value)];
  EXPECT_EQ(seven.dtype, kiln::kInt32);  // stored into an i32 buffer
  // -2.0 under the cast is one constant, not a negation.
  const kir::Expr& store = k.exprs[static_cast<size_t>(k.body[0].body[2].value)];
  const kir::Expr& neg_cast = k.exprs[static_cast<size_t>(store.args[1])];
  const kir::Expr& minus_two = k.exprs[static_cast<size_t>(neg_cast.args[0])];
  EXPECT_EQ(minus_two.kind, kir::ExprKind::Const);
  EXPECT_EQ(minus_two.value, -2.0);
  EXPECT_EQ(minus_two.dtype, kiln::kFloat32);
}

TEST(KernelParser, ErrorsNameTheLineAndWhatWasExpected) {
  auto error_of = [](const std::string& text) {
    try {
      kir::parse_kernels(text);
    } catch (const kiln::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("kernel k(%o: f32[2] out) {\n  store %o[0] 1.0\n}\n"),
            "kernel-IR parser: line 2, column 15: expected '=', got '1.0'");
  EXPECT_NE(error_of("kernel k(%o: f32[2] out) {\n  store %o[0] = %z\n}\n")
                .find("line 2: kernel k: variable %z is not defined before its use"),
            std::string::npos);
  EXPECT_NE(error_of("kernel k(%o: f32[2] out) {\n  store %o[0] = frob(1.0)\n}\n")
                .find("'frob' is not an operation of the kernel IR"),
            std::string::npos);
  EXPECT_NE(error_of("kernel k(%o: f32[2] out, %o: f32[2]) {\n}\n").find("declared twice"),
            std::string::npos);
  EXPECT_NE(error_of("kernel k(%o: q7[2] out) {\n}\n").find("expected a dtype"), std::string::npos);
  EXPECT_NE(error_of("kernel k(%o: f32[2] out) {\n  for %i in 1..2 {\n  }\n}\n")
                .find("a loop starting at 0"),
            std::string::npos);
  EXPECT_NE(error_of("kernel k(%o: f32[2] out) {\n").find("got the end of the text"),
            std::string::npos);
  EXPECT_FALSE(kir::looks_like_kernel_ir("graph(%x : f32[2]):\n  return (%x)\n"));
  EXPECT_TRUE(kir::looks_like_kernel_ir("# passes: dce\nkernel k() {\n}\n"));
}

// Counts the loads a kernel's statements reach, walking shared expressions once per use.
class CountLoads : public kir::Visitor {
 public:
  using Visitor::Visitor;
  void visit_load(kir::ExprId e, const kir::Expr& x) override {
    ++loads;
    Visitor::visit_load(e, x);
  }
  int loads = 0;
};

// exp(x) -> exp2(x * log2(e)) everywhere.
class ExpToExp2 : public kir::Mutator {
 public:
  using Mutator::Mutator;
  kir::ExprId mutate_unary(kir::ExprId e, const kir::Expr& x) override {
    kir::ExprId inner = mutate_operands(e, x);
    if (static_cast<kir::UnaryOp>(x.op) != kir::UnaryOp::Exp) return inner;
    kir::Builder b(kernel());
    kir::ExprId arg = kernel().exprs[static_cast<size_t>(inner)].args[0];
    kir::ExprId scaled =
        b.binary(kir::BinaryOp::Mul, arg, b.constant(1.4426950408889634, b.dtype(arg)));
    return b.unary(kir::UnaryOp::Exp2, scaled);
  }
};

TEST(KernelVisitor, VisitsEveryUseAndTheMutatorKeepsWhatDidNotChange) {
  Kernel k = kir::parse_kernels(R"(kernel k(%in0: f32[8], %out0: f32[8] out) {
  for %i in 0..8 {
    let %x: f32 = load %in0[%i]
    if %x < 0.0 {
      store %out0[%i] = exp(load %in0[%i]) + load %in0[%i]
    } else {
      store %out0[%i] = %x
    }
  }
}
)")[0];
  CountLoads count(k);
  count.visit_kernel();
  EXPECT_EQ(count.loads, 3);

  size_t arena = k.exprs.size();
  std::string before = kir::print(k);
  kir::Mutator identity(k);
  identity.mutate_kernel();
  EXPECT_FALSE(identity.changed());
  EXPECT_EQ(k.exprs.size(), arena);  // nothing rebuilt
  EXPECT_EQ(kir::print(k), before);

  ExpToExp2 rewrite(k);
  rewrite.mutate_kernel();
  EXPECT_TRUE(rewrite.changed());
  EXPECT_NO_THROW(kir::verify(k));
  EXPECT_EQ(kir::print(k), R"(kernel k(%in0: f32[8], %out0: f32[8] out) {
  for %i in 0..8 {
    let %x: f32 = load %in0[%i]
    if %x < 0.0 {
      store %out0[%i] = exp2(load %in0[%i] * 1.442695) + load %in0[%i]
    } else {
      store %out0[%i] = %x
    }
  }
}
)");
  // The same values as exp, to float rounding.
  std::vector<float> xs = {-3, -1, -0.5f, 0, 0.25f, 1, 2, -7};
  Tensor in = kiln::from_vector(xs, {8}), out = kiln::zeros({8});
  kir::run_kernel(k, std::vector<Tensor>{in, out});
  std::vector<float> got = out.to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    float want = xs[i] < 0 ? std::exp(xs[i]) + xs[i] : xs[i];
    EXPECT_NEAR(got[i], want, 1e-6f * (1 + std::abs(want))) << xs[i];
  }
}

TEST(KernelPasses, DeadStatementsGoUntilNothingMoreDoes) {
  Kernel k = kir::parse_kernels(R"(kernel k(%in0: f32[8], %out0: f32[8] out) {
  acc %unused: f32 = sum
  for %i in 0..8 {
    let %a: f32 = load %in0[%i]
    let %b: f32 = %a * 2.0
    %unused += %b
    store %out0[%i] = load %in0[%i]
  }
  for %j in 0..8 {
    let %c: f32 = load %in0[%j]
  }
}
)")[0];
  EXPECT_TRUE(kir::eliminate_dead_statements(k));
  EXPECT_EQ(kir::print(k), R"(kernel k(%in0: f32[8], %out0: f32[8] out) {
  for %i in 0..8 {
    store %out0[%i] = load %in0[%i]
  }
}
)");
  EXPECT_FALSE(kir::eliminate_dead_statements(k));
  ASSERT_NE(kir::find_kernel_pass("dce"), nullptr);
  EXPECT_EQ(kir::find_kernel_pass("nope"), nullptr);
}

}  // namespace
