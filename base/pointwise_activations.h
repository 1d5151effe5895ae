// The activation functions of torch.nn.functional beyond relu, gelu and silu (leaky_relu, elu,
// softplus, hardtanh, hardswish, mish), lerp, reciprocal and clamp with tensor bounds, each
// as torch computes it. Written in the primitives of pointwise_math.h.
#pragma once

#include "kiln/base/pointwise_math.h"

namespace kiln::math {

template <class V>
KILN_ALWAYS_INLINE V reciprocal(V x) {
  return V(1) / x;
}
// NaN propagates: 0 < NaN is false, and NaN * slope is NaN.
template <class V>
KILN_ALWAYS_INLINE V leaky_relu(V x, V negative_slope) {
  return select(V(0) < x, x, x * negative_slope);
}
template <class V>
KILN_ALWAYS_INLINE V elu(V x, V alpha) {
  return select(V(0) < x, x, alpha * expm1(x));
}
// Linear above the threshold (of x * beta), where log1p(exp) would overflow and equals x anyway.
template <class V>
KILN_ALWAYS_INLINE V softplus(V x, V beta, V threshold) {
  V xb = x * beta;
  return select(threshold < xb, x, log1p(exp(xb)) / beta);
}
template <class V>
KILN_ALWAYS_INLINE V hardswish(V x) {
  return x * clamp(x + V(3), V(0), V(6)) / V(6);
}
// x tanh(softplus(x)); for large x exp overflows to inf and tanh(inf) is 1, so mish is x.
template <class V>
KILN_ALWAYS_INLINE V mish(V x) {
  return x * tanh(log1p(exp(x)));
}
// As torch: from whichever end the weight is nearer, so that lerp(a, b, 1) is exactly b.
template <class V>
KILN_ALWAYS_INLINE V lerp(V self, V end, V weight) {
  V d = end - self;
  return select(abs(weight) < V(0.5), self + weight * d, end - d * (V(1) - weight));
}
// clamp with tensor bounds, as torch: a NaN bound gives NaN, and NaN in x propagates (maximum and
// minimum propagate it); with min > max every element is max.
template <class V>
KILN_ALWAYS_INLINE V clamp_tensor(V x, V lo, V hi) {
  return select(lo != lo, lo, select(hi != hi, hi, minimum(maximum(x, lo), hi)));
}

}  // namespace kiln::math
