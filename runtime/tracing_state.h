// The runtime's view of an active trace: which object records, and whether the current call is
// one it should see. The recorder itself (the graph it builds) lives in frontend/tracer.h; the
// runtime only needs the few entry points below.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

struct OpDef;

// Note [Tracing state]
// A trace is active on a thread when a TracingState is current (TracingStateGuard) AND the
// Tracer dispatch key is in the thread's included keys AND not in its excluded keys. trace()
// sets the first two for the duration of the user's function. Every kernel runs with Tracer
// excluded (the Tracer kernel's redispatch, run_backend around device kernels), so what an op
// does inside (a cast, a contiguous copy, a host read) is invisible to the trace: only the
// user's calls are recorded. The same test, is_tracing(), decides whether a host data read
// (item(), to_vector(), data_ptr()) is a data-dependent read the trace cannot express, and
// whether the autograd engine must record a Node it cannot see into as a fallback.
class TracingState {
 public:
  using OpaqueFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

  TracingState() = default;
  TracingState(const TracingState&) = delete;
  TracingState& operator=(const TracingState&) = delete;
  virtual ~TracingState();

  // The Tracer key's kernel: records `op` and runs it below the Tracer key.
  virtual std::vector<Tensor> record_op(const OpDef& op, std::span<const Tensor> inputs,
                                        const void* attrs) = 0;

  // Runs `fn`, which the trace cannot see into, with the Tracer key excluded, and records one
  // opaque node for it (prim.fallback, named `name`) from `inputs` to the returned tensors.
  // Undefined inputs and outputs are allowed; see the implementation for how they are recorded.
  virtual std::vector<Tensor> record_fallback(const std::string& name, OpaqueFn fn,
                                              const std::vector<Tensor>& inputs) = 0;

  // `copy` was just made, with the Tracer key excluded, as a copy of `source`'s current value
  // (autograd saves the value of an in-place op's input this way). A recorder that knows
  // `source` lets later reads of `copy` use the same value; otherwise this does nothing.
  virtual void note_same_value(const Tensor& copy, const Tensor& source) = 0;

  // `t` was just built from host data (from_vector) by the function being traced: a recorder
  // makes it a constant of its graph rather than a tensor from outside to read anew on every
  // call (Note [Lifted tensors], frontend/graph_tracer.h). The default does nothing.
  virtual void on_host_tensor(const Tensor& t);

  // A host read of a tensor's data while tracing. The default throws kiln::Error naming
  // `accessor` and the user's call site: the value depends on data the graph does not hold.
  virtual void on_data_read(const char* accessor);

  // Note [Size reads while tracing] (runtime/tensor.h): the traced code read `t`'s size at
  // `dim` (-1: all its sizes) as an integer. A recorder with symbolic sizes specializes the
  // symbols it holds; the default does nothing.
  virtual void on_size_read(const Tensor& t, int64_t dim);
  // `t`'s sizes as the recorder's graph has them (symbols included), or nullopt when the
  // recorder has none for it (Tensor::sym_sizes then returns the integers).
  virtual std::optional<SymShape> symbolic_sizes(const Tensor& t);
  // Code used sizes over the recorder's symbols as integers (`what` says which: sizes autograd
  // saved, Note [Symbolic saved sizes]; a Python kiln.SymInt read with int()): a recorder with
  // symbolic sizes specializes the symbols they hold.
  virtual void on_sym_sizes_read(std::span<const SymInt> sizes, std::string_view what);
  // The value of `s` at the traced sizes; the default expects an integer.
  virtual int64_t symbolic_size_value(const SymInt& s);
  // Code branched on `fact`, a relation between sizes over the recorder's symbols (torch's guard
  // on a SymInt comparison): whether it holds at the traced sizes. A recorder with symbolic
  // sizes keeps the outcome, the fact or its negation, as a fact of the graph (Note [Assumed
  // size facts], runtime/sym_assumptions.h) instead of specializing the symbols; the default
  // expects integers.
  virtual bool decide_fact(const SymFact& fact);
  // `sizes` with the symbols the recorder has specialized since they were recorded replaced by
  // their values (sizes saved earlier in the trace); the default returns them as they are.
  virtual SymShape resolve_symbols(const SymShape& sizes) { return sizes; }

  // Whether a custom Function that is not traceable should be recorded as one opaque forward
  // step (prim.fallback calling the Function eagerly, with autograd) instead of being traced
  // through. compile() asks for this to split the function at graph breaks (Note [Graph
  // breaks], frontend/compile/segments.cpp); trace() records the forward ops and a fallback for
  // the backward Node instead.
  virtual bool records_graph_breaks() const { return false; }

  // Whether a fused backward op should be recorded as its Tensor-op formula (Note [Fused
  // normalization backward]): compile() asks for it, so that fusion can merge the formula with
  // its neighbours; trace() records the fused op that eager runs, so that it replays eager
  // exactly.
  virtual bool decomposes_fused_backwards() const { return false; }
};

// True when a trace is active and its state asks for decomposed backwards.
bool tracing_decomposes_fused_backwards();

// The state recording on this thread, or null.
TracingState* current_tracing_state();

// Makes `state` current for a scope and restores the previous one (also on exceptions).
class TracingStateGuard {
 public:
  explicit TracingStateGuard(TracingState* state);
  ~TracingStateGuard();
  TracingStateGuard(const TracingStateGuard&) = delete;
  TracingStateGuard& operator=(const TracingStateGuard&) = delete;

 private:
  TracingState* saved_;
};

// Note [Tracing state]: a state is current and the Tracer key is live for this call.
namespace detail {
// `s` read as an integer (a Python kiln.SymInt's int()): reports the read (`what`) to the
// current recorder, which specializes its symbols, and returns its value at the traced sizes.
// An integer is returned as it is.
int64_t read_sym_int(const SymInt& s, std::string_view what);
}  // namespace detail

// Whether `fact` holds: decided by its integers, or over symbols by the current recorder
// (TracingState::decide_fact), which makes the outcome a guard of the graph.
bool guard_size_fact(const SymFact& fact);

bool is_tracing();

// Counts a symbolic trace as active for a scope (Note [Size reads while tracing]): while any is,
// Tensor's size accessors report their reads to the current tracing state.
class SymbolicTraceScope {
 public:
  SymbolicTraceScope();
  ~SymbolicTraceScope();
  SymbolicTraceScope(const SymbolicTraceScope&) = delete;
  SymbolicTraceScope& operator=(const SymbolicTraceScope&) = delete;
};

// Calls current_tracing_state()->on_data_read(accessor) when is_tracing().
void check_traced_data_read(const char* accessor);

// Installs the Tracer dispatch key's kernel on every op of `table`: it hands the call to the
// current state's record_op, or runs the op below the key when no state records.
class OpTable;
void register_tracer_kernels(OpTable& table);

// "model.cpp:12 in forward" from a CallSite: the file without its directory, so that a graph's
// text does not depend on where the sources were checked out, and the function without its
// return type and parameters. Empty for an unknown call site.
std::string short_call_site();

}  // namespace kiln
