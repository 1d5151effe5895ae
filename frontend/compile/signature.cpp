#include "kiln/frontend/compile/signature.h"

#include <fmt/format.h>

#include "kiln/ir/type.h"
#include "kiln/runtime/attrs.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln::compile_detail {
namespace {

std::string tensor_str(const TensorSignature& t) {
  if (!t.defined) return "undefined";
  std::string s = fmt::format("{}{}", ir::dtype_short_name(t.dtype), shape_str(t.sizes));
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on `" " + t.device.str()`.
  if (!t.device.is_cpu()) {
    s += ' ';
    s += t.device.str();
  }
  if (!strides_are_contiguous(t.sizes, t.strides)) {
    s += " strided";
    s += shape_str(t.strides);
  }
  if (t.requires_grad) s += " requires_grad";
  if (t.shares_storage_with >= 0) s += fmt::format(" aliases input {}", t.shares_storage_with);
  return s;
}

}  // namespace

Signature Signature::of(const std::vector<Tensor>& inputs) {
  Signature s;
  s.grad_mode = GradMode::is_enabled();
  s.inputs.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    TensorSignature ts;
    if (!t.defined()) {
      ts.defined = false;
    } else {
      ts.dtype = t.dtype();
      ts.device = t.device();
      ts.sizes = t.sizes();
      ts.strides = t.strides();
      ts.requires_grad = t.requires_grad();
      const void* storage = t.impl()->storage().get();
      for (size_t j = 0; j < s.inputs.size() && ts.shares_storage_with < 0; ++j) {
        if (inputs[j].defined() && inputs[j].impl()->storage().get() == storage)
          ts.shares_storage_with = static_cast<int64_t>(j);
      }
    }
    s.inputs.push_back(std::move(ts));
  }
  return s;
}

size_t Signature::hash() const {
  size_t h = grad_mode ? 1 : 2;
  for (const TensorSignature& t : inputs) {
    detail::hash_combine(h, detail::hash_field(t.sizes));
    detail::hash_combine(h, detail::hash_field(t.strides));
    detail::hash_combine(h, static_cast<size_t>(t.dtype) * 31 +
                                2 * static_cast<size_t>(t.requires_grad) +
                                4 * static_cast<size_t>(t.defined));
    detail::hash_combine(h, detail::hash_field(t.device));
    detail::hash_combine(h, static_cast<size_t>(t.shares_storage_with + 1));
  }
  return h;
}

bool Signature::has_aliased_inputs() const {
  for (const TensorSignature& t : inputs)
    if (t.shares_storage_with >= 0) return true;
  return false;
}

bool same_but_geometry(const TensorSignature& a, const TensorSignature& b) {
  return a.dtype == b.dtype && a.device == b.device && a.requires_grad == b.requires_grad &&
         a.defined == b.defined && a.shares_storage_with == b.shares_storage_with;
}

std::string Signature::str() const {
  std::string s = "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) s += ", ";
    s += tensor_str(inputs[i]);
  }
  return s + ") grad_mode=" + (grad_mode ? "on" : "off");
}

std::string describe_change(const Signature& before, const Signature& after) {
  std::vector<std::string> changes;
  if (before.inputs.size() != after.inputs.size()) {
    changes.push_back(
        fmt::format("number of inputs {} -> {}", before.inputs.size(), after.inputs.size()));
  }
  for (size_t i = 0; i < std::min(before.inputs.size(), after.inputs.size()); ++i) {
    const TensorSignature& a = before.inputs[i];
    const TensorSignature& b = after.inputs[i];
    if (a.defined != b.defined) {
      changes.push_back(fmt::format("input {}: {} -> {}", i, a.defined ? "defined" : "undefined",
                                    b.defined ? "defined" : "undefined"));
      continue;
    }
    if (a.sizes != b.sizes) {
      changes.push_back(
          fmt::format("input {}: sizes {} -> {}", i, shape_str(a.sizes), shape_str(b.sizes)));
    }
    if (a.dtype != b.dtype)
      changes.push_back(fmt::format("input {}: dtype {} -> {}", i, a.dtype, b.dtype));
    if (a.device != b.device) {
      changes.push_back(fmt::format("input {}: device {} -> {}", i, a.device, b.device));
    }
    if (a.strides != b.strides) {
      changes.push_back(
          fmt::format("input {}: strides {} -> {}", i, shape_str(a.strides), shape_str(b.strides)));
    }
    if (a.shares_storage_with != b.shares_storage_with) {
      auto alias = [](int64_t j) {
        return j < 0 ? std::string("no alias") : fmt::format("aliases input {}", j);
      };
      changes.push_back(fmt::format("input {}: {} -> {}", i, alias(a.shares_storage_with),
                                    alias(b.shares_storage_with)));
    }
    if (a.requires_grad != b.requires_grad) {
      changes.push_back(
          fmt::format("input {}: requires_grad {} -> {}", i, a.requires_grad, b.requires_grad));
    }
  }
  if (before.grad_mode != after.grad_mode) {
    changes.push_back(fmt::format("grad mode {} -> {}", before.grad_mode ? "on" : "off",
                                  after.grad_mode ? "on" : "off"));
  }
  std::string s;
  for (const std::string& c : changes)
    s += (s.empty() ? "" : "; ") + c;
  return s.empty() ? "no change" : s;
}

}  // namespace kiln::compile_detail
