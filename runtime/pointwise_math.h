// Note [Pointwise math is written once]
// Each pointwise op's scalar math is one template over a value type V. The eager CPU kernels
// instantiate it with float/double/int types; the LLVM and CUDA code generators instantiate
// the same template with their expression types, which provide the primitives below (exp,
// log, tanh, select, ...) as overloads found by argument-dependent lookup. Write new math only
// in terms of V's arithmetic and these primitives, so that every backend computes the same
// function.
#pragma once

#include <cmath>
#include <type_traits>

namespace kiln::math {

// ---- primitives for built-in arithmetic types ----
template <class T>
requires std::is_arithmetic_v<T> T select(bool c, T a, T b) {
  return c ? a : b;
}
using std::exp;
using std::log;
using std::tanh;

// ---- op math ----
template <class V>
V add(V a, V b, V alpha) {
  return a + alpha * b;
}
template <class V>
V sub(V a, V b, V alpha) {
  return a - alpha * b;
}
template <class V>
V mul(V a, V b) {
  return a * b;
}
template <class V>
V div(V a, V b) {
  return a / b;
}
template <class V>
V neg(V x) {
  return -x;
}
template <class V>
V exp_(V x) {
  return exp(x);
}
template <class V>
V log_(V x) {
  return log(x);
}
template <class V>
V tanh_(V x) {
  return tanh(x);
}
template <class V>
V sigmoid(V x) {
  return V(1) / (V(1) + exp(-x));
}
// NaN propagates: (NaN < 0) is false, so NaN selects x.
template <class V>
V relu(V x) {
  return select(x < V(0), V(0), x);
}

}  // namespace kiln::math
