#include "kiln/ir/dot.h"

#include <fmt/format.h>

#include <unordered_map>

#include "kiln/ir/printer.h"

namespace kiln::ir {
namespace {

// Attribute summaries longer than this (large constants) are cut, to keep the drawing legible.
constexpr size_t kMaxAttrChars = 80;

// A DOT quoted string holding `s` literally: Graphviz reads \" and \\ as escapes and \n, \l,
// \N ... as line breaks and substitutions, so every backslash and quote is escaped.
std::string escape(std::string_view s) {
  std::string kept;
  for (char c : s)
    if (c != '\r') kept += c;
  std::string quoted = quote_string(kept);  // the IR text's escapes are DOT's too
  return quoted.substr(1, quoted.size() - 2);
}

class DotWriter {
 public:
  std::string out;

  void graph(const Graph& g, const std::string& indent) {
    int gid = next_graph_++;
    std::unordered_map<const Node*, std::string> ids;
    auto nodes = g.nodes();
    for (size_t i = 0; i < nodes.size(); ++i)
      ids[nodes[i]] = fmt::format("g{}_n{}", gid, i);

    for (const Node* n : nodes) {
      const std::string& id = ids[n];
      if (n->kind() == NodeKind::Param) {
        const Value* v = n->output();
        std::string name =
            v->debug_name().empty() ? fmt::format("arg{}", n->param().index) : v->debug_name();
        out += fmt::format("{}{} [shape=invtriangle, label=\"{}\\n{}\"];\n", indent, id,
                           escape(fmt::format("%{}", name)), escape(format_type(v->type())));
        continue;
      }
      if (n->kind() == NodeKind::FusionGroup) {
        int cluster = next_cluster_++;
        out += fmt::format("{}subgraph cluster_{} {{\n", indent, cluster);
        out += fmt::format("{}  label=\"prim.fusion_group\";\n", indent);
        out += fmt::format("{}  style=rounded;\n", indent);
        node_line(*n, id, indent + "  ");
        if (n->fusion_group().subgraph) graph(*n->fusion_group().subgraph, indent + "  ");
        out += indent + "}\n";
        continue;
      }
      node_line(*n, id, indent);
    }

    for (const Node* n : nodes) {
      for (size_t i = 0; i < n->num_inputs(); ++i)
        edge(ids, n->input(i), ids[n], indent);
    }
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      std::string id = fmt::format("g{}_out{}", gid, i);
      out += fmt::format("{}{} [shape=oval, label=\"return {}\"];\n", indent, id, i);
      edge(ids, g.outputs()[i], id, indent);
    }
  }

 private:
  void node_line(const Node& n, const std::string& id, const std::string& indent) {
    std::string label = escape(n.kind_name());
    std::string attrs = format_attrs(n);
    if (attrs.size() > kMaxAttrChars) attrs = attrs.substr(0, kMaxAttrChars) + "...";
    if (!attrs.empty()) label += "\\n" + escape(attrs);
    for (size_t i = 0; i < n.num_outputs(); ++i)
      label += "\\n-> " + escape(format_type(n.output(i)->type()));
    std::string extra;
    if (!n.call_site().empty()) extra = fmt::format(", tooltip=\"{}\"", escape(n.call_site()));
    std::string shape = n.kind() == NodeKind::Constant ? "note" : "box";
    out += fmt::format("{}{} [shape={}, label=\"{}\"{}];\n", indent, id, shape, label, extra);
  }

  void edge(const std::unordered_map<const Node*, std::string>& ids, const Value* v,
            const std::string& to, const std::string& indent) {
    auto it = ids.find(v->node());
    // A value from outside this graph (a malformed graph) still gets a visible edge.
    std::string from = it != ids.end() ? it->second : "outside";
    std::string label;
    if (v->node() != nullptr && v->node()->num_outputs() > 1)
      label = fmt::format(" [label=\"{}\"]", v->offset());
    out += fmt::format("{}{} -> {}{};\n", indent, from, to, label);
  }

  int next_graph_ = 0;
  int next_cluster_ = 0;
};

}  // namespace

std::string to_dot(const Graph& g) {
  DotWriter w;
  w.out = "digraph kiln {\n  node [fontname=\"monospace\", fontsize=10];\n";
  w.graph(g, "  ");
  w.out += "}\n";
  return std::move(w.out);
}

}  // namespace kiln::ir
