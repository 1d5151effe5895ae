#include "kiln/ir/type.h"

#include "kiln/runtime/tensor.h"

namespace kiln::ir {

TensorType TensorType::of(const Tensor& t) {
  TensorType type;
  type.dtype = t.dtype();
  type.device = t.device();
  type.sizes = t.sizes();
  if (!strides_are_contiguous(t.sizes(), t.strides())) type.strides = t.strides();
  type.requires_grad = t.requires_grad();
  return type;
}

Shape TensorType::effective_strides() const {
  return strides.empty() ? contiguous_strides(sizes) : strides;
}

std::string TensorType::str() const {
  std::string s(dtype_short_name(dtype));
  s += shape_str(sizes);
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on `" " + device.str()`.
  if (!strides.empty()) {
    s += " strided";
    s += shape_str(strides);
  }
  if (!device.is_cpu()) {
    s += ' ';
    s += device.str();
  }
  if (requires_grad) s += " requires_grad";
  return s;
}

}  // namespace kiln::ir
