// The op table: the one registry of OpDefs. Families of ops register themselves from
// kernels/*_ops.cpp through the register_* functions listed in op_table.cpp.
#pragma once

#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/runtime/op_def.h"

namespace kiln {

class OpTable {
 public:
  static OpTable& instance();

  const OpDef& get(std::string_view name) const;  // throws kiln::Error for an unknown name
  const OpDef* find(std::string_view name) const;
  const std::vector<OpDef*>& ops() const { return order_; }
  // For wrapper keys installed after start-up (tracer, autograd) and for tests.
  OpDef& mutable_op(std::string_view name);
  // Gives op `name` its derivative formula and the masks of what the formula reads
  // (runtime/autograd/derivative.h).
  void set_derivative(std::string_view name, autograd::DerivativeFn fn,
                      uint32_t save_inputs = autograd::kSaveNone,
                      uint32_t save_outputs = autograd::kSaveNone);

  template <class Attrs>
  OpDef& add(std::string name, std::vector<std::string> inputs, uint32_t flags,
             std::string_view attrs_type) {
    OpDef& op = add_untyped(std::move(name));
    op.input_names = std::move(inputs);
    op.flags = flags;
    op.attrs = attr_vtable<Attrs>();
    op.attrs_type = std::string(attrs_type);
    return op;
  }

 private:
  OpTable() = default;
  OpDef& add_untyped(std::string name);

  std::vector<std::unique_ptr<OpDef>> storage_;
  std::vector<OpDef*> order_;
  std::unordered_map<std::string_view, OpDef*> by_name_;
};

inline const OpDef& get_op(std::string_view name) {
  return OpTable::instance().get(name);
}

// KILN_OP("add"): the op's entry, looked up once per call site and then kept.
#define KILN_OP(name)                                       \
  [] {                                                      \
    static const ::kiln::OpDef& op_ = ::kiln::get_op(name); \
    return std::cref(op_);                                  \
  }()

// Registration entry points, one per op family (runtime/kernels/).
void register_pointwise_ops(OpTable& table);
void register_reduction_ops(OpTable& table);
void register_linalg_ops(OpTable& table);
void register_view_ops(OpTable& table);
void register_copy_ops(OpTable& table);
void register_factory_ops(OpTable& table);
void register_nn_ops(OpTable& table);
void register_row_programs(OpTable& table);  // kernels/row_programs.h
void register_indexing_ops(OpTable& table);
// index, index_put, index_put_, nonzero, masked_select (kernels/advanced_index_ops.cpp)
void register_advanced_index_ops(OpTable& table);
void register_random_ops(OpTable& table);
void register_sort_ops(OpTable& table);  // sort, argsort, topk, cumsum, cumprod
void register_conv_ops(OpTable& table);  // convolution, convolution_backward
// scaled_dot_product_flash_attention and its backward (kernels/attention_ops.h).
void register_attention_ops(OpTable& table);
// The CUDA kernels of every family that has them (runtime/cuda/cuda_kernels.h), after every
// family, since they read the ops' expressions.
void register_cuda_kernels(OpTable& table);

// Derivative formulas, one file per family (runtime/autograd/derivatives/). They run after all
// families are registered, since in-place ops share their out-of-place twin's formula.
void register_pointwise_derivatives(OpTable& table);
void register_reduction_derivatives(OpTable& table);
void register_nn_derivatives(OpTable& table);
void register_linalg_derivatives(OpTable& table);
void register_shape_derivatives(OpTable& table);  // views, copies, cat
void register_indexing_derivatives(OpTable& table);
void register_random_derivatives(OpTable& table);
void register_sort_derivatives(OpTable& table);
void register_conv_derivatives(OpTable& table);
void register_attention_derivatives(OpTable& table);
// Installs the Autograd dispatch key's kernel on every op (runtime/autograd/autograd_kernel.cpp).
void register_autograd_kernels(OpTable& table);

}  // namespace kiln
