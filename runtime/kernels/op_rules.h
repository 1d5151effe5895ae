// Shape and dtype rules shared by several op families.
#pragma once

#include <optional>
#include <type_traits>

#include "kiln/runtime/op_def.h"

namespace kiln::rules {

// Note [Symbolic sizes] (base/sym_int.h): a shape rule is a template over what it sees of its
// inputs, MetaRef or SymMetaRef, instantiated once for OpDef::shape and once for
// OpDef::sym_shape. These name the matching output geometry and size list.
template <class Ref>
using GeometryOf =
    std::conditional_t<std::is_same_v<Ref, MetaRef>, OutputGeometry, SymOutputGeometry>;
template <class Ref>
using SizesOf = decltype(GeometryOf<Ref>::sizes);
template <class Ref>
using RuleOf = std::vector<GeometryOf<Ref>> (*)(const OpDef&, std::span<const Ref>, const void*);

// Sets op.shape and op.sym_shape to the two instantiations of one rule template.
inline void set_shape_rules(OpDef& op, RuleOf<MetaRef> shape, RuleOf<SymMetaRef> sym_shape) {
  op.shape = shape;
  op.sym_shape = sym_shape;
}

// Input `x`'s geometry, as a view's rule starts from it.
template <class Ref>
GeometryOf<Ref> geometry_of(const Ref& x) {
  using Sizes = SizesOf<Ref>;
  return {Sizes(x.sizes.begin(), x.sizes.end()), Sizes(x.strides.begin(), x.strides.end()),
          x.storage_offset};
}

// One output with the broadcast of all inputs' shapes.
std::vector<OutputGeometry> broadcast_shape(const OpDef& op, std::span<const MetaRef> inputs,
                                            const void* attrs);
// One output shaped like input 0.
std::vector<OutputGeometry> same_shape(const OpDef& op, std::span<const MetaRef> inputs,
                                       const void* attrs);
// The rule over symbolic sizes that instantiates the same template as `rule`, or null when
// `rule` has not been written over symbols yet. The op table sets OpDef::sym_shape from it.
SymShapeRule symbolic_twin(ShapeRule rule);
// The least value `s` takes for every value of its symbols, when a rule can know it: an integer
// is itself; a polynomial whose symbol terms all have positive coefficients grows with every
// symbol, so its least value is at every symbol's least, 2 (Note [Symbolic sizes]). nullopt
// for anything else (a floordiv or mod, a negative coefficient).
std::optional<int64_t> least_value(const SymInt& s);
// Whether a <= b for every value of the symbols (false where a rule cannot tell).
inline bool always_le(const SymInt& a, const SymInt& b) {
  std::optional<int64_t> least = least_value(b - a);
  return least && *least >= 0;
}

// Whether expr >= least for every value of the symbols, or else assumed (Note [Assumed size
// facts], runtime/sym_assumptions.h): true when the fact holds at the sizes being traced, which
// records it as a guard of the graph. False where neither: the rule refuses.
bool at_least(const SymInt& expr, int64_t least);
// Whether a <= b, known for every value of the symbols or assumed as at_least does.
inline bool le_or_assumed(const SymInt& a, const SymInt& b) {
  return always_le(a, b) || at_least(b - a, 0);
}

// Input 0's dtype.
DType same_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs, size_t);

}  // namespace kiln::rules
