// Tensor factories, as in libtorch. The default dtype is float32 and the default device the CPU.
#pragma once

#include <vector>

#include "kiln/runtime/error.h"
#include "kiln/runtime/tensor.h"
#include "kiln/runtime/tensor_data.h"

namespace kiln {

Tensor empty(Shape size, TensorOptions options = {});
Tensor zeros(Shape size, TensorOptions options = {});
Tensor ones(Shape size, TensorOptions options = {});
Tensor full(Shape size, const Scalar& value, TensorOptions options = {});
// Values start, start + step, ... below end. Without a dtype in `options`, the result is int64
// when every bound is an integer and float32 otherwise (as torch.arange).
Tensor arange(const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              TensorOptions options = {});
Tensor rand(Shape size, TensorOptions options = {});   // uniform on [0, 1)
Tensor randn(Shape size, TensorOptions options = {});  // standard normal
void manual_seed(uint64_t seed);

// The *_like factories: x's shape, dtype and device, unless `options` names another dtype or
// device (requires_grad comes from `options` only, as in torch).
TensorOptions like_options(const Tensor& x, const TensorOptions& options);
Tensor empty_like(const Tensor& x, TensorOptions options = {});
Tensor zeros_like(const Tensor& x, TensorOptions options = {});
Tensor ones_like(const Tensor& x, TensorOptions options = {});
Tensor full_like(const Tensor& x, const Scalar& value, TensorOptions options = {});

// Copies `data` into a new tensor of shape `size` (a flat 1-D tensor when size is empty and
// data has other than one element). The dtype is T's unless `options` names another.
namespace detail {
Tensor from_host(const void* data, size_t count, DType src_dtype, Shape size,
                 const TensorOptions& options);
}
template <class T>
Tensor from_vector(const std::vector<T>& data, Shape size = {}, TensorOptions options = {}) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(data.begin(), data.end());  // vector<bool> is packed
    return detail::from_host(bytes.data(), bytes.size(), kBool, std::move(size), options);
  } else {
    return detail::from_host(data.data(), data.size(), dtype_of<T>, std::move(size), options);
  }
}

}  // namespace kiln
