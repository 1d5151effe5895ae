// The forward/backward partition of a joint graph (Note [Joint graph layout]): structure against
// hand-checked text, and the composed forward+backward against the joint graph run whole.
#include <gtest/gtest.h>

#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/parser.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"
#include "kiln/passes/min_cut.h"
#include "kiln/passes/partition.h"

namespace kiln::passes {
namespace {

// y = exp(x) * w with gradient placeholder gy: dx = gy * w * exp(x), dw = gy * exp(x).
constexpr const char* kJoint = R"(graph(%x : f32[4], %w : f32[4], %gy : f32[4]):
  %0 : f32[4] = exp(%x)
  %1 : f32[4] = mul(%0, %w) {alpha=1}
  %2 : f32[4] = mul(%gy, %w) {alpha=1}
  %3 : f32[4] = mul(%2, %0) {alpha=1}
  %4 : f32[4] = mul(%gy, %0) {alpha=1}
  %5 : f32[4] = prim.constant() {value=[1.0, 1.0, 1.0, 1.0]}
  %6 : f32[4] = mul(%4, %5) {alpha=1}
  return (%1, %3, %6)
)";

TEST(Partition, SavesWhatBackwardReads) {
  auto joint = ir::parse(kJoint);
  Partition p = partition_joint_graph(*joint, JointLayout{2, 1}, PartitionOptions{false});
  ir::verify(*p.forward);
  ir::verify(*p.backward);
  EXPECT_EQ(p.forward->str(), R"(graph(%x : f32[4], %w : f32[4]):
  %0 : f32[4] = exp(%x)
  %1 : f32[4] = mul(%0, %w) {alpha=1}
  return (%1, %w, %0)
)");
  // The constant is copied into backward, not saved.
  EXPECT_EQ(p.backward->str(), R"(graph(%arg0 : f32[4], %arg1 : f32[4], %gy : f32[4]):
  %0 : f32[4] = mul(%gy, %arg0) {alpha=1}
  %1 : f32[4] = mul(%0, %arg1) {alpha=1}
  %2 : f32[4] = mul(%gy, %arg1) {alpha=1}
  %3 : f32[4] = prim.constant() {value=[1.0, 1.0, 1.0, 1.0]}
  %4 : f32[4] = mul(%2, %3) {alpha=1}
  return (%1, %4)
)");
  EXPECT_EQ(p.num_saved, 2u);
  EXPECT_EQ(p.saved_bytes, 2 * 4 * 4);
}

TEST(Partition, ForwardThenBackwardEqualsTheJointGraph) {
  auto joint = ir::parse(kJoint);
  Partition p = partition_joint_graph(*joint, JointLayout{2, 1});
  manual_seed(3);
  Tensor x = randn({4}), w = randn({4}), gy = randn({4});
  std::vector<Tensor> whole = interpret(*joint, {x, w, gy});
  std::vector<Tensor> fwd = interpret(*p.forward, {x, w});
  ASSERT_EQ(fwd.size(), 1u + p.num_saved);
  std::vector<Tensor> bwd_in(fwd.begin() + 1, fwd.end());
  bwd_in.push_back(gy);
  std::vector<Tensor> bwd = interpret(*p.backward, bwd_in);
  ASSERT_EQ(bwd.size(), 2u);
  EXPECT_EQ(fwd[0].to_vector<float>(), whole[0].to_vector<float>());
  EXPECT_EQ(bwd[0].to_vector<float>(), whole[1].to_vector<float>());
  EXPECT_EQ(bwd[1].to_vector<float>(), whole[2].to_vector<float>());
  // And against the closed form.
  std::vector<float> xv = x.to_vector<float>(), wv = w.to_vector<float>(),
                     gv = gy.to_vector<float>(), dx = bwd[0].to_vector<float>();
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(dx[i], gv[i] * wv[i] * std::exp(xv[i]), 1e-5 * (1 + std::abs(dx[i])));
}

TEST(Partition, GradientThatIsATangentOrAPrimal) {
  // y = x + w: both gradients are the tangent itself, so backward has no nodes.
  auto joint = ir::parse(R"(graph(%x : f32[2], %w : f32[2], %gy : f32[2]):
  %0 : f32[2] = add(%x, %w) {alpha=1}
  return (%0, %gy, %gy)
)");
  Partition p = partition_joint_graph(*joint, JointLayout{2, 1});
  EXPECT_EQ(p.num_saved, 0u);
  EXPECT_EQ(p.backward->str(), R"(graph(%gy : f32[2]):
  return (%gy, %gy)
)");
}

TEST(Partition, RejectsAForwardOutputThatReadsATangent) {
  auto joint = ir::parse(R"(graph(%x : f32[2], %gy : f32[2]):
  %0 : f32[2] = add(%x, %gy) {alpha=1}
  return (%0, %gy)
)");
  EXPECT_THROW(partition_joint_graph(*joint, JointLayout{1, 1}), Error);
}

}  // namespace
}  // namespace kiln::passes

