// Tensor factories, as in libtorch. The default dtype is float32 and the default device the CPU.
#pragma once

#include <source_location>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/runtime/tensor.h"
#include "kiln/runtime/tensor_data.h"

namespace kiln {

Tensor empty(Shape size, TensorOptions options = {},
             std::source_location loc = std::source_location::current());
Tensor zeros(Shape size, TensorOptions options = {},
             std::source_location loc = std::source_location::current());
Tensor ones(Shape size, TensorOptions options = {},
            std::source_location loc = std::source_location::current());
Tensor full(Shape size, const Scalar& value, TensorOptions options = {},
            std::source_location loc = std::source_location::current());
// empty and full with sizes that may be symbolic (torch's *_symint): inside a symbolic trace the
// graph keeps the expressions (Note [Symbolic size attributes]); elsewhere they are integers.
Tensor empty_symint(SymShape size, TensorOptions options = {},
                    std::source_location loc = std::source_location::current());
Tensor full_symint(SymShape size, const Scalar& value, TensorOptions options = {},
                   std::source_location loc = std::source_location::current());
// Values start, start + step, ... below end. Without a dtype in `options`, the result is int64
// when every bound is an integer and float32 otherwise (as torch.arange).
Tensor arange(const Scalar& end, TensorOptions options = {},
              std::source_location loc = std::source_location::current());
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              TensorOptions options = {},
              std::source_location loc = std::source_location::current());
// 0, 1, ..., end - 1 (int64 without a dtype in `options`) for an end that may be symbolic
// (torch's arange with a SymInt end): over a symbol, the running sum of `end` ones, whose shape
// rule holds over symbols where arange's integer end would specialize it.
Tensor arange_symint(const SymInt& end, TensorOptions options = {},
                     std::source_location loc = std::source_location::current());
// A 0-dim tensor holding a size that may be symbolic (torch's scalar_tensor of a SymInt), int64
// without a dtype in `options`: over symbols it is the sum of `n` ones, so that a traced graph
// computes it at each call's sizes instead of keeping the traced value as a constant.
Tensor scalar_tensor_symint(const SymInt& n, TensorOptions options = {},
                            std::source_location loc = std::source_location::current());
// uniform on [0, 1)
Tensor rand(Shape size, TensorOptions options = {},
            std::source_location loc = std::source_location::current());
// standard normal
Tensor randn(Shape size, TensorOptions options = {},
             std::source_location loc = std::source_location::current());
void manual_seed(uint64_t seed);

// The *_like factories: x's shape, dtype and device, unless `options` names another dtype or
// device (requires_grad comes from `options` only, as in torch).
TensorOptions like_options(const Tensor& x, const TensorOptions& options);
Tensor empty_like(const Tensor& x, TensorOptions options = {},
                  std::source_location loc = std::source_location::current());
Tensor zeros_like(const Tensor& x, TensorOptions options = {},
                  std::source_location loc = std::source_location::current());
Tensor ones_like(const Tensor& x, TensorOptions options = {},
                 std::source_location loc = std::source_location::current());
Tensor full_like(const Tensor& x, const Scalar& value, TensorOptions options = {},
                 std::source_location loc = std::source_location::current());

// Copies `data` into a new tensor of shape `size` (a flat 1-D tensor when size is empty and
// data has other than one element). The dtype is T's unless `options` names another.
namespace detail {
Tensor from_host(const void* data, size_t count, DType src_dtype, Shape size,
                 const TensorOptions& options, std::source_location loc);
}
template <class T>
Tensor from_vector(const std::vector<T>& data, Shape size = {}, TensorOptions options = {},
                   std::source_location loc = std::source_location::current()) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(data.begin(), data.end());  // vector<bool> is packed
    return detail::from_host(bytes.data(), bytes.size(), kBool, std::move(size), options, loc);
  } else {
    return detail::from_host(data.data(), data.size(), dtype_of<T>, std::move(size), options, loc);
  }
}

}  // namespace kiln
