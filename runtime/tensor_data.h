// Typed host access to a tensor's elements: to_vector, item, data_ptr.
#pragma once

#include <cstring>

#include "kiln/runtime/tensor.h"

namespace kiln {

namespace detail {
// Throws unless `t` holds host memory of dtype `want`; names the accessor.
void check_host_access(const Tensor& t, DType want, const char* accessor);
}  // namespace detail

template <class T>
T* Tensor::data_ptr() const {
  detail::check_host_access(*this, dtype_of<T>, "data_ptr");
  return static_cast<T*>(impl_->data());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor src = dtype() == dtype_of<T> ? contiguous() : to(dtype_of<T>);
  detail::check_host_access(src, dtype_of<T>, "to_vector");
  const T* data = static_cast<const T*>(src.impl()->data());
  if constexpr (std::is_same_v<T, bool>) {
    return std::vector<bool>(data, data + src.numel());  // vector<bool> is packed: no memcpy
  } else {
    std::vector<T> out(static_cast<size_t>(src.numel()));
    if (!out.empty()) std::memcpy(out.data(), data, out.size() * sizeof(T));
    return out;
  }
}

template <class T>
T Tensor::item() const {
  KILN_CHECK(numel() == 1,
             "item: a Tensor with {} elements (shape {}) cannot be converted to a "
             "scalar",
             numel(), shape_str(sizes()));
  return to_vector<T>()[0];
}

}  // namespace kiln