namespace kiln::passes {
namespace {

// y = exp(sin(x)), dx = gy * y * cos(x). Saving y and cos(x) costs two f32[64]; saving x alone
// and recomputing sin, exp and cos in backward costs one.
constexpr const char* kRematJoint = R"(graph(%x : f32[64], %gy : f32[64]):
  %0 : f32[64] = sin(%x)
  %1 : f32[64] = exp(%0)
  %2 : f32[64] = mul(%gy, %1) {alpha=1}
  %3 : f32[64] = cos(%x)
  %4 : f32[64] = mul(%2, %3) {alpha=1}
  return (%1, %4)
)";

TEST(Partition, RematerializationSavesTheMinimumCut) {
  auto joint = ir::parse(kRematJoint);
  Partition plain = partition_joint_graph(*joint, JointLayout{1, 1}, PartitionOptions{false});
  EXPECT_EQ(plain.saved_bytes, 2 * 64 * 4);
  Partition remat = partition_joint_graph(*joint, JointLayout{1, 1});
  EXPECT_EQ(remat.saved_bytes, 64 * 4);
  ir::verify(*remat.forward);
  ir::verify(*remat.backward);
  // cos(x) no longer runs in forward at all.
  EXPECT_EQ(remat.forward->str(), R"(graph(%x : f32[64]):
  %0 : f32[64] = sin(%x)
  %1 : f32[64] = exp(%0)
  return (%1, %x)
)");
  EXPECT_EQ(remat.backward->str(), R"(graph(%arg0 : f32[64], %gy : f32[64]):
  %0 : f32[64] = sin(%arg0)
  %1 : f32[64] = exp(%0)
  %2 : f32[64] = mul(%gy, %1) {alpha=1}
  %3 : f32[64] = cos(%arg0)
  %4 : f32[64] = mul(%2, %3) {alpha=1}
  return (%4)
)");
  // Both partitions compute what the joint graph computes.
  manual_seed(9);
  Tensor x = randn({64}), gy = randn({64});
  std::vector<Tensor> whole = interpret(*joint, {x, gy});
  for (const Partition* p : {&plain, &remat}) {
    std::vector<Tensor> fwd = interpret(*p->forward, {x});
    std::vector<Tensor> bwd_in(fwd.begin() + 1, fwd.end());
    bwd_in.push_back(gy);
    EXPECT_EQ(interpret(*p->backward, bwd_in)[0].to_vector<float>(), whole[1].to_vector<float>());
  }
}

// LayerNorm's centring: backward reads d = x - mean(x). Saving d writes f32[64, 32] in forward;
// saving the primal x (alive anyway) and the f32[64, 1] mean writes only the mean, and backward
// recomputes d.
TEST(Partition, RecomputesFromPrimalsRatherThanSavingALargeValue) {
  auto joint = ir::parse(R"(graph(%x : f32[64, 32], %gy : f32[64, 32]):
  %0 : f32[64, 1] = mean(%x) {dims=[1], keepdim=true}
  %1 : f32[64, 32] = sub(%x, %0) {alpha=1}
  %2 : f32[64, 32] = mul(%1, %1) {alpha=1}
  %3 : f32[64, 32] = mul(%gy, %1) {alpha=1}
  %4 : f32[64, 32] = add(%3, %3) {alpha=1}
  return (%2, %4)
)");
  Partition p = partition_joint_graph(*joint, JointLayout{1, 1});
  EXPECT_EQ(p.forward->str(), R"(graph(%x : f32[64, 32]):
  %0 : f32[64, 1] = mean(%x) {dims=[1], keepdim=true}
  %1 : f32[64, 32] = sub(%x, %0) {alpha=1}
  %2 : f32[64, 32] = mul(%1, %1) {alpha=1}
  return (%2, %x, %0)
)");
  EXPECT_EQ(p.num_saved, 2u);
  EXPECT_EQ(p.saved_bytes, 64 * 32 * 4 + 64 * 4);  // the primal counts at its full size
  Partition plain = partition_joint_graph(*joint, JointLayout{1, 1}, PartitionOptions{false});
  EXPECT_EQ(plain.num_saved, 1u);  // d itself
  manual_seed(5);
  Tensor x = randn({64, 32}), gy = randn({64, 32});
  std::vector<Tensor> whole = interpret(*joint, {x, gy});
  std::vector<Tensor> fwd = interpret(*p.forward, {x});
  std::vector<Tensor> bwd_in(fwd.begin() + 1, fwd.end());
  bwd_in.push_back(gy);
  EXPECT_EQ(interpret(*p.backward, bwd_in)[0].to_vector<float>(), whole[1].to_vector<float>());
}

TEST(Partition, NeverRecomputesMatmulsReductionsOrRandomOps) {
  // Recomputing mm or sum from x would save bytes here, but they are not recomputable.
  auto joint = ir::parse(R"(graph(%x : f32[8, 8], %w : f32[8, 1], %gy : f32[8, 1]):
  %0 : f32[8, 1] = mm(%x, %w)
  %1 : f32[8] = sum(%x) {dims=[1], keepdim=false}
  %2 : f32[8, 8] = dropout(%x) {p=0.5, seed=3, offset=0}
  %3 : f32[8, 1] = mul(%gy, %0) {alpha=1}
  %4 : f32[8, 1] = view(%1) {size=[8, 1]}
  %5 : f32[8, 1] = mul(%3, %4) {alpha=1}
  %6 : f32[8, 8] = mul(%2, %5) {alpha=1}
  return (%0, %6)
)");
  Partition p = partition_joint_graph(*joint, JointLayout{2, 1});
  for (const ir::Node* n : p.backward->nodes()) {
    EXPECT_FALSE(n->is_op("mm") || n->is_op("sum") || n->is_op("dropout")) << n->kind_name();
  }
  // The view of the sum is recomputed from the saved sum (same bytes, so the later value wins
  // the tie and the view is saved instead: either way no reduction runs twice).
  EXPECT_EQ(p.num_saved, 3u);
}

TEST(MinCut, FindsTheCheapestSeparation) {
  // 0 -> {2, 3} -> 1 with a cheap bottleneck 2 -> 3.
  MinCut cut(4);
  cut.add_edge(0, 2, 10);
  cut.add_edge(2, 3, 3);
  cut.add_edge(3, 1, 10);
  cut.add_edge(0, 3, 1);
  EXPECT_EQ(cut.solve(0, 1), 4);
  EXPECT_TRUE(cut.on_source_side(2));
  EXPECT_FALSE(cut.on_source_side(3));
}

}  // namespace
}  // namespace kiln::passes
