// SavedVariable: a tensor a Node keeps for its backward, with the version it had when saved.
//
// Note [Saved outputs and cycles]
// A Node that saves one of its own forward outputs must not hold that tensor's handle: the
// tensor's meta owns the Node through grad_fn, so the pair would keep each other alive. An
// output is saved as a new alias of its data (sharing storage and so the version counter)
// without autograd meta; unpack() gives the alias the history (this Node, output_nr) again.
#pragma once

#include <memory>
#include <string>

#include "kiln/runtime/tensor.h"

namespace kiln::autograd {

class Node;

class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);

  // The saved tensor. Throws kiln::Error when it was modified in place since it was saved, or
  // when the Node already released its saved tensors. `saved_for` is the Node unpacking, named
  // in errors and (for a saved output) given back as the tensor's grad_fn.
  Tensor unpack(const std::shared_ptr<Node>& saved_for = nullptr) const;

  void reset_data();  // release_variables
  bool defined() const { return was_defined_; }

 private:
  Tensor data_;
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool was_defined_ = false;
  bool is_output_ = false;
  bool is_leaf_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
};

}  // namespace kiln::autograd
