// simplify beyond what text can show: the rule table's shape, that simplified traced graphs
// compute what the originals compute, and the one documented floating-point difference. The
// individual rules are covered by the golden files tests/passes/simplify_*.ir.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/graph.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"
#include "kiln/passes/simplify.h"
#include "kiln/passes/simplify_rules.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln::passes {
namespace {

size_t count_ops(const ir::Graph& g) {
  size_t n = 0;
  for (const ir::Node* node : g.nodes())
    n += node->kind() == ir::NodeKind::Op ? 1 : 0;
  return n;
}

TEST(Simplify, EveryRuleIsNamedAndRootedAtATableOp) {
  std::set<std::string_view> names;
  for (const SimplifyRule& r : simplify_rules()) {
    EXPECT_FALSE(r.name.empty());
    EXPECT_TRUE(names.insert(r.name).second) << "two rules named " << r.name;
    EXPECT_NE(OpTable::instance().find(r.root), nullptr) << r.name << ": no op " << r.root;
    EXPECT_NE(r.match, nullptr) << r.name;
    EXPECT_NE(r.rewrite, nullptr) << r.name;
  }
  EXPECT_GE(names.size(), 15u);
}

TEST(Simplify, ASimplifiedTraceComputesTheSame) {
  manual_seed(5);
  Tensor all_ones = ones({4});
  auto fn = [&](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    // Every factor is an identity; float x + 0 and x - 0 are not (-0.0 + 0 is +0.0) and stay.
    Tensor a = x.mul(1).add(0).sub(0.0).div(1.0) * all_ones;
    Tensor b = a.neg().neg().view({2, 6}).view({12}).view({3, 4});
    Tensor c = b.transpose(0, 1).transpose(1, 0).unsqueeze(0).expand({2, 3, 4}).expand({2, 3, 4});
    return std::vector<Tensor>{c.sum({0}), b * 2};
  };
  TracedFunction f = trace(fn, {randn({3, 4})});
  std::shared_ptr<ir::Graph> g = f.graph().clone();
  ASSERT_TRUE(simplify(*g));
  ir::verify(*g);
  EXPECT_FALSE(simplify(*g)) << "a second run found more:\n" << g->str();
  // Left: x + 0 - 0, the unsqueeze, one expand, the sum and b * 2.
  EXPECT_EQ(count_ops(*g), 6u) << f.str() << g->str();

  Tensor x = randn({3, 4});
  std::vector<Tensor> want = f({x});
  std::vector<Tensor> got = interpret(*g, {x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].sizes(), want[i].sizes());
    EXPECT_EQ(got[i].contiguous().to_vector<float>(), want[i].contiguous().to_vector<float>());
  }
}

TEST(Simplify, LongViewChainsCollapseInOneRun) {
  auto g = std::make_unique<ir::Graph>();
  ir::TensorType t;
  t.sizes = {4, 6};
  ir::Value* v = g->add_input(t, "x");
  const std::vector<Shape> sizes = {{24}, {2, 12}, {8, 3}, {6, 4}, {3, 8}};
  for (const Shape& s : sizes) {
    SizeAttrs a{to_sym_shape(s)};
    ir::TensorType out;
    out.sizes = s;
    v = g->create_op(get_op("view"), std::span(&v, 1), &a, std::span(&out, 1))->output();
  }
  g->add_output(v);
  ASSERT_TRUE(simplify(*g));
  ir::verify(*g);
  ASSERT_EQ(count_ops(*g), 1u) << g->str();
  EXPECT_EQ(g->outputs()[0]->node()->attrs_as<SizeAttrs>().size, to_sym_shape(Shape{3, 8}));
  EXPECT_EQ(g->outputs()[0]->node()->input(0), g->input(0));
}

// Floating x + 0 is not x: -0.0 + 0 is +0.0, so simplify leaves it (a neg shows the sign).
TEST(Simplify, FloatXPlusZeroIsKept) {
  auto g = std::make_unique<ir::Graph>();
  ir::TensorType t;
  t.sizes = {1};
  ir::Value* x = g->add_input(t, "x");
  ScalarOperandAttrs zero{0, 1};
  ir::Value* sum =
      g->create_op(get_op("add_scalar"), std::span(&x, 1), &zero, std::span(&t, 1))->output();
  NoAttrs none;
  ir::Node* neg = g->create_op(get_op("neg"), std::span(&sum, 1), &none, std::span(&t, 1));
  g->add_output(neg->output());

  Tensor minus_zero = from_vector<float>({-0.0f}, {1});
  EXPECT_TRUE(std::signbit(interpret(*g, {minus_zero})[0].to_vector<float>()[0]));
  EXPECT_FALSE(simplify(*g));
  EXPECT_TRUE(std::signbit(interpret(*g, {minus_zero})[0].to_vector<float>()[0]));
}

}  // namespace
}  // namespace kiln::passes
