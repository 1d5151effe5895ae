#include "kiln/kernel_ir/interpreter_lanes.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kiln/base/half.h"
#include "kiln/base/pointwise_math.h"

namespace kiln::kir::lanes {
namespace {

// Calls f(T{}) with the lane type of dtype t.
template <class F>
decltype(auto) with_lane(DType t, F&& f) {
  switch (t) {
    case DType::Bool:
      return f(uint8_t{});
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
      return f(int32_t{});  // a small integer is held as its value, like a 16-bit float
    case DType::Int64:
      return f(int64_t{});
    case DType::Float64:
      return f(double{});
    default:
      return f(float{});  // f32 and the 16-bit floats
  }
}

// Calls f(S{}) with the element type a buffer of dtype t stores.
template <class F>
decltype(auto) with_storage(DType t, F&& f) {
  switch (t) {
    case DType::Bool:
      return f(uint8_t{});  // read as a byte: a bool object must hold 0 or 1
    case DType::UInt8:
      return f(uint8_t{});
    case DType::Int8:
      return f(int8_t{});
    case DType::Int16:
      return f(int16_t{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::Float16:
      return f(Half{});
    case DType::BFloat16:
      return f(BFloat16{});
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
  }
  return f(float{});
}

template <class T>
constexpr bool kFloat = std::is_floating_point_v<T>;
template <class T>
constexpr bool kBool = std::is_same_v<T, uint8_t>;

// Two's complement arithmetic on signed lanes, without signed overflow.
template <class T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

template <class To, class From>
To convert(From x) {
  if constexpr (kBool<To>) {
    return x != 0;
  } else if constexpr (!kFloat<To> && kFloat<From>) {
    constexpr From lim = static_cast<From>(std::numeric_limits<To>::max()) + From(1);  // 2^(b-1)
    return x >= -lim && x < lim ? static_cast<To>(x) : std::numeric_limits<To>::min();
  } else {
    return static_cast<To>(x);
  }
}

// A value of lane type L rounded to a 16-bit dtype as static_cast<Half> would (through float).
template <class L>
float round16(DType t, L x) {
  auto f = static_cast<float>(x);
  return t == kFloat16 ? static_cast<float>(Half(f)) : static_cast<float>(BFloat16(f));
}

template <class T>
T max_nan(T acc, T v) {
  if constexpr (kFloat<T>) return v != v || v > acc ? v : acc;
  return v > acc ? v : acc;
}
template <class T>
T min_nan(T acc, T v) {
  if constexpr (kFloat<T>) return v != v || v < acc ? v : acc;
  return v < acc ? v : acc;
}

// Sum and product as the eager kernels compute them: b8 as C++ bool arithmetic converted back to
// bool, integers wrapping.
template <class T>
T sum2(T a, T b) {
  if constexpr (kBool<T>) {
    return a | b;
  } else if constexpr (kFloat<T>) {
    return a + b;
  } else {
    return wrap_add(a, b);
  }
}
template <class T>
T prod2(T a, T b) {
  if constexpr (kBool<T>) {
    return a & b;
  } else if constexpr (kFloat<T>) {
    return a * b;
  } else {
    return wrap_mul(a, b);
  }
}

template <class T>
T reduce(ReduceOp op, T acc, T v) {
  switch (op) {
    case ReduceOp::Sum:
      return sum2(acc, v);
    case ReduceOp::Prod:
      return prod2(acc, v);
    case ReduceOp::Max:
      return max_nan(acc, v);
    case ReduceOp::Min:
      return min_nan(acc, v);
  }
  return acc;
}

template <class T>
T identity_of(ReduceOp op) {
  using L = std::numeric_limits<T>;
  switch (op) {
    case ReduceOp::Sum:
      return T(0);
    case ReduceOp::Prod:
      return T(1);
    case ReduceOp::Max:
      if constexpr (kBool<T>) return T(0);
      return kFloat<T> ? -L::infinity() : L::lowest();
    case ReduceOp::Min:
      if constexpr (kBool<T>) return T(1);
      return kFloat<T> ? L::infinity() : L::max();
  }
  return T(0);
}

template <class T, class F>
void map1(const void* a, void* out, int n, F f) {
  const T* x = static_cast<const T*>(a);
  T* o = static_cast<T*>(out);
  for (int i = 0; i < n; ++i)
    o[i] = f(x[i]);
}

template <class T, class O = T, class F>
void map2(const void* a, const void* b, void* out, int n, F f) {
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  O* o = static_cast<O*>(out);
  for (int i = 0; i < n; ++i)
    o[i] = f(x[i], y[i]);
}

template <class T>
void unary_float(UnaryOp op, const void* a, void* out, int n) {
  namespace m = kiln::math;
  switch (op) {
    case UnaryOp::Neg:
      return map1<T>(a, out, n, [](T x) { return -x; });
    case UnaryOp::Abs:
      return map1<T>(a, out, n, [](T x) { return m::abs(x); });
    case UnaryOp::Exp:
      return map1<T>(a, out, n, [](T x) { return m::exp(x); });
    case UnaryOp::Log:
      return map1<T>(a, out, n, [](T x) { return m::log(x); });
    case UnaryOp::Log1p:
      return map1<T>(a, out, n, [](T x) { return m::log1p(x); });
    case UnaryOp::Expm1:
      return map1<T>(a, out, n, [](T x) { return m::expm1(x); });
    case UnaryOp::Sqrt:
      return map1<T>(a, out, n, [](T x) { return m::sqrt(x); });
    case UnaryOp::Sin:
      return map1<T>(a, out, n, [](T x) { return m::sin(x); });
    case UnaryOp::Cos:
      return map1<T>(a, out, n, [](T x) { return m::cos(x); });
    case UnaryOp::Tanh:
      return map1<T>(a, out, n, [](T x) { return m::tanh(x); });
    case UnaryOp::Erf:
      return map1<T>(a, out, n, [](T x) { return m::erf(x); });
    case UnaryOp::Exp2:
      return map1<T>(a, out, n, [](T x) { return m::exp2(x); });
    case UnaryOp::GeluExact:
      return map1<T>(a, out, n, [](T x) { return m::gelu_exact(x); });
    case UnaryOp::Not:
      return;  // the verifier allows not on b8 only
  }
}

template <class T>
int binary_int(BinaryOp op, const void* a, const void* b, void* out, int n, const uint8_t* mask) {
  using B = uint8_t;
  switch (op) {
    case BinaryOp::Add:
      map2<T>(a, b, out, n, [](T x, T y) { return wrap_add(x, y); });
      return -1;
    case BinaryOp::Sub:
      map2<T>(a, b, out, n, [](T x, T y) { return wrap_sub(x, y); });
      return -1;
    case BinaryOp::Mul:
      map2<T>(a, b, out, n, [](T x, T y) { return wrap_mul(x, y); });
      return -1;
    case BinaryOp::Div:
    case BinaryOp::Rem: {
      const T* d = static_cast<const T*>(b);
      for (int i = 0; i < n; ++i)
        if (d[i] == 0 && (mask == nullptr || mask[i])) return i;
      // Inactive lanes divide by 1. MIN / -1 overflows: it wraps to MIN (the two's complement
      // quotient), and its remainder is 0.
      if (op == BinaryOp::Div) {
        map2<T>(a, b, out, n,
                [](T x, T y) { return y == -1 ? wrap_sub(T(0), x) : T(x / (y ? y : 1)); });
      } else {
        map2<T>(a, b, out, n, [](T x, T y) { return y == -1 || y == 0 ? T(0) : T(x % y); });
      }
      return -1;
    }
    case BinaryOp::Pow:
      map2<T>(a, b, out, n, [](T x, T y) { return kiln::math::pow(x, y); });
      return -1;
    case BinaryOp::Max:
      map2<T>(a, b, out, n, [](T x, T y) { return x > y ? x : y; });
      return -1;
    case BinaryOp::Min:
      map2<T>(a, b, out, n, [](T x, T y) { return x < y ? x : y; });
      return -1;
    case BinaryOp::Eq:
      map2<T, B>(a, b, out, n, [](T x, T y) { return B(x == y); });
      return -1;
    case BinaryOp::Ne:
      map2<T, B>(a, b, out, n, [](T x, T y) { return B(x != y); });
      return -1;
    case BinaryOp::Lt:
      map2<T, B>(a, b, out, n, [](T x, T y) { return B(x < y); });
      return -1;
    case BinaryOp::Le:
      map2<T, B>(a, b, out, n, [](T x, T y) { return B(x <= y); });
      return -1;
    case BinaryOp::And:
    case BinaryOp::Or:
      return -1;  // b8 only
  }
  return -1;
}

template <class T>
void binary_float(BinaryOp op, const void* a, const void* b, void* out, int n) {
  using B = uint8_t;
  switch (op) {
    case BinaryOp::Add:
      return map2<T>(a, b, out, n, [](T x, T y) { return x + y; });
    case BinaryOp::Sub:
      return map2<T>(a, b, out, n, [](T x, T y) { return x - y; });
    case BinaryOp::Mul:
      return map2<T>(a, b, out, n, [](T x, T y) { return x * y; });
    case BinaryOp::Div:
      return map2<T>(a, b, out, n, [](T x, T y) { return x / y; });
    case BinaryOp::Rem:
      return map2<T>(a, b, out, n, [](T x, T y) { return std::fmod(x, y); });
    case BinaryOp::Pow:
      return map2<T>(a, b, out, n, [](T x, T y) { return kiln::math::pow(x, y); });
    // NaN-propagating, as the Max and Min accumulators (torch.maximum, torch.minimum).
    case BinaryOp::Max:
      return map2<T>(a, b, out, n, [](T x, T y) { return x != x ? x : max_nan(x, y); });
    case BinaryOp::Min:
      return map2<T>(a, b, out, n, [](T x, T y) { return x != x ? x : min_nan(x, y); });
    case BinaryOp::Eq:
      return map2<T, B>(a, b, out, n, [](T x, T y) { return B(x == y); });
    case BinaryOp::Ne:
      return map2<T, B>(a, b, out, n, [](T x, T y) { return B(x != y); });
    case BinaryOp::Lt:
      return map2<T, B>(a, b, out, n, [](T x, T y) { return B(x < y); });
    case BinaryOp::Le:
      return map2<T, B>(a, b, out, n, [](T x, T y) { return B(x <= y); });
    case BinaryOp::And:
    case BinaryOp::Or:
      return;  // b8 only
  }
}

// b8 arithmetic as C++ does it on bool: computed in int, converted back to bool (nonzero).
void binary_bool(BinaryOp op, const void* a, const void* b, void* out, int n) {
  using B = uint8_t;
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Max:
    case BinaryOp::Or:
      return map2<B>(a, b, out, n, [](B x, B y) { return B(x | y); });
    case BinaryOp::Mul:
    case BinaryOp::Min:
    case BinaryOp::And:
      return map2<B>(a, b, out, n, [](B x, B y) { return B(x & y); });
    case BinaryOp::Sub:
    case BinaryOp::Ne:
      return map2<B>(a, b, out, n, [](B x, B y) { return B(x ^ y); });
    case BinaryOp::Eq:
      return map2<B>(a, b, out, n, [](B x, B y) { return B(x == y); });
    case BinaryOp::Lt:
      return map2<B>(a, b, out, n, [](B x, B y) { return B(x < y); });
    case BinaryOp::Le:
      return map2<B>(a, b, out, n, [](B x, B y) { return B(x <= y); });
    case BinaryOp::Div:
    case BinaryOp::Rem:
    case BinaryOp::Pow:
      return;  // not on b8 (the verifier's rule)
  }
}

}  // namespace

void fill_const(const Expr& e, void* out, int n) {
  with_lane(e.dtype, [&](auto tag) {
    using T = decltype(tag);
    T v = kFloat<T> ? static_cast<T>(e.value) : static_cast<T>(e.ivalue);
    T* o = static_cast<T*>(out);
    for (int i = 0; i < n; ++i)
      o[i] = v;
  });
}

void broadcast(DType t, const void* in, void* out, int n) {
  with_lane(t, [&](auto tag) {
    using T = decltype(tag);
    T v = *static_cast<const T*>(in);
    T* o = static_cast<T*>(out);
    for (int i = 0; i < n; ++i)
      o[i] = v;
  });
}

void copy(DType t, const void* in, void* out, int n) {
  with_lane(t, [&](auto tag) { std::memcpy(out, in, sizeof(tag) * static_cast<size_t>(n)); });
}

void load(const char* base, DType buffer, const int64_t* index, void* out, int n) {
  with_storage(buffer, [&](auto stag) {
    using S = decltype(stag);
    const S* src = reinterpret_cast<const S*>(base);
    with_lane(buffer, [&](auto ltag) {
      using T = decltype(ltag);
      T* o = static_cast<T*>(out);
      for (int i = 0; i < n; ++i) {
        if constexpr (kBool<T>) {
          o[i] = src[index[i]] != 0;
        } else {
          o[i] = static_cast<T>(src[index[i]]);
        }
      }
    });
  });
}

void store(char* base, DType buffer, const int64_t* index, DType value_dtype, const void* value,
           int n, const uint8_t* mask) {
  Buf converted;
  if (value_dtype != buffer) {
    cast(value_dtype, value, buffer, converted.slot, n);
    value = converted.slot;
  }
  with_storage(buffer, [&](auto stag) {
    using S = decltype(stag);
    S* dst = reinterpret_cast<S*>(base);
    with_lane(buffer, [&](auto ltag) {
      using T = decltype(ltag);
      const T* v = static_cast<const T*>(value);
      for (int i = 0; i < n; ++i)
        if (mask == nullptr || mask[i]) dst[index[i]] = static_cast<S>(v[i]);
    });
  });
}

void cast(DType from, const void* in, DType to, void* out, int n) {
  with_lane(from, [&](auto ftag) {
    using F = decltype(ftag);
    const F* x = static_cast<const F*>(in);
    if (to == kFloat16 || to == kBFloat16) {
      float* o = static_cast<float*>(out);
      for (int i = 0; i < n; ++i)
        o[i] = round16(to, x[i]);
      return;
    }
    with_lane(to, [&](auto ttag) {
      using T = decltype(ttag);
      T* o = static_cast<T*>(out);
      for (int i = 0; i < n; ++i)
        o[i] = convert<T>(x[i]);
      if constexpr (std::is_same_v<T, int32_t>) {
        // To a small integer: through int32, then narrowed (Note [Kernel IR dtypes]).
        if (is_small_integral(to)) {
          for (int i = 0; i < n; ++i)
            o[i] = static_cast<int32_t>(wrap_integer(o[i], to));
        }
      }
    });
  });
}

void unary(UnaryOp op, DType t, const void* a, void* out, int n) {
  with_lane(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kFloat<T>) {
      unary_float<T>(op, a, out, n);
    } else if constexpr (kBool<T>) {
      map1<T>(a, out, n, [](T x) { return T(!x); });
    } else if (op == UnaryOp::Neg) {
      map1<T>(a, out, n, [](T x) { return wrap_sub<T>(0, x); });
    } else {
      map1<T>(a, out, n, [](T x) { return x < 0 ? wrap_sub<T>(0, x) : x; });
    }
  });
}

