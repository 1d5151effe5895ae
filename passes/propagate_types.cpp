#include "kiln/passes/propagate_types.h"

#include "kiln/base/error.h"
#include "kiln/ir/printer.h"

namespace kiln::passes {
namespace {

std::string type_list(std::span<const ir::TensorType> types) {
  std::string s;
  for (const ir::TensorType& t : types) {
    if (!s.empty()) s += ", ";
    s += t.str();
  }
  return s;
}

bool set_type(ir::Value* v, const ir::TensorType& t) {
  if (v->type() == t) return false;
  v->set_type(t);
  return true;
}

bool propagate_op(ir::Node* n, const ir::ValueNames& names) {
  std::vector<ir::TensorType> inputs;
  for (const ir::Value* v : n->inputs())
    inputs.push_back(v->type());
  std::vector<ir::TensorType> outputs;
  try {
    outputs = infer_op_types(*n->op(), inputs, n->attrs());
  } catch (const Error& e) {
    KILN_ERROR("propagate_types: {}: the op's rules reject the input types ({}): {}",
               ir::describe_node(*n, names), type_list(inputs), e.what());
  }
  KILN_CHECK(outputs.size() == n->num_outputs(),
             "propagate_types: {}: {} has {} output(s), the node {}", ir::describe_node(*n, names),
             n->op()->name, outputs.size(), n->num_outputs());
  bool changed = false;
  for (size_t i = 0; i < outputs.size(); ++i)
    changed = set_type(n->output(i), outputs[i]) || changed;
  return changed;
}

bool propagate_fusion_group(ir::Node* n) {
  ir::Graph* sub = n->fusion_group().subgraph.get();
  if (sub == nullptr || sub->inputs().size() != n->num_inputs() ||
      sub->outputs().size() != n->num_outputs()) {
    return false;  // malformed; the verifier says what is wrong with it
  }
  bool changed = false;
  for (size_t i = 0; i < n->num_inputs(); ++i)
    changed = set_type(sub->input(i), n->input(i)->type()) || changed;
  changed = propagate_types(*sub) || changed;
  for (size_t i = 0; i < n->num_outputs(); ++i)
    changed = set_type(n->output(i), sub->outputs()[i]->type()) || changed;
  return changed;
}

}  // namespace

std::vector<ir::TensorType> infer_op_types(const OpDef& op, std::span<const ir::TensorType> inputs,
                                           const void* attrs) {
  // The rules see each input with explicit strides and offset 0: the IR does not track storage
  // offsets, and no rule's sizes, strides or dtype depend on them.
  std::vector<Shape> strides(inputs.size());
  std::vector<MetaRef> metas(inputs.size());
  bool any_requires_grad = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorType& t = inputs[i];
    strides[i] = t.effective_strides();
    metas[i] = MetaRef{t.sizes, strides[i], 0, t.dtype, t.device};
    any_requires_grad = any_requires_grad || t.requires_grad;
    KILN_CHECK(t.device == inputs[0].device, "{}: input {} is on {} but input 0 is on {}", op.name,
               i, t.device, inputs[0].device);
  }
  KILN_CHECK(op.shape != nullptr && op.dtype != nullptr, "{}: the op has no shape or dtype rule",
             op.name);
  KILN_CHECK(!inputs.empty() || op.attr_device != nullptr,
             "{}: the op takes no tensor inputs and its attributes name no device", op.name);
  std::vector<OutputGeometry> geoms = op.shape(op, metas, attrs);
  Device device = inputs.empty() ? op.attr_device(attrs) : inputs[0].device;
  bool differentiable = !op.has(kNonDifferentiable);
  std::vector<ir::TensorType> out(geoms.size());
  for (size_t i = 0; i < geoms.size(); ++i) {
    ir::TensorType& t = out[i];
    t.dtype = op.dtype(op, metas, attrs, i);
    t.device = device;
    t.sizes = std::move(geoms[i].sizes);
    if (op.has(kView)) {
      if (!strides_are_contiguous(t.sizes, geoms[i].strides)) t.strides = geoms[i].strides;
    } else if (op.has(kInPlace) && i == 0) {
      t.strides = inputs[0].strides;
    }
    bool in_place_self = op.has(kInPlace) && i == 0 && inputs[0].requires_grad;
    t.requires_grad =
        in_place_self || (differentiable && any_requires_grad && is_floating(t.dtype));
  }
  return out;
}

bool propagate_types(ir::Graph& graph) {
  ir::ValueNames names = ir::value_names(graph);
  bool changed = false;
  for (ir::Node* n : graph.nodes()) {
    switch (n->kind()) {
      case ir::NodeKind::Param:
      case ir::NodeKind::Fallback:
        break;
      case ir::NodeKind::Constant:
        if (n->constant().value.defined()) {
          ir::TensorType t = ir::TensorType::of(n->constant().value);
          t.requires_grad = false;
          changed = set_type(n->output(), t) || changed;
        }
        break;
      case ir::NodeKind::Op:
        changed = propagate_op(n, names) || changed;
        break;
      case ir::NodeKind::FusionGroup:
        changed = propagate_fusion_group(n) || changed;
        break;
    }
  }
  return changed;
}

}  // namespace kiln::passes
