// constant_fold beyond what text can show: folded values equal the eager results, the size cap
// is exact, and folding inside an active trace records nothing. The rules themselves are covered
// by the golden files tests/passes/constant_fold_*.ir.
#include <gtest/gtest.h>

#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/graph.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"
#include "kiln/passes/constant_fold.h"
#include "kiln/runtime/kernels/factory_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln::passes {
namespace {

std::vector<const ir::Node*> nodes_of_kind(const ir::Graph& g, ir::NodeKind kind) {
  std::vector<const ir::Node*> out;
  for (const ir::Node* n : g.nodes())
    if (n->kind() == kind) out.push_back(n);
  return out;
}

TEST(ConstantFold, FoldedValueEqualsTheEagerResult) {
  manual_seed(11);
  Tensor a = randn({3, 4});
  Tensor b = randn({5, 4});
  // What the folded constant must hold, computed eagerly outside any graph.
  Tensor want = a.mm(b.t()).exp().sum({1});
  TracedFunction f =
      trace([&](const std::vector<Tensor>& x) { return x[0] + a.mm(b.t()).exp().sum({1}); },
            {randn({3})});
  std::shared_ptr<ir::Graph> g = f.graph().clone();
  ASSERT_TRUE(fold_constants(*g));
  ir::verify(*g);

  // Only the add that reads the input is left to compute.
  std::vector<const ir::Node*> ops = nodes_of_kind(*g, ir::NodeKind::Op);
  ASSERT_EQ(ops.size(), 1u) << g->str();
  EXPECT_TRUE(ops[0]->is_op("add"));
  const ir::Node* folded = ops[0]->input(1)->node();
  ASSERT_EQ(folded->kind(), ir::NodeKind::Constant) << g->str();
  EXPECT_EQ(folded->constant().value.sizes(), (Shape{3}));
  // The same kernels ran, so the values agree exactly.
  EXPECT_EQ(folded->constant().value.to_vector<float>(), want.to_vector<float>());

  Tensor x = randn({3});
  EXPECT_EQ(interpret(*g, {x})[0].to_vector<float>(), f({x})[0].to_vector<float>());
}

// Returns neg(v): a graph output keeps its node (constant_fold.h), so tests read what folding
// did through the input of a returned neg.
const ir::Node* return_negated(ir::Graph& g, ir::Value* v) {
  NoAttrs none;
  ir::TensorType t = v->type();
  ir::Node* neg = g.create_op(get_op("neg"), std::span(&v, 1), &none, std::span(&t, 1));
  g.add_output(neg->output());
  return neg;
}

// neg(full(size)).
std::unique_ptr<ir::Graph> full_graph(int64_t numel) {
  auto g = std::make_unique<ir::Graph>();
  FullAttrs attrs{{numel}, 2.0, kFloat32, Device()};
  ir::TensorType t;
  t.sizes = {numel};
  ir::Node* n = g->create_op(get_op("full"), {}, &attrs, std::span(&t, 1));
  return_negated(*g, n->output());
  return g;
}

TEST(ConstantFold, TheSizeCapIsInclusive) {
  const int64_t at_cap = kMaxFoldedBytes / 4;  // f32 elements
  auto fits = full_graph(at_cap);
  EXPECT_TRUE(fold_constants(*fits));
  const ir::Node* folded = fits->outputs()[0]->node()->input(0)->node();
  ASSERT_EQ(folded->kind(), ir::NodeKind::Constant);
  EXPECT_EQ(folded->constant().value.numel(), at_cap);

  auto over = full_graph(at_cap + 1);
  EXPECT_FALSE(fold_constants(*over));
  EXPECT_TRUE(over->outputs()[0]->node()->input(0)->node()->is_op("full"));
}

TEST(ConstantFold, AFoldedViewOwnsCompactStorage) {
  // select(c, 0, 2) is contiguous, so it folds; the constant must not be the 4x4 buffer at an
  // offset (the text format and every reader of constants assume offset 0).
  auto g = std::make_unique<ir::Graph>();
  std::vector<float> data(16);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(i);
  ir::Node* c = g->create_constant(from_vector(data, {4, 4}));
  SelectAttrs attrs{0, 2};
  ir::TensorType t;
  t.sizes = {4};
  ir::Value* in = c->output();
  ir::Node* sel = g->create_op(get_op("select"), std::span(&in, 1), &attrs, std::span(&t, 1));
  return_negated(*g, sel->output());
  ASSERT_TRUE(fold_constants(*g));
  const ir::Node* folded = g->outputs()[0]->node()->input(0)->node();
  ASSERT_EQ(folded->kind(), ir::NodeKind::Constant) << g->str();
  const Tensor& v = folded->constant().value;
  EXPECT_EQ(v.storage_offset(), 0);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{8, 9, 10, 11}));
}

TEST(ConstantFold, FoldingDuringATraceRecordsNothing) {
  manual_seed(3);
  Tensor a = randn({2, 2});
  TracedFunction inner =
      trace([&](const std::vector<Tensor>& x) { return x[0] * a.exp(); }, {randn({2, 2})});
  std::shared_ptr<ir::Graph> g = inner.graph().clone();
  // Fold while another trace is recording: the kernels folding runs must not show up in it.
  TracedFunction outer = trace(
      [&](const std::vector<Tensor>& x) {
        EXPECT_TRUE(fold_constants(*g));
        return x[0].neg();
      },
      {randn({2})});
  std::vector<const ir::Node*> ops = nodes_of_kind(outer.graph(), ir::NodeKind::Op);
  ASSERT_EQ(ops.size(), 1u) << outer.str();
  EXPECT_TRUE(ops[0]->is_op("neg"));
  EXPECT_EQ(nodes_of_kind(*g, ir::NodeKind::Op).size(), 1u) << g->str();  // the mul
}

}  // namespace
}  // namespace kiln::passes
