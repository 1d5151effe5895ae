// The pointwise op family: table entries whose math comes from base/pointwise_math.h.

// For bool tensors, add/mul compute `a + alpha * b` on bools, which C++ promotes to int and
// converts back: exactly torch's logical or/and. GCC warns about the bool arithmetic.
#pragma GCC diagnostic ignored "-Wint-in-bool-context"

#include "kiln/base/pointwise_math.h"
#include "kiln/runtime/kernels/pointwise_kernels.h"

namespace kiln {
namespace {

using namespace pointwise;  // NOLINT: the family's shared building blocks

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

KILN_MATH1(NegMath, math::neg(x))
KILN_MATH1(ExpMath, math::exp_(x))
KILN_MATH1(LogMath, math::log_(x))
KILN_MATH1(TanhMath, math::tanh_(x))
KILN_MATH1(SigmoidMath, math::sigmoid(x))
KILN_MATH1(ReluMath, math::relu(x))

template <class Math, Promote P>
void def_binary(OpTable& table, const std::string& name) {
  OpDef& t =
      table.add<AlphaAttrs>(name, {"self", "other"}, kPointwise | kRecomputable, "AlphaAttrs");
  t.shape = rules::broadcast_shape;
  t.dtype = binary_dtype_rule<P>;
  t.compute[static_cast<int>(DispatchKey::CPU)] = binary_kernel<Math>;
  t.expr = binary_expr<Math>;

  OpDef& s = table.add<ScalarOperandAttrs>(name + "_scalar", {"self"}, kPointwise | kRecomputable,
                                           "ScalarOperandAttrs");
  s.shape = rules::same_shape;
  s.dtype = scalar_dtype_rule<P>;
  s.compute[static_cast<int>(DispatchKey::CPU)] = scalar_kernel<Math>;
  s.expr = scalar_operand_expr<Math>;

  // In-place forms: self op= other, with other broadcast to self (Note [In-place ops]).
  OpDef& ti = table.add<AlphaAttrs>(name + "_", {"self", "other"}, kInPlace, "AlphaAttrs");
  ti.shape = inplace_shape_rule;
  ti.dtype = inplace_dtype_rule<binary_dtype_rule<P>>;
  ti.compute[kCpuKey] = inplace_kernel<binary_kernel<Math>, binary_dtype_rule<P>>;

  OpDef& si =
      table.add<ScalarOperandAttrs>(name + "_scalar_", {"self"}, kInPlace, "ScalarOperandAttrs");
  si.shape = rules::same_shape;
  si.dtype = inplace_dtype_rule<scalar_dtype_rule<P>>;
  si.compute[kCpuKey] = inplace_kernel<scalar_kernel<Math>, scalar_dtype_rule<P>>;
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
  def_in_place_twin<NoAttrs, unary_kernel<ReluMath>, unary_dtype_rule<Promote::NoBool>>(
      table, table.get("relu"));
  register_pointwise_math_ops(table);
  register_pointwise_compare_ops(table);
  register_pointwise_rounding_ops(table);
  register_pointwise_activation_ops(table);
}

}  // namespace kiln
