// trace() with TraceOptions::dynamic (Note [Symbolic tracing]): the inputs' dims become symbols,
// the recorded graph computes over them, and it runs at other sizes with the results eager
// computes there. Every way the trace must specialize a symbol (an integer size read, an op
// without a rule over symbols, a backward formula that uses saved sizes as integers) is checked
// to specialize, so that a graph never reuses a size it read as a constant.
#include <string>

#include "kiln/config.h"
#include "kiln/frontend/compile/kernel_codegen.h"
#include "kiln/ir/verifier.h"
#include "kiln/passes/fuse.h"
#include "kiln/passes/lower_fusion_group.h"
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln::TracedFunction;
using kiln::TraceOptions;

Tensor input(Shape shape, uint32_t seed) {
  std::vector<float> v = random_vector<float>(static_cast<size_t>(ref_numel(shape)), -1, 1, seed);
  return kiln::from_vector(v, std::move(shape));
}

TracedFunction trace_dynamic(kiln::TraceFn fn, const std::vector<Tensor>& examples) {
  return kiln::trace(std::move(fn), examples, TraceOptions{.dynamic = true});
}

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// The graph at each size equals eager at that size, bit for bit: the interpreter runs the same
// eager kernels.
void expect_eager_at(const TracedFunction& f, const kiln::TraceFn& fn,
                     const std::vector<Tensor>& inputs) {
  std::vector<Tensor> got = f(inputs);
  std::vector<Tensor> want = fn(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].sizes(), want[i].sizes()) << "output " << i;
    EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>()) << "output " << i;
  }
}

kiln::TraceFn mlp_head() {
  return [](const std::vector<Tensor>& x) {
    Tensor h = (x[0].mm(x[1]) + x[2]).relu();
    return std::vector<Tensor>{h.softmax(-1), h.mean({0}), (h * h).sum({1}, true)};
  };
}

TEST(SymbolicTrace, PointwiseReductionAndMatmulRunAtOtherSizes) {
  kiln::TraceFn fn = mlp_head();
  TracedFunction f = trace_dynamic(fn, {input({8, 6}, 1), input({6, 5}, 2), input({5}, 3)});
  const kiln::ir::Graph& g = f.graph();
  kiln::ir::verify(g);
  EXPECT_TRUE(f.specializations().empty()) << f.specializations().front();
  EXPECT_EQ(g.symbol_hints(), (std::vector<int64_t>{8, 6, 5}));
  EXPECT_EQ(g.input(0)->type().str(), "f32[s0, s1]");
  EXPECT_EQ(g.input(1)->type().str(), "f32[s1, s2]");
  EXPECT_EQ(g.outputs()[2]->type().str(), "f32[s0, 1]");
  for (auto [b, d, h] : {std::tuple{3, 7, 4}, {13, 2, 9}, {8, 6, 5}, {2, 33, 17}})
    expect_eager_at(f, fn, {input({b, d}, 4), input({d, h}, 5), input({h}, 6)});
}

TEST(SymbolicTrace, InPlaceOpsKeepTheirSymbols) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    Tensor y = x[0].clone();
    y.mul_(x[1]).add_(1.0);
    return std::vector<Tensor>{y.exp()};
  };
  TracedFunction f = trace_dynamic(fn, {input({4, 7}, 1), input({7}, 2)});
  kiln::ir::verify(f.graph());
  EXPECT_TRUE(f.specializations().empty()) << f.specializations().front();
  EXPECT_EQ(f.graph().outputs()[0]->type().str(), "f32[s0, s1]");
  expect_eager_at(f, fn, {input({9, 3}, 3), input({3}, 4)});
}

TEST(SymbolicTrace, EqualSizesShareOneSymbol) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{x[0] * 2.0}; };
  TracedFunction f = trace_dynamic(fn, {input({8, 8}, 1)});
  EXPECT_EQ(f.graph().input(0)->type().str(), "f32[s0, s0]");
  expect_eager_at(f, fn, {input({5, 5}, 2)});
  // Duck sizing assumed the two dims equal: sizes that break it are refused, not computed.
  EXPECT_TRUE(throws_error_containing(
      [&] {
        f({input({5, 7}, 3)});
      },
      {"s0 is 5 from an earlier dim"}));
}

