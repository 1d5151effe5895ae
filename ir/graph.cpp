#include "kiln/ir/graph.h"

#include <algorithm>
#include <unordered_map>

#include "kiln/base/error.h"
#include "kiln/runtime/dispatch_key.h"

namespace kiln::ir {

std::string_view node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Param:
      return "prim.param";
    case NodeKind::Constant:
      return "prim.constant";
    case NodeKind::Op:
      return "op";
    case NodeKind::FusionGroup:
      return "prim.fusion_group";
    case NodeKind::Fallback:
      return "prim.fallback";
  }
  return "?";
}

// ---- Value ----

void Value::replace_all_uses_with(Value* v) {
  if (v == this) return;
  std::vector<Use> uses = uses_;  // the loop edits uses_
  for (const Use& u : uses) {
    if (u.user != nullptr) {
      u.user->replace_input(u.index, v);
    } else {
      node_->owning_graph()->set_output(u.index, v);
    }
  }
}

size_t Value::replace_node_uses_with(Value* v) {
  if (v == this) return 0;
  std::vector<Use> uses = uses_;  // the loop edits uses_
  size_t moved = 0;
  for (const Use& u : uses) {
    if (u.user == nullptr) continue;
    u.user->replace_input(u.index, v);
    ++moved;
  }
  return moved;
}

void Value::remove_use(const Use& use) {
  auto it = std::find(uses_.begin(), uses_.end(), use);
  if (it != uses_.end()) uses_.erase(it);
}

// ---- OpAttrs ----

OpAttrs::OpAttrs(const AttrVTable* vt, const void* attrs)
    : vt_(vt), ptr_(vt != nullptr && attrs != nullptr ? vt->clone(attrs) : nullptr) {}
OpAttrs OpAttrs::adopt(const AttrVTable* vt, void* attrs) {
  OpAttrs a;
  a.vt_ = vt;
  a.ptr_ = attrs;
  return a;
}
OpAttrs::OpAttrs(const OpAttrs& o) : OpAttrs(o.vt_, o.ptr_) {}
OpAttrs& OpAttrs::operator=(const OpAttrs& o) {
  if (this != &o) *this = OpAttrs(o);
  return *this;
}
OpAttrs::OpAttrs(OpAttrs&& o) noexcept : vt_(o.vt_), ptr_(o.ptr_) {
  o.ptr_ = nullptr;
}
OpAttrs& OpAttrs::operator=(OpAttrs&& o) noexcept {
  if (this != &o) {
    if (ptr_ != nullptr) vt_->destroy(ptr_);
    vt_ = o.vt_;
    ptr_ = o.ptr_;
    o.ptr_ = nullptr;
  }
  return *this;
}
OpAttrs::~OpAttrs() {
  if (ptr_ != nullptr) vt_->destroy(ptr_);
}

// ---- Node ----

std::string Node::kind_name() const {
  return kind_ == NodeKind::Op ? op_->name : std::string(node_kind_name(kind_));
}

void Node::add_input(Value* v) {
  KILN_CHECK(v != nullptr, "ir: {} gets a null input", kind_name());
  inputs_.push_back(v);
  v->uses_.push_back(Use{this, inputs_.size() - 1});
}

void Node::replace_input(size_t i, Value* v) {
  KILN_CHECK(i < inputs_.size(), "ir: {} has {} inputs, cannot replace input {}", kind_name(),
             inputs_.size(), i);
  inputs_[i]->remove_use(Use{this, i});
  inputs_[i] = v;
  v->uses_.push_back(Use{this, i});
}

void Node::remove_all_inputs() {
  for (size_t i = 0; i < inputs_.size(); ++i)
    inputs_[i]->remove_use(Use{this, i});
  inputs_.clear();
}

std::vector<Value*> Node::outputs() const {
  std::vector<Value*> out;
  out.reserve(outputs_.size());
  for (const auto& v : outputs_)
    out.push_back(v.get());
  return out;
}

Value* Node::add_output(TensorType type) {
  outputs_.push_back(std::make_unique<Value>(this, outputs_.size(), std::move(type)));
  return outputs_.back().get();
}

// ---- Graph ----

Graph::~Graph() {
  // Values are owned by their nodes; drop uses first so no node refers to a freed value.
  for (auto& n : nodes_)
    n->inputs_.clear();
}

Value* Graph::add_input(TensorType type, std::string name) {
  auto node = std::make_unique<Node>(this, NodeKind::Param, nullptr);
  node->param_.index = inputs_.size();
  Value* v = node->add_output(std::move(type));
  v->set_debug_name(std::move(name));
  // Params stay in front of every other node, in input order.
  size_t pos = inputs_.size();
  nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(pos), std::move(node));
  inputs_.push_back(v);
  return v;
}

void Graph::add_output(Value* v) {
  outputs_.push_back(v);
  v->uses_.push_back(Use{nullptr, outputs_.size() - 1});
}

void Graph::set_output(size_t i, Value* v) {
  KILN_CHECK(i < outputs_.size(), "ir: the graph has {} outputs, cannot set output {}",
             outputs_.size(), i);
  outputs_[i]->remove_use(Use{nullptr, i});
  outputs_[i] = v;
  v->uses_.push_back(Use{nullptr, i});
}

void Graph::remove_output(size_t i) {
  KILN_CHECK(i < outputs_.size(), "ir: the graph has {} outputs, cannot remove output {}",
             outputs_.size(), i);
  for (size_t j = i; j < outputs_.size(); ++j)
    outputs_[j]->remove_use(Use{nullptr, j});
  outputs_.erase(outputs_.begin() + static_cast<std::ptrdiff_t>(i));
  for (size_t j = i; j < outputs_.size(); ++j)
    outputs_[j]->uses_.push_back(Use{nullptr, j});
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_)
    out.push_back(n.get());
  return out;
}

