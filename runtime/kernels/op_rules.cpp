#include "kiln/runtime/kernels/op_rules.h"

#include "kiln/runtime/sym_assumptions.h"

namespace kiln::rules {
namespace {

// Each rule is written once over the size type (Note [Symbolic sizes]): Ref is MetaRef or
// SymMetaRef and Geometry the matching OutputGeometry.
template <class Geometry, class Ref>
std::vector<Geometry> broadcast_rule(const OpDef& op, std::span<const Ref> inputs) {
  using Sizes = decltype(Geometry::sizes);
  Sizes shape(inputs[0].sizes.begin(), inputs[0].sizes.end());
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].sizes.size() == shape.size() &&
        std::equal(shape.begin(), shape.end(), inputs[i].sizes.begin())) {
      continue;
    }
    shape = broadcast_shapes(op.name, shape, inputs[i].sizes);
  }
  return {Geometry{std::move(shape)}};
}

template <class Geometry, class Ref>
std::vector<Geometry> same_shape_rule(std::span<const Ref> inputs) {
  using Sizes = decltype(Geometry::sizes);
  return {Geometry{Sizes(inputs[0].sizes.begin(), inputs[0].sizes.end())}};
}

std::vector<SymOutputGeometry> sym_broadcast_shape(const OpDef& op,
                                                   std::span<const SymMetaRef> inputs,
                                                   const void*) {
  return broadcast_rule<SymOutputGeometry>(op, inputs);
}

std::vector<SymOutputGeometry> sym_same_shape(const OpDef&, std::span<const SymMetaRef> inputs,
                                              const void*) {
  return same_shape_rule<SymOutputGeometry>(inputs);
}

}  // namespace

std::vector<OutputGeometry> broadcast_shape(const OpDef& op, std::span<const MetaRef> inputs,
                                            const void*) {
  return broadcast_rule<OutputGeometry>(op, inputs);
}

std::vector<OutputGeometry> same_shape(const OpDef&, std::span<const MetaRef> inputs, const void*) {
  return same_shape_rule<OutputGeometry>(inputs);
}

DType same_dtype(const OpDef&, std::span<const MetaRef> inputs, const void*, size_t) {
  return inputs[0].dtype;
}

std::optional<int64_t> least_value(const SymInt& s) {
  if (s.maybe_int()) return s.maybe_int();
  int64_t least = 0;
  for (const SymTerm& t : s.terms()) {
    int64_t term = t.coeff;
    for (const SymInt& f : t.factors) {
      if (!f.symbol_id()) return std::nullopt;  // a floordiv or mod
      term *= 2;
    }
    if (!t.factors.empty() && t.coeff < 0) return std::nullopt;
    least += term;
  }
  return least;
}

bool at_least(const SymInt& expr, int64_t least) {
  std::optional<int64_t> known = least_value(expr);
  if (known && *known >= least) return true;
  return SymAssumptions::assume(kiln::at_least(expr, least));
}

SymShapeRule symbolic_twin(ShapeRule rule) {
  if (rule == broadcast_shape) return sym_broadcast_shape;
  if (rule == same_shape) return sym_same_shape;
  return nullptr;
}

}  // namespace kiln::rules
