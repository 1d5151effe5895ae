// In-place ops on views (Note [In-place ops on views], CopySlices) and the libtorch autograd
// names that go with them: detach_, set_data, is_view/_base, backward(inputs), the warning
// channel. Expected gradients are closed-form or float64 finite differences (gradcheck).
#include <vector>

#include "../compile/compare.h"
#include "kiln/base/warning.h"
#include "kiln/frontend/gradcheck.h"
#include "kiln/kiln.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
namespace ag = kiln::autograd;

Tensor leaf(std::vector<float> v, kiln::Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return kiln::from_vector(v, shape, kiln::requires_grad());
}

std::vector<float> values(const Tensor& t) {
  return t.contiguous().to_vector<float>();
}

struct Collect : kiln::WarningHandler {
  std::vector<std::string> messages;
  void process(const std::string& m) override { messages.push_back(m); }
};

TEST(InPlaceOnView, MulIntoASliceOfANonLeafReachesTheBaseAndTheOperand) {
  Tensor x = leaf({1, 2, 3, 4});
  Tensor w = leaf({5, 6});
  Tensor b = x * 2.0;
  b.slice(0, 0, 2).mul_(w);  // b = [2 x0 w0, 2 x1 w1, 2 x2, 2 x3]
  EXPECT_EQ(values(b), (std::vector<float>{10, 24, 6, 8}));
  EXPECT_EQ(b.grad_fn()->name(), "CopySlices");
  Tensor c = kiln::from_vector<float>({1, 2, 3, 4});
  (b * c).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{10, 24, 6, 8}));  // 2 w c, then 2 c
  EXPECT_EQ(values(w.grad()), (std::vector<float>{2, 8}));          // 2 x c
}

TEST(InPlaceOnView, CopyIntoABufferThatDoesNotRequireGrad) {
  Tensor x = leaf({7, 9});
  Tensor buf = kiln::zeros({4});
  buf.slice(0, 1, 3).copy_(x);
  EXPECT_TRUE(buf.requires_grad());
  EXPECT_FALSE(buf.is_leaf());
  Tensor c = kiln::from_vector<float>({1, 2, 3, 4});
  (buf * c).sum().backward();
  EXPECT_EQ(values(buf.detach()), (std::vector<float>{0, 7, 9, 0}));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 3}));
}

TEST(InPlaceOnView, TheViewTakesItsHistoryFromTheBase) {
  Tensor x = leaf({1, 2, 3});
  Tensor b = x * 1.0;
  Tensor v = b.slice(0, 1, 3);
  v.mul_(3.0);
  Tensor other = b.slice(0, 0, 2);  // a sibling view made after the write sees it too
  (v.sum() + other.sum()).backward();
  // v = 3 [x1, x2]; other = [x0, 3 x1]
  EXPECT_EQ(values(x.grad()), (std::vector<float>{1, 6, 3}));
}

TEST(InPlaceOnView, AnOlderSiblingViewFollowsTheWrite) {
  Tensor x = leaf({1, 2, 3});
  Tensor b = x * 1.0;
  Tensor older = b.slice(0, 0, 2);
  b.slice(0, 1, 3).mul_(5.0);
  older.sum().backward();  // older = [x0, 5 x1]
  EXPECT_EQ(values(x.grad()), (std::vector<float>{1, 5, 0}));
}

TEST(InPlaceOnView, ViewsOfViewsMatchFiniteDifferencesToSecondOrder) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor b = in[0] * 1.5;                     // 3x4
    Tensor v = b.transpose(0, 1).select(0, 2);  // column 2, length 3
    v.slice(0, 0, 2).mul_(in[1]);               // rows 0 and 1 of column 2
    b.select(0, 2).add_(in[1].sum());           // a second write through another view
    return std::vector<Tensor>{(b * b).sum({1}) * in[0].select(1, 0)};
  };
  Tensor x = kiln::randn({3, 4}, kiln::TensorOptions().dtype(kiln::kFloat64)).requires_grad_();
  Tensor w = kiln::randn({2}, kiln::TensorOptions().dtype(kiln::kFloat64)).requires_grad_();
  EXPECT_TRUE(ag::gradcheck(fn, {x, w}));
  EXPECT_TRUE(ag::gradgradcheck(fn, {x, w}));
}

TEST(InPlaceOnView, InPlaceOpThatSavesItsOutputOnAView) {
  // relu_ reads its own output in backward; through a view that output is the view's value.
  Tensor x = leaf({-1, 2, -3, 4});
  Tensor b = x * 1.0;
  b.slice(0, 1, 4).relu_();  // b = [-1, 2, 0, 4]
  b.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{1, 1, 0, 1}));
}

TEST(InPlaceOnView, AViewOfALeafThatRequiresGradIsRefused) {
  Tensor x = leaf({1, 2, 3});
  EXPECT_TRUE(throws_error_containing(
      [&] { x.slice(0, 0, 2).mul_(2.0); },
      {"mul_scalar_",
       "a view of a leaf Variable that requires grad is being used in an in-place "
       "operation"}));
  kiln::NoGradGuard no_grad;
  x.slice(0, 0, 2).mul_(2.0);  // an optimizer-style update is fine
  EXPECT_EQ(values(x.detach()), (std::vector<float>{2, 4, 3}));
}

