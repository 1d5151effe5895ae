// trace() of functions that run the autograd engine (autograd::grad): the backward pass is
// recorded into the same graph (Note [Backward under trace] in runtime/autograd/engine.cpp).
// Also the interpreter's own checks.
#include <string>

#include "kiln/ir/verifier.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/tracing_state.h"
#include "opaque_cube.h"
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
using kiln::TracedFunction;
using kiln::ir::NodeKind;
namespace ag = kiln::autograd;

size_t count_kind(const kiln::ir::Graph& g, const std::string& kind) {
  size_t n = 0;
  for (const kiln::ir::Node* node : g.nodes())
    n += node->kind_name() == kind ? 1 : 0;
  return n;
}

std::vector<float> values(const Tensor& t) {
  return t.to_vector<float>();
}

Tensor input(kiln::Shape shape, uint32_t seed, bool grad = false) {
  std::vector<float> v = random_vector<float>(static_cast<size_t>(ref_numel(shape)), -1, 1, seed);
  Tensor t = kiln::from_vector(v, std::move(shape));
  if (grad) t.requires_grad_();
  return t;
}

// Fresh leaves with the same values, for the eager reference.
std::vector<Tensor> fresh(const std::vector<Tensor>& xs) {
  std::vector<Tensor> out;
  for (const Tensor& x : xs) {
    Tensor c = x.detach().clone();
    if (x.requires_grad()) c.requires_grad_();
    out.push_back(c);
  }
  return out;
}

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    EXPECT_ALL_CLOSE(values(got[i]), values(want[i]), 1e-6, 1e-6);
  }
}

void expect_not_tracing() {
  EXPECT_EQ(kiln::current_tracing_state(), nullptr);
  EXPECT_TRUE(kiln::local_dispatch_keys().included.empty());
  EXPECT_TRUE(kiln::local_dispatch_keys().excluded.empty());
}

std::vector<Tensor> mlp_grads(const std::vector<Tensor>& x) {
  // x0 [4, 3] data, x1 [3, 5] weight, x2 [5] bias, x3 [4, 5] incoming gradient
  Tensor h = kiln::tanh(kiln::mm(x[0], x[1]) + x[2]);
  return ag::grad({h}, {x[0], x[1], x[2]}, {x[3]});
}

TEST(TraceBackward, GradIsRecordedAndMatchesEager) {
  std::vector<Tensor> ex = {input({4, 3}, 1, true), input({3, 5}, 2, true), input({5}, 3, true),
                            input({4, 5}, 4)};
  TracedFunction f = kiln::trace(mlp_grads, ex);
  kiln::ir::verify(f.graph());
  EXPECT_EQ(count_kind(f.graph(), "prim.fallback"), 0u);
  EXPECT_GE(count_kind(f.graph(), "mm"), 3u);   // forward, and one per matrix gradient
  EXPECT_GE(count_kind(f.graph(), "sum"), 1u);  // the bias gradient is summed to its shape
  EXPECT_EQ(f.graph().outputs().size(), 3u);
  // The backward ops report the line of the grad() call.
  bool saw_backward_site = false;
  for (const kiln::ir::Node* n : f.graph().nodes())
    saw_backward_site |= n->call_site().find("mlp_grads") != std::string::npos;
  EXPECT_TRUE(saw_backward_site);
  expect_not_tracing();

  std::vector<Tensor> other = {input({4, 3}, 5, true), input({3, 5}, 6, true), input({5}, 7, true),
                               input({4, 5}, 8)};
  expect_same(f(other), mlp_grads(fresh(other)));
}

