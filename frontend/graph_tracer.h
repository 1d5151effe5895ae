// GraphTracer: the TracingState that trace() installs. It builds an ir::Graph from the calls the
// Tracer key sees (frontend/functionalize.cpp) and remembers which Value each live tensor holds.
// Internal to the frontend: users call kiln::trace (frontend/tracer.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/runtime/autograd/copy_slices.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {

// Note [Tensor to Value map]
// The tracer maps a tensor to the Value it holds by the tensor's view identity: its storage,
// offset, sizes, strides and dtype. Two handles with the same identity read the same elements,
// and autograd makes such handles all the time (a saved output is a detach()ed alias, a new
// TensorImpl on the same storage), so keying by TensorImpl* would turn them into constants.
// Each entry holds a weak reference to the storage: the tracer must not keep tensors alive
// (autograd's in-place checks and in-place gradient accumulation look at use counts), and an
// expired entry can never be confused with a new storage at the same address. Each entry also
// records the storage's version counter when the mapping was made. Ops that write in place are
// recorded functionally (their out-of-place twin) and update the written tensor's entry; a
// tensor whose version moved without its entry being updated was written through another alias
// (a view of it, or its base), which the graph cannot express, so reading it throws.
class GraphTracer final : public TracingState {
 public:
  GraphTracer();

  const std::shared_ptr<ir::Graph>& graph() const { return graph_; }

  // A graph input for `t`, named `name`. Its dims d with dynamic_dims[d] (none when empty) of
  // size 2 or more are symbols (Note [Symbolic tracing]): dims of equal size share one (duck
  // sizing). A non-contiguous input stays integer-typed.
  ir::Value* add_input(const Tensor& t, std::string name,
                       const std::vector<bool>& dynamic_dims = {});
  // A graph input for `t` with the sizes (symbols included) of `like`'s Value: the incoming
  // gradient of a traced output, which has that output's sizes at every call.
  ir::Value* add_input_like(const Tensor& t, std::string name, const Tensor& like);

  // Note [Symbolic tracing]
  // With symbolic inputs, each recorded op's output type is computed again with the op's rule
  // over symbols (OpDef::sym_shape) from its inputs' symbolic types, and checked against the
  // eager result at the hints. The trace specializes a symbol (it becomes its traced value in
  // the finished graph) when:
  // - an op has no rule over symbols, its rule refuses the symbolic inputs, its result at the
  //   hints differs from eager's, or it draws random numbers (the generator advances by their
  //   count): the op's inputs' symbols;
  // - the traced code reads a size as an integer (Note [Size reads while tracing]): the
  //   symbols of that size;
  // - an opaque fallback: the symbols of its inputs and outputs (their sizes are read, not
  //   derived);
  // - autograd runs a backward pass: every symbol, because autograd saves integer sizes.
  // finish_symbols() then writes the graph with the specialized symbols replaced. A symbol
  // that survives was never read, so the graph computes the same at any value of it.
  bool symbolic() const { return !hints_.empty(); }
  // Replaces the specialized symbols in the graph and renumbers the rest; call once, after the
  // traced function returned and the outputs were added. Returns each trace symbol's new
  // number, -1 for a specialized one (ir::specialize_symbols); empty without symbols.
  std::vector<int64_t> finish_symbols();
  // Specializes every symbol, for `why`.
  void specialize_everything(std::string_view why);
  // (input index, dim, symbol) of each input dim that became a symbol, in the trace's numbering.
  struct InputSymbol {
    size_t input;
    size_t dim;
    int64_t symbol;
  };
  const std::vector<InputSymbol>& input_symbols() const { return input_symbols_; }
  int64_t hint(int64_t symbol) const { return hints_.at(static_cast<size_t>(symbol)); }
  // Why trace symbol `symbol` was specialized; empty while it is a symbol.
  const std::string& specialization(int64_t symbol) const {
    return why_.at(static_cast<size_t>(symbol));
  }
  // "s0 = 8: a size read as an integer at model.cpp:12 in forward" for each specialized symbol,
  // in the trace's numbering; for logs and tests.
  std::vector<std::string> specializations() const;
  void on_size_read(const Tensor& t, int64_t dim) override;
  std::optional<SymShape> symbolic_sizes(const Tensor& t) override;
  SymShape resolve_symbols(const SymShape& sizes) override { return resolved(sizes); }
  void on_sym_sizes_read(std::span<const SymInt> sizes, std::string_view what) override;
  int64_t symbolic_size_value(const SymInt& s) override;
  bool decide_fact(const SymFact& fact) override;
  // Note [Symbolic saved sizes]: autograd recorded the outputs' metadata before the tracer knew
  // their Values; this adds their sizes over symbols.
  // With `op` and its attributes over symbols (`sym_attrs`, null when they hold none), also
  // hands those to the outputs' backward nodes (OpBackward::set_symbolic_attrs).
  void add_saved_symbolic_sizes(std::span<const Tensor> outputs, const OpDef* op = nullptr,
                                const void* sym_attrs = nullptr);
  // Note [Lifted tensors]
  // From now on, a tensor from outside the traced function becomes a new graph input (named p0,
  // p1, ...) appended to `*lifted`, instead of a constant: compile reads such tensors (model
  // parameters, buffers, masks, optimizer state) anew on every call, differentiates with
  // respect to those that require grad, and writes the function's in-place writes back into
  // them. Only tensors the function made itself from host data (from_vector) stay constants
  // (add_constant). The trace runs on the real tensors, so before the first in-place write to a
  // lifted tensor's storage its value is saved; restore_lifted() puts those values back.
  // After the forward trace (stop_lifting_constants), a tensor first read by the backward is a
  // constant again unless it requires grad: lifting it then would add an input after the
  // tangents, which the partition does not expect.
  void lift_outside_tensors(std::vector<Tensor>* lifted) { lifted_ = lifted; }
  void stop_lifting_constants() { lift_all_ = false; }
  // The version each lifted tensor had when it was lifted, in lifted order.
  const std::vector<uint32_t>& lifted_versions() const { return lifted_versions_; }
  void restore_lifted();
  // A prim.constant holding a copy of `t`, now `t`'s Value: for a tensor the traced function
  // built from host data.
  ir::Value* add_constant(const Tensor& t);
  void on_host_tensor(const Tensor& t) override { add_constant(t); }
  // TracingState::records_graph_breaks.
  void set_records_graph_breaks(bool on) { graph_breaks_ = on; }
  bool records_graph_breaks() const override { return graph_breaks_; }
  // TracingState::decomposes_fused_backwards.
  void set_decomposes_fused_backwards(bool on) { decompose_ = on; }
  bool decomposes_fused_backwards() const override { return decompose_; }
  // The Value `t` holds: its entry, or a new prim.constant with a copy of its data.
  ir::Value* value_of(const Tensor& t);
  // The entry's Value when `t` has a current one, else null (and no constant is made).
  ir::Value* find_value(const Tensor& t);
  // True when `t`'s storage version differs from the one its entry recorded.
  bool is_stale(const Tensor& t) const;

