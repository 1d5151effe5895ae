// Custom autograd Functions and checkpoint, checked against closed-form gradients and against
// the same computation without them.
#include <any>
#include <cmath>

#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
namespace ag = kiln::autograd;
using ag::AutogradContext;
using ag::variable_list;

Tensor vec(std::vector<float> v) {
  return kiln::from_vector(v, {static_cast<int64_t>(v.size())}, kiln::requires_grad());
}
std::vector<float> values(const Tensor& t) {
  return t.to_vector<float>();
}

// y = x * c with a non-tensor argument and saved data.
struct MulConstant : ag::Function<MulConstant> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double c) {
    EXPECT_FALSE(kiln::GradMode::is_enabled());  // forward runs without recording
    ctx->saved_data["c"] = c;
    return x * c;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    double c = std::any_cast<double>(ctx->saved_data["c"]);
    return {grads[0] * c, Tensor()};  // one per argument; none for the double
  }
};

TEST(CustomFunction, NonTensorArgumentAndSavedData) {
  Tensor x = vec({1, 2});
  Tensor y = MulConstant::apply(x, 3.0);
  EXPECT_EQ(y.grad_fn()->name(), "MulConstant");
  EXPECT_FALSE(y.grad_fn()->is_traceable());  // opaque unless declared traceable
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{3, 3}));
}

// z = x * y, saving both inputs; gradients only where needed.
struct MyMul : ag::Function<MyMul> {
  static constexpr bool is_traceable = true;
  static inline int backward_calls = 0;
  static inline bool needed_x = false, needed_y = false;
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& y) {
    ctx->save_for_backward({x, y});
    return x * y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    ++backward_calls;
    needed_x = ctx->needs_input_grad(0);
    needed_y = ctx->needs_input_grad(1);
    variable_list saved = ctx->get_saved_variables();
    return {needed_x ? grads[0] * saved[1] : Tensor(), needed_y ? grads[0] * saved[0] : Tensor()};
  }
};

TEST(CustomFunction, SaveForBackwardAndNeedsInputGrad) {
  Tensor x = vec({1, 2});
  Tensor y = kiln::from_vector<float>({5, 7});  // no grad
  Tensor z = MyMul::apply(x, y);
  EXPECT_TRUE(z.grad_fn()->is_traceable());
  z.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{5, 7}));
  EXPECT_TRUE(MyMul::needed_x);
  EXPECT_FALSE(MyMul::needed_y);
}

TEST(CustomFunction, SavedInputModifiedInPlaceIsReported) {
  Tensor x = vec({1, 2});
  Tensor h = x * 1.0;
  Tensor y = vec({3, 4});
  Tensor z = MyMul::apply(h, y);
  h.add_(1.0);
  EXPECT_TRUE(throws_error_containing([&] { z.sum().backward(); },
                                      {"modified by an inplace operation", "MyMul"}));
}

TEST(CustomFunction, SecondOrderThroughAFunctionWrittenWithOps) {
  Tensor x = vec({1, 2});
  Tensor z = MyMul::apply(x, x);  // x^2
  Tensor g = ag::grad({z.sum()}, {x}, {}, false, true)[0];
  EXPECT_EQ(values(g), (std::vector<float>{2, 4}));
  Tensor g2 = ag::grad({g.sum()}, {x})[0];
  EXPECT_EQ(values(g2), (std::vector<float>{2, 2}));
}

// Returns (values, argmax) and marks the argmax non-differentiable.
struct SortedPair : ag::Function<SortedPair> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    Tensor idx = x.argmax();
    Tensor doubled = x * 2.0;
    Tensor idx_f = idx.to(kiln::kFloat32);
    ctx->mark_non_differentiable({idx_f});
    return {doubled, idx_f};
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    EXPECT_EQ(values(grads[1]), (std::vector<float>{0}));  // materialized zeros
    return {grads[0] * 2.0};
  }
};

TEST(CustomFunction, MarkNonDifferentiable) {
  Tensor x = vec({1, 5, 2});
  variable_list out = SortedPair::apply(x);
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  out[0].sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 2, 2}));
}

struct WrongCount : ag::Function<WrongCount> {
  static Tensor forward(AutogradContext*, const Tensor& x, const Tensor& y) { return x + y; }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0]}; }
};

TEST(CustomFunction, WrongNumberOfGradientsIsAnError) {
  Tensor x = vec({1});
  Tensor y = vec({2});
  Tensor z = WrongCount::apply(x, y);
  EXPECT_TRUE(throws_error_containing([&] { z.sum().backward(); },
                                      {"WrongCount", "returned 1 gradients", "2 tensor inputs"}));
}

