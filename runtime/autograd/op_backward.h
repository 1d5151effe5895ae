// OpBackward: the backward Node of an op-table op. It keeps the op, a copy of its attributes,
// the saved inputs and outputs its derivative reads (OpDef::save_inputs / save_outputs) and
// every input's metadata, and applies the op's DerivativeFn. Named "<Op>Backward" after the
// op ("MulBackward", "LogSoftmaxBackward").
#pragma once

#include <memory>
#include <vector>

#include "kiln/runtime/autograd/node.h"
#include "kiln/runtime/autograd/saved_variable.h"
#include "kiln/runtime/op_def.h"

namespace kiln::autograd {

class OpBackward : public Node {
 public:
  OpBackward(const OpDef& op, const void* attrs, edge_list&& next_edges);
  ~OpBackward() override;

  std::string name() const override;
  bool is_traceable() override { return true; }
  void release_variables() override;

  const OpDef& op() const { return op_; }
  const void* attrs() const { return attrs_; }

  // Called by the autograd kernel while the forward runs.
  void save_input(size_t i, const Tensor& t);
  void save_output(size_t i, const Tensor& t);
  void set_forward_input_meta(std::vector<InputMetadata> meta) {
    forward_inputs_ = std::move(meta);
  }
  // The forward's attributes over the trace's symbols, where they hold any (a slice bound that
  // is a size): the formula reads them while a symbolic trace records the backward, and the
  // integers at the traced sizes otherwise (Note [Symbolic saved sizes]).
  void set_symbolic_attrs(const void* attrs);

 protected:
  variable_list apply(variable_list&& grads) override;

 private:
  const OpDef& op_;
  void* attrs_;
  void* sym_attrs_ = nullptr;
  std::vector<SavedVariable> saved_inputs_;
  std::vector<SavedVariable> saved_outputs_;
  std::vector<InputMetadata> forward_inputs_;
  bool released_ = false;
};

// "log_softmax" -> "LogSoftmaxBackward".
std::string backward_node_name(std::string_view op_name);

}  // namespace kiln::autograd
