#include "kiln/codegen/cuda/cuda_math.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "kiln/base/error.h"

namespace kiln::codegen::cuda {
namespace {

thread_local std::string* t_body = nullptr;
thread_local DType t_type = kFloat32;
thread_local int t_counter = 0;

std::string_view c_type(DType t) {
  return t == kFloat64 ? "double" : "float";
}

CudaVal bin(const CudaVal& a, std::string_view op, const CudaVal& b) {
  return CudaScope::bind(c_type(CudaScope::float_type()),
                         fmt::format("{} {} {}", a.code(), op, b.code()));
}

CudaVal cmp(const CudaVal& a, std::string_view op, const CudaVal& b) {
  return CudaScope::bind("bool", fmt::format("{} {} {}", a.code(), op, b.code()));
}

}  // namespace

std::string float_literal(double v, DType t) {
  bool f32 = t != kFloat64;
  if (std::isnan(v))
    return f32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000ll)";
  if (std::isinf(v)) {
    if (f32) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
    return v > 0 ? "__longlong_as_double(0x7ff0000000000000ll)"
                 : "__longlong_as_double(0xfff0000000000000ll)";
  }
  if (f32) {
    // The value rounded to float first, as V(c) is in a float template: hex digits are exact.
    return fmt::format("{:a}f", static_cast<float>(v));
  }
  return fmt::format("{:a}", v);
}

CudaVal::CudaVal(double c) : code_(float_literal(c, CudaScope::float_type())) {}
CudaVal::CudaVal(int c) : CudaVal(static_cast<double>(c)) {}

CudaScope::CudaScope(std::string& body, DType float_type)
    : prev_body_(t_body), prev_type_(t_type), prev_counter_(t_counter) {
  KILN_CHECK(float_type == kFloat32 || float_type == kFloat64,
             "CudaScope: float type must be f32 or f64, not {}", dtype_name(float_type));
  t_body = &body;
  t_type = float_type;
  t_counter = 0;
}

CudaScope::~CudaScope() {
  t_body = prev_body_;
  t_type = prev_type_;
  t_counter = prev_counter_;
}

CudaVal CudaScope::bind(std::string_view type, const std::string& code) {
  KILN_CHECK(t_body != nullptr, "CudaVal used outside a CudaScope");
  std::string name = fmt::format("t{}", t_counter++);
  *t_body += fmt::format("  const {} {} = {};\n", type, name, code);
  return CudaVal(name);
}

DType CudaScope::float_type() {
  return t_type;
}