TEST(TraceBackward, ScalarLossWithoutGradOutputs) {
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor loss = kiln::cross_entropy(kiln::mm(x[0], x[1]), x[2]);
    std::vector<Tensor> g = ag::grad({loss}, {x[1]});
    return std::vector<Tensor>{loss, g[0]};
  };
  Tensor target = kiln::from_vector<int64_t>({0, 2, 1, 2});
  std::vector<Tensor> ex = {input({4, 3}, 9), input({3, 3}, 10, true), target};
  TracedFunction f = kiln::trace(fn, ex);
  kiln::ir::verify(f.graph());
  EXPECT_EQ(count_kind(f.graph(), "full"), 1u);  // the implicit ones_like(loss)
  std::vector<Tensor> other = {input({4, 3}, 11), input({3, 3}, 12, true), target};
  expect_same(f(other), fn(fresh(other)));
}

TEST(TraceBackward, AccumulatedGradientsAndUnusedOutputs) {
  // x is used twice (the engine accumulates), max returns an index output with no gradient.
  auto fn = [](const std::vector<Tensor>& x) {
    auto [m, idx] = x[0].max(1);
    Tensor y = (x[0] * x[0]).sum() + m.sum() + x[0].exp().mean();
    return ag::grad({y}, {x[0]});
  };
  std::vector<Tensor> ex = {input({3, 4}, 13, true)};
  TracedFunction f = kiln::trace(fn, ex);
  kiln::ir::verify(f.graph());
  std::vector<Tensor> other = {input({3, 4}, 14, true)};
  expect_same(f(other), fn(fresh(other)));
}

TEST(TraceBackward, InPlaceOpsInTheForward) {
  // mul_ saves self's old value for its gradient: a copy made below the Tracer key, which the
  // trace must map to the traced value rather than to a constant.
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor y = x[0] * 1.0;
    y.mul_(x[1]);
    y.add_(1.0);
    return ag::grad({y.sum()}, {x[0], x[1]});
  };
  std::vector<Tensor> ex = {input({2, 3}, 15, true), input({2, 3}, 16, true)};
  TracedFunction f = kiln::trace(fn, ex);
  EXPECT_EQ(count_kind(f.graph(), "prim.constant"), 0u);
  kiln::ir::verify(f.graph());
  std::vector<Tensor> other = {input({2, 3}, 17, true), input({2, 3}, 18, true)};
  expect_same(f(other), fn(fresh(other)));
}

// OpaqueCube (tests/opaque_cube.h) declared traceable: its backward is recorded op by op.
struct TraceableCube : ag::Function<TraceableCube> {
  static constexpr bool is_traceable = true;
  static Tensor forward(ag::AutogradContext* ctx, const Tensor& x) {
    return OpaqueCube::forward(ctx, x);
  }
  static ag::variable_list backward(ag::AutogradContext* ctx, ag::variable_list grads) {
    return OpaqueCube::backward(ctx, std::move(grads));
  }
};

template <class F>
std::vector<Tensor> cube_grad(const std::vector<Tensor>& x) {
  Tensor y = F::apply(x[0].sin());
  return ag::grad({y}, {x[0]}, {x[1]});
}

TEST(TraceBackward, OpaqueCustomFunctionBecomesAFallback) {
  std::vector<Tensor> ex = {input({5}, 19, true), input({5}, 20)};
  TracedFunction f = kiln::trace(cube_grad<OpaqueCube>, ex);
  kiln::ir::verify(f.graph());
  ASSERT_EQ(count_kind(f.graph(), "prim.fallback"), 1u);
  for (const kiln::ir::Node* n : f.graph().nodes()) {
    if (n->kind() == NodeKind::Fallback) {
      EXPECT_EQ(n->fallback().name, "OpaqueCube");
    }
  }
  // The fallback calls the Node recorded at trace time, whose saved tensor is the example's
  // value: the graph reproduces the gradient for inputs with that value.
  std::vector<Tensor> same = fresh(ex);
  expect_same(f(same), cube_grad<OpaqueCube>(fresh(ex)));
  // And it can run again (the Node kept its saved tensors).
  expect_same(f(same), cube_grad<OpaqueCube>(fresh(ex)));
}

