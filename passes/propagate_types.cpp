#include "kiln/passes/propagate_types.h"

#include "kiln/base/error.h"
#include "kiln/ir/printer.h"

namespace kiln::passes {
namespace {

std::string type_list(std::span<const ir::TensorType> types) {
  std::string s;
  for (const ir::TensorType& t : types) {
    if (!s.empty()) s += ", ";
    s += t.str();
  }
  return s;
}

bool set_type(ir::Value* v, const ir::TensorType& t) {
  if (v->type() == t) return false;
  v->set_type(t);
  return true;
}

// A fact the rule assumes (Note [Assumed size facts]) joins the graph's.
bool propagate_op(ir::Node* n, const ir::ValueNames& names, ir::Graph& graph) {
  std::vector<ir::TensorType> inputs;
  for (const ir::Value* v : n->inputs())
    inputs.push_back(v->type());
  std::vector<ir::TensorType> outputs;
  std::vector<SymFact> facts = graph.symbol_facts();
  try {
    outputs = ir::infer_op_types(*n->op(), inputs, n->attrs(), graph.symbol_hints(), &facts);
  } catch (const Error& e) {
    KILN_ERROR("propagate_types: {}: the op's rules reject the input types ({}): {}",
               ir::describe_node(*n, names), type_list(inputs), e.what());
  }
  KILN_CHECK(outputs.size() == n->num_outputs(),
             "propagate_types: {}: {} has {} output(s), the node {}", ir::describe_node(*n, names),
             n->op()->name, outputs.size(), n->num_outputs());
  bool changed = false;
  if (facts.size() != graph.symbol_facts().size()) {
    graph.set_symbol_facts(std::move(facts));
    changed = true;
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    changed = set_type(n->output(i), outputs[i]) || changed;
  return changed;
}

bool propagate_fusion_group(ir::Node* n) {
  ir::Graph* sub = n->fusion_group().subgraph.get();
  if (sub == nullptr || sub->inputs().size() != n->num_inputs() ||
      sub->outputs().size() != n->num_outputs()) {
    return false;  // malformed; the verifier says what is wrong with it
  }
  // A subgraph read from text without a symbols clause uses its enclosing graph's symbols.
  if (sub->symbol_hints().empty()) sub->set_symbols_from(*n->owning_graph());
  bool changed = false;
  for (size_t i = 0; i < n->num_inputs(); ++i)
    changed = set_type(sub->input(i), n->input(i)->type()) || changed;
  changed = propagate_types(*sub) || changed;
  for (size_t i = 0; i < n->num_outputs(); ++i)
    changed = set_type(n->output(i), sub->outputs()[i]->type()) || changed;
  return changed;
}

}  // namespace

bool propagate_types(ir::Graph& graph) {
  ir::ValueNames names = ir::value_names(graph);
  bool changed = false;
  for (ir::Node* n : graph.nodes()) {
    switch (n->kind()) {
      case ir::NodeKind::Param:
      case ir::NodeKind::Fallback:
        break;
      case ir::NodeKind::Constant:
        if (n->constant().value.defined()) {
          ir::TensorType t = ir::TensorType::of(n->constant().value);
          t.requires_grad = false;
          changed = set_type(n->output(), t) || changed;
        }
        break;
      case ir::NodeKind::Op:
        changed = propagate_op(n, names, graph) || changed;
        break;
      case ir::NodeKind::FusionGroup:
        changed = propagate_fusion_group(n) || changed;
        break;
    }
  }
  return changed;
}

}  // namespace kiln::passes
