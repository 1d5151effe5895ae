// End-to-end models through kiln::compile against the same functions run eagerly: outputs and
// gradients (w.r.t. the inputs and the parameters the function captures), over several calls
// with new input values, so that a value baked into a plan shows up as a mismatch.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "compile/compare.h"
#include "kiln/base/philox.h"
#include "kiln/kiln.h"
#include "opaque_cube.h"

namespace kiln_test {
namespace {

using kiln::CompiledFunction;
using kiln::Tensor;
namespace ag = kiln::autograd;
using Fn = CompiledFunction::Fn;

// `fn` compiled and eager on `inputs`: the outputs, and the gradients of sum_k(out_k * go_k)
// w.r.t. `wrt` (go_k random, one per output that requires grad).
void check_call(const CompiledFunction& f, const Fn& fn, const std::vector<Tensor>& inputs,
                const std::vector<Tensor>& wrt, double tol) {
  std::vector<Tensor> eager = fn(inputs);
  std::vector<Tensor> compiled = f(inputs);
  expect_all_close(compiled, eager, tol, "output");
  std::vector<Tensor> eager_diff, compiled_diff, gos;
  for (size_t i = 0; i < eager.size(); ++i) {
    ASSERT_EQ(compiled[i].requires_grad(), eager[i].requires_grad()) << "output " << i;
    if (!eager[i].requires_grad()) continue;
    EXPECT_EQ(compiled[i].grad_fn()->name(), "CompiledBackward") << "output " << i;
    eager_diff.push_back(eager[i]);
    compiled_diff.push_back(compiled[i]);
    gos.push_back(kiln::randn(eager[i].sizes()));
  }
  ASSERT_FALSE(eager_diff.empty());
  std::vector<Tensor> ge = ag::grad(eager_diff, wrt, gos, false, false, true);
  std::vector<Tensor> gc = ag::grad(compiled_diff, wrt, gos, false, false, true);
  expect_all_close(gc, ge, tol, "gradient");
}

TEST(CompileModels, MlpWithCrossEntropy) {
  kiln::manual_seed(10);
  Tensor w1 = param({16, 10}, 0.3), b1 = param({16}), w2 = param({5, 16}, 0.3), b2 = param({5});
  Fn fn = [&](const std::vector<Tensor>& in) {
    Tensor h = kiln::relu(kiln::linear(in[0], w1, b1));
    Tensor logits = kiln::linear(h, w2, b2);
    return std::vector<Tensor>{kiln::cross_entropy(logits, in[1]), logits};
  };
  CompiledFunction f = kiln::compile(fn);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("call " + std::to_string(step));
    Tensor x = param({6, 10});
    Tensor target = kiln::from_vector<int64_t>({0, 4, 1, 2, 3, step}, {6});
    check_call(f, fn, {x, target}, {x, w1, b1, w2, b2}, kReductionTol);
  }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().cache_hits, 2);
}

