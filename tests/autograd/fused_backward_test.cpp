// The fused normalization backwards against their Tensor-op formulas (Note [Fused
// normalization backward]): the same gradients from a plain backward (the fused op) and from a
// backward with create_graph (the formula), across dims, layouts, dtypes and gradients that are
// views; and where each runs: trace() records the fused op, compile() the formula, and the
// gradient of a create_graph backward is differentiable again.
#include <string>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/op_table.h"
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

Tensor input(const Shape& sizes, DType dtype, uint64_t seed, double scale = 1.0) {
  kiln::manual_seed(seed);
  return (kiln::randn(sizes, kiln::kFloat64) * scale).to(dtype).requires_grad_();
}

using Fn = std::function<Tensor(const Tensor&)>;

// d(fn(x) * g)/dx by the fused op (plain backward) and by the formula (create_graph), compared
// in float64 within tol; `g` is the gradient that reaches fn's output.
void expect_same_gradients(const Fn& fn, const Tensor& x, const Tensor& g, double tol,
                           const std::string& what) {
  SCOPED_TRACE(what);
  Tensor y = fn(x);
  Tensor fused = kiln::autograd::grad({y}, {x}, {g}, /*retain_graph=*/true)[0];
  Tensor formula =
      kiln::autograd::grad({y}, {x}, {g}, /*retain_graph=*/false, /*create_graph=*/true)[0];
  EXPECT_FALSE(fused.requires_grad());
  EXPECT_TRUE(formula.requires_grad()) << "create_graph runs the differentiable formula";
  EXPECT_EQ(fused.dtype(), formula.dtype());
  EXPECT_EQ(fused.sizes(), formula.sizes());
  EXPECT_TRUE(all_close(read_doubles(fused.to(kiln::kFloat64)),
                        read_doubles(formula.detach().to(kiln::kFloat64)), tol, tol));
}

double tol_of(DType t) {
  switch (t) {
    case kiln::kFloat64:
      return 1e-12;
    case kiln::kFloat32:
      return 1e-5;
    default:
      return 2e-2;  // the formula rounds to the 16-bit type between its ops; the fused op once
  }
}

const DType kTypes[] = {kiln::kFloat64, kiln::kFloat32, kiln::kFloat16, kiln::kBFloat16};

TEST(FusedBackward, SoftmaxAndLogSoftmaxMatchTheFormula) {
  for (DType dt : kTypes) {
    for (int64_t dim : {0, 1, -1}) {
      Tensor x = input({6, 40, 5}, dt, 1);
      Tensor g = input({6, 40, 5}, dt, 2).detach();
      expect_same_gradients([dim](const Tensor& t) { return kiln::softmax(t, dim); }, x, g,
                            tol_of(dt), fmt::format("softmax {} dim {}", dt, dim));
      expect_same_gradients([dim](const Tensor& t) { return kiln::log_softmax(t, dim); }, x, g,
                            tol_of(dt), fmt::format("log_softmax {} dim {}", dt, dim));
    }
  }
}

TEST(FusedBackward, GradientsThatAreViews) {
  Tensor x = input({8, 33}, kiln::kFloat32, 3);
  // An expanded gradient (stride 0), as sum's backward gives, and a transposed one.
  Tensor expanded = input({1, 33}, kiln::kFloat32, 4).detach().expand({8, 33});
  Tensor transposed = input({33, 8}, kiln::kFloat32, 5).detach().transpose(0, 1);
  for (const Tensor& g : {expanded, transposed}) {
    expect_same_gradients([](const Tensor& t) { return kiln::softmax(t, 1); }, x, g, 1e-5,
                          "softmax");
    expect_same_gradients([](const Tensor& t) { return kiln::log_softmax(t, 0); }, x, g, 1e-5,
                          "log_softmax");
    expect_same_gradients([](const Tensor& t) { return kiln::layer_norm(t, {33}); }, x, g, 1e-5,
                          "layer_norm");
  }
}

TEST(FusedBackward, LayerNormMatchesTheFormulaForEveryInput) {
  for (DType dt : kTypes) {
    Tensor x = input({4, 3, 50}, dt, 6, 3.0);
    Tensor w = input({3, 50}, dt, 7), b = input({3, 50}, dt, 8);
    Tensor g = input({4, 3, 50}, dt, 9).detach();
    auto grads = [&](bool create_graph) {
      Tensor y = kiln::layer_norm(x, {3, 50}, w, b, 1e-3);
      std::vector<Tensor> r = kiln::autograd::grad({y}, {x, w, b}, {g}, false, create_graph);
      for (Tensor& t : r)
        t = t.detach().to(kiln::kFloat64);
      return r;
    };
    std::vector<Tensor> fused = grads(false), formula = grads(true);
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(
          all_close(read_doubles(fused[i]), read_doubles(formula[i]), tol_of(dt), tol_of(dt)))
          << dt << " gradient " << i;
  }
}

