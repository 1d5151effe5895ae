// propagate_types against the tracer: the types it computes are the ones a trace records, so a
// traced graph comes out unchanged, and after an input's type changes the graph verifies and
// runs on inputs of the new type. The golden files tests/passes/propagate_types_*.ir show
// placeholder types being filled in.
#include <gtest/gtest.h>

#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/graph.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"
#include "kiln/passes/propagate_types.h"
#include "kiln/runtime/op_table.h"

namespace kiln::passes {
namespace {

std::vector<Tensor> model(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  Tensor h = x.mm(w).relu();
  Tensor t = h.transpose(0, 1).unsqueeze(0).expand({2, 3, 4}).select(0, 1).slice(1, 0, 4, 2);
  Tensor m = std::get<0>(max(h, 1));
  Tensor big = where(lt(h, 0.5), h, h.exp());
  return {t, m, big.sum({0}), argmax(h, 1), h.to(kFloat64).mul(2)};
}

TEST(PropagateTypes, TracedTypesAreAlreadyWhatTheRulesGive) {
  manual_seed(9);
  for (bool requires_grad : {false, true}) {
    Tensor x = randn({4, 5});
    Tensor w = randn({5, 3});
    x.requires_grad_(requires_grad);
    TracedFunction f = trace(model, {x, w});
    std::shared_ptr<ir::Graph> g = f.graph().clone();
    EXPECT_FALSE(propagate_types(*g)) << "before:\n" << f.str() << "after:\n" << g->str();
  }
}

TEST(PropagateTypes, ANewInputSizeReachesEveryValue) {
  manual_seed(4);
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{(in[0].mm(in[1]) + 1.0).transpose(0, 1).sum({1})};
  };
  TracedFunction f = trace(fn, {randn({4, 5}), randn({5, 3})});
  std::shared_ptr<ir::Graph> g = f.graph().clone();
  ir::TensorType t = g->input(0)->type();
  t.sizes = {7, 5};
  g->input(0)->set_type(t);
  EXPECT_THROW(ir::verify(*g), Error);
  ASSERT_TRUE(propagate_types(*g));
  ir::verify(*g);
  EXPECT_EQ(g->outputs()[0]->type().sizes, (Shape{3}));

  Tensor x = randn({7, 5});
  Tensor w = randn({5, 3});
  EXPECT_EQ(interpret(*g, {x, w})[0].to_vector<float>(), fn({x, w})[0].to_vector<float>());
}

TEST(PropagateTypes, InferOpTypesNamesTheRuleThatRejects) {
  ir::TensorType a, b;
  a.sizes = {4, 3};
  b.sizes = {2, 5};
  std::vector<ir::TensorType> in{a, b};
  try {
    infer_op_types(get_op("mm"), in, nullptr);
    FAIL() << "mm accepted [4, 3] x [2, 5]";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mm"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::passes
