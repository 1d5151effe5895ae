// Node: one function of the backward graph (seed 003, PyTorch's torch::autograd::Node). A Node
// receives the gradients of its forward op's outputs ("inputs" of the Node) and returns the
// gradients of the forward op's inputs ("outputs" of the Node), which flow along next_edges.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/runtime/autograd/edge.h"
#include "kiln/runtime/autograd/function_hook.h"
#include "kiln/runtime/autograd/input_metadata.h"
#include "kiln/runtime/pyobj_slot.h"

namespace kiln::autograd {

struct AnomalyMetadata;

// Note [Sequence number]
// Each thread numbers the Nodes it creates from a thread-local counter, so a Node created later
// has a higher sequence_nr. The engine runs ready Nodes highest sequence_nr first, which is
// reverse creation order; AccumulateGrad Nodes get UINT64_MAX so that .grad is written as soon as
// a leaf's gradient is complete. (sequence_nr, thread_id) identifies a Node for humans.
uint64_t peek_sequence_nr();

// Half-open range of output (next edge) indices, for should_compute_output over a group.
using IndexRange = std::pair<size_t, size_t>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(uint64_t sequence_nr, edge_list&& next_edges = edge_list());
  explicit Node(edge_list&& next_edges = edge_list());
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  virtual ~Node();

  std::shared_ptr<Node> getptr() { return shared_from_this(); }

  // Runs apply() (the engine adds hooks and validation around this).
  variable_list operator()(variable_list&& inputs);

  // ---- inputs: one per forward output ----
  uint32_t add_input_metadata(const Tensor& t);
  uint32_t add_input_metadata(InputMetadata m);
  uint32_t add_undefined_input();  // a forward output that gets no gradient (an index tensor)
  uint32_t num_inputs() const { return static_cast<uint32_t>(input_metadata_.size()); }
  const InputMetadata& input_metadata(size_t index) const { return input_metadata_.at(index); }
  // For the tracer, which adds the symbolic sizes (Note [Symbolic saved sizes]).
  InputMetadata& mutable_input_metadata(size_t index) { return input_metadata_.at(index); }
  void clear_input_metadata() { input_metadata_.clear(); }

  // ---- outputs: one next edge per forward input ----
  void set_next_edge(size_t index, Edge edge);
  void add_next_edge(Edge edge);
  void set_next_edges(edge_list&& next_edges);
  const Edge& next_edge(size_t index) const { return next_edges_.at(index); }
  const edge_list& next_edges() const { return next_edges_; }
  edge_list& next_edges() { return next_edges_; }
  uint32_t num_outputs() const { return static_cast<uint32_t>(next_edges_.size()); }

  uint64_t sequence_nr() const { return sequence_nr_; }
  void set_sequence_nr(uint64_t nr) { sequence_nr_ = nr; }
  // Note [Topological number]
  // 0 for a Node without next edges (AccumulateGrad); otherwise one more than the largest of
  // its next Nodes. A Node with a smaller topological_nr than X cannot reach X, which lets
  // grad() stop searching early. Adding an edge to a Node that already has a parent would
  // break this, so next edges are fixed once the Node is used as an edge target.
  uint64_t topological_nr() const { return topological_nr_; }
  void assign_parent() { has_parent_.store(true, std::memory_order_relaxed); }
  uint64_t thread_id() const { return thread_id_; }

  // "MulBackward", "AccumulateGrad", ...: the dynamic type, for messages and debugging.
  virtual std::string name() const;

  // During graph construction: does output `i` lead anywhere?
  bool should_compute_output(size_t i) const {
    return i < next_edges_.size() && next_edges_[i].is_valid();
  }
  bool should_compute_output(std::initializer_list<IndexRange> idxs) const;
  // During backward: does output `i` lead to a Node the current graph task executes? grad()
  // with a subset of inputs prunes the rest (Note [Graph task exec info] in engine.cpp).
  bool task_should_compute_output(size_t i) const;
  bool task_should_compute_output(std::initializer_list<IndexRange> idxs) const;

  // Anomaly mode: the forward op and call site that created this Node (created on demand).
  AnomalyMetadata* metadata();
  const AnomalyMetadata* metadata_if_present() const { return anomaly_metadata_.get(); }

