// Verifier checks that text cannot express (values of other graphs, broken use lists, payload
// mismatches), built through the C++ API. The type and SSA checks are also exercised from
// hand-written texts in tests/passes/verify_*.ir.
#include <gtest/gtest.h>

#include "kiln/ir/graph.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln::ir {
namespace {

TensorType f32(Shape sizes) {
  TensorType t;
  t.sizes = std::move(sizes);
  return t;
}

void expect_verify_error(const Graph& g, const std::string& fragment) {
  try {
    verify(g);
    ADD_FAILURE() << "verify accepted a broken graph; expected an error containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Verifier, AcceptsAWellTypedGraph) {
  Graph g;
  Value* x = g.add_input(f32({4, 3}), "x");
  Value* w = g.add_input(f32({3, 2}), "w");
  Value* ins[] = {x, w};
  TensorType mm_out = f32({4, 2});
  NoAttrs none;
  Node* mm = g.create_op(get_op("mm"), ins, &none, std::span(&mm_out, 1));
  TensorType t_out = f32({2, 4});
  t_out.strides = {1, 2};
  TransposeAttrs ta{0, 1};
  Value* mm0 = mm->output();
  Node* tr = g.create_op(get_op("transpose"), std::span(&mm0, 1), &ta, std::span(&t_out, 1));
  TensorType max_out[] = {f32({4}), f32({4})};
  max_out[1].dtype = kInt64;
  DimIndexAttrs da{1, false};
  Node* mx = g.create_op(get_op("max"), std::span(&mm0, 1), &da, max_out);
  g.add_output(tr->output());
  g.add_output(mx->output(1));
  EXPECT_NO_THROW(verify(g));
}

TEST(Verifier, RejectsAValueOfAnotherGraph) {
  Graph a;
  Value* x = a.add_input(f32({3}), "x");
  Graph b;
  b.add_input(f32({3}), "y");
  TensorType out = f32({3});
  NoAttrs none;
  Node* n = b.create_op(get_op("exp"), std::span(&x, 1), &none, std::span(&out, 1));
  b.add_output(n->output());
  expect_verify_error(b, "input 0 is a value of another graph");
  // From the other side, x now has a use by a node that graph a does not hold.
  expect_verify_error(a, "has a dangling use by a node that is not in the graph");
}

TEST(Verifier, RejectsAGraphOutputOfAnotherGraph) {
  Graph a;
  Value* x = a.add_input(f32({3}), "x");
  Graph b;
  b.add_input(f32({3}), "y");
  b.add_output(x);
  expect_verify_error(b, "graph output 0 is not defined in this graph");
}

TEST(Verifier, RejectsMissingAttributes) {
  Graph g;
  Value* x = g.add_input(f32({3}), "x");
  TensorType out = f32({3});
  Node* n = g.create_op(get_op("add_scalar"), std::span(&x, 1), nullptr, std::span(&out, 1));
  g.add_output(n->output());
  expect_verify_error(g, "missing the ScalarOperandAttrs attributes");
}

TEST(Verifier, RejectsAConstantWhoseTypeDisagreesWithItsTensor) {
  Graph g;
  g.add_input(f32({2}), "x");
  Node* c = g.create_constant(ones({2, 2}));
  c->output()->set_type(f32({4}));
  g.add_output(c->output());
  expect_verify_error(g, "does not match the constant's tensor f32[2, 2]");
}

TEST(Verifier, RejectsAnUnnamedFallback) {
  Graph g;
  Value* x = g.add_input(f32({2}), "x");
  TensorType out = f32({2});
  Node* f = g.create_fallback("", {}, std::span(&x, 1), std::span(&out, 1));
  g.add_output(f->output());
  expect_verify_error(g, "a fallback needs a name");
}

TEST(Verifier, RejectsAFusionGroupWhoseInputsDisagreeWithItsSubgraph) {
  auto sub = std::make_shared<Graph>();
  Value* a = sub->add_input(f32({8}), "a");
  TensorType t8 = f32({8});
  NoAttrs none;
  sub->add_output(
      sub->create_op(get_op("exp"), std::span(&a, 1), &none, std::span(&t8, 1))->output());
  Graph g;
  Value* x = g.add_input(f32({4}), "x");
  TensorType t4 = f32({4});
  Node* fg = g.create_fusion_group(std::span(&x, 1), sub, std::span(&t4, 1));
  g.add_output(fg->output());
  expect_verify_error(g, "input 0 has type f32[4], the subgraph expects f32[8]");
}

TEST(Verifier, ReportsErrorsInsideASubgraph) {
  auto sub = std::make_shared<Graph>();
  Value* a = sub->add_input(f32({8}), "a");
  TensorType wrong = f32({7});
  NoAttrs none;
  sub->add_output(
      sub->create_op(get_op("exp"), std::span(&a, 1), &none, std::span(&wrong, 1))->output());
  Graph g;
  Value* x = g.add_input(f32({8}), "x");
  Node* fg = g.create_fusion_group(std::span(&x, 1), sub, std::span(&wrong, 1));
  g.add_output(fg->output());
  expect_verify_error(g, "in the subgraph of %0 = prim.fusion_group(%x)");
}

TEST(Verifier, ChecksVariadicArity) {
  Graph g;
  Value* x = g.add_input(f32({2, 4}), "x");
  Value* ins[] = {x, x, x, x};
  TensorType out = f32({2, 4});
  LayerNormAttrs la;
  la.normalized_shape = {4};
  Node* ln = g.create_op(get_op("layer_norm"), ins, &la, std::span(&out, 1));
  g.add_output(ln->output());
  expect_verify_error(g, "layer_norm takes 1 to 3 input(s), got 4");
}

}  // namespace
}  // namespace kiln::ir
