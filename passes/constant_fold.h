// Constant folding.
#pragma once

#include <cstdint>

#include "kiln/ir/graph.h"

namespace kiln::passes {

// The largest tensor, in bytes, that constant folding computes: 64 KiB (16384 f32 elements).
// A folded constant lives in the graph for as long as the compiled function does and its text
// form lists every element, so a fold that turns a few bytes of attributes (full, expand) into a
// large tensor makes the graph worse. The cap applies to every value the pass evaluates,
// intermediate ones included, which also bounds the work done at compile time.
inline constexpr int64_t kMaxFoldedBytes = 64 * 1024;

// Evaluates, once, every op node whose inputs are all constants or values folded before it, with
// the op's eager CPU kernel (through the dispatcher, with the tracer and autograd keys excluded),
// and replaces its uses by a prim.constant holding the result. Factories (no inputs) fold too.
// Never folded: random ops (their result is a stream, kept replayable by their seed attribute),
// `empty` (arbitrary contents), in-place and non-traceable ops, ops whose outputs require grad,
// values over kMaxFoldedBytes, anything not on the CPU (a constant on another device would need
// that device at compile time), and ops whose kernel rejects the inputs (the error then happens
// at run time, where the user expects it). Two kinds of foldable nodes stay, reading folded
// constants instead of computing their inputs: a node whose result the graph returns (each call
// must return a fresh tensor, as eager code does, not one constant the caller could modify), and
// a view whose type has explicit strides (a constant is always contiguous, and the view's users
// may depend on its strides). Nodes nothing reads are left to dce, and fusion-group subgraphs to
// the passes after fusion. Returns whether anything was folded.
bool fold_constants(ir::Graph& graph);

}  // namespace kiln::passes
