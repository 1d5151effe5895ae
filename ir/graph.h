// The graph IR: a Graph owns its Nodes in topological order; each Node defines Values, and each
// Value records its uses. Node kinds are the op table's ops plus a few prims (parameters,
// constants, fusion groups, fallbacks). An op node's attributes are the op's own typed struct
// (runtime/attrs.h), so the IR, the dispatcher and the kernels read the same fields.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/ir/type.h"
#include "kiln/runtime/op_def.h"
#include "kiln/runtime/tensor.h"

namespace kiln::kir {
struct Kernel;
}
namespace kiln::codegen {
class CompiledKernel;
}

namespace kiln::ir {

class Graph;
class Node;

// A use of a Value: input `index` of `user`, or, with a null user, graph output `index`.
struct Use {
  Node* user = nullptr;
  size_t index = 0;
  friend bool operator==(const Use&, const Use&) = default;
};

class Value {
 public:
  Value(Node* node, size_t offset, TensorType type)
      : node_(node), offset_(offset), type_(std::move(type)) {}
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  Node* node() const { return node_; }
  size_t offset() const { return offset_; }  // which output of node()
  const TensorType& type() const { return type_; }
  void set_type(TensorType t) { type_ = std::move(t); }
  const std::vector<Use>& uses() const { return uses_; }
  bool has_uses() const { return !uses_.empty(); }
  // A name for humans (graph inputs keep theirs in the text format).
  const std::string& debug_name() const { return debug_name_; }
  void set_debug_name(std::string n) { debug_name_ = std::move(n); }

  // Points every use (node inputs and graph outputs) at `v` instead.
  void replace_all_uses_with(Value* v);
  // Points the uses by nodes at `v`, leaving graph outputs on this value (a rewrite must not
  // hand the graph's caller an input, a constant or another output in place of a fresh tensor).
  // Returns how many uses moved.
  size_t replace_node_uses_with(Value* v);

 private:
  friend class Node;
  friend class Graph;
  void remove_use(const Use& use);
  Node* node_;
  size_t offset_;
  TensorType type_;
  std::vector<Use> uses_;
  std::string debug_name_;
};

enum class NodeKind : uint8_t {
  Param,        // a graph input
  Constant,     // a tensor captured from outside the traced function
  Op,           // an entry of the op table
  FusionGroup,  // a subgraph that codegen turns into one kernel
  Fallback,     // an opaque call into eager code (a graph break, a non-traceable autograd Node)
};
std::string_view node_kind_name(NodeKind k);  // "prim.param", ... ("op" for Op)

// Owns one op's attribute struct through the op table's vtable.
class OpAttrs {
 public:
  OpAttrs() = default;
  OpAttrs(const AttrVTable* vt, const void* attrs);         // copies *attrs
  static OpAttrs adopt(const AttrVTable* vt, void* attrs);  // takes ownership
  OpAttrs(const OpAttrs& o);
  OpAttrs& operator=(const OpAttrs& o);
  OpAttrs(OpAttrs&& o) noexcept;
  OpAttrs& operator=(OpAttrs&& o) noexcept;
  ~OpAttrs();
  const void* get() const { return ptr_; }
  void* mutable_get() { return ptr_; }
  const AttrVTable* vtable() const { return vt_; }

 private:
  const AttrVTable* vt_ = nullptr;
  void* ptr_ = nullptr;
};

// Payloads of the prim kinds: one struct per kind, like the op attributes.
struct ParamAttrs {
  size_t index = 0;  // position in Graph::inputs()
};
struct ConstantAttrs {
  Tensor value;  // owned by the graph; never written
};
struct FusionGroupAttrs {
  std::shared_ptr<Graph> subgraph;  // its inputs bind to the node's inputs, in order
  // The subgraph lowered to one kernel (passes/lower_fusion_group.h); null until lowered, and
  // for groups read back from text. Arguments: the node's inputs, then its outputs.
  std::shared_ptr<const kir::Kernel> kernel;
  // Over symbolic sizes: what each of the kernel's size parameters is, in launch order, as an
  // expression of the graph's symbols (a symbol, or s0*s1 for a loop over a product); the
  // launcher evaluates them at each call's symbols (Note [Size parameters]).
  std::vector<SymInt> size_args;
  // That kernel compiled to machine code (codegen/compiled_kernel.h), or null: the kernel-IR
  // interpreter runs it (Backend::Interpreter, or a compile that failed and fell back).
  std::shared_ptr<const codegen::CompiledKernel> compiled;
};
using FallbackFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
struct FallbackAttrs {
  std::string name;  // the autograd Node's or eager function's name
  // Runs the opaque code. Empty for a fallback read back from text: such a graph prints and
  // verifies, but the interpreter refuses to run it.
  FallbackFn fn;
};

class Node {
 public:
  Node(Graph* graph, NodeKind kind, const OpDef* op) : graph_(graph), kind_(kind), op_(op) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  Graph* owning_graph() const { return graph_; }
  NodeKind kind() const { return kind_; }
  const OpDef* op() const { return op_; }  // the op-table entry of an Op node, else null
  bool is_op(std::string_view name) const { return op_ != nullptr && op_->name == name; }
  std::string kind_name() const;  // the op's name, or "prim.constant", ...

