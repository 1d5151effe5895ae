// Inner loops for pointwise kernels over a TensorIterator. Each loop has a contiguous fast path
// (and a broadcast-scalar path) that the compiler vectorizes, and a strided fallback.
#pragma once

#include <type_traits>

#include "kiln/runtime/dtype.h"
#include "kiln/runtime/kernels/float_loop_clones.h"
#include "kiln/runtime/kernels/tensor_iterator.h"

namespace kiln {

// Note [Multiversioned float loops] (float_loop_clones.h): the contiguous float32 unary loop
// has an AVX-512 clone.

template <class F>
KILN_FLOAT_LOOP_CLONES void unary_contiguous_f32(float* out, const float* in, int64_t n,
                                                 const F& f) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(f(in[i]));
}

// out = f(in), computed in compute_t<T>.
template <class Out, class In, class F>
void unary_loop(const TensorIterator& it, const F& f) {
  using C = compute_t<In>;
  it.for_each([&](char** data, const int64_t* s, int64_t n) {
    auto* out = reinterpret_cast<Out*>(data[0]);
    const auto* in = reinterpret_cast<const In*>(data[1]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      if constexpr (std::is_same_v<Out, float> && std::is_same_v<In, float>) {
        unary_contiguous_f32(out, in, n, f);
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

// out = f(a, b), computed in compute_t<In>.
template <class Out, class In, class F>
void binary_loop(const TensorIterator& it, const F& f) {
  using C = compute_t<In>;
  it.for_each([&](char** data, const int64_t* s, int64_t n) {
    auto* out = reinterpret_cast<Out*>(data[0]);
    const auto* a = reinterpret_cast<const In*>(data[1]);
    const auto* b = reinterpret_cast<const In*>(data[2]);
    constexpr int64_t so = sizeof(Out), si = sizeof(In);
    if (s[0] == so && s[1] == si && s[2] == si) {
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
