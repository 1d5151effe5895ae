// The autograd engine's behaviour (seed 000/003): leaves and non-leaves, the order of Nodes,
// hooks, retain_grad, grad() pruning, saved-tensor versions, freed buffers, reentrant and
// concurrent backward, grad modes and anomaly mode. Expected values are closed-form.
#include <atomic>
#include <cmath>
#include <thread>

#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/basic_nodes.h"
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
namespace ag = kiln::autograd;

Tensor vec(std::vector<float> v) {
  return kiln::from_vector(v, {static_cast<int64_t>(v.size())}, kiln::requires_grad());
}

std::vector<float> values(const Tensor& t) {
  return t.to_vector<float>();
}

TEST(Backward, LeafGradOfAProductIsTheOtherFactor) {
  Tensor a = vec({1, 2, 3});
  Tensor b = vec({4, 5, 6});
  Tensor loss = (a * b).sum();
  EXPECT_FALSE(loss.is_leaf());
  EXPECT_TRUE(a.is_leaf());
  loss.backward();
  EXPECT_EQ(values(a.grad()), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(values(b.grad()), (std::vector<float>{1, 2, 3}));
}

TEST(Backward, GradientsAccumulateAcrossCalls) {
  Tensor a = vec({1, 2});
  (a * 3.0).sum().backward();
  Tensor first = a.grad();
  (a * 3.0).sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<float>{6, 6}));
  // As in libtorch, .grad accumulates in place.
  EXPECT_EQ(values(first), (std::vector<float>{6, 6}));
}

TEST(Backward, AUsedTwiceSumsBothPaths) {
  Tensor x = vec({2, -1});
  Tensor y = x * x + x;  // dy/dx = 2x + 1
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{5, -1}));
}

TEST(Backward, BroadcastGradientIsReducedToTheInputShape) {
  Tensor a = kiln::from_vector<float>({1, 2, 3}, {3, 1}, kiln::requires_grad());
  Tensor b = kiln::from_vector<float>({1, 1, 1, 1}, {1, 4}, kiln::requires_grad());
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().sizes(), (kiln::Shape{3, 1}));
  EXPECT_EQ(values(a.grad()), (std::vector<float>{4, 4, 4}));
  EXPECT_EQ(values(b.grad()), (std::vector<float>{6, 6, 6, 6}));
}

TEST(Backward, NonScalarWithoutGradThrows) {
  Tensor x = vec({1, 2});
  Tensor y = x * 2.0;
  EXPECT_TRUE(throws_error_containing([&] { y.backward(); }, {"scalar", "[2]"}));
  y.backward(kiln::from_vector<float>({1, 10}));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 20}));
}

TEST(Backward, TensorWithoutGradFnThrows) {
  Tensor x = kiln::ones({2});
  EXPECT_TRUE(throws_error_containing([&] { x.sum().backward(); }, {"does not require grad"}));
}

TEST(Backward, SecondBackwardThroughFreedBuffersThrows) {
  Tensor x = vec({1, 2});
  Tensor y = (x.exp() * x).sum();
  y.backward();
  EXPECT_TRUE(throws_error_containing([&] { y.backward(); }, {"second time", "retain_graph"}));
}

TEST(Backward, RetainGraphAllowsASecondBackward) {
  Tensor x = vec({1, 2});
  Tensor y = (x * x).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{4, 8}));
}

TEST(Backward, InPlaceModificationOfASavedTensorIsReported) {
  Tensor x = vec({1, 2});
  Tensor y = x.exp();  // exp saves its output
  Tensor z = y.sum();
  y.mul_(2.0);
  EXPECT_TRUE(throws_error_containing(
      [&] { z.backward(); },
      {"modified by an inplace operation", "ExpBackward", "version 1", "expected version 0"}));
}

TEST(Backward, InPlaceOpOnANonLeafIsDifferentiated) {
  Tensor x = vec({1, 2, 3});
  Tensor y = x * 2.0;
  y.add_(x);  // y = 3x
  y.mul_(y);  // y = 9x^2
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{18, 36, 54}));
}

TEST(Backward, InPlaceOnALeafThatRequiresGradThrows) {
  Tensor x = vec({1, 2});
  EXPECT_TRUE(throws_error_containing([&] { x.add_(1.0); }, {"add_scalar_", "leaf"}));
  {
    kiln::NoGradGuard no_grad;
    x.add_(1.0);  // an optimizer step
  }
  EXPECT_EQ(values(x), (std::vector<float>{2, 3}));
}

