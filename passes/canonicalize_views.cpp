#include "kiln/passes/canonicalize_views.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "kiln/base/error.h"
#include "kiln/passes/dce.h"
#include "kiln/passes/propagate_types.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln::passes {
namespace {

// Where a view's elements are, relative to the storage offset of the chain's base. Two views of
// one base with equal geometries read exactly the same elements in the same order. Over symbols
// (Note [Symbolic types]) the sizes, strides and offset are expressions, equal when they are
// equal for every value of the symbols.
struct Geometry {
  SymShape sizes;
  SymShape strides;
  SymInt offset = 0;
  friend bool operator==(const Geometry&, const Geometry&) = default;
};

Geometry base_geometry(const ir::TensorType& t) {
  return {t.symbolic_sizes(), t.symbolic_strides(), 0};
}

// The view's geometry over `in` (ir::view_geometry).
std::optional<Geometry> apply_view(const OpDef& op, const void* attrs, const Geometry& in,
                                   const ir::TensorType& base, const ir::Graph& g) {
  std::optional<SymOutputGeometry> out =
      ir::view_geometry(op, attrs, {in.sizes, in.strides, in.offset}, base.dtype, base.device, g);
  if (!out) return std::nullopt;
  return Geometry{std::move(out->sizes), std::move(out->strides), out->storage_offset};
}

// q with a = q * b exactly, when the expressions say so (an integer, or floordiv that leaves
// no remainder); nullopt otherwise.
std::optional<SymInt> exact_quotient(const SymInt& a, const SymInt& b) {
  if (b == 0 || !(mod(a, b) == 0)) return std::nullopt;
  return floordiv(a, b);
}

bool is_view(const ir::Node* n) {
  return n->kind() == ir::NodeKind::Op && n->op()->has(kView) && n->num_inputs() == 1 &&
         n->num_outputs() == 1;
}

// One op that might replace a chain.
struct Candidate {
  const OpDef* op;
  ir::OpAttrs attrs;
};

template <class A>
Candidate candidate(std::string_view op_name, const A& attrs) {
  const OpDef& op = get_op(op_name);
  return {&op, ir::OpAttrs(op.attrs, &attrs)};
}

// The permutation a chain of transposes and permutes applies (output dim i reads base dim
// perm[i]), or nothing when the chain has other ops.
std::optional<Shape> composed_permutation(std::span<const ir::Node* const> chain, int64_t nd) {
  Shape perm(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i)
    perm[i] = i;
  for (const ir::Node* n : chain) {
    if (n->is_op("transpose")) {
      const auto& a = n->attrs_as<TransposeAttrs>();
      if (nd > 0)
        std::swap(perm[wrap_dim("transpose", a.dim0, nd)], perm[wrap_dim("transpose", a.dim1, nd)]);
    } else if (n->is_op("permute")) {
      const Shape& dims = n->attrs_as<DimsAttrs>().dims;
      Shape next(perm.size());
      for (size_t i = 0; i < dims.size() && i < next.size(); ++i)
        next[i] = perm[wrap_dim("permute", dims[i], nd)];
      perm = std::move(next);
    } else {
      return std::nullopt;
    }
  }
  return perm;
}

// A permutation that moves the base's dims to the target's, matched by size and stride; where
// several dims match, any choice gives the same geometry.
std::optional<Shape> matched_permutation(const Geometry& base, const Geometry& target) {
  if (base.sizes.size() != target.sizes.size()) return std::nullopt;
  Shape perm;
  std::vector<bool> used(base.sizes.size(), false);
  for (size_t i = 0; i < target.sizes.size(); ++i) {
    size_t j = 0;
    while (j < base.sizes.size() && (used[j] || !(base.sizes[j] == target.sizes[i]) ||
                                     !(base.strides[j] == target.strides[i])))
      ++j;
    if (j == base.sizes.size()) return std::nullopt;
    used[j] = true;
    perm.push_back(static_cast<int64_t>(j));
  }
  return perm;
}

// The ways `kind` might express the chain's geometry `g` on a base of geometry `b`. Each is only a
// guess, checked against `g` by the caller.
std::vector<Candidate> candidates_of(std::string_view kind, const Geometry& b, const Geometry& g,
                                     std::span<const ir::Node* const> chain) {
  std::vector<Candidate> out;
  auto nb = static_cast<int64_t>(b.sizes.size());
  auto ng = static_cast<int64_t>(g.sizes.size());
  if (kind == "view" || kind == "expand") {
    out.push_back(candidate(kind, SizeAttrs{g.sizes}));
  } else if (kind == "permute" || kind == "transpose") {
    std::optional<Shape> perm = composed_permutation(chain, nb);
    if (!perm) perm = matched_permutation(b, g);
    if (!perm) return out;
    if (kind == "permute") {
      out.push_back(candidate(kind, DimsAttrs{*perm}));
    } else {
      std::vector<int64_t> moved;
      for (int64_t i = 0; i < nb; ++i)
        if ((*perm)[i] != i) moved.push_back(i);
      if (moved.size() == 2) out.push_back(candidate(kind, TransposeAttrs{moved[0], moved[1]}));
    }
  } else if (kind == "squeeze" && ng < nb) {
    // Align the target's dims with the base's, dropping size-1 base dims that do not match.
    Shape dropped;
    int64_t j = 0;
    for (int64_t i = 0; i < nb; ++i) {
      if (j < ng && b.sizes[i] == g.sizes[j] && b.strides[i] == g.strides[j]) {
        ++j;
      } else if (b.sizes[i] == 1) {
        dropped.push_back(i);
      } else {
        return out;
      }
    }
    if (j == ng) out.push_back(candidate(kind, DimsAttrs{dropped}));
  } else if (kind == "unsqueeze" && ng == nb + 1) {
    for (int64_t d = 0; d < ng; ++d)
      if (g.sizes[d] == 1) out.push_back(candidate(kind, DimAttrs{d}));
  } else if (kind == "slice" && ng == nb) {
    std::vector<int64_t> differ;
    for (int64_t d = 0; d < nb; ++d)
      if (!(b.sizes[d] == g.sizes[d]) || !(b.strides[d] == g.strides[d])) differ.push_back(d);
    if (differ.size() != 1) return out;
    int64_t d = differ[0];
    const SymInt& s = b.strides[d];
    std::optional<SymInt> step = exact_quotient(g.strides[d], s),
                          start = exact_quotient(g.offset, s);
    if (!step || !start || !step->maybe_int() || !start->maybe_int() || *step->maybe_int() <= 0)
      return out;
    SymInt end = g.sizes[d] == 0 ? *start : *start + (g.sizes[d] - 1) * *step + 1;
    // Slice bounds are integers: an end that is an expression counts from the end of the dim.
    std::optional<int64_t> e = end.maybe_int();
    if (!e && end == b.sizes[d]) e = INT64_MAX;
    if (!e) {
      std::optional<int64_t> from_end = (b.sizes[d] - end).maybe_int();
      if (from_end && *from_end > 0) e = -*from_end;
    }
    if (e)
      out.push_back(candidate(kind, SliceAttrs{d, *start->maybe_int(), *e, *step->maybe_int()}));
  } else if (kind == "select" && ng + 1 == nb) {
    for (int64_t d = 0; d < nb; ++d) {
      const SymInt& s = b.strides[d];
      std::optional<SymInt> index = s == 0 ? std::optional<SymInt>(0) : exact_quotient(g.offset, s);
      if (!index) continue;
      if (std::optional<int64_t> i = index->maybe_int()) {
        out.push_back(candidate(kind, SelectAttrs{d, *i}));
      } else if (std::optional<int64_t> from_end = (b.sizes[d] - *index).maybe_int()) {
        out.push_back(candidate(kind, SelectAttrs{d, -*from_end}));  // x[-k] of a symbolic dim
      }
    }
  }
  return out;
}

// The op kinds that may replace `chain`: the last op's first (it names what the user asked
// for), then the others from the nearest; a transpose brings permute along, since two
// transposes compose to a permutation.
std::vector<std::string_view> kinds_of(std::span<const ir::Node* const> chain) {
  std::vector<std::string_view> kinds;
  auto add = [&](std::string_view k) {
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  };
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    add((*it)->op()->name);
  if (std::find(kinds.begin(), kinds.end(), "transpose") != kinds.end()) add("permute");
  return kinds;
}

class ViewCanonicalizer {
 public:
  explicit ViewCanonicalizer(ir::Graph& g) : g_(g) {}

