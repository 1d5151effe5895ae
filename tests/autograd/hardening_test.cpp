// Regression tests for autograd bugs found by probing (issue 34): gradients of ops with more
// than 64 inputs, retain_grad across in-place ops, undefined gradients through op Nodes, hooks
// that change a gradient's metadata, and the destruction of very long graphs.
#include <cmath>

#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
namespace ag = kiln::autograd;
using ag::AutogradContext;
using ag::variable_list;

Tensor leaf(std::vector<float> v) {
  return kiln::from_vector(v, {static_cast<int64_t>(v.size())}, kiln::requires_grad());
}

// Each of 100 stacked copies of x * 1 contributes 1 to x's gradient; a 64-bit mask gave 64.
TEST(AutogradHardening, StackOfOneHundredCopiesGivesEveryGradient) {
  Tensor x = leaf({1, 2});
  std::vector<Tensor> parts;
  for (int i = 0; i < 100; ++i)
    parts.push_back(x * 1.0);
  kiln::stack(parts).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{100, 100}));
}

// 100 separate leaves through cat, weighted so that each leaf's gradient is its own index.
TEST(AutogradHardening, CatOfOneHundredLeavesReachesEveryLeaf) {
  std::vector<Tensor> leaves;
  for (int i = 0; i < 100; ++i)
    leaves.push_back(leaf({1, 1}));
  std::vector<float> w;
  for (int i = 0; i < 100; ++i)
    w.insert(w.end(), {static_cast<float>(i), static_cast<float>(i)});
  Tensor weights = kiln::from_vector(w, {200});
  (kiln::cat(leaves) * weights).sum().backward();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(leaves[static_cast<size_t>(i)].grad().defined()) << "leaf " << i;
    EXPECT_EQ(leaves[static_cast<size_t>(i)].grad().to_vector<float>(),
              (std::vector<float>{static_cast<float>(i), static_cast<float>(i)}))
        << "leaf " << i;
  }
}

TEST(AutogradHardening, GradOfTheLastOfOneHundredCatInputs) {
  Tensor x = leaf({3});
  std::vector<Tensor> parts;
  for (int i = 0; i < 100; ++i)
    parts.push_back(x * static_cast<double>(i));
  Tensor out =
      (kiln::cat(parts) * kiln::arange(0, 100, 1, kiln::TensorOptions().dtype(kiln::kFloat32)))
          .sum();
  std::vector<Tensor> g = ag::grad({out}, {parts[99]});
  ASSERT_TRUE(g[0].defined());
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{99}));
}

// libtorch: .grad of a retained non-leaf is the gradient of its current version only.
TEST(AutogradHardening, RetainGradAfterInPlaceHoldsTheCurrentVersionOnly) {
  for (int writes : {1, 2}) {
    Tensor x = leaf({1, 1, 1});
    Tensor a = x * 1.0;
    a.retain_grad();
    for (int i = 0; i < writes; ++i)
      a.mul_(2);
    a.sum().backward();
    EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{1, 1, 1})) << writes << " writes";
    float want = writes == 1 ? 2.0f : 4.0f;
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{want, want, want}));
  }
}

// A backward that returns no gradient.
struct DropsGradient : ag::Function<DropsGradient> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static variable_list backward(AutogradContext*, variable_list) { return {Tensor()}; }
};

TEST(AutogradHardening, UndefinedGradientStaysUndefinedThroughOpNodes) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 3.0;  // an op Node between the custom Function and the leaf
  DropsGradient::apply(y).sum().backward();
  EXPECT_FALSE(x.grad().defined()) << "libtorch leaves .grad undefined when no gradient flowed";
}

TEST(AutogradHardening, LeafHookCannotChangeShapeDtypeOrDevice) {
  Tensor x = leaf({1, 2, 3});
  x.register_hook([](const Tensor&) { return kiln::ones({2, 2}); });
  try {
    (x * 2.0).sum().backward();
    FAIL() << "a hook returning another shape was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("changed the size"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(x.grad().defined());

  Tensor y = leaf({1, 2, 3});
  y.register_hook([](const Tensor& g) { return g.to(kiln::kFloat64); });
  try {
    (y * 2.0).sum().backward();
    FAIL() << "a hook returning another dtype was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("changed the type"), std::string::npos) << e.what();
  }

  // Changing values is what hooks are for.
  Tensor z = leaf({1, 2, 3});
  z.register_hook([](const Tensor& g) { return g * 10.0; });
  (z * 2.0).sum().backward();
  EXPECT_EQ(z.grad().to_vector<float>(), (std::vector<float>{20, 20, 20}));
}

TEST(AutogradHardening, NonLeafHookCannotChangeShape) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  y.register_hook([](const Tensor&) { return kiln::ones({3, 1}); });
  EXPECT_THROW((y * 2.0).sum().backward(), kiln::Error);
}

// Note [Iterative Node deletion]: destroying the head of a long chain must not recurse once per
// Node. A million Nodes overflow any default stack by plain recursion.
TEST(AutogradHardening, MillionNodeGraphIsDestroyedWithoutRecursion) {
  Tensor x = leaf({1});
  {
    Tensor y = x;
    for (int i = 0; i < 1'000'000; ++i)
      y = y * 1.0;
    EXPECT_EQ(y.item<float>(), 1.0f);
  }  // the whole chain goes here
  // Backward still works on a fresh chain after the big one went.
  Tensor y = x;
  for (int i = 0; i < 10; ++i)
    y = y * 2.0;
  y.backward();
  EXPECT_EQ(x.grad().item<float>(), 1024.0f);
}

}  // namespace
}  // namespace kiln_test
