// Capture of a plan (Note [Compile capture], frontend/compile.h).
#include <fmt/format.h>

#include <optional>

#include "kiln/base/error.h"
#include "kiln/base/options.h"
#include "kiln/base/philox.h"
#include "kiln/base/profiler.h"
#include "kiln/frontend/compile/kernel_codegen.h"
#include "kiln/frontend/compile/plan.h"
#include "kiln/frontend/compile/segments.h"
#include "kiln/frontend/graph_tracer.h"
#include "kiln/ir/symbols.h"
#include "kiln/passes/dce.h"
#include "kiln/passes/partition.h"
#include "kiln/passes/pipeline.h"
#include "kiln/runtime/api/autograd.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/sym_assumptions.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln::compile_detail {
namespace {

// What the tracer cannot express, but eager runs: a data-dependent read (item() in fn), and a
// tensor written through another view of its storage and read afterwards (Note [Tensor to Value
// map]), and an argument (or lifted tensor) written through a view of it. Compile turns these
// into an eager plan, with one warning, instead of failing.
bool runs_eagerly(const Error& e) {
  std::string_view msg = e.what();
  return msg.find("data-dependent") != std::string_view::npos ||
         msg.find("modified in place through another view or alias") != std::string_view::npos ||
         msg.find("through a view or another alias") != std::string_view::npos;
}

// Detached copies with the same requires_grad, made invisible to any enclosing trace: fn's
// in-place writes during capture must not reach the caller's tensors, which the plan's own
// run then writes.
std::vector<Tensor> capture_copies(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> copies;
  ExcludeDispatchKeysGuard hidden(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      copies.emplace_back();
      continue;
    }
    Tensor c = clone_with_layout(t);
    if (t.requires_grad()) c.requires_grad_(true);
    copies.push_back(std::move(c));
  }
  return copies;
}

bool has_fallbacks(const ir::Graph& g) {
  for (const ir::Node* n : g.nodes())
    if (n->kind() == ir::NodeKind::Fallback) return true;
  return false;
}

int64_t count_kernels(const ir::Graph& g) {
  int64_t n = 0;
  for (const ir::Node* node : g.nodes()) {
    if (node->kind() == ir::NodeKind::FusionGroup) ++n;
    if (node->kind() == ir::NodeKind::Op && !node->op()->has(kView)) ++n;
  }
  return n;
}

void count_fallbacks(const ir::Graph& g, Plan& plan) {
  for (const ir::Node* node : g.nodes()) {
    if (node->kind() != ir::NodeKind::Fallback) continue;
    ++plan.fallback_ops;
    plan.fallback_reasons.push_back(fmt::format(
        "'{}' runs eagerly: an autograd Node or function the tracer cannot see into{}",
        node->fallback().name, node->call_site().empty() ? "" : " (at " + node->call_site() + ")"));
  }
}

// Note [Capture steps]
// capture_plan is the straight list of steps in kCaptureSteps, as Halide's Lower is: each step is
// a function of the Capture below, with a one-line comment, run in order under a profiler scope
// of its name. A step returns whether the plan is complete (a graph break or an eager plan ends
// the list early) and, when it changed something, one line that KILN_LOGS=passes prints. A
// kiln::Error that eager can run past (runs_eagerly) turns the signature into an eager plan.

// The state the steps of one capture share.
struct Capture {
  const Fn& fn;
  const std::vector<Tensor>& inputs;
  const Signature& signature;
  bool record_pass_dumps;
  Backend backend;
  Plan& plan;
  const std::vector<std::vector<bool>>& dynamic_dims;  // input dims to trace as symbols
  GraphTracer tracer;
  std::vector<Tensor> args;            // detached copies of the inputs, which fn runs on
  std::vector<uint32_t> arg_versions;  // their versions before fn
  std::vector<Tensor> outputs;         // fn's outputs, traced
  size_t num_primals = 0;              // graph inputs before the tangents: args, then lifted
  size_t num_forward_outputs = 0;      // graph outputs before the gradients
  GeneratorState rng_before;           // the generator when the call started
  std::shared_ptr<ir::Graph> joint;    // the optimized copy of plan.joint
  passes::PipelineOptions pipeline;    // with a pass-dump hook when record_pass_dumps
  std::string stage;                   // the graph the pipeline is on, for the dump names
};

