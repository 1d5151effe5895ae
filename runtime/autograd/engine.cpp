#include "kiln/runtime/autograd/engine.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "kiln/base/call_site.h"
#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/error.h"
#include "kiln/base/profiler.h"
#include "kiln/base/warning.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/autograd/anomaly_mode.h"
#include "kiln/runtime/autograd/basic_nodes.h"
#include "kiln/runtime/autograd/device_threads.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/autograd/input_buffer.h"
#include "kiln/runtime/autograd/node.h"
#include "kiln/runtime/cuda/cuda_allocator.h"
#include "kiln/runtime/dispatch_key.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln::autograd {
namespace {

// Note [Graph task exec info]
// backward() runs every Node reachable from the roots. grad(outputs, inputs) runs only the
// Nodes on a path to one of the inputs' gradient edges: exec_info marks those "needed", and
// records at the inputs' edges where to capture the arriving gradient. A Node with a smaller
// topological_nr than every input's Node cannot reach them (Note [Topological number]), so the
// search stops there. An empty exec_info means "run everything".
struct ExecInfo {
  bool needed = false;
  std::vector<std::pair<uint32_t, size_t>> captures;  // (input_nr of this Node, output index)
  bool should_execute() const { return needed || !captures.empty(); }
};

struct NodeTask {
  std::shared_ptr<Node> fn;
  InputBuffer inputs;
};

// The ready queue's order: highest sequence_nr first (Note [Sequence number]).
struct LaterFirst {
  bool operator()(const NodeTask* a, const NodeTask* b) const {
    return a->fn->sequence_nr() < b->fn->sequence_nr();
  }
};

struct GraphTask {
  bool keep_graph = false;
  bool create_graph = false;
  // Note [Backward streams]: the caller's current stream of each device its root gradients are
  // on, and every stream a Node ran on.
  std::vector<cuda::Stream> caller_streams;
  std::vector<cuda::Stream> used_streams;
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, std::unique_ptr<NodeTask>> not_ready;
  std::unordered_map<Node*, ExecInfo> exec_info;
  std::vector<Tensor> captured;
  std::priority_queue<NodeTask*, std::vector<NodeTask*>, LaterFirst> ready;
  std::vector<std::unique_ptr<NodeTask>> owned_ready;

  bool should_run(Node* fn) const {
    if (exec_info.empty()) return true;
    auto it = exec_info.find(fn);
    return it != exec_info.end() && it->second.should_execute();
  }
};

thread_local GraphTask* t_current_task = nullptr;
thread_local int t_reentrant_depth = 0;
// Deeper reentrant backward calls continue on a fresh thread so that a long chain of nested
// backward calls cannot overflow this thread's stack.
constexpr int kMaxReentrantDepth = 32;

void compute_dependencies(GraphTask& task, Node* root) {
  std::unordered_set<Node*> seen{root};
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* fn = stack.back();
    stack.pop_back();
    for (const Edge& e : fn->next_edges()) {
      Node* next = e.function.get();
      if (next == nullptr) continue;
      ++task.dependencies[next];
      if (seen.insert(next).second) stack.push_back(next);
    }
  }
}

// `outputs` are captured (grad), or, for backward(inputs=...), run themselves: a leaf's
// AccumulateGrad writes its .grad, a non-leaf's grad_fn runs its retain_grad hook.
void init_to_execute(GraphTask& task, Node* root, const edge_list& outputs, bool accumulate_grad) {
  uint64_t min_topo = UINT64_MAX;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Node* fn = outputs[i].function.get();
    if (accumulate_grad) {
      task.exec_info[fn].needed = true;
    } else {
      task.exec_info[fn].captures.emplace_back(outputs[i].input_nr, i);
    }
    min_topo = std::min(min_topo, fn->topological_nr());
  }
  // Iterative post-order DFS: a Node is needed when one of its next Nodes should execute.
  struct Frame {
    Node* fn;
    size_t next = 0;
  };
  std::unordered_set<Node*> visited{root};
  std::vector<Frame> stack{{root}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    const edge_list& edges = f.fn->next_edges();
    if (f.next < edges.size()) {
      Node* child = edges[f.next++].function.get();
      if (child == nullptr || child->topological_nr() < min_topo) continue;
      if (visited.insert(child).second) stack.push_back({child});
      continue;
    }
    Node* fn = f.fn;
    stack.pop_back();
    for (const Edge& e : edges) {
      auto it = e.function ? task.exec_info.find(e.function.get()) : task.exec_info.end();
      if (it != task.exec_info.end() && it->second.should_execute()) {
        task.exec_info[fn].needed = true;
        break;
      }
    }
  }
}