TEST(TraceBackward, TraceableCustomFunctionIsRecordedOpByOp) {
  std::vector<Tensor> ex = {input({5}, 21, true), input({5}, 22)};
  TracedFunction f = kiln::trace(cube_grad<TraceableCube>, ex);
  kiln::ir::verify(f.graph());
  EXPECT_EQ(count_kind(f.graph(), "prim.fallback"), 0u);
  std::vector<Tensor> other = {input({5}, 23, true), input({5}, 24)};
  expect_same(f(other), cube_grad<TraceableCube>(fresh(other)));
}

TEST(TraceBackward, CheckpointRecordsTheRecomputation) {
  auto block = [](const Tensor& a, const Tensor& w) { return kiln::tanh(kiln::mm(a, w)); };
  auto fn = [&](const std::vector<Tensor>& x) {
    Tensor y = kiln::checkpoint(block, x[0], x[1]);
    return ag::grad({y.sum()}, {x[0], x[1]});
  };
  std::vector<Tensor> ex = {input({2, 3}, 25, true), input({3, 4}, 26, true)};
  TracedFunction f = kiln::trace(fn, ex);
  kiln::ir::verify(f.graph());
  EXPECT_EQ(count_kind(f.graph(), "prim.fallback"), 0u);
  EXPECT_EQ(count_kind(f.graph(), "tanh"), 2u);  // the forward and its recomputation
  std::vector<Tensor> other = {input({2, 3}, 27, true), input({3, 4}, 28, true)};
  expect_same(f(other), fn(fresh(other)));
}

// Nested checkpoints make nested (reentrant) backward passes; past a depth the engine continues
// on a fresh thread, which must go on recording into the same trace.
Tensor nested_checkpoints(const Tensor& a, int depth) {
  if (depth == 0) return a.sin();
  return kiln::checkpoint([depth](const Tensor& b) { return nested_checkpoints(b, depth - 1); }, a);
}

TEST(TraceBackward, DeepReentrantBackwardKeepsRecording) {
  auto fn = [](const std::vector<Tensor>& x) {
    return ag::grad({nested_checkpoints(x[0], 40).sum()}, {x[0]});
  };
  std::vector<Tensor> ex = {input({3}, 29, true)};
  TracedFunction f = kiln::trace(fn, ex);
  EXPECT_EQ(count_kind(f.graph(), "prim.constant"), 0u);
  EXPECT_EQ(count_kind(f.graph(), "cos"), 1u);  // sin's derivative, once at the innermost level
  std::vector<Tensor> other = {input({3}, 30, true)};
  expect_same(f(other), fn(fresh(other)));
  expect_not_tracing();
}

TEST(TraceBackward, BackwardWritingDotGradThrows) {
  auto fn = [](const std::vector<Tensor>& x) {
    x[0].exp().sum().backward();
    return std::vector<Tensor>{x[0]};
  };
  EXPECT_TRUE(throws_error_containing([&] { (void)kiln::trace(fn, {input({3}, 29, true)}); },
                                      {"accumulates into .grad", "autograd::grad"}));
  expect_not_tracing();
}

TEST(TraceBackward, InterpreterRecordsAutogradForDoubleBackward) {
  // The interpreter dispatches each op, so running a traced forward on inputs that require
  // grad builds an autograd graph that eager backward can use.
  TracedFunction f = kiln::trace([](const std::vector<Tensor>& x) { return (x[0] * x[0]).sum(); },
                                 {input({3}, 30)});
  Tensor a = input({3}, 31, true);
  Tensor y = f({a})[0];
  std::vector<Tensor> g = ag::grad({y}, {a});
  EXPECT_ALL_CLOSE(values(g[0]), values(a.detach() * 2.0), 1e-6, 1e-6);
}

// ---- interpreter checks ----

