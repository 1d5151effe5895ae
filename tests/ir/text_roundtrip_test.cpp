// The IR text format (ir/README.md): canonical texts print back unchanged, hand-written texts
// print in canonical form, and graphs built with the C++ API survive print -> parse -> print.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <sstream>

#include "kiln/ir/parser.h"
#include "kiln/ir/printer.h"
#include "kiln/kiln.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln::ir {
namespace {

std::string reprint(const std::string& text) {
  return print(*parse(text));
}

// The README's example, with `mul` given its one attribute (the printer writes every field).
constexpr const char* kReadmeExample = R"(graph(%x : f32[4, 3], %w : f32[3, 2] requires_grad):
  %0 : f32[4, 2] = mm(%x, %w)  # mlp.cpp:12 in forward
  %1 : f32[4, 2] = add_scalar(%0) {other=1.0, alpha=1}
  %2 : f32[4], %3 : i64[4] = max(%1) {dim=1, keepdim=false}
  %4 : f32[2] = prim.constant() {value=[1.0, 2.5]}
  %5 : f32[2, 4] strided[1, 2] = transpose(%1) {dim0=0, dim1=1}
  %6 : f32[4, 2] = prim.fusion_group(%0, %1)
    graph(%a : f32[4, 2], %b : f32[4, 2]):
      %0 : f32[4, 2] = mul(%a, %b) {alpha=1}
      return (%0)
  %7 : f32[4, 2] = prim.fallback(%6) {name="MyFunctionBackward"}
  return (%1, %2, %7)
)";

TEST(IrText, ReadmeExampleRoundTrips) {
  auto g = parse(kReadmeExample);
  EXPECT_EQ(print(*g), kReadmeExample);
  EXPECT_EQ(g->str(), kReadmeExample);
  std::ostringstream os;
  os << *g;
  EXPECT_EQ(os.str(), kReadmeExample);

  auto nodes = g->nodes();
  ASSERT_EQ(nodes.size(), 9u);  // 2 params + 7 nodes
  EXPECT_EQ(nodes[2]->call_site(), "mlp.cpp:12 in forward");
  EXPECT_EQ(nodes[4]->attrs_as<DimIndexAttrs>().dim, std::optional<int64_t>(1));
  EXPECT_EQ(nodes[5]->constant().value.to_vector<float>(), (std::vector<float>{1.0f, 2.5f}));
  EXPECT_EQ(nodes[6]->output()->type().strides, (Shape{1, 2}));
  ASSERT_EQ(nodes[7]->kind(), NodeKind::FusionGroup);
  EXPECT_EQ(nodes[7]->fusion_group().subgraph->inputs().size(), 2u);
  EXPECT_EQ(nodes[8]->fallback().name, "MyFunctionBackward");
  EXPECT_FALSE(nodes[8]->fallback().fn);
  EXPECT_TRUE(g->inputs()[1]->type().requires_grad);
  EXPECT_EQ(g->inputs()[1]->debug_name(), "w");
}