CudaVal operator+(CudaVal a, CudaVal b) {
  return bin(a, "+", b);
}
CudaVal operator-(CudaVal a, CudaVal b) {
  return bin(a, "-", b);
}
CudaVal operator*(CudaVal a, CudaVal b) {
  return bin(a, "*", b);
}
CudaVal operator/(CudaVal a, CudaVal b) {
  return bin(a, "/", b);
}
CudaVal operator-(CudaVal a) {
  return CudaScope::bind(c_type(CudaScope::float_type()), "-" + a.code());
}
CudaVal operator<(CudaVal a, CudaVal b) {
  return cmp(a, "<", b);
}
CudaVal operator>(CudaVal a, CudaVal b) {
  return cmp(a, ">", b);
}
CudaVal operator<=(CudaVal a, CudaVal b) {
  return cmp(a, "<=", b);
}
CudaVal operator!=(CudaVal a, CudaVal b) {
  return cmp(a, "!=", b);
}
CudaVal operator==(CudaVal a, CudaVal b) {
  return cmp(a, "==", b);
}
CudaVal select(CudaVal c, CudaVal a, CudaVal b) {
  return CudaScope::bind(c_type(CudaScope::float_type()),
                         fmt::format("{} ? {} : {}", c.code(), a.code(), b.code()));
}
CudaVal abs(CudaVal x) {
  bool f64 = CudaScope::float_type() == kFloat64;
  return CudaScope::bind(c_type(CudaScope::float_type()),
                         fmt::format("{}({})", f64 ? "fabs" : "fabsf", x.code()));
}
// These two are used by the float32 templates only.
CudaVal copysign(CudaVal magnitude, CudaVal sign) {
  return CudaScope::bind("float", fmt::format("copysignf({}, {})", magnitude.code(), sign.code()));
}
CudaVal min_nonnegative(CudaVal a, CudaVal c) {
  CudaVal ab = CudaScope::bind("unsigned", fmt::format("__float_as_uint({})", a.code()));
  CudaVal cb = CudaScope::bind("unsigned", fmt::format("__float_as_uint({})", c.code()));
  return CudaScope::bind("float", fmt::format("__uint_as_float({} < {} ? {} : {})", ab.code(),
                                              cb.code(), ab.code(), cb.code()));
}
CudaVal fma(CudaVal a, CudaVal b, CudaVal c) {
  bool f64 = CudaScope::float_type() == kFloat64;
  return CudaScope::bind(
      c_type(CudaScope::float_type()),
      fmt::format("{}({}, {}, {})", f64 ? "fma" : "fmaf", a.code(), b.code(), c.code()));
}
CudaVal exp2i(CudaVal n) {
  return CudaScope::bind("float", fmt::format("__uint_as_float(__float_as_uint({} + {}) << 23)",
                                              n.code(), float_literal(12583039.0, kFloat32)));
}
CudaVal round_int(CudaVal x) {
  std::string big = float_literal(12582912.0, kFloat32);
  return CudaScope::bind("float", fmt::format("({} + {}) - {}", x.code(), big, big));
}
CudaVal negate_if_odd(CudaVal y, CudaVal k) {
  return CudaScope::bind(
      "float",
      fmt::format("__uint_as_float(__float_as_uint({}) ^ (__float_as_uint({} + {}) << 31))",
                  y.code(), k.code(), float_literal(12582912.0, kFloat32)));
}
kiln::math::MantissaExponent<CudaVal> centred_mantissa_exponent(CudaVal x) {
  CudaVal bits = CudaScope::bind("unsigned", fmt::format("__float_as_uint({})", x.code()));
  CudaVal e = CudaScope::bind("int", fmt::format("(int)({} - 0x3f3504f3u) >> 23", bits.code()));
  CudaVal m = CudaScope::bind(
      "float", fmt::format("__uint_as_float({} - ((unsigned){} << 23))", bits.code(), e.code()));
  return {m, CudaScope::bind("float", fmt::format("(float){}", e.code()))};
}

