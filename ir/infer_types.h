// The output types the op table gives an op node: what the verifier checks and what
// propagate_types (passes/) recomputes, for integer and symbolic sizes alike.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "kiln/ir/type.h"
#include "kiln/runtime/op_def.h"

namespace kiln::ir {

class Graph;

// The output types that the op table gives `op` for inputs of types `inputs` and attributes
// `attrs`: the shape rule's sizes, the dtype rule's dtype, the device of input 0 (of the
// attributes for a factory), the rule's strides for a view (empty when they are the contiguous
// ones), input 0's strides for output 0 of an in-place op and contiguous otherwise.
// requires_grad follows the autograd kernel with grad mode on: an output of a differentiable op
// requires grad when any input does and the output is floating point; output 0 of an in-place op
// also keeps input 0's flag. Throws kiln::Error when the rules reject the inputs or the inputs
// are on different devices.
//
// When an input type is symbolic (Note [Symbolic types]) the sizes come from the op's rule over
// symbols (OpDef::sym_shape; an op without one throws), the dtypes from its integer rules at the
// hints, and each output's integer sizes are its symbols' values at `hints` (the graph's).
// With `assumed`, the rule may assume facts that hold at the hints (Note [Assumed size facts]),
// and they are added there; without it, a rule that would need one refuses.
std::vector<TensorType> infer_op_types(const OpDef& op, std::span<const TensorType> inputs,
                                       const void* attrs, std::span<const int64_t> hints = {},
                                       std::vector<SymFact>* assumed = nullptr);

// The geometry view op `op` with `attrs` gives an input of geometry `in` (sizes, strides and
// storage offset, which a chain of views composes): the op's integer rule when everything is an
// integer, else its rule over symbols at `g`'s hints, granted only facts `g` already holds (Note
// [Assumed size facts]), so that composing views never narrows the sizes a graph serves.
// nullopt when the rule refuses, needs another fact, or the op has no rule over symbols.
std::optional<SymOutputGeometry> view_geometry(const OpDef& op, const void* attrs,
                                               const SymOutputGeometry& in, DType dtype,
                                               Device device, const Graph& g);

}  // namespace kiln::ir
