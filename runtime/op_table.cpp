#include "kiln/runtime/op_table.h"

#include "kiln/base/error.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {

OpTable& OpTable::instance() {
  // Built on first use rather than by static registrars, so that no op goes missing when the
  // linker drops an object file from the static library, and the order is this list's.
  static OpTable* table = [] {
    auto* t = new OpTable();
    register_pointwise_ops(*t);
    register_reduction_ops(*t);
    register_linalg_ops(*t);
    register_view_ops(*t);
    register_copy_ops(*t);
    register_factory_ops(*t);
    register_nn_ops(*t);
    register_row_programs(*t);
    register_indexing_ops(*t);
    register_advanced_index_ops(*t);
    register_random_ops(*t);
    register_sort_ops(*t);
    register_conv_ops(*t);
    register_attention_ops(*t);
    register_cuda_kernels(*t);
    register_pointwise_derivatives(*t);
    register_reduction_derivatives(*t);
    register_nn_derivatives(*t);
    register_linalg_derivatives(*t);
    register_shape_derivatives(*t);
    register_indexing_derivatives(*t);
    register_random_derivatives(*t);
    register_sort_derivatives(*t);
    register_conv_derivatives(*t);
    register_attention_derivatives(*t);
    register_autograd_kernels(*t);
    register_tracer_kernels(*t);
    // The symbolic shape rules that share a template with an op's rule (Note [Symbolic sizes]).
    for (const OpDef* op : t->ops())
      if (op->sym_shape == nullptr)
        t->mutable_op(op->name).sym_shape = rules::symbolic_twin(op->shape);
    return t;
  }();
  return *table;
}

const OpDef* OpTable::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const OpDef& OpTable::get(std::string_view name) const {
  const OpDef* op = find(name);
  KILN_CHECK(op != nullptr, "unknown op '{}'", name);
  return *op;
}

OpDef& OpTable::mutable_op(std::string_view name) {
  return const_cast<OpDef&>(get(name));
}

void OpTable::set_derivative(std::string_view name, autograd::DerivativeFn fn, uint32_t save_inputs,
                             uint32_t save_outputs) {
  OpDef& op = mutable_op(name);
  op.derivative = fn;
  op.save_inputs = save_inputs;
  op.save_outputs = save_outputs;
}

OpDef& OpTable::add_untyped(std::string name) {
  KILN_CHECK(find(name) == nullptr, "op '{}' is registered twice", name);
  storage_.push_back(std::make_unique<OpDef>());
  OpDef* op = storage_.back().get();
  op->name = std::move(name);
  order_.push_back(op);
  by_name_.emplace(op->name, op);
  return *op;
}

}  // namespace kiln
