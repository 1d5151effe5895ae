#include "kiln/passes/dce.h"

namespace kiln::passes {
namespace {

bool has_effects(const ir::Node* n) {
  switch (n->kind()) {
    case ir::NodeKind::Param:
    case ir::NodeKind::Fallback:
      return true;
    case ir::NodeKind::Op:
      return n->op()->has(kInPlace);
    case ir::NodeKind::Constant:
    case ir::NodeKind::FusionGroup:
      return false;
  }
  return true;
}

bool is_dead(const ir::Node* n) {
  if (has_effects(n)) return false;
  for (size_t i = 0; i < n->num_outputs(); ++i)
    if (n->output(i)->has_uses()) return false;
  return true;
}

}  // namespace

bool eliminate_dead_code(ir::Graph& graph) {
  bool changed = false;
  std::vector<ir::Node*> nodes = graph.nodes();
  // One backward sweep suffices: a node's users all come after it, so by the time the sweep
  // reaches it, every dead user has already been erased.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    ir::Node* n = *it;
    if (n->kind() == ir::NodeKind::FusionGroup && n->fusion_group().subgraph) {
      changed = eliminate_dead_code(*n->fusion_group().subgraph) || changed;
    }
    if (is_dead(n)) {
      graph.erase(n);
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln::passes
