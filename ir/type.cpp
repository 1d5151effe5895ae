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

SymShape TensorType::symbolic_sizes() const {
  return is_symbolic() ? sym_sizes : to_sym_shape(sizes);
}

SymShape TensorType::symbolic_strides() const {
  if (!sym_strides.empty()) return sym_strides;
  if (!is_symbolic() || !strides.empty()) return to_sym_shape(effective_strides());
  return contiguous_strides(sym_sizes);
}

bool symbolic_strides_are_contiguous(std::span<const SymInt> sizes,
                                     std::span<const SymInt> strides) {
  if (sizes.size() != strides.size()) return false;
  SymInt running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == SymInt(1)) continue;
    if (!(strides[i] == running)) return false;
    running = running * sizes[i];
  }
  return true;
}

void TensorType::evaluate_hints(std::span<const int64_t> hints) {
  if (!is_symbolic()) return;
  sizes.resize(sym_sizes.size());
  for (size_t i = 0; i < sym_sizes.size(); ++i)
    sizes[i] = sym_sizes[i].evaluate(hints);
  strides.clear();
  for (const SymInt& s : sym_strides)
    strides.push_back(s.evaluate(hints));
}

std::string TensorType::str() const {
  std::string s(dtype_short_name(dtype));
  s += is_symbolic() ? sym_shape_str(sym_sizes) : shape_str(sizes);
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on `" " + device.str()`.
  if (!sym_strides.empty()) {
    s += " strided";
    s += sym_shape_str(sym_strides);
  } else if (!strides.empty()) {
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
