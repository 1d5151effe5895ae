// Pointwise ops that select or compare: maximum/minimum, the comparisons (tensor and scalar
// forms, Bool output), the logical ops, where and masked_fill. The math is in
// base/pointwise_math.h.
#include "kiln/base/pointwise_math.h"
#include "kiln/runtime/kernels/pointwise_kernels.h"

namespace kiln::pointwise {
namespace {

// ---- maximum / minimum ----

struct MaximumMath {
  template <class V>
  V operator()(V a, V b) const {
    return math::maximum(a, b);
  }
};
struct MinimumMath {
  template <class V>
  V operator()(V a, V b) const {
    return math::minimum(a, b);
  }
};

// ---- comparisons: compute in the promoted type, write Bool ----

#define KILN_CMP(Name, fn)            \
  struct Name {                       \
    template <class V>                \
    auto operator()(V a, V b) const { \
      return math::fn(a, b);          \
    }                                 \
  };
KILN_CMP(EqMath, eq)
KILN_CMP(NeMath, ne)
KILN_CMP(LtMath, lt)
KILN_CMP(LeMath, le)
KILN_CMP(GtMath, gt)
KILN_CMP(GeMath, ge)
#undef KILN_CMP

DType bool_dtype(const OpDef&, std::span<const MetaRef>, const void*, size_t) {
  return kBool;
}

template <class Math>
void compare_kernel(const OpDef& op, std::span<const Tensor> outputs,
                    std::span<const Tensor> inputs, const void*) {
  DType compute = result_type(metas_of(inputs));
  CastInputs cast = cast_inputs(inputs, compute);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_ALL(compute, op.name, [&]<class T>() {
    binary_loop<bool, T>(it, [](compute_t<T> a, compute_t<T> b) { return Math()(a, b); });
  });
}

template <class Math>
void compare_scalar_kernel(const OpDef& op, std::span<const Tensor> outputs,
                           std::span<const Tensor> inputs, const void* attrs) {
  const Scalar& other = attrs_as<ScalarOtherAttrs>(attrs).other;
  DType compute = result_type(metas_of(inputs), &other);
  CastInputs cast = cast_inputs(inputs, compute);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_ALL(compute, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C b = scalar_value<T>(other);
    unary_loop<bool, T>(it, [b](C a) { return Math()(a, b); });
  });
}

// The eager kernel compares in result_type of the operands, where a zero-dim tensor ranks below
// a dimensioned one. The expression sees only dtypes and compares in their promote_types, which
// is result_type except where a zero-dim operand is wider than a dimensioned one of its category
// (a float64 zero-dim against float32). For such a comparison the caller passes the operands
// already converted to result_type, as cast_inputs converts them.
template <class Math>
kir::Val compare_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType) {
  DType compute = promote_types(in[0].dtype(), in[1].dtype());
  kir::MathScope scope(kir::MathScope::builder(), arith_dtype(compute));
  return Math()(operand_expr(in[0], compute), operand_expr(in[1], compute));
}

template <class Math>
kir::Val compare_scalar_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs, DType) {
  const Scalar& other = attrs_as<ScalarOtherAttrs>(attrs).other;
  // With a single tensor operand its rank plays no part in result_type.
  MetaRef self;
  self.dtype = in[0].dtype();
  DType compute = result_type(std::span(&self, 1), &other);
  kir::MathScope scope(kir::MathScope::builder(), arith_dtype(compute));
  return Math()(operand_expr(in[0], compute), scalar_expr(other, compute));
}

template <class Math>
void def_compare(OpTable& table, const std::string& name) {
  OpDef& t = table.add<NoAttrs>(name, {"self", "other"},
                                kPointwise | kRecomputable | kNonDifferentiable | kTensorComparison,
                                "NoAttrs");
  t.shape = rules::broadcast_shape;
  t.dtype = bool_dtype;
  t.compute[kCpuKey] = compare_kernel<Math>;
  t.expr = compare_expr<Math>;

  OpDef& s = table.add<ScalarOtherAttrs>(name + "_scalar", {"self"},
                                         kPointwise | kRecomputable | kNonDifferentiable,
                                         "ScalarOtherAttrs");
  s.shape = rules::same_shape;
  s.dtype = bool_dtype;
  s.compute[kCpuKey] = compare_scalar_kernel<Math>;
  s.expr = compare_scalar_expr<Math>;
}