TEST(Backward, ViewsFollowTheirBaseAfterAnInPlaceChange) {
  Tensor x = vec({1, 2, 3, 4});
  Tensor b = x * 1.0;
  Tensor v = b.slice(0, 0, 2);
  b.mul_(3.0);
  v.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{3, 3, 0, 0}));
}

TEST(Backward, InPlaceOnARecordedViewChangesItsBase) {
  Tensor x = vec({1, 2, 3, 4});
  Tensor b = x * 1.0;
  Tensor v = b.slice(0, 0, 2);
  v.mul_(2.0);  // more cases in view_inplace_test.cpp
  b.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 2, 1, 1}));
}

TEST(SavedVariable, SavingAnOutputDoesNotKeepItsNodeAlive) {
  Tensor x = vec({1, 2});
  std::weak_ptr<ag::Node> node;
  {
    Tensor y = x.exp();  // ExpBackward saves y itself
    node = y.grad_fn();
    ASSERT_FALSE(node.expired());
  }
  EXPECT_TRUE(node.expired());  // no cycle between y's meta and the Node
}

TEST(SavedVariable, ASavedOutputComesBackWithItsHistoryForCreateGraph) {
  // d/dx exp(x) = exp(x) uses the saved output; its second derivative needs that output's
  // history: d2/dx2 exp(x) = exp(x).
  Tensor x = vec({0.5f});
  Tensor g = ag::grad({x.exp().sum()}, {x}, {}, false, true)[0];
  Tensor g2 = ag::grad({g.sum()}, {x})[0];
  EXPECT_NEAR(values(g2)[0], std::exp(0.5), 1e-6);
}

TEST(InputBuffer, AccumulationNeverWritesIntoTheCallersGradient) {
  Tensor x = vec({1, 2});
  Tensor g = kiln::from_vector<float>({1, 1});
  (x + x).backward(g);  // both paths receive g itself; their sum must not land in g
  EXPECT_EQ(values(g), (std::vector<float>{1, 1}));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 2}));
}

TEST(Leaf, DetachSharesDataButNotHistory) {
  Tensor x = vec({1, 2});
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.grad_fn(), nullptr);
  EXPECT_EQ(values(d), (std::vector<float>{2, 4}));
  {
    kiln::NoGradGuard no_grad;
    d.add_(1.0);
  }
  EXPECT_EQ(values(y), (std::vector<float>{3, 5}));  // same storage and version counter
  EXPECT_EQ(y.version(), d.version());
}

TEST(Leaf, RequiresGradFalseOnANonLeafThrows) {
  Tensor x = vec({1});
  Tensor y = x * 2.0;
  EXPECT_TRUE(throws_error_containing([&] { y.requires_grad_(false); }, {"leaf"}));
}

TEST(Node, NamesSequenceAndTopologicalNumbers) {
  Tensor x = vec({1, 2});
  Tensor y = x.exp();
  Tensor z = y * x;
  auto fy = y.grad_fn();
  auto fz = z.grad_fn();
  ASSERT_NE(fy, nullptr);
  EXPECT_EQ(fy->name(), "ExpBackward");
  EXPECT_EQ(fz->name(), "MulBackward");
  EXPECT_GT(fz->sequence_nr(), fy->sequence_nr());
  EXPECT_TRUE(fy->is_traceable());
  // x's AccumulateGrad has topological_nr 0, exp's 1, mul's 2.
  EXPECT_EQ(fy->next_edge(0).function->name(), "AccumulateGrad");
  EXPECT_EQ(fy->next_edge(0).function->topological_nr(), 0u);
  EXPECT_EQ(fy->next_edge(0).function->sequence_nr(), UINT64_MAX);
  EXPECT_EQ(fy->topological_nr(), 1u);
  EXPECT_EQ(fz->topological_nr(), 2u);
  EXPECT_EQ(fz->num_outputs(), 2u);
  EXPECT_EQ(fz->next_edge(0).function, fy);
  EXPECT_EQ(fz->num_inputs(), 1u);
  EXPECT_EQ(fz->input_metadata(0).sizes, (kiln::Shape{2}));
  EXPECT_TRUE(fz->should_compute_output(0));
  Tensor c = kiln::ones({2});
  Tensor w = c * x;
  EXPECT_FALSE(w.grad_fn()->should_compute_output(0));  // c does not require grad
  EXPECT_TRUE(w.grad_fn()->should_compute_output(1));
}

TEST(Node, ThreadIdDiffersAcrossThreads) {
  Tensor x = vec({1});
  uint64_t here = (x * 2.0).grad_fn()->thread_id();
  uint64_t there = 0;
  std::thread t([&] { there = (x * 2.0).grad_fn()->thread_id(); });
  t.join();
  EXPECT_NE(here, there);
}

