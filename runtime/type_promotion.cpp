#include "kiln/runtime/type_promotion.h"

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

}  // namespace kiln
