// Second-order checks of the non-pointwise derivative formulas (gradgradcheck: the backward
// pass is itself differentiated through create_graph), a gradient penalty through an MLP, and
// the gradient values that finite differences cannot pin down: ties of amax/amin, the index
// routing of max/min over a dim, prod at zeros, ignored nll_loss targets and dropout's mask.
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln::autograd::gradcheck;
using kiln::autograd::gradgradcheck;
using Fn = kiln::autograd::GradcheckFn;

// A float64 leaf with values from a fixed normal stream.
Tensor leaf(const Shape& sizes, uint64_t seed, double scale = 1.0) {
  kiln::manual_seed(seed);
  return (kiln::randn(sizes, kiln::kFloat64) * scale).requires_grad_();
}

Tensor leaf_of(const std::vector<double>& values, const Shape& sizes) {
  return kiln::from_vector(values, sizes, kiln::kFloat64).requires_grad_();
}

Tensor index_tensor(const std::vector<int64_t>& values, const Shape& sizes) {
  return kiln::from_vector(values, sizes);
}

// The first and second order checks of one function.
void check_both(const Fn& fn, const std::vector<Tensor>& inputs) {
  EXPECT_TRUE(gradcheck(fn, inputs));
  EXPECT_TRUE(gradgradcheck(fn, inputs));
}

Fn unary(std::function<Tensor(const Tensor&)> f) {
  return [f](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0])}; };
}

TEST(NnGradGrad, Softmax) {
  check_both(unary([](const Tensor& x) { return kiln::softmax(x, 1); }), {leaf({3, 4}, 1)});
  check_both(unary([](const Tensor& x) { return kiln::softmax(x, 0); }), {leaf({3, 4}, 2)});
}

TEST(NnGradGrad, LogSoftmax) {
  check_both(unary([](const Tensor& x) { return kiln::log_softmax(x, -1); }), {leaf({3, 4}, 3)});
  check_both(unary([](const Tensor& x) { return kiln::log_softmax(x, 0); }), {leaf({2, 3, 2}, 4)});
}

TEST(NnGradGrad, LayerNormAffine) {
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::layer_norm(in[0], {4}, in[1], in[2])};
  };
  check_both(fn, {leaf({3, 4}, 5), leaf({4}, 6), leaf({4}, 7)});
}

TEST(NnGradGrad, LayerNormWithoutAffineOverTwoDims) {
  check_both(unary([](const Tensor& x) {
               return kiln::layer_norm(x, {2, 3});
             }),
             {leaf({2, 2, 3}, 8)});
}

TEST(NnGradGrad, LayerNormBiasOnly) {
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::layer_norm(in[0], {3}, Tensor(), in[1])};
  };
  check_both(fn, {leaf({2, 3}, 9), leaf({3}, 10)});
}

TEST(NnGradGrad, Mm) {
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{kiln::mm(in[0], in[1])}; };
  check_both(fn, {leaf({3, 4}, 11), leaf({4, 2}, 12)});
}

TEST(NnGradGrad, Bmm) {
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::bmm(in[0], in[1])};
  };
  check_both(fn, {leaf({2, 3, 2}, 13), leaf({2, 2, 3}, 14)});
}

// Transposed (column-major) operands take the layout-preserving formulas of Note [Gradient
// layout of a product]; the derivatives must be the same.
TEST(NnGradGrad, MmAndBmmWithTransposedOperands) {
  Fn mm_t = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::mm(in[0].t(), in[1].t())};
  };
  check_both(mm_t, {leaf({4, 3}, 15), leaf({2, 4}, 16)});
  Fn bmm_t = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::bmm(in[0].transpose(1, 2), in[1].transpose(1, 2))};
  };
  check_both(bmm_t, {leaf({2, 2, 3}, 17), leaf({2, 3, 2}, 18)});
}

TEST(NnGradGrad, SumAndMean) {
  check_both(unary([](const Tensor& x) { return kiln::sum(x); }), {leaf({3, 4}, 15)});
  check_both(unary([](const Tensor& x) { return kiln::sum(x, {0, -1}); }), {leaf({2, 3, 2}, 16)});
  check_both(unary([](const Tensor& x) { return kiln::mean(x, {1}, true); }), {leaf({3, 4}, 17)});
  // The gradient of a sum fed into a product: the expanded gradient is used again.
  check_both(unary([](const Tensor& x) { return kiln::mean(x, {0}) * kiln::sum(x * x, {0}); }),
             {leaf({3, 2}, 18)});
}

