#include "kiln/runtime/type_promotion.h"

#include <cmath>
#include <limits>

#include "kiln/base/error.h"

namespace kiln {
namespace {

int category(DType t) {
  return t == kBool ? 0 : is_integral(t, false) ? 1 : 2;
}

// `higher` is the result of the more important tier; `lower` only matters when it is of a
// higher category.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (category(*lower) > category(*higher)) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

DType result_type(std::span<const MetaRef> tensors, const Scalar* scalar) {
  std::optional<DType> dim_result, zero_result, wrapped_result;
  for (const MetaRef& t : tensors) {
    std::optional<DType>& slot = t.sizes.empty() ? zero_result : dim_result;
    slot = slot ? promote_types(*slot, t.dtype) : t.dtype;
  }
  if (scalar != nullptr) wrapped_result = scalar->default_dtype();
  return combine(dim_result, combine(zero_result, wrapped_result)).value_or(kDefaultFloat);
}

void check_scalar_fits(std::string_view op, const Scalar& value, DType dtype) {
  // Largest finite value of each floating dtype; the integer dtypes' ranges as doubles are
  // exact powers of two, so comparing against them is exact.
  auto fits = [&]() {
    switch (dtype) {
      case kBool:
        return true;
      case kUInt8:
      case kInt8:
      case kInt16: {
        // torch's c10::overflows: an integer fits the type's range, except that uint8 also
        // takes negatives down to -255, which wrap (x - 1 as x + 255); a float fits
        // [lowest, max].
        auto lo = static_cast<double>(integer_min(dtype)),
             hi = static_cast<double>(integer_max(dtype));
        if (value.is_floating()) return value.to_double() >= lo && value.to_double() <= hi;
        int64_t v = value.to_int();
        return v <= integer_max(dtype) &&
               v >= (dtype == kUInt8 ? -integer_max(dtype) : integer_min(dtype));
      }
      case kInt32:
      case kInt64: {
        double lo = dtype == kInt32 ? -0x1p31 : -0x1p63, hi = -lo;
        if (!value.is_floating()) {
          int64_t v = value.to_int();
          return dtype == kInt64 || (v >= INT32_MIN && v <= INT32_MAX);
        }
        double v = value.to_double();
        return std::isfinite(v) && (dtype == kInt32 ? v > lo - 1 : v >= lo) && v < hi;
      }
      case kFloat16:
      case kBFloat16:
      case kFloat32:
      case kFloat64: {
        double v = value.to_double();
        double max = dtype == kFloat16    ? 65504.0
                     : dtype == kBFloat16 ? 0x1.fep127
                     : dtype == kFloat32  ? static_cast<double>(std::numeric_limits<float>::max())
                                          : std::numeric_limits<double>::max();
        return !std::isfinite(v) || std::abs(v) <= max;
      }
    }
    return true;
  };
  KILN_CHECK(fits(), "{}: value cannot be converted to type {} without overflow (value {})", op,
             dtype, value);
}

}  // namespace kiln
