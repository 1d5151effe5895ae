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
      : sizes(t.impl()->sizes()), dtype(t.dtype()), device(t.device()), defined(true) {
    if (device.is_cuda()) stream = cuda::current_stream(device.index).handle();
    if (kiln::detail::g_symbolic_traces.load(std::memory_order_relaxed) != 0)
      sym_sizes = kiln::detail::traced_symbolic_sizes(t);
  }

  // The sizes as integers. Under a symbolic trace, code that uses them as integers must say so
  // through GradArgs::input_sizes or read_sizes (Note [Symbolic saved sizes]).
  Shape sizes;
  // Under a symbolic trace: the sizes over the trace's symbols, when they hold any (Note
  // [Symbolic saved sizes]); else empty.
  SymShape sym_sizes;
  DType dtype = kFloat32;
  Device device;
  bool defined = false;
  // CUDA: the stream current on the device when this was recorded, in the forward (Note
  // [Backward streams] in engine.cpp).
  void* stream = nullptr;

  // `sizes`, reporting the read to a symbolic trace (which specializes their symbols).
  const Shape& read_sizes() const {
    if (!sym_sizes.empty()) kiln::detail::report_sym_sizes_read(sym_sizes);
    return sizes;
  }
  // The sizes as the symbolic trace sees them: `sym_sizes` while a symbolic trace records (with
  // the symbols it specialized since they were saved replaced by their values), else the
  // integers.
  SymShape symbolic_sizes() const {
    if (!sym_sizes.empty() && kiln::detail::g_symbolic_traces.load(std::memory_order_relaxed) != 0)
      return kiln::detail::resolve_traced_symbols(sym_sizes);
    return to_sym_shape(sizes);
  }
};

}  // namespace kiln::autograd
