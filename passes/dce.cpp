#include "kiln/passes/dce.h"

#include <algorithm>

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

std::vector<const ir::Node*> erase_if_dead(ir::Graph& graph, ir::Node* node) {
  std::vector<const ir::Node*> erased;
  std::vector<ir::Node*> work{node};
  while (!work.empty()) {
    ir::Node* n = work.back();
    work.pop_back();
    // A node reading the same value twice is queued twice; the second visit finds it erased.
    if (std::find(erased.begin(), erased.end(), n) != erased.end() || !is_dead(n)) continue;
    std::vector<ir::Node*> producers;
    for (const ir::Value* v : n->inputs())
      producers.push_back(v->node());
    graph.erase(n);
    erased.push_back(n);
    work.insert(work.end(), producers.begin(), producers.end());
  }
  return erased;
}

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
