// A number passed to an op as an attribute (the `other` of add(x, 2.0), the value of fill_).
// It remembers its category, which decides type promotion the way a Python number does in
// PyTorch: a float scalar turns an integer tensor into a float one, an int scalar does not
// widen an int32 tensor.
#pragma once

#include <fmt/format.h>

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "kiln/base/dtype.h"

namespace kiln {

class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Float };

  Scalar() : Scalar(int64_t{0}) {}
  template <std::floating_point T>
  Scalar(T v) : kind_(Kind::Float), d_(static_cast<double>(v)) {}  // NOLINT: implicit
  template <std::integral T>
  requires(!std::same_as<T, bool>) Scalar(T v)
      : kind_(Kind::Int), i_(static_cast<int64_t>(v)) {}  // NOLINT: implicit
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}            // NOLINT: implicit
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}       // NOLINT: implicit
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}   // NOLINT: implicit

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0;
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(to_int());
    } else {
      return static_cast<T>(to_double());
    }
  }
  // The dtype a tensor made from this number alone would get.
  DType default_dtype() const {
    return kind_ == Kind::Float ? kDefaultFloat : kind_ == Kind::Int ? kInt64 : kBool;
  }

  friend bool operator==(const Scalar& a, const Scalar& b) {
    return a.kind_ == b.kind_ && (a.kind_ == Kind::Float ? a.d_ == b.d_ : a.i_ == b.i_);
  }

 private:
  Kind kind_;
  union {
    double d_;
    int64_t i_;
  };
};

// A scalar operand as an eager kernel over elements of type T computes with it: converted to
// compute_t<T>, except that for the small integer types it is first converted to T itself (so
// 300 against a uint8 tensor is 44), as torch casts a wrapped number to the op's dtype (Note
// [Small integer dtypes] in dtype.h). The kernel-IR expressions use the same conversion.
template <class T>
compute_t<T> scalar_value(const Scalar& s) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) < 4) {
    return static_cast<compute_t<T>>(s.to<T>());
  } else {
    return s.to<compute_t<T>>();
  }
}

}  // namespace kiln

template <>
struct fmt::formatter<kiln::Scalar> : fmt::formatter<std::string_view> {
  auto format(const kiln::Scalar& s, fmt::format_context& ctx) const {
    if (s.is_floating()) return fmt::format_to(ctx.out(), "{}", s.to_double());
    if (s.is_bool()) return fmt::format_to(ctx.out(), "{}", s.to<bool>() ? "true" : "false");
    return fmt::format_to(ctx.out(), "{}", s.to_int());
  }
};
