// The graph tracer's symbolic sizes (Note [Symbolic tracing] in graph_tracer.h): symbols for
// the inputs' dims, rules over symbols for each recorded op, and the specializations.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <span>

#include "kiln/base/error.h"
#include "kiln/frontend/graph_tracer.h"
#include "kiln/ir/symbols.h"
#include "kiln/runtime/autograd/node.h"
#include "kiln/runtime/autograd/op_backward.h"
#include "kiln/runtime/op_def.h"
#include "kiln/runtime/sym_assumptions.h"

namespace kiln {
namespace {

std::string first_line(const char* text) {
  std::string s = text;
  size_t nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  return s;
}

}  // namespace

// A view's strides over symbols at the hints against eager's, at the dims that address memory:
// a dim of size 1 never multiplies its stride, a tensor with a dim of size 0 has no elements,
// and eager's choice there (which depends on how the view was made) would otherwise refuse a
// rule that is right.
bool GraphTracer::same_addressing(const SymShape& strides, const ir::TensorType& eager) const {
  std::vector<int64_t> at_hints = ir::evaluate_sizes(strides, hints_);
  Shape want = eager.effective_strides();
  if (at_hints.size() != want.size()) return false;
  // An empty tensor addresses nothing.
  if (std::find(eager.sizes.begin(), eager.sizes.end(), 0) != eager.sizes.end()) return true;
  for (size_t d = 0; d < want.size(); ++d)
    if (eager.sizes[d] > 1 && at_hints[d] != want[d]) return false;
  return true;
}

std::vector<SymInt> GraphTracer::replacement(std::span<const int64_t> also) const {
  std::vector<SymInt> out;
  out.reserve(hints_.size());
  for (size_t k = 0; k < hints_.size(); ++k) {
    auto id = static_cast<int64_t>(k);
    bool fixed = is_fixed(id) || std::find(also.begin(), also.end(), id) != also.end();
    out.push_back(fixed ? SymInt(hints_[k]) : SymInt::symbol(id));
  }
  return out;
}

SymShape GraphTracer::resolved(const SymShape& sizes) const {
  bool any_fixed = std::any_of(why_.begin(), why_.end(), [](const auto& w) { return !w.empty(); });
  return any_fixed ? ir::substitute_sizes(sizes, replacement()) : sizes;
}

void GraphTracer::fix(int64_t symbol, std::string why) {
  std::string& slot = why_.at(static_cast<size_t>(symbol));
  if (slot.empty()) slot = std::move(why);
}

std::vector<std::string> GraphTracer::specializations() const {
  std::vector<std::string> out;
  for (size_t k = 0; k < why_.size(); ++k)
    if (!why_[k].empty()) out.push_back(fmt::format("s{} = {}: {}", k, hints_[k], why_[k]));
  return out;
}

void GraphTracer::specialize(const ir::TensorType& t, std::string_view why) {
  if (!t.is_symbolic()) return;
  for (const SymShape* shape : {&t.sym_sizes, &t.sym_strides})
    for (const SymInt& s : *shape)
      for (int64_t id : s.symbols())
        fix(id, std::string(why));
}

void GraphTracer::specialize_all(std::span<ir::Value* const> values, std::string_view why) {
  for (const ir::Value* v : values)
    specialize(v->type(), why);
}

void GraphTracer::attach_symbols(const OpDef& op, std::span<ir::Value* const> values,
                                 const void* attrs, std::vector<ir::TensorType>& types) {
  if (!symbolic()) return;
  std::vector<SymShape> sizes, strides;
  std::vector<int64_t> symbols;  // the inputs' and attributes' symbols not specialized yet
  auto note_symbols = [&](const SymShape& shape) {
    for (const SymInt& x : shape)
      for (int64_t id : x.symbols())
        if (std::find(symbols.begin(), symbols.end(), id) == symbols.end()) symbols.push_back(id);
  };
  for (const ir::Value* v : values) {
    sizes.push_back(resolved(v->type().symbolic_sizes()));
    strides.push_back(resolved(v->type().symbolic_strides()));
    note_symbols(sizes.back());
    note_symbols(strides.back());
  }
  // Size attributes over symbols (Note [Symbolic size attributes]), with the specialized
  // symbols replaced.
  std::optional<ir::OpAttrs> sym_attrs;
  if (ir::attrs_are_symbolic(op.attrs, attrs)) {
    sym_attrs = ir::substitute_attrs(op.attrs, attrs, replacement());
    for (const AttrField& f : op.attrs->fields(sym_attrs->mutable_get())) {
      if (auto* shape = std::get_if<SymShape*>(&f.ref)) note_symbols(**shape);
      if (auto* size = std::get_if<SymInt*>(&f.ref)) note_symbols(SymShape{**size});
    }
  }
  if (symbols.empty()) return;
  std::string site = short_call_site();
  auto refuse = [&](std::string_view why) {
    // `symbols` holds every symbol of the inputs and attributes not specialized already.
    std::string reason = fmt::format("{} at {} {}", op.name, site.empty() ? "?" : site, why);
    for (int64_t id : symbols)
      fix(id, reason);
  };
  if (!op.sym_shape) return refuse("has no shape rule over symbols yet");
  // How far a random op advances the generator depends on how many values it draws.
  if (op.has(kRandom)) return refuse("draws as many random numbers as its sizes say");
  const bool view = op.has(kView);
  // The rule over symbols, with the symbols `also` replaced by their hints; nullopt, with
  // `why`, when it refuses or disagrees with eager at the traced sizes (a disagreement would be
  // a bug in a rule, and specializing keeps the graph right anyway).
  // The facts the rule assumed (Note [Assumed size facts]) go to `assumed`.
  std::vector<SymFact> assumed;
  auto attempt = [&](std::span<const int64_t> also,
                     std::string* why) -> std::optional<std::vector<SymOutputGeometry>> {
    std::vector<SymShape> in_sizes = sizes, in_strides = strides;
    const void* rule_attrs = sym_attrs ? sym_attrs->get() : attrs;
    std::optional<ir::OpAttrs> attrs_also;
    if (!also.empty()) {
      std::vector<SymInt> r = replacement(also);
      for (std::vector<SymShape>* list : {&in_sizes, &in_strides})
        for (SymShape& shape : *list)
          shape = ir::substitute_sizes(shape, r);
      if (sym_attrs)
        rule_attrs = attrs_also.emplace(ir::substitute_attrs(op.attrs, rule_attrs, r)).get();
    }
    std::vector<SymMetaRef> metas;
    for (size_t i = 0; i < values.size(); ++i)
      metas.push_back(SymMetaRef{in_sizes[i], in_strides[i], 0, values[i]->type().dtype,
                                 values[i]->type().device});
    std::vector<SymOutputGeometry> geoms;
    try {
      SymAssumptions scope(hints_);
      geoms = op.sym_shape(op, metas, rule_attrs);
      assumed = scope.facts();
    } catch (const Error& e) {
      *why = fmt::format("refused the symbolic sizes ({})", first_line(e.what()));
      return std::nullopt;
    }
    if (geoms.size() != types.size()) {
      *why = "gave another number of outputs over symbols";
      return std::nullopt;
    }
    for (size_t i = 0; i < geoms.size(); ++i) {
      const SymOutputGeometry& g = geoms[i];
      bool same = g.sizes.size() == types[i].sizes.size() &&
                  ir::evaluate_sizes(g.sizes, hints_) == types[i].sizes;
      if (same && view) same = same_addressing(g.strides, types[i]);
      if (!same) {
        *why = fmt::format(
            "computed other sizes over symbols than eager did (output {}: {} strided {} over "
            "symbols, {} from eager)",
            i, shape_str(g.sizes), shape_str(g.strides), types[i].str());
        return std::nullopt;
      }
    }
    return geoms;
  };
  std::string why;
  std::optional<std::vector<SymOutputGeometry>> geoms = attempt({}, &why);
  // A rule may refuse because of one symbol only (layer_norm's integer normalized_shape against
  // a symbolic last dim): specializing that one keeps the others, such as the batch dim. Or it
  // may accept one symbol only (convolution's batch dim): specializing all the others keeps it.
  // Symbols come in the order the inputs mention them, so the batch dim is tried first.
  std::string reason = fmt::format("{} at {} {}", op.name, site.empty() ? "?" : site, why);
  for (size_t k = 0; !geoms && symbols.size() > 1 && k < symbols.size(); ++k) {
    std::string ignored;
    geoms = attempt(std::span(&symbols[k], 1), &ignored);
    if (geoms) fix(symbols[k], reason);
  }
  for (size_t k = 0; !geoms && symbols.size() > 2 && k < symbols.size(); ++k) {
    std::vector<int64_t> others = symbols;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(k));
    std::string ignored;
    geoms = attempt(others, &ignored);
    if (geoms)
      for (int64_t id : others)
        fix(id, reason);
  }
  if (!geoms) return refuse(why);
  add_facts(facts_, assumed);
  for (size_t i = 0; i < geoms->size(); ++i) {
    SymOutputGeometry& g = (*geoms)[i];
    if (is_static(g.sizes) && (!view || is_static(g.strides))) continue;
    types[i].sym_sizes = std::move(g.sizes);
    if (!view) continue;
    if (ir::symbolic_strides_are_contiguous(types[i].sym_sizes, g.strides)) {
      // Eager's strides may differ at dims of size 0 or 1 (same_addressing), where they mean
      // nothing: the type says contiguous, as the rule does.
      types[i].strides.clear();
      types[i].sym_strides.clear();
    } else {
      types[i].sym_strides = g.strides;
      types[i].strides = ir::evaluate_sizes(g.strides, hints_);
    }
  }
}

