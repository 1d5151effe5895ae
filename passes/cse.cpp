#include "kiln/passes/cse.h"

#include <unordered_map>

#include "kiln/runtime/attrs.h"

namespace kiln::passes {
namespace {

bool takes_part(const ir::Node* n) {
  if (n->kind() != ir::NodeKind::Op) return false;
  const OpDef& op = *n->op();
  return !op.has(kInPlace) && op.name != "empty";
}

size_t node_hash(const ir::Node* n) {
  size_t h = std::hash<const void*>()(n->op());
  for (const ir::Value* v : n->inputs())
    detail::hash_combine(h, std::hash<const void*>()(v));
  detail::hash_combine(h, n->op()->attrs->hash(n->attrs()));
  return h;
}

bool same_computation(const ir::Node* a, const ir::Node* b) {
  if (a->op() != b->op() || a->num_inputs() != b->num_inputs()) return false;
  for (size_t i = 0; i < a->num_inputs(); ++i)
    if (a->input(i) != b->input(i)) return false;
  if (!a->op()->attrs->equal(a->attrs(), b->attrs())) return false;
  for (size_t i = 0; i < a->num_outputs(); ++i)
    if (!(a->output(i)->type() == b->output(i)->type())) return false;
  return true;
}

}  // namespace

bool eliminate_common_subexpressions(ir::Graph& graph) {
  bool changed = false;
  std::unordered_multimap<size_t, ir::Node*> seen;
  for (ir::Node* n : graph.nodes()) {
    if (n->kind() == ir::NodeKind::FusionGroup && n->fusion_group().subgraph) {
      changed = eliminate_common_subexpressions(*n->fusion_group().subgraph) || changed;
    }
    if (!takes_part(n)) continue;
    size_t h = node_hash(n);
    auto [lo, hi] = seen.equal_range(h);
    ir::Node* earlier = nullptr;
    for (auto it = lo; it != hi && earlier == nullptr; ++it)
      if (same_computation(it->second, n)) earlier = it->second;
    if (earlier == nullptr) {
      seen.emplace(h, n);
      continue;
    }
    for (size_t i = 0; i < n->num_outputs(); ++i)
      n->output(i)->replace_all_uses_with(earlier->output(i));
    graph.erase(n);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
