// Training steps under dynamic shapes (issue 38's Done-when; docs/dynamic_shapes.md): the
// backward pass is traced over symbols too (Note [Symbolic saved sizes]), so a transformer
// block trained at drawn batch sizes and sequence lengths compiles a static plan and one
// symbolic plan, and every loss and gradient matches eager at every size. Not run under ASan
// (scripts/test.sh): the drawn sizes make it one of the longer tests.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compile/compare.h"
#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::CompiledFunction;
using kiln::SymInt;
using kiln::Tensor;
using Fn = CompiledFunction::Fn;

// A pre-LayerNorm encoder block (d 32, 4 heads, 4x GELU MLP, residuals) regressing a target
// with mean squared error. Its shapes are computed from the input's sizes as SymInts, as a
// model written for every batch and sequence length computes them.
struct Block {
  static constexpr int64_t d = 32, heads = 4, dh = d / heads;
  std::vector<Tensor> params;
  Fn loss;
};

Block make_block() {
  Block b;
  const int64_t d = Block::d;
  const double s = 1.0 / std::sqrt(double(d));
  Tensor ln1_w = kiln::ones({d}).requires_grad_(), ln1_b = kiln::zeros({d}).requires_grad_();
  Tensor wq = param({d, d}, s), wk = param({d, d}, s), wv = param({d, d}, s);
  Tensor wo = param({d, d}, s), bo = param({d}, 0.1);
  Tensor ln2_w = kiln::ones({d}).requires_grad_(), ln2_b = kiln::zeros({d}).requires_grad_();
  Tensor w_fc = param({4 * d, d}, s), b_fc = param({4 * d}, 0.1);
  Tensor w_proj = param({d, 4 * d}, 0.5 / std::sqrt(double(4 * d))), b_proj = param({d}, 0.1);
  b.params = {ln1_w, ln1_b, wq, wk, wv, wo, bo, ln2_w, ln2_b, w_fc, b_fc, w_proj, b_proj};
  b.loss = [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    SymInt batch = x.sym_size(0), seq = x.sym_size(1);
    auto split_heads = [&](const Tensor& t) {
      return t.view_symint({batch, seq, Block::heads, Block::dh}).transpose(1, 2);
    };
    Tensor h = kiln::layer_norm(x, {d}, ln1_w, ln1_b);
    Tensor q = split_heads(kiln::linear(h, wq)), k = split_heads(kiln::linear(h, wk));
    Tensor v = split_heads(kiln::linear(h, wv));
    Tensor scores = kiln::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(Block::dh)));
    Tensor attended =
        kiln::matmul(kiln::softmax(scores, -1), v).transpose(1, 2).reshape_symint({batch, seq, d});
    Tensor x1 = x + kiln::linear(attended, wo, bo);
    Tensor h2 = kiln::layer_norm(x1, {d}, ln2_w, ln2_b);
    Tensor x2 = x1 + kiln::linear(kiln::gelu(kiln::linear(h2, w_fc, b_fc), "tanh"), w_proj, b_proj);
    return std::vector<Tensor>{kiln::mse_loss(x2, in[1])};
  };
  return b;
}

// The loss and every parameter's gradient of one step of `f`, with the gradients reset first.
std::vector<Tensor> step(const Fn& f, const Block& b, const std::vector<Tensor>& batch) {
  for (const Tensor& p : b.params)
    p.mutable_grad() = Tensor();
  Tensor loss = f(batch)[0];
  loss.backward();
  std::vector<Tensor> out{loss.detach()};
  for (const Tensor& p : b.params)
    out.push_back(p.grad().clone());
  return out;
}

TEST(DynamicTraining, ATransformerBlockCompilesTwiceForTwelveDrawnSizes) {
  kiln::manual_seed(38);
  Block b = make_block();
  CompiledFunction f = kiln::compile(b.loss, {.name = "block"});
  // Batch sizes 2..64 and sequence lengths 16..512. A pair of more than 4096 tokens is drawn
  // again (it only makes the test slower), and so is one whose batch equals its sequence
  // length: equal dims share a symbol (duck sizing, as in torch), which the next pair would
  // not bind.
  std::mt19937 rng(38);
  std::uniform_int_distribution<int64_t> batch_size(2, 64), seq_len(16, 512);
  for (int draw = 0; draw < 12; ++draw) {
    int64_t batch = 0, seq = 0;
    do {
      batch = batch_size(rng);
      seq = seq_len(rng);
    } while (batch * seq > 4096 || batch == seq);
    SCOPED_TRACE(::testing::Message() << "draw " << draw << ": batch " << batch << ", seq " << seq);
    std::vector<Tensor> in{kiln::randn({batch, seq, Block::d}),
                           kiln::randn({batch, seq, Block::d})};
    std::vector<Tensor> compiled = step(f, b, in);
    std::vector<Tensor> eager = step(b.loss, b, in);
    expect_all_close(compiled, eager, kReductionTol, "loss, then each parameter's gradient");
    // Train: plain SGD with eager's gradients, so both keep the same parameters.
    kiln::NoGradGuard no_grad;
    for (size_t i = 0; i < b.params.size(); ++i)
      b.params[i].sub_(eager[i + 1] * 0.05);
  }
  kiln::CompileStats st = f.stats();
  EXPECT_EQ(st.compiles, 2) << f.dump();  // the static first call, then one symbolic plan
  EXPECT_EQ(st.eager_calls, 0);
  EXPECT_NE(f.dump().find("symbolic sizes"), std::string::npos) << f.dump();
}

// The same block with dynamic=True: one plan from the first call, which also serves a batch
// size of 1 through a specialized plan of its own (sizes 0 and 1 are never symbols).
TEST(DynamicTraining, DynamicTrueTrainsWithOnePlanAndBatchOneAddsOne) {
  kiln::manual_seed(39);
  Block b = make_block();
  CompiledFunction f = kiln::compile(b.loss, {.name = "block", .dynamic = true});
  for (auto [batch, seq] : {std::pair{4, 24}, {3, 40}, {6, 17}, {1, 33}}) {
    SCOPED_TRACE(::testing::Message() << "batch " << batch << ", seq " << seq);
    std::vector<Tensor> in{kiln::randn({batch, seq, Block::d}),
                           kiln::randn({batch, seq, Block::d})};
    expect_all_close(step(f, b, in), step(b.loss, b, in), kReductionTol,
                     "loss, then each parameter's gradient");
  }
  EXPECT_EQ(f.stats().compiles, 2) << f.dump();
}

}  // namespace
}  // namespace kiln_test
