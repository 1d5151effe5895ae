#include "kiln/runtime/autograd/node.h"

#include <atomic>
#include <cctype>
#include <typeinfo>

#include "kiln/base/call_site.h"
#include "kiln/base/error.h"
#include "kiln/runtime/autograd/anomaly_mode.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln::autograd {
namespace {

thread_local uint64_t t_sequence_nr = 0;

uint64_t this_thread_id() {
  static std::atomic<uint64_t> next{0};
  thread_local uint64_t id = next.fetch_add(1);
  return id;
}

}  // namespace

uint64_t peek_sequence_nr() {
  return t_sequence_nr;
}

namespace {
std::atomic<int64_t> g_live_nodes{0};
}  // namespace

int64_t Node::live_count() {
  return g_live_nodes.load(std::memory_order_relaxed);
}

Node::Node(uint64_t sequence_nr, edge_list&& next_edges)
    : sequence_nr_(sequence_nr), thread_id_(this_thread_id()), next_edges_(std::move(next_edges)) {
  g_live_nodes.fetch_add(1, std::memory_order_relaxed);
  for (const Edge& e : next_edges_)
    update_topological_nr(e);
  if (AnomalyMode::is_enabled()) {
    metadata()->call_site = current_call_site().str();
  }
}

Node::Node(edge_list&& next_edges) : Node(t_sequence_nr++, std::move(next_edges)) {}

Node::~Node() {
  g_live_nodes.fetch_sub(1, std::memory_order_relaxed);
}

void delete_node(Node* node) noexcept {
  // A pointer to the outermost call's queue, not a thread_local vector: a trivially destructible
  // thread_local stays usable for Nodes freed while the thread's other thread_locals go away.
  thread_local std::vector<Node*>* pending = nullptr;
  if (pending != nullptr) {
    pending->push_back(node);
    return;
  }
  std::vector<Node*> queue;
  pending = &queue;
  delete node;
  while (!queue.empty()) {
    Node* next = queue.back();
    queue.pop_back();
    delete next;
  }
  pending = nullptr;
}

variable_list Node::operator()(variable_list&& inputs) {
  return apply(std::move(inputs));
}

std::string Node::name() const {
  return typeid(*this).name();
}

uint32_t Node::add_input_metadata(const Tensor& t) {
  input_metadata_.emplace_back(t);
  return num_inputs() - 1;
}
uint32_t Node::add_input_metadata(InputMetadata m) {
  input_metadata_.push_back(std::move(m));
  return num_inputs() - 1;
}
uint32_t Node::add_undefined_input() {
  input_metadata_.emplace_back();
  return num_inputs() - 1;
}

void Node::update_topological_nr(const Edge& edge) {
  if (!edge.is_valid()) return;
  KILN_CHECK(!has_parent_.load(std::memory_order_relaxed),
             "{}: cannot add a next edge to a Node that is already part of a graph (its "
             "topological_nr is fixed)",
             name());
  Node* fn = edge.function.get();
  fn->assign_parent();
  if (fn->topological_nr_ + 1 > topological_nr_) topological_nr_ = fn->topological_nr_ + 1;
}

void Node::set_next_edge(size_t index, Edge edge) {
  update_topological_nr(edge);
  next_edges_.at(index) = std::move(edge);
}
void Node::add_next_edge(Edge edge) {
  update_topological_nr(edge);
  next_edges_.push_back(std::move(edge));
}
void Node::set_next_edges(edge_list&& next_edges) {
  next_edges_ = std::move(next_edges);
  for (const Edge& e : next_edges_)
    update_topological_nr(e);
}

bool Node::should_compute_output(std::initializer_list<IndexRange> idxs) const {
  for (const IndexRange& r : idxs)
    for (size_t i = r.first; i < r.second; ++i)
      if (should_compute_output(i)) return true;
  return false;
}

bool Node::task_should_compute_output(std::initializer_list<IndexRange> idxs) const {
  for (const IndexRange& r : idxs)
    for (size_t i = r.first; i < r.second; ++i)
      if (task_should_compute_output(i)) return true;
  return false;
}

AnomalyMetadata* Node::metadata() {
  if (!anomaly_metadata_) anomaly_metadata_ = std::make_unique<AnomalyMetadata>();
  return anomaly_metadata_.get();
}

uintptr_t Node::add_post_hook(std::unique_ptr<FunctionPostHook>&& hook) {
  auto key = reinterpret_cast<uintptr_t>(hook.get());
  post_hooks_.push_back(std::move(hook));
  return key;
}

bool Node::del_post_hook(const uintptr_t& key) {
  for (auto it = post_hooks_.begin(); it != post_hooks_.end(); ++it) {
    if (reinterpret_cast<uintptr_t>(it->get()) == key) {
      post_hooks_.erase(it);
      return true;
    }
  }
  return false;
}

void Node::add_pre_hook(std::unique_ptr<FunctionPreHook>&& hook) {
  pre_hooks_.push_back(std::move(hook));
}
void Node::add_tensor_pre_hook(std::unique_ptr<FunctionPreHook>&& hook) {
  tensor_pre_hooks_.push_back(std::move(hook));
}
void Node::add_retains_grad_hook(std::unique_ptr<FunctionPreHook>&& hook, size_t output_idx) {
  retains_grad_hooks_[output_idx] = std::move(hook);
}
std::unique_ptr<FunctionPreHook> Node::pop_retains_grad_hook(size_t output_idx) {
  auto it = retains_grad_hooks_.find(output_idx);
  if (it == retains_grad_hooks_.end()) return nullptr;
  std::unique_ptr<FunctionPreHook> hook = std::move(it->second);
  retains_grad_hooks_.erase(it);
  return hook;
}

edge_list collect_next_edges(std::span<const Tensor> inputs) {
  edge_list edges;
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs)
    edges.push_back(t.defined() ? gradient_edge(t) : Edge());
  return edges;
}

variable_list TensorHooksPreHook::operator()(const variable_list& grads) {
  variable_list out = grads;
  if (value_idx >= out.size()) return out;
  for (const auto& hook : list->hooks) {
    if (!hook || !out[value_idx].defined()) continue;
    Tensor replaced = hook(out[value_idx]);
    if (!replaced.defined()) continue;
    // As torch's check_single_result: a hook may change a gradient's values, never its
    // metadata, on a leaf (whose .grad it becomes) or a non-leaf alike.
    const Tensor& was = out[value_idx];
    KILN_CHECK(replaced.sizes() == was.sizes(),
               "register_hook: a hook has changed the size of value (was {} got {})",
               shape_str(was.sizes()), shape_str(replaced.sizes()));
    KILN_CHECK(replaced.dtype() == was.dtype(),
               "register_hook: a hook has changed the type of value (was {} got {})", was.dtype(),
               replaced.dtype());
    KILN_CHECK(replaced.device() == was.device(),
               "register_hook: a hook has changed the device of value (was {} got {})",
               was.device(), replaced.device());
    out[value_idx] = std::move(replaced);
  }
  return out;
}

std::string AnomalyMetadata::describe() const {
  std::string s =
      forward_op.empty() ? "an unnamed forward op" : "the forward op '" + forward_op + "'";
  if (!call_site.empty()) s += " called at " + call_site;
  return s;
}

}  // namespace kiln::autograd