  std::vector<Tensor> record_op(const OpDef& op, std::span<const Tensor> inputs,
                                const void* attrs) override;
  std::vector<Tensor> record_fallback(const std::string& name, OpaqueFn fn,
                                      const std::vector<Tensor>& inputs) override;
  void note_same_value(const Tensor& copy, const Tensor& source) override;

 private:
  struct Key {
    const StorageImpl* storage;
    int64_t offset;
    Shape sizes;
    Shape strides;
    DType dtype;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Entry {
    std::weak_ptr<StorageImpl> storage;
    ir::Value* value = nullptr;
    uint32_t version = 0;
  };

  static Key key_of(const Tensor& t);
  void set_value(const Tensor& t, ir::Value* v);
  const Entry* live_entry(const Tensor& t) const;
  void prune_expired();

  // Note [Writes through views] (view_writes.cpp): an in-place op on a recorded view gives the
  // view's base a new Value too, and a view read after its storage changed is replayed from
  // its base's current Value.
  struct ViewWrite {
    autograd::ViewChain chain;
    ir::Value* base_before = nullptr;
  };
  std::optional<ViewWrite> begin_view_write(const Tensor& self);
  void finish_view_write(const ViewWrite& write, const Tensor& self);
  ir::Value* replay_view(const Tensor& t);

  // In-place ops (functionalize.cpp): the Value of self after `op`, built from out-of-place ops.
  ir::Value* functionalize(const OpDef& op, std::span<const Tensor> inputs, const void* attrs,
                           std::span<ir::Value* const> values, const std::string& site);
  ir::Value* add_node(const OpDef& op, std::span<ir::Value* const> inputs, const void* attrs,
                      ir::TensorType type, const std::string& site);

  // Note [Symbolic tracing]: s<k> -> its hint where specialized (and for k in `also`), else s<k>.
  std::vector<SymInt> replacement(std::span<const int64_t> also = {}) const;
  // `sizes` with the specialized symbols replaced by their hints.
  SymShape resolved(const SymShape& sizes) const;
  bool same_addressing(const SymShape& strides, const ir::TensorType& eager) const;
  bool is_fixed(int64_t symbol) const { return !why_[static_cast<size_t>(symbol)].empty(); }
  // Specializes `symbol` for `why` (non-empty), unless it already is.
  void fix(int64_t symbol, std::string why);
  // Marks every symbol of `t` specialized, for `why`.
  void specialize(const ir::TensorType& t, std::string_view why);
  void specialize_all(std::span<ir::Value* const> values, std::string_view why);
  // Gives `types` (the outputs of `op` on `values`, from eager) their symbolic sizes, or
  // specializes the inputs' symbols when the rule over symbols cannot.
  void attach_symbols(const OpDef& op, std::span<ir::Value* const> values, const void* attrs,
                      std::vector<ir::TensorType>& types);

  std::vector<int64_t> hints_;  // s<k>'s traced value
  std::vector<SymFact> facts_;  // what the rules assumed (Note [Assumed size facts])
  // Why s<k> was specialized ("a size read as an integer at model.cpp:12 in forward"); empty
  // while it is a symbol.
  std::vector<std::string> why_;
  std::unordered_map<int64_t, int64_t> duck_;  // a traced size -> its symbol
  std::vector<InputSymbol> input_symbols_;
  int internal_ = 0;  // > 0 while the tracer itself runs: its size reads are not the user's
  struct InternalScope {
    explicit InternalScope(int& depth) : depth_(depth) { ++depth_; }
    ~InternalScope() { --depth_; }
    InternalScope(const InternalScope&) = delete;
    InternalScope& operator=(const InternalScope&) = delete;
    int& depth_;
  };

  std::shared_ptr<ir::Graph> graph_;
  std::unordered_map<Key, Entry, KeyHash> map_;
  size_t prune_at_ = 1024;
  // Saves the value of every lifted tensor on `written`'s storage that has no snapshot yet.
  void snapshot_lifted_on(const Tensor& written);

  std::vector<Tensor>* lifted_ = nullptr;
  bool lift_all_ = true;
  std::vector<uint32_t> lifted_versions_;
  std::vector<Tensor> lifted_snapshots_;  // a lifted tensor's value before its first write
  bool graph_breaks_ = false;
  bool decompose_ = false;
};

}  // namespace kiln
