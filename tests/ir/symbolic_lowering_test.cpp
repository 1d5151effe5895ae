// Fusion and lowering over symbolic sizes (Note [Symbolic types], Note [Size parameters]): a
// group of a symbolic graph becomes one kernel whose loops and strides come from size
// parameters, and that one kernel computes at every size what the eager ops compute there.
#include <gtest/gtest.h>

#include <cmath>
#include <unordered_map>

#include "kiln/base/options.h"
#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/parser.h"
#include "kiln/ir/verifier.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/kiln.h"
#include "kiln/passes/fuse.h"
#include "kiln/passes/lower_fusion_group.h"
#include "kiln/runtime/kernel_args.h"

namespace kiln::passes {
namespace {

struct Lowered {
  std::shared_ptr<ir::Graph> graph;
  const ir::Node* group = nullptr;  // the one fusion group
};

Lowered fuse_and_lower(const std::string& text) {
  Lowered l{ir::parse(text)};
  fuse(*l.graph, {});
  lower_fusion_groups(*l.graph);
  ir::verify(*l.graph);
  for (const ir::Node* n : l.graph->nodes()) {
    if (n->kind() != ir::NodeKind::FusionGroup) continue;
    EXPECT_EQ(l.group, nullptr) << "more than one fusion group:\n" << l.graph->str();
    l.group = n;
  }
  EXPECT_NE(l.group, nullptr) << l.graph->str();
  return l;
}

// Runs the group's one kernel on `inputs` (the graph's inputs, by position) at symbol values
// `sizes`, into fresh contiguous outputs of the group's output types at those sizes.
std::vector<Tensor> run_group(const Lowered& l, const std::vector<Tensor>& inputs,
                              const std::vector<int64_t>& sizes) {
  std::unordered_map<const ir::Value*, Tensor> bound;
  for (size_t i = 0; i < inputs.size(); ++i)
    bound[l.graph->input(i)] = inputs[i];
  std::vector<Tensor> args;
  for (const ir::Value* v : l.group->inputs())
    args.push_back(bound.at(v));
  std::vector<Tensor> outputs;
  for (size_t j = 0; j < l.group->num_outputs(); ++j) {
    Shape shape;
    for (const SymInt& s : l.group->output(j)->type().symbolic_sizes())
      shape.push_back(s.evaluate(sizes));
    outputs.push_back(empty(shape));
    args.push_back(outputs.back());
  }
  // The size parameters are the symbols and the expressions the loops run to
  // (FusionGroupAttrs::size_args), evaluated at the call's symbols.
  std::vector<int64_t> params;
  for (const SymInt& s : l.group->fusion_group().size_args)
    params.push_back(s.evaluate(sizes));
  kir::run_kernel(*l.group->fusion_group().kernel, args, params);
  return outputs;
}

void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  std::vector<double> a = got.to_vector<double>(), b = want.contiguous().to_vector<double>();
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_NEAR(a[k], b[k], 1e-5 * (1 + std::abs(b[k]))) << "element " << k;
}

const std::vector<std::vector<int64_t>> kSizes = {{2, 3}, {5, 7}, {9, 16}, {4, 33}};

TEST(SymbolicLowering, PointwiseGroupRunsAtEverySize) {
  Lowered l = fuse_and_lower(R"(graph(%x : f32[s0, s1], %b : f32[s1]) symbols(s0 = 4, s1 = 8):
  %0 : f32[s0, s1] = add(%x, %b) {alpha=1}
  %1 : f32[s0, s1] = relu(%0)
  %2 : f32[s0, s1] = mul(%1, %x) {alpha=1}
  return (%2)
)");
  const kir::Kernel& k = *l.group->fusion_group().kernel;
  ASSERT_EQ(k.sizes().size(), 2u);
  EXPECT_EQ(k.vars[static_cast<size_t>(k.sizes()[0])].name, "s0");
  EXPECT_EQ(k.vars[static_cast<size_t>(k.sizes()[1])].name, "s1");
  for (const auto& sizes : kSizes) {
    SCOPED_TRACE(::testing::Message() << "s0=" << sizes[0] << " s1=" << sizes[1]);
    Tensor x = randn({sizes[0], sizes[1]}), b = randn({sizes[1]});
    expect_close(run_group(l, {x, b}, sizes)[0], relu(x + b) * x);
  }
}

// The transpose is read in place: its symbolic strides (1, s1) are index arithmetic on s1.
TEST(SymbolicLowering, ViewsReadWithSymbolicStrides) {
  Lowered l = fuse_and_lower(R"(graph(%x : f32[s0, s1]) symbols(s0 = 4, s1 = 8):
  %0 : f32[s1, s0] strided[1, s1] = transpose(%x) {dim0=0, dim1=1}
  %1 : f32[s1, s0] = exp(%0)
  return (%1)
)");
  for (const auto& sizes : kSizes) {
    Tensor x = randn({sizes[0], sizes[1]});
    expect_close(run_group(l, {x}, sizes)[0], exp(x.transpose(0, 1)));
  }
}

// Reductions over a row of symbolic length: var divides by s1 - 1 computed at launch.
TEST(SymbolicLowering, ReductionsOverSymbolicRows) {
  Lowered l = fuse_and_lower(R"(graph(%x : f32[s0, s1]) symbols(s0 = 4, s1 = 8):
  %0 : f32[s0, 1] = mean(%x) {dims=[1], keepdim=true}
  %1 : f32[s0, s1] = sub(%x, %0) {alpha=1}
  %2 : f32[s0, 1] = var(%x) {dims=[1], correction=1, keepdim=true}
  return (%1, %2)
)");
  for (const auto& sizes : kSizes) {
    SCOPED_TRACE(::testing::Message() << "s0=" << sizes[0] << " s1=" << sizes[1]);
    Tensor x = randn({sizes[0], sizes[1]});
    std::vector<Tensor> got = run_group(l, {x}, sizes);
    expect_close(got[0], x - mean(x, {1}, true));
    expect_close(got[1], var(x, {1}, 1, true));
  }
}

// A loop extent that is an expression of symbols (2*s0 + 1, a product s0*s1 after a reshape)
// runs to a size parameter of its own, which the launcher evaluates at the call's symbols.
TEST(SymbolicLowering, AnExpressionExtentRunsToADerivedSizeParameter) {
  auto g = ir::parse(R"(graph(%x : f32[2*s0 + 1]) symbols(s0 = 4):
  %0 : f32[2*s0 + 1] = exp(%x)
  %1 : f32[2*s0 + 1] = mul(%0, %x)
  return (%1)
)");
  fuse(*g, {});
  lower_fusion_groups(*g);
  ir::verify(*g);
  const ir::Node* group = nullptr;
  for (const ir::Node* n : g->nodes())
    if (n->kind() == ir::NodeKind::FusionGroup) group = n;
  ASSERT_NE(group, nullptr);
  ASSERT_NE(group->fusion_group().kernel, nullptr);
  const SymInt s0 = SymInt::symbol(0);
  EXPECT_EQ(group->fusion_group().size_args, (std::vector<SymInt>{s0, 2 * s0 + 1}));
  Tensor x = from_vector(std::vector<float>{0.5f, -1, 2, 0.25f, 1.5f, -0.75f, 3}, {7});  // s0 = 3
  // The input's one dim is an expression, which binds no symbol: s0 is given.
  const std::vector<int64_t> symbols = {3};
  std::vector<float> got = interpret(*g, {x}, nullptr, &symbols)[0].to_vector<float>();
  std::vector<float> in = x.to_vector<float>();
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_FLOAT_EQ(got[i], std::exp(in[i]) * in[i]) << i;

  Lowered l = fuse_and_lower(R"(graph(%x : f32[s0, s1, 4], %b : f32[4]) symbols(s0 = 3, s1 = 5):
  %0 : f32[s0*s1, 4] = view(%x) {size=[-1, 4]}
  %1 : f32[s0*s1, 4] = add(%0, %b) {alpha=1}
  %2 : f32[s0*s1, 4] = relu(%1)
  return (%2)
)");
  for (const auto& sizes : kSizes) {
    SCOPED_TRACE(::testing::Message() << "s0=" << sizes[0] << " s1=" << sizes[1]);
    Tensor a = randn({sizes[0], sizes[1], 4}), b = randn({4});
    expect_close(run_group(l, {a, b}, sizes)[0], relu(a.reshape({-1, 4}) + b));
  }
}

}  // namespace
}  // namespace kiln::passes