// Adds one to x in place and returns it: x's history moves to this Function's Node.
struct AddOneInPlace : ag::Function<AddOneInPlace> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    x.add_(1);
    ctx->mark_dirty({x});
    return x;
  }
  // 3 * grad: not the true derivative (1), so the test sees that this backward ran.
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0] * 3}; }
};

TEST(CustomFunction, MarkDirtyRebasesTheInputsHistory) {
  Tensor leaf = vec({1, 2});
  Tensor x = leaf * 2;
  Tensor y = AddOneInPlace::apply(x);
  EXPECT_TRUE(y.is_same(x));  // the input itself, not an alias
  EXPECT_EQ(x.grad_fn()->name(), "AddOneInPlace");
  EXPECT_EQ(values(x), (std::vector<float>{3, 5}));
  y.sum().backward();
  EXPECT_EQ(values(leaf.grad()), (std::vector<float>{6, 6}));  // 3 * d(2 leaf)/d leaf
}

TEST(CustomFunction, MarkDirtyOnALeafThatRequiresGradIsAnError) {
  Tensor leaf = vec({1, 2});
  EXPECT_TRUE(throws_error_containing([&] { AddOneInPlace::apply(leaf); },
                                      {"AddOneInPlace", "a leaf Variable that requires grad"}));
}

// x += y in place on the second argument, with the true derivatives.
struct AddIntoSecond : ag::Function<AddIntoSecond> {
  static Tensor forward(AutogradContext* ctx, const Tensor& y, const Tensor& x) {
    x.add_(y);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], grads[0]};
  }
};

// As libtorch: the view's base b gets a CopySlices history that runs the Function's backward
// for the view's elements and passes the gradient through elsewhere.
TEST(CustomFunction, MarkDirtyOnAViewRewritesTheBasesHistory) {
  Tensor leaf = vec({1, 2, 3, 4});
  Tensor b = leaf * 2;
  Tensor v = b.slice(0, 1, 3);
  Tensor y = AddOneInPlace::apply(v);
  EXPECT_TRUE(y.is_same(v));
  EXPECT_EQ(b.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(values(b), (std::vector<float>{2, 5, 7, 8}));
  Tensor weights = kiln::from_vector<float>({1, 10, 100, 1000});
  (b * weights).sum().backward();
  // d b / d leaf = 2; the made-up backward triples the view's elements' gradient.
  EXPECT_EQ(values(leaf.grad()), (std::vector<float>{2, 60, 600, 2000}));
}

TEST(CustomFunction, MarkDirtyOnAViewThatIsNotTheFirstInput) {
  Tensor leaf = vec({1, 2, 3, 4});
  Tensor y = vec({5, 6});
  Tensor b = leaf * 1;
  Tensor v = b.slice(0, 1, 3);
  AddIntoSecond::apply(y, v);
  EXPECT_EQ(values(b), (std::vector<float>{1, 7, 9, 4}));
  Tensor weights = kiln::from_vector<float>({1, 10, 100, 1000});
  (b * weights).sum().backward();
  EXPECT_EQ(values(leaf.grad()), (std::vector<float>{1, 10, 100, 1000}));
  EXPECT_EQ(values(y.grad()), (std::vector<float>{10, 100}));
  // The view reads its new history from the base: its gradient path runs through CopySlices.
  Tensor leaf2 = vec({1, 2, 3, 4});
  Tensor v2 = (leaf2 * 1).slice(0, 0, 2);
  AddIntoSecond::apply(vec({1, 1}), v2);
  (v2 * 3).sum().backward();
  EXPECT_EQ(values(leaf2.grad()), (std::vector<float>{3, 3, 0, 0}));
}

struct AddOneInPlaceTwoOutputs : ag::Function<AddOneInPlaceTwoOutputs> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    x.add_(1);
    ctx->mark_dirty({x});
    return {x, x * 2};
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0]}; }
};

TEST(CustomFunction, MarkDirtyOnAViewWithTwoOutputsIsAnError) {
  Tensor b = vec({1, 2, 3}) * 1;
  Tensor v = b.slice(0, 0, 2);
  EXPECT_TRUE(throws_error_containing([&] { AddOneInPlaceTwoOutputs::apply(v); },
                                      {"AddOneInPlaceTwoOutputs", "cannot return more than one"}));
}