struct StepResult {
  bool done = false;   // the plan is complete: skip the remaining steps
  std::string change;  // what the step changed, for KILN_LOGS=passes; empty: nothing
};

// "12 nodes" of a graph, for the step log.
std::string size_of(const ir::Graph& g) {
  return fmt::format("{} nodes", g.nodes().size());
}

// The trace runs on detached copies of the arguments, each an input of the graph; tensors fn
// reads from outside its arguments are lifted to inputs as the trace meets them.
StepResult start_trace(Capture& c) {
  c.args = capture_copies(c.inputs);
  for (size_t i = 0; i < c.args.size(); ++i) {
    KILN_CHECK(c.args[i].defined(), "compile: input {} is an undefined tensor", i);
    c.tracer.add_input(c.args[i], fmt::format("x{}", i),
                       i < c.dynamic_dims.size() ? c.dynamic_dims[i] : std::vector<bool>{});
    c.arg_versions.push_back(c.args[i].version());
  }
  c.tracer.lift_outside_tensors(&c.plan.lifted);
  c.tracer.set_records_graph_breaks(true);
  c.tracer.set_decomposes_fused_backwards(true);
  return {};
}

// Runs fn on the copies with the Tracer key on; its outputs become the graph's outputs.
StepResult trace_forward(Capture& c) {
  {
    profiler::RecordScope scope(profiler::ScopeKind::Compile, "trace forward");
    c.outputs = c.fn(c.args);
  }
  ir::Graph& graph = *c.tracer.graph();
  c.plan.num_outputs = c.outputs.size();
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    KILN_CHECK(c.outputs[i].defined(), "compile: output {} of the function is undefined", i);
    graph.add_output(c.tracer.value_of(c.outputs[i]));
  }
  return {false, fmt::format("{}, {} lifted tensors", size_of(graph), c.plan.lifted.size())};
}

// In-place writes into the arguments, and into lifted tensors (a running statistic, an
// optimizer's state: Note [Lifted tensors]), become outputs the plan writes back.
StepResult add_write_backs(Capture& c) {
  ir::Graph& graph = *c.tracer.graph();
  Plan& plan = c.plan;
  auto write_back = [&](const Tensor& t, uint32_t version_before, size_t primal, const char* what,
                        size_t index) {
    if (t.version() == version_before) return;
    KILN_CHECK(!c.tracer.is_stale(t),
               "compile: the function wrote into {}{} through a view or another alias of it; "
               "compiled functions can only write back values assigned to the tensor itself",
               what, index);
    ir::Value* v = c.tracer.value_of(t);
    if (v == graph.input(primal)) return;
    graph.add_output(v);
    plan.write_backs.emplace_back(primal, graph.outputs().size() - 1);
  };
  for (size_t i = 0; i < c.args.size(); ++i)
    write_back(c.args[i], c.arg_versions[i], i, "input ", i);
  for (size_t k = 0; k < plan.lifted.size(); ++k) {
    const Tensor& t = plan.lifted[k];
    if (t.version() != c.tracer.lifted_versions().at(k)) {
      // Two lifted tensors on one storage (a buffer and a view of it) are separate plan
      // inputs: a write to one would not be seen through the other, which the tracer cannot
      // express, so the signature runs eagerly.
      for (size_t j = 0; j < plan.lifted.size(); ++j) {
        KILN_CHECK(j == k || plan.lifted[j].impl()->storage() != t.impl()->storage(),
                   "compile: the function wrote into a tensor it reads from outside its "
                   "arguments (p{}) that is modified in place through another view or alias of "
                   "it (p{})",
                   k, j);
      }
    }
    write_back(t, c.tracer.lifted_versions().at(k), c.args.size() + k,
               "the tensor it reads from outside its arguments, lifted as p", k);
  }
  c.tracer.stop_lifting_constants();  // Note [Lifted tensors]: not after the tangents
  c.num_forward_outputs = graph.outputs().size();
  c.num_primals = graph.inputs().size();
  plan.traced = graph.clone();  // the backward capture below extends the graph
  if (plan.write_backs.empty()) return {};
  return {false, fmt::format("{} write-backs", plan.write_backs.size())};
}