TEST(Hooks, TensorHookSeesAndReplacesTheGradient) {
  Tensor x = vec({1, 2});
  Tensor y = x * 3.0;
  std::vector<float> seen;
  y.register_hook([&](const Tensor& g) {
    seen = values(g);
    return g * 10.0;
  });
  y.sum().backward();
  EXPECT_EQ(seen, (std::vector<float>{1, 1}));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{30, 30}));
}

TEST(Hooks, LeafHookRunsBeforeAccumulationAndCanBeRemoved) {
  Tensor x = vec({1, 2});
  unsigned h = x.register_hook([](const Tensor& g) { return g * 2.0; });
  (x * 1.0).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 2}));
  x.remove_hook(h);
  (x * 1.0).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{3, 3}));
}

// AccumulateGrad makes the first gradient .grad without a copy when the engine's buffer holds
// the only handle to it, and copies it when someone else still does (a hook kept it).
TEST(Backward, AFirstGradientNobodyElseHoldsBecomesDotGradWithoutACopy) {
  Tensor x = kiln::randn({1024}, kiln::requires_grad());
  const float* arrived = nullptr;
  x.register_hook([&](const Tensor& g) {
    arrived = g.data_ptr<float>();
    return g;
  });
  (x * 2.0).sum().backward();
  EXPECT_EQ(x.grad().data_ptr<float>(), arrived);

  Tensor y = kiln::randn({1024}, kiln::requires_grad());
  Tensor kept;
  y.register_hook([&](const Tensor& g) {
    kept = g;
    return g;
  });
  (y * 2.0).sum().backward();
  EXPECT_NE(y.grad().data_ptr<float>(), kept.data_ptr<float>());
  EXPECT_EQ(values(y.grad()), values(kept));
}

TEST(Hooks, OrderIsTensorPreHooksThenRetainGradThenPreHooksThenPostHooks) {
  Tensor x = vec({1, 2});
  Tensor y = x * 2.0;
  Tensor z = y * 3.0;
  std::vector<std::string> order;
  y.retain_grad();
  y.register_hook([&](const Tensor& g) {
    order.push_back("tensor");
    return g * 2.0;  // retain_grad sees the hooked gradient
  });
  auto fn = y.grad_fn();
  fn->add_pre_hook(std::make_unique<ag::LambdaPreHook>([&](const ag::variable_list& g) {
    order.push_back("pre");
    return g;
  }));
  fn->add_post_hook(std::make_unique<ag::LambdaPostHook>(
      [&](const ag::variable_list& outputs, const ag::variable_list& inputs) {
        order.push_back("post");
        EXPECT_EQ(values(inputs[0]), (std::vector<float>{6, 6}));
        return outputs;
      }));
  z.sum().backward();
  EXPECT_EQ(order, (std::vector<std::string>{"tensor", "pre", "post"}));
  EXPECT_TRUE(y.retains_grad());
  EXPECT_EQ(values(y.grad()), (std::vector<float>{6, 6}));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{12, 12}));
}

TEST(Hooks, PostHookCanReplaceTheOutputs) {
  Tensor x = vec({1});
  Tensor y = x * 2.0;
  y.grad_fn()->add_post_hook(std::make_unique<ag::LambdaPostHook>(
      [](const ag::variable_list& outputs, const ag::variable_list&) {
        return ag::variable_list{outputs[0] * 0.0};
      }));
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{0}));
}

TEST(Hooks, RetainGradOnANonLeafOnly) {
  Tensor x = vec({1, 2});
  Tensor y = x * 2.0;
  Tensor z = y * y;
  z.sum().backward({}, true);
  EXPECT_FALSE(y.grad().defined());
  y.retain_grad();
  z.sum().backward();
  EXPECT_EQ(values(y.grad()), (std::vector<float>{4, 8}));
}

TEST(Hooks, PostAccumulateGradHookSeesTheUpdatedGrad) {
  Tensor w = vec({1, 2});
  std::vector<float> seen;
  int calls = 0;
  w.register_post_accumulate_grad_hook([&](const Tensor& p) {
    ++calls;
    seen = values(p.grad());
  });
  (w * 5.0).sum().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, (std::vector<float>{5, 5}));
  Tensor nonleaf = w * 1.0;
  EXPECT_THROW(nonleaf.register_post_accumulate_grad_hook([](const Tensor&) {}), kiln::Error);
}