int binary(BinaryOp op, DType t, const void* a, const void* b, void* out, int n,
           const uint8_t* mask) {
  return with_lane(t, [&](auto tag) -> int {
    using T = decltype(tag);
    if constexpr (kFloat<T>) {
      binary_float<T>(op, a, b, out, n);
      return -1;
    } else if constexpr (kBool<T>) {
      binary_bool(op, a, b, out, n);
      return -1;
    } else {
      return binary_int<T>(op, a, b, out, n, mask);
    }
  });
}

void select(DType t, const uint8_t* cond, const void* a, const void* b, void* out, int n) {
  with_lane(t, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    T* o = static_cast<T*>(out);
    for (int i = 0; i < n; ++i)
      o[i] = cond[i] ? x[i] : y[i];
  });
}

void identity(ReduceOp op, DType t, void* out, int n) {
  with_lane(t, [&](auto tag) {
    using T = decltype(tag);
    T v = identity_of<T>(op);
    T* o = static_cast<T*>(out);
    for (int i = 0; i < n; ++i)
      o[i] = v;
  });
}

void combine(ReduceOp op, DType t, void* acc, const void* v, int n, const uint8_t* mask) {
  with_lane(t, [&](auto tag) {
    using T = decltype(tag);
    T* a = static_cast<T*>(acc);
    const T* x = static_cast<const T*>(v);
    for (int i = 0; i < n; ++i)
      if (mask == nullptr || mask[i]) a[i] = reduce(op, a[i], x[i]);
  });
}

void fold(ReduceOp op, DType t, void* acc, const void* v, int n, const uint8_t* mask) {
  with_lane(t, [&](auto tag) {
    using T = decltype(tag);
    T a = *static_cast<T*>(acc);
    const T* x = static_cast<const T*>(v);
    for (int i = 0; i < n; ++i)
      if (mask == nullptr || mask[i]) a = reduce(op, a, x[i]);
    *static_cast<T*>(acc) = a;
  });
}

}  // namespace kiln::kir::lanes