  bool run() {
    bool changed = restride();
    for (bool again = true; again;) {
      again = false;
      erased_.clear();
      for (ir::Node* n : g_.nodes()) {
        if (erased_.count(n) == 0 && is_view(n)) again = collapse(*n) || again;
      }
      changed = changed || again;
    }
    return changed;
  }

 private:
  // Gives every stride-dependent type the strides its rule gives.
  bool restride() {
    bool changed = false;
    for (ir::Node* n : g_.nodes()) {
      if (n->kind() != ir::NodeKind::Op || !(n->op()->has(kView) || n->op()->has(kInPlace))) {
        continue;
      }
      std::vector<ir::TensorType> inputs;
      for (const ir::Value* v : n->inputs())
        inputs.push_back(v->type());
      std::vector<ir::TensorType> types;
      std::vector<SymFact> facts = g_.symbol_facts();
      try {
        types = infer_op_types(*n->op(), inputs, n->attrs(), g_.symbol_hints(), &facts);
      } catch (const Error&) {
        continue;  // an invalid node: the verifier names it
      }
      if (types.size() != n->num_outputs() || facts.size() != g_.symbol_facts().size()) continue;
      for (size_t i = 0; i < types.size(); ++i) {
        types[i].requires_grad = n->output(i)->type().requires_grad;
        if (n->output(i)->type() == types[i]) continue;
        n->output(i)->set_type(std::move(types[i]));
        changed = true;
      }
    }
    return changed;
  }

