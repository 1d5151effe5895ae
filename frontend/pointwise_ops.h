// Pointwise ops: math on each element, with broadcasting and type promotion.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// ---- pointwise ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);

// pow: int ** int stays int; a negative int scalar exponent of an int tensor throws.
Tensor pow(const Tensor& self, const Tensor& exponent);
Tensor pow(const Tensor& self, const Scalar& exponent);
// Float functions: integer inputs give float32 results.
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor erf(const Tensor& x);
// approximate: "none" (x * Phi(x) with erf) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
// At least one bound must be given; the bounds take part in type promotion.
Tensor clamp(const Tensor& x, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max = std::nullopt);
// Elementwise max/min with broadcasting; NaN propagates.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// cond must be bool; the three operands broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// ---- comparisons: computed in the promoted type, Bool results ----
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);

// ---- logical ops: any dtype, nonzero is true, Bool results ----
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);

// x where mask is false, value where it is true; mask (bool) broadcasts to x's shape.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);

// ---- in-place (each modifies self, through views too, and bumps its version counter) ----
// The other operand broadcasts to self's shape; a result type that can't be cast to self's
// dtype (int_tensor.add_(float_tensor)) throws. Like Tensor::copy_, they return self.
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
const Tensor& mul_(const Tensor& self, const Tensor& other);
const Tensor& mul_(const Tensor& self, const Scalar& other);
const Tensor& div_(const Tensor& self, const Tensor& other);
const Tensor& div_(const Tensor& self, const Scalar& other);
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& min,
                     const std::optional<Scalar>& max = std::nullopt);
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value);
const Tensor& relu_(const Tensor& self);

}  // namespace kiln
