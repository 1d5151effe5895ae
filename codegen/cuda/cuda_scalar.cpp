#include "kiln/codegen/cuda/cuda_scalar.h"

#include <fmt/format.h>

#include <limits>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_math.h"

namespace kiln::codegen::cuda {

using kir::BinaryOp;
using kir::ReduceOp;
using kir::UnaryOp;

std::string_view value_type(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
      return "int";  // small integers computed in int (Note [Kernel IR dtypes])
    case DType::Int64:
      return "long long";
    case DType::Float64:
      return "double";
    default:
      return "float";  // f32, and the 16-bit floats in their lane form
  }
}

std::string_view storage_type(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
      return "unsigned char";
    case DType::Int8:
      return "signed char";
    case DType::Int16:
      return "short";
    case DType::Float16:
    case DType::BFloat16:
      return "unsigned short";
    default:
      return value_type(t);
  }
}

std::string_view dtype_suffix(DType t) {
  switch (t) {
    case DType::Bool:
      return "b8";
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
      return "i32";
    case DType::Int64:
      return "i64";
    case DType::Float64:
      return "f64";
    default:
      return "f32";
  }
}

std::string int_literal(int64_t v, DType t) {
  if (t == kBool) return v ? "true" : "false";
  if (t == kInt32 || is_small_integral(t)) {
    if (v == std::numeric_limits<int32_t>::min()) return "(-2147483647 - 1)";
    return fmt::format("{}", v);
  }
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807ll - 1)";
  return fmt::format("{}ll", v);
}

std::string identity_literal(ReduceOp op, DType t) {
  bool fl = is_floating(t);
  switch (op) {
    case ReduceOp::Sum:
      return fl ? float_literal(0.0, t) : int_literal(0, t);
    case ReduceOp::Prod:
      return fl ? float_literal(1.0, t) : int_literal(1, t);
    case ReduceOp::Max:
      if (t == kBool) return "false";
      if (fl) return float_literal(-std::numeric_limits<double>::infinity(), t);
      return int_literal(
          t == kInt32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min(),
          t);
    case ReduceOp::Min:
      if (t == kBool) return "true";
      if (fl) return float_literal(std::numeric_limits<double>::infinity(), t);
      return int_literal(
          t == kInt32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max(),
          t);
  }
  return "0";
}

std::string_view combine_functor(ReduceOp op, DType t) {
  if (t == kBool) return op == ReduceOp::Sum || op == ReduceOp::Max ? "KilnOr()" : "KilnAnd()";
  switch (op) {
    case ReduceOp::Sum:
      return "KilnSum()";
    case ReduceOp::Prod:
      return "KilnProd()";
    case ReduceOp::Max:
      return "KilnMax()";
    case ReduceOp::Min:
      return "KilnMin()";
  }
  return "";
}

std::string combine_code(ReduceOp op, DType t, const std::string& a, const std::string& b) {
  if (t == kBool)
    return op == ReduceOp::Sum || op == ReduceOp::Max ? fmt::format("{} || {}", a, b)
                                                      : fmt::format("{} && {}", a, b);
  switch (op) {
    case ReduceOp::Sum:
      return is_floating(t) ? fmt::format("{} + {}", a, b) : wrap_int("+", a, b, t);
    case ReduceOp::Prod:
      return is_floating(t) ? fmt::format("{} * {}", a, b) : wrap_int("*", a, b, t);
    case ReduceOp::Max:
      if (is_floating(t)) return fmt::format("kiln_max_{}({}, {})", dtype_suffix(t), a, b);
      return fmt::format("{} > {} ? {} : {}", a, b, a, b);
    case ReduceOp::Min:
      if (is_floating(t)) return fmt::format("kiln_min_{}({}, {})", dtype_suffix(t), a, b);
      return fmt::format("{} < {} ? {} : {}", a, b, a, b);
  }
  return a;
}

std::string from_storage(const std::string& x, DType t) {
  switch (t) {
    case DType::Bool:
      return fmt::format("({} != 0)", x);
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
      return fmt::format("(int)({})", x);
    case DType::Float16:
      return fmt::format("kiln_f16_to_f32({})", x);
    case DType::BFloat16:
      return fmt::format("kiln_bf16_to_f32({})", x);
    default:
      return x;
  }
}