// Note [Backward streams]
// A Node's CUDA work runs on the stream its forward ran on: the stream that was current on the
// device when the Node's input metadata was recorded (InputMetadata::stream), as in PyTorch.
// When a gradient made on one stream goes to a Node that runs on another, the consumer's stream
// waits for the producer's (an event), and when the backward is done the caller's current
// stream waits for every stream the backward used, so that the caller reads the gradients in
// stream order. A gradient made by a Node without CUDA inputs (the root's, a CPU Node's) counts
// as made on the caller's current stream of its device. With one stream, as usual, none of
// this records an event.
std::optional<cuda::Stream> node_stream(const Node& fn) {
  for (uint32_t i = 0; i < fn.num_inputs(); ++i) {
    const InputMetadata& m = fn.input_metadata(i);
    if (m.defined && m.device.is_cuda()) return cuda::Stream(m.device.index, m.stream);
  }
  return std::nullopt;
}

cuda::Stream caller_stream(const GraphTask& task, int device) {
  for (const cuda::Stream& s : task.caller_streams) {
    if (s.device() == device) return s;
  }
  return cuda::default_stream(device);
}

// `consumer` waits on the device for what is queued on `producer` so far.
void wait_for(const cuda::Stream& consumer, const cuda::Stream& producer) {
  if (consumer == producer) return;
  cuda::Event ready(producer.device());
  ready.record(producer);
  ready.block(consumer);
}

variable_list call_tensor_pre_hooks(Node& fn, variable_list inputs) {
  for (const auto& hook : fn.tensor_pre_hooks())
    inputs = (*hook)(inputs);
  for (auto& [idx, hook] : fn.retains_grad_hooks())
    inputs = (*hook)(inputs);
  return inputs;
}

// Sums a broadcast gradient down to `shape` (Note [Gradient shapes]).
Tensor sum_to(const Tensor& grad, const Shape& shape) {
  int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  Shape dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  }
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return r.sizes() == shape ? r : r.reshape(shape);
}

// sum_to over symbolic sizes (Note [Symbolic saved sizes]): the dims to sum are chosen by
// comparing expressions, so the traced graph sums the same dims at every size. Nullopt when
// `have` does not broadcast to `want` as expressions; the caller then compares integers, which
// specializes.
std::optional<Tensor> sum_to_symbolic(const Tensor& grad, const SymShape& have,
                                      const SymShape& want) {
  if (have.size() < want.size()) return std::nullopt;
  size_t lead = have.size() - want.size();
  Shape dims;
  SymShape summed = have;
  for (size_t d = 0; d < have.size(); ++d) {
    bool sum_here = d < lead || (want[d - lead] == SymInt(1) && !(have[d] == SymInt(1)));
    if (!sum_here && !(have[d] == want[d - lead])) return std::nullopt;
    if (sum_here) {
      dims.push_back(static_cast<int64_t>(d));
      summed[d] = 1;
    }
  }
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return summed == want ? r : r.reshape_symint(want);
}

bool is_expandable_to(const Shape& shape, const Shape& target) {
  if (shape.size() > target.size()) return false;
  size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != target[lead + i] && shape[i] != 1) return false;
  }
  return true;
}