TEST(CompileModels, CompositeLayerNorm) {
  kiln::manual_seed(11);
  Tensor gamma = param({8}), beta = param({8});
  Fn fn = [&](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Tensor mu = kiln::mean(x, {-1}, true);
    Tensor centered = x - mu;
    Tensor var = kiln::mean(centered * centered, {-1}, true);
    Tensor normed = centered / kiln::sqrt(var + 1e-5);
    return std::vector<Tensor>{normed * gamma + beta};
  };
  CompiledFunction f = kiln::compile(fn);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("call " + std::to_string(step));
    Tensor x = param({4, 3, 8}, 1.0 + step);
    check_call(f, fn, {x}, {x, gamma, beta}, kReductionTol);
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST(CompileModels, Attention) {
  kiln::manual_seed(12);
  const int64_t d = 8;
  Tensor wq = param({d, d}, 0.3), wk = param({d, d}, 0.3), wv = param({d, d}, 0.3);
  Fn fn = [&](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];  // [batch, seq, d]
    Tensor q = kiln::matmul(x, wq), k = kiln::matmul(x, wk), v = kiln::matmul(x, wv);
    Tensor scores = kiln::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(d)));
    return std::vector<Tensor>{kiln::matmul(kiln::softmax(scores, -1), v)};
  };
  CompiledFunction f = kiln::compile(fn);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("call " + std::to_string(step));
    Tensor x = param({2, 5, d});
    check_call(f, fn, {x}, {x, wq, wk, wv}, kReductionTol);
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST(CompileModels, LstmCellUnrolledFiveSteps) {
  kiln::manual_seed(13);
  const int64_t batch = 3, in_size = 4, hidden = 6, steps = 5;
  Tensor w_ih = param({in_size, 4 * hidden}, 0.4), w_hh = param({hidden, 4 * hidden}, 0.4);
  Tensor b = param({4 * hidden}, 0.1);
  Fn fn = [&](const std::vector<Tensor>& in) {
    Tensor h = in[1], c = in[2];
    for (int64_t t = 0; t < steps; ++t) {
      Tensor gates = kiln::matmul(in[0].select(0, t), w_ih) + kiln::matmul(h, w_hh) + b;
      std::vector<Tensor> g = gates.chunk(4, 1);
      Tensor i = kiln::sigmoid(g[0]), fgate = kiln::sigmoid(g[1]);
      Tensor cell = kiln::tanh(g[2]), o = kiln::sigmoid(g[3]);
      c = fgate * c + i * cell;
      h = o * kiln::tanh(c);
    }
    return std::vector<Tensor>{h, c};
  };
  CompiledFunction f = kiln::compile(fn);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("call " + std::to_string(step));
    Tensor xs = param({steps, batch, in_size}), h0 = param({batch, hidden});
    Tensor c0 = param({batch, hidden});
    check_call(f, fn, {xs, h0, c0}, {xs, h0, c0, w_ih, w_hh, b}, kReductionTol);
  }
  kiln::CompileStats st = f.stats();
  EXPECT_EQ(st.compiles, 1);
  EXPECT_GT(st.saved_bytes, 0);
  // The same function partitioned without rematerialization saves strictly more, and gives the
  // same results.
  CompiledFunction plain = kiln::compile(fn, {.rematerialize = false});
  Tensor xs = param({steps, batch, in_size}), h0 = param({batch, hidden});
  Tensor c0 = param({batch, hidden});
  check_call(plain, fn, {xs, h0, c0}, {xs, h0, c0, w_ih, w_hh, b}, kReductionTol);
  kiln::CompileStats before = plain.stats();
  EXPECT_LT(st.saved_bytes, before.saved_bytes);
  std::cout << "[lstm] 5-step LSTM cell (batch 3, input 4, hidden 6): saved_bytes "
            << before.saved_bytes << " without rematerialization, " << st.saved_bytes
            << " with it; forward kernels " << st.forward_kernels << ", backward kernels "
            << st.backward_kernels << "\n";
  ::testing::Test::RecordProperty("lstm_saved_bytes", std::to_string(st.saved_bytes));
  ::testing::Test::RecordProperty("lstm_saved_bytes_without_remat",
                                  std::to_string(before.saved_bytes));
}

TEST(CompileModels, CheckpointInsideCompiledFunction) {
  kiln::manual_seed(14);
  Tensor w1 = param({6, 6}, 0.4), w2 = param({6, 3}, 0.4);
  auto block = [](const Tensor& a, const Tensor& w) {
    return kiln::tanh(kiln::matmul(a, w)) * kiln::sigmoid(a);
  };
  Fn fn = [&](const std::vector<Tensor>& in) {
    Tensor h = kiln::checkpoint(block, in[0], w1);
    return std::vector<Tensor>{kiln::matmul(h, w2).sum()};
  };
  Fn plain = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::matmul(block(in[0], w1), w2).sum()};
  };
  CompiledFunction f = kiln::compile(fn);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("call " + std::to_string(step));
    Tensor x = param({4, 6});
    check_call(f, fn, {x}, {x, w1, w2}, kReductionTol);
    // And against the function without checkpoint.
    Tensor c = f({x})[0];
    Tensor p = plain({x})[0];
    EXPECT_TRUE(close(c, p, kReductionTol));
    expect_all_close(ag::grad({c}, {x, w1, w2}), ag::grad({p}, {x, w1, w2}), kReductionTol,
                     "gradient vs no checkpoint");
  }
}

// Two dropouts, so that one call draws two stretches of random numbers.
Fn dropout_fn(const Tensor& w) {
  return [w](const std::vector<Tensor>& in) {
    Tensor h = kiln::dropout(kiln::matmul(in[0], w), 0.4);
    Tensor h2 = kiln::dropout(kiln::tanh(h), 0.25);
    return std::vector<Tensor>{h2, (h2 * h2).sum()};
  };
}

