// Element types, their sizes and names, and PyTorch's type promotion lattice.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>

#include <fmt/format.h>

#include "kiln/base/half.h"

namespace kiln {

// Note [DType order]
// Categories in order (bool, integers by width, floating by width), as torch's promotion
// lattice reads. The numeric values are not persisted: tensor files and the IR text formats
// store names, and every kernel cache key spells the dtype by name (dtype_short_name), so
// adding a dtype may renumber the enum. Tables indexed by the enum (promote_types, the short
// names) list it in this order.
enum class DType : int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64
};
inline constexpr int kNumDTypes = 10;

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kInt8 = DType::Int8;
inline constexpr DType kInt16 = DType::Int16;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;

// The dtype used when a factory is called without one, and the one that integer tensors
// promote to in ops that need a floating result (exp, true division, mean).
inline constexpr DType kDefaultFloat = DType::Float32;

size_t element_size(DType t);
std::string_view dtype_name(DType t);  // "float32", as torch prints it
// The short names of the IR text formats (graph and kernel IR): b8 u8 i8 i16 i32 i64 f16 bf16
// f32 f64.
std::string_view dtype_short_name(DType t);
bool dtype_from_short_name(std::string_view name, DType* out);
std::ostream& operator<<(std::ostream& os, DType t);

inline bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
inline bool is_integral(DType t, bool include_bool) {
  return t == DType::UInt8 || t == DType::Int8 || t == DType::Int16 || t == DType::Int32 ||
         t == DType::Int64 || (include_bool && t == DType::Bool);
}
// The integer dtypes narrower than int32, which compute in int32 and wrap when stored (Note
// [Small integer dtypes]).
inline bool is_small_integral(DType t) {
  return t == DType::UInt8 || t == DType::Int8 || t == DType::Int16;
}

// The smallest and largest values of an integer dtype (bool: 0 and 1).
int64_t integer_min(DType t);
int64_t integer_max(DType t);
// v stored in integer dtype t as a two's complement narrowing does (uint8: v mod 256; int64:
// v itself; bool: v != 0).
int64_t wrap_integer(int64_t v, DType t);

// The smallest dtype that both a and b convert to without losing their category
// (bool < integer < floating), as torch.promote_types.
DType promote_types(DType a, DType b);

// C++ element type <-> DType.
template <class T>
struct DTypeOf;
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::Int16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::Float16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::Float64;
};
template <class T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

// Note [Small integer dtypes]
// uint8, int8 and int16 are storage types, like the half types: arithmetic on them is carried
// out in int32 and the result is narrowed (two's complement, so uint8 wraps mod 256) when it
// is stored. That gives torch's results, which C++ computes the same way (integer promotion to
// int, then a narrowing store): +, -, *, floor division, remainder, pow, shifts and negation
// agree in every bit with arithmetic in the narrow type. The kernel IR follows the same rule
// (Note [Kernel IR dtypes]), so eager CPU, fused LLVM and CUDA kernels agree.
//
// The type arithmetic on T is carried out in: half types compute in float, small integers in
// int32.
template <class T>
struct ComputeTypeOf {
  using type = T;
};
template <>
struct ComputeTypeOf<uint8_t> {
  using type = int32_t;
};
template <>
struct ComputeTypeOf<int8_t> {
  using type = int32_t;
};
template <>
struct ComputeTypeOf<int16_t> {
  using type = int32_t;
};
template <>
struct ComputeTypeOf<Half> {
  using type = float;
};
template <>
struct ComputeTypeOf<BFloat16> {
  using type = float;
};
template <class T>
using compute_t = typename ComputeTypeOf<T>::type;

}  // namespace kiln

template <>
struct fmt::formatter<kiln::DType> : fmt::formatter<std::string_view> {
  auto format(kiln::DType t, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(kiln::dtype_name(t), ctx);
  }
};

// KILN_DISPATCH_DTYPES(dtype, "op", ALL|FLOAT|..., [&]<class scalar_t>() {...}) calls the
// lambda with the C++ element type of `dtype`, or throws naming the op when the set of types
// does not contain it.
namespace kiln::detail {
[[noreturn]] void unsupported_dtype(std::string_view op, DType t, std::string_view allowed);
}

#define KILN_DTYPE_CASE(enum_name, cpp_type, ...) \
  case ::kiln::DType::enum_name:                  \
    return __VA_ARGS__.template operator()<cpp_type>();

#define KILN_DISPATCH_FLOATING(dtype, op_name, ...)                          \
  [&] {                                                                      \
    switch (dtype) {                                                         \
      KILN_DTYPE_CASE(Float32, float, __VA_ARGS__)                           \
      KILN_DTYPE_CASE(Float64, double, __VA_ARGS__)                          \
      KILN_DTYPE_CASE(Float16, ::kiln::Half, __VA_ARGS__)                    \
      KILN_DTYPE_CASE(BFloat16, ::kiln::BFloat16, __VA_ARGS__)               \
      default:                                                               \
        ::kiln::detail::unsupported_dtype(op_name, dtype, "floating point"); \
    }                                                                        \
  }()

#define KILN_DISPATCH_NUMERIC(dtype, op_name, ...)                               \
  [&] {                                                                          \
    switch (dtype) {                                                             \
      KILN_DTYPE_CASE(Float32, float, __VA_ARGS__)                               \
      KILN_DTYPE_CASE(Float64, double, __VA_ARGS__)                              \
      KILN_DTYPE_CASE(Float16, ::kiln::Half, __VA_ARGS__)                        \
      KILN_DTYPE_CASE(BFloat16, ::kiln::BFloat16, __VA_ARGS__)                   \
      KILN_DTYPE_CASE(UInt8, uint8_t, __VA_ARGS__)                               \
      KILN_DTYPE_CASE(Int8, int8_t, __VA_ARGS__)                                 \
      KILN_DTYPE_CASE(Int16, int16_t, __VA_ARGS__)                               \
      KILN_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)                               \
      KILN_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)                               \
      default:                                                                   \
        ::kiln::detail::unsupported_dtype(op_name, dtype, "numeric (not bool)"); \
    }                                                                            \
  }()

#define KILN_DISPATCH_ALL(dtype, op_name, ...)                 \
  [&] {                                                        \
    switch (dtype) {                                           \
      KILN_DTYPE_CASE(Float32, float, __VA_ARGS__)             \
      KILN_DTYPE_CASE(Float64, double, __VA_ARGS__)            \
      KILN_DTYPE_CASE(Float16, ::kiln::Half, __VA_ARGS__)      \
      KILN_DTYPE_CASE(BFloat16, ::kiln::BFloat16, __VA_ARGS__) \
      KILN_DTYPE_CASE(UInt8, uint8_t, __VA_ARGS__)             \
      KILN_DTYPE_CASE(Int8, int8_t, __VA_ARGS__)               \
      KILN_DTYPE_CASE(Int16, int16_t, __VA_ARGS__)             \
      KILN_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)             \
      KILN_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)             \
      KILN_DTYPE_CASE(Bool, bool, __VA_ARGS__)                 \
    }                                                          \
    ::kiln::detail::unsupported_dtype(op_name, dtype, "any");  \
  }()