void validate_outputs(Node& fn, variable_list& grads) {
  KILN_CHECK(grads.size() == fn.num_outputs(),
             "{}: returned {} gradients but the Node has {} next edges", fn.name(), grads.size(),
             fn.num_outputs());
  for (size_t i = 0; i < grads.size(); ++i) {
    const Edge& e = fn.next_edge(i);
    Tensor& g = grads[i];
    if (!e.is_valid()) {
      g = Tensor();  // nobody wants it; drop it early
      continue;
    }
    if (!g.defined()) continue;
    const InputMetadata& m = e.function->input_metadata(e.input_nr);
    if (!m.defined) continue;
    bool shaped = false;
    if (kiln::detail::g_symbolic_traces.load(std::memory_order_relaxed) != 0 && is_tracing()) {
      SymShape have = g.sym_sizes(), want = m.symbolic_sizes();
      if (have == want) {
        shaped = true;
      } else if (std::optional<Tensor> summed = sum_to_symbolic(g, have, want)) {
        g = std::move(*summed);
        shaped = true;
      } else {
        m.read_sizes();  // the integer comparison below specializes both sides
      }
    }
    if (!shaped && g.sizes() != m.sizes) {
      KILN_CHECK(is_expandable_to(m.sizes, g.sizes()),
                 "{}: invalid gradient at index {}: got shape {} but expected shape {} (or one "
                 "that broadcasts to it)",
                 fn.name(), i, shape_str(g.sizes()), shape_str(m.sizes));
      g = sum_to(g, m.sizes);
    }
    KILN_CHECK(g.device() == m.device,
               "{}: invalid gradient at index {}: got device {} but expected {}", fn.name(), i,
               g.device(), m.device);
    if (g.dtype() != m.dtype) g = g.to(m.dtype);
  }
}

void check_for_nan(Node& fn, const variable_list& grads) {
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (!g.defined() || !is_floating(g.dtype()) || g.numel() == 0) continue;
    bool has_nan;
    {
      NoGradGuard no_grad;
      has_nan = sum(ne(g, g).to(kInt64)).item<int64_t>() > 0;
    }
    if (has_nan) {
      const AnomalyMetadata* meta = fn.metadata_if_present();
      KILN_ERROR(
          "anomaly mode: Function '{}' returned nan values in its output {}; the Node was "
          "created by {}",
          fn.name(), i, meta != nullptr ? meta->describe() : std::string("an unknown op"));
    }
  }
}

// Note [Backward under trace]
// The engine runs unchanged while trace() records: a traceable Node (every op-table op's
// backward) calls dispatcher ops, which the Tracer key records like any other call, and so do
// validate_outputs (sum_to, convert) and the InputBuffer's accumulation. A Node that is not
// traceable (an opaque custom Function) runs with the Tracer key excluded and is recorded as
// one prim.fallback node whose callable holds the Node; its saved tensors stay alive (it is not
// released after running) so that the recorded graph can call it again. AccumulateGrad would
// write .grad, a side effect a graph cannot express: trace autograd::grad instead.
bool records_as_fallback(Node& fn) {
  return is_tracing() && !fn.is_traceable();
}

variable_list run_node(Node& fn, variable_list inputs) {
  if (!records_as_fallback(fn)) return fn(std::move(inputs));
  KILN_CHECK(dynamic_cast<AccumulateGrad*>(&fn) == nullptr,
             "trace: backward() accumulates into .grad of leaf tensors, which a traced graph "
             "cannot express; call autograd::grad(outputs, inputs, ...) inside the traced "
             "function to get the gradients as values");
  std::shared_ptr<Node> node = fn.getptr();
  TracingState::OpaqueFn call = [node](const std::vector<Tensor>& grads) {
    return (*node)(variable_list(grads));
  };
  return current_tracing_state()->record_fallback(fn.name(), std::move(call), inputs);
}

variable_list call_function(GraphTask& task, Node& fn, variable_list inputs) {
  inputs = call_tensor_pre_hooks(fn, std::move(inputs));
  for (const auto& hook : fn.pre_hooks())
    inputs = (*hook)(inputs);
  variable_list hook_inputs;
  if (!fn.post_hooks().empty()) hook_inputs = inputs;
  variable_list outputs;
  {
    std::optional<profiler::RecordScope> scope;  // a Node's name is built, so only when profiling
    if (profiler::is_enabled()) scope.emplace(profiler::ScopeKind::AutogradNode, fn.name());
    AutoGradMode grad_mode(task.create_graph);
    if (!task.keep_graph && !records_as_fallback(fn)) fn.will_release_variables();
    outputs = run_node(fn, std::move(inputs));
    validate_outputs(fn, outputs);
  }
  // The NaN check reads the gradients on the host, which a trace cannot record.
  if (AnomalyMode::is_enabled() && !is_tracing()) check_for_nan(fn, outputs);
  for (const auto& hook : fn.post_hooks())
    outputs = (*hook)(outputs, hook_inputs);
  return outputs;
}