TEST(SymbolicTrace, SizesZeroAndOneStayIntegers) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{x[0] + x[1]}; };
  TracedFunction f = trace_dynamic(fn, {input({6, 1}, 1), input({1, 4}, 2)});
  EXPECT_EQ(f.graph().input(0)->type().str(), "f32[s0, 1]");
  EXPECT_EQ(f.graph().outputs()[0]->type().str(), "f32[s0, s1]");
  expect_eager_at(f, fn, {input({3, 1}, 3), input({1, 9}, 4)});
  // A symbol never binds 1: broadcasting would change what the graph computes.
  EXPECT_TRUE(throws_error_containing(
      [&] {
        f({input({1, 1}, 5), input({1, 9}, 6)});
      },
      {"sizes 0 and 1 are always specialized"}));
}

TEST(SymbolicTrace, AnIntegerSizeReadSpecializesThatDim) {
  // 1 / x.size(0) is a constant in the graph: reusing the graph at another batch size would be
  // wrong, so the read specializes s0 (and only s0).
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    double inv = 1.0 / static_cast<double>(x[0].size(0));
    return std::vector<Tensor>{x[0].sum({0}) * inv};
  };
  TracedFunction f = trace_dynamic(fn, {input({8, 3}, 1)});
  kiln::ir::verify(f.graph());
  ASSERT_EQ(f.specializations().size(), 1u);
  EXPECT_NE(f.specializations()[0].find("s0 = 8: a size read as an integer"), std::string::npos)
      << f.specializations()[0];
  EXPECT_EQ(f.graph().input(0)->type().str(), "f32[8, s0]");
  expect_eager_at(f, fn, {input({8, 11}, 2)});
  EXPECT_TRUE(throws_error_containing([&] { f({input({5, 3}, 3)}); }, {"dim 0 is 5, not 8"}));
}

TEST(SymbolicTrace, ReadingAllSizesSpecializesEveryDim) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    double n = static_cast<double>(x[0].numel());
    return std::vector<Tensor>{x[0] / n};
  };
  TracedFunction f = trace_dynamic(fn, {input({4, 3}, 1)});
  EXPECT_FALSE(f.graph().input(0)->type().is_symbolic());
  EXPECT_EQ(f.specializations().size(), 2u);
  EXPECT_TRUE(throws_error_containing([&] { f({input({4, 5}, 2)}); }, {"expects f32[4, 3]"}));
}

TEST(SymbolicTrace, SymSizeReadsDoNotSpecialize) {
  std::string seen;
  kiln::TraceFn fn = [&](const std::vector<Tensor>& x) {
    kiln::SymInt rows = x[0].sym_size(0);
    seen = (rows * 2 + 1).str();
    return std::vector<Tensor>{x[0].relu()};
  };
  TracedFunction f = trace_dynamic(fn, {input({6, 4}, 1)});
  EXPECT_EQ(seen, "2*s0 + 1");
  EXPECT_TRUE(f.specializations().empty());
  // Outside a trace, sym_size is the integer.
  EXPECT_EQ(input({6, 4}, 2).sym_size(1), kiln::SymInt(4));
}

TEST(SymbolicTrace, AnOpWithoutARuleOverSymbolsSpecializesItsInputs) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    Tensor w = kiln::ones({2, 4, 1});
    return std::vector<Tensor>{kiln::conv1d(x[0].unsqueeze(0), w).exp(), x[1].exp()};
  };
  TracedFunction f = trace_dynamic(fn, {input({4, 3}, 1), input({5}, 2)});
  kiln::ir::verify(f.graph());
  ASSERT_FALSE(f.specializations().empty());
  EXPECT_TRUE(mentions(f.specializations(), "convolution at")) << f.specializations().front();
  // The convolution's channels (x0's dim 0) specialize; its length and x1's dim, which it did
  // not touch, stay symbolic.
  EXPECT_EQ(f.graph().input(0)->type().str(), "f32[4, s0]");
  EXPECT_EQ(f.graph().input(1)->type().str(), "f32[s1]");
  expect_eager_at(f, fn, {input({4, 3}, 3), input({9}, 4)});
}

TEST(SymbolicTrace, ARuleThatRefusesOneSymbolSpecializesOnlyThatOne) {
  // layer_norm's normalized_shape is an integer attribute: the last dim must become 16, but the
  // batch dim stays a symbol.
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{kiln::layer_norm(x[0] * 2.0, {16})};
  };
  TracedFunction f = trace_dynamic(fn, {input({8, 16}, 1)});
  kiln::ir::verify(f.graph());
  ASSERT_EQ(f.specializations().size(), 1u);
  EXPECT_NE(f.specializations()[0].find("s1 = 16: layer_norm at"), std::string::npos)
      << f.specializations()[0];
  EXPECT_EQ(f.graph().input(0)->type().str(), "f32[s0, 16]");
  expect_eager_at(f, fn, {input({5, 16}, 2)});
  EXPECT_TRUE(throws_error_containing([&] { f({input({5, 4}, 3)}); }, {"dim 1 is 4, not 16"}));
}