std::string to_storage(const std::string& x, DType t) {
  switch (t) {
    case DType::Bool:
      return fmt::format("(unsigned char)({})", x);
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
      // The int lane already holds the wrapped value; the narrowing keeps it.
      return fmt::format("({})({})", storage_type(t), x);
    case DType::Float16:
      return fmt::format("kiln_f32_to_f16({})", x);
    case DType::BFloat16:
      return fmt::format("kiln_f32_to_bf16({})", x);
    default:
      return x;
  }
}

// As the LLVM backend's convert (and so lanes::cast): a static_cast, except float -> int of
// NaN or out-of-range values gives the integer minimum, and 16-bit floats round through float.
std::string convert(const std::string& x, DType from, DType to) {
  if (from == to) return x;
  if (to == kFloat16 || to == kBFloat16) {
    std::string f = convert(x, from, kFloat32);
    return fmt::format("{}({})", to == kFloat16 ? "kiln_round_f16" : "kiln_round_bf16", f);
  }
  if (is_small_integral(to)) {
    // Through int, then wrapped to the narrow type and held as an int again.
    return fmt::format("(int)({})({})", storage_type(to), convert(x, from, kInt32));
  }
  if (to == kBool) return fmt::format("({} != 0)", x);
  if (is_floating(to)) {
    if ((from == kFloat16 || from == kBFloat16) && to == kFloat32) return x;
    return fmt::format("({})({})", value_type(to), x);
  }
  if (is_floating(from))
    return fmt::format("{}((double)({}))", to == kInt32 ? "kiln_f2i32" : "kiln_f2i64", x);
  return fmt::format("({})({})", value_type(to), x);
}

std::string wrap_int(std::string_view op, const std::string& a, const std::string& b, DType t) {
  std::string_view u = t == kInt64 ? "unsigned long long" : "unsigned";
  return fmt::format("({})(({}){} {} ({}){})", value_type(t), u, a, op, u, b);
}

std::string unary_code(std::string_view kernel, UnaryOp op, DType t, const std::string& x,
                       bool data) {
  if (t == kBool) return "!" + x;
  if (!is_floating(t)) {
    std::string neg = data ? wrap_int("-", int_literal(0, t), x, t) : "-(" + x + ")";
    if (op == UnaryOp::Neg) return neg;
    if (op == UnaryOp::Abs) return fmt::format("{} < 0 ? {} : {}", x, neg, x);
    KILN_ERROR("cuda emitter: kernel {}: unary '{}' on {} has no lowering", kernel,
               kir::unary_op_name(op), dtype_name(t));
  }
  bool f32 = t != kFloat64;
  auto lib = [&](std::string_view name) {
    return fmt::format("{}{}({})", name, f32 ? "f" : "", x);
  };
  switch (op) {
    case UnaryOp::Neg:
      return "-(" + x + ")";
    case UnaryOp::Abs:
      return lib("fabs");
    case UnaryOp::Exp:
      return f32 ? fmt::format("kiln_exp_f32({})", x) : lib("exp");
    case UnaryOp::Log:
      return f32 ? fmt::format("kiln_log_f32({})", x) : lib("log");
    case UnaryOp::Tanh:
      return f32 ? fmt::format("kiln_tanh_f32({})", x) : lib("tanh");
    case UnaryOp::Erf:
      return f32 ? fmt::format("kiln_erf_f32({})", x) : lib("erf");
    case UnaryOp::Exp2:
      return f32 ? fmt::format("kiln_exp2_f32({})", x) : lib("exp2");
    case UnaryOp::GeluExact:
      // kiln::math::gelu_exact(double): x < -40 ? -0 : x * (erfc(x * -1/sqrt 2) * 0.5).
      return f32 ? fmt::format("kiln_gelu_exact_f32({})", x)
                 : fmt::format(
                       "(({0}) < -40.0 ? -0.0 : ({0}) * (erfc(({0}) * "
                       "-0.70710678118654752440) * 0.5))",
                       x);
    case UnaryOp::Log1p:
      return f32 ? fmt::format("kiln_log1p_f32({})", x) : lib("log1p");
    case UnaryOp::Expm1:
      return f32 ? fmt::format("kiln_expm1_f32({})", x) : lib("expm1");
    case UnaryOp::Sqrt:
      return lib("sqrt");
    case UnaryOp::Sin:
      return f32 ? fmt::format("kiln_sin_f32({})", x) : lib("sin");
    case UnaryOp::Cos:
      return f32 ? fmt::format("kiln_cos_f32({})", x) : lib("cos");
    case UnaryOp::Not:
      break;
  }
  KILN_ERROR("cuda emitter: kernel {}: unary '{}' on {} has no lowering", kernel,
             kir::unary_op_name(op), dtype_name(t));
}