TEST(IrText, EveryAttributeFieldType) {
  // bool, int64, double, string, Scalar (int, float, bool), optional<Scalar>,
  // optional<int64>, Shape, DType and Device fields, with extreme values.
  const std::string text =
      R"(graph(%x : f32[2, 3], %i : i64[2] cuda:1 requires_grad, %s : f64[] meta):
  %0 : f32[3, 2] strided[1, 3] = transpose(%x) {dim0=0, dim1=-1}
  %1 : f32[] = sum(%x) {dims=[0, -1], keepdim=true}
  %2 : f64[2, 3] = convert(%x) {dtype=f64}
  %3 : f32[2, 3] = clamp(%x) {min=none, max=2.5}
  %4 : f32[2, 3] = clamp(%x) {min=-1, max=true}
  %5 : f32[2, 3] = gelu(%x) {approximate="tanh \"q\" \\ \n end"}
  %6 : f32[2, 3] = layer_norm(%x) {normalized_shape=[3], eps=1e-05, has_weight=false, has_bias=true}
  %7 : bf16[4] cuda:0 = full() {size=[4], value=-0.0, dtype=bf16, device=cuda:0}
  %8 : f32[2], %9 : i64[2] = max(%x) {dim=none, keepdim=false}
  %10 : f32[2, 3] = dropout(%x) {p=inf, seed=-9223372036854775808, offset=9223372036854775807}
  %11 : f32[2, 3] = add_scalar(%x) {other=nan, alpha=1e+300}
  %12 : f32[2, 3] = add_scalar(%x) {other=-inf, alpha=-nan}
  %13 : f32[2] = var(%x) {dims=[1], correction=1.0, keepdim=false}
  %14 : f32[2, 3] meta = full() {size=[2, 3], value=0.1, dtype=f32, device=meta}
  %15 : f32[2, 3] = full() {size=[], value=5e-324, dtype=f32, device=cpu}
  return (%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15)
)";
  auto g = parse(text);
  EXPECT_EQ(print(*g), text);
  auto nodes = g->nodes();
  EXPECT_EQ(nodes[6]->attrs_as<ClampAttrs>().min, std::nullopt);
  EXPECT_EQ(nodes[7]->attrs_as<ClampAttrs>().min, std::optional<Scalar>(Scalar(-1)));
  EXPECT_TRUE(nodes[7]->attrs_as<ClampAttrs>().max->is_bool());
  EXPECT_EQ(nodes[8]->attrs_as<GeluAttrs>().approximate, "tanh \"q\" \\ \n end");
  EXPECT_EQ(g->inputs()[1]->type().device, Device::cuda(1));
  EXPECT_TRUE(g->inputs()[2]->type().sizes.empty());
}

TEST(IrText, ConstantsOfEveryDType) {
  const std::string text = R"(graph():
  %0 : b8[2] = prim.constant() {value=[true, false]}
  %1 : i32[2] = prim.constant() {value=[-2147483648, 2147483647]}
  %2 : i64[] = prim.constant() {value=[-9223372036854775808]}
  %3 : f16[3] = prim.constant() {value=[0.5, 65504.0, -inf]}
  %4 : bf16[3] = prim.constant() {value=[1.0, -2.5, 256.0]}
  %5 : f32[3] = prim.constant() {value=[0.1, 1e-45, 3.4028235e+38]}
  %6 : f64[4] = prim.constant() {value=[0.1, 5e-324, 1.7976931348623157e+308, 100.0]}
  %7 : f32[2, 2] = prim.constant() {value=[1.0, 2.0, 3.0, nan]}
  %8 : f32[0, 3] = prim.constant() {value=[]}
  %9 : f32[2, 3] meta = prim.constant()
  return (%0, %1, %2, %3, %4, %5, %6, %7, %8, %9)
)";
  auto g = parse(text);
  EXPECT_EQ(print(*g), text);
  auto nodes = g->nodes();
  EXPECT_EQ(nodes[2]->constant().value.to_vector<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(nodes[5]->constant().value.to_vector<float>()[1],
            std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(nodes[6]->constant().value.to_vector<double>()[1],
            std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(nodes[7]->constant().value.sizes(), (Shape{2, 2}));
  EXPECT_TRUE(nodes[9]->constant().value.device().is_meta());
  EXPECT_EQ(nodes[9]->output()->type().sizes, (Shape{2, 3}));
  for (Node* n : nodes)
    EXPECT_EQ(n->output()->type(), TensorType::of(n->constant().value))
        << n->output()->type().str();
}

TEST(IrText, NestedFusionGroupsFallbacksAndCallSites) {
  const std::string text = R"(graph(%x : f32[4], %y : f32[4]):
  %0 : f32[4] = prim.fusion_group(%x, %y)  # model.cpp:3 in f
    graph(%a : f32[4], %b : f32[4]):
      %0 : f32[4] = prim.fusion_group(%a)
        graph(%c : f32[4]):
          %0 : f32[4] = relu(%c)  # inner.cpp:1 in g
          return (%0)
      %1 : f32[4] = mul(%0, %b) {alpha=1}
      return (%1)
  %1 : f32[4], %2 : f32[4] = prim.fallback(%0, %x) {name="Custom\"Backward\""}
  prim.fallback(%1) {name=""}  # sink.cpp:9 in h
  return (%1, %2, %0)
)";
  auto g = parse(text);
  EXPECT_EQ(print(*g), text);
  Node* fg = g->nodes()[2];
  EXPECT_EQ(fg->call_site(), "model.cpp:3 in f");
  Node* inner = fg->fusion_group().subgraph->nodes()[2];
  ASSERT_EQ(inner->kind(), NodeKind::FusionGroup);
  EXPECT_EQ(inner->fusion_group().subgraph->nodes()[1]->call_site(), "inner.cpp:1 in g");
  EXPECT_EQ(g->nodes()[3]->fallback().name, "Custom\"Backward\"");
  EXPECT_EQ(g->nodes()[4]->num_outputs(), 0u);
}

TEST(IrText, HandWrittenTextPrintsCanonically) {
  // Comments, free spacing, forward references, omitted attributes (defaults), explicit cpu,
  // contiguous strides written out, and names of any kind.
  const std::string text = R"(# a comment line
graph(%input : f32[2, 3],%w:f32[3] cpu):   # a comment on the header
  # a comment between nodes
  %y : f32[2, 3] = add(%input, %z)     # uses %z before its definition
  %z : f32[2, 3] strided[3, 1] = mul(%input,
                                     %input) {}
  %7 : f32[] = sum(%y) {keepdim=true}
  %s : f32[3] = transpose(%w) {dim1=0, dim0=0}
  return (%7,%s)
)";
  const std::string canonical = R"(graph(%input : f32[2, 3], %w : f32[3]):
  %0 : f32[2, 3] = add(%input, %1) {alpha=1}  # uses %z before its definition
  %1 : f32[2, 3] = mul(%input, %input) {alpha=1}
  %2 : f32[] = sum(%0) {dims=[], keepdim=true}
  %3 : f32[3] = transpose(%w) {dim0=0, dim1=0}
  return (%2, %3)
)";
  EXPECT_EQ(reprint(text), canonical);
  EXPECT_EQ(reprint(canonical), canonical);
}