// Note [Symbolic plans] (compile.cpp): the specialized symbols become integers in the traced
// graphs, and the plan says what became of each input dim that was asked to be symbolic.
void finish_symbols(Capture& c) {
  std::vector<int64_t> renumbered = c.tracer.finish_symbols();
  if (renumbered.empty()) return;
  if (c.plan.traced) {
    std::vector<bool> fixed;
    for (int64_t r : renumbered)
      fixed.push_back(r < 0);
    ir::specialize_symbols(*c.plan.traced, fixed);
  }
  for (const GraphTracer::InputSymbol& in : c.tracer.input_symbols()) {
    c.plan.symbolic_dims.push_back(
        SymbolicDim{in.input, in.dim, renumbered[static_cast<size_t>(in.symbol)],
                    c.tracer.hint(in.symbol), c.tracer.specialization(in.symbol)});
  }
}

// Graph breaks: no joint graph; each segment captures its own when it first runs.
StepResult split_at_graph_breaks(Capture& c) {
  if (!has_fallbacks(*c.tracer.graph())) return {};
  c.tracer.specialize_everything("a graph break (each segment captures at its own sizes)");
  finish_symbols(c);
  Plan& plan = c.plan;
  plan.forward = c.tracer.graph();
  passes::eliminate_dead_code(*plan.forward);
  build_steps(plan);
  for (const ir::Node* n : plan.forward->nodes()) {
    if (n->kind() != ir::NodeKind::Fallback) continue;
    plan.fallback_reasons.push_back(fmt::format(
        "graph break: '{}'{} is not traceable; it runs eagerly between compiled segments",
        n->fallback().name, n->call_site().empty() ? "" : " at " + n->call_site()));
  }
  return {true, fmt::format("{} graph breaks; segments compile when they first run",
                            plan.fallback_reasons.size())};
}

// The backward, traced by running the real autograd engine from one zero placeholder per
// differentiable output (the tangents, new graph inputs) to the primals that require grad.
StepResult trace_backward(Capture& c) {
  Plan& plan = c.plan;
  std::vector<Tensor> diff_outputs;
  if (c.signature.grad_mode) {
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      if (!c.outputs[i].requires_grad()) continue;
      plan.differentiable_outputs.push_back(i);
      diff_outputs.push_back(c.outputs[i]);
    }
  }
  std::vector<Tensor> primals = c.args;
  primals.insert(primals.end(), plan.lifted.begin(), plan.lifted.end());
  std::vector<Tensor> wrt;
  for (size_t k = 0; k < primals.size(); ++k) {
    if (!primals[k].requires_grad()) continue;
    plan.grad_primals.push_back(k);
    wrt.push_back(primals[k]);
  }
  if (diff_outputs.empty() || wrt.empty()) {
    plan.differentiable_outputs.clear();
    plan.grad_primals.clear();
    return {};
  }
  std::vector<Tensor> tangents;
  for (size_t k = 0; k < diff_outputs.size(); ++k) {
    Tensor z;
    {
      ExcludeDispatchKeysGuard hidden(
          DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
      z = empty_tensor(diff_outputs[k].sizes(), diff_outputs[k].dtype(), diff_outputs[k].device())
              .zero_();
    }
    c.tracer.add_input_like(z, fmt::format("g{}", k), diff_outputs[k]);
    tangents.push_back(z);
  }
  profiler::RecordScope scope(profiler::ScopeKind::Compile, "trace backward");
  ir::Graph& graph = *c.tracer.graph();
  size_t before = graph.nodes().size();
  std::vector<Tensor> grads = autograd::grad(diff_outputs, wrt, tangents,
                                             /*retain_graph=*/false, /*create_graph=*/false,
                                             /*allow_unused=*/true);
  for (const Tensor& g : grads) {
    plan.has_gradient.push_back(g.defined());
    if (g.defined()) graph.add_output(c.tracer.value_of(g));
  }
  return {false, fmt::format("{} backward nodes for {} gradients", graph.nodes().size() - before,
                             grads.size())};
}

