// Typed host access to a tensor's elements: to_vector, item, data_ptr.
#pragma once

#include <cstring>

#include "kiln/runtime/tensor.h"

namespace kiln {

namespace detail {
// Throws unless `t` holds host memory of dtype `want`; names the accessor. Under trace() it
// throws for any tensor (Note [Tracing state]).
void check_host_access(const Tensor& t, DType want, const char* accessor);
// Throws when a trace is active: the read would make the traced graph depend on this run's data.
void check_traced_read(const char* accessor, const std::source_location& loc);
// A contiguous CPU copy of a CUDA tensor's values (no autograd history: only values are read).
Tensor host_copy(const Tensor& t);
}  // namespace detail

template <class T>
T* Tensor::data_ptr(std::source_location loc) const {
  detail::check_traced_read("data_ptr", loc);
  detail::check_host_access(*this, dtype_of<T>, "data_ptr");
  return static_cast<T*>(impl_->data());
}

template <class T>
std::vector<T> Tensor::to_vector(std::source_location loc) const {
  detail::check_traced_read("to_vector", loc);  // before the conversion below gets recorded
  if (device().is_cuda()) return detail::host_copy(*this).template to_vector<T>(loc);
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
T Tensor::item(std::source_location loc) const {
  detail::check_traced_read("item", loc);
  KILN_CHECK(numel() == 1,
             "item: a Tensor with {} elements (shape {}) cannot be converted to a "
             "scalar",
             numel(), shape_str(sizes()));
  // Named here: a Meta tensor fails the host check, which would otherwise name to_vector.
  if (device().is_meta()) detail::check_host_access(*this, dtype(), "item");
  return to_vector<T>(loc)[0];
}

}  // namespace kiln