[[noreturn]] void rethrow_with_node(Node& fn, const std::exception& e) {
  std::string where = fn.name();
  if (const AnomalyMetadata* meta = fn.metadata_if_present()) {
    where += ", created by " + meta->describe();
  }
  KILN_ERROR("{} [raised in the backward of {}]", e.what(), where);
}

void evaluate_function(GraphTask& task, const std::shared_ptr<Node>& fn, InputBuffer&& buffer) {
  variable_list inputs = buffer.release();
  if (!task.exec_info.empty()) {
    auto found = task.exec_info.find(fn.get());
    if (found == task.exec_info.end()) return;
    ExecInfo& info = found->second;
    if (!info.captures.empty()) {
      variable_list seen = info.needed ? inputs : call_tensor_pre_hooks(*fn, inputs);
      for (auto [input_nr, out_idx] : info.captures)
        task.captured[out_idx] = seen[input_nr];
    }
    if (!info.needed) return;
  }
  variable_list outputs;
  bool keep_variables = task.keep_graph || records_as_fallback(*fn);  // Note [Backward under trace]
  std::optional<cuda::Stream> stream = node_stream(*fn);
  try {
    std::optional<cuda::StreamGuard> on_stream;
    if (stream) {
      on_stream.emplace(*stream);
      if (std::find(task.used_streams.begin(), task.used_streams.end(), *stream) ==
          task.used_streams.end())
        task.used_streams.push_back(*stream);
    }
    outputs = call_function(task, *fn, std::move(inputs));
  } catch (const ForeignError&) {
    throw;  // the user's own exception, unchanged (base/error.h)
  } catch (const std::exception& e) {
    rethrow_with_node(*fn, e);
  }
  if (!keep_variables) fn->release_variables();

  for (size_t i = 0; i < outputs.size(); ++i) {
    const Edge& e = fn->next_edge(i);
    if (!e.is_valid()) continue;
    Node* next = e.function.get();
    // Note [Backward streams]: the consumer's stream waits for the gradient's producer, keeps
    // the gradient's memory from reuse on the producer's stream, and does the accumulation.
    std::optional<cuda::StreamGuard> on_consumer;
    if (const Tensor& g = outputs[i]; g.defined() && g.device().is_cuda()) {
      std::optional<cuda::Stream> consumer = node_stream(*next);
      int d = g.device().index;
      if (consumer && consumer->device() == d) {
        cuda::Stream producer = stream && stream->device() == d ? *stream : caller_stream(task, d);
        if (!(producer == *consumer)) {
          wait_for(*consumer, producer);
          cuda::record_stream(g, *consumer);
        }
        on_consumer.emplace(*consumer);
      }
    }
    int remaining = --task.dependencies.at(next);
    auto it = task.not_ready.find(next);
    if (it == task.not_ready.end()) {
      it = task.not_ready
               .emplace(next, std::make_unique<NodeTask>(
                                  NodeTask{e.function, InputBuffer(next->num_inputs())}))
               .first;
    }
    it->second->inputs.add(e.input_nr, std::move(outputs[i]));
    if (remaining == 0) {
      std::unique_ptr<NodeTask> ready = std::move(it->second);
      task.not_ready.erase(it);
      if (task.should_run(next)) {
        task.ready.push(ready.get());
        task.owned_ready.push_back(std::move(ready));
      }
    }
  }
}

std::vector<Tensor> run_graph_task(GraphTask& task, const std::shared_ptr<Node>& root) {
  GraphTask* saved = t_current_task;
  t_current_task = &task;
  ++t_reentrant_depth;
  struct Restore {
    GraphTask* saved;
    ~Restore() {
      t_current_task = saved;
      --t_reentrant_depth;
    }
  } restore{saved};

  auto root_task = std::make_unique<NodeTask>(NodeTask{root, InputBuffer(0)});
  task.ready.push(root_task.get());
  task.owned_ready.push_back(std::move(root_task));
  while (!task.ready.empty()) {
    NodeTask* next = task.ready.top();
    task.ready.pop();
    evaluate_function(task, next->fn, std::move(next->inputs));
    next->fn.reset();  // free the Node as soon as this task no longer needs it
  }
  for (const cuda::Stream& s : task.used_streams)
    wait_for(caller_stream(task, s.device()), s);
  return std::move(task.captured);
}

}  // namespace

