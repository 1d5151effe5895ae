// The ten workloads of the suite (Note [Benchmark suite], workload.h). Ideal bytes count each
// input read once and each output written once over forward and backward together; gradients
// of inputs that require grad are outputs.
#include <cmath>

#include "workload.h"

namespace kiln::bench {
namespace {

using Fn = CompiledFunction::Fn;
constexpr int64_t kF32 = 4;

Tensor leaf(const Tensor& t) {
  return t.detach().requires_grad_();
}

Tensor gelu_tanh(const Tensor& x) {
  Tensor inner = (x + x * x * x * 0.044715) * 0.7978845608028654;
  return x * 0.5 * (inner.tanh() + 1.0);
}

Instance gelu_chain(int64_t n) {
  manual_seed(1);
  Instance in;
  in.fn = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{gelu_tanh(x[0])}; };
  in.inputs = {leaf(randn({n}))};
  in.grad_seeds = {randn({n})};
  in.params = in.inputs;
  in.ideal_bytes = 4 * n * kF32;  // x, dy read; y, dx written
  return in;
}

Instance bias_dropout_residual() {
  const int64_t rows = 8192, cols = 1024, n = rows * cols;
  manual_seed(2);
  Instance in;
  Tensor b = leaf(randn({cols}) * 0.1);
  in.fn = [b](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{dropout(x[0] + b, 0.1, true) + x[1]};
  };
  in.inputs = {leaf(randn({rows, cols})), leaf(randn({rows, cols}))};
  in.grad_seeds = {randn({rows, cols})};
  in.params = {in.inputs[0], in.inputs[1], b};
  in.ideal_bytes = 6 * n * kF32;  // x, residual, dy read; y, dx, dresidual written
  return in;
}

Instance composite_layer_norm() {
  const int64_t rows = 8192, cols = 1024, n = rows * cols;
  manual_seed(3);
  Instance in;
  Tensor w = leaf(rand({cols})), b = leaf(rand({cols}));
  in.fn = [w, b](const std::vector<Tensor>& x) {
    Tensor mu = mean(x[0], {1}, true);
    Tensor d = x[0] - mu;
    Tensor var = mean(d * d, {1}, true);
    return std::vector<Tensor>{d * (var + 1e-5).rsqrt() * w + b};
  };
  in.inputs = {leaf(randn({rows, cols}))};
  in.grad_seeds = {randn({rows, cols})};
  in.params = {in.inputs[0], w, b};
  in.ideal_bytes = 4 * n * kF32 + 4 * cols * kF32;  // x, dy read; y, dx written; w, b, dw, db
  return in;
}

Instance softmax_cross_entropy() {
  const int64_t rows = 8192, cols = 1024;
  manual_seed(4);
  Instance in;
  in.fn = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{cross_entropy(x[0], x[1])};
  };
  in.inputs = {leaf(randn({rows, cols})), argmax(randn({rows, cols}), 1)};
  in.grad_seeds = {Tensor()};
  in.params = {in.inputs[0]};
  in.ideal_bytes = 2 * rows * cols * kF32 + rows * 8;  // logits read, dlogits written; targets
  return in;
}

// SGD on `params`, as a training step's update.
std::function<void()> sgd(std::vector<Tensor> params) {
  return [params] { models::sgd_step(params, 1e-3); };
}

Instance mlp_step() {
  const int64_t batch = 256, d = 1024, hidden = 4096;
  manual_seed(5);
  Instance in;
  Tensor w1 = leaf(randn({hidden, d}) * (1.0 / 32)), b1 = leaf(zeros({hidden}));
  Tensor w2 = leaf(randn({d, hidden}) * (1.0 / 64)), b2 = leaf(zeros({d}));
  in.fn = [=](const std::vector<Tensor>& x) {
    Tensor h = gelu(linear(x[0], w1, b1), "tanh");
    return std::vector<Tensor>{mse_loss(linear(h, w2, b2), x[1])};
  };
  in.inputs = {randn({batch, d}), randn({batch, d})};
  in.grad_seeds = {Tensor()};
  in.params = {w1, b1, w2, b2};
  in.update = sgd(in.params);
  return in;
}

Instance lstm_cell_10_steps() {
  const int64_t batch = 64, hidden = 512, steps = 10;
  manual_seed(6);
  Instance in;
  double s = 1.0 / std::sqrt(double(hidden));
  Tensor wx = leaf(randn({4 * hidden, hidden}) * s), wh = leaf(randn({4 * hidden, hidden}) * s);
  Tensor b = leaf(zeros({4 * hidden}));
  in.fn = [=](const std::vector<Tensor>& x) {
    Tensor h = zeros({batch, hidden}), c = zeros({batch, hidden});
    for (int64_t t = 0; t < steps; ++t) {
      Tensor gates = linear(x[0].select(0, t), wx, b) + linear(h, wh);
      std::vector<Tensor> g = split(gates, hidden, 1);
      Tensor i = sigmoid(g[0]), f = sigmoid(g[1]), cell = tanh(g[2]), o = sigmoid(g[3]);
      c = f * c + i * cell;
      h = o * tanh(c);
    }
    return std::vector<Tensor>{(h * h).mean()};
  };
  in.inputs = {randn({steps, batch, hidden})};
  in.grad_seeds = {Tensor()};
  in.params = {wx, wh, b};
  in.update = sgd(in.params);
  return in;
}

