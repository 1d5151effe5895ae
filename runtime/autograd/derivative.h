// Derivative formulas of the op table (DESIGN.md principle 3). Each differentiable OpDef has a
// DerivativeFn written with Tensor ops, so a backward pass is itself a sequence of dispatcher
// calls: create_graph records it, and the tracer can record it into the joint graph.
//
// Note [Gradient shapes]
// A formula may return a gradient of the broadcast shape or of a wider floating dtype: the
// engine sums it down to the forward input's shape and casts it to the input's dtype when it
// validates a Node's outputs (engine.cpp). Formulas therefore never reduce broadcasts themselves.
//
// Note [Symbolic saved sizes]
// Under a trace with symbolic sizes (docs/dynamic_shapes.md) the backward pass is traced too, so
// the sizes autograd saved in the forward must stay symbolic where a formula builds a shape
// from them. InputMetadata keeps them over the trace's symbols (`sym_sizes`: the tracer answers
// for forward inputs when the Node is made, and fills in the forward outputs' after it records
// the op). A formula that builds sizes reads input_sym_sizes and passes them to view_symint,
// reshape_symint or expand_symint; one that uses them as integers (a loop bound, a scalar)
// reads input_sizes, which reports the read so the trace specializes those symbols. So a
// formula not yet written over symbols is still right at every size its plan serves.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/runtime/autograd/input_metadata.h"
#include "kiln/runtime/tensor.h"

namespace kiln {
struct OpDef;
}

namespace kiln::autograd {

struct GradArgs {
  const OpDef& op;
  const void* attrs;
  std::span<const Tensor> inputs;   // forward inputs named by OpDef::save_inputs, else undefined
  std::span<const Tensor> outputs;  // forward outputs named by OpDef::save_outputs, else undefined
  std::span<const Tensor> grads;    // one per forward output; zeros where none flowed
  std::span<const InputMetadata> input_meta;  // every forward input's sizes, dtype and device
  // needs_input_grad[i]: input i's gradient is wanted. One flag per input, not a bit mask, so
  // ops with any number of inputs (cat, stack) get every gradient.
  std::span<const bool> needs_input_grad;

  template <class A>
  const A& attrs_as() const {
    return *static_cast<const A*>(attrs);
  }
  bool needs(size_t i) const { return i < needs_input_grad.size() && needs_input_grad[i]; }
  // Input i's sizes as integers; under a symbolic trace this read specializes their symbols
  // (Note [Symbolic saved sizes]).
  const Shape& input_sizes(size_t i) const { return input_meta[i].read_sizes(); }
  // Input i's sizes as the trace sees them: expressions over its symbols, or integers.
  SymShape input_sym_sizes(size_t i) const { return input_meta[i].symbolic_sizes(); }
  DType input_dtype(size_t i) const { return input_meta[i].dtype; }
  const Tensor& grad() const { return grads[0]; }
};

// Returns one entry per forward input: its gradient, or an undefined Tensor where it is not
// needed or the input is not differentiable (an index tensor).
using DerivativeFn = std::vector<Tensor> (*)(const GradArgs& args);

// OpDef::save_inputs / save_outputs masks.
inline constexpr uint32_t kSaveNone = 0;
inline constexpr uint32_t kSaveAll = ~0u;
inline constexpr uint32_t save_bit(unsigned i) {
  return 1u << i;
}

}  // namespace kiln::autograd