// ---- logical ops: any dtype, nonzero is true, Bool output ----

void logical_and_kernel(const OpDef&, std::span<const Tensor> outputs,
                        std::span<const Tensor> inputs, const void*) {
  CastInputs cast = cast_inputs(inputs, kBool);
  TensorIterator it(outputs, cast);
  binary_loop<bool, bool>(it, [](bool a, bool b) { return math::logical_and(a, b); });
}
void logical_or_kernel(const OpDef&, std::span<const Tensor> outputs,
                       std::span<const Tensor> inputs, const void*) {
  CastInputs cast = cast_inputs(inputs, kBool);
  TensorIterator it(outputs, cast);
  binary_loop<bool, bool>(it, [](bool a, bool b) { return math::logical_or(a, b); });
}
void logical_not_kernel(const OpDef&, std::span<const Tensor> outputs,
                        std::span<const Tensor> inputs, const void*) {
  CastInputs cast = cast_inputs(inputs, kBool);
  TensorIterator it(outputs, cast);
  unary_loop<bool, bool>(it, [](bool a) { return math::logical_not(a); });
}

// The operands converted to Bool as cast_inputs(inputs, kBool) converts them.
kir::Val logical_and_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType) {
  return math::logical_and(kir::to_compute(in[0], kBool), kir::to_compute(in[1], kBool));
}
kir::Val logical_or_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType) {
  return math::logical_or(kir::to_compute(in[0], kBool), kir::to_compute(in[1], kBool));
}
kir::Val logical_not_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType) {
  return math::logical_not(kir::to_compute(in[0], kBool));
}

// ---- where(cond, self, other) ----

DType where_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  KILN_CHECK(inputs[0].dtype == kBool,
             "{}: expected condition to be a bool tensor, but got a tensor of dtype {} and shape "
             "{}",
             op.name, inputs[0].dtype, shape_str(inputs[0].sizes));
  return result_type(inputs.subspan(1));
}

void where_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                  const void*) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs.subspan(1), dtype);
  std::array<Tensor, 3> ops{inputs[0], cast[0], cast[1]};
  TensorIterator it(outputs, ops);
  KILN_DISPATCH_ALL(dtype, op.name, [&]<class T>() {
    nary_loop<T, bool, T, T>(
        it, [](bool c, compute_t<T> a, compute_t<T> b) { return math::where(c, a, b); });
  });
}

// Only selects, so even bool values stay bool; the condition is used as loaded (a Bool tensor).
kir::Val where_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType result) {
  return math::where(in[0], kir::to_compute(in[1], result), kir::to_compute(in[2], result));
}

// ---- masked_fill(self, mask, value) ----

// A template over the size type (Note [Symbolic sizes]).
template <class Ref>
std::vector<rules::GeometryOf<Ref>> masked_fill_shape(const OpDef& op, std::span<const Ref> inputs,
                                                      const void*) {
  using Sizes = rules::SizesOf<Ref>;
  Sizes self(inputs[0].sizes.begin(), inputs[0].sizes.end());
  Sizes b = broadcast_shapes(op.name, self, inputs[1].sizes);
  KILN_CHECK(b == self, "{}: mask of shape {} is not broadcastable to self of shape {}", op.name,
             shape_str(inputs[1].sizes), shape_str(self));
  return {rules::GeometryOf<Ref>{std::move(self)}};
}

DType masked_fill_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs,
                        size_t) {
  KILN_CHECK(inputs[1].dtype == kBool,
             "{}: expected mask to be a bool tensor, but got a tensor of dtype {} and shape {} "
             "(self has shape {})",
             op.name, inputs[1].dtype, shape_str(inputs[1].sizes), shape_str(inputs[0].sizes));
  const Scalar& v = attrs_as<MaskedFillAttrs>(attrs).value;
  KILN_CHECK(!is_integral(inputs[0].dtype, true) || !v.is_floating() ||
                 v.to_double() == static_cast<double>(v.to_int()),
             "{}: value {} cannot be converted to type {} without overflow", op.name, v,
             inputs[0].dtype);
  return inputs[0].dtype;
}