void GraphTracer::add_saved_symbolic_sizes(std::span<const Tensor> outputs, const OpDef* op,
                                           const void* sym_attrs) {
  if (!symbolic()) return;
  for (const Tensor& t : outputs) {
    if (!t.defined()) continue;
    std::shared_ptr<autograd::Node> fn = t.grad_fn();
    if (!fn || t.output_nr() >= fn->num_inputs()) continue;
    if (sym_attrs != nullptr)
      if (auto* node = dynamic_cast<autograd::OpBackward*>(fn.get()); node && &node->op() == op)
        node->set_symbolic_attrs(sym_attrs);
    autograd::InputMetadata& m = fn->mutable_input_metadata(t.output_nr());
    if (m.defined && m.sym_sizes.empty()) m.sym_sizes = detail::traced_symbolic_sizes(t);
  }
}

void GraphTracer::on_size_read(const Tensor& t, int64_t dim) {
  if (internal_ > 0 || !symbolic()) return;
  ir::Value* v = nullptr;
  {
    InternalScope internal(internal_);
    v = find_value(t);
  }
  if (v == nullptr) return;
  std::string site = short_call_site();
  std::string why = fmt::format("a size read as an integer at {}", site.empty() ? "?" : site);
  if (dim < 0 || !v->type().is_symbolic()) return specialize(v->type(), why);
  // One dim read: only its symbols.
  ir::TensorType one;
  one.sym_sizes = {v->type().sym_sizes.at(static_cast<size_t>(dim))};
  specialize(one, why);
}

