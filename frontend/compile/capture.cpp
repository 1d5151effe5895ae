// Capture of a plan (Note [Compile capture], frontend/compile.h).
#include <fmt/format.h>

#include "kiln/frontend/autograd.h"
#include "kiln/frontend/compile/kernel_codegen.h"
#include "kiln/frontend/compile/plan.h"
#include "kiln/frontend/compile/segments.h"
#include "kiln/frontend/graph_tracer.h"
#include "kiln/passes/dce.h"
#include "kiln/passes/partition.h"
#include "kiln/passes/pipeline.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/error.h"
#include "kiln/runtime/philox.h"
#include "kiln/runtime/profiler.h"
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

}  // namespace

std::shared_ptr<Plan> capture_plan(const Fn& fn, const std::vector<Tensor>& inputs,
                                   const Signature& signature, bool rematerialize,
                                   bool record_pass_dumps, Backend backend) {
  using profiler::RecordScope;
  using profiler::ScopeKind;
  RecordScope whole(ScopeKind::Compile, "compile");
  auto plan = std::make_shared<Plan>();
  plan->rematerialize = rematerialize;
  plan->backend = backend;
  plan->signature = signature;
  GeneratorState rng_before = get_rng_state();
  plan->capture_seed = static_cast<int64_t>(rng_before.seed);
  plan->capture_offset = static_cast<int64_t>(rng_before.offset);

  std::vector<Tensor> copies = capture_copies(inputs);
  GraphTracer tracer;
  for (size_t i = 0; i < copies.size(); ++i) {
    KILN_CHECK(copies[i].defined(), "compile: input {} is an undefined tensor", i);
    tracer.add_input(copies[i], "x" + std::to_string(i));
  }
  tracer.lift_outside_tensors(&plan->lifted);
  tracer.set_records_graph_breaks(true);
  ir::Graph& graph = *tracer.graph();
  std::vector<uint32_t> versions;
  for (const Tensor& t : copies)
    versions.push_back(t.version());

  // The trace ran on the real lifted tensors: their pre-capture values go back, whatever
  // happens, so that the plan's run (or an eager run) writes into them once.
  struct RestoreLifted {
    GraphTracer& tracer;
    ~RestoreLifted() { tracer.restore_lifted(); }
  } restore{tracer};
  try {
    TracingStateGuard state(&tracer);
    IncludeDispatchKeysGuard keys{DispatchKeySet(DispatchKey::Tracer)};
    std::vector<Tensor> outputs;
    {
      RecordScope scope(ScopeKind::Compile, "trace forward");
      outputs = fn(copies);
    }
    plan->num_outputs = outputs.size();
    for (size_t i = 0; i < outputs.size(); ++i) {
      KILN_CHECK(outputs[i].defined(), "compile: output {} of the function is undefined", i);
      graph.add_output(tracer.value_of(outputs[i]));
    }
    // In-place writes into the arguments, and into lifted tensors (a running statistic, an
    // optimizer's state: Note [Lifted tensors]), become outputs the plan writes back.
    auto write_back = [&](const Tensor& t, uint32_t version_before, size_t primal, const char* what,
                          size_t index) {
      if (t.version() == version_before) return;
      KILN_CHECK(!tracer.is_stale(t),
                 "compile: the function wrote into {}{} through a view or another alias of it; "
                 "compiled functions can only write back values assigned to the tensor itself",
                 what, index);
      ir::Value* v = tracer.value_of(t);
      if (v == graph.input(primal)) return;
      graph.add_output(v);
      plan->write_backs.emplace_back(primal, graph.outputs().size() - 1);
    };
    for (size_t i = 0; i < copies.size(); ++i)
      write_back(copies[i], versions[i], i, "input ", i);
    for (size_t k = 0; k < plan->lifted.size(); ++k) {
      const Tensor& t = plan->lifted[k];
      if (t.version() != tracer.lifted_versions().at(k)) {
        // Two lifted tensors on one storage (a buffer and a view of it) are separate plan
        // inputs: a write to one would not be seen through the other, which the tracer cannot
        // express, so the signature runs eagerly.
        for (size_t j = 0; j < plan->lifted.size(); ++j) {
          KILN_CHECK(j == k || plan->lifted[j].impl()->storage() != t.impl()->storage(),
                     "compile: the function wrote into a tensor it reads from outside its "
                     "arguments (p{}) that is modified in place through another view or alias of "
                     "it (p{})",
                     k, j);
        }
      }
      write_back(t, tracer.lifted_versions().at(k), copies.size() + k,
                 "the tensor it reads from outside its arguments, lifted as p", k);
    }
    tracer.stop_lifting_constants();  // Note [Lifted tensors]: not after the tangents
    size_t num_forward_outputs = graph.outputs().size();
    size_t num_primals = graph.inputs().size();  // inputs, then lifted parameters
    plan->traced = graph.clone();                // the backward capture below extends `graph`

    if (has_fallbacks(graph)) {
      // Graph breaks: no joint graph; each segment captures its own when it first runs.
      plan->forward = tracer.graph();
      passes::eliminate_dead_code(*plan->forward);
      build_steps(*plan);
      for (const ir::Node* n : plan->forward->nodes()) {
        if (n->kind() != ir::NodeKind::Fallback) continue;
        plan->fallback_reasons.push_back(fmt::format(
            "graph break: '{}'{} is not traceable; it runs eagerly between compiled segments",
            n->fallback().name, n->call_site().empty() ? "" : " at " + n->call_site()));
      }
      set_rng_state(rng_before);
      return plan;
    }

    // Backward capture: one zero placeholder per differentiable output, then the real engine.
    std::vector<Tensor> diff_outputs;
    if (signature.grad_mode) {
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (!outputs[i].requires_grad()) continue;
        plan->differentiable_outputs.push_back(i);
        diff_outputs.push_back(outputs[i]);
      }
    }
    std::vector<Tensor> primals = copies;
    primals.insert(primals.end(), plan->lifted.begin(), plan->lifted.end());
    std::vector<Tensor> wrt;
    for (size_t k = 0; k < primals.size(); ++k) {
      if (!primals[k].requires_grad()) continue;
      plan->grad_primals.push_back(k);
      wrt.push_back(primals[k]);
    }
    if (!diff_outputs.empty() && !wrt.empty()) {
      std::vector<Tensor> tangents;
      for (size_t k = 0; k < diff_outputs.size(); ++k) {
        Tensor z;
        {
          ExcludeDispatchKeysGuard hidden(
              DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
          z = empty_tensor(diff_outputs[k].sizes(), diff_outputs[k].dtype(),
                           diff_outputs[k].device())
                  .zero_();
        }
        tracer.add_input(z, "g" + std::to_string(k));
        tangents.push_back(z);
      }
      RecordScope scope(ScopeKind::Compile, "trace backward");
      std::vector<Tensor> grads = autograd::grad(diff_outputs, wrt, tangents,
                                                 /*retain_graph=*/false, /*create_graph=*/false,
                                                 /*allow_unused=*/true);
      for (const Tensor& g : grads) {
        plan->has_gradient.push_back(g.defined());
        if (g.defined()) graph.add_output(tracer.value_of(g));
      }
    } else {
      plan->differentiable_outputs.clear();
      plan->grad_primals.clear();
    }

    GeneratorState rng_after = get_rng_state();
    if (rng_after.seed != rng_before.seed) {
      // fn reseeds the generator itself (manual_seed inside the function): a plan cannot
      // replay that from the caller's generator state.
      set_rng_state(rng_before);
      plan->eager = true;
      plan->eager_reason = "the function calls manual_seed (or sets the generator state)";
      return plan;
    }
    plan->random_blocks = static_cast<int64_t>(rng_after.offset - rng_before.offset);
    plan->joint = tracer.graph();
    passes::PipelineOptions pipeline;
    std::string stage;
    if (record_pass_dumps) {
      pipeline.after_change = [&](const std::string& pass, const ir::Graph& g) {
        plan->pass_dumps.emplace_back(
            fmt::format("{:02}_{}_{}", plan->pass_dumps.size(), stage, pass), g.str());
      };
    }
    // The plan keeps the joint graph as traced (for dumps and create_graph); the pipeline
    // optimizes a copy.
    std::shared_ptr<ir::Graph> joint = plan->joint->clone();
    stage = "joint";
    {
      RecordScope scope(ScopeKind::Compile, "passes joint");
      passes::optimize_joint_graph(*joint, pipeline);
    }
    passes::JointLayout layout{num_primals, num_forward_outputs};
    if (plan->differentiable_outputs.empty()) {
      plan->forward = joint;
      passes::eliminate_dead_code(*plan->forward);
    } else {
      RecordScope scope(ScopeKind::Compile, "partition");
      passes::Partition p =
          passes::partition_joint_graph(*joint, layout, passes::PartitionOptions{rematerialize});
      plan->forward = p.forward;
      plan->backward = p.backward;
      plan->partitioned_backward = p.backward->clone();
      plan->num_saved = p.num_saved;
      plan->saved_bytes = p.saved_bytes;
    }
    plan->partitioned_forward = plan->forward->clone();
    stage = "forward";
    {
      RecordScope scope(ScopeKind::Compile, "passes forward");
      passes::optimize_partitioned_graph(*plan->forward, pipeline);
    }
    if (plan->backward) {
      stage = "backward";
      RecordScope scope(ScopeKind::Compile, "passes backward");
      passes::optimize_partitioned_graph(*plan->backward, pipeline);
    }
    // Kernel names are unique within a graph only: the files get the graph's name in front.
    auto compile_graph = [&](ir::Graph& g, const std::string& prefix) {
      size_t first = plan->kernel_sources.size();
      compile_kernels(g, backend, record_pass_dumps,
                      record_pass_dumps ? &plan->kernel_sources : nullptr);
      for (size_t i = first; i < plan->kernel_sources.size(); ++i)
        plan->kernel_sources[i].first = prefix + plan->kernel_sources[i].first;
    };
    compile_graph(*plan->forward, "forward_");
    if (plan->backward) compile_graph(*plan->backward, "backward_");
  } catch (const Error& e) {
    if (!runs_eagerly(e)) throw;
    set_rng_state(rng_before);
    plan->eager = true;
    plan->eager_reason = e.what();
    return plan;
  }
  // The capture drew random numbers as a call would; the plan's run draws them again, so the
  // generator goes back to where the call started (Note [Random ops in plans]).
  set_rng_state(rng_before);
  plan->forward_kernels = count_kernels(*plan->forward);
  count_fallbacks(*plan->forward, *plan);
  if (plan->backward) {
    plan->backward_kernels = count_kernels(*plan->backward);
    count_fallbacks(*plan->backward, *plan);
  }
  return plan;
}

}  // namespace kiln::compile_detail