TEST(CompileModels, DropoutSameMasksAsEagerForTheSameSeed) {
  kiln::manual_seed(15);
  Tensor w = param({5, 7});
  Fn fn = dropout_fn(w);
  CompiledFunction f = kiln::compile(fn);
  std::vector<Tensor> xs = {param({4, 5}), param({4, 5}), param({4, 5})};
  std::vector<Tensor> go = {kiln::randn({4, 7}), kiln::ones({})};
  for (uint64_t seed : {3u, 3u, 8u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // Several calls in a row, with an eager draw between two of them: each compiled call must
    // advance the generator as the eager call does, so later calls see the same state.
    auto run_all = [&](const Fn& g) {
      std::vector<std::vector<Tensor>> results;
      kiln::manual_seed(seed);
      for (size_t k = 0; k < xs.size(); ++k) {
        std::vector<Tensor> out = g({xs[k]});
        std::vector<Tensor> grads = ag::grad(out, {xs[k], w}, go);
        out.insert(out.end(), grads.begin(), grads.end());
        results.push_back(out);
        if (k == 0) results.back().push_back(kiln::randn({3}));
      }
      kiln::GeneratorState s = kiln::get_rng_state();
      results.push_back({kiln::from_vector<int64_t>(
          {static_cast<int64_t>(s.seed), static_cast<int64_t>(s.offset)}, {2})});
      return results;
    };
    auto compiled = run_all(f);
    auto eager = run_all(fn);
    ASSERT_EQ(compiled.size(), eager.size());
    for (size_t k = 0; k < eager.size(); ++k)
      expect_all_close(compiled[k], eager[k], kReductionTol, "call " + std::to_string(k));
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

// A function that seeds the generator itself: eager code draws from the seed it sets, and
// leaves the generator there. The same must hold for its compiled calls, whatever the generator
// state before the call.
TEST(CompileModels, ManualSeedInsideCompiledFunction) {
  Fn fn = [](const std::vector<Tensor>& in) {
    kiln::manual_seed(5);
    return std::vector<Tensor>{kiln::dropout(in[0], 0.5)};
  };
  CompiledFunction f = kiln::compile(fn);
  Tensor x = kiln::ones({4, 8});
  for (kiln::GeneratorState before : {kiln::GeneratorState{7, 0}, kiln::GeneratorState{100, 9}}) {
    SCOPED_TRACE("generator before the call: seed " + std::to_string(before.seed) + ", offset " +
                 std::to_string(before.offset));
    kiln::set_rng_state(before);
    Tensor c = f({x})[0];
    kiln::GeneratorState after_compiled = kiln::get_rng_state();
    kiln::set_rng_state(before);
    Tensor e = fn({x})[0];
    kiln::GeneratorState after_eager = kiln::get_rng_state();
    EXPECT_TRUE(close(c, e, 0));
    EXPECT_EQ(after_compiled.seed, after_eager.seed);
    EXPECT_EQ(after_compiled.offset, after_eager.offset);
  }
}

TEST(CompileModels, TwoBackwardsWithRetainGraphAccumulateLikeEager) {
  kiln::manual_seed(16);
  Tensor w = param({3, 4});
  Fn fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{(kiln::tanh(kiln::matmul(in[0], w)) * in[0].sum()).sum()};
  };
  CompiledFunction f = kiln::compile(fn);
  auto two_backwards = [&](const Fn& g, const Tensor& x) {
    w.mutable_grad() = Tensor();
    x.mutable_grad() = Tensor();
    Tensor y = g({x})[0];
    y.backward({}, /*retain_graph=*/true);
    Tensor once = w.grad().clone();
    y.backward();
    return std::vector<Tensor>{once, w.grad().clone(), x.grad().clone()};
  };
  for (int step = 0; step < 2; ++step) {
    Tensor x = param({2, 3});
    std::vector<Tensor> c = two_backwards(f, x);
    std::vector<Tensor> e = two_backwards(fn, x);
    expect_all_close(c, e, kReductionTol, "grad");
    EXPECT_TRUE(close(c[1], c[0] * 2.0, kReductionTol)) << "second backward doubles .grad";
  }
  w.mutable_grad() = Tensor();
}

TEST(CompileModels, DoubleBackwardThroughCompiledFunction) {
  kiln::manual_seed(17);
  Tensor w = param({3, 4}, 0.5);
  Fn fn = [&](const std::vector<Tensor>& in) {
    Tensor z = kiln::matmul(in[0], w);
    return std::vector<Tensor>{(kiln::tanh(z) * z).sum()};
  };
  CompiledFunction f = kiln::compile(fn);
  auto second_order = [&](const Fn& g, const Tensor& x) {
    Tensor y = g({x})[0];
    std::vector<Tensor> first = ag::grad({y}, {x, w}, {}, false, /*create_graph=*/true);
    Tensor z = (first[0] * first[0]).sum() + (first[1] * kiln::sigmoid(first[1])).sum();
    std::vector<Tensor> second = ag::grad({z}, {x, w});
    first.insert(first.end(), second.begin(), second.end());
    return first;
  };
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("call " + std::to_string(step));
    Tensor x = param({2, 3});
    expect_all_close(second_order(f, x), second_order(fn, x), kReductionTol, "gradient");
  }
}

TEST(CompileModels, GradientsFlowThroughEagerOpsAroundTheCall) {
  kiln::manual_seed(18);
  Tensor w = param({4, 4}, 0.5);
  Fn fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::sigmoid(kiln::matmul(in[0], w)) + in[1]};
  };
  CompiledFunction f = kiln::compile(fn);
  auto around = [&](const Fn& g, const Tensor& raw, const Tensor& bias) {
    Tensor x = raw * 1.5 + 0.25;  // eager op before: the compiled call's input is not a leaf
    Tensor y = g({x, bias})[0];
    Tensor loss = (y * y).mean();  // eager op after
    return ag::grad({loss}, {raw, bias, w});
  };
  for (int step = 0; step < 3; ++step) {
    Tensor raw = param({3, 4}), bias = param({4});
    expect_all_close(around(f, raw, bias), around(fn, raw, bias), kReductionTol, "gradient");
  }
}