std::optional<SymShape> GraphTracer::symbolic_sizes(const Tensor& t) {
  if (!symbolic()) return std::nullopt;
  InternalScope internal(internal_);
  ir::Value* v = find_value(t);
  if (v == nullptr) return std::nullopt;
  return resolved(v->type().symbolic_sizes());
}

void GraphTracer::specialize_everything(std::string_view why) {
  for (size_t k = 0; k < why_.size(); ++k)
    fix(static_cast<int64_t>(k), std::string(why));
}

void GraphTracer::on_sym_sizes_read(std::span<const SymInt> sizes, std::string_view what) {
  if (internal_ > 0 || !symbolic()) return;
  std::string site = short_call_site();
  ir::TensorType read;
  read.sym_sizes.assign(sizes.begin(), sizes.end());
  specialize(read, fmt::format("{} at {}", what, site.empty() ? "?" : site));
}

int64_t GraphTracer::symbolic_size_value(const SymInt& s) {
  return s.evaluate(hints_);
}

namespace {

// The relation that holds exactly when `r` does not.
SymFact::Relation negated(SymFact::Relation r) {
  using R = SymFact::Relation;
  switch (r) {
    case R::kEq:
      return R::kNe;
    case R::kNe:
      return R::kEq;
    case R::kLt:
      return R::kGe;
    case R::kLe:
      return R::kGt;
    case R::kGt:
      return R::kLe;
    case R::kGe:
      return R::kLt;
  }
  return r;
}

}  // namespace

bool GraphTracer::decide_fact(const SymFact& fact) {
  std::vector<SymInt> r = replacement();
  SymFact f{fact.lhs.substitute(r), fact.relation, fact.rhs.substitute(r)};
  bool holds = f.holds(hints_);
  if (!symbolic() || (!f.lhs.is_symbolic() && !f.rhs.is_symbolic())) return holds;
  if (!holds) f.relation = negated(f.relation);
  add_facts(facts_, std::span(&f, 1));
  return holds;
}

std::vector<int64_t> GraphTracer::finish_symbols() {
  if (!symbolic()) return {};
  std::vector<bool> fixed;
  for (size_t k = 0; k < why_.size(); ++k)
    fixed.push_back(is_fixed(static_cast<int64_t>(k)));
  graph_->set_symbol_hints(hints_);
  graph_->set_symbol_facts(facts_);
  return ir::specialize_symbols(*graph_, fixed);
}

}  // namespace kiln
