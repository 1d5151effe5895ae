#include "kiln/base/dtype.h"

#include <array>
#include <cstdint>

#include "kiln/base/error.h"

namespace kiln {

size_t element_size(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return 1;
    case DType::Int16:
      return 2;
    case DType::Int32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::Float64:
      return 8;
    case DType::Float16:
    case DType::BFloat16:
      return 2;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
    case DType::Int16:
      return "int16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
  }
  return "?";
}

namespace {
// In enum order (Note [DType order]).
constexpr std::array<std::string_view, kNumDTypes> kShortNames = {
    "b8", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"};
}  // namespace

std::string_view dtype_short_name(DType t) {
  return kShortNames[static_cast<size_t>(t)];
}

bool dtype_from_short_name(std::string_view name, DType* out) {
  for (size_t i = 0; i < kShortNames.size(); ++i) {
    if (kShortNames[i] == name) {
      *out = static_cast<DType>(i);
      return true;
    }
  }
  return false;
}

std::ostream& operator<<(std::ostream& os, DType t) {
  return os << dtype_name(t);
}

DType promote_types(DType a, DType b) {
  // Rows and columns in enum order (Note [DType order]), as torch.promote_types gives them.
  // uint8 with int8 goes to int16, the smallest type holding both ranges; Float16 with
  // BFloat16 goes to Float32 because neither holds the other's range/precision.
  constexpr DType b1 = DType::Bool, u1 = DType::UInt8, s1 = DType::Int8, s2 = DType::Int16,
                  i4 = DType::Int32, i8 = DType::Int64, f2 = DType::Float16, bf = DType::BFloat16,
                  f4 = DType::Float32, f8 = DType::Float64;
  static constexpr DType table[kNumDTypes][kNumDTypes] = {
      /* b1 */ {b1, u1, s1, s2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, s2, s2, i4, i8, f2, bf, f4, f8},
      /* s1 */ {s1, s2, s1, s2, i4, i8, f2, bf, f4, f8},
      /* s2 */ {s2, s2, s2, s2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

int64_t integer_min(DType t) {
  switch (t) {
    case DType::Int8:
      return INT8_MIN;
    case DType::Int16:
      return INT16_MIN;
    case DType::Int32:
      return INT32_MIN;
    case DType::Int64:
      return INT64_MIN;
    default:
      return 0;
  }
}

int64_t integer_max(DType t) {
  switch (t) {
    case DType::Bool:
      return 1;
    case DType::UInt8:
      return UINT8_MAX;
    case DType::Int8:
      return INT8_MAX;
    case DType::Int16:
      return INT16_MAX;
    case DType::Int32:
      return INT32_MAX;
    default:
      return INT64_MAX;
  }
}

int64_t wrap_integer(int64_t v, DType t) {
  switch (t) {
    case DType::Bool:
      return v != 0;
    case DType::UInt8:
      return static_cast<uint8_t>(v);
    case DType::Int8:
      return static_cast<int8_t>(v);
    case DType::Int16:
      return static_cast<int16_t>(v);
    case DType::Int32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

namespace detail {
void unsupported_dtype(std::string_view op, DType t, std::string_view allowed) {
  KILN_ERROR("{}: dtype {} is not supported (expected a {} dtype)", op, dtype_name(t), allowed);
}
}  // namespace detail

}  // namespace kiln
