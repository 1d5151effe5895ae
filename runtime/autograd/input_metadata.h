// InputMetadata: what a Node expects of the gradient arriving at one of its inputs (the
// shape, dtype and device of the forward tensor it differentiates). The engine validates each
// incoming gradient against it: a broadcast gradient is summed down to the shape, a different
// floating dtype is cast, and anything else is an error naming the Node.
#pragma once

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/runtime/tensor.h"

namespace kiln::autograd {

struct InputMetadata {
  InputMetadata() = default;  // an input that never receives a gradient
  explicit InputMetadata(const Tensor& t)
      : sizes(t.sizes()), dtype(t.dtype()), device(t.device()), defined(true) {
    if (device.is_cuda()) stream = cuda::current_stream(device.index).handle();
  }

  Shape sizes;
  DType dtype = kFloat32;
  Device device;
  bool defined = false;
  // CUDA: the stream current on the device when this was recorded, in the forward (Note
  // [Backward streams] in engine.cpp).
  void* stream = nullptr;
};

}  // namespace kiln::autograd