TEST(IrText, InputNamesFallBackToPositions) {
  Graph g;
  g.add_input(TensorType{}, "x");
  g.add_input(TensorType{}, "dup");
  g.add_input(TensorType{}, "dup");
  g.add_input(TensorType{}, "not an identifier");
  g.add_input(TensorType{}, "");
  g.add_input(TensorType{}, "arg0");  // would clash with input 0's positional name
  g.add_input(TensorType{}, "_ok9");
  for (Value* v : g.inputs())
    g.add_output(v);
  const std::string expected =
      "graph(%x : f32[], %arg1 : f32[], %arg2 : f32[], %arg3 : f32[], %arg4 : f32[], "
      "%arg5 : f32[], %_ok9 : f32[]):\n"
      "  return (%x, %arg1, %arg2, %arg3, %arg4, %arg5, %_ok9)\n";
  EXPECT_EQ(print(g), expected);
  EXPECT_EQ(reprint(expected), expected);
}

TEST(IrText, CallSitesAreOneTrimmedLine) {
  Graph g;
  Value* x = g.add_input(TensorType{}, "x");
  Node* n = g.create_op(get_op("relu"), std::vector<Value*>{x}, nullptr,
                        std::vector<TensorType>{TensorType{}});
  n->set_call_site("  a.cpp:1\nin f\t ");
  g.add_output(n->output());
  const std::string expected =
      "graph(%x : f32[]):\n  %0 : f32[] = relu(%x)  # a.cpp:1 in f\n  return (%0)\n";
  EXPECT_EQ(print(g), expected);
  EXPECT_EQ(reprint(expected), expected);
}