TEST(Interpreter, ChecksInputCountAndTypes) {
  TracedFunction f = kiln::trace([](const std::vector<Tensor>& x) { return x[0] + x[1]; },
                                 {input({2, 3}, 32), input({2, 3}, 33)});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        (void)f({input({2, 3}, 34)});
      },
      {"takes 2 inputs, got 1"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        (void)f({input({2, 3}, 35), input({3, 2}, 36)});
      },
      {"input 1", "f32[3, 2]", "expects f32[2, 3]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        (void)f({input({2, 3}, 37).to(kiln::kFloat64), input({2, 3}, 38)});
      },
      {"input 0", "f64[2, 3]", "f32[2, 3]"}));
}

TEST(Interpreter, ErrorsNameTheNodeAndItsCallSite) {
  kiln::ir::Graph g;
  kiln::ir::TensorType t;
  t.sizes = {2};
  kiln::ir::Value* x = g.add_input(t, "x");
  const kiln::OpDef& view = kiln::get_op("view");
  kiln::SizeAttrs bad{{kiln::SymInt(3)}};
  kiln::ir::TensorType out;
  out.sizes = {3};
  kiln::ir::Value* in[] = {x};
  kiln::ir::Node* n = g.create_op(view, in, &bad, std::span<const kiln::ir::TensorType>(&out, 1));
  n->set_call_site("model.cpp:7 in forward");
  g.add_output(n->output());
  EXPECT_TRUE(throws_error_containing(
      [&] { (void)kiln::interpret(g, {input({2}, 39)}); },
      {"view", "while interpreting %0 = view(%x)", "model.cpp:7 in forward"}));
}

TEST(Interpreter, FallbackWithoutCallableThrows) {
  kiln::ir::Graph g;
  kiln::ir::TensorType t;
  t.sizes = {2};
  kiln::ir::Value* x = g.add_input(t, "x");
  kiln::ir::Value* in[] = {x};
  kiln::ir::Node* n =
      g.create_fallback("MyBackward", {}, in, std::span<const kiln::ir::TensorType>(&t, 1));
  g.add_output(n->output());
  EXPECT_TRUE(throws_error_containing([&] { (void)kiln::interpret(g, {input({2}, 40)}); },
                                      {"prim.fallback 'MyBackward' has no callable"}));
}

TEST(Interpreter, ReleasesIntermediatesAfterTheirLastUse) {
  // x -> a = exp(x) -> f1(a) -> f2(..): by the time f2 runs, nothing holds `a` any more.
  kiln::ir::Graph g;
  kiln::ir::TensorType t;
  t.sizes = {2};
  kiln::ir::Value* x = g.add_input(t, "x");
  kiln::ir::Value* in_x[] = {x};
  kiln::NoAttrs none;
  kiln::ir::Value* a =
      g.create_op(kiln::get_op("exp"), in_x, &none, std::span<const kiln::ir::TensorType>(&t, 1))
          ->output();
  auto seen = std::make_shared<std::weak_ptr<kiln::TensorImpl>>();
  kiln::ir::Value* in_a[] = {a};
  kiln::ir::Value* b = g.create_fallback(
                            "Remember",
                            [seen](const std::vector<Tensor>& v) {
                              *seen = v[0].impl_ptr();
                              return std::vector<Tensor>{v[0].neg()};
                            },
                            in_a, std::span<const kiln::ir::TensorType>(&t, 1))
                           ->output();
  bool expired_in_f2 = false;
  kiln::ir::Value* in_b[] = {b};
  kiln::ir::Value* c = g.create_fallback(
                            "Check",
                            [seen, &expired_in_f2](const std::vector<Tensor>& v) {
                              expired_in_f2 = seen->expired();
                              return std::vector<Tensor>{v[0]};
                            },
                            in_b, std::span<const kiln::ir::TensorType>(&t, 1))
                           ->output();
  g.add_output(c);
  (void)kiln::interpret(g, {input({2}, 41)});
  EXPECT_TRUE(expired_in_f2);
}

}  // namespace
}  // namespace kiln_test