TEST(CustomFunction, MarkDirtyOnAViewOfALeafIsAnError) {
  Tensor leaf = vec({1, 2, 3});
  Tensor v = leaf.slice(0, 0, 2);
  EXPECT_TRUE(throws_error_containing([&] { AddOneInPlace::apply(v); },
                                      {"AddOneInPlace", "a view of a leaf Variable"}));
}

TEST(CustomFunction, NoRecordingWithoutGrad) {
  Tensor x = kiln::from_vector<float>({1, 2});
  Tensor y = MulConstant::apply(x, 2.0);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(values(y), (std::vector<float>{2, 4}));
}

TEST(CustomFunction, GradcheckOfACustomFunction) {
  Tensor x = kiln::from_vector<double>({0.5, -1.0, 2.0}, {3}, kiln::requires_grad());
  Tensor y = kiln::from_vector<double>({1.5, 0.25, -3.0}, {3}, kiln::requires_grad());
  EXPECT_TRUE(ag::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{MyMul::apply(in[0], in[1])}; },
      {x, y}));
}

// ---- checkpoint ----

struct BlockConfig {
  double scale;
  std::string activation;
};

// A block with non-tensor inputs (a config struct, an int) and a non-tensor output (a count).
std::tuple<Tensor, int> block(const Tensor& x, const Tensor& w, BlockConfig cfg, int repeat) {
  Tensor h = x;
  for (int i = 0; i < repeat; ++i) {
    h = kiln::matmul(h, w) * cfg.scale;
    h = cfg.activation == "tanh" ? h.tanh() : h.sigmoid();
  }
  return {h, repeat};
}

TEST(Checkpoint, MatchesTheUncheckpointedGradientsWithNonTensorArguments) {
  kiln::manual_seed(3);
  Tensor x = kiln::randn({4, 3}, kiln::requires_grad());
  Tensor w = kiln::randn({3, 3}, kiln::requires_grad());
  BlockConfig cfg{0.7, "tanh"};
  auto [ref, n_ref] = block(x, w, cfg, 3);
  ref.sum().backward();
  std::vector<float> gx = values(x.grad()), gw = values(w.grad());
  x.mutable_grad() = Tensor();
  w.mutable_grad() = Tensor();

  auto [out, n] = kiln::checkpoint(block, x, w, cfg, 3);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(out.grad_fn()->name(), "CheckpointBackward");
  // Only the inputs are saved: the graph ends right at them.
  EXPECT_EQ(out.grad_fn()->num_outputs(), 2u);
  EXPECT_EQ(values(out), values(ref));
  out.sum().backward();
  EXPECT_ALL_CLOSE(values(x.grad()), gx, 1e-6, 1e-6);
  EXPECT_ALL_CLOSE(values(w.grad()), gw, 1e-6, 1e-6);
}

TEST(Checkpoint, DropoutIsReplayedWithTheSameMask) {
  kiln::manual_seed(11);
  Tensor x = kiln::randn({64}, kiln::requires_grad());
  auto fn = [](const Tensor& t, double p) { return kiln::dropout(t * 2.0, p, true); };
  Tensor out = kiln::checkpoint(fn, x, 0.5);
  out.sum().backward();
  // d out / dx = 2 * keep / (1 - p) = 4 where kept, 0 where dropped; kept <=> out != 0.
  std::vector<float> o = values(out), g = values(x.grad());
  for (size_t i = 0; i < o.size(); ++i)
    EXPECT_EQ(g[i], o[i] != 0.0f ? 4.0f : 0.0f) << i;
}

TEST(Checkpoint, VectorOutputsAndGradOfAnInputSubset) {
  Tensor a = vec({1, 2});
  Tensor b = vec({3, 4});
  auto fn = [](const std::vector<Tensor>& v) {
    return std::vector<Tensor>{v[0] * v[1], v[0] + v[1]};
  };
  std::vector<Tensor> out = kiln::checkpoint(fn, std::vector<Tensor>{a, b});
  Tensor loss = (out[0] + out[1]).sum();
  std::vector<Tensor> g = ag::grad({loss}, {a});
  EXPECT_EQ(values(g[0]), (std::vector<float>{4, 5}));  // b + 1
}

TEST(Checkpoint, InputModifiedInPlaceBeforeBackwardIsReported) {
  Tensor x = vec({1, 2});
  Tensor h = x * 1.0;
  Tensor out = kiln::checkpoint([](const Tensor& t) { return t.exp(); }, h);
  h.mul_(2.0);
  EXPECT_TRUE(throws_error_containing([&] { out.sum().backward(); },
                                      {"modified by an inplace operation", "CheckpointBackward"}));
}

}  // namespace
}  // namespace kiln_test