TEST(Grad, ReturnsGradientsWithoutTouchingDotGrad) {
  Tensor x = vec({1, 2});
  Tensor y = vec({3, 4});
  Tensor z = (x * y).sum();
  std::vector<Tensor> g = ag::grad({z}, {x});
  EXPECT_EQ(values(g[0]), (std::vector<float>{3, 4}));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(y.grad().defined());
}

TEST(Grad, SkipsBranchesThatDoNotLeadToTheInputs) {
  Tensor x = vec({1, 2});
  Tensor w = vec({3, 4});
  Tensor a = x * 2.0;
  Tensor b = w.exp();  // only reaches w
  int b_calls = 0, a_calls = 0;
  b.grad_fn()->add_pre_hook(std::make_unique<ag::LambdaPreHook>([&](const ag::variable_list& g) {
    ++b_calls;
    return g;
  }));
  a.grad_fn()->add_pre_hook(std::make_unique<ag::LambdaPreHook>([&](const ag::variable_list& g) {
    ++a_calls;
    return g;
  }));
  Tensor loss = (a + b).sum();
  std::vector<Tensor> g = ag::grad({loss}, {x});
  EXPECT_EQ(values(g[0]), (std::vector<float>{2, 2}));
  EXPECT_EQ(a_calls, 1);
  EXPECT_EQ(b_calls, 0);
}

TEST(Grad, TaskShouldComputeOutputReflectsPruning) {
  Tensor x = vec({1});
  Tensor w = vec({2});
  Tensor p = x * w;
  bool seen_x = false, seen_w = true;
  auto fn = p.grad_fn();
  fn->add_pre_hook(std::make_unique<ag::LambdaPreHook>([&](const ag::variable_list& g) {
    seen_x = fn->task_should_compute_output(0);
    seen_w = fn->task_should_compute_output(1);
    return g;
  }));
  ag::grad({p.sum()}, {x});
  EXPECT_TRUE(seen_x);
  EXPECT_FALSE(seen_w);
}

TEST(Grad, UnusedInputNeedsAllowUnused) {
  Tensor x = vec({1});
  Tensor u = vec({1});
  Tensor y = (x * 2.0).sum();
  EXPECT_TRUE(throws_error_containing(
      [&] {
        ag::grad({y}, {x, u}, {}, true);
      },
      {"not have been used", "allow_unused"}));
  std::vector<Tensor> g = ag::grad({y}, {x, u}, {}, false, false, /*allow_unused=*/true);
  EXPECT_TRUE(g[0].defined());
  EXPECT_FALSE(g[1].defined());
}

TEST(Grad, NonLeafInput) {
  Tensor x = vec({1, 2});
  Tensor h = x * 3.0;
  Tensor y = (h * h).sum();
  std::vector<Tensor> g = ag::grad({y}, {h});
  EXPECT_EQ(values(g[0]), (std::vector<float>{6, 12}));
}

TEST(CreateGraph, SecondDerivativeOfTanh) {
  std::vector<float> xs = {-1.5f, -0.2f, 0.0f, 0.7f, 2.0f};
  Tensor x = vec(xs);
  Tensor y = x.tanh().sum();
  Tensor dx = ag::grad({y}, {x}, {}, false, /*create_graph=*/true)[0];
  ASSERT_TRUE(dx.requires_grad());
  Tensor d2x = ag::grad({dx.sum()}, {x})[0];
  std::vector<float> got1 = values(dx), got2 = values(d2x);
  for (size_t i = 0; i < xs.size(); ++i) {
    double t = std::tanh(static_cast<double>(xs[i]));
    EXPECT_NEAR(got1[i], 1 - t * t, 1e-5);
    EXPECT_NEAR(got2[i], -2 * t * (1 - t * t), 1e-5);
  }
}

TEST(CreateGraph, GradientPenalty) {
  // f(x) = sum(w * x^2); df/dx = 2 w x; penalty = sum((2 w x)^2); d penalty / dw = 8 w x^2.
  Tensor x = vec({1, 2});
  Tensor w = vec({3, -1});
  Tensor f = (w * x * x).sum();
  Tensor gx = ag::grad({f}, {x}, {}, false, true)[0];
  Tensor penalty = (gx * gx).sum();
  penalty.backward();
  EXPECT_EQ(values(w.grad()), (std::vector<float>{24, -32}));
  // d penalty / dx = 8 w^2 x
  EXPECT_EQ(values(x.grad()), (std::vector<float>{72, 16}));
}

