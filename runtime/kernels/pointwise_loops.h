// Inner loops for pointwise kernels over a TensorIterator. Each loop has a contiguous fast path
// (and a broadcast-scalar path) that the compiler vectorizes, and a strided fallback.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "kiln/base/dtype.h"
#include "kiln/runtime/kernels/float_loop_clones.h"
#include "kiln/runtime/kernels/tensor_iterator.h"

namespace kiln {

// Note [Multiversioned float loops] (float_loop_clones.h): the contiguous float32 unary loop,
// and the binary one for ops that ask for it, have an AVX-512 clone.

template <class F>
KILN_FLOAT_LOOP_CLONES void unary_contiguous_f32(float* out, const float* in, int64_t n,
                                                 const F& f) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(f(in[i]));
}

// Note [Reduced-range float loops]
// Some float32 functions (sin, cos) have a vectorized form valid for |x| <= limit and a scalar
// one for every x (which branches to libm beyond the limit, so loops over it do not vectorize).
// This loop looks at each block's inputs once (an integer max of |x|'s bits, which vectorizes and
// orders NaN above inf) and runs the vectorized form over blocks within the limit and the
// scalar one over the others: the results are the scalar function's everywhere, and a block is
// read twice only while it is in L1. Reading the block before writing any of it keeps in-place
// calls (out == in) correct.
template <class Reduced, class Full>
KILN_FLOAT_LOOP_CLONES void unary_contiguous_f32_reduced(float* out, const float* in, int64_t n,
                                                         float limit, const Reduced& reduced,
                                                         const Full& full) {
  constexpr int64_t kBlock = 1024;
  const uint32_t limit_bits = std::bit_cast<uint32_t>(limit);
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t m = std::min(kBlock, n - start);
    const float* x = in + start;
    float* y = out + start;
    uint32_t widest = 0;
    for (int64_t i = 0; i < m; ++i)
      widest = std::max(widest, std::bit_cast<uint32_t>(x[i]) & 0x7fffffffu);
    if (widest <= limit_bits) {
      for (int64_t i = 0; i < m; ++i)
        y[i] = reduced(x[i]);
    } else {
      for (int64_t i = 0; i < m; ++i)
        y[i] = full(x[i]);
    }
  }
}

// out = f(in), computed in compute_t<T>. `contiguous_f32`, when given, replaces the contiguous
// float32 loop: it is called as contiguous_f32(out, in, n).
template <class Out, class In, class F, class ContiguousF32 = std::nullptr_t>
void unary_loop(const TensorIterator& it, const F& f,
                const ContiguousF32& contiguous_f32 = nullptr) {
  using C = compute_t<In>;
  it.for_each([&](char** data, const int64_t* s, int64_t n) {
    auto* out = reinterpret_cast<Out*>(data[0]);
    const auto* in = reinterpret_cast<const In*>(data[1]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      if constexpr (std::is_same_v<Out, float> && std::is_same_v<In, float>) {
        if constexpr (std::is_null_pointer_v<ContiguousF32>) {
          unary_contiguous_f32(out, in, n, f);
        } else {
          contiguous_f32(out, in, n);
        }
      } else {
        for (int64_t i = 0; i < n; ++i)
          out[i] = static_cast<Out>(f(static_cast<C>(in[i])));
      }
    } else if (s[0] == sizeof(Out) && s[1] == 0) {
      Out v = static_cast<Out>(f(static_cast<C>(in[0])));
      for (int64_t i = 0; i < n; ++i)
        out[i] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(data[0] + i * s[0]) =
            static_cast<Out>(f(static_cast<C>(*reinterpret_cast<const In*>(data[1] + i * s[1]))));
      }
    }
  });
}

// The contiguous float32 loop of a binary op whose math is compute bound (pow), with an AVX-512
// clone (Note [Multiversioned float loops]); binary_loop calls it when asked to.
template <class F>
KILN_FLOAT_LOOP_CLONES void binary_contiguous_f32(float* out, const float* a, const float* b,
                                                  int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(a[i], b[i]);
}

// out = f(a, b), computed in compute_t<In>. With `clone_f32`, float32 operands that are all
// contiguous run binary_contiguous_f32, the loop with an AVX-512 clone.
template <class Out, class In, class F>
void binary_loop(const TensorIterator& it, const F& f, bool clone_f32 = false) {
  using C = compute_t<In>;
  it.for_each([&](char** data, const int64_t* s, int64_t n) {
    auto* out = reinterpret_cast<Out*>(data[0]);
    const auto* a = reinterpret_cast<const In*>(data[1]);
    const auto* b = reinterpret_cast<const In*>(data[2]);
    constexpr int64_t so = sizeof(Out), si = sizeof(In);
    if (s[0] == so && s[1] == si && s[2] == si) {
      if constexpr (std::is_same_v<Out, float> && std::is_same_v<In, float>) {
        if (clone_f32) {
          binary_contiguous_f32(out, a, b, n, f);
          return;
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<Out>(f(static_cast<C>(a[i]), static_cast<C>(b[i])));
      }
    } else if (s[0] == so && s[1] == si && s[2] == 0) {
      C bv = static_cast<C>(b[0]);
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<Out>(f(static_cast<C>(a[i]), bv));
    } else if (s[0] == so && s[1] == 0 && s[2] == si) {
      C av = static_cast<C>(a[0]);
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<Out>(f(av, static_cast<C>(b[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        C x = static_cast<C>(*reinterpret_cast<const In*>(data[1] + i * s[1]));
        C y = static_cast<C>(*reinterpret_cast<const In*>(data[2] + i * s[2]));
        *reinterpret_cast<Out*>(data[0] + i * s[0]) = static_cast<Out>(f(x, y));
      }
    }
  });
}

}  // namespace kiln