// Sizes computed from the input (Note [Symbolic size attributes]): view_symint, reshape with a
// -1, and expand_symint keep the symbols, print them in their attributes and run at other sizes.
TEST(SymbolicTrace, SizesComputedFromTheInputStaySymbolic) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    kiln::SymInt rows = x[0].sym_size(0);
    Tensor rows_of = x[0].view_symint({rows, -1});               // [s0, s1*s2]
    Tensor flat = x[0].reshape({-1});                            // [s0*s1*s2]
    Tensor wide = x[1].expand_symint({rows, x[1].sym_size(0)});  // [s0, s3]
    return std::vector<Tensor>{rows_of.sum({1}), flat * 2.0, wide + 1.0};
  };
  TracedFunction f = trace_dynamic(fn, {input({4, 6, 3}, 1), input({5}, 2)});
  kiln::ir::verify(f.graph());
  EXPECT_TRUE(f.specializations().empty()) << f.specializations().front();
  std::string text = f.graph().str();
  EXPECT_NE(text.find("f32[s0, s1*s2] = view(%x0) {size=[s0, -1]}"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[s0*s1*s2] = view(%x0) {size=[-1]}"), std::string::npos) << text;
  EXPECT_NE(text.find("expand(%x1) {size=[s0, s3]}"), std::string::npos) << text;
  expect_eager_at(f, fn, {input({3, 8, 2}, 3), input({7}, 4)});
  expect_eager_at(f, fn, {input({9, 2, 5}, 5), input({2}, 6)});
  // A view whose sizes fit the input only at the traced sizes specializes: [4, 6] viewed as
  // [s0 * 6] is right only while s1 is 6, and splitting s1 in halves only while it is even.
  kiln::TraceFn fixed = [](const std::vector<Tensor>& x) {
    kiln::SymInt rows = x[0].sym_size(0);
    return std::vector<Tensor>{x[0].view_symint({rows * 6}) * 2.0,
                               x[0].view_symint({rows, 2, -1}).sum({1})};
  };
  TracedFunction g = trace_dynamic(fixed, {input({4, 6}, 7)});
  EXPECT_TRUE(mentions(g.specializations(), "view at")) << g.graph().str();
  expect_eager_at(g, fixed, {input({4, 6}, 8)});
}

// Factories with sizes over the symbols: the *_like factories take x's sizes as the trace sees
// them, and full_symint takes sizes built from sym_size.
TEST(SymbolicTrace, FactoriesKeepTheSymbolsOfTheirSizes) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    Tensor ones = kiln::ones_like(x[0]);
    Tensor sevens = kiln::full_like(x[0], 7.0);
    Tensor col = kiln::full_symint({x[0].sym_size(0), 1}, 0.5);
    return std::vector<Tensor>{x[0] * ones + sevens, x[0] * col, kiln::zeros_like(x[0]) + 1.0};
  };
  TracedFunction f = trace_dynamic(fn, {input({4, 6}, 1)});
  kiln::ir::verify(f.graph());
  EXPECT_TRUE(f.specializations().empty()) << f.specializations().front();
  std::string text = f.graph().str();
  EXPECT_NE(text.find("f32[s0, 1] = full() {size=[s0, 1], value=0.5"), std::string::npos) << text;
  expect_eager_at(f, fn, {input({3, 9}, 2)});
  expect_eager_at(f, fn, {input({7, 2}, 3)});
}

// The backward is traced over the same symbols (Note [Symbolic saved sizes]): the graph of a
// gradient serves other sizes.
TEST(SymbolicTrace, TheBackwardIsTracedOverTheSymbols) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    Tensor w = x[0].detach().requires_grad_();
    Tensor b = x[1].detach().requires_grad_();
    Tensor loss = ((w * w + b).view_symint({-1}).mean() + (w * b).sum()) * 3.0;
    return kiln::autograd::grad({loss}, {w, b});
  };
  TracedFunction f = trace_dynamic(fn, {input({4, 3}, 1), input({3}, 2)});
  kiln::ir::verify(f.graph());
  EXPECT_TRUE(f.specializations().empty()) << f.specializations().front();
  EXPECT_TRUE(f.graph().has_symbolic_types());
  expect_eager_at(f, fn, {input({7, 5}, 3), input({5}, 4)});
  expect_eager_at(f, fn, {input({2, 9}, 5), input({9}, 6)});
}

