// Pointwise math as CUDA C (Note [Pointwise math is written once]). The float32 exp, log, tanh,
// erf, pow and the others of the eager kernels are the polynomial templates of
// base/pointwise_math.h; instantiating them with CudaVal writes the same arithmetic as CUDA C
// statements, so the CUDA kernels compute the function the eager and LLVM ones compute. Everything
// else is a CUDA math library call or a small helper of the preamble.
#pragma once

#include <string>

#include "kiln/base/dtype.h"
#include "kiln/base/pointwise_math.h"

namespace kiln::codegen::cuda {

// A value of the function being written: the name of a C variable (or a literal) of the
// innermost CudaScope's float type, or a `bool` for comparisons.
class CudaVal {
 public:
  explicit CudaVal(std::string code) : code_(std::move(code)) {}
  CudaVal(double c);  // NOLINT: a constant of the scope's float type
  CudaVal(int c);     // NOLINT
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// The function body CudaVal operations append to: each operation becomes one `const T tN = ...;`
// line, so a value used twice is computed once, as in the template.
class CudaScope {
 public:
  CudaScope(std::string& body, DType float_type);
  ~CudaScope();
  CudaScope(const CudaScope&) = delete;
  CudaScope& operator=(const CudaScope&) = delete;
  // Appends `const <type> tN = <code>;` and returns tN.
  static CudaVal bind(std::string_view type, const std::string& code);
  static DType float_type();

 private:
  std::string* prev_body_;
  DType prev_type_;
  int prev_counter_;
};

CudaVal operator+(CudaVal a, CudaVal b);
CudaVal operator-(CudaVal a, CudaVal b);
CudaVal operator*(CudaVal a, CudaVal b);
CudaVal operator/(CudaVal a, CudaVal b);
CudaVal operator-(CudaVal a);
CudaVal operator<(CudaVal a, CudaVal b);
CudaVal operator>(CudaVal a, CudaVal b);
CudaVal operator<=(CudaVal a, CudaVal b);
CudaVal operator!=(CudaVal a, CudaVal b);
CudaVal operator==(CudaVal a, CudaVal b);
CudaVal select(CudaVal c, CudaVal a, CudaVal b);
CudaVal abs(CudaVal x);
// Note [Clamps and signs by bits] (pointwise_math.h): copysign and the bit-pattern min.
CudaVal copysign(CudaVal magnitude, CudaVal sign);
CudaVal min_nonnegative(CudaVal a, CudaVal c);
// a * b + c rounded once (fmaf), as kiln::math::fma.
CudaVal fma(CudaVal a, CudaVal b, CudaVal c);
// The bit tricks of pointwise_math.h's float helpers, in CUDA C.
CudaVal exp2i(CudaVal n);
CudaVal round_int(CudaVal x);
CudaVal negate_if_odd(CudaVal y, CudaVal k);
kiln::math::MantissaExponent<CudaVal> centred_mantissa_exponent(CudaVal x);

// A float literal of dtype t (Float32 or Float64) that is exactly v: hexadecimal digits, or a bit
// pattern for infinities and NaN.
std::string float_literal(double v, DType t);

// The device functions every generated kernel may call (Note [CUDA preamble] in
// cuda_math.cpp): the polynomial float32 exp/log/tanh/erf/pow and the others from the templates
// (CUDA's compiler fuses multiply-adds as it likes: the templates' double-float steps are fma
// calls and product_rounded, Note [pow in double-float]), conversions of
// the 16-bit floats, NaN-propagating max/min, torch's integer pow, float -> int casts as x86
// gives them, and the warp and block reductions.
const std::string& cuda_preamble();

}  // namespace kiln::codegen::cuda