TEST(InPlaceOnView, AViewMadeInNoGradModeIsRefusedWithGradOn) {
  Tensor x = leaf({1, 2, 3});
  Tensor b = x * 1.0;
  Tensor v;
  {
    kiln::NoGradGuard no_grad;
    v = b.slice(0, 0, 2);
  }
  EXPECT_TRUE(v.is_view());
  EXPECT_FALSE(v.requires_grad());
  v.mul_(2.0);  // nothing that requires grad takes part: not recorded, allowed (as in torch)
  Tensor w = leaf({1, 1});
  EXPECT_TRUE(
      throws_error_containing([&] { v.mul_(w); }, {"mul_", "A view was created in no_grad mode"}));
}

TEST(InPlaceOnView, WritingThroughAnExpandedViewIsRefused) {
  Tensor x = leaf({1, 2});
  Tensor b = x * 1.0;
  Tensor e = b.unsqueeze(0).expand({3, 2});
  EXPECT_TRUE(throws_error_containing([&] { e.mul_(2.0); },
                                      {"mul_scalar_", "more than one element of the written-to"}));
}

TEST(InPlaceOnView, ALongChainOfViewsIsFreedWithoutRecursion) {
  Tensor t = kiln::zeros({4});
  for (int i = 0; i < 200000; ++i)
    t = t.view({4});
  EXPECT_TRUE(t.is_view());
  t = Tensor();  // would overflow the stack if each link freed the next recursively
}

TEST(InPlaceOnView, CompiledEqualsEagerWithoutFallingBack) {
  // Note [Writes through views]: the base and an older sibling view read after the write.
  auto f = [](const std::vector<Tensor>& in) {
    Tensor b = in[0] * 2.0;
    Tensor sibling = b.slice(1, 1, 3);
    b.slice(1, 0, 2).mul_(in[1]);
    b.select(0, 2).add_(1.0);
    return (b.exp() * in[0]).sum() + (sibling * sibling).sum();
  };
  Tensor x0 = kiln::randn({3, 4});
  Tensor w0 = kiln::randn({3, 2});
  Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
  f({x, w}).backward();
  auto compiled = kiln::compile(std::function<Tensor(const std::vector<Tensor>&)>(f));
  for (int call = 0; call < 2; ++call) {
    Tensor xc = x0.clone().requires_grad_(), wc = w0.clone().requires_grad_();
    Tensor loss = compiled({xc, wc})[0];
    loss.backward();
    EXPECT_TRUE(close(xc.grad(), x.grad(), kPointwiseTol));
    EXPECT_TRUE(close(wc.grad(), w.grad(), kPointwiseTol));
    EXPECT_TRUE(close(loss, f({x0, w0}), kPointwiseTol));
  }
  kiln::CompileStats stats = compiled.stats();
  EXPECT_EQ(stats.eager_calls, 0);
  EXPECT_EQ(stats.fallback_ops, 0);
  EXPECT_EQ(stats.compiles, 1);
}

TEST(InPlaceOnView, TracedGraphWritesIntoACacheSlot) {
  // The KV-cache pattern: a buffer that does not require grad takes a value in one slot.
  auto f = [](const std::vector<Tensor>& in) {
    Tensor cache = kiln::zeros({3, 2});
    cache.select(0, 1).copy_(in[0]);
    return (cache * cache.sum({0}, true)).sum();
  };
  Tensor k0 = kiln::from_vector<float>({1.5f, -2.0f});
  Tensor k = k0.clone().requires_grad_();
  f({k}).backward();
  auto compiled = kiln::compile(std::function<Tensor(const std::vector<Tensor>&)>(f));
  Tensor kc = k0.clone().requires_grad_();
  Tensor loss = compiled({kc})[0];
  loss.backward();
  EXPECT_NEAR(loss.item<float>(), 6.25f, 1e-5);  // sum(k * k)
  EXPECT_TRUE(close(kc.grad(), k.grad(), kPointwiseTol));
  EXPECT_EQ(compiled.stats().eager_calls, 0);
}

// ---- libtorch's names ----

TEST(AutogradNames, IsViewAndBase) {
  Tensor a = kiln::zeros({2, 3});
  Tensor v = a.select(0, 1);
  Tensor vv = v.slice(0, 0, 2);
  EXPECT_FALSE(a.is_view());
  EXPECT_TRUE(v.is_view());
  EXPECT_TRUE(vv._base().is_same(a));
  EXPECT_FALSE(a._base().defined());
  EXPECT_FALSE((a + 1.0).is_view());
}

TEST(AutogradNames, DetachInPlace) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 2.0;
  y.detach_();
  EXPECT_TRUE(y.is_leaf());
  EXPECT_FALSE(y.requires_grad());
  y.mul_(3.0);  // no longer recorded
  EXPECT_EQ(values(y), (std::vector<float>{6, 12}));
  Tensor v = (x * 1.0).slice(0, 0, 1);
  EXPECT_TRUE(throws_error_containing([&] { v.detach_(); }, {"Can't detach views in-place"}));
}