TEST(NnGradGrad, Var) {
  check_both(unary([](const Tensor& x) { return kiln::var(x); }), {leaf({3, 4}, 19)});
  check_both(unary([](const Tensor& x) { return kiln::var(x, {1}, 0); }), {leaf({3, 4}, 20)});
  check_both(unary([](const Tensor& x) {
               return kiln::var(x, {0, 2}, 1.5, true);
             }),
             {leaf({2, 3, 3}, 21)});
}

TEST(NnGradGrad, Logsumexp) {
  check_both(unary([](const Tensor& x) { return kiln::logsumexp(x, {1}); }), {leaf({3, 4}, 22)});
  check_both(unary([](const Tensor& x) { return kiln::logsumexp(x); }), {leaf({2, 3}, 23)});
}

TEST(NnGradGrad, CrossEntropy) {
  Tensor target = index_tensor({1, 0, 4, -100}, {4});
  for (std::string reduction : {"mean", "sum", "none"}) {
    SCOPED_TRACE(reduction);
    Fn fn = [target, reduction](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{kiln::cross_entropy(in[0], target, reduction)};
    };
    check_both(fn, {leaf({4, 5}, 24)});
  }
  Fn one_row = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::cross_entropy(in[0], index_tensor({2}, {}))};
  };
  check_both(one_row, {leaf({5}, 25)});
}

TEST(NnGradGrad, SliceSelectAndTheirBackwards) {
  // Products of views: the second derivative runs slice_backward's and select_backward's own
  // derivatives.
  check_both(unary([](const Tensor& x) { return x.slice(1, 0, 4, 2) * x.slice(1, 1, 4, 2); }),
             {leaf({3, 4}, 26)});
  check_both(unary([](const Tensor& x) { return x.select(0, 1) * x.select(0, -1); }),
             {leaf({3, 4}, 27)});
}

TEST(NnGradGrad, CatExpandPermute) {
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor c = kiln::cat({in[0], in[1] * in[1]}, 1);
    return std::vector<Tensor>{c.permute({1, 0}) * in[0].sum({1}, true).expand({2, 5}).t()};
  };
  check_both(fn, {leaf({2, 2}, 28), leaf({2, 3}, 29)});
}

TEST(NnGradGrad, Indexing) {
  Tensor idx = index_tensor({2, 0, 2}, {3});
  Fn select_fn = [idx](const std::vector<Tensor>& in) {
    Tensor s = kiln::index_select(in[0], 1, idx);
    return std::vector<Tensor>{s * s};
  };
  check_both(select_fn, {leaf({2, 3}, 30)});

  Tensor rows = index_tensor({1, 1, 0, 3}, {2, 2});
  Fn embed_fn = [rows](const std::vector<Tensor>& in) {
    Tensor e = kiln::embedding(in[0], rows);
    return std::vector<Tensor>{e * e};
  };
  check_both(embed_fn, {leaf({4, 3}, 31)});

  Tensor gidx = index_tensor({0, 2, 1, 1}, {2, 2});
  Fn gather_fn = [gidx](const std::vector<Tensor>& in) {
    Tensor g = kiln::gather(in[0], 1, gidx);
    return std::vector<Tensor>{g * g};
  };
  check_both(gather_fn, {leaf({3, 3}, 32)});

  // index smaller than src in both dims: src's unused elements get a zero gradient.
  Tensor sidx = index_tensor({0, 2, 2, 1}, {2, 2});
  Fn scatter_fn = [sidx](const std::vector<Tensor>& in) {
    Tensor s = kiln::scatter_add(in[0], 0, sidx, in[1] * in[1]);
    return std::vector<Tensor>{s * s};
  };
  check_both(scatter_fn, {leaf({3, 3}, 33), leaf({3, 4}, 34)});
}