// A function that reseeds the generator itself (manual_seed inside it) cannot be replayed from
// the caller's generator state: its signature runs eagerly. Otherwise the plan records how
// many random blocks a call draws.
StepResult check_generator(Capture& c) {
  GeneratorState after = get_rng_state();
  if (after.seed != c.rng_before.seed) {
    c.plan.eager = true;
    c.plan.eager_reason = "the function calls manual_seed (or sets the generator state)";
    return {true, "eager: " + c.plan.eager_reason};
  }
  c.plan.random_blocks = static_cast<int64_t>(after.offset - c.rng_before.offset);
  finish_symbols(c);
  c.plan.joint = c.tracer.graph();
  return {};
}

// The joint pipeline on a copy: the plan keeps the joint graph as traced (for dumps and
// create_graph).
StepResult optimize_joint(Capture& c) {
  c.joint = c.plan.joint->clone();
  c.stage = "joint";
  size_t before = c.joint->nodes().size();
  profiler::RecordScope scope(profiler::ScopeKind::Compile, "passes joint");
  passes::optimize_joint_graph(*c.joint, c.pipeline);
  if (c.joint->nodes().size() == before) return {};
  return {false, fmt::format("{} -> {} nodes", before, c.joint->nodes().size())};
}

// Forward and backward graphs from the joint one, by min-cut rematerialization when there is a
// backward; without one, the forward is the joint graph less what only the gradients needed.
StepResult partition(Capture& c) {
  Plan& plan = c.plan;
  if (plan.differentiable_outputs.empty()) {
    plan.forward = c.joint;
    passes::eliminate_dead_code(*plan.forward);
  } else {
    profiler::RecordScope scope(profiler::ScopeKind::Compile, "partition");
    passes::JointLayout layout{c.num_primals, c.num_forward_outputs};
    passes::Partition p = passes::partition_joint_graph(
        *c.joint, layout, passes::PartitionOptions{plan.rematerialize});
    plan.forward = p.forward;
    plan.backward = p.backward;
    plan.partitioned_backward = p.backward->clone();
    plan.num_saved = p.num_saved;
    plan.saved_bytes = p.saved_bytes;
  }
  plan.partitioned_forward = plan.forward->clone();
  if (!plan.backward) return {false, "forward only: " + size_of(*plan.forward)};
  return {false, fmt::format("forward {}, backward {}, {} saved tensors ({} bytes)",
                             size_of(*plan.forward), size_of(*plan.backward), plan.num_saved,
                             plan.saved_bytes)};
}

// The partitioned pipeline on each graph: simplification, fusion and the lowering of fusion
// groups to kernel IR.
StepResult optimize_partitioned(Capture& c) {
  Plan& plan = c.plan;
  c.stage = "forward";
  {
    profiler::RecordScope scope(profiler::ScopeKind::Compile, "passes forward");
    passes::optimize_partitioned_graph(*plan.forward, c.pipeline);
  }
  if (plan.backward) {
    c.stage = "backward";
    profiler::RecordScope scope(profiler::ScopeKind::Compile, "passes backward");
    passes::optimize_partitioned_graph(*plan.backward, c.pipeline);
  }
  return {false,
          fmt::format("forward {} kernels, backward {} kernels", count_kernels(*plan.forward),
                      plan.backward ? count_kernels(*plan.backward) : 0)};
}

// Machine code for every fusion group, on the plan's backend (with the interpreter and one
// warning for a group that fails to compile).
StepResult generate_kernels(Capture& c) {
  Plan& plan = c.plan;
  // Kernel names are unique within a graph only: the files get the graph's name in front.
  auto compile_graph = [&](ir::Graph& g, const std::string& prefix) {
    size_t first = plan.kernel_sources.size();
    compile_kernels(g, c.backend, c.record_pass_dumps,
                    c.record_pass_dumps ? &plan.kernel_sources : nullptr);
    for (size_t i = first; i < plan.kernel_sources.size(); ++i)
      plan.kernel_sources[i].first = prefix + plan.kernel_sources[i].first;
  };
  compile_graph(*plan.forward, "forward_");
  if (plan.backward) compile_graph(*plan.backward, "backward_");
  plan.forward_kernels = count_kernels(*plan.forward);
  count_fallbacks(*plan.forward, plan);
  if (plan.backward) {
    plan.backward_kernels = count_kernels(*plan.backward);
    count_fallbacks(*plan.backward, plan);
  }
  return {false, fmt::format("{} forward and {} backward kernels on {}", plan.forward_kernels,
                             plan.backward_kernels, backend_name(c.backend))};
}

