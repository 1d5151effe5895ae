// Pointwise ops: math on each element, with broadcasting and type promotion.
#pragma once

#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// ---- pointwise ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1,
           std::source_location loc = std::source_location::current());
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1,
           std::source_location loc = std::source_location::current());
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1,
           std::source_location loc = std::source_location::current());
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1,
           std::source_location loc = std::source_location::current());
Tensor mul(const Tensor& a, const Tensor& b,
           std::source_location loc = std::source_location::current());
Tensor mul(const Tensor& a, const Scalar& b,
           std::source_location loc = std::source_location::current());
Tensor div(const Tensor& a, const Tensor& b,
           std::source_location loc = std::source_location::current());
Tensor div(const Tensor& a, const Scalar& b,
           std::source_location loc = std::source_location::current());
Tensor neg(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor exp(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor log(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor tanh(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor sigmoid(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor relu(const Tensor& x, std::source_location loc = std::source_location::current());

// pow: int ** int stays int; a negative int scalar exponent of an int tensor throws.
Tensor pow(const Tensor& self, const Tensor& exponent,
           std::source_location loc = std::source_location::current());
Tensor pow(const Tensor& self, const Scalar& exponent,
           std::source_location loc = std::source_location::current());
// Float functions: integer inputs give float32 results.
Tensor log1p(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor expm1(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor sqrt(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor rsqrt(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor silu(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor sin(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor cos(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor erf(const Tensor& x, std::source_location loc = std::source_location::current());
// approximate: "none" (x * Phi(x) with erf) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none",
            std::source_location loc = std::source_location::current());
// grad_output * d gelu(x) / dx in one pass (torch's gelu_backward); gelu's derivative calls it.
Tensor gelu_backward(const Tensor& grad_output, const Tensor& x,
                     const std::string& approximate = "none",
                     std::source_location loc = std::source_location::current());
Tensor abs(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor sign(const Tensor& x, std::source_location loc = std::source_location::current());
// At least one bound must be given; the bounds take part in type promotion.
Tensor clamp(const Tensor& x, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max = std::nullopt,
             std::source_location loc = std::source_location::current());
// clamp with tensor bounds, broadcast with x; an undefined Tensor leaves that side open (at
// least one must be defined). A NaN bound gives NaN, and with min > max every element is max.
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max,
             std::source_location loc = std::source_location::current());
Tensor clamp_min(const Tensor& x, const Tensor& min,
                 std::source_location loc = std::source_location::current());
Tensor clamp_max(const Tensor& x, const Tensor& max,
                 std::source_location loc = std::source_location::current());

// Rounding: integer inputs are returned unchanged (a copy). round rounds half to even; with
// decimals != 0 (floating inputs only) it rounds to that many decimal places, as torch.
Tensor floor(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor ceil(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor trunc(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor round(const Tensor& x, int64_t decimals = 0,
             std::source_location loc = std::source_location::current());
// fmod: the remainder with the dividend's sign (C's fmod); remainder: with the divisor's sign
// (Python's %). Integer division by zero throws.
Tensor fmod(const Tensor& self, const Tensor& other,
            std::source_location loc = std::source_location::current());
Tensor fmod(const Tensor& self, const Scalar& other,
            std::source_location loc = std::source_location::current());
Tensor remainder(const Tensor& self, const Tensor& other,
                 std::source_location loc = std::source_location::current());
Tensor remainder(const Tensor& self, const Scalar& other,
                 std::source_location loc = std::source_location::current());
Tensor reciprocal(const Tensor& x, std::source_location loc = std::source_location::current());
// self + weight * (end - self), for floating self and end of one dtype.
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight,
            std::source_location loc = std::source_location::current());
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight,
            std::source_location loc = std::source_location::current());

// Activations with torch.nn.functional's defaults; integer inputs give float32 results.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01,
                  std::source_location loc = std::source_location::current());
Tensor elu(const Tensor& x, double alpha = 1.0,
           std::source_location loc = std::source_location::current());
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0,
                std::source_location loc = std::source_location::current());
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0,
                std::source_location loc = std::source_location::current());
Tensor hardswish(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor mish(const Tensor& x, std::source_location loc = std::source_location::current());

// Elementwise max/min with broadcasting; NaN propagates.
Tensor maximum(const Tensor& a, const Tensor& b,
               std::source_location loc = std::source_location::current());
Tensor minimum(const Tensor& a, const Tensor& b,
               std::source_location loc = std::source_location::current());
// cond must be bool; the three operands broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b,
             std::source_location loc = std::source_location::current());
// A Python-number operand, as torch.where(cond, x, 2.0): the number takes part in type
// promotion as a wrapped scalar (x's dtype unless the number is of a higher category).
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b,
             std::source_location loc = std::source_location::current());
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b,
             std::source_location loc = std::source_location::current());
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b,
             std::source_location loc = std::source_location::current());

// ---- comparisons: computed in the promoted type, Bool results ----
Tensor eq(const Tensor& a, const Tensor& b,
          std::source_location loc = std::source_location::current());
Tensor eq(const Tensor& a, const Scalar& b,
          std::source_location loc = std::source_location::current());
Tensor ne(const Tensor& a, const Tensor& b,
          std::source_location loc = std::source_location::current());
Tensor ne(const Tensor& a, const Scalar& b,
          std::source_location loc = std::source_location::current());
Tensor lt(const Tensor& a, const Tensor& b,
          std::source_location loc = std::source_location::current());
Tensor lt(const Tensor& a, const Scalar& b,
          std::source_location loc = std::source_location::current());
Tensor le(const Tensor& a, const Tensor& b,
          std::source_location loc = std::source_location::current());
Tensor le(const Tensor& a, const Scalar& b,
          std::source_location loc = std::source_location::current());
Tensor gt(const Tensor& a, const Tensor& b,
          std::source_location loc = std::source_location::current());
Tensor gt(const Tensor& a, const Scalar& b,
          std::source_location loc = std::source_location::current());
Tensor ge(const Tensor& a, const Tensor& b,
          std::source_location loc = std::source_location::current());
Tensor ge(const Tensor& a, const Scalar& b,
          std::source_location loc = std::source_location::current());

// ---- logical ops: any dtype, nonzero is true, Bool results ----
Tensor logical_and(const Tensor& a, const Tensor& b,
                   std::source_location loc = std::source_location::current());
Tensor logical_or(const Tensor& a, const Tensor& b,
                  std::source_location loc = std::source_location::current());
Tensor logical_not(const Tensor& x, std::source_location loc = std::source_location::current());

// x where mask is false, value where it is true; mask (bool) broadcasts to x's shape.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value,
                   std::source_location loc = std::source_location::current());

// ---- in-place (each modifies self, through views too, and bumps its version counter) ----
// The other operand broadcasts to self's shape; a result type that can't be cast to self's
// dtype (int_tensor.add_(float_tensor)) throws. Like Tensor::copy_, they return self.
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1,
                   std::source_location loc = std::source_location::current());
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1,
                   std::source_location loc = std::source_location::current());
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1,
                   std::source_location loc = std::source_location::current());
const Tensor& sub_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1,
                   std::source_location loc = std::source_location::current());
const Tensor& mul_(const Tensor& self, const Tensor& other,
                   std::source_location loc = std::source_location::current());
const Tensor& mul_(const Tensor& self, const Scalar& other,
                   std::source_location loc = std::source_location::current());
const Tensor& div_(const Tensor& self, const Tensor& other,
                   std::source_location loc = std::source_location::current());
const Tensor& div_(const Tensor& self, const Scalar& other,
                   std::source_location loc = std::source_location::current());
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& min,
                     const std::optional<Scalar>& max = std::nullopt,
                     std::source_location loc = std::source_location::current());
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value,
                           std::source_location loc = std::source_location::current());
