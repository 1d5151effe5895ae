#include "kiln/frontend/models.h"

#include <cmath>
#include <limits>

#include "kiln/base/error.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln::models {

namespace {

constexpr int64_t kBatchesPerModel = 4;

// Parameters and data are drawn on the CPU and then copied to the model's device, so a model
// on a GPU starts from the same numbers as the same model on the CPU.
Tensor param(Shape sizes, double scale, Device device) {
  return (randn(std::move(sizes)) * scale).to(device).requires_grad_();
}
Tensor zero_param(Shape sizes, Device device) {
  return zeros(std::move(sizes)).to(device).requires_grad_();
}
Tensor one_param(Shape sizes, Device device) {
  return ones(std::move(sizes)).to(device).requires_grad_();
}

Model make_mlp(Device device) {
  const int64_t batch = 256, features = 512, hidden = 1024, classes = 10;
  Model m;
  m.name = "mlp";
  m.summary =
      "MLP classifier: Linear 512->1024, GELU-tanh, Linear 1024->10, cross-entropy; "
      "batch 256";
  Tensor w1 = param({hidden, features}, 1.0 / std::sqrt(double(features)), device),
         b1 = zero_param({hidden}, device);
  Tensor w2 = param({classes, hidden}, 1.0 / std::sqrt(double(hidden)), device),
         b2 = zero_param({classes}, device);
  m.params = {w1, b1, w2, b2};
  Tensor teacher = randn({features, classes});
  for (int64_t i = 0; i < kBatchesPerModel; ++i) {
    Tensor x = randn({batch, features});
    m.batches.push_back({x.to(device), argmax(matmul(x, teacher), 1).to(device)});
  }
  m.loss = [w1, b1, w2, b2](const std::vector<Tensor>& in) {
    Tensor h = gelu(linear(in[0], w1, b1), "tanh");
    return std::vector<Tensor>{cross_entropy(linear(h, w2, b2), in[1])};
  };
  return m;
}

Model make_transformer(Device device) {
  const int64_t batch = 4, seq = 128, d = 256, heads = 4, dh = d / heads;
  Model m;
  m.name = "transformer";
  m.summary =
      "GPT-style block: LayerNorm, 4-head causal attention (materialized scores), "
      "LayerNorm, MLP 256->1024->256 with GELU-tanh, residuals, MSE; batch 4 x seq 128, "
      "d 256";
  const double s = 1.0 / std::sqrt(double(d));
  Tensor ln1_w = one_param({d}, device), ln1_b = zero_param({d}, device);
  Tensor wq = param({d, d}, s, device), wk = param({d, d}, s, device);
  Tensor wv = param({d, d}, s, device);
  Tensor wo = param({d, d}, s, device), bo = zero_param({d}, device);
  Tensor ln2_w = one_param({d}, device), ln2_b = zero_param({d}, device);
  Tensor w_fc = param({4 * d, d}, s, device), b_fc = zero_param({4 * d}, device);
  Tensor w_proj = param({d, 4 * d}, 0.5 / std::sqrt(double(4 * d)), device);
  Tensor b_proj = zero_param({d}, device);
  m.params = {ln1_w, ln1_b, wq, wk, wv, wo, bo, ln2_w, ln2_b, w_fc, b_fc, w_proj, b_proj};
  Tensor teacher = randn({d, d}) * s;
  for (int64_t i = 0; i < kBatchesPerModel; ++i) {
    Tensor x = randn({batch, seq, d});
    m.batches.push_back({x.to(device), tanh(matmul(x, teacher)).to(device)});
  }
  // True above the diagonal: position i attends to positions j <= i only.
  Tensor future = lt(arange(seq).view({seq, 1}), arange(seq).view({1, seq})).to(device);
  m.loss = [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    auto split_heads = [&](const Tensor& t) {
      return t.view({batch, seq, heads, dh}).transpose(1, 2);  // [B, H, S, dh]
    };
    Tensor h = layer_norm(x, {d}, ln1_w, ln1_b);
    Tensor q = split_heads(linear(h, wq)), k = split_heads(linear(h, wk));
    Tensor v = split_heads(linear(h, wv));
    Tensor scores = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(dh)));
    scores = masked_fill(scores, future, -std::numeric_limits<double>::infinity());
    Tensor attended = matmul(softmax(scores, -1), v).transpose(1, 2).reshape({batch, seq, d});
    Tensor x1 = x + linear(attended, wo, bo);
    Tensor h2 = layer_norm(x1, {d}, ln2_w, ln2_b);
    Tensor x2 = x1 + linear(gelu(linear(h2, w_fc, b_fc), "tanh"), w_proj, b_proj);
    return std::vector<Tensor>{mse_loss(x2, in[1])};
  };
  return m;
}

}  // namespace

std::vector<std::string> model_names() {
  return {"mlp", "transformer"};
}

Model make_model(std::string_view name, uint64_t seed, Device device) {
  manual_seed(seed);
  if (name == "mlp") return make_mlp(device);
  if (name == "transformer") return make_transformer(device);
  std::string known;
  for (const std::string& n : model_names())
    known += (known.empty() ? "" : ", ") + n;
  KILN_ERROR("models: unknown model '{}' (known: {})", name, known);
}

void sgd_step(const std::vector<Tensor>& params, double lr) {
  NoGradGuard no_grad;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    KILN_CHECK(g.defined(), "sgd_step: a parameter of shape {} has no gradient",
               shape_str(p.sizes()));
    p.sub_(g, lr);
    p.mutable_grad() = Tensor();
  }
}

}  // namespace kiln::models
