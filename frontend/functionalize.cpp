// The functional form of each in-place op, which the graph tracer records in its place (the
// Tracer dispatch key's kernel that hands ops to the tracer is runtime/tracing_state.cpp).
#include "kiln/base/error.h"
#include "kiln/frontend/graph_tracer.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_attrs.h"
#include "kiln/runtime/kernels/factory_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

ir::TensorType dense_type(DType dtype, Device device, const Shape& sizes, bool requires_grad) {
  ir::TensorType t;
  t.dtype = dtype;
  t.device = device;
  t.sizes = sizes;
  t.requires_grad = requires_grad;
  return t;
}

}  // namespace

ir::Value* GraphTracer::add_node(const OpDef& op, std::span<ir::Value* const> inputs,
                                 const void* attrs, ir::TensorType type, const std::string& site) {
  std::vector<ir::TensorType> types{std::move(type)};
  attach_symbols(op, inputs, attrs, types);  // Note [Symbolic tracing]
  ir::Node* node = graph_->create_op(op, inputs, attrs, types);
  node->set_call_site(site);
  return node->output();
}

// Note [Functionalized in-place ops]
// The graph IR has no mutation: an in-place op on `self` is recorded as the ops that compute
// self's new value, and self's entry then maps to that Value (Note [Tensor to Value map]).
//   add_(self, other)       -> add(self, other)             (likewise every op "X_" whose twin
//   add_scalar_(self)       -> add_scalar(self)              "X" takes the same inputs and the
//   relu_, clamp_, masked_fill_, ...                         same attribute struct)
//   fill_(self) {value}     -> full {size, value, dtype, device of self}, self's size over
//                              the trace's symbols in a symbolic trace
//   copy_(self, src)        -> convert(src) to self's dtype when it differs, expand to self's
//                              shape when it differs, and clone unless a convert already made
//                              a new dense tensor
// An in-place op computes in the promoted type and casts back to self's dtype (Note [In-place
// ops]), so a twin whose result dtype differs is followed by a convert. The new Value is dense
// and contiguous even when self is a strided view: it is a value, not a memory layout.
ir::Value* GraphTracer::functionalize(const OpDef& op, std::span<const Tensor> inputs,
                                      const void* attrs, std::span<ir::Value* const> values,
                                      const std::string& site) {
  const Tensor& self = inputs[0];
  const bool rg = self.requires_grad();
  OpTable& table = OpTable::instance();
  // Self's sizes over the trace's symbols (Note [Symbolic tracing]): full and expand take them
  // as size attributes, so the new value keeps them.
  const bool writes_whole = op.name == "fill_" || op.name == "copy_";
  SymShape self_sizes = writes_whole ? resolved(values[0]->type().symbolic_sizes()) : SymShape{};
  if (op.name == "fill_") {
    FullAttrs full{self_sizes, static_cast<const FillAttrs*>(attrs)->value, self.dtype(),
                   self.device()};
    return add_node(table.get("full"), {}, &full,
                    dense_type(self.dtype(), self.device(), self.sizes(), rg), site);
  }
  if (op.name == "copy_") {
    const Tensor& src = inputs[1];
    ir::Value* v = values[1];
    bool dense = false;
    if (src.dtype() != self.dtype()) {
      DTypeAttrs to{self.dtype()};
      ir::Value* in[] = {v};
      v = add_node(table.get("convert"), in, &to,
                   dense_type(self.dtype(), self.device(), v->type().sizes, src.requires_grad()),
                   site);
      dense = true;
    }
    if (v->type().sizes != self.sizes() || resolved(v->type().symbolic_sizes()) != self_sizes) {
      SizeAttrs size{self_sizes};
      ir::Value* in[] = {v};
      // expand's strides: 0 for the broadcast dims, the input's own for the rest.
      Shape in_strides = v->type().effective_strides();
      Shape strides(self.sizes().size(), 0);
      size_t lead = strides.size() - in_strides.size();
      for (size_t d = 0; d < in_strides.size(); ++d) {
        if (v->type().sizes[d] == self.sizes()[lead + d]) strides[lead + d] = in_strides[d];
      }
      ir::TensorType t =
          dense_type(v->type().dtype, self.device(), self.sizes(), src.requires_grad());
      if (!strides_are_contiguous(t.sizes, strides)) t.strides = strides;
      v = add_node(table.get("expand"), in, &size, std::move(t), site);
      dense = false;
    }
    if (!dense) {
      ir::Value* in[] = {v};
      NoAttrs none;
      v = add_node(table.get("clone"), in, &none,
                   dense_type(self.dtype(), self.device(), self.sizes(), rg), site);
    }
    return v;
  }
  std::string_view base = op.name;
  if (!base.empty() && base.back() == '_') base.remove_suffix(1);
  const OpDef* twin = table.find(base);
  KILN_CHECK(twin != nullptr && twin->attrs == op.attrs &&
                 twin->input_names.size() == op.input_names.size() && !twin->has(kInPlace),
             "trace: the in-place op '{}' at {} has no out-of-place twin to record it as", op.name,
             site.empty() ? std::string("an unknown call site") : site);
  std::vector<MetaRef> metas;
  for (const Tensor& t : inputs)
    metas.push_back(MetaRef::of(t));
  DType result = twin->dtype(*twin, metas, attrs, 0);
  ir::Value* v =
      add_node(*twin, values, attrs, dense_type(result, self.device(), self.sizes(), rg), site);
  if (result != self.dtype()) {
    DTypeAttrs to{self.dtype()};
    ir::Value* in[] = {v};
    v = add_node(table.get("convert"), in, &to,
                 dense_type(self.dtype(), self.device(), self.sizes(), rg), site);
  }
  return v;
}

}  // namespace kiln
