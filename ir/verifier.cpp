#include "kiln/ir/verifier.h"

#include "kiln/ir/infer_types.h"
#include "kiln/ir/printer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "kiln/base/error.h"

namespace kiln::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g) { name_values(); }

  void run() {
    check_params();
    check_symbol_facts();
    std::unordered_set<const Node*> seen;
    for (size_t pos = 0; pos < nodes_.size(); ++pos) {
      const Node* n = nodes_[pos];
      KILN_CHECK(n->owning_graph() == &g_, "verify: {} belongs to another graph", describe(n));
      check_inputs(n, pos);
      check_outputs_uses(n);
      for (size_t i = 0; i < n->num_outputs(); ++i)
        check_symbolic_type(n->output(i));
      switch (n->kind()) {
        case NodeKind::Param:
          break;
        case NodeKind::Constant:
          check_constant(n);
          break;
        case NodeKind::Op:
          check_op(n);
          break;
        case NodeKind::FusionGroup:
          check_fusion_group(n);
          break;
        case NodeKind::Fallback:
          KILN_CHECK(!n->fallback().name.empty(), "verify: {}: a fallback needs a name",
                     describe(n));
          break;
      }
    }
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      const Value* v = g_.outputs()[i];
      KILN_CHECK(v != nullptr && position_.count(v->node()) != 0,
                 "verify: graph output {} is not defined in this graph", i);
      KILN_CHECK(std::count(v->uses().begin(), v->uses().end(), Use{nullptr, i}) == 1,
                 "verify: graph output {} ({}) is missing from its value's use list", i, name(v));
    }
  }

 private:
  void name_values() {
    nodes_ = g_.nodes();
    for (size_t pos = 0; pos < nodes_.size(); ++pos)
      position_[nodes_[pos]] = pos;
    names_ = value_names(g_);
  }

  std::string name(const Value* v) const {
    auto it = names_.find(v);
    return it != names_.end() ? it->second : "%<value of another graph>";
  }

  std::string describe(const Node* n) const { return describe_node(*n, names_); }

  void check_params() {
    size_t params = 0;
    for (const Node* n : nodes_) {
      if (n->kind() != NodeKind::Param) break;
      ++params;
    }
    size_t total = static_cast<size_t>(std::count_if(
        nodes_.begin(), nodes_.end(), [](const Node* n) { return n->kind() == NodeKind::Param; }));
    KILN_CHECK(params == total, "verify: a graph input node appears after other nodes");
    KILN_CHECK(params == g_.inputs().size(),
               "verify: the graph has {} inputs but {} parameter nodes", g_.inputs().size(),
               params);
    for (size_t i = 0; i < params; ++i) {
      KILN_CHECK(nodes_[i]->output() == g_.inputs()[i] && nodes_[i]->param().index == i,
                 "verify: graph input {} does not match parameter node {}", i, i);
    }
  }

  void check_inputs(const Node* n, size_t pos) {
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const Value* v = n->input(i);
      KILN_CHECK(v != nullptr, "verify: {}: input {} is null", describe(n), i);
      auto def = position_.find(v->node());
      KILN_CHECK(def != position_.end(), "verify: {}: input {} is a value of another graph",
                 describe(n), i);
      KILN_CHECK(def->second < pos, "verify: {}: input {} ({}) is used before its definition",
                 describe(n), i, name(v));
      KILN_CHECK(std::count(v->uses().begin(), v->uses().end(), Use{const_cast<Node*>(n), i}) == 1,
                 "verify: {}: input {} ({}) does not list this node among its uses", describe(n), i,
                 name(v));
    }
  }

  // Every use must point back at the value (a stale use is left behind when a node is removed
  // without going through Graph::erase).
  void check_outputs_uses(const Node* n) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      const Value* v = n->output(o);
      KILN_CHECK(v->node() == n && v->offset() == o,
                 "verify: {}: output {} records a different defining node", describe(n), o);
      for (const Use& u : v->uses()) {
        if (u.user == nullptr) {
          KILN_CHECK(u.index < g_.outputs().size() && g_.outputs()[u.index] == v,
                     "verify: {}: {} lists graph output {} as a use, but that output is another "
                     "value",
                     describe(n), name(v), u.index);
          continue;
        }
        KILN_CHECK(position_.count(u.user) != 0,
                   "verify: {}: {} has a dangling use by a node that is not in the graph",
                   describe(n), name(v));
        KILN_CHECK(u.index < u.user->num_inputs() && u.user->input(u.index) == v,
                   "verify: {}: {} lists a use as input {} of {}, which is another value",
                   describe(n), name(v), u.index, describe(u.user));
      }
    }
  }

  void check_constant(const Node* n) {
    const Tensor& t = n->constant().value;
    KILN_CHECK(t.defined(), "verify: {}: the constant holds no tensor", describe(n));
    KILN_CHECK(n->num_inputs() == 0 && n->num_outputs() == 1,
               "verify: {}: a constant has no inputs and one output", describe(n));
    TensorType want = TensorType::of(t);
    want.requires_grad = false;
    KILN_CHECK(n->output()->type() == want,
               "verify: {}: the type {} does not match the constant's tensor {}", describe(n),
               n->output()->type().str(), want.str());
  }

  void check_op(const Node* n) {
    const OpDef& op = *n->op();
    size_t want = op.input_names.size();
    if (op.variadic) {
      // A variadic schema names one input for a list (cat's tensors), or the optional trailing
      // inputs it may take (layer_norm's weight and bias).
      // index's schema names its fixed inputs and then one list (Note [Advanced index schema]).
      bool list = want == 1 || op.variadic_list_tail;
      size_t least = op.variadic_list_tail ? want - 1 : 1;
      KILN_CHECK(n->num_inputs() >= least && (list || n->num_inputs() <= want),
                 "verify: {}: {} takes {} {} input(s), got {}", describe(n), op.name,
                 list ? "at least" : "1 to", list ? least : want, n->num_inputs());
    } else {
      KILN_CHECK(n->num_inputs() == want, "verify: {}: {} takes {} input(s) ({}), got {}",
                 describe(n), op.name, want, fmt::join(op.input_names, ", "), n->num_inputs());
    }
    KILN_CHECK(n->attrs() != nullptr, "verify: {}: missing the {} attributes", describe(n),
               op.attrs_type);

    std::vector<TensorType> inputs;
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const TensorType& t = n->input(i)->type();
      inputs.push_back(t);
      if (i > 0) {
        KILN_CHECK(t.device == inputs[0].device,
                   "verify: {}: input {} is on {} but input 0 is on {}", describe(n), i, t.device,
                   inputs[0].device);
      }
    }
    std::vector<TensorType> expected;
    std::vector<SymFact> assumed;
    try {
      expected = infer_op_types(op, inputs, n->attrs(), g_.symbol_hints(), &assumed);
    } catch (const Error& e) {
      KILN_ERROR("verify: {}: the op's shape or dtype rule rejects the input types: {}",
                 describe(n), e.what());
    }
    // Note [Assumed size facts]: what the rule assumed must be among the graph's facts, or a
    // call that breaks it would reach this node.
    const std::vector<SymFact>& facts = g_.symbol_facts();
    for (const SymFact& f : assumed)
      KILN_CHECK(std::find(facts.begin(), facts.end(), f) != facts.end(),
                 "verify: {}: {}'s rule assumes {}, which the graph's assuming(...) clause does "
                 "not list",
                 describe(n), op.name, f.str());
    KILN_CHECK(expected.size() == n->num_outputs(), "verify: {}: {} has {} output(s), the node {}",
               describe(n), op.name, expected.size(), n->num_outputs());
    for (size_t i = 0; i < expected.size(); ++i) {
      TensorType& expect = expected[i];
      const TensorType& got = n->output(i)->type();
      expect.requires_grad = got.requires_grad;  // autograd state, not a rule of the op
      KILN_CHECK(got == expect,
                 "verify: {}: output {} has type {}, but {}'s rules give {} for inputs ({})",
                 describe(n), i, got.str(), op.name, expect.str(), input_types(n));
    }
  }

  // Each fact names declared symbols only and holds at the hints (Note [Assumed size facts]).
  void check_symbol_facts() const {
    const std::vector<int64_t>& hints = g_.symbol_hints();
    for (const SymFact& f : g_.symbol_facts()) {
      for (const SymInt* side : {&f.lhs, &f.rhs})
        for (int64_t id : side->symbols())
          KILN_CHECK(static_cast<size_t>(id) < hints.size(),
                     "verify: the graph assumes {}, but declares {} symbol(s)", f.str(),
                     hints.size());
      KILN_CHECK(f.holds(hints), "verify: the graph assumes {}, which fails at its hints", f.str());
    }
  }

  // A symbolic type names only declared symbols, and its integer sizes and strides are its
  // symbols' values at the graph's hints (Note [Symbolic types]).
  void check_symbolic_type(const Value* v) const {
    const TensorType& t = v->type();
    if (!t.is_symbolic()) {
      KILN_CHECK(t.sym_strides.empty(), "verify: {}: symbolic strides with integer sizes", name(v));
      return;
    }
    const std::vector<int64_t>& hints = g_.symbol_hints();
    for (const SymShape* shape : {&t.sym_sizes, &t.sym_strides})
      for (const SymInt& s : *shape)
        for (int64_t id : s.symbols())
          KILN_CHECK(static_cast<size_t>(id) < hints.size(),
                     "verify: {} has type {}, but the graph declares {} symbol(s)", name(v),
                     t.str(), hints.size());
    KILN_CHECK(t.sym_strides.empty() || t.sym_strides.size() == t.sym_sizes.size(),
               "verify: {}: type {} has {} strides for {} sizes", name(v), t.str(),
               t.sym_strides.size(), t.sym_sizes.size());
    TensorType at_hints = t;
    at_hints.evaluate_hints(hints);
    KILN_CHECK(at_hints.sizes == t.sizes && at_hints.strides == t.strides,
               "verify: {}: type {} has sizes {} strides {} at the hints, but records {} and {}",
               name(v), t.str(), shape_str(at_hints.sizes), shape_str(at_hints.strides),
               shape_str(t.sizes), shape_str(t.strides));
  }

  std::string input_types(const Node* n) const {
    std::string s;
    for (const Value* v : n->inputs()) {
      if (!s.empty()) s += ", ";
      s += v->type().str();
    }
    return s;
  }

  static bool same_tensor_meta(const TensorType& a, const TensorType& b) {
    return a.dtype == b.dtype && a.device == b.device && a.sizes == b.sizes &&
           a.sym_sizes == b.sym_sizes;
  }

  void check_fusion_group(const Node* n) {
    const Graph* sub = n->fusion_group().subgraph.get();
    KILN_CHECK(sub != nullptr, "verify: {}: the fusion group has no subgraph", describe(n));
    try {
      verify(*sub);
    } catch (const Error& e) {
      KILN_ERROR("verify: in the subgraph of {}: {}", describe(n), e.what());
    }
    KILN_CHECK(sub->inputs().size() == n->num_inputs(),
               "verify: {}: the subgraph takes {} input(s), the node passes {}", describe(n),
               sub->inputs().size(), n->num_inputs());
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      KILN_CHECK(same_tensor_meta(sub->inputs()[i]->type(), n->input(i)->type()),
                 "verify: {}: input {} has type {}, the subgraph expects {}", describe(n), i,
                 n->input(i)->type().str(), sub->inputs()[i]->type().str());
    }
    KILN_CHECK(sub->outputs().size() == n->num_outputs(),
               "verify: {}: the subgraph returns {} value(s), the node has {} output(s)",
               describe(n), sub->outputs().size(), n->num_outputs());
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      KILN_CHECK(same_tensor_meta(sub->outputs()[i]->type(), n->output(i)->type()),
                 "verify: {}: output {} has type {}, the subgraph returns {}", describe(n), i,
                 n->output(i)->type().str(), sub->outputs()[i]->type().str());
    }
  }

  const Graph& g_;
  std::vector<Node*> nodes_;
  std::unordered_map<const Node*, size_t> position_;
  ValueNames names_;
};

}  // namespace

void verify(const Graph& graph) {
  Verifier(graph).run();
}

}  // namespace kiln::ir
