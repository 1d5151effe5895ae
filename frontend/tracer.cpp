#include "kiln/frontend/tracer.h"

#include <optional>

#include "kiln/base/error.h"
#include "kiln/frontend/compile/interpreter.h"
#include "kiln/frontend/graph_tracer.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln {

TracedFunction::TracedFunction(std::shared_ptr<ir::Graph> graph, size_t num_outputs,
                               std::vector<WriteBack> write_backs)
    : graph_(std::move(graph)), num_outputs_(num_outputs), write_backs_(std::move(write_backs)) {}

std::vector<Tensor> TracedFunction::operator()(const std::vector<Tensor>& inputs) const {
  std::vector<Tensor> outputs = interpret(*graph_, inputs);
  if (!write_backs_.empty()) {
    NoGradGuard no_grad;  // the write replays fn's effect on its argument, not a new op
    for (auto [input, output] : write_backs_)
      inputs.at(input).copy_(outputs.at(output));
  }
  outputs.resize(num_outputs_);
  return outputs;
}

TracedFunction trace(TraceFn fn, const std::vector<Tensor>& example_inputs,
                     const TraceOptions& options) {
  KILN_CHECK(!local_dispatch_keys().excluded.has(DispatchKey::Tracer),
             "trace: cannot start a trace where the Tracer key is excluded (inside an op's "
             "kernel or an opaque fallback)");
  GraphTracer tracer;
  std::optional<SymbolicTraceScope> symbolic;
  if (options.dynamic) symbolic.emplace();  // Note [Size reads while tracing]
  std::vector<uint32_t> versions;
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    const Tensor& t = example_inputs[i];
    KILN_CHECK(t.defined(), "trace: example input {} is an undefined tensor", i);
    std::vector<bool> dims(options.dynamic ? static_cast<size_t>(t.dim()) : 0, true);
    tracer.add_input(t, fmt::format("x{}", i), dims);
    versions.push_back(t.version());
  }
  ir::Graph& graph = *tracer.graph();
  std::vector<TracedFunction::WriteBack> write_backs;
  size_t num_outputs = 0;
  {
    // Both guards restore on the way out, so a trace that throws leaves this thread as it was.
    TracingStateGuard state(&tracer);
    IncludeDispatchKeysGuard keys{DispatchKeySet(DispatchKey::Tracer)};
    std::vector<Tensor> outputs = fn(example_inputs);
    num_outputs = outputs.size();
    for (size_t i = 0; i < outputs.size(); ++i) {
      KILN_CHECK(outputs[i].defined(), "trace: output {} of the traced function is undefined", i);
      graph.add_output(tracer.value_of(outputs[i]));
    }
    // Arguments fn wrote into (Note [Functionalized in-place ops]): their final Values become
    // extra outputs, copied back into the arguments when the graph runs.
    for (size_t i = 0; i < example_inputs.size(); ++i) {
      const Tensor& t = example_inputs[i];
      if (t.version() == versions[i]) continue;
      KILN_CHECK(!tracer.is_stale(t),
                 "trace: the traced function wrote into example input {} ({}) through a view "
                 "or another alias of it; a traced graph can only write back values assigned "
                 "to the argument itself (modify the argument directly, or clone() it first)",
                 i, ir::TensorType::of(t).str());
      ir::Value* v = tracer.value_of(t);
      if (v == graph.input(i)) continue;
      graph.add_output(v);
      write_backs.emplace_back(i, graph.outputs().size() - 1);
    }
  }
  tracer.finish_symbols();
  TracedFunction traced(tracer.graph(), num_outputs, std::move(write_backs));
  traced.set_specializations(tracer.specializations());
  return traced;
}

TracedFunction trace(std::function<Tensor(const std::vector<Tensor>&)> fn,
                     const std::vector<Tensor>& example_inputs, const TraceOptions& options) {
  return trace(TraceFn([fn = std::move(fn)](const std::vector<Tensor>& inputs) {
                 return std::vector<Tensor>{fn(inputs)};
               }),
               example_inputs, options);
}

}  // namespace kiln