// A graph built with the C++ API, with real tensors as constants and a real fallback.
std::shared_ptr<Graph> build_api_graph() {
  auto g = std::make_shared<Graph>();
  TensorType t;
  t.sizes = {2, 3};
  Value* x = g->add_input(t, "x");
  TensorType tg = t;
  tg.requires_grad = true;
  Value* y = g->add_input(tg, "y");

  AlphaAttrs alpha;
  alpha.alpha = 2.5;
  Node* add =
      g->create_op(get_op("add"), std::vector<Value*>{x, y}, &alpha, std::vector<TensorType>{t});
  add->set_call_site("api.cpp:10 in build");
  Node* c = g->create_constant(from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  Node* ci = g->create_constant(from_vector<int32_t>({7, -8}, {2}));
  Node* cm = g->create_constant(empty({4, 5}, TensorOptions().dtype(kFloat16).device(kMeta)));
  Node* cb = g->create_constant(from_vector<bool>({true, false, true}, {3}));
  Node* cs = g->create_constant(full({}, 0.3, TensorOptions().dtype(kFloat64)));
  // A transposed tensor: constants are contiguous, so it is stored and printed row-major.
  Node* ct = g->create_constant(from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).t());

  TransposeAttrs tr;
  TensorType tt;
  tt.sizes = {3, 2};
  tt.strides = {1, 3};
  Node* trn = g->create_op(get_op("transpose"), std::vector<Value*>{add->output()}, &tr,
                           std::vector<TensorType>{tt});

  auto sub = std::make_shared<Graph>();
  Value* a = sub->add_input(t, "a");
  Value* b = sub->add_input(t, "b");
  Node* m =
      sub->create_op(get_op("mul"), std::vector<Value*>{a, b}, nullptr, std::vector<TensorType>{t});
  sub->add_output(m->output());
  Node* fg = g->create_fusion_group(std::vector<Value*>{add->output(), c->output()}, sub,
                                    std::vector<TensorType>{t});
  Node* fb = g->create_fallback(
      "SomeBackward", [](const std::vector<Tensor>& in) { return in; },
      std::vector<Value*>{fg->output()}, std::vector<TensorType>{t});
  for (Node* n : {fb, trn, ci, cm, cb, cs, ct})
    g->add_output(n->output());
  return g;
}

TEST(IrText, ApiGraphRoundTrips) {
  auto g = build_api_graph();
  std::string once = print(*g);
  auto parsed = parse(once);
  EXPECT_EQ(print(*parsed), once);
  ASSERT_EQ(parsed->num_nodes(), g->num_nodes());
  auto a = g->nodes(), b = parsed->nodes();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]->kind(), b[i]->kind());
    EXPECT_EQ(a[i]->call_site(), b[i]->call_site());
    EXPECT_EQ(a[i]->num_inputs(), b[i]->num_inputs());
    for (size_t j = 0; j < a[i]->num_outputs(); ++j)
      EXPECT_EQ(a[i]->output(j)->type(), b[i]->output(j)->type()) << i;
    if (a[i]->kind() == NodeKind::Op && a[i]->attrs() != nullptr) {
      EXPECT_TRUE(a[i]->op()->attrs->equal(a[i]->attrs(), b[i]->attrs())) << a[i]->kind_name();
    }
  }
  EXPECT_NE(once.find("add(%x, %y) {alpha=2.5}  # api.cpp:10 in build"), std::string::npos);
  EXPECT_NE(once.find("%6 : f32[3, 2] = prim.constant() {value=[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]}"),
            std::string::npos)
      << once;
  EXPECT_NE(once.find("f16[4, 5] meta = prim.constant()\n"), std::string::npos);
  EXPECT_NE(once.find("f64[] = prim.constant() {value=[0.3]}"), std::string::npos);
  EXPECT_NE(once.find("b8[3] = prim.constant() {value=[true, false, true]}"), std::string::npos);
  EXPECT_NE(once.find("mul(%a, %b) {alpha=1}"), std::string::npos);
  // A clone prints identically.
  EXPECT_EQ(print(*g->clone()), once);
}

TEST(IrText, PrintingInsideAnActiveTraceReadsConstantsEagerly) {
  // The printer reads constant data with the tracer and autograd keys excluded; printing twice
  // in a row, with a grad-requiring constant, gives the same text.
  auto g = std::make_shared<Graph>();
  Tensor v = from_vector<float>({1.5f, -2.0f}, {2});
  v.requires_grad_();
  Node* c = g->create_constant(v);
  g->add_output(c->output());
  EXPECT_EQ(print(*g),
            "graph():\n  %0 : f32[2] = prim.constant() {value=[1.5, -2.0]}\n  return (%0)\n");
  EXPECT_EQ(print(*g), print(*parse(print(*g))));
}

TEST(IrText, FloatFormatting) {
  EXPECT_EQ(format_double(2.0), "2.0");
  EXPECT_EQ(format_double(-0.0), "-0.0");
  EXPECT_EQ(format_double(1e-5), "1e-05");
  EXPECT_EQ(format_double(1e16), "1e+16");
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(format_double(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(format_float(0.1f), "0.1");
  EXPECT_EQ(format_float(16777216.0f), "16777216.0");
  EXPECT_EQ(quote_string("a\"b\\c\nd"), R"("a\"b\\c\nd")");
}

}  // namespace
}  // namespace kiln::ir
