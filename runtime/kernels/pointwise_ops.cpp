// The pointwise op family: table entries whose math comes from runtime/pointwise_math.h.

// For bool tensors, add/mul compute `a + alpha * b` on bools, which C++ promotes to int and
// converts back: exactly torch's logical or/and. GCC warns about the bool arithmetic.
#pragma GCC diagnostic ignored "-Wint-in-bool-context"

#include "kiln/runtime/error.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/kernels/pointwise_loops.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/pointwise_math.h"
#include "kiln/runtime/type_promotion.h"

namespace kiln {
namespace {

// ---- dtype rules ----

enum class Promote {
  Same,        // result_type of the operands
  IntToFloat,  // as Same, then integer and bool results become the default float
  NoBool,      // as Same; bool operands are an error (sub, neg)
};

template <Promote P>
DType check_promotion(const OpDef& op, DType t) {
  if constexpr (P == Promote::IntToFloat) {
    return is_floating(t) ? t : kDefaultFloat;
  } else if constexpr (P == Promote::NoBool) {
    KILN_CHECK(t != kBool, "{}: not supported for bool tensors", op.name);
  }
  return t;
}

// As torch: alpha may not be a float for an integer result (the kernel would silently truncate
// it), and a bool alpha only makes sense for a bool result.
DType check_alpha(const OpDef& op, DType result, const Scalar& alpha) {
  KILN_CHECK(!is_integral(result, true) || !alpha.is_floating(),
             "{}: for integral input tensors (result dtype {}), argument alpha must not be a "
             "floating point number (got {})",
             op.name, result, alpha);
  KILN_CHECK(!alpha.is_bool() || result == kBool,
             "{}: a bool alpha is only supported for bool results (result dtype {})", op.name,
             result);
  return result;
}

template <Promote P>
DType unary_dtype_rule(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  return check_promotion<P>(op, result_type(inputs));
}

template <Promote P>
DType binary_dtype_rule(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs,
                        size_t) {
  const auto& a = attrs_as<AlphaAttrs>(attrs);
  return check_alpha(op, check_promotion<P>(op, result_type(inputs)), a.alpha);
}

template <Promote P>
DType scalar_dtype_rule(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs,
                        size_t) {
  const auto& a = attrs_as<ScalarOperandAttrs>(attrs);
  return check_alpha(op, check_promotion<P>(op, result_type(inputs, &a.other)), a.alpha);
}

// ---- kernels ----

// Unary: Math is a functor template `operator()(V x)`.
template <class Math>
void unary_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                  const void*) {
  DType dtype = outputs[0].dtype();
  std::vector<Tensor> cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    unary_loop<T, T>(it, [](compute_t<T> x) { return Math()(x); });
  });
}

// Binary tensor-tensor: Math is `operator()(V a, V b, V alpha)`.
template <class Math>
void binary_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                   const void* attrs) {
  DType dtype = outputs[0].dtype();
  std::vector<Tensor> cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  const auto& a = attrs_as<AlphaAttrs>(attrs);
  KILN_DISPATCH_ALL(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C alpha = a.alpha.to<C>();
    binary_loop<T, T>(it, [alpha](C x, C y) { return Math()(x, y, alpha); });
  });
}

// Binary tensor-scalar: the scalar is an attribute, so the loop is unary.
template <class Math>
void scalar_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                   const void* attrs) {
  DType dtype = outputs[0].dtype();
  std::vector<Tensor> cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  const auto& a = attrs_as<ScalarOperandAttrs>(attrs);
  KILN_DISPATCH_ALL(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C other = a.other.to<C>(), alpha = a.alpha.to<C>();
    unary_loop<T, T>(it, [other, alpha](C x) { return Math()(x, other, alpha); });
  });
}

// ---- the math, as functors over any value type ----
#define KILN_MATH2(Name, expr)              \
  struct Name {                             \
    template <class V>                      \
    V operator()(V a, V b, V alpha) const { \
      (void)alpha;                          \
      return expr;                          \
    }                                       \
  };
KILN_MATH2(AddMath, math::add(a, b, alpha))
KILN_MATH2(SubMath, math::sub(a, b, alpha))
KILN_MATH2(MulMath, math::mul(a, b))
KILN_MATH2(DivMath, math::div(a, b))
#undef KILN_MATH2

#define KILN_MATH1(Name, expr) \
  struct Name {                \
    template <class V>         \
    V operator()(V x) const {  \
      return expr;             \
    }                          \
  };
KILN_MATH1(NegMath, math::neg(x))
KILN_MATH1(ExpMath, math::exp_(x))
KILN_MATH1(LogMath, math::log_(x))
KILN_MATH1(TanhMath, math::tanh_(x))
KILN_MATH1(SigmoidMath, math::sigmoid(x))
KILN_MATH1(ReluMath, math::relu(x))
#undef KILN_MATH1

template <class Math, Promote P>
void def_binary(OpTable& table, const std::string& name) {
  OpDef& t =
      table.add<AlphaAttrs>(name, {"self", "other"}, kPointwise | kRecomputable, "AlphaAttrs");
  t.shape = rules::broadcast_shape;
  t.dtype = binary_dtype_rule<P>;
  t.compute[static_cast<int>(DispatchKey::CPU)] = binary_kernel<Math>;

  OpDef& s = table.add<ScalarOperandAttrs>(name + "_scalar", {"self"}, kPointwise | kRecomputable,
                                           "ScalarOperandAttrs");
  s.shape = rules::same_shape;
  s.dtype = scalar_dtype_rule<P>;
  s.compute[static_cast<int>(DispatchKey::CPU)] = scalar_kernel<Math>;
}

template <class Math, Promote P>
void def_unary(OpTable& table, const std::string& name) {
  OpDef& u = table.add<NoAttrs>(name, {"self"}, kPointwise | kRecomputable, "NoAttrs");
  u.shape = rules::same_shape;
  u.dtype = unary_dtype_rule<P>;
  u.compute[static_cast<int>(DispatchKey::CPU)] = unary_kernel<Math>;
}

}  // namespace

void register_pointwise_ops(OpTable& table) {
  def_binary<AddMath, Promote::Same>(table, "add");
  def_binary<SubMath, Promote::NoBool>(table, "sub");
  def_binary<MulMath, Promote::Same>(table, "mul");
  def_binary<DivMath, Promote::IntToFloat>(table, "div");
  def_unary<NegMath, Promote::NoBool>(table, "neg");
  def_unary<ExpMath, Promote::IntToFloat>(table, "exp");
  def_unary<LogMath, Promote::IntToFloat>(table, "log");
  def_unary<TanhMath, Promote::IntToFloat>(table, "tanh");
  def_unary<SigmoidMath, Promote::IntToFloat>(table, "sigmoid");
  def_unary<ReluMath, Promote::NoBool>(table, "relu");
}

}  // namespace kiln