TEST(NnGradGrad, MaxMinOverDim) {
  check_both(unary([](const Tensor& x) { return std::get<0>(kiln::max(x, 1)); }),
             {leaf({3, 4}, 35)});
  check_both(unary([](const Tensor& x) { return std::get<0>(kiln::min(x, 0, true)); }),
             {leaf({3, 4}, 36)});
}

TEST(NnGradGrad, ProdWithAndWithoutZeros) {
  check_both(unary([](const Tensor& x) { return kiln::prod(x, {1}); }), {leaf({3, 4}, 37)});
  // Rows with no zero, one zero and two zeros, and the whole tensor with three: prod is a
  // polynomial, so finite differences are exact enough there too.
  Tensor x = leaf_of({1.5, -2, 0.5, 0, 3, 2, 0, 1, 0}, {3, 3});
  check_both(unary([](const Tensor& t) { return kiln::prod(t, {1}); }), {x});
  check_both(unary([](const Tensor& t) { return kiln::prod(t); }), {x});
}

// f(x) = sum(tanh(x W1) W2); the penalty ||df/dx||^2 is differentiated w.r.t. x and the
// weights, which takes the second derivatives of mm, tanh and sum.
TEST(NnGradGrad, GradientPenalty) {
  Fn penalty = [](const std::vector<Tensor>& in) {
    // gradcheck's finite differences call this without grad mode; the inner gradient still
    // needs its graph.
    kiln::EnableGradGuard enable;
    const Tensor &x = in[0], &w1 = in[1], &w2 = in[2];
    Tensor f = kiln::sum(kiln::mm(kiln::tanh(kiln::mm(x, w1)), w2));
    Tensor dx = kiln::autograd::grad({f}, {x}, {}, /*retain_graph=*/true,
                                     /*create_graph=*/true)[0];
    return std::vector<Tensor>{kiln::sum(dx * dx)};
  };
  std::vector<Tensor> inputs = {leaf({3, 4}, 40), leaf({4, 5}, 41, 0.5), leaf({5, 2}, 42)};
  EXPECT_TRUE(gradcheck(penalty, inputs));

  // The penalty's gradient drives the weights: it must be nonzero and finite.
  Tensor loss = penalty(inputs)[0];
  std::vector<Tensor> g = kiln::autograd::grad({loss}, {inputs[1], inputs[2]});
  for (const Tensor& t : g) {
    double norm = kiln::sum(t * t).item<double>();
    EXPECT_TRUE(std::isfinite(norm));
    EXPECT_GT(norm, 0);
  }
}

TEST(NnGradValues, AmaxAminShareTiesEvenly) {
  Tensor x = leaf_of({1, 3, 3, 2, 2, -1}, {2, 3});
  kiln::amax(x, {1}).sum().backward();
  EXPECT_ALL_CLOSE(read_doubles(x.grad()), (std::vector<double>{0, 0.5, 0.5, 0.5, 0.5, 0}), 0, 0);
  Tensor y = leaf_of({1, 3, 1, 2}, {4});
  kiln::min(y).backward();
  EXPECT_ALL_CLOSE(read_doubles(y.grad()), (std::vector<double>{0.5, 0, 0.5, 0}), 0, 0);
}

TEST(NnGradValues, MaxOverDimRoutesToTheFirstIndex) {
  Tensor x = leaf_of({1, 3, 3, 2, 5, -1}, {2, 3});
  auto [values, indices] = kiln::max(x, 1);
  (values * kiln::from_vector<double>({10, 20})).sum().backward();
  EXPECT_ALL_CLOSE(read_doubles(x.grad()), (std::vector<double>{0, 10, 0, 0, 20, 0}), 0, 0);

  Tensor y = leaf_of({4, 1, 0, 2}, {2, 2});
  auto [mins, at] = kiln::min(y, 0, true);
  mins.sum().backward();
  EXPECT_ALL_CLOSE(read_doubles(y.grad()), (std::vector<double>{0, 1, 1, 0}), 0, 0);
}

TEST(NnGradValues, ProdAtZeros) {
  Tensor x = leaf_of({2, 0, 3, 0, 0, 5, 4, 2, 1}, {3, 3});
  kiln::prod(x, {1}).sum().backward();
  // Row 0: one zero, which gets the product of the others (6). Row 1: two zeros, all 0.
  // Row 2: no zero, prod / x.
  EXPECT_ALL_CLOSE(read_doubles(x.grad()), (std::vector<double>{0, 6, 0, 0, 0, 0, 2, 4, 8}), 0, 0);
}

