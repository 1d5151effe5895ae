// The fusion pass and the lowering on traced graphs: which groups form, the limits they respect,
// and that the lowered graph computes what the unfused graph computes (run both through the
// interpreter). The golden files tests/passes/fuse_*.ir show the grouping as text.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"
#include "kiln/passes/fuse.h"
#include "kiln/passes/lower_fusion_group.h"

namespace kiln::passes {
namespace {

int count(const ir::Graph& g, ir::NodeKind kind) {
  int n = 0;
  for (const ir::Node* node : g.nodes())
    if (node->kind() == kind) ++n;
  return n;
}

// Ops outside groups that launch a kernel (views do not).
int loose_kernels(const ir::Graph& g) {
  int n = 0;
  for (const ir::Node* node : g.nodes())
    if (node->kind() == ir::NodeKind::Op && !node->op()->has(kView)) ++n;
  return n;
}

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::vector<double> a = got[i].to_vector<double>(), b = want[i].to_vector<double>();
    ASSERT_EQ(a.size(), b.size()) << "output " << i;
    for (size_t k = 0; k < a.size(); ++k)
      EXPECT_NEAR(a[k], b[k], 1e-5 * (1 + std::abs(b[k]))) << "output " << i << " element " << k;
  }
}

// Fuses and lowers a copy of `traced`, checks the result verifies, and that it computes the
// traced graph's outputs on `inputs`. Returns the fused graph.
std::shared_ptr<ir::Graph> fuse_and_check(const ir::Graph& traced,
                                          const std::vector<Tensor>& inputs,
                                          const FusionOptions& options = {}) {
  std::shared_ptr<ir::Graph> g = traced.clone();
  fuse(*g, options);
  lower_fusion_groups(*g);
  ir::verify(*g);
  expect_close(interpret(*g, inputs), interpret(traced, inputs));
  return g;
}

TEST(Fuse, LogSoftmaxPatternIsOneGroup) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor shifted = in[0] - amax(in[0], {-1}, true);
    return std::vector<Tensor>{shifted - log(sum(exp(shifted), {-1}, true))};
  };
  Tensor x = randn({5, 7});
  TracedFunction f = trace(fn, {x});
  std::shared_ptr<ir::Graph> g = fuse_and_check(f.graph(), {randn({5, 7})});
  EXPECT_EQ(count(*g, ir::NodeKind::FusionGroup), 1) << g->str();
  EXPECT_EQ(loose_kernels(*g), 0) << g->str();
}

// A reduction over the leading dim (a bias gradient) with its pointwise producer, which is also
// an output: one group whose kernel stores both.
TEST(Fuse, ColumnReductionKeepsItsProducerAsAnOutput) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor g = in[0] * sigmoid(in[1]);
    return std::vector<Tensor>{g, sum(g, {0})};
  };
  TracedFunction f = trace(fn, {randn({6, 4}), randn({6, 4})});
  std::shared_ptr<ir::Graph> g = fuse_and_check(f.graph(), {randn({6, 4}), randn({6, 4})});
  EXPECT_EQ(count(*g, ir::NodeKind::FusionGroup), 1) << g->str();
}

// Eight inputs added in a chain: with a limit of 4 buffers per kernel the chain splits, and
// every group stays within the limit.
TEST(Fuse, RespectsTheKernelArgumentLimit) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor acc = in[0];
    for (size_t i = 1; i < in.size(); ++i)
      acc = acc + in[i];
    return std::vector<Tensor>{acc};
  };
  std::vector<Tensor> inputs;
  for (int i = 0; i < 8; ++i)
    inputs.push_back(randn({3}));
  TracedFunction f = trace(fn, inputs);
  std::shared_ptr<ir::Graph> g = fuse_and_check(f.graph(), inputs, FusionOptions{4});
  EXPECT_GT(count(*g, ir::NodeKind::FusionGroup), 1) << g->str();
  for (const ir::Node* n : g->nodes()) {
    if (n->kind() != ir::NodeKind::FusionGroup) continue;
    EXPECT_LE(n->num_inputs() + n->num_outputs(), 4u) << g->str();
  }
  // Without the limit the chain is one kernel.
  std::shared_ptr<ir::Graph> whole = fuse_and_check(f.graph(), inputs);
  EXPECT_EQ(count(*whole, ir::NodeKind::FusionGroup), 1) << whole->str();
}

// A broadcast that does not run along the reduced dims (a [3] row vector added to a [3, 3]
// tensor's row sums, which broadcast along the other dim) cannot read the per-row value: the
// consumer stays in another group, and the result is still right.
TEST(Fuse, TransposedBroadcastOfAReducedValueIsNotFused) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor s = sum(in[0], {1});             // [3], one per row
    return std::vector<Tensor>{in[0] + s};  // s broadcasts along dim 0: s[j] for element (i, j)
  };
  TracedFunction f = trace(fn, {randn({3, 3})});
  std::shared_ptr<ir::Graph> g = fuse_and_check(f.graph(), {randn({3, 3})});
  EXPECT_EQ(count(*g, ir::NodeKind::FusionGroup), 2) << g->str();
}

// A chain of 600 pointwise ops fuses into groups of at most max_group_nodes nodes, which still
// compute the chain (the cap keeps LLVM's per-kernel time bounded).
TEST(Fuse, RespectsTheGroupSizeLimit) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor y = in[0];
    for (int i = 0; i < 600; ++i)
      y = i % 2 == 0 ? y * 1.001 : y + 0.25;
    return std::vector<Tensor>{y};
  };
  std::vector<Tensor> inputs{randn({5})};
  TracedFunction f = trace(fn, inputs);
  FusionOptions options;
  options.max_group_nodes = 256;
  std::shared_ptr<ir::Graph> g = fuse_and_check(f.graph(), inputs, options);
  EXPECT_EQ(count(*g, ir::NodeKind::FusionGroup), 3) << "600 nodes in groups of 256";
  for (const ir::Node* n : g->nodes()) {
    if (n->kind() != ir::NodeKind::FusionGroup) continue;
    const ir::Graph& sub = *n->fusion_group().subgraph;
    EXPECT_LE(count(sub, ir::NodeKind::Op), 256) << "ops in one group";
  }
  options.max_group_nodes = 1000;
  EXPECT_EQ(count(*fuse_and_check(f.graph(), inputs, options), ir::NodeKind::FusionGroup), 1);
}

// A value used both right away and far later: with a span limit smaller than the distance, the
// far use cannot join the producer's group (the value is materialized), and the result holds.
TEST(Fuse, RespectsTheGroupSpanLimit) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor early = exp(in[0]);
    Tensor y = early;
    for (int i = 0; i < 40; ++i)
      y = relu(in[1] * static_cast<double>(i) - y);  // its own chain, not through `early`
    return std::vector<Tensor>{y * early};
  };
  std::vector<Tensor> inputs{randn({4}), randn({4})};
  TracedFunction f = trace(fn, inputs);
  FusionOptions options;
  options.max_group_span = 8;
  std::shared_ptr<ir::Graph> g = fuse_and_check(f.graph(), inputs, options);
  EXPECT_GT(count(*g, ir::NodeKind::FusionGroup), 1) << g->str();
  options.max_group_span = 1 << 20;
  EXPECT_EQ(count(*fuse_and_check(f.graph(), inputs, options), ir::NodeKind::FusionGroup), 1);
}

}  // namespace
}  // namespace kiln::passes
