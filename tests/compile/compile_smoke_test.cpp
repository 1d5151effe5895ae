// compile() against eager on a small MLP: outputs, gradients into lifted parameters and inputs,
// the cache, and the stats.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "kiln/runtime/op_table.h"
#include "opaque_cube.h"

namespace kiln {
namespace {

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_TRUE(a.defined() && b.defined());
  ASSERT_EQ(a.sizes(), b.sizes());
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << "element " << i;
}

TEST(CompileSmoke, MlpMatchesEager) {
  manual_seed(0);
  Tensor w1 = randn({8, 16}).requires_grad_(), b1 = zeros({16}).requires_grad_();
  Tensor w2 = randn({16, 4}).requires_grad_();
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor h = relu(matmul(in[0], w1) + b1);
    return std::vector<Tensor>{cross_entropy(matmul(h, w2), in[1])};
  };
  CompiledFunction f = compile(fn);
  for (int step = 0; step < 3; ++step) {
    Tensor x = randn({5, 8}).requires_grad_();
    Tensor target = from_vector<int64_t>({0, 3, 1, 2, 3}, {5});
    Tensor eager = fn({x, target})[0];
    std::vector<Tensor> ge = autograd::grad({eager}, {x, w1, b1, w2});
    Tensor compiled = f({x, target})[0];
    ASSERT_TRUE(compiled.requires_grad());
    EXPECT_EQ(compiled.grad_fn()->name(), "CompiledBackward");
    std::vector<Tensor> gc = autograd::grad({compiled}, {x, w1, b1, w2});
    expect_close(compiled, eager);
    for (size_t i = 0; i < gc.size(); ++i)
      expect_close(gc[i], ge[i]);
  }
  CompileStats s = f.stats();
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.cache_hits, 2);
  EXPECT_GT(s.forward_kernels, 0);
  EXPECT_GT(s.backward_kernels, 0);
  EXPECT_GT(s.saved_bytes, 0);
  EXPECT_EQ(s.fallback_ops, 0);
}

TEST(CompileSmoke, BackwardAccumulatesIntoLeavesLikeEager) {
  manual_seed(1);
  Tensor w = randn({3, 3}).requires_grad_();
  CompiledFunction f =
      compile([&](const std::vector<Tensor>& in) { return (matmul(in[0], w).tanh()).sum(); });
  Tensor x = randn({2, 3});
  f({x})[0].backward();
  Tensor compiled_grad = w.grad().clone();
  w.mutable_grad() = Tensor();
  (matmul(x, w).tanh()).sum().backward();
  expect_close(compiled_grad, w.grad());
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(CompileSmoke, GraphBreakAtAnOpaqueFunction) {
  manual_seed(4);
  Tensor w = randn({4, 4}).requires_grad_();
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor h = matmul(in[0], w).tanh();
    Tensor c = kiln_test::OpaqueCube::apply(h);
    return std::vector<Tensor>{(c * in[0]).sum(), c.exp()};
  };
  CompiledFunction f = compile(fn);
  for (int call = 0; call < 3; ++call) {
    Tensor x = randn({3, 4}).requires_grad_();
    std::vector<Tensor> eager = fn({x});
    std::vector<Tensor> ge = autograd::grad({eager[0], eager[1].sum()}, {x, w});
    std::vector<Tensor> compiled = f({x});
    std::vector<Tensor> gc = autograd::grad({compiled[0], compiled[1].sum()}, {x, w});
    expect_close(compiled[0], eager[0]);
    expect_close(compiled[1], eager[1]);
    expect_close(gc[0], ge[0]);
    expect_close(gc[1], ge[1]);
  }
  CompileStats s = f.stats();
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.fallback_ops, 2);  // the Function forward and its Node in backward
  EXPECT_GT(s.forward_kernels, 0);
  EXPECT_NE(f.dump().find("step 1: eager 'OpaqueCube'"), std::string::npos) << f.dump();
}

TEST(CompileSmoke, DataDependentReadRunsEagerly) {
  CompiledFunction f = compile([](const std::vector<Tensor>& in) {
    double m = in[0].max().item<float>();  // C++ control flow on tensor data
    return m > 0 ? in[0] * 2.0 : in[0] * -1.0;
  });
  Tensor pos = from_vector<float>({1, 2}, {2});
  Tensor neg = from_vector<float>({-1, -2}, {2});
  EXPECT_EQ(f({pos})[0].to_vector<float>(), (std::vector<float>{2, 4}));
  EXPECT_EQ(f({neg})[0].to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(f.stats().eager_calls, 2);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// An op flagged non-traceable (as an op with data-dependent output shapes would be) is a graph
// break: it runs eagerly between compiled segments. No op of the table needs the flag today, so
// the test flags `sign` for its duration.
TEST(CompileSmoke, NonTraceableOpIsAGraphBreak) {
  OpDef& sign = OpTable::instance().mutable_op("sign");
  struct Restore {
    OpDef& op;
    ~Restore() { op.flags &= ~static_cast<uint32_t>(kNonTraceable); }
  } restore{sign};
  sign.flags |= kNonTraceable;
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = in[0].exp();
    return std::vector<Tensor>{(a.sign() * a).sum()};
  };
  CompiledFunction f = compile(fn);
  for (int call = 0; call < 2; ++call) {
    Tensor x = randn({5}).requires_grad_();
    Tensor eager = fn({x})[0];
    Tensor ge = autograd::grad({eager}, {x})[0];
    Tensor compiled = f({x})[0];
    expect_close(compiled, eager);
    expect_close(autograd::grad({compiled}, {x})[0], ge);
  }
  EXPECT_GE(f.stats().fallback_ops, 1);
  EXPECT_NE(f.dump().find("eager 'sign'"), std::string::npos) << f.dump();
}

}  // namespace
}  // namespace kiln