std::string binary_code(std::string_view kernel, BinaryOp op, DType t, const std::string& a,
                        const std::string& b, bool rhs_positive_const, bool data) {
  if (t == kBool) {
    switch (op) {
      case BinaryOp::Add:
      case BinaryOp::Max:
      case BinaryOp::Or:
        return fmt::format("{} || {}", a, b);
      case BinaryOp::Mul:
      case BinaryOp::Min:
      case BinaryOp::And:
        return fmt::format("{} && {}", a, b);
      case BinaryOp::Sub:
      case BinaryOp::Ne:
        return fmt::format("{} != {}", a, b);
      case BinaryOp::Eq:
        return fmt::format("{} == {}", a, b);
      case BinaryOp::Lt:
        return fmt::format("!{} && {}", a, b);
      case BinaryOp::Le:
        return fmt::format("!{} || {}", a, b);
      default:
        break;
    }
  } else if (is_floating(t)) {
    bool f32 = t != kFloat64;
    switch (op) {
      case BinaryOp::Add:
        return fmt::format("{} + {}", a, b);
      case BinaryOp::Sub:
        return fmt::format("{} - {}", a, b);
      case BinaryOp::Mul:
        return fmt::format("{} * {}", a, b);
      case BinaryOp::Div:
        return fmt::format("{} / {}", a, b);
      case BinaryOp::Rem:
        return fmt::format("{}({}, {})", f32 ? "fmodf" : "fmod", a, b);
      case BinaryOp::Pow:
        return fmt::format("{}({}, {})", f32 ? "kiln_pow_f32" : "pow", a, b);
      case BinaryOp::Max:
      case BinaryOp::Min:
        return fmt::format("kiln_{}_{}({}, {})", op == BinaryOp::Max ? "max" : "min",
                           dtype_suffix(t), a, b);
      case BinaryOp::Eq:
        return fmt::format("{} == {}", a, b);
      case BinaryOp::Ne:
        return fmt::format("{} != {}", a, b);
      case BinaryOp::Lt:
        return fmt::format("{} < {}", a, b);
      case BinaryOp::Le:
        return fmt::format("{} <= {}", a, b);
      default:
        break;
    }
  } else {
    switch (op) {
      case BinaryOp::Add:
        return data ? wrap_int("+", a, b, t) : fmt::format("{} + {}", a, b);
      case BinaryOp::Sub:
        return data ? wrap_int("-", a, b, t) : fmt::format("{} - {}", a, b);
      case BinaryOp::Mul:
        return data ? wrap_int("*", a, b, t) : fmt::format("{} * {}", a, b);
      case BinaryOp::Div:
        if (rhs_positive_const) return fmt::format("{} / {}", a, b);
        return fmt::format("({})kiln_idiv({}, {})", value_type(t), a, b);
      case BinaryOp::Rem:
        if (rhs_positive_const) return fmt::format("{} % {}", a, b);
        return fmt::format("({})kiln_irem({}, {})", value_type(t), a, b);
      case BinaryOp::Pow:
        return fmt::format("({})kiln_ipow({}, {})", value_type(t), a, b);
      case BinaryOp::Max:
        return fmt::format("{} > {} ? {} : {}", a, b, a, b);
      case BinaryOp::Min:
        return fmt::format("{} < {} ? {} : {}", a, b, a, b);
      case BinaryOp::Eq:
        return fmt::format("{} == {}", a, b);
      case BinaryOp::Ne:
        return fmt::format("{} != {}", a, b);
      case BinaryOp::Lt:
        return fmt::format("{} < {}", a, b);
      case BinaryOp::Le:
        return fmt::format("{} <= {}", a, b);
      default:
        break;
    }
  }
  KILN_ERROR("cuda emitter: kernel {}: binary '{}' on {} has no lowering", kernel,
             kir::binary_op_name(op), dtype_name(t));
}

}  // namespace kiln::codegen::cuda