TEST(FusedBackward, WeightWithoutGradientAndInputWithout) {
  Tensor x = input({5, 16}, kiln::kFloat32, 10);
  Tensor w = input({16}, kiln::kFloat32, 11).detach();  // a frozen weight
  Tensor y = kiln::layer_norm(x, {16}, w, Tensor());
  Tensor gx = kiln::autograd::grad({y.sum()}, {x})[0];
  Tensor x2 = x.detach().clone().requires_grad_();
  Tensor ref = kiln::autograd::grad({kiln::layer_norm(x2, {16}, w, Tensor()).sum()}, {x2}, {},
                                    false, true)[0];
  EXPECT_TRUE(all_close(read_doubles(gx), read_doubles(ref.detach()), 1e-5, 1e-5));
  // Only the weight requires grad: the fused op still runs (it reads x), dx is not returned.
  Tensor w2 = w.clone().requires_grad_();
  Tensor gw =
      kiln::autograd::grad({kiln::layer_norm(x.detach(), {16}, w2, Tensor()).sum()}, {w2})[0];
  Tensor gw_ref = kiln::autograd::grad({kiln::layer_norm(x.detach(), {16}, w2, Tensor()).sum()},
                                       {w2}, {}, false, true)[0];
  EXPECT_TRUE(all_close(read_doubles(gw), read_doubles(gw_ref.detach()), 1e-5, 1e-5));
}

// Enough rows that the CPU kernels split them across the thread pool (scripts/tsan.sh runs
// this test under ThreadSanitizer): the same gradients as the formula.
TEST(FusedBackward, RowsSplitAcrossThreads) {
  Tensor x = input({96, 2048}, kiln::kFloat32, 13);
  Tensor g = input({96, 2048}, kiln::kFloat32, 14).detach();
  expect_same_gradients([](const Tensor& t) { return kiln::softmax(t, 1); }, x, g, 1e-5, "softmax");
  expect_same_gradients([](const Tensor& t) { return kiln::log_softmax(t, 1); }, x, g, 1e-5,
                        "log_softmax");
  Tensor w = input({2048}, kiln::kFloat32, 15);
  expect_same_gradients([&](const Tensor& t) { return kiln::layer_norm(t, {2048}, w, Tensor()); },
                        x, g, 1e-5, "layer_norm");
}

// trace() records the fused op that eager runs; compile() traces the formula for fusion.
TEST(FusedBackward, TraceRecordsTheFusedOpAndCompileTheFormula) {
  auto step = [](const std::vector<Tensor>& in) {
    Tensor y = kiln::layer_norm(kiln::softmax(in[0], 1), {12});
    return kiln::autograd::grad({y.sum()}, {in[0]});
  };
  Tensor x = input({3, 12}, kiln::kFloat32, 12);
  kiln::TracedFunction traced = kiln::trace(step, {x});
  std::string text = traced.str();
  EXPECT_NE(text.find("softmax_backward("), std::string::npos) << text;
  EXPECT_NE(text.find("layer_norm_backward("), std::string::npos) << text;

  kiln::CompiledFunction compiled = kiln::compile(step);
  std::vector<Tensor> got = compiled({x});
  std::string dump = compiled.dump();
  EXPECT_EQ(dump.find("softmax_backward("), std::string::npos) << dump;
  EXPECT_EQ(dump.find("layer_norm_backward("), std::string::npos) << dump;
  EXPECT_TRUE(all_close(read_doubles(got[0]), read_doubles(step({x})[0]), 1e-5, 1e-6));
}

TEST(FusedBackward, BadInputsNameTheOp) {
  Tensor g = kiln::ones({3, 4}), y = kiln::ones({3, 5});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::call_op1(kiln::get_op("softmax_backward"), {g, y}, kiln::SoftmaxAttrs{1});
      },
      {"softmax_backward", "[3, 4]", "[3, 5]"}));
  Tensor y64 = kiln::ones({3, 4}, kiln::kFloat64);
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::call_op1(kiln::get_op("log_softmax_backward"), {g, y64}, kiln::SoftmaxAttrs{1});
      },
      {"log_softmax_backward", "float64"}));
  kiln::LayerNormAttrs a{{5}, 1e-5, false, false};
  EXPECT_TRUE(throws_error_containing(
      [&] {
        std::vector<Tensor> in{kiln::ones({3, 4}), kiln::ones({3, 4})};
        kiln::call_op(kiln::get_op("layer_norm_backward"), in, &a);
      },
      {"layer_norm_backward", "[5]", "[3, 4]"}));
}

}  // namespace
}  // namespace kiln_test