TEST(Modes, NoGradRecordsNothingAndEnableGradReenables) {
  Tensor x = vec({1});
  {
    kiln::NoGradGuard no_grad;
    EXPECT_FALSE(kiln::GradMode::is_enabled());
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
    {
      kiln::EnableGradGuard enable;
      EXPECT_TRUE((x * 2.0).requires_grad());
    }
    EXPECT_FALSE((x * 2.0).requires_grad());
  }
  EXPECT_TRUE(kiln::GradMode::is_enabled());
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Modes, GradModeIsThreadLocal) {
  kiln::NoGradGuard no_grad;
  bool other = false;
  std::thread t([&] { other = kiln::GradMode::is_enabled(); });
  t.join();
  EXPECT_TRUE(other);
}

TEST(Anomaly, NaNGradientNamesTheForwardOp) {
  kiln::AnomalyModeGuard anomaly;
  Tensor x = vec({0.0f, 1.0f});
  Tensor y = x.sqrt() * 0.0;  // sqrt'(0) = inf, times 0 = nan
  Tensor loss = y.sum();
  EXPECT_TRUE(throws_error_containing([&] { loss.backward(); }, {"nan", "SqrtBackward", "'sqrt'"}));
}

TEST(Anomaly, ErrorsInANodeNameTheNode) {
  Tensor x = vec({1, 2});
  Tensor y = x.exp();
  Tensor z = y.sum();
  {
    kiln::NoGradGuard no_grad;
    y.add_(1.0);
  }
  EXPECT_TRUE(throws_error_containing([&] { z.backward(); }, {"ExpBackward"}));
}

// A hand-written Node that runs a whole backward pass inside its apply (reentrant backward).
struct ReentrantNode : ag::Node {
  using Node::Node;
  std::string name() const override { return "ReentrantNode"; }
  ag::variable_list apply(ag::variable_list&& grads) override {
    kiln::EnableGradGuard grad_on;  // the engine runs Nodes with grad mode off
    Tensor inner = vec({1, 2});
    (inner * inner).sum().backward();  // inner.grad = 2 * inner = {2, 4}
    return {grads[0] * inner.grad()};
  }
};

TEST(Reentrant, BackwardInsideANodeDoesNotDeadlock) {
  Tensor x = vec({1, 1});
  auto node = std::make_shared<ReentrantNode>(ag::collect_next_edges(std::vector<Tensor>{x}));
  Tensor y = x.detach();
  ag::set_history(y, node, 0);
  (y * 3.0).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{6, 12}));
}

// Nests reentrant backward calls `depth` deep (deeper than the per-thread limit).
struct NestingNode : ag::Node {
  NestingNode(int d, ag::edge_list e) : Node(std::move(e)), depth(d) {}
  ag::variable_list apply(ag::variable_list&& grads) override {
    if (depth > 0) {
      kiln::EnableGradGuard grad_on;
      Tensor inner = vec({1});
      Tensor y = inner.detach();
      ag::set_history(y,
                      std::make_shared<NestingNode>(
                          depth - 1, ag::collect_next_edges(std::vector<Tensor>{inner})),
                      0);
      y.sum().backward();
    }
    return {grads[0]};
  }
  int depth;
};

TEST(Reentrant, DeepNestingContinuesOnAnotherThread) {
  Tensor x = vec({1});
  Tensor y = x.detach();
  ag::set_history(
      y, std::make_shared<NestingNode>(100, ag::collect_next_edges(std::vector<Tensor>{x})), 0);
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{1}));
}

TEST(Concurrency, IndependentGraphsOnSeveralThreads) {
  constexpr int kThreads = 4;
  Tensor shared = vec({1, 2, 3});  // every thread's graph ends in the same leaf
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Tensor local = vec({1, 1, 1});
        Tensor loss = ((shared * static_cast<double>(t + 1)).tanh() * local).sum();
        loss.backward();
        std::vector<float> g = values(local.grad());
        if (std::abs(g[0] - std::tanh(static_cast<float>(t + 1))) > 1e-5f) ++failures;
      }
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0);
  // d/dshared sum_t 50 * tanh((t+1) s) = 50 * sum_t (t+1)(1 - tanh^2((t+1)s))
  std::vector<float> g = values(shared.grad());
  for (int e = 0; e < 3; ++e) {
    double expect = 0;
    for (int t = 0; t < kThreads; ++t) {
      double th = std::tanh((t + 1) * (e + 1.0));
      expect += 50 * (t + 1) * (1 - th * th);
    }
    EXPECT_NEAR(g[e], expect, 1e-3 * std::max(1.0, std::abs(expect)));
  }
}

}  // namespace
}  // namespace kiln_test