TEST(NnGradValues, NllLossIgnoredTargets) {
  Tensor logp = leaf({3, 4}, 50);
  Tensor target = index_tensor({2, -100, 0}, {3});
  kiln::nll_loss(logp, target).backward();
  EXPECT_ALL_CLOSE(read_doubles(logp.grad()),
                   (std::vector<double>{0, 0, -0.5, 0, 0, 0, 0, 0, -0.5, 0, 0, 0}), 0, 0);

  // Every target ignored: the loss is NaN (as torch) but the gradient is zero.
  Tensor all_ignored = leaf({2, 3}, 51);
  kiln::nll_loss(all_ignored, index_tensor({-100, -100}, {2})).backward();
  EXPECT_ALL_CLOSE(read_doubles(all_ignored.grad()), std::vector<double>(6, 0.0), 0, 0);

  Tensor custom = leaf({2, 3}, 52);
  kiln::nll_loss(custom, index_tensor({1, 2}, {2}), "none", 1)
      .backward(kiln::from_vector<double>({7, 9}));
  EXPECT_ALL_CLOSE(read_doubles(custom.grad()), (std::vector<double>{0, 0, 0, 0, 0, -9}), 0, 0);
}

// linear computes x @ w.t(); the weight's gradient g^T x must reach .grad contiguous, laid out
// as w is, and equal the sum over the batch written as a loop.
TEST(NnGradValues, LinearWeightGradientIsContiguousAndExact) {
  const int64_t batch = 5, in_f = 4, out_f = 3;
  Tensor x = leaf({batch, in_f}, 63).detach();
  Tensor w = leaf({out_f, in_f}, 64);
  Tensor g = leaf({batch, out_f}, 65).detach();
  Tensor wt = w.t();
  Tensor y = kiln::mm(x, wt);
  // The gradient of the column-major operand w.t() is column-major itself (AccumulateGrad
  // would hide a strided one behind a copy).
  Tensor dwt = kiln::autograd::grad({y}, {wt}, {g}, /*retain_graph=*/true)[0];
  EXPECT_EQ(dwt.stride(0), 1);
  EXPECT_EQ(dwt.stride(1), in_f);
  y.backward(g);
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(w.grad().is_contiguous());
  std::vector<double> xs = read_doubles(x), gs = read_doubles(g), expected;
  for (int64_t o = 0; o < out_f; ++o) {
    for (int64_t i = 0; i < in_f; ++i) {
      double sum = 0;
      for (int64_t b = 0; b < batch; ++b)
        sum += gs[b * out_f + o] * xs[b * in_f + i];
      expected.push_back(sum);
    }
  }
  EXPECT_ALL_CLOSE(read_doubles(w.grad()), expected, 1e-12, 1e-12);
}

TEST(NnGradValues, DropoutReplaysTheForwardMask) {
  Tensor x = leaf({4, 5}, 60);
  Tensor y = kiln::dropout(x, 0.4);
  Tensor g = leaf({4, 5}, 61).detach();
  y.backward(g);
  // y = x * mask / 0.6, so x.grad = g * mask / 0.6 = g * y / x.
  std::vector<double> xs = read_doubles(x), ys = read_doubles(y), gs = read_doubles(g);
  std::vector<double> expected;
  for (size_t i = 0; i < xs.size(); ++i)
    expected.push_back(gs[i] * ys[i] / xs[i]);
  EXPECT_ALL_CLOSE(read_doubles(x.grad()), expected, 1e-12, 1e-12);

  // With the seed fixed inside the function, dropout is a fixed linear map that gradcheck and
  // gradgradcheck can differentiate.
  Fn fn = [](const std::vector<Tensor>& in) {
    kiln::manual_seed(123);
    Tensor d = kiln::dropout(in[0], 0.3);
    return std::vector<Tensor>{d * d};
  };
  check_both(fn, {leaf({3, 4}, 62)});
}

}  // namespace
}  // namespace kiln_test
