// TensorOptions: the chainable dtype/device/requires_grad bundle factories take, as in libtorch.
// Unset fields fall back to a default that depends on the factory (from_vector keeps the
// element type, arange infers int64 or float32, the rest use float32 on the CPU).
#pragma once

#include <optional>

#include "kiln/base/device.h"
#include "kiln/base/dtype.h"

namespace kiln {

struct TensorOptions {
  std::optional<DType> dtype_opt;
  std::optional<Device> device_opt;
  bool requires_grad_ = false;

  TensorOptions() = default;
  TensorOptions(DType t) : dtype_opt(t) {}    // NOLINT: implicit, as zeros({2}, kInt64)
  TensorOptions(Device d) : device_opt(d) {}  // NOLINT: implicit, as zeros({2}, kMeta)

  TensorOptions dtype(DType t) const {
    TensorOptions o = *this;
    o.dtype_opt = t;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_opt = d;
    return o;
  }
  TensorOptions requires_grad(bool r = true) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    return o;
  }
  DType dtype_or(DType fallback = kDefaultFloat) const { return dtype_opt.value_or(fallback); }
  Device device_or(Device fallback = kCPU) const { return device_opt.value_or(fallback); }
};

inline TensorOptions dtype(DType t) {
  return TensorOptions().dtype(t);
}
inline TensorOptions device(Device d) {
  return TensorOptions().device(d);
}
inline TensorOptions requires_grad(bool r = true) {
  return TensorOptions().requires_grad(r);
}

}  // namespace kiln
