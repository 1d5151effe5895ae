#include "kiln/runtime/interpreter.h"

#include "kiln/ir/printer.h"

#include <cctype>
#include <unordered_map>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/error.h"

namespace kiln {
namespace {

constexpr size_t kKeep = SIZE_MAX;  // a graph output: never released

// "%3 = mm(%x, %2)  # model.cpp:12 in forward"
std::string describe(const ir::Graph& g, const ir::Node& node) {
  return ir::describe_node(node, ir::value_names(g));
}

void check_inputs(const ir::Graph& g, const std::vector<Tensor>& inputs) {
  KILN_CHECK(inputs.size() == g.inputs().size(), "interpret: the graph takes {} inputs, got {}",
             g.inputs().size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorType& want = g.input(i)->type();
    const Tensor& t = inputs[i];
    KILN_CHECK(t.defined(), "interpret: input {} is an undefined tensor; expected {}", i,
               want.str());
    KILN_CHECK(t.dtype() == want.dtype && t.sizes() == want.sizes && t.device() == want.device,
               "interpret: input {} has type {}, but the graph expects {}", i,
               ir::TensorType::of(t).str(), want.str());
  }
}

// A copy of a random op's attributes with the replay's seed and shifted offset.
ir::OpAttrs replayed_attrs(const ir::Node& node, const RandomReplay& random) {
  ir::OpAttrs attrs(node.op()->attrs, node.attrs());
  for (const AttrField& f : node.op()->attrs->fields(attrs.mutable_get())) {
    auto* v = std::get_if<int64_t*>(&f.ref);
    if (v == nullptr) continue;
    if (std::string_view(f.name) == "seed") **v = random.seed;
    if (std::string_view(f.name) == "offset") **v += random.offset_shift;
  }
  return attrs;
}

std::vector<Tensor> run_node(const ir::Node& node, const std::vector<Tensor>& args,
                             const RandomReplay* random) {
  switch (node.kind()) {
    case ir::NodeKind::Constant:
      return {node.constant().value};
    case ir::NodeKind::Op:
      if (random != nullptr && node.op()->has(kRandom)) {
        ir::OpAttrs attrs = replayed_attrs(node, *random);
        return call_op(*node.op(), args, attrs.get());
      }
      return call_op(*node.op(), args, node.attrs());
    case ir::NodeKind::FusionGroup:
      return interpret(*node.fusion_group().subgraph, args, random);
    case ir::NodeKind::Fallback:
      KILN_CHECK(static_cast<bool>(node.fallback().fn),
                 "prim.fallback '{}' has no callable (parsed from text?); only a traced graph "
                 "can run its fallbacks",
                 node.fallback().name);
      return node.fallback().fn(args);
    case ir::NodeKind::Param:
      break;
  }
  KILN_ERROR("interpret: unexpected node kind {}", node.kind_name());
}

}  // namespace

std::vector<Tensor> interpret(const ir::Graph& g, const std::vector<Tensor>& inputs,
                              const RandomReplay* random) {
  check_inputs(g, inputs);
  std::vector<ir::Node*> nodes = g.nodes();
  // Slots: one per value. last_use[slot] is the index of the last node reading it, after which
  // the slot is cleared so that the tensor can be freed.
  std::unordered_map<const ir::Value*, size_t> slot;
  std::vector<size_t> last_use;
  for (const ir::Node* node : nodes) {
    for (const ir::Value* v : node->outputs()) {
      slot.emplace(v, last_use.size());
      last_use.push_back(0);
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (const ir::Value* v : nodes[n]->inputs()) {
      auto it = slot.find(v);
      KILN_CHECK(it != slot.end(), "interpret: {} reads a value defined outside the graph",
                 nodes[n]->kind_name());
      if (last_use[it->second] != kKeep) last_use[it->second] = n;
    }
  }
  for (const ir::Value* v : g.outputs())
    last_use.at(slot.at(v)) = kKeep;

  std::vector<Tensor> env(last_use.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    env[slot.at(g.input(i))] = inputs[i];

  std::vector<Tensor> args;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const ir::Node& node = *nodes[n];
    if (node.kind() == ir::NodeKind::Param) continue;
    args.clear();
    for (const ir::Value* v : node.inputs()) {
      const Tensor& t = env[slot.at(v)];
      KILN_CHECK(t.defined(), "interpret: {} reads a value before the node that defines it",
                 describe(g, node));
      args.push_back(t);
    }
    std::vector<Tensor> results;
    try {
      results = run_node(node, args, random);
    } catch (const Error& e) {
      KILN_ERROR("{}\n  while interpreting {}", e.what(), describe(g, node));
    }
    KILN_CHECK(results.size() == node.num_outputs(),
               "interpret: {} returned {} tensors for {} outputs", describe(g, node),
               results.size(), node.num_outputs());
    for (size_t i = 0; i < results.size(); ++i)
      env[slot.at(node.output(i))] = std::move(results[i]);
    for (const ir::Value* v : node.inputs()) {
      size_t s = slot.at(v);
      if (last_use[s] == n) env[s] = Tensor();
    }
    // Outputs nobody reads are released at once.
    for (const ir::Value* v : node.outputs()) {
      if (!v->has_uses()) env[slot.at(v)] = Tensor();
    }
  }
  std::vector<Tensor> outputs;
  outputs.reserve(g.outputs().size());
  for (const ir::Value* v : g.outputs())
    outputs.push_back(env[slot.at(v)]);
  return outputs;
}

}  // namespace kiln