using CaptureStep = StepResult (*)(Capture&);
constexpr std::pair<std::string_view, CaptureStep> kCaptureSteps[] = {
    {"start trace", start_trace},
    {"trace forward", trace_forward},
    {"write-backs", add_write_backs},
    {"graph breaks", split_at_graph_breaks},
    {"trace backward", trace_backward},
    {"generator", check_generator},
    {"optimize joint", optimize_joint},
    {"partition", partition},
    {"optimize partitioned", optimize_partitioned},
    {"generate kernels", generate_kernels},
};

}  // namespace

std::shared_ptr<Plan> capture_plan(const Fn& fn, const std::vector<Tensor>& inputs,
                                   const Signature& signature, bool rematerialize,
                                   bool record_pass_dumps, Backend backend,
                                   const std::vector<std::vector<bool>>& dynamic_dims) {
  profiler::RecordScope whole(profiler::ScopeKind::Compile, "compile");
  auto plan = std::make_shared<Plan>();
  plan->rematerialize = rematerialize;
  plan->backend = backend;
  plan->signature = signature;
  Capture c{fn, inputs, signature, record_pass_dumps, backend, *plan, dynamic_dims};
  c.rng_before = get_rng_state();
  plan->capture_seed = static_cast<int64_t>(c.rng_before.seed);
  plan->capture_offset = static_cast<int64_t>(c.rng_before.offset);
  if (record_pass_dumps) {
    c.pipeline.after_change = [&c](const std::string& pass, const ir::Graph& g) {
      c.plan.pass_dumps.emplace_back(
          fmt::format("{:02}_{}_{}", c.plan.pass_dumps.size(), c.stage, pass), g.str());
    };
  }
  // The trace ran on the real lifted tensors: their pre-capture values go back, whatever
  // happens, so that the plan's run (or an eager run) writes into them once.
  struct RestoreLifted {
    GraphTracer& tracer;
    ~RestoreLifted() { tracer.restore_lifted(); }
  } restore{c.tracer};
  bool any_dynamic = false;
  for (const std::vector<bool>& dims : dynamic_dims)
    for (bool d : dims)
      any_dynamic = any_dynamic || d;
  std::optional<SymbolicTraceScope> symbolic;
  if (any_dynamic) symbolic.emplace();  // Note [Size reads while tracing]
  try {
    TracingStateGuard state(&c.tracer);
    IncludeDispatchKeysGuard keys{DispatchKeySet(DispatchKey::Tracer)};
    for (const auto& [name, step] : kCaptureSteps) {
      StepResult r = step(c);
      if (!r.change.empty() && log_topic_enabled("passes")) {
        log_line("passes", fmt::format("capture step '{}': {}", name, r.change));
      }
      if (r.done) break;
    }
  } catch (const Error& e) {
    if (!runs_eagerly(e)) throw;
    plan->eager = true;
    plan->eager_reason = e.what();
  }
  // The capture drew random numbers as a call would; the plan's run draws them again, so the
  // generator goes back to where the call started (Note [Random ops in plans]).
  set_rng_state(c.rng_before);
  plan->symbolic =
      !plan->eager && plan->steps.empty() && plan->forward && plan->forward->has_symbolic_types();
  if (plan->symbolic) {
    for (size_t k = 0; k < plan->forward->symbol_hints().size(); ++k)
      plan->guards.push_back(
          SymFact{SymInt::symbol(static_cast<int64_t>(k)), SymFact::Relation::kGe, 2});
    // And what the shape rules assumed (Note [Assumed size facts]), in either half.
    for (const auto& g : {plan->joint, plan->forward, plan->backward})
      if (g) add_facts(plan->guards, g->symbol_facts());
  }
  return plan;
}

}  // namespace kiln::compile_detail
