// trace(fn, example_inputs): runs fn once on the examples and records every op it calls into a
// graph IR (ir/graph.h), including the backward pass when fn calls autograd::grad. The result,
// a TracedFunction, prints the graph and runs it through the interpreter.
//
//   kiln::TracedFunction f = kiln::trace(
//       [](const std::vector<Tensor>& x) { return std::vector{(x[0] * x[1]).relu()}; },
//       {kiln::randn({4, 3}), kiln::randn({4, 3})});
//   std::cout << f.str();          // graph(%x0 : f32[4, 3], %x1 : f32[4, 3]): ...
//   auto out = f({a, b});          // the recorded ops on new inputs of the same types
//
// What the trace records and what it refuses (Note [Tracing state], runtime/tracing_state.h):
// - every op of the table, with its attributes and the user's call site;
// - tensors fn reads from outside its arguments become constants (a copy of their data);
// - in-place ops become their out-of-place form (Note [Functionalized in-place ops]); when fn
//   writes into one of its arguments, the graph returns the argument's final value as an extra
//   output and calling the TracedFunction writes it back into the argument;
// - item(), to_vector(), data_ptr() and raw_data() throw kiln::Error naming the call site, as
//   does an op flagged non-traceable: the graph cannot depend on tensor data;
// - an autograd Node that is not traceable (an opaque custom Function) becomes one
//   prim.fallback node that calls the Node; backward() throws (it writes .grad, use grad()).
// Example inputs on the Meta device trace shapes only: no kernel runs.
// Like eager code, tracing runs fn for real: an argument fn writes into is modified.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

class TracedFunction {
 public:
  // (argument index, graph output index): after the graph runs, that output is copied into the
  // argument, as fn's in-place write did.
  using WriteBack = std::pair<size_t, size_t>;

  TracedFunction(std::shared_ptr<ir::Graph> graph, size_t num_outputs,
                 std::vector<WriteBack> write_backs);

  const ir::Graph& graph() const { return *graph_; }
  std::shared_ptr<ir::Graph> graph_ptr() const { return graph_; }
  // The text IR (ir/README.md).
  std::string str() const { return graph_->str(); }
  // fn's outputs; the graph's outputs after these are the write-backs' values.
  size_t num_outputs() const { return num_outputs_; }
  const std::vector<WriteBack>& write_backs() const { return write_backs_; }
  // With TraceOptions::dynamic: why each specialized symbol was specialized ("s0 = 8: a size
  // read as an integer at model.cpp:12 in forward"), in the trace's symbol numbering.
  const std::vector<std::string>& specializations() const { return specializations_; }
  void set_specializations(std::vector<std::string> why) { specializations_ = std::move(why); }

  // Runs the graph through the interpreter (frontend/compile/interpreter.h), then copies each
  // write-back's value into its argument (without recording autograd history), and returns
  // fn's outputs.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;

 private:
  std::shared_ptr<ir::Graph> graph_;
  size_t num_outputs_;
  std::vector<WriteBack> write_backs_;
  std::vector<std::string> specializations_;
};

using TraceFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct TraceOptions {
  // Trace with symbolic sizes (docs/dynamic_shapes.md): every dim of size 2 or more of a
  // contiguous example input is a symbol, dims of equal size share one, and the graph runs at
  // any sizes that bind its symbols consistently. The trace specializes a symbol to its traced
  // value wherever the function read it as an integer or an op could not compute with it (Note
  // [Symbolic tracing], frontend/graph_tracer.h); calling the result with sizes the graph no
  // longer fits throws kiln::Error naming the input and the type it expects.
  bool dynamic = false;
};

// Graph inputs are named x0, x1, ... after the position of their example.
TracedFunction trace(TraceFn fn, const std::vector<Tensor>& example_inputs,
                     const TraceOptions& options = {});
TracedFunction trace(std::function<Tensor(const std::vector<Tensor>&)> fn,
                     const std::vector<Tensor>& example_inputs, const TraceOptions& options = {});

}  // namespace kiln