Instance attention() {
  const int64_t batch = 2, heads = 4, seq = 256, dh = 64;
  manual_seed(7);
  Instance in;
  in.fn = [=](const std::vector<Tensor>& x) {
    Tensor scores = matmul(x[0], x[1].transpose(-2, -1)) * (1.0 / std::sqrt(double(dh)));
    return std::vector<Tensor>{matmul(softmax(scores, -1), x[2])};
  };
  for (int i = 0; i < 3; ++i)
    in.inputs.push_back(leaf(randn({batch, heads, seq, dh})));
  in.grad_seeds = {randn({batch, heads, seq, dh})};
  in.params = in.inputs;
  return in;
}

Instance transformer_block_step() {
  models::Model m = models::make_model("transformer", 8);
  Instance in;
  in.fn = m.loss;
  in.inputs = m.batch(0);
  in.grad_seeds = {Tensor()};
  in.params = m.params;
  in.update = sgd(m.params);
  return in;
}

// Adam over 50 parameters of 2^16 floats each: the step is the update itself (no backward),
// written in place into the arguments: parameters, then first moments, then second moments;
// the gradients come last.
// kiln::optim::Adam over 50 parameters whose gradients are set: the eager variant runs the
// update as tensor ops (fused(false)), the compiled one as the multi-tensor kernel.
Instance adam_update() {
  const int64_t count = 50, n = int64_t{1} << 16;
  manual_seed(9);
  auto params = std::make_shared<std::vector<Tensor>>();
  for (int64_t i = 0; i < count; ++i) {
    params->push_back(randn({n}));
    params->back().mutable_grad() = randn({n});
  }
  Instance in;
  in.optimizer_step = [params](bool compiled) {
    auto opt = std::make_shared<optim::Adam>(*params, optim::AdamOptions(1e-3).fused(compiled));
    return std::function<void()>([opt] { opt->step(); });
  };
  in.ideal_bytes = 7 * count * n * kF32;  // p, m, v, g read; p, m, v written
  return in;
}

// 64 pointwise ops on 16 floats: what a call costs beyond its arithmetic.
Instance op_chain_64() {
  manual_seed(10);
  Instance in;
  in.fn = [](const std::vector<Tensor>& x) {
    Tensor y = x[0];
    for (int i = 0; i < 16; ++i)
      y = (y * 0.9 + 0.1).tanh().sin();
    return std::vector<Tensor>{y};
  };
  in.inputs = {leaf(randn({16}))};
  in.grad_seeds = {randn({16})};
  in.params = in.inputs;
  return in;
}

}  // namespace

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> all = {
      {"gelu_chain_2e24", "GELU-tanh composite on 2^24 f32", Bound::Memory,
       [] { return gelu_chain(int64_t{1} << 24); }},
      {"gelu_chain_2e12", "GELU-tanh composite on 2^12 f32 (overhead)", Bound::Memory,
       [] { return gelu_chain(int64_t{1} << 12); }},
      {"bias_dropout_residual", "(x + b) -> dropout 0.1 -> + residual, [8192, 1024]", Bound::Memory,
       bias_dropout_residual},
      {"layer_norm", "composite LayerNorm with weight and bias, [8192, 1024]", Bound::Memory,
       composite_layer_norm},
      {"softmax_cross_entropy", "cross_entropy (log_softmax + nll), [8192, 1024]", Bound::Memory,
       softmax_cross_entropy},
      {"mlp_step", "MLP 1024->4096 GELU ->1024, batch 256, MSE, SGD step", Bound::Flops, mlp_step},
      {"lstm_cell_10", "LSTM cell x10 steps, batch 64, hidden 512, SGD step", Bound::Flops,
       lstm_cell_10_steps},
      {"attention", "attention with materialized scores, B2 h4 S256 d64", Bound::Flops, attention},
      {"transformer_block_step", "GPT-style block d256 h4 S128 B4, MSE, SGD step", Bound::Flops,
       transformer_block_step},
      {"adam_50_params", "kiln::optim::Adam step over 50 tensors of 2^16 f32 (no backward)",
       Bound::Memory, adam_update},
      {"op_chain_64", "64 pointwise ops on 16 f32", Bound::Overhead, op_chain_64},
  };
  return all;
}

}  // namespace kiln::bench
