// Golden IR text of small traced models: the traced structure (ops, attributes, types, call
// sites), not numbers. Each model's TracedFunction::str() must equal tests/golden/traced/NAME.ir.
// After an intended change, regenerate with KILN_UPDATE_GOLDEN=1 and review the diff by eye.
// The call sites name lines of this file, so edits above a model shift its golden text.
#include <fstream>
#include <sstream>

#include "kiln/base/options.h"
#include "kiln/ir/verifier.h"
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;

Tensor input(kiln::Shape shape, uint32_t seed) {
  std::vector<float> v = random_vector<float>(static_cast<size_t>(ref_numel(shape)), -1, 1, seed);
  return kiln::from_vector(v, std::move(shape));
}

// x0 [4, 3] data, x1 [3, 5] and x2 [5] first layer, x3 [5, 2] second layer, x4 i64[4] labels.
Tensor mlp_loss(const std::vector<Tensor>& x) {
  Tensor h = kiln::relu(kiln::mm(x[0], x[1]) + x[2]);
  Tensor logits = kiln::mm(h, x[3]);
  return kiln::cross_entropy(logits, x[4]);
}

std::vector<Tensor> mlp(const std::vector<Tensor>& x) {
  return {mlp_loss(x)};
}

// LayerNorm over the last dim, written with mean/var/sub/div: x0 [2, 4], weight x1, bias x2.
std::vector<Tensor> layer_norm_composite(const std::vector<Tensor>& x) {
  Tensor mu = kiln::mean(x[0], {-1}, /*keepdim=*/true);
  Tensor var = kiln::var(x[0], {-1}, /*correction=*/0, /*keepdim=*/true);
  Tensor y = (x[0] - mu) / kiln::sqrt(var + 1e-5);
  return {y * x[1] + x[2]};
}

// Single-head attention: q, k, v [2, 4, 8].
std::vector<Tensor> attention(const std::vector<Tensor>& x) {
  Tensor scores = kiln::bmm(x[0], x[1].transpose(1, 2)) / std::sqrt(8.0);
  Tensor p = kiln::softmax(scores, -1);
  return {kiln::bmm(p, x[2])};
}

// The MLP's loss and its gradients w.r.t. the parameters: the joint forward+backward graph.
std::vector<Tensor> mlp_joint(const std::vector<Tensor>& x) {
  Tensor loss = mlp_loss(x);
  std::vector<Tensor> g = kiln::autograd::grad({loss}, {x[1], x[2], x[3]});
  return {loss, g[0], g[1], g[2]};
}

std::vector<Tensor> mlp_inputs(bool requires_grad) {
  std::vector<Tensor> x = {input({4, 3}, 1), input({3, 5}, 2), input({5}, 3), input({5, 2}, 4),
                           kiln::from_vector<int64_t>({0, 1, 1, 0})};
  if (requires_grad) {
    for (size_t i = 1; i <= 3; ++i)
      x[i].requires_grad_();
  }
  return x;
}

std::string golden_path(const std::string& name) {
  return fmt::format("{}/traced/{}.ir", KILN_GOLDEN_DIR, name);
}

void check_golden(const std::string& name, const kiln::TracedFunction& f) {
  kiln::ir::verify(f.graph());
  std::string actual = f.str();
  std::string path = golden_path(name);
  if (kiln::options().update_golden) {
    std::ofstream(path) << actual;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing " << path << "; run with KILN_UPDATE_GOLDEN=1 to create it";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden " << path
                                    << " differs; if the change is intended, rerun with "
                                       "KILN_UPDATE_GOLDEN=1 and review the diff";
}

TEST(TracedGolden, MlpCrossEntropy) {
  check_golden("mlp_cross_entropy", kiln::trace(mlp, mlp_inputs(false)));
}

TEST(TracedGolden, LayerNormComposite) {
  check_golden("layer_norm_composite",
               kiln::trace(layer_norm_composite, {input({2, 4}, 5), input({4}, 6), input({4}, 7)}));
}

TEST(TracedGolden, AttentionSoftmax) {
  check_golden("attention", kiln::trace(attention, {input({2, 4, 8}, 8), input({2, 4, 8}, 9),
                                                    input({2, 4, 8}, 10)}));
}

TEST(TracedGolden, MlpJointForwardBackward) {
  std::vector<Tensor> x = mlp_inputs(true);
  kiln::TracedFunction f = kiln::trace(mlp_joint, x);
  check_golden("mlp_joint", f);
  // The golden graph computes what eager computes.
  std::vector<Tensor> eager = mlp_joint(mlp_inputs(true));
  std::vector<Tensor> got = f(mlp_inputs(true));
  ASSERT_EQ(got.size(), eager.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i].to_vector<float>(), eager[i].to_vector<float>()) << "output " << i;
}

}  // namespace
}  // namespace kiln_test
