#include "kiln/frontend/compile/segments.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "kiln/base/error.h"
#include "kiln/runtime/op_table.h"

namespace kiln::compile_detail {

// Note [Graph breaks]
// A custom Function that is not traceable hides its computation from the tracer, and the Node
// it makes in backward refers to that call's tensors, so neither can be baked into a graph.
// compile() traces with TracingState::records_graph_breaks, which turns each such Function into
// one prim.fallback step that calls it eagerly. If the forward trace has any, the signature
// runs as steps: maximal runs of traced nodes become compiled segments, each captured as its
// own plan (joint graph, partition, CompiledBackward) from the tensors of its first call, and
// the fallbacks run eagerly between them with autograd on. Gradients then cross the segments
// through the ordinary engine: segment k's CompiledBackward feeds the eager Function's Node,
// which feeds segment k-1's. Each step's outputs are exactly the values later steps read.
// Ops whose output shape depends on the data (nonzero, masked_select) are kNonTraceable in the
// op table and break the graph the same way (Note [Data-dependent output shapes],
// runtime/kernels/mask_ops.cpp), and a call with other counts runs eagerly (Note [Shapes after
// a data-dependent break] in segments.h).

namespace {

void add_segment(Plan& plan, const std::vector<const ir::Node*>& nodes) {
  if (nodes.empty()) return;
  auto step = std::make_shared<Step>();
  std::unordered_set<const ir::Node*> inside(nodes.begin(), nodes.end());
  std::unordered_set<const ir::Value*> seen_input;
  for (const ir::Node* n : nodes) {
    for (const ir::Value* v : n->inputs()) {
      if (inside.count(v->node()) == 0 && seen_input.insert(v).second) step->inputs.push_back(v);
    }
  }
  for (const ir::Node* n : nodes) {
    for (const ir::Value* v : n->outputs()) {
      bool escapes = false;
      for (const ir::Use& u : v->uses())
        escapes = escapes || u.user == nullptr || inside.count(u.user) == 0;
      if (escapes) step->outputs.push_back(v);
    }
  }
  auto g = std::make_shared<ir::Graph>();
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (const ir::Value* v : step->inputs)
    map[v] = g->add_input(v->type(), "");
  for (const ir::Node* n : nodes) {
    std::vector<ir::Value*> ins;
    for (const ir::Value* v : n->inputs())
      ins.push_back(map.at(v));
    ir::Node* copy = g->create_copy(*n, ins);
    for (size_t i = 0; i < n->num_outputs(); ++i)
      map[n->output(i)] = copy->output(i);
  }
  for (const ir::Value* v : step->outputs)
    g->add_output(map.at(v));
  step->segment = std::move(g);
  plan.steps.push_back(std::move(step));
}

}  // namespace

std::shared_ptr<const Plan> Step::plan_for(const std::vector<Tensor>& args, bool rematerialize,
                                           Backend backend) const {
  std::lock_guard<std::mutex> lock(mu_);
  Signature sig = Signature::of(args);
  auto it = plans_.find(sig);
  if (it != plans_.end()) return it->second;
  std::shared_ptr<ir::Graph> g = segment;
  Fn fn = [g](const std::vector<Tensor>& in) { return interpret(*g, in); };
  std::shared_ptr<Plan> p = capture_plan(fn, args, sig, rematerialize, false, backend);
  KILN_CHECK(!p->eager && p->steps.empty(),
             "compile: a segment between graph breaks could not be captured: {}", p->eager_reason);
  if (!first_) first_ = p;
  plans_.emplace(std::move(sig), p);
  return p;
}

std::shared_ptr<const Plan> Step::captured() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_;
}

void build_steps(Plan& plan) {
  std::vector<const ir::Node*> run;
  for (const ir::Node* n : plan.forward->nodes()) {
    if (n->kind() == ir::NodeKind::Param) continue;
    if (n->kind() != ir::NodeKind::Fallback) {
      run.push_back(n);
      continue;
    }
    add_segment(plan, run);
    run.clear();
    auto step = std::make_shared<Step>();
    step->fallback = n;
    for (const ir::Value* v : n->inputs())
      step->inputs.push_back(v);
    for (const ir::Value* v : n->outputs())
      step->outputs.push_back(v);
    plan.steps.push_back(std::move(step));
  }
  add_segment(plan, run);
}

namespace {

// Note [Shapes after a data-dependent break] in segments.h.
void check_break_shapes(const Step& step, const std::vector<Tensor>& outs) {
  const std::string& name = step.fallback->fallback().name;
  const OpDef* op = OpTable::instance().find(name);
  if (op == nullptr || !op->has(kNonTraceable)) return;
  for (size_t i = 0; i < outs.size() && i < step.outputs.size(); ++i) {
    const Shape& traced = step.outputs[i]->type().sizes;
    if (!outs[i].defined() || std::ranges::equal(outs[i].sizes(), traced)) continue;
    throw BreakShapesChanged(fmt::format(
        "compile: '{}' returned shape {} where the traced call had {}; the code after it was "
        "compiled for that shape, so calls with other counts run eagerly",
        name, shape_str(outs[i].sizes()), shape_str(traced)));
  }
}

}  // namespace

std::vector<Tensor> run_steps(const Plan& plan, const std::vector<Tensor>& primals) {
  const ir::Graph& g = *plan.forward;
  std::unordered_map<const ir::Value*, Tensor> env;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    env[g.input(i)] = primals.at(i);
  for (const auto& step : plan.steps) {
    std::vector<Tensor> ins;
    ins.reserve(step->inputs.size());
    for (const ir::Value* v : step->inputs)
      ins.push_back(env.at(v));
    std::vector<Tensor> outs;
    if (step->fallback != nullptr) {
      outs = step->fallback->fallback().fn(ins);
      check_break_shapes(*step, outs);
    } else {
      outs = run_plan(step->plan_for(ins, plan.rematerialize, plan.backend), ins);
    }
    KILN_CHECK(outs.size() == step->outputs.size(),
               "compile: a step returned {} tensors for {} outputs", outs.size(),
               step->outputs.size());
    for (size_t i = 0; i < outs.size(); ++i)
      env[step->outputs[i]] = std::move(outs[i]);
  }
  std::vector<Tensor> out;
  out.reserve(g.outputs().size());
  for (const ir::Value* v : g.outputs())
    out.push_back(env.at(v));
  return out;
}

}  // namespace kiln::compile_detail
