#include "kiln/passes/simplify.h"

#include <unordered_set>

#include "kiln/base/error.h"
#include "kiln/passes/dce.h"
#include "kiln/passes/propagate_types.h"
#include "kiln/passes/simplify_rules.h"

namespace kiln::passes {
namespace {

// The replacement as a value of the graph, or null when it would not have exactly the root's
// type. A new node goes where the root is, so it sees the same values. Over symbols the types
// compare as expressions (Note [Symbolic types]), so a rewrite that matches only at the hints is
// refused; a fact the new node's rule assumes joins the graph's (Note [Assumed size facts]).
ir::Value* materialize(ir::Graph& g, ir::Node& root, SimplifyReplacement& r) {
  const ir::TensorType& want = root.output()->type();
  if (r.value != nullptr) return r.value->type() == want ? r.value : nullptr;
  if (r.op == nullptr || r.input == nullptr) return nullptr;
  ir::TensorType input = r.input->type();
  std::vector<ir::TensorType> types;
  std::vector<SymFact> facts = g.symbol_facts();
  try {
    types = infer_op_types(*r.op, std::span(&input, 1), r.attrs.get(), g.symbol_hints(), &facts);
  } catch (const Error&) {
    return nullptr;  // the rewritten op would reject its input: the rule does not apply here
  }
  // requires_grad is the trace's autograd state (grad mode included), which the new node shares
  // with the root it replaces; everything else must come out of the rules as it was.
  if (types.size() != 1) return nullptr;
  types[0].requires_grad = want.requires_grad;
  if (!(types[0] == want)) return nullptr;
  if (facts.size() != g.symbol_facts().size()) g.set_symbol_facts(std::move(facts));
  ir::Node* saved = g.insert_point();
  g.set_insert_point(&root);
  ir::Node* n = g.create_op(*r.op, std::span(&r.input, 1), r.attrs.get(), types);
  g.set_insert_point(saved);
  n->set_call_site(root.call_site());
  return n->output();
}

class Simplifier {
 public:
  explicit Simplifier(ir::Graph& g) : g_(g) {}

  bool run() {
    bool changed = false;
    // A rewrite can expose another one upstream of nodes already visited (a rewritten view
    // chain under an expand), so sweep until a sweep changes nothing.
    for (bool again = true; again;) {
      again = false;
      erased_.clear();
      for (ir::Node* n : g_.nodes()) {
        if (erased_.count(n) != 0) continue;
        if (n->kind() == ir::NodeKind::FusionGroup && n->fusion_group().subgraph) {
          again = Simplifier(*n->fusion_group().subgraph).run() || again;
        }
        if (n->kind() == ir::NodeKind::Op && n->num_outputs() == 1) again = rewrite(*n) || again;
      }
      changed = changed || again;
    }
    return changed;
  }

 private:
  bool rewrite(ir::Node& n) {
    for (const SimplifyRule& rule : simplify_rules()) {
      if (!n.is_op(rule.root) || !rule.match(n)) continue;
      SimplifyReplacement r = rule.rewrite(n);
      bool forwards = r.value != nullptr;
      ir::Value* v = materialize(g_, n, r);
      if (v == nullptr) continue;
      if (forwards) {
        if (n.output()->replace_node_uses_with(v) == 0) continue;
      } else {
        n.output()->replace_all_uses_with(v);
      }
      for (const ir::Node* dead : erase_if_dead(g_, &n))
        erased_.insert(dead);
      return true;
    }
    return false;
  }

  ir::Graph& g_;
  // Nodes erased during the current sweep over a snapshot of the node list, compared by address
  // only (a later sweep takes a new snapshot, and a new node may reuse a freed address).
  std::unordered_set<const ir::Node*> erased_;
};

}  // namespace

bool simplify(ir::Graph& graph) {
  return Simplifier(graph).run();
}

}  // namespace kiln::passes