  // Replaces `n` by the shortest form of the longest chain of views ending at it that collapses.
  bool collapse(ir::Node& n) {
    std::vector<const ir::Node*> chain{&n};  // nearest last once reversed below
    for (const ir::Node* p = n.input(0)->node(); is_view(p); p = p->input(0)->node())
      chain.push_back(p);
    std::reverse(chain.begin(), chain.end());
    for (size_t first = 0; first < chain.size(); ++first) {
      std::span<const ir::Node* const> tail(chain.data() + first, chain.size() - first);
      ir::Value* v = replacement(n, tail);
      if (v == nullptr) continue;
      if (v == tail.front()->input(0)) {
        // The identity: n's value is its base. Graph outputs keep n
        // (Value::replace_node_uses_with).
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

  // A value equivalent to the end of `chain`: its base when the chain is the identity, else a new
  // single op on the base; null when neither exists.
  ir::Value* replacement(ir::Node& n, std::span<const ir::Node* const> chain) {
    ir::Value* base = chain.front()->input(0);
    const ir::TensorType& bt = base->type();
    const ir::TensorType& want = n.output()->type();
    Geometry b = base_geometry(bt);
    std::optional<Geometry> g = b;
    for (const ir::Node* v : chain) {
      g = apply_view(*v->op(), v->attrs(), *g, bt, g_);
      if (!g) return nullptr;
    }
    if (*g == b) return bt == want ? base : nullptr;
    if (chain.size() < 2) return nullptr;
    for (std::string_view kind : kinds_of(chain)) {
      for (Candidate& c : candidates_of(kind, b, *g, chain)) {
        std::optional<Geometry> got = apply_view(*c.op, c.attrs.get(), b, bt, g_);
        if (!got || !(*got == *g)) continue;
        std::vector<SymFact> facts = g_.symbol_facts();
        std::vector<ir::TensorType> types;
        try {
          types =
              infer_op_types(*c.op, std::span(&bt, 1), c.attrs.get(), g_.symbol_hints(), &facts);
        } catch (const Error&) {
          continue;
        }
        if (types.size() != 1 || facts.size() != g_.symbol_facts().size()) continue;
        types[0].requires_grad = want.requires_grad;  // autograd state: n's, as in simplify.cpp
        if (!(types[0] == want)) continue;
        ir::Node* saved = g_.insert_point();
        g_.set_insert_point(&n);
        ir::Node* m = g_.create_op(*c.op, std::span(&base, 1), c.attrs.get(), types);
        g_.set_insert_point(saved);
        m->set_call_site(n.call_site());
        return m->output();
      }
    }
    return nullptr;
  }

  ir::Graph& g_;
  // Nodes erased during the current sweep (see Simplifier in simplify.cpp).
  std::unordered_set<const ir::Node*> erased_;
};

}  // namespace

bool canonicalize_views(ir::Graph& graph) {
  bool changed = false;
  for (ir::Node* n : graph.nodes()) {
    if (n->kind() == ir::NodeKind::FusionGroup && n->fusion_group().subgraph) {
      changed = canonicalize_views(*n->fusion_group().subgraph) || changed;
    }
  }
  return ViewCanonicalizer(graph).run() || changed;
}

}  // namespace kiln::passes