size_t Graph::index_of(const Node* node) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].get() == node) return i;
  KILN_ERROR("ir: node {} is not in this graph", node->kind_name());
}

Node* Graph::append(std::unique_ptr<Node> node) {
  Node* raw = node.get();
  if (insert_before_ == nullptr) {
    nodes_.push_back(std::move(node));
  } else {
    nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(index_of(insert_before_)),
                  std::move(node));
  }
  return raw;
}

Node* Graph::create_op(const OpDef& op, std::span<Value* const> inputs, const void* attrs,
                       std::span<const TensorType> output_types) {
  auto node = std::make_unique<Node>(this, NodeKind::Op, &op);
  for (Value* v : inputs)
    node->add_input(v);
  node->op_attrs_ = OpAttrs(op.attrs, attrs);
  for (const TensorType& t : output_types)
    node->add_output(t);
  return append(std::move(node));
}

Node* Graph::create_constant(Tensor value) {
  // A constant's type is always contiguous (ir/README.md: the text format lists its elements in
  // row-major order and has no strides for it). The copy is not part of any trace.
  if (!value.is_contiguous()) {
    ExcludeDispatchKeysGuard hidden(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
    value = value.contiguous();
  }
  auto node = std::make_unique<Node>(this, NodeKind::Constant, nullptr);
  node->add_output(TensorType::of(value));
  node->output()->type_.requires_grad = false;  // a constant is data, never a leaf of this graph
  node->constant_.value = std::move(value);
  return append(std::move(node));
}

Node* Graph::create_fusion_group(std::span<Value* const> inputs, std::shared_ptr<Graph> subgraph,
                                 std::span<const TensorType> output_types) {
  auto node = std::make_unique<Node>(this, NodeKind::FusionGroup, nullptr);
  for (Value* v : inputs)
    node->add_input(v);
  node->fusion_group_.subgraph = std::move(subgraph);
  for (const TensorType& t : output_types)
    node->add_output(t);
  return append(std::move(node));
}

Node* Graph::create_fallback(std::string name, FallbackFn fn, std::span<Value* const> inputs,
                             std::span<const TensorType> output_types) {
  auto node = std::make_unique<Node>(this, NodeKind::Fallback, nullptr);
  for (Value* v : inputs)
    node->add_input(v);
  node->fallback_.name = std::move(name);
  node->fallback_.fn = std::move(fn);
  for (const TensorType& t : output_types)
    node->add_output(t);
  return append(std::move(node));
}

Node* Graph::create_copy(const Node& n, std::span<Value* const> inputs) {
  KILN_CHECK(n.kind() != NodeKind::Param, "ir: graph inputs are added with add_input, not copied");
  KILN_CHECK(inputs.size() == n.num_inputs(), "ir: copying {} with {} inputs, given {}",
             n.kind_name(), n.num_inputs(), inputs.size());
  auto copy = std::make_unique<Node>(this, n.kind_, n.op_);
  for (Value* v : inputs)
    copy->add_input(v);
  for (const auto& out : n.outputs_)
    copy->add_output(out->type());
  copy->op_attrs_ = n.op_attrs_;
  copy->constant_ = n.constant_;
  if (n.fusion_group_.subgraph) copy->fusion_group_.subgraph = n.fusion_group_.subgraph->clone();
  copy->fusion_group_.kernel = n.fusion_group_.kernel;
  copy->fusion_group_.size_args = n.fusion_group_.size_args;
  copy->fusion_group_.compiled = n.fusion_group_.compiled;
  copy->fallback_ = n.fallback_;
  copy->call_site_ = n.call_site_;
  return append(std::move(copy));
}

void Graph::move_before(Node* node, Node* before) {
  KILN_CHECK(node != before, "ir: cannot move a node before itself");
  size_t from = index_of(node);
  std::unique_ptr<Node> owned = std::move(nodes_[from]);
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(from));
  if (before == nullptr) {
    nodes_.push_back(std::move(owned));
  } else {
    nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(index_of(before)), std::move(owned));
  }
}

void Graph::erase(Node* node) {
  KILN_CHECK(node->kind() != NodeKind::Param, "ir: cannot erase a graph input ({})",
             node->kind_name());
  for (const auto& out : node->outputs_) {
    KILN_CHECK(!out->has_uses(), "ir: cannot erase {}: output {} still has {} use(s)",
               node->kind_name(), out->offset(), out->uses().size());
  }
  if (insert_before_ == node) insert_before_ = nullptr;
  size_t i = index_of(node);
  node->remove_all_inputs();
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(i));
}

std::shared_ptr<Graph> Graph::clone() const {
  auto g = std::make_shared<Graph>();
  std::unordered_map<const Value*, Value*> map;
  for (const auto& n : nodes_) {
    if (n->kind() == NodeKind::Param) {
      Value* in = n->output();
      map[in] = g->add_input(in->type(), in->debug_name());
      continue;
    }
    std::vector<Value*> inputs;
    for (Value* v : n->inputs_)
      inputs.push_back(map.at(v));
    Node* copy = g->create_copy(*n, inputs);
    for (size_t i = 0; i < n->outputs_.size(); ++i) {
      copy->output(i)->set_debug_name(n->outputs_[i]->debug_name());
      map[n->outputs_[i].get()] = copy->output(i);
    }
  }
  for (Value* v : outputs_)
    g->add_output(map.at(v));
  g->symbol_hints_ = symbol_hints_;
  g->symbol_facts_ = symbol_facts_;
  return g;
}

bool Graph::has_symbolic_types() const {
  for (const auto& n : nodes_)
    for (const auto& v : n->outputs_)
      if (v->type().is_symbolic()) return true;
  return false;
}

}  // namespace kiln::ir
