// kiln::compile(fn): trace fn's forward and, through the real autograd engine, its backward into
// one joint graph; partition it into a forward and a backward plan; run the forward plan on each
// call and attach a CompiledBackward Node so that backward() runs the backward plan. Plans are
// cached per input signature. Anything the trace cannot see into runs eagerly.
//
//   auto step = kiln::compile([&](const std::vector<Tensor>& in) {
//     return std::vector{kiln::cross_entropy(kiln::linear(in[0], w, b), in[1])};
//   });
//   Tensor loss = step({x, target})[0];
//   loss.backward();   // w.grad() and b.grad() as eager code would give them
//
// Note [Compile capture]
// A call with a new signature (Note [Input signature]) captures on real tensors: fn runs once
// under the tracer on detached copies of the inputs (so an in-place write in fn does not touch
// the caller's tensors twice), then autograd::grad runs under the same tracer with one
// placeholder gradient per differentiable output, recording the backward into the joint graph
// (Note [Joint graph layout], passes/partition.h). Tensors fn reads from outside its arguments
// are constants, except those that require grad: those are lifted into extra inputs, read anew
// on every call, so that gradients reach them (model parameters captured by a lambda). The
// plan holds those tensors: update parameters in place (as optimizers do); assigning a new
// tensor to a captured variable is not seen by plans already compiled. Outside tensors that do
// not require grad are copied into the graph as constants when captured. The capture never
// writes .grad. The call then runs the new plan like any later call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

enum class Backend { Auto, Interpreter, LLVM, CUDA };
std::string_view backend_name(Backend b);

struct CompileOptions {
  Backend backend = Backend::Auto;
  // Signatures compiled before further new ones run eagerly (with one warning).
  int64_t cache_limit = 8;
  // Overrides KILN_DEBUG_DIR for this function: one folder per compiled signature.
  std::string debug_dir;
  // A name for logs and dumps; default "compiled_fn_<n>".
  std::string name;
  // Recompute cheap pointwise and view ops in backward when that saves memory between forward
  // and backward (Note [Rematerialization], passes/partition.cpp). Off: save what backward reads.
  bool rematerialize = true;
  // Symbolic sizes (docs/dynamic_shapes.md), as torch.compile's `dynamic`:
  // - unset (the default): the first call compiles with integer sizes (and symbols for the dims
  //   mark_dynamic marked). A recompile caused only by changed sizes makes those dims symbolic
  //   from then on (automatic dynamic shapes), which KILN_LOGS=recompiles reports;
  // - true: every dim of size 2 or more of a contiguous input is symbolic from the first call;
  // - false: sizes are always integers; every new size compiles again.
  // A symbolic plan serves every call whose sizes bind its symbols and counts once against
  // cache_limit. The trace specializes a symbol where the function reads its size as an
  // integer or an op cannot compute with it; a backward pass specializes every symbol for now
  // (Note [Symbolic tracing], frontend/graph_tracer.h).
  std::optional<bool> dynamic;
};

// Marks dim `dim` of `t` dynamic (torch._dynamo.mark_dynamic): a compiled function called with
// `t` traces that dim as a symbol from its first call (unless CompileOptions::dynamic is false).
// When the trace specializes it anyway, KILN_LOGS=recompiles says where. The mark lives as long
// as `t`'s TensorImpl. Throws kiln::Error for a dim out of range.
void mark_dynamic(const Tensor& t, int64_t dim);
// The dims of `t` that mark_dynamic marked, in increasing order.
std::vector<int64_t> dynamic_dims(const Tensor& t);

struct CompileStats {            // for the most recent input signature, unless noted
  int64_t compiles = 0;          // signatures compiled so far (all signatures)
  int64_t cache_hits = 0;        // calls served by an already compiled signature (all signatures)
  int64_t forward_kernels = 0;   // kernel launches (fused or single-op) in one forward call
  int64_t backward_kernels = 0;  // kernel launches in one backward call
  int64_t fallback_ops = 0;      // ops run eagerly (graph breaks) in one forward + backward
  int64_t saved_bytes = 0;       // bytes the forward saves for backward, per call
  int64_t eager_calls = 0;       // calls that ran fn eagerly (all signatures)
};

namespace compile_detail {
struct State;
}

class CompiledFunction {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

  CompiledFunction(Fn fn, CompileOptions options);

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  CompileStats stats() const;
  // Every IR stage of the most recently compiled signature: traced joint graph, forward and
  // backward graphs, and the partition's figures.
  std::string dump() const;
  // One stage of the most recently compiled signature, as text IR or (with `dot`) Graphviz:
  // "traced" (the forward as traced), "joint" (forward and backward as traced), "forward" and
  // "backward" (the partition, before fusion), "fused" (both after the pipeline) or "kernels"
  // (the fused groups' kernel IR). Throws kiln::Error for an unknown stage, one this signature
  // does not have, or before the first call.
  std::string dump(std::string_view stage, bool dot = false) const;

 private:
  std::shared_ptr<compile_detail::State> state_;
};

CompiledFunction compile(CompiledFunction::Fn fn, CompileOptions options = {});
// For a function of tensors that returns one tensor.
CompiledFunction compile(std::function<Tensor(const std::vector<Tensor>&)> fn,
                         CompileOptions options = {});

}  // namespace kiln
