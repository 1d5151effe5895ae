#include "kiln/passes/constant_fold.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/base/error.h"
#include "kiln/ir/symbols.h"
#include "kiln/runtime/dispatcher.h"

namespace kiln::passes {
namespace {

int64_t type_bytes(const ir::TensorType& t) {
  return t.numel() * static_cast<int64_t>(element_size(t.dtype));
}

// Whether evaluating `n` once at compile time gives what every run would compute.
bool foldable_op(const ir::Node& n) {
  if (n.kind() != ir::NodeKind::Op) return false;
  const OpDef& op = *n.op();
  if (op.has(kRandom) || op.has(kInPlace) || op.has(kNonTraceable) || op.name == "empty") {
    return false;
  }
  if (n.num_inputs() == 0 && (op.attr_device == nullptr || !op.attr_device(n.attrs()).is_cpu())) {
    return false;
  }
  // A constant holds one call's values: nothing whose sizes are symbols (Note [Symbolic types]),
  // as a factory with a size attribute over symbols, can be one.
  if (ir::attrs_are_symbolic(op.attrs, n.attrs())) return false;
  for (const ir::Value* v : n.outputs()) {
    const ir::TensorType& t = v->type();
    if (t.is_symbolic() || !t.device.is_cpu() || t.requires_grad || type_bytes(t) > kMaxFoldedBytes)
      return false;
  }
  return true;
}

bool matches_type(const Tensor& t, const ir::TensorType& want) {
  return t.dtype() == want.dtype && t.device() == want.device && t.sizes() == want.sizes;
}

// The node's results, or nothing when the kernel rejects the inputs or disagrees with the IR's
// types (then the node stays, and so does the disagreement, for the verifier or the run to name).
std::optional<std::vector<Tensor>> evaluate(const ir::Node& n, const std::vector<Tensor>& args) {
  std::vector<Tensor> results;
  try {
    results = call_op(*n.op(), args, n.attrs());
  } catch (const Error&) {
    return std::nullopt;
  }
  if (results.size() != n.num_outputs()) return std::nullopt;
  for (size_t i = 0; i < results.size(); ++i)
    if (!matches_type(results[i], n.output(i)->type())) return std::nullopt;
  return results;
}

// The tensor a constant holds for `t`: a view shares its input's storage, and the constant gets
// its own compact copy so that it does not keep a larger buffer alive.
Tensor compact(const Tensor& t, bool is_view) {
  return is_view || !t.is_contiguous() || t.storage_offset() != 0 ? t.clone() : t;
}

// A graph output must be a fresh tensor on every call, as eager code returns one; a constant
// would be the same tensor each time, which the caller could modify.
bool returned(const ir::Value* v) {
  for (const ir::Use& u : v->uses())
    if (u.user == nullptr) return true;
  return false;
}

bool has_any_use(const ir::Node& n) {
  for (const ir::Value* v : n.outputs())
    if (v->has_uses()) return true;
  return false;
}

}  // namespace

bool fold_constants(ir::Graph& graph) {
  // Folding runs kernels; none of that belongs to a trace or to autograd history.
  ExcludeDispatchKeysGuard hidden(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));

  // Forward: evaluate what can be. Views are evaluated as views (with their real strides), so that
  // a later op reads exactly what it would read at run time.
  std::unordered_map<const ir::Value*, Tensor> known;
  std::vector<ir::Node*> evaluated;
  std::vector<Tensor> args;
  for (ir::Node* n : graph.nodes()) {
    if (n->kind() == ir::NodeKind::Constant) {
      const Tensor& t = n->constant().value;
      if (t.defined() && t.device().is_cpu()) known.emplace(n->output(), t);
      continue;
    }
    if (!foldable_op(*n) || !has_any_use(*n)) continue;
    args.clear();
    for (const ir::Value* v : n->inputs()) {
      auto it = known.find(v);
      if (it == known.end()) break;
      args.push_back(it->second);
    }
    if (args.size() != n->num_inputs()) continue;
    std::optional<std::vector<Tensor>> results = evaluate(*n, args);
    if (!results) continue;
    for (size_t i = 0; i < results->size(); ++i)
      known.emplace(n->output(i), std::move((*results)[i]));
    evaluated.push_back(n);
  }

  // Backward: users before producers, so that whether a value is still read is known when its
  // producer is decided. A value is still read by a graph output or by a node that stays. A node
  // stays when it computes a graph output, or a strided view that is still read.
  ir::Node* saved_insert_point = graph.insert_point();
  std::unordered_set<const ir::Node*> replaced;
  auto still_read = [&](const ir::Value* v) {
    for (const ir::Use& u : v->uses())
      if (u.user == nullptr || replaced.count(u.user) == 0) return true;
    return false;
  };
  for (auto it = evaluated.rbegin(); it != evaluated.rend(); ++it) {
    ir::Node* n = *it;
    bool stays = false;
    for (const ir::Value* v : n->outputs())
      stays = stays || returned(v) || (still_read(v) && !v->type().is_contiguous());
    if (stays) continue;
    graph.set_insert_point(n);
    for (ir::Value* v : n->outputs()) {
      if (!still_read(v)) continue;
      ir::Node* c = graph.create_constant(compact(known.at(v), n->op()->has(kView)));
      c->set_call_site(n->call_site());
      // Only the users that stay move to the constant; replaced users are erased below.
      std::vector<ir::Use> uses = v->uses();
      for (const ir::Use& u : uses)
        if (u.user != nullptr && replaced.count(u.user) == 0)
          u.user->replace_input(u.index, c->output());
    }
    replaced.insert(n);
  }
  graph.set_insert_point(saved_insert_point);
  // Users before producers again, so that each node is unused when it is erased.
  bool changed = false;
  for (auto it = evaluated.rbegin(); it != evaluated.rend(); ++it) {
    if (replaced.count(*it) == 0) continue;
    graph.erase(*it);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