void masked_fill_kernel(const OpDef& op, std::span<const Tensor> outputs,
                        std::span<const Tensor> inputs, const void* attrs) {
  DType dtype = outputs[0].dtype();
  const Scalar& value = attrs_as<MaskedFillAttrs>(attrs).value;
  TensorIterator it(outputs, inputs);
  KILN_DISPATCH_ALL(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C v = scalar_value<T>(value);
    nary_loop<T, T, bool>(it, [v](C x, bool m) { return math::masked_fill(x, m, v); });
  });
}

// self already has the result dtype; the mask is used as loaded (a Bool tensor).
kir::Val masked_fill_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs,
                          DType result) {
  const Scalar& value = attrs_as<MaskedFillAttrs>(attrs).value;
  return math::masked_fill(kir::to_compute(in[0], result), in[1], scalar_const(value, result));
}

}  // namespace

void register_pointwise_compare_ops(OpTable& table) {
  struct MaxMin {
    const char* name;
    ComputeKernel kernel;
    PointwiseExpr expr;
  };
  for (MaxMin f :
       {MaxMin{"maximum", binary_nocoef_kernel<MaximumMath>, binary_nocoef_expr<MaximumMath>},
        MaxMin{"minimum", binary_nocoef_kernel<MinimumMath>, binary_nocoef_expr<MinimumMath>}}) {
    OpDef& m = table.add<NoAttrs>(f.name, {"self", "other"}, kPointwise | kRecomputable, "NoAttrs");
    m.shape = rules::broadcast_shape;
    m.dtype = unary_dtype_rule<Promote::Same>;
    m.compute[kCpuKey] = f.kernel;
    m.expr = f.expr;
  }

  def_compare<EqMath>(table, "eq");
  def_compare<NeMath>(table, "ne");
  def_compare<LtMath>(table, "lt");
  def_compare<LeMath>(table, "le");
  def_compare<GtMath>(table, "gt");
  def_compare<GeMath>(table, "ge");

  constexpr uint32_t kLogical = kPointwise | kRecomputable | kNonDifferentiable;
  OpDef& land = table.add<NoAttrs>("logical_and", {"self", "other"}, kLogical, "NoAttrs");
  land.shape = rules::broadcast_shape;
  land.dtype = bool_dtype;
  land.compute[kCpuKey] = logical_and_kernel;
  land.expr = logical_and_expr;
  OpDef& lor = table.add<NoAttrs>("logical_or", {"self", "other"}, kLogical, "NoAttrs");
  lor.shape = rules::broadcast_shape;
  lor.dtype = bool_dtype;
  lor.compute[kCpuKey] = logical_or_kernel;
  lor.expr = logical_or_expr;
  OpDef& lnot = table.add<NoAttrs>("logical_not", {"self"}, kLogical, "NoAttrs");
  lnot.shape = rules::same_shape;
  lnot.dtype = bool_dtype;
  lnot.compute[kCpuKey] = logical_not_kernel;
  lnot.expr = logical_not_expr;

  OpDef& where = table.add<NoAttrs>("where", {"condition", "self", "other"},
                                    kPointwise | kRecomputable, "NoAttrs");
  where.shape = rules::broadcast_shape;
  where.dtype = where_dtype;
  where.compute[kCpuKey] = where_kernel;
  where.expr = where_expr;

  OpDef& mf = table.add<MaskedFillAttrs>("masked_fill", {"self", "mask"},
                                         kPointwise | kRecomputable, "MaskedFillAttrs");
  rules::set_shape_rules(mf, masked_fill_shape<MetaRef>, masked_fill_shape<SymMetaRef>);
  mf.dtype = masked_fill_dtype;
  mf.compute[kCpuKey] = masked_fill_kernel;
  mf.expr = masked_fill_expr;

  OpDef& mf_ =
      table.add<MaskedFillAttrs>("masked_fill_", {"self", "mask"}, kInPlace, "MaskedFillAttrs");
  rules::set_shape_rules(mf_, masked_fill_shape<MetaRef>, masked_fill_shape<SymMetaRef>);
  mf_.dtype = masked_fill_dtype;
  mf_.compute[kCpuKey] = masked_fill_kernel;
}

}  // namespace kiln::pointwise