bool Node::task_should_compute_output(size_t i) const {
  if (!should_compute_output(i)) return false;
  const GraphTask* task = t_current_task;
  if (task == nullptr || task->exec_info.empty()) return true;
  auto it = task->exec_info.find(next_edges_[i].function.get());
  return it != task->exec_info.end() && it->second.should_execute();
}

Engine& Engine::get_default_engine() {
  static Engine engine;
  return engine;
}

std::vector<Tensor> Engine::execute(const edge_list& roots, const std::vector<Tensor>& grads,
                                    bool keep_graph, bool create_graph, bool accumulate_grad,
                                    const edge_list& outputs) {
  KILN_CHECK(roots.size() == grads.size(), "backward: got {} roots but {} gradients", roots.size(),
             grads.size());
  auto root = autograd::make_node<GraphRoot>(roots, grads);
  GraphTask task;
  task.keep_graph = keep_graph;
  task.create_graph = create_graph;
  if (accumulate_grad && create_graph) {
    KILN_WARN_ONCE(
        "Using backward() with create_graph=True will create a reference cycle between the "
        "parameter and its gradient which can cause a memory leak. We recommend using "
        "autograd.grad when creating the graph to avoid this. If you have to use this function, "
        "make sure to reset the .grad fields of your parameters to None after use to break the "
        "cycle and avoid the leak.");
  }
  if (!accumulate_grad) task.captured.resize(outputs.size());
  compute_dependencies(task, root.get());
  if (!outputs.empty() || !accumulate_grad)
    init_to_execute(task, root.get(), outputs, accumulate_grad);

  // Note [Device threads]: a backward from CUDA gradients runs on its device's worker thread,
  // with the caller's thread-local state.
  int device = -1;
  for (const Tensor& g : grads) {
    if (!g.defined() || !g.device().is_cuda()) continue;
    if (device < 0) device = g.device().index;
    task.caller_streams.push_back(cuda::current_stream(g.device().index));
  }
  // A backward inside a backward (a checkpoint's) runs where its caller runs, also on the
  // overflow thread below, which is not a device worker: handing it to the worker, which waits
  // for that thread, would deadlock.
  if (device >= 0 && !on_device_thread() && t_current_task == nullptr) {
    std::vector<Tensor> result;
    bool grad_enabled = GradMode::is_enabled();
    bool anomaly = AnomalyMode::is_enabled();
    LocalDispatchKeySet keys = local_dispatch_keys();
    TracingState* tracing = current_tracing_state();
    CallSite site = current_call_site();
    run_on_device_thread(device, [&] {
      AutoGradMode grad_mode(grad_enabled);
      AnomalyModeGuard anomaly_mode(anomaly);
      struct KeysGuard {
        LocalDispatchKeySet saved = local_dispatch_keys();
        ~KeysGuard() { local_dispatch_keys() = saved; }
      } keys_guard;
      local_dispatch_keys() = keys;
      TracingStateGuard trace_state(tracing);
      CallSiteScope call_site(site);
      result = run_graph_task(task, root);
    });
    return result;
  }

  if (t_reentrant_depth >= kMaxReentrantDepth) {
    std::vector<Tensor> result;
    std::exception_ptr error;
    bool grad_enabled = GradMode::is_enabled();
    bool anomaly = AnomalyMode::is_enabled();
    // The worker continues this thread's backward: same grad mode, anomaly mode, dispatch keys,
    // trace (Note [Backward under trace]) and call site, all thread-local.
    LocalDispatchKeySet keys = local_dispatch_keys();
    TracingState* tracing = current_tracing_state();
    CallSite site = current_call_site();
    std::thread worker([&] {
      GradMode::set_enabled(grad_enabled);
      AnomalyMode::set_enabled(anomaly);
      local_dispatch_keys() = keys;
      TracingStateGuard trace_state(tracing);
      CallSiteScope call_site(site);
      try {
        result = run_graph_task(task, root);
      } catch (...) {
        error = std::current_exception();
      }
    });
    worker.join();
    if (error) std::rethrow_exception(error);
    return result;
  }
  return run_graph_task(task, root);
}

}  // namespace kiln::autograd