TEST(AutogradNames, SetDataKeepsTheAutogradState) {
  Tensor w = leaf({1, 2});
  (w * 3.0).sum().backward();
  Tensor fresh = kiln::from_vector<float>({10, 20, 30});
  w.set_data(fresh);
  EXPECT_EQ(values(w.detach()), (std::vector<float>{10, 20, 30}));
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(values(w.grad()), (std::vector<float>{3, 3}));
  w.mutable_grad() = Tensor();
  (w * 2.0).sum().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<float>{2, 2, 2}));
}

TEST(AutogradNames, BackwardWithInputsOnlyFillsThose) {
  Tensor a = leaf({1, 2});
  Tensor b = leaf({3, 4});
  Tensor h = a * b;
  Tensor loss = (h * h).sum();
  loss.backward({}, std::nullopt, false, std::vector<Tensor>{a, h});
  EXPECT_EQ(values(a.grad()), (std::vector<float>{18, 64}));  // 2 a b^2
  EXPECT_FALSE(b.grad().defined());
  EXPECT_TRUE(h.retains_grad());
  EXPECT_EQ(values(h.grad()), (std::vector<float>{6, 16}));  // 2 h
  EXPECT_TRUE(throws_error_containing(
      [&] { (a * 2.0).sum().backward({}, std::nullopt, false, std::vector<Tensor>{}); },
      {"'inputs' argument to backward() cannot be empty."}));
}

TEST(AutogradNames, RetainGraphDefaultsToCreateGraph) {
  Tensor a = leaf({2});
  Tensor loss = (a * a * a).sum();
  Collect sink;
  kiln::WarningHandlerGuard guard(&sink);
  loss.backward({}, std::nullopt, /*create_graph=*/true);
  loss.backward({}, std::nullopt, /*create_graph=*/true);  // the graph was kept
  EXPECT_EQ(values(a.grad().detach()), (std::vector<float>{24}));
  EXPECT_TRUE(a.grad().requires_grad());
  // TORCH_WARN_ONCE: at most once per process (the Python tests check the first call warns).
  EXPECT_LE(sink.messages.size(), 1u);
  for (const std::string& m : sink.messages)
    EXPECT_NE(m.find("create_graph=True will create a reference cycle"), std::string::npos);
  a.mutable_grad() = Tensor();  // break the cycle the warning is about (LeakSanitizer sees it)
}

TEST(AutogradNames, LibtorchWording) {
  Tensor a = leaf({1});
  Tensor y = a * 2.0;
  EXPECT_TRUE(
      throws_error_containing([&] { y.requires_grad_(false); },
                              {"you can only change requires_grad flags of leaf variables."}));
  EXPECT_TRUE(throws_error_containing([&] { ag::grad({y.sum()}, {}); },
                                      {"grad requires non-empty inputs."}));
  Tensor unused = leaf({1});
  EXPECT_TRUE(throws_error_containing([&] { ag::grad({y.sum()}, {unused}); },
                                      {"Set allow_unused=True if this is the desired behavior."}));
}

TEST(WarningChannel, NonLeafGradAccessWarnsThroughTheHandler) {
  Collect sink;
  kiln::WarningHandlerGuard guard(&sink);
  Tensor a = leaf({1});
  Tensor y = a * 2.0;
  EXPECT_FALSE(y.grad().defined());
  ASSERT_EQ(sink.messages.size(), 1u);
  EXPECT_NE(sink.messages[0].find("is not a leaf Tensor is being accessed"), std::string::npos);
  y.retain_grad();
  EXPECT_FALSE(y.grad().defined());  // a non-leaf that retains its grad: no warning
  EXPECT_FALSE(a.grad().defined());  // a leaf: no warning
  EXPECT_EQ(sink.messages.size(), 1u);
}

TEST(WarningChannel, AHandlerThatThrowsStopsTheCall) {
  struct Strict : kiln::WarningHandler {
    void process(const std::string& m) override { throw kiln::Error("as error: " + m); }
  } strict;
  kiln::WarningHandlerGuard guard(&strict);
  Tensor y = leaf({1}) * 2.0;
  EXPECT_TRUE(throws_error_containing([&] { (void)y.grad(); }, {"as error: The .grad attribute"}));
}

TEST(WarningChannel, GuardsNestAndTheProcessHandlerIsTheFallback) {
  Collect process, outer, inner;
  kiln::set_warning_handler(&process);
  KILN_WARN("to the process handler {}", 1);
  {
    kiln::WarningHandlerGuard g1(&outer);
    {
      kiln::WarningHandlerGuard g2(&inner);
      KILN_WARN("inner");
    }
    KILN_WARN("outer");
  }
  kiln::set_warning_handler(nullptr);
  EXPECT_EQ(process.messages, (std::vector<std::string>{"to the process handler 1"}));
  EXPECT_EQ(outer.messages, (std::vector<std::string>{"outer"}));
  EXPECT_EQ(inner.messages, (std::vector<std::string>{"inner"}));
}

}  // namespace
}  // namespace kiln_test
