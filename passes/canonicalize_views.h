// View canonicalization.
#pragma once

#include "kiln/ir/graph.h"

namespace kiln::passes {

// Puts view ops (view, expand, transpose, permute, squeeze, unsqueeze, slice, select: the op
// table's kView entries) into a canonical form, so that the kernels after them read their input
// through one explicit set of strides:
//  - every view's and in-place op's type gets the sizes and strides its shape rule gives (the
//    strides spelled out, empty only when contiguous); requires_grad is left as it is;
//  - a view that is the identity on its input (permute by [0, 1, ...], a slice of everything,
//    expand or view to the input's sizes, squeeze of no size-1 dim, ...) is replaced by its input
//    where other nodes read it; a graph output keeps it, since the caller gets a view in eager
//    code, not the input itself;
//  - a chain of views is replaced by the shortest equivalent form that one op of the chain's kinds
//    can express (a transpose counts as a permute): permute(permute(x)) -> permute(x),
//    transpose(transpose(x)) -> x or permute(x), slice(slice(x)) on one dim -> slice(x),
//    unsqueeze(squeeze(x, d), d) -> x, view(view(x)) -> view(x), select(slice(x)) on one dim ->
//    select(x), expand(unsqueeze(x, 0)) -> expand(x), ...; a chain that no single op expresses
//    stays, though a shorter tail of it may still collapse.
// Two view forms are equivalent when they give the same sizes, strides and storage offset
// relative to the chain's base, which the pass checks with the ops' own shape rules; a
// replacement must also have exactly the replaced value's type (a new node takes the replaced
// value's requires_grad, as in simplify.h). Views left unused are removed.
// Returns whether anything changed.
bool canonicalize_views(ir::Graph& graph);

}  // namespace kiln::passes