// fill_, copy_ and in-place ops through views (a column, a transpose) record their functional
// forms with the sizes over symbols (Note [Functionalized in-place ops]), so nothing
// specializes, and the graph computes what eager does at other sizes.
TEST(SymbolicTrace, InPlaceWritesKeepTheirSymbols) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    Tensor t = x[0].clone();
    t.select(1, 0).mul_(2);
    t.transpose(0, 1).add_(x[1].unsqueeze(0));
    Tensor u = kiln::full_symint(x[0].sym_sizes(), 0.0);
    u.copy_(x[1].unsqueeze(1));
    u.slice(1, 1, INT64_MAX).fill_(7);
    return std::vector<Tensor>{t, u};
  };
  TracedFunction f = trace_dynamic(fn, {input({6, 4}, 1), input({6}, 2)});
  kiln::ir::verify(f.graph());
  EXPECT_TRUE(f.specializations().empty()) << f.specializations().front();
  EXPECT_EQ(f.graph().input(0)->type().str(), "f32[s0, s1]");
  expect_eager_at(f, fn, {input({3, 9}, 3), input({3}, 4)});
  expect_eager_at(f, fn, {input({11, 2}, 5), input({11}, 6)});
}

// A formula that uses saved sizes as integers (var's divisor for a float16 input, which a
// float16 count tensor would round) specializes their symbols, so the graph is right at the
// sizes it serves and refuses the others.
TEST(SymbolicTrace, ABackwardFormulaReadingSavedSizesSpecializesThem) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    Tensor w = x[0].detach().to(kiln::kFloat16).requires_grad_();
    return kiln::autograd::grad({w.var({0}).sum()}, {w});
  };
  TracedFunction f = trace_dynamic(fn, {input({6, 3}, 1)});
  kiln::ir::verify(f.graph());
  EXPECT_TRUE(mentions(f.specializations(), "sizes autograd saved, read as integers"))
      << f.graph().str();
  EXPECT_EQ(f.graph().input(0)->type().str(), "f32[6, 3]");
  expect_eager_at(f, fn, {input({6, 3}, 2)});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        f({input({5, 3}, 3)});
      },
      {"the graph expects f32[6, 3]"}));
}

// The traced graph fused and lowered: each group is one kernel with size parameters, launched
// at every size from the symbols bound at the graph's inputs, through the kernel-IR interpreter
// and through LLVM where it is built in.
TEST(SymbolicTrace, FusedKernelsTakeTheirSizesAtLaunch) {
  kiln::TraceFn fn = [](const std::vector<Tensor>& x) {
    Tensor y = (x[0] * x[1] + 1.0).gelu();
    return std::vector<Tensor>{y, y.mean({1}, true)};
  };
  for (kiln::Backend backend : {kiln::Backend::Interpreter, kiln::Backend::LLVM}) {
    if (backend == kiln::Backend::LLVM && !KILN_WITH_LLVM) continue;
    TracedFunction f = trace_dynamic(fn, {input({6, 10}, 1), input({10}, 2)});
    std::shared_ptr<kiln::ir::Graph> g = f.graph_ptr();
    kiln::passes::fuse(*g, {});
    kiln::passes::lower_fusion_groups(*g);
    kiln::compile_detail::compile_kernels(*g, backend, false, nullptr);
    kiln::ir::verify(*g);
    size_t groups = 0;
    for (const kiln::ir::Node* n : g->nodes()) {
      if (n->kind() != kiln::ir::NodeKind::FusionGroup) continue;
      ++groups;
      ASSERT_TRUE(n->fusion_group().kernel);
      EXPECT_FALSE(n->fusion_group().kernel->sizes().empty()) << n->fusion_group().kernel->str();
      EXPECT_EQ(static_cast<bool>(n->fusion_group().compiled), backend == kiln::Backend::LLVM);
    }
    EXPECT_GE(groups, 1u);
    for (auto [r, c] : {std::pair{3, 17}, {9, 1031}, {2, 2}}) {
      std::vector<Tensor> in{input({r, c}, 3), input({c}, 4)};
      std::vector<Tensor> got = f(in), want = fn(in);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].sizes(), want[i].sizes());
        EXPECT_ALL_CLOSE(got[i].to_vector<float>(), want[i].to_vector<float>(), 1e-5, 1e-5);
      }
    }
  }
}

}  // namespace
}  // namespace kiln_test
