// Graphviz export: one DOT node per IR node, one edge per use, clusters for fusion groups, and
// properly escaped strings.
#include <gtest/gtest.h>

#include <string>

#include "kiln/ir/dot.h"
#include "kiln/ir/parser.h"
#include "kiln/runtime/op_table.h"

namespace kiln::ir {
namespace {

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size()))
    ++n;
  return n;
}

size_t total_uses(const Graph& g) {
  size_t n = 0;
  for (const Node* node : g.nodes())
    for (const Value* v : node->outputs())
      n += v->uses().size();
  return n;
}

// Every line's quotes pair up once escaped quotes (\") are skipped.
void expect_balanced_quotes(const std::string& dot) {
  size_t start = 0;
  while (start < dot.size()) {
    size_t end = dot.find('\n', start);
    std::string line = dot.substr(start, end - start);
    int quotes = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\') {
        ++i;
      } else if (line[i] == '"') {
        ++quotes;
      }
    }
    EXPECT_EQ(quotes % 2, 0) << line;
    start = end == std::string::npos ? dot.size() : end + 1;
  }
}

TEST(IrDot, SmallGraphStructure) {
  auto g = parse(R"(graph(%x : f32[2], %y : f32[2]):
  %0 : f32[2] = add(%x, %y) {alpha=1}  # model.cpp:4 in "forward"
  %1 : f32[2] = relu(%0)
  %2 : f32[2] = prim.fallback(%1) {name="My\"Fn\\"}
  %3 : f32[2], %4 : i64[2] = max(%2) {dim=0, keepdim=false}
  return (%1, %0, %4)
)");
  std::string dot = to_dot(*g);
  EXPECT_EQ(dot.rfind("digraph kiln {\n", 0), 0u);
  EXPECT_EQ(dot.back(), '\n');
  // add: 2 uses, relu: 1, fallback: 1, max: 1, graph outputs: 3.
  EXPECT_EQ(total_uses(*g), 8u);
  EXPECT_EQ(count(dot, " -> "), total_uses(*g));
  EXPECT_EQ(count(dot, "shape=invtriangle"), 2u);  // the graph inputs
  EXPECT_EQ(count(dot, "shape=oval"), 3u);         // the graph outputs
  EXPECT_EQ(count(dot, "shape=box"), 4u);          // the nodes
  EXPECT_NE(dot.find("label=\"add\\nalpha=1\\n-> f32[2]\""), std::string::npos) << dot;
  EXPECT_NE(dot.find(R"(tooltip="model.cpp:4 in \"forward\"")"), std::string::npos) << dot;
  // The fallback's name is a quoted string in the label, escaped once more for DOT.
  EXPECT_NE(dot.find(R"(name=\"My\\\"Fn\\\\\")"), std::string::npos) << dot;
  // The second output of max feeds the graph output: the edge names the output index.
  EXPECT_NE(dot.find("g0_n5 -> g0_out2 [label=\"1\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("g0_n0 -> g0_n2;"), std::string::npos) << dot;
  EXPECT_EQ(count(dot, "cluster_"), 0u);
  expect_balanced_quotes(dot);
}

TEST(IrDot, FusionGroupsAreClusters) {
  auto g = parse(R"(graph(%x : f32[2]):
  %0 : f32[2] = prim.fusion_group(%x, %x)
    graph(%a : f32[2], %b : f32[2]):
      %0 : f32[2] = prim.fusion_group(%a)
        graph(%c : f32[2]):
          %0 : f32[2] = neg(%c)
          return (%0)
      %1 : f32[2] = mul(%0, %b) {alpha=1}
      return (%1)
  %1 : f32[2] = prim.constant() {value=[1.0, 2.0]}
  return (%0, %1)
)");
  std::string dot = to_dot(*g);
  EXPECT_EQ(count(dot, "subgraph cluster_"), 2u);
  EXPECT_NE(dot.find("subgraph cluster_0 {"), std::string::npos);
  EXPECT_NE(dot.find("subgraph cluster_1 {"), std::string::npos);
  const Graph& sub = *g->nodes()[1]->fusion_group().subgraph;
  const Graph& inner = *sub.nodes()[2]->fusion_group().subgraph;
  EXPECT_EQ(count(dot, " -> "), total_uses(*g) + total_uses(sub) + total_uses(inner));
  EXPECT_EQ(count(dot, "shape=note"), 1u);  // the constant
  EXPECT_NE(dot.find("value=[1.0, 2.0]"), std::string::npos);
  EXPECT_EQ(count(dot, "{"), count(dot, "}"));
  expect_balanced_quotes(dot);
}

}  // namespace
}  // namespace kiln::ir
