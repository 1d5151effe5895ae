// Binding a symbolic graph's symbols to a call's sizes, and specializing symbols to integers
// (Note [Symbolic types] in ir/type.h).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/runtime/tensor.h"

namespace kiln::ir {

// The symbols' values for a call of `g` with `inputs` (symbol s<k>'s at [k]), read off the
// sizes of the graph inputs whose types hold symbols. Throws kiln::Error, starting with `who`
// and naming the input, its sizes and the type it was expected to have, when the sizes do not
// fit: a dim differs from an integer size, one symbol would take two values, a symbol would be
// 0 or 1 (sizes 0 and 1 are always specialized), an expression dim does not evaluate to the
// size, or the values break one of the graph's facts (Note [Assumed size facts]). Input count,
// dtypes and devices are the caller's to check. A graph without symbols binds none.
std::vector<int64_t> bind_symbols(const Graph& g, std::span<const Tensor> inputs,
                                  std::string_view who);

// `t` with its sizes and strides at `values` (s<k> = values[k]): the integers of one call.
TensorType evaluate_type(const TensorType& t, std::span<const int64_t> values);

// Each size with s<k> replaced by replacement[k] (SymInt::substitute).
SymShape substitute_sizes(std::span<const SymInt> sizes, std::span<const SymInt> replacement);
// Each size's value at `values` (s<k> = values[k]).
Shape evaluate_sizes(std::span<const SymInt> sizes, std::span<const int64_t> values);

// Note [Symbolic size attributes] (runtime/kernels/view_attrs.h): an op's SymShape attribute
// fields may hold expressions over the symbols.
// Whether any SymShape field of `attrs` (of an op with attribute table `vt`) holds a symbol.
bool attrs_are_symbolic(const AttrVTable* vt, const void* attrs);
// A copy of `attrs` with every SymShape field's sizes substituted (SymInt::substitute) or
// evaluated at `values`, so an eager kernel can run them.
OpAttrs substitute_attrs(const AttrVTable* vt, const void* attrs,
                         std::span<const SymInt> replacement);
OpAttrs evaluate_attrs(const AttrVTable* vt, const void* attrs, std::span<const int64_t> values);

// Specializes the symbols s<k> with fixed[k] to their hints and renumbers the rest s0, s1, ...
// in order, in every type, size attribute and fact of `g` (nested subgraphs included; a fact
// left without symbols held at the hints and goes); a type left
// without symbols becomes a plain integer type, and a graph left without symbols has no hints.
// Returns the new number of each symbol kept (-1 for a specialized one).
std::vector<int64_t> specialize_symbols(Graph& g, const std::vector<bool>& fixed);

}  // namespace kiln::ir
