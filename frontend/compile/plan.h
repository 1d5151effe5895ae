// A compiled plan: what one input signature compiles to, and how a call runs it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/frontend/compile.h"
#include "kiln/frontend/compile/interpreter.h"
#include "kiln/frontend/compile/signature.h"
#include "kiln/ir/graph.h"

namespace kiln::compile_detail {

struct Step;

// An input dim that was asked to be symbolic (Note [Symbolic plans], compile.cpp), and what it
// became: symbol s<symbol> of the plan, or (symbol -1) its traced size, specialized for `why`.
struct SymbolicDim {
  size_t input = 0;
  size_t dim = 0;
  int64_t symbol = -1;
  int64_t hint = 0;  // the traced size
  std::string why;   // empty unless specialized
  bool specialized() const { return symbol < 0; }
  // "input 0 dim 0: symbolic, s0 (traced at 8)" or "input 0 dim 0: specialized to 8: <why>".
  std::string str() const;
};

struct Plan {
  Signature signature;
  // Set when the signature cannot be captured (a data-dependent read in fn): calls run fn
  // eagerly. `eager_reason` names the read and its call site.
  bool eager = false;
  std::string eager_reason;

  std::shared_ptr<ir::Graph> traced;  // the forward as traced, before the backward capture
  std::shared_ptr<ir::Graph> joint;   // as traced (Note [Joint graph layout])
  // The partition's graphs before the forward and backward pipelines (fusion, lowering).
  std::shared_ptr<ir::Graph> partitioned_forward;
  std::shared_ptr<ir::Graph> partitioned_backward;
  std::shared_ptr<ir::Graph> forward;   // primals -> outputs, write-backs, saved (optimized)
  std::shared_ptr<ir::Graph> backward;  // saved, tangents -> gradients; null without backward

  // Tensors fn read from outside its arguments that require grad: primals after the inputs.
  std::vector<Tensor> lifted;
  size_t num_outputs = 0;
  // (input index, forward output index): in-place writes of fn into its arguments.
  std::vector<std::pair<size_t, size_t>> write_backs;
  // Outputs that get a gradient placeholder, in tangent order.
  std::vector<size_t> differentiable_outputs;
  // Primals (index into inputs + lifted) that require grad, in CompiledBackward edge order;
  // `has_gradient[k]` is false when the outputs do not depend on primal k (no backward output).
  std::vector<size_t> grad_primals;
  std::vector<bool> has_gradient;
  size_t num_saved = 0;
  int64_t saved_bytes = 0;
  int64_t forward_kernels = 0;
  int64_t backward_kernels = 0;
  int64_t fallback_ops = 0;
  std::vector<std::string> fallback_reasons;  // one line per fallback node, for the log

  // Set when the trace has graph breaks (Note [Graph breaks], segments.cpp): the steps run in
  // order instead of `forward`, which then is the traced forward graph with its fallbacks.
  std::vector<std::shared_ptr<Step>> steps;

  // The generator's state when capture began and how many Philox blocks one call draws.
  int64_t capture_seed = 0;
  int64_t capture_offset = 0;
  int64_t random_blocks = 0;
  bool rematerialize = true;
  Backend backend = Backend::Interpreter;  // resolved (never Auto): what runs the fusion groups
  // (file stem, graph text) after each pipeline pass that changed a graph, in order, when the
  // capture was asked to record them (KILN_DEBUG_DIR).
  std::vector<std::pair<std::string, std::string>> pass_dumps;
  // (file name, text) of the generated code of every compiled kernel (the LLVM IR before and
  // after optimization, the assembly), when recording dumps.
  std::vector<std::pair<std::string, std::string>> kernel_sources;

  // Symbolic sizes (Note [Symbolic plans], compile.cpp): true when the forward graph kept
  // symbols, so that the plan serves every call whose sizes bind them. `symbolic_dims`: the
  // input dims that were asked to be symbolic (for logs and the debug folder).
  bool symbolic = false;
  std::vector<SymbolicDim> symbolic_dims;
  // What a call's symbol values must satisfy besides binding consistently (duck-sized dims are
  // one symbol, so their equality needs no fact): every symbol at least 2, as sizes 0 and 1
  // are specialized, and the facts the shape rules assumed (Note [Assumed size facts]).
  std::vector<SymFact> guards;
};

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Note [Compile capture] (frontend/compile.h). Throws kiln::Error when fn cannot be traced for
// another reason than a data-dependent read (which yields an eager plan).
// `rematerialize`: passes::PartitionOptions, for this plan and its segments'.
// `record_pass_dumps`: keep the graph after every pass that changed it (Plan::pass_dumps) and
// the generated kernel sources (Plan::kernel_sources).
// `backend`: a resolved backend (kernel_codegen.h) that compiles the fusion groups.
// `dynamic_dims[i][d]`: trace dim d of input i as a symbol (Note [Symbolic tracing]).
std::shared_ptr<Plan> capture_plan(const Fn& fn, const std::vector<Tensor>& inputs,
                                   const Signature& signature, bool rematerialize = true,
                                   bool record_pass_dumps = false,
                                   Backend backend = Backend::Interpreter,
                                   const std::vector<std::vector<bool>>& dynamic_dims = {});

// A detached copy with the same sizes and strides (an expanded tensor, whose elements overlap,
// becomes contiguous): the ops fn calls, such as reshape, choose by layout, and a plan is
// specialized to the caller's layout (Note [Input signature]).
Tensor clone_with_layout(const Tensor& t);

// Kernel, fallback and saved-byte counts of one call, summed over the steps of a segmented plan
// (those captured so far).
struct PlanFigures {
  int64_t forward_kernels = 0;
  int64_t backward_kernels = 0;
  int64_t fallback_ops = 0;
  int64_t saved_bytes = 0;
};
PlanFigures plan_figures(const Plan& plan);

// Whether an argument shares storage with a tensor the plan lifted (Note [Lifted tensors]).
bool shares_storage_with_lifted(const std::vector<Tensor>& inputs, const Plan& plan);

// Runs one call: the forward plan, the write-backs, and the CompiledBackward Node when an output
// requires grad.
std::vector<Tensor> run_plan(const std::shared_ptr<const Plan>& plan,
                             const std::vector<Tensor>& inputs);

}  // namespace kiln::compile_detail