  // ---- hooks; the engine calls them in this order around apply():
  // tensor pre hooks, retains-grad hooks, pre hooks, apply, post hooks.
  uintptr_t add_post_hook(std::unique_ptr<FunctionPostHook>&& hook);
  bool del_post_hook(const uintptr_t& key);
  const std::vector<std::unique_ptr<FunctionPostHook>>& post_hooks() const { return post_hooks_; }
  std::vector<std::unique_ptr<FunctionPostHook>>& post_hooks() { return post_hooks_; }
  void add_pre_hook(std::unique_ptr<FunctionPreHook>&& hook);
  const std::vector<std::unique_ptr<FunctionPreHook>>& pre_hooks() const { return pre_hooks_; }
  std::vector<std::unique_ptr<FunctionPreHook>>& pre_hooks() { return pre_hooks_; }
  void add_tensor_pre_hook(std::unique_ptr<FunctionPreHook>&& hook);
  virtual std::vector<std::unique_ptr<FunctionPreHook>>& tensor_pre_hooks() {
    return tensor_pre_hooks_;
  }
  void add_retains_grad_hook(std::unique_ptr<FunctionPreHook>&& hook, size_t output_idx);
  std::unique_ptr<FunctionPreHook> pop_retains_grad_hook(size_t output_idx);
  std::unordered_map<size_t, std::unique_ptr<FunctionPreHook>>& retains_grad_hooks() {
    return retains_grad_hooks_;
  }
  virtual std::unique_ptr<PostAccumulateGradHook>& tensor_post_acc_grad_hooks() {
    static std::unique_ptr<PostAccumulateGradHook> none;
    none.reset();
    return none;
  }

  // Frees saved tensors once the graph will not be run again (backward without retain_graph).
  virtual void release_variables() {}
  virtual void will_release_variables() {}
  // True when apply() only calls dispatcher ops on tensors, so the tracer can record it
  // (DESIGN.md principle 3). Opaque Nodes become fallback nodes in the traced graph.
  virtual bool is_traceable() { return false; }
  // True when the Node's state is only saved tensors plus non-tensor values that do not depend
  // on tensor data. Only consulted when is_traceable() is false.
  virtual bool passes_state_transparently() { return false; }

  // The Python object for this Node (a grad_fn): Note [Python object slot] in
  // runtime/pyobj_slot.h.
  PyObjectSlot& pyobj_slot() { return pyobj_slot_; }
  void* pyobj() const { return pyobj_slot_.get(); }
  // Nodes alive in the process, for leak tests (the Python package exposes it).
  static int64_t live_count();

  // Serializes apply() of Nodes that concurrent backward calls may share (AccumulateGrad).
  std::mutex& mutex() { return mutex_; }

 protected:
  virtual variable_list apply(variable_list&& inputs) = 0;
  void update_topological_nr(const Edge& edge);

  uint64_t sequence_nr_;
  uint64_t topological_nr_ = 0;
  // Atomic: threads building graphs over a shared leaf mark its AccumulateGrad at once
  // (ThreadSanitizer saw the race in scripts/tsan.sh). It is only ever set.
  std::atomic<bool> has_parent_{false};
  uint64_t thread_id_ = 0;
  std::mutex mutex_;
  edge_list next_edges_;
  std::unique_ptr<AnomalyMetadata> anomaly_metadata_;
  std::vector<std::unique_ptr<FunctionPreHook>> pre_hooks_;
  std::vector<std::unique_ptr<FunctionPreHook>> tensor_pre_hooks_;
  std::unordered_map<size_t, std::unique_ptr<FunctionPreHook>> retains_grad_hooks_;
  std::vector<std::unique_ptr<FunctionPostHook>> post_hooks_;
  std::vector<InputMetadata> input_metadata_;
  PyObjectSlot pyobj_slot_;
};

// Note [Iterative Node deletion]
// A backward graph is a chain of shared_ptr<Node>: each Node owns its next Nodes through its
// edges and through the saved tensors whose grad_fn they are. Destroying the head of a chain of
// a million Nodes by plain recursion overflows the stack. Nodes made by make_node are deleted by
// delete_node: a deletion that starts while another is in progress on the same thread is queued,
// and the outermost one drains the queue in a loop, so the stack depth stays constant. Every
// Node the library creates goes through make_node (as libtorch's deleteNode).
void delete_node(Node* node) noexcept;

template <class T, class... Args>
std::shared_ptr<T> make_node(Args&&... args) {
  return std::shared_ptr<T>(new T(std::forward<Args>(args)...), [](T* p) { delete_node(p); });
}

// The next edges for a forward op's inputs: each input's gradient edge (its grad_fn and
// output_nr, or the leaf's grad accumulator), or an invalid edge when it needs no gradient.
edge_list collect_next_edges(std::span<const Tensor> inputs);

}  // namespace kiln::autograd