  std::span<Value* const> inputs() const { return inputs_; }
  Value* input(size_t i) const { return inputs_.at(i); }
  size_t num_inputs() const { return inputs_.size(); }
  void add_input(Value* v);
  void replace_input(size_t i, Value* v);
  void remove_all_inputs();

  size_t num_outputs() const { return outputs_.size(); }
  Value* output(size_t i = 0) const { return outputs_.at(i).get(); }
  std::vector<Value*> outputs() const;
  Value* add_output(TensorType type);

  // Op nodes: the op's attribute struct.
  const void* attrs() const { return op_attrs_.get(); }
  template <class A>
  const A& attrs_as() const {
    return *static_cast<const A*>(op_attrs_.get());
  }
  void set_attrs(OpAttrs a) { op_attrs_ = std::move(a); }

  ParamAttrs& param() { return param_; }
  const ParamAttrs& param() const { return param_; }
  ConstantAttrs& constant() { return constant_; }
  const ConstantAttrs& constant() const { return constant_; }
  FusionGroupAttrs& fusion_group() { return fusion_group_; }
  const FusionGroupAttrs& fusion_group() const { return fusion_group_; }
  FallbackAttrs& fallback() { return fallback_; }
  const FallbackAttrs& fallback() const { return fallback_; }

  // The user's call site ("model.cpp:12 in forward"), printed as a trailing comment.
  const std::string& call_site() const { return call_site_; }
  void set_call_site(std::string s) { call_site_ = std::move(s); }

 private:
  friend class Graph;
  Graph* graph_;
  NodeKind kind_;
  const OpDef* op_;
  std::vector<Value*> inputs_;
  std::vector<std::unique_ptr<Value>> outputs_;
  OpAttrs op_attrs_;
  ParamAttrs param_;
  ConstantAttrs constant_;
  FusionGroupAttrs fusion_group_;
  FallbackAttrs fallback_;
  std::string call_site_;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  // ---- inputs and outputs ----
  Value* add_input(TensorType type, std::string name = "");
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(size_t i) const { return inputs_.at(i); }
  void add_output(Value* v);
  void set_output(size_t i, Value* v);
  void remove_output(size_t i);
  const std::vector<Value*>& outputs() const { return outputs_; }

  // ---- nodes, in topological order; param nodes come first ----
  std::vector<Node*> nodes() const;
  size_t num_nodes() const { return nodes_.size(); }

  // Creation appends at the insert point (the end unless set_insert_point moved it).
  // `attrs` is the op's attribute struct and is copied.
  Node* create_op(const OpDef& op, std::span<Value* const> inputs, const void* attrs,
                  std::span<const TensorType> output_types);
  Node* create_constant(Tensor value);
  Node* create_fusion_group(std::span<Value* const> inputs, std::shared_ptr<Graph> subgraph,
                            std::span<const TensorType> output_types);
  Node* create_fallback(std::string name, FallbackFn fn, std::span<Value* const> inputs,
                        std::span<const TensorType> output_types);
  // A copy of `node` (of any graph) reading `inputs`: same kind, op, attributes, payload, output
  // types and call site. Fusion-group subgraphs are cloned.
  Node* create_copy(const Node& node, std::span<Value* const> inputs);
  // New nodes go right before `node` (null: at the end).
  void set_insert_point(Node* before) { insert_before_ = before; }
  Node* insert_point() const { return insert_before_; }
  // Moves `node` to just before `before` (null: to the end). The caller keeps the order
  // topological.
  void move_before(Node* node, Node* before);

  // Removes a node whose outputs have no uses; throws kiln::Error otherwise.
  void erase(Node* node);

  // A deep copy: same nodes, types, attributes and payloads (constants share their tensor).
  std::shared_ptr<Graph> clone() const;

  std::string str() const;  // the text format (ir/printer.h)

  // ---- symbolic sizes (Note [Symbolic types]) ----
  // Symbol s<k>'s value in the call the graph was traced from: hints[k]. Empty for a graph
  // whose sizes are all integers.
  const std::vector<int64_t>& symbol_hints() const { return symbol_hints_; }
  void set_symbol_hints(std::vector<int64_t> hints) { symbol_hints_ = std::move(hints); }
  // What the shape rules assumed about the symbols' values beyond binding them (Note [Assumed
  // size facts], runtime/sym_assumptions.h): `s0 >= 4` for `x[:4]`. Each holds at the hints; a
  // call whose sizes break one does not fit the graph (bind_symbols).
  const std::vector<SymFact>& symbol_facts() const { return symbol_facts_; }
  void set_symbol_facts(std::vector<SymFact> facts) { symbol_facts_ = std::move(facts); }
  // The hints and facts of `other`, whose symbols this graph shares (a fusion group's subgraph,
  // a partition of a joint graph).
  void set_symbols_from(const Graph& other) {
    symbol_hints_ = other.symbol_hints_;
    symbol_facts_ = other.symbol_facts_;
  }
  // Whether any input or node output has a symbolic type.
  bool has_symbolic_types() const;

 private:
  Node* append(std::unique_ptr<Node> node);
  size_t index_of(const Node* node) const;

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  Node* insert_before_ = nullptr;
  std::vector<int64_t> symbol_hints_;
  std::vector<SymFact> symbol_facts_;
};

}  // namespace kiln::ir
