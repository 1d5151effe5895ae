#include "kiln/ir/symbols.h"

#include <optional>

#include "kiln/base/error.h"
#include "kiln/runtime/op_def.h"
#include "kiln/runtime/sym_assumptions.h"

namespace kiln::ir {
namespace {

void substitute_type(TensorType& t, std::span<const SymInt> replacement) {
  if (!t.is_symbolic()) return;
  t.sym_sizes = substitute_sizes(t.sym_sizes, replacement);
  t.sym_strides = substitute_sizes(t.sym_strides, replacement);
  if (is_static(t.sym_sizes) && is_static(t.sym_strides)) {
    t.sym_sizes.clear();
    t.sym_strides.clear();
    if (!t.strides.empty() && strides_are_contiguous(t.sizes, t.strides)) t.strides.clear();
  }
}

void substitute_graph(Graph& g, std::span<const SymInt> replacement,
                      const std::vector<int64_t>& hints) {
  for (Node* node : g.nodes()) {
    for (Value* v : node->outputs()) {
      TensorType t = v->type();
      substitute_type(t, replacement);
      v->set_type(std::move(t));
    }
    if (node->kind() == NodeKind::Op && attrs_are_symbolic(node->op()->attrs, node->attrs()))
      node->set_attrs(substitute_attrs(node->op()->attrs, node->attrs(), replacement));
    if (node->kind() == NodeKind::FusionGroup && node->fusion_group().subgraph)
      substitute_graph(*node->fusion_group().subgraph, replacement, hints);
  }
  // A fact left without symbols held at the hints, so it holds for every call: it goes.
  std::vector<SymFact> facts;
  for (const SymFact& f : g.symbol_facts()) {
    SymFact s{f.lhs.substitute(replacement), f.relation, f.rhs.substitute(replacement)};
    if (s.lhs.is_symbolic() || s.rhs.is_symbolic()) add_facts(facts, std::span(&s, 1));
  }
  bool symbolic = g.has_symbolic_types();
  g.set_symbol_hints(symbolic ? hints : std::vector<int64_t>{});
  g.set_symbol_facts(symbolic ? std::move(facts) : std::vector<SymFact>{});
}

}  // namespace

std::vector<int64_t> bind_symbols(const Graph& g, std::span<const Tensor> inputs,
                                  std::string_view who) {
  const std::vector<int64_t>& hints = g.symbol_hints();
  std::vector<std::optional<int64_t>> bound(hints.size());
  // Each symbol's value comes from the first input dim that is that symbol alone; expression
  // dims are checked once every symbol has a value.
  struct Pending {
    size_t input;
    size_t dim;
  };
  std::vector<Pending> pending;
  auto mismatch = [&](size_t i, std::string_view why) {
    KILN_ERROR("{}: input {} has sizes {}, but the graph expects {} ({})", who, i,
               shape_str(inputs[i].impl()->sizes()), g.input(i)->type().str(), why);
  };
  for (size_t i = 0; i < inputs.size() && i < g.inputs().size(); ++i) {
    const TensorType& want = g.input(i)->type();
    if (!want.is_symbolic()) continue;
    const Shape& have = inputs[i].impl()->sizes();
    if (have.size() != want.sym_sizes.size()) mismatch(i, "a different number of dims");
    for (size_t d = 0; d < have.size(); ++d) {
      const SymInt& s = want.sym_sizes[d];
      if (std::optional<int64_t> v = s.maybe_int()) {
        if (*v != have[d]) mismatch(i, fmt::format("dim {} is {}, not {}", d, have[d], *v));
        continue;
      }
      std::optional<int64_t> id = s.symbol_id();
      if (!id) {
        pending.push_back({i, d});
        continue;
      }
      KILN_CHECK(*id >= 0 && static_cast<size_t>(*id) < bound.size(),
                 "{}: input {} names symbol s{}, which the graph does not declare", who, i, *id);
      std::optional<int64_t>& slot = bound[static_cast<size_t>(*id)];
      if (have[d] < 2)
        mismatch(i, fmt::format("dim {} is {}; the plan's symbol s{} stands for sizes of at "
                                "least 2, because sizes 0 and 1 are always specialized",
                                d, have[d], *id));
      if (slot && *slot != have[d])
        mismatch(i, fmt::format("dim {} is {}, but s{} is {} from an earlier dim", d, have[d], *id,
                                *slot));
      slot = have[d];
    }
  }
  std::vector<int64_t> values(hints.size());
  for (size_t k = 0; k < bound.size(); ++k) {
    KILN_CHECK(bound[k].has_value(),
               "{}: symbol s{} is not the size of any input dim, so no call can bind it", who, k);
    values[k] = *bound[k];
  }
  for (const Pending& p : pending) {
    const SymInt& s = g.input(p.input)->type().sym_sizes[p.dim];
    int64_t want = s.evaluate(values);
    int64_t have = inputs[p.input].impl()->sizes()[p.dim];
    if (want != have)
      mismatch(p.input, fmt::format("dim {} is {}, but {} is {}", p.dim, have, s.str(), want));
  }
  // Note [Assumed size facts]: the sizes must also satisfy what the rules assumed.
  for (const SymFact& f : g.symbol_facts()) {
    if (f.holds(values)) continue;
    std::string bound;
    for (size_t k = 0; k < values.size(); ++k)
      bound += fmt::format("{}s{} = {}", k > 0 ? ", " : "", k, values[k]);
    KILN_ERROR(
        "{}: the inputs' sizes give {}, but the graph expects {} (a fact its trace assumed at "
        "the sizes it ran at)",
        who, bound, f.str());
  }
  return values;
}

TensorType evaluate_type(const TensorType& t, std::span<const int64_t> values) {
  if (!t.is_symbolic()) return t;
  TensorType out = t;
  out.evaluate_hints(values);
  return out;
}

SymShape substitute_sizes(std::span<const SymInt> sizes, std::span<const SymInt> replacement) {
  SymShape out;
  out.reserve(sizes.size());
  for (const SymInt& v : sizes)
    out.push_back(v.substitute(replacement));
  return out;
}

Shape evaluate_sizes(std::span<const SymInt> sizes, std::span<const int64_t> values) {
  Shape out;
  out.reserve(sizes.size());
  for (const SymInt& v : sizes)
    out.push_back(v.evaluate(values));
  return out;
}

namespace {

// `attrs` copied, with `rewrite` applied to each size in a SymShape or SymInt field.
template <class F>
OpAttrs rewrite_attrs(const AttrVTable* vt, const void* attrs, F rewrite) {
  OpAttrs out(vt, attrs);
  for (const AttrField& f : vt->fields(out.mutable_get())) {
    if (auto* sizes = std::get_if<SymShape*>(&f.ref))
      for (SymInt& s : **sizes)
        rewrite(s);
    if (auto* size = std::get_if<SymInt*>(&f.ref)) rewrite(**size);
  }
  return out;
}

}  // namespace

bool attrs_are_symbolic(const AttrVTable* vt, const void* attrs) {
  if (vt == nullptr || attrs == nullptr) return false;
  // Read only, through the field pointers.
  for (const AttrField& f : vt->fields(const_cast<void*>(attrs))) {
    if (auto* sizes = std::get_if<SymShape*>(&f.ref))
      if (!is_static(**sizes)) return true;
    if (auto* size = std::get_if<SymInt*>(&f.ref))
      if ((*size)->is_symbolic()) return true;
  }
  return false;
}

OpAttrs substitute_attrs(const AttrVTable* vt, const void* attrs,
                         std::span<const SymInt> replacement) {
  return rewrite_attrs(vt, attrs, [&](SymInt& s) { s = s.substitute(replacement); });
}

OpAttrs evaluate_attrs(const AttrVTable* vt, const void* attrs, std::span<const int64_t> values) {
  return rewrite_attrs(vt, attrs, [&](SymInt& s) { s = s.evaluate(values); });
}

std::vector<int64_t> specialize_symbols(Graph& g, const std::vector<bool>& fixed) {
  const std::vector<int64_t> hints = g.symbol_hints();
  KILN_CHECK(fixed.size() == hints.size(), "specialize_symbols: {} flags for a graph of {} symbols",
             fixed.size(), hints.size());
  std::vector<SymInt> replacement;
  std::vector<int64_t> renumbered(hints.size(), -1);
  std::vector<int64_t> kept;
  for (size_t k = 0; k < hints.size(); ++k) {
    if (fixed[k]) {
      replacement.emplace_back(hints[k]);
      continue;
    }
    renumbered[k] = static_cast<int64_t>(kept.size());
    replacement.push_back(SymInt::symbol(renumbered[k]));
    kept.push_back(hints[k]);
  }
  substitute_graph(g, replacement, kept);
  return renumbered;
}

}  // namespace kiln::ir
