// InputBuffer: the gradients arriving at a Node's inputs, accumulated (summed) while the
// Node waits for its remaining dependencies.
#pragma once

#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln::autograd {

class InputBuffer {
 public:
  explicit InputBuffer(size_t size) : buffer_(size) {}

  // Adds `grad` to slot `pos`. The sum is done in place into the held tensor when nothing else
  // refers to it and it is not part of a graph; otherwise out of place (so that create_graph
  // records the addition and no tensor the user holds changes).
  void add(size_t pos, Tensor grad);

  size_t size() const { return buffer_.size(); }
  Tensor& operator[](size_t pos) { return buffer_[pos]; }
  std::vector<Tensor> release() { return std::move(buffer_); }

 private:
  std::vector<Tensor> buffer_;
};

}  // namespace kiln::autograd
