// Second-order gradients of the pointwise derivative formulas: gradgradcheck (finite differences
// of the create_graph backward) on a representative subset, and a closed-form second derivative.
#include <cmath>

#include "kiln/frontend/gradcheck.h"
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
using Tensors = std::vector<Tensor>;

// A float64 leaf of shape `sizes` with values spread over [lo, hi], none at a kink or tie of
// the ops below (the spacing is irrational relative to the integers).
Tensor leaf(kiln::Shape sizes, double lo, double hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> data(static_cast<size_t>(ref_numel(sizes)));
  for (double& v : data)
    v = dist(gen);
  return kiln::from_vector(data, sizes, kiln::TensorOptions(kiln::kFloat64)).requires_grad_();
}

void expect_gradgrad(const kiln::autograd::GradcheckFn& fn, const Tensors& inputs) {
  EXPECT_TRUE(kiln::autograd::gradcheck(fn, inputs));
  EXPECT_TRUE(kiln::autograd::gradgradcheck(fn, inputs));
}

TEST(PointwiseGradGrad, Tanh) {
  expect_gradgrad([](const Tensors& in) { return Tensors{kiln::tanh(in[0])}; },
                  {leaf({3, 4}, -2, 2, 1)});
}

TEST(PointwiseGradGrad, Sigmoid) {
  expect_gradgrad([](const Tensors& in) { return Tensors{kiln::sigmoid(in[0])}; },
                  {leaf({3, 4}, -4, 4, 2)});
}

TEST(PointwiseGradGrad, MulBroadcast) {
  expect_gradgrad([](const Tensors& in) { return Tensors{kiln::mul(in[0], in[1])}; },
                  {leaf({3, 4}, -2, 2, 3), leaf({4}, -2, 2, 4)});
}

TEST(PointwiseGradGrad, DivBroadcast) {
  expect_gradgrad([](const Tensors& in) { return Tensors{kiln::div(in[0], in[1])}; },
                  {leaf({2, 3}, -2, 2, 5), leaf({2, 1}, 0.5, 2, 6)});
}

TEST(PointwiseGradGrad, PowTensorExponent) {
  expect_gradgrad([](const Tensors& in) { return Tensors{kiln::pow(in[0], in[1])}; },
                  {leaf({2, 3}, 0.5, 2, 7), leaf({2, 3}, -1.5, 2.5, 8)});
}

TEST(PointwiseGradGrad, PowScalarExponent) {
  for (double e : {3.0, 0.5, -1.5}) {
    SCOPED_TRACE(e);
    expect_gradgrad([e](const Tensors& in) { return Tensors{kiln::pow(in[0], e)}; },
                    {leaf({2, 3}, 0.5, 2, 9)});
  }
}

TEST(PointwiseGradGrad, GeluBothApproximations) {
  for (const char* approximate : {"none", "tanh"}) {
    SCOPED_TRACE(approximate);
    expect_gradgrad(
        [approximate](const Tensors& in) { return Tensors{kiln::gelu(in[0], approximate)}; },
        {leaf({3, 4}, -3, 3, 10)});
  }
}

TEST(PointwiseGradGrad, Silu) {
  expect_gradgrad([](const Tensors& in) { return Tensors{kiln::silu(in[0])}; },
                  {leaf({3, 4}, -3, 3, 11)});
}

TEST(PointwiseGradGrad, LogAndExp) {
  expect_gradgrad([](const Tensors& in) { return Tensors{kiln::log(in[0])}; },
                  {leaf({3, 4}, 0.3, 3, 12)});
  expect_gradgrad([](const Tensors& in) { return Tensors{kiln::exp(in[0])}; },
                  {leaf({3, 4}, -2, 2, 13)});
}

TEST(PointwiseGradGrad, WhereBroadcast) {
  Tensor cond = kiln::from_vector(std::vector<bool>{true, false, false, true, true, false}, {2, 3});
  // where is linear in its operands, so the second derivative goes through the product.
  expect_gradgrad(
      [cond](const Tensors& in) {
        return Tensors{kiln::where(cond, in[0] * in[0], kiln::tanh(in[1]))};
      },
      {leaf({2, 3}, -2, 2, 14), leaf({3}, -2, 2, 15)});
}

// The in-place twins share their out-of-place formulas. mul_ and div_ read a saved copy of self
// taken before the op, which must keep self's history for the second derivative to see it.
Tensor scaled_in_place(const Tensors& in, bool divide) {
  Tensor c = in[0].clone();
  if (divide) {
    kiln::div_(c, in[1]);
  } else {
    kiln::mul_(c, in[1]);
  }
  return c;
}

TEST(PointwiseGradGrad, InPlaceMulAndDiv) {
  for (bool divide : {false, true}) {
    SCOPED_TRACE(divide ? "div_" : "mul_");
    expect_gradgrad([divide](const Tensors& in) { return Tensors{scaled_in_place(in, divide)}; },
                    {leaf({2, 3}, -2, 2, 17), leaf({3}, 0.5, 2, 18)});
  }
}

// A chain of in-place ops on one tensor: each saves what it needs before the next one runs
// (relu_ saves its result, so it comes last).
TEST(PointwiseGradGrad, InPlaceChain) {
  expect_gradgrad(
      [](const Tensors& in) {
        Tensor c = in[0] * in[1];
        kiln::add_(c, in[1] * in[1], 2);
        kiln::masked_fill_(c, in[0] > 1, 0.25);
        kiln::clamp_(c, -1.5, 1.5);
        kiln::relu_(c);
        return Tensors{c};
      },
      {leaf({2, 3}, -2, 2, 19), leaf({3}, 0.5, 2, 20)});
}

// d^2/dx^2 tanh(x) = -2 tanh(x) (1 - tanh(x)^2), through create_graph.
TEST(PointwiseGradGrad, TanhSecondDerivativeClosedForm) {
  Tensor x = leaf({5}, -2, 2, 16);
  Tensor y = kiln::tanh(x);
  Tensor dy = kiln::autograd::grad({y}, {x}, {kiln::ones_like(y)}, /*retain_graph=*/true,
                                   /*create_graph=*/true)[0];
  ASSERT_TRUE(dy.requires_grad());
  Tensor d2y = kiln::autograd::grad({dy}, {x}, {kiln::ones_like(dy)})[0];
  std::vector<double> xs = x.to_vector<double>();
  std::vector<double> got = d2y.to_vector<double>();
  ASSERT_EQ(got.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    double t = std::tanh(xs[i]);
    EXPECT_NEAR(got[i], -2 * t * (1 - t * t), 1e-12) << "at x = " << xs[i];
  }
}

}  // namespace
}  // namespace kiln_test