const Tensor& relu_(const Tensor& self, std::source_location loc = std::source_location::current());

// In-place twins of the rounding, remainder, lerp and activation ops (torch's names): self
// takes the result, which must be castable to its dtype (so reciprocal_ and the activations
// need a floating self). runtime/api/pointwise_in_place_ops.cpp.
#define KILN_DECLARE_UNARY_IN_PLACE(fn) \
  const Tensor& fn(const Tensor& x, std::source_location loc = std::source_location::current());
KILN_DECLARE_UNARY_IN_PLACE(floor_)
KILN_DECLARE_UNARY_IN_PLACE(ceil_)
KILN_DECLARE_UNARY_IN_PLACE(trunc_)
KILN_DECLARE_UNARY_IN_PLACE(reciprocal_)
KILN_DECLARE_UNARY_IN_PLACE(hardswish_)
KILN_DECLARE_UNARY_IN_PLACE(mish_)
KILN_DECLARE_UNARY_IN_PLACE(silu_)
#undef KILN_DECLARE_UNARY_IN_PLACE
const Tensor& round_(const Tensor& x, int64_t decimals = 0,
                     std::source_location loc = std::source_location::current());
const Tensor& fmod_(const Tensor& self, const Tensor& other,
                    std::source_location loc = std::source_location::current());
const Tensor& fmod_(const Tensor& self, const Scalar& other,
                    std::source_location loc = std::source_location::current());
const Tensor& remainder_(const Tensor& self, const Tensor& other,
                         std::source_location loc = std::source_location::current());
const Tensor& remainder_(const Tensor& self, const Scalar& other,
                         std::source_location loc = std::source_location::current());
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight,
                    std::source_location loc = std::source_location::current());
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight,
                    std::source_location loc = std::source_location::current());
const Tensor& leaky_relu_(const Tensor& x, double negative_slope = 0.01,
                          std::source_location loc = std::source_location::current());
const Tensor& elu_(const Tensor& x, double alpha = 1.0,
                   std::source_location loc = std::source_location::current());
const Tensor& hardtanh_(const Tensor& x, double min_val = -1.0, double max_val = 1.0,
                        std::source_location loc = std::source_location::current());

}  // namespace kiln