TEST(CompileModels, InPlaceWriteToAnInputIsWrittenBackOnce) {
  Fn fn = [](const std::vector<Tensor>& in) {
    in[0].mul_(2.0);
    return std::vector<Tensor>{in[0] + in[1]};
  };
  CompiledFunction f = kiln::compile(fn);
  for (int step = 0; step < 3; ++step) {
    Tensor x = kiln::randn({3, 4}), b = kiln::randn({4});
    Tensor x_eager = x.clone();
    Tensor c = f({x, b})[0];
    Tensor e = fn({x_eager, b})[0];
    EXPECT_TRUE(close(c, e, kPointwiseTol));
    EXPECT_TRUE(close(x, x_eager, kPointwiseTol)) << "the input after the call";
  }
}

TEST(CompileModels, ParametersUpdatedInPlaceAreReadOnEveryCall) {
  kiln::manual_seed(20);
  Tensor w = param({4, 3});
  Fn fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::mse_loss(kiln::matmul(in[0], w), in[1])};
  };
  CompiledFunction f = kiln::compile(fn);
  Tensor x = kiln::randn({5, 4}), target = kiln::randn({5, 3});
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    check_call(f, fn, {x, target}, {w}, kReductionTol);
    // An SGD step, as an optimizer takes it.
    Tensor g = ag::grad({fn({x, target})[0]}, {w})[0];
    kiln::NoGradGuard no_grad;
    w.sub_(g * 0.5);
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

// y = x * scale with the scale read on the host: a forward no trace can record.
struct HostScale : ag::Function<HostScale> {
  static Tensor forward(ag::AutogradContext* ctx, const Tensor& x) {
    double scale = 1.0 + std::abs(x.detach().sum().item<float>());
    ctx->saved_data["scale"] = scale;
    return x * scale;
  }
  static ag::variable_list backward(ag::AutogradContext* ctx, ag::variable_list grads) {
    return {grads[0] * std::any_cast<double>(ctx->saved_data["scale"])};
  }
};

template <class F>
void check_graph_break(const char* what) {
  SCOPED_TRACE(what);
  kiln::manual_seed(19);
  Tensor w1 = param({4, 5}, 0.5), w2 = param({5, 3}, 0.5);
  Fn fn = [&](const std::vector<Tensor>& in) {
    Tensor a = kiln::tanh(kiln::matmul(in[0], w1));  // compiled segment before
    Tensor b = F::apply(a);                          // the eager step
    return std::vector<Tensor>{kiln::sigmoid(kiln::matmul(b, w2)) * 2.0};  // segment after
  };
  CompiledFunction f = kiln::compile(fn);
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("call " + std::to_string(step));
    Tensor x = param({2, 4}, 0.5 + step);
    check_call(f, fn, {x}, {x, w1, w2}, kReductionTol);
  }
  kiln::CompileStats st = f.stats();
  EXPECT_EQ(st.compiles, 1);
  EXPECT_EQ(st.eager_calls, 0);
  EXPECT_GT(st.fallback_ops, 0);
}

TEST(CompileModels, OpaqueBackwardFunctionInTheMiddle) {
  check_graph_break<OpaqueCube>("opaque backward");
}

TEST(CompileModels, HostComputedFunctionInTheMiddle) {
  check_graph_break<HostScale>("forward reads the host");
}

}  // namespace
}  // namespace kiln_test