namespace {

// One float32 function of the preamble, its body written by instantiating `poly`.
template <class Poly>
std::string float_function(std::string_view name, Poly poly) {
  std::string body;
  CudaScope scope(body, kFloat32);
  CudaVal result = poly(CudaVal("x"));
  return fmt::format("KILN_DEVICE float {}(float x) {{\n{}  return {};\n}}\n", name, body,
                     result.code());
}

// Note [CUDA preamble]
// Everything a generated kernel calls beyond CUDA's built-in math library, written once here,
// with no #include (NVRTC then needs no header path). Its first part, the math, is plain C++
// apart from the KILN_DEVICE marker and CUDA's bit-cast intrinsics, so that
// tests/cuda_host/cuda_preamble_host_test.cpp compiles it for the host and checks its accuracy; the
// second part (16-bit conversions through PTX, warp and block reductions) is device code only.
std::string build_preamble() {
  std::string s =
      "// Kiln CUDA preamble (codegen/cuda/cuda_math.cpp, Note [CUDA preamble]).\n"
      "#ifndef KILN_DEVICE\n"
      "#define KILN_DEVICE __device__ __forceinline__\n"
      "#endif\n";
  s += float_function("kiln_exp_f32", [](CudaVal x) { return kiln::math::exp_poly(x); });
  s += float_function("kiln_log_f32", [](CudaVal x) { return kiln::math::log_poly(x); });
  s += float_function("kiln_tanh_f32", [](CudaVal x) { return kiln::math::tanh_poly(x); });
  s += float_function("kiln_erf_f32", [](CudaVal x) { return kiln::math::erf_poly(x); });
  s += float_function("kiln_exp2_f32", [](CudaVal x) { return kiln::math::exp2_poly(x); });
  s += float_function("kiln_expm1_f32", [](CudaVal x) { return kiln::math::expm1_poly(x); });
  s += float_function("kiln_log1p_f32", [](CudaVal x) { return kiln::math::log1p_poly(x); });
  s += float_function("kiln_gelu_exact_f32",
                      [](CudaVal x) { return kiln::math::gelu_exact_poly(x); });
  s += float_function("kiln_sin_reduced_f32", [](CudaVal x) { return kiln::math::sin_reduced(x); });
  s += float_function("kiln_cos_reduced_f32", [](CudaVal x) { return kiln::math::cos_reduced(x); });
  {
    std::string body;
    CudaScope scope(body, kFloat32);
    CudaVal result = kiln::math::pow_poly(CudaVal("x"), CudaVal("y"));
    s += fmt::format("KILN_DEVICE float kiln_pow_f32(float x, float y) {{\n{}  return {};\n}}\n",
                     body, result.code());
  }
  s += fmt::format(
      "// As kiln::math::sin(float) and cos(float): the polynomial within its range, the\n"
      "// library's beyond (Note [sin and cos by one polynomial]).\n"
      "KILN_DEVICE float kiln_sin_f32(float x) {{\n"
      "  return fabsf(x) <= {0} ? kiln_sin_reduced_f32(x) : sinf(x);\n}}\n"
      "KILN_DEVICE float kiln_cos_f32(float x) {{\n"
      "  return fabsf(x) <= {0} ? kiln_cos_reduced_f32(x) : cosf(x);\n}}\n",
      float_literal(kiln::math::kSinCosReducedLimit, kFloat32));
  s += R"(// torch.maximum / minimum: a NaN on either side is the result.
KILN_DEVICE float kiln_max_f32(float x, float y) { return x != x ? x : ((y != y || y > x) ? y : x); }
KILN_DEVICE float kiln_min_f32(float x, float y) { return x != x ? x : ((y != y || y < x) ? y : x); }
KILN_DEVICE double kiln_max_f64(double x, double y) { return x != x ? x : ((y != y || y > x) ? y : x); }
KILN_DEVICE double kiln_min_f64(double x, double y) { return x != x ? x : ((y != y || y < x) ? y : x); }
// Integer powers as kiln::math::pow: by squaring, wrapping; a negative exponent gives 0 except
// for bases 1 and -1.
KILN_DEVICE long long kiln_ipow(long long base, long long e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  unsigned long long r = 1, b = (unsigned long long)base;
  while (e) {
    if (e & 1) r *= b;
    e >>= 1;
    b *= b;
  }
  return (long long)r;
}
// Integer division and remainder as the interpreter computes them: MIN / -1 wraps to MIN with
// remainder 0, and a zero divisor divides by 1 (the CPU backends report it; see Note [CUDA
// kernel ABI]).
KILN_DEVICE long long kiln_idiv(long long x, long long y) {
  return y == -1 ? (long long)(0ull - (unsigned long long)x) : x / (y == 0 ? 1 : y);
}
KILN_DEVICE long long kiln_irem(long long x, long long y) {
  return (y == 0 || y == -1) ? 0 : x % y;
}
// float -> integer as x86's cvtt* gives it (and so the eager kernels): NaN and out-of-range
// values become the integer minimum. CUDA's own conversion saturates instead.
KILN_DEVICE long long kiln_f2i64(double x) {
  return (x >= -0x1p63 && x < 0x1p63) ? (long long)x : (long long)0x8000000000000000ull;
}
KILN_DEVICE int kiln_f2i32(double x) {
  return (x >= -0x1p31 && x < 0x1p31) ? (int)x : (int)0x80000000u;
}
// bfloat16 as base/half.h: round to nearest even, NaN kept quiet.
KILN_DEVICE unsigned short kiln_f32_to_bf16(float f) {
  unsigned x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
KILN_DEVICE float kiln_bf16_to_f32(unsigned short b) { return __uint_as_float((unsigned)b << 16); }
KILN_DEVICE float kiln_round_bf16(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }
)";
  s += R"(#ifndef KILN_CUDA_HOST_TEST
// float16 through the PTX conversions: IEEE round to nearest even, as base/half.h.
KILN_DEVICE unsigned short kiln_f32_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
KILN_DEVICE float kiln_f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
KILN_DEVICE float kiln_round_f16(float f) { return kiln_f16_to_f32(kiln_f32_to_f16(f)); }
// Reductions: the combine of each ReduceOp, then a warp's shuffle tree and a block's.
// Integers wrap through unsigned, as the accumulators' own combines (wrap_int): signed
// overflow is undefined in C++.
struct KilnSum {
  template <class T> KILN_DEVICE T operator()(T a, T b) const { return a + b; }
  KILN_DEVICE int operator()(int a, int b) const { return (int)((unsigned)a + (unsigned)b); }
  KILN_DEVICE long long operator()(long long a, long long b) const {
    return (long long)((unsigned long long)a + (unsigned long long)b);
  }
};
struct KilnProd {
  template <class T> KILN_DEVICE T operator()(T a, T b) const { return a * b; }
  KILN_DEVICE int operator()(int a, int b) const { return (int)((unsigned)a * (unsigned)b); }
  KILN_DEVICE long long operator()(long long a, long long b) const {
    return (long long)((unsigned long long)a * (unsigned long long)b);
  }
};
struct KilnMax {
  KILN_DEVICE float operator()(float a, float b) const { return kiln_max_f32(a, b); }
  KILN_DEVICE double operator()(double a, double b) const { return kiln_max_f64(a, b); }
  template <class T> KILN_DEVICE T operator()(T a, T b) const { return a > b ? a : b; }
};
struct KilnMin {
  KILN_DEVICE float operator()(float a, float b) const { return kiln_min_f32(a, b); }
  KILN_DEVICE double operator()(double a, double b) const { return kiln_min_f64(a, b); }
  template <class T> KILN_DEVICE T operator()(T a, T b) const { return a < b ? a : b; }
};
struct KilnOr { KILN_DEVICE bool operator()(bool a, bool b) const { return a || b; } };
struct KilnAnd { KILN_DEVICE bool operator()(bool a, bool b) const { return a && b; } };
template <class T> KILN_DEVICE T kiln_shfl_xor(T v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
template <> KILN_DEVICE bool kiln_shfl_xor<bool>(bool v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, (int)v, lane_mask) != 0;
}
template <class T, class F> KILN_DEVICE T kiln_warp_reduce(T v, F combine) {
  for (int m = 16; m > 0; m >>= 1) v = combine(v, kiln_shfl_xor(v, m));
  return v;
}
// Every thread of the block passes its partial value and gets the block's result. blockDim.x is
// a multiple of 32 (the launcher's choice); `scratch` holds 32 values in shared memory.
template <class T, class F>
KILN_DEVICE T kiln_block_reduce(T v, F combine, T identity, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = kiln_warp_reduce(v, combine);
  __syncthreads();  // an earlier reduction's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? scratch[lane] : identity;
    w = kiln_warp_reduce(w, combine);
    if (lane == 0) scratch[0] = w;
  }
  __syncthreads();
  return scratch[0];
}
#endif
)";
  return s;
}

}  // namespace

const std::string& cuda_preamble() {
  static const std::string preamble = build_preamble();
  return preamble;
}

}  // namespace kiln::codegen::cuda
