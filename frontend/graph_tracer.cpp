#include "kiln/frontend/graph_tracer.h"

#include <algorithm>

#include <fmt/format.h>

#include "kiln/base/error.h"
#include "kiln/ir/symbols.h"
#include "kiln/runtime/dispatcher.h"

namespace kiln {
namespace {

size_t mix(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

std::string where(const std::string& site) {
  return site.empty() ? std::string("an unknown call site") : site;
}

}  // namespace

size_t GraphTracer::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<const void*>()(k.storage);
  h = mix(h, static_cast<size_t>(k.offset));
  for (int64_t s : k.sizes)
    h = mix(h, static_cast<size_t>(s));
  for (int64_t s : k.strides)
    h = mix(h, static_cast<size_t>(s));
  return mix(h, static_cast<size_t>(k.dtype));
}

GraphTracer::GraphTracer() : graph_(std::make_shared<ir::Graph>()) {}

GraphTracer::Key GraphTracer::key_of(const Tensor& t) {
  const TensorImpl* i = t.impl();
  return Key{i->storage().get(), i->storage_offset(), i->sizes(), i->strides(), i->dtype()};
}

const GraphTracer::Entry* GraphTracer::live_entry(const Tensor& t) const {
  auto it = map_.find(key_of(t));
  if (it == map_.end()) return nullptr;
  // Expired: the storage this entry was made for is gone and `t` lives in a new one.
  if (it->second.storage.lock() != t.impl()->storage()) return nullptr;
  return &it->second;
}

void GraphTracer::prune_expired() {
  std::erase_if(map_, [](const auto& kv) { return kv.second.storage.expired(); });
  prune_at_ = std::max<size_t>(1024, 2 * map_.size());
}

void GraphTracer::set_value(const Tensor& t, ir::Value* v) {
  if (map_.size() >= prune_at_) prune_expired();
  map_[key_of(t)] = Entry{t.impl()->storage(), v, t.version()};
}

ir::Value* GraphTracer::add_input(const Tensor& t, std::string name,
                                  const std::vector<bool>& dynamic_dims) {
  InternalScope internal(internal_);
  ir::TensorType type = ir::TensorType::of(t);
  // Note [Symbolic tracing]: a non-contiguous input's strides would need symbols of their own.
  if (!dynamic_dims.empty() && t.impl()->is_contiguous()) {
    SymShape sym;
    bool any = false;
    const Shape& sizes = t.impl()->sizes();
    for (size_t d = 0; d < sizes.size(); ++d) {
      int64_t n = sizes[d];
      // Sizes 0 and 1 stay integers: broadcasting depends on them.
      if (n < 2 || d >= dynamic_dims.size() || !dynamic_dims[d]) {
        sym.emplace_back(n);
        continue;
      }
      auto [it, added] = duck_.emplace(n, static_cast<int64_t>(hints_.size()));
      if (added) {
        hints_.push_back(n);
        why_.emplace_back();
      }
      sym.push_back(SymInt::symbol(it->second));
      input_symbols_.push_back({graph_->inputs().size(), d, it->second});
      any = true;
    }
    if (any) {
      type.sym_sizes = std::move(sym);
      graph_->set_symbol_hints(hints_);
    }
  }
  ir::Value* v = graph_->add_input(std::move(type), std::move(name));
  set_value(t, v);
  return v;
}

ir::Value* GraphTracer::add_input_like(const Tensor& t, std::string name, const Tensor& like) {
  InternalScope internal(internal_);
  ir::TensorType type = ir::TensorType::of(t);
  if (symbolic() && t.impl()->is_contiguous()) {
    if (ir::Value* v = find_value(like)) {
      SymShape sizes = resolved(v->type().symbolic_sizes());
      if (!is_static(sizes) && ir::evaluate_sizes(sizes, hints_) == type.sizes)
        type.sym_sizes = std::move(sizes);
    }
  }
  ir::Value* v = graph_->add_input(std::move(type), std::move(name));
  set_value(t, v);
  return v;
}

bool GraphTracer::is_stale(const Tensor& t) const {
  const Entry* e = live_entry(t);
  return e != nullptr && e->version != t.version();
}

ir::Value* GraphTracer::find_value(const Tensor& t) {
  const Entry* e = live_entry(t);
  return e != nullptr && e->version == t.version() ? e->value : nullptr;
}

ir::Value* GraphTracer::value_of(const Tensor& t) {
  KILN_CHECK(t.defined(), "trace: an undefined tensor at {} has no value in the graph",
             where(short_call_site()));
  if (const Entry* e = live_entry(t)) {
    if (e->version != t.version()) {
      if (ir::Value* v = replay_view(t)) return v;  // Note [Writes through views]
    }
    // Note [Tensor to Value map]: the version moved, but not through an op the tracer recorded
    // on this tensor.
    KILN_CHECK(e->version == t.version(),
               "trace: a tensor ({}) read at {} was modified in place through another view or "
               "alias of its storage after the trace last saw it; a traced graph cannot express "
               "writes through aliases. clone() the tensor before modifying the other view, or "
               "modify this tensor itself",
               ir::TensorType::of(t).str(), where(short_call_site()));
    return e->value;
  }
  if (lifted_ != nullptr && (lift_all_ || t.requires_grad())) {
    // Note [Lifted tensors]
    lifted_snapshots_.emplace_back();  // taken before the first write (snapshot_lifted_on)
    lifted_versions_.push_back(t.version());
    lifted_->push_back(t);
    return add_input(t, fmt::format("p{}", lifted_->size() - 1));
  }
  // Under trace(), a tensor from outside the traced function (a captured weight) is a
  // constant, as is one built from host data.
  return add_constant(t);
}

ir::Value* GraphTracer::add_constant(const Tensor& t) {
  // A copy, so that later writes to the original do not reach the graph. The copy is an
  // implementation detail, invisible to the trace and to autograd.
  Tensor copy;
  {
    ExcludeDispatchKeysGuard hidden(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
    copy = t.clone();
  }
  ir::Node* node = graph_->create_constant(std::move(copy));
  ir::Value* v = node->output();
  set_value(t, v);
  return v;
}

void GraphTracer::snapshot_lifted_on(const Tensor& written) {
  if (lifted_ == nullptr) return;
  const StorageImpl* storage = written.impl()->storage().get();
  for (size_t k = 0; k < lifted_snapshots_.size() && k < lifted_->size(); ++k) {
    const Tensor& t = (*lifted_)[k];
    if (lifted_snapshots_[k].defined() || t.impl()->storage().get() != storage) continue;
    ExcludeDispatchKeysGuard hidden(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
    lifted_snapshots_[k] = t.clone();
  }
}

void GraphTracer::restore_lifted() {
  if (lifted_ == nullptr) return;
  ExcludeDispatchKeysGuard hidden(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
  // Latest lift first: of two lifted views of one storage, the earlier snapshot is the older
  // value, and it must be the one left in place.
  for (size_t k = std::min(lifted_snapshots_.size(), lifted_->size()); k-- > 0;) {
    if (lifted_snapshots_[k].defined()) (*lifted_)[k].copy_(lifted_snapshots_[k]);
  }
  lifted_snapshots_.clear();
}

std::vector<Tensor> GraphTracer::record_fallback(const std::string& name, OpaqueFn fn,
                                                 const std::vector<Tensor>& inputs) {
  InternalScope internal(internal_);
  std::string site = short_call_site();
  // Undefined gradients (outputs that received none, inputs nobody needs) have no Value. The
  // fallback node takes and returns only the defined ones; its callable puts undefined tensors
  // back at their positions before calling `fn`, and keeps only the outputs that were defined
  // while tracing.
  std::vector<size_t> in_pos;
  std::vector<ir::Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    in_pos.push_back(i);
    values.push_back(value_of(inputs[i]));
  }
  // Note [Symbolic tracing]: the callable's output sizes are the traced call's.
  specialize_all(values, fmt::format("the opaque {} at {}", name, where(site)));
  std::vector<Tensor> outputs;
  {
    ExcludeDispatchKeysGuard opaque(DispatchKey::Tracer);
    outputs = fn(inputs);
  }
  std::vector<size_t> out_pos;
  std::vector<ir::TensorType> types;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined()) continue;
    out_pos.push_back(i);
    types.push_back(ir::TensorType::of(outputs[i]));
  }
  size_t num_inputs = inputs.size();
  ir::FallbackFn call = [fn = std::move(fn), name, num_inputs, in_pos,
                         out_pos](const std::vector<Tensor>& args) {
    KILN_CHECK(args.size() == in_pos.size(), "prim.fallback '{}': expected {} inputs, got {}", name,
               in_pos.size(), args.size());
    std::vector<Tensor> full(num_inputs);
    for (size_t k = 0; k < in_pos.size(); ++k)
      full[in_pos[k]] = args[k];
    std::vector<Tensor> result = fn(full);
    std::vector<Tensor> out;
    out.reserve(out_pos.size());
    for (size_t p : out_pos) {
      KILN_CHECK(p < result.size() && result[p].defined(),
                 "prim.fallback '{}': output {} was defined when the graph was traced, but this "
                 "call returned none",
                 name, p);
      out.push_back(result[p]);
    }
    return out;
  };
  ir::Node* node = graph_->create_fallback(name, std::move(call), values, types);
  node->set_call_site(site);
  for (size_t k = 0; k < out_pos.size(); ++k)
    set_value(outputs[out_pos[k]], node->output(k));
  return outputs;
}

void GraphTracer::note_same_value(const Tensor& copy, const Tensor& source) {
  if (ir::Value* v = find_value(source)) set_value(copy, v);
}

std::vector<Tensor> GraphTracer::record_op(const OpDef& op, std::span<const Tensor> inputs,
                                           const void* attrs) {
  InternalScope internal(internal_);
  std::string site = short_call_site();
  if (op.has(kNonTraceable) && graph_breaks_) {
    // A graph break (Note [Graph breaks]): the op runs eagerly, with autograd, on every call.
    ir::OpAttrs held(op.attrs, attrs);  // the callable outlives `attrs`
    const OpDef* def = &op;
    return record_fallback(
        op.name,
        [def, held](const std::vector<Tensor>& in) { return call_op(*def, in, held.get()); },
        std::vector<Tensor>(inputs.begin(), inputs.end()));
  }
  KILN_CHECK(!op.has(kNonTraceable),
             "trace: op '{}' at {} cannot be traced (its result depends on tensor data in a way "
             "a graph cannot express); call it outside the traced function",
             op.name, where(site));
  // The inputs' Values before the op runs: an in-place op moves its input's version.
  std::vector<ir::Value*> values;
  values.reserve(inputs.size());
  for (const Tensor& t : inputs)
    values.push_back(value_of(t));
  std::vector<Tensor> outputs;
  // Note [Symbolic size attributes]: the eager kernel gets the sizes at the traced values; the
  // node keeps the expressions.
  std::optional<ir::OpAttrs> traced_values;
  if (ir::attrs_are_symbolic(op.attrs, attrs)) {
    KILN_CHECK(symbolic(),
               "trace: {} at {} got symbolic sizes ({}) in a trace without symbolic sizes", op.name,
               where(site), op.attrs_str(attrs));
    traced_values = ir::evaluate_attrs(op.attrs, attrs, hints_);
  }
  const void* eager_attrs = traced_values ? traced_values->get() : attrs;
  std::optional<ViewWrite> view_write;
  if (op.has(kInPlace)) {
    snapshot_lifted_on(inputs[0]);  // Note [Lifted tensors]
    view_write = begin_view_write(inputs[0]);
  }
  {
    ExcludeDispatchKeysGuard below(DispatchKey::Tracer);
    outputs = call_op(op, inputs, eager_attrs);
  }
  if (op.has(kInPlace)) {
    set_value(inputs[0], functionalize(op, inputs, attrs, values, site));
    if (view_write) finish_view_write(*view_write, inputs[0]);
    // Autograd rebased self (and a written view's base) while the op ran, before their new
    // Values existed: their metadata takes the sizes over symbols now.
    add_saved_symbolic_sizes(outputs, &op, traced_values ? attrs : nullptr);
    return outputs;
  }
  std::vector<ir::TensorType> types;
  types.reserve(outputs.size());
  if (op.has(kView)) {
    // A view's geometry follows its input's Value type, which differs from the eager tensor's
    // when that Value came from a functionalized in-place op (always contiguous). Using the
    // shape rule on the Value types keeps the graph consistent with what it computes.
    std::vector<Shape> strides;
    std::vector<MetaRef> metas;
    strides.reserve(values.size());
    for (ir::Value* v : values) {
      const ir::TensorType& t = v->type();
      strides.push_back(t.effective_strides());
      metas.push_back(MetaRef{t.sizes, strides.back(), 0, t.dtype, t.device});
    }
    std::vector<OutputGeometry> geoms = op.shape(op, metas, eager_attrs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      ir::TensorType t = ir::TensorType::of(outputs[i]);
      t.sizes = geoms.at(i).sizes;
      t.strides = strides_are_contiguous(t.sizes, geoms[i].strides) ? Shape{} : geoms[i].strides;
      types.push_back(std::move(t));
    }
  } else {
    for (const Tensor& out : outputs)
      types.push_back(ir::TensorType::of(out));
  }
  attach_symbols(op, values, attrs, types);
  ir::Node* node = graph_->create_op(op, values, attrs, types);
  node->set_call_site(site);
  for (size_t i = 0; i < outputs.size(); ++i)
    set_value(outputs[i], node->output(i));
  add_saved_symbolic_sizes(outputs, &op, traced_values ? attrs : nullptr);
  return outputs;
}

}  // namespace kiln
