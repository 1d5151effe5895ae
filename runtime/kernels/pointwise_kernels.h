// Building blocks shared by the pointwise op family (pointwise_*_ops.cpp): dtype rules, the
// generic kernels that instantiate the math of base/pointwise_math.h per dtype, the same
// math instantiated with kir::Val for OpDef::expr, and the registration entry points of the
// family's files (all called from register_pointwise_ops).
#pragma once

#include <array>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/kernels/pointwise_loops.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/type_promotion.h"

namespace kiln::pointwise {

inline constexpr int kCpuKey = static_cast<int>(DispatchKey::CPU);

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
inline DType check_alpha(const OpDef& op, DType result, const Scalar& alpha) {
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

// torch.can_cast for the in-place ops: a result may be written into an output of the same or
// a higher category (bool < integer < floating), never a lower one.
inline bool can_cast(DType from, DType to) {
  auto category = [](DType t) { return t == kBool ? 0 : is_integral(t, false) ? 1 : 2; };
  return category(from) <= category(to);
}

// The in-place version of an out-of-place dtype rule: the result is written into self, so its
// dtype is self's, provided the promoted result type can be cast to it.
template <DTypeRule Rule>
DType inplace_dtype_rule(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs,
                         size_t i) {
  DType result = Rule(op, inputs, attrs, i);
  DType self = inputs[0].dtype;
  KILN_CHECK(can_cast(result, self),
             "{}: result type {} can't be cast to the desired output type {} (self has shape {} "
             "and dtype {})",
             op.name, result, self, shape_str(inputs[0].sizes), self);
  return self;
}

// The in-place shape rule: the other inputs broadcast to self's shape, never the reverse.
inline std::vector<OutputGeometry> inplace_shape_rule(const OpDef& op,
                                                      std::span<const MetaRef> inputs,
                                                      const void*) {
  Shape self(inputs[0].sizes.begin(), inputs[0].sizes.end());
  for (size_t i = 1; i < inputs.size(); ++i) {
    Shape b = broadcast_shapes(op.name, self, inputs[i].sizes);
    KILN_CHECK(b == self,
               "{}: output with shape {} doesn't match the broadcast shape {} (input {} has shape "
               "{})",
               op.name, shape_str(self), shape_str(b), i, shape_str(inputs[i].sizes));
  }
  return {OutputGeometry{std::move(self)}};
}

// ---- loops ----

// out = f(in0, in1, ...) with one C++ type per operand (each input already in its type).
template <class Out, class... In, class F>
void nary_loop(const TensorIterator& it, const F& f) {
  it.for_each([&](char** data, const int64_t* s, int64_t n) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      auto* out = reinterpret_cast<Out*>(data[0]);
      if (s[0] == sizeof(Out) && ((s[I + 1] == sizeof(In)) && ...)) {
        std::tuple<const In*...> p{reinterpret_cast<const In*>(data[I + 1])...};
        for (int64_t i = 0; i < n; ++i)
          out[i] = static_cast<Out>(f(static_cast<compute_t<In>>(std::get<I>(p)[i])...));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          *reinterpret_cast<Out*>(data[0] + i * s[0]) =
              static_cast<Out>(f(static_cast<compute_t<In>>(
                  *reinterpret_cast<const In*>(data[I + 1] + i * s[I + 1]))...));
        }
      }
    }
    (std::index_sequence_for<In...>{});
  });
}

// ---- kernels ----

// Unary: Math is a functor with `template <class V> V operator()(V x) const`, constructed from
// the op's attribute struct `A` when it takes one.
template <class Math, class A = NoAttrs>
void unary_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                  const void* attrs) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  const Math m = [&] {
    if constexpr (std::is_same_v<A, NoAttrs>) {
      return Math{};
    } else {
      return Math{attrs_as<A>(attrs)};
    }
  }();
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    auto f = [&m](compute_t<T> x) { return m(x); };
    // A Math with a reduced-range float form (Note [Reduced-range float loops]) provides
    // `static float reduced(float)` and `kReducedLimit`.
    if constexpr (std::is_same_v<T, float> && requires { Math::kReducedLimit; }) {
      unary_loop<T, T>(it, f, [&f](float* out, const float* in, int64_t n) {
        unary_contiguous_f32_reduced(
            out, in, n, Math::kReducedLimit, [](float x) { return Math::reduced(x); }, f);
      });
    } else {
      unary_loop<T, T>(it, f);
    }
  });
}

// Binary tensor-tensor: Math is `operator()(V a, V b, V alpha)`.
template <class Math>
void binary_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                   const void* attrs) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  const auto& a = attrs_as<AlphaAttrs>(attrs);
  KILN_DISPATCH_ALL(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C alpha = scalar_value<T>(a.alpha);
    binary_loop<T, T>(it, [alpha](C x, C y) { return Math()(x, y, alpha); });
  });
}

// Binary tensor-tensor without alpha (maximum, fmod, clamp_min, ...): Math is
// `operator()(V a, V b)`.
template <class Math>
void binary_nocoef_kernel(const OpDef& op, std::span<const Tensor> outputs,
                          std::span<const Tensor> inputs, const void*) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_ALL(dtype, op.name, [&]<class T>() {
    binary_loop<T, T>(it, [](compute_t<T> a, compute_t<T> b) { return Math()(a, b); });
  });
}

// Binary tensor-scalar: the scalar is an attribute, so the loop is unary.
template <class Math>
void scalar_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                   const void* attrs) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  const auto& a = attrs_as<ScalarOperandAttrs>(attrs);
  KILN_DISPATCH_ALL(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C other = scalar_value<T>(a.other), alpha = scalar_value<T>(a.alpha);
    unary_loop<T, T>(it, [other, alpha](C x) { return Math()(x, other, alpha); });
  });
}

// ---- the same math as kernel-IR expressions (OpDef::expr) ----

// The dtype an expression carries `result`'s arithmetic out in: the eager kernel's compute_t,
// except bool, which C++ promotes to int in the math's `a + alpha * b` or `b < a` before the
// value is converted back to bool.
inline DType arith_dtype(DType result) {
  DType c = kir::compute_dtype(result);
  return c == kBool ? kInt32 : c;
}

// An operand as the eager kernel's math sees it: converted to the result dtype (cast_inputs),
// then to its compute type.
inline kir::Val operand_expr(kir::Val x, DType result) {
  return kir::cast(kir::to_compute(x, result), arith_dtype(result));
}

// A scalar attribute as the eager kernel converts it: rounded to compute_t of the result's C++
// type (Scalar::to), so a float32 op sees alpha as a float and an int64 op keeps all 64 bits.
inline kir::Val scalar_const(const Scalar& s, DType result) {
  kir::Builder& b = kir::MathScope::builder();
  return KILN_DISPATCH_ALL(result, "scalar_const", [&]<class T>() -> kir::Val {
    using C = compute_t<T>;
    C v = scalar_value<T>(s);
    if constexpr (std::is_floating_point_v<C>) {
      return b.constant(static_cast<double>(v), dtype_of<C>);
    } else {
      return b.iconstant(static_cast<int64_t>(v), dtype_of<C>);
    }
  });
}

// A scalar operand of the math (alpha, a clamp bound), in the arithmetic dtype.
inline kir::Val scalar_expr(const Scalar& s, DType result) {
  return kir::cast(scalar_const(s, result), arith_dtype(result));
}

// Builds `math()` with the constants it spells (`V(0.5)`) in the arithmetic dtype of `result`,
// and returns its value in result's compute dtype.
template <class F>
kir::Val math_expr(DType result, const F& math) {
  kir::MathScope scope(kir::MathScope::builder(), arith_dtype(result));
  return kir::cast(math(), kir::compute_dtype(result));
}

template <class Math>
kir::Val unary_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType result) {
  return math_expr(result, [&] { return Math{}(operand_expr(in[0], result)); });
}

template <class Math>
kir::Val binary_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs, DType result) {
  const auto& a = attrs_as<AlphaAttrs>(attrs);
  return math_expr(result, [&] {
    return Math()(operand_expr(in[0], result), operand_expr(in[1], result),
                  scalar_expr(a.alpha, result));
  });
}

template <class Math>
kir::Val binary_nocoef_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType result) {
  return math_expr(
      result, [&] { return Math()(operand_expr(in[0], result), operand_expr(in[1], result)); });
}

template <class Math>
kir::Val scalar_operand_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs,
                             DType result) {
  const auto& a = attrs_as<ScalarOperandAttrs>(attrs);
  return math_expr(result, [&] {
    return Math()(operand_expr(in[0], result), scalar_expr(a.other, result),
                  scalar_expr(a.alpha, result));
  });
}

inline std::vector<MetaRef> metas_of(std::span<const Tensor> inputs) {
  std::vector<MetaRef> m;
  m.reserve(inputs.size());
  for (const Tensor& t : inputs)
    m.push_back(MetaRef::of(t));
  return m;
}

// Note [In-place ops]
// An in-place op (add_, clamp_, masked_fill_, relu_, ...) is its own kInPlace table entry:
// output 0 is input 0 (the dispatcher aliases it and bumps its version counter), the other
// inputs broadcast to self's shape (inplace_shape_rule), and its dtype is self's, provided the
// out-of-place result type can be cast to it (inplace_dtype_rule; int.add_(float) throws).
// Writing through a view writes into the view's storage, so the base sees the change.
//
// The CPU kernel of an in-place op, from its out-of-place kernel and dtype rule. The math runs
// in the promoted result type, as torch computes it: directly into self when that is self's
// dtype, else into a temporary that is then converted into self.
template <ComputeKernel Kernel, DTypeRule Rule>
void inplace_kernel(const OpDef& op, std::span<const Tensor> outputs,
                    std::span<const Tensor> inputs, const void* attrs) {
  const Tensor& self = outputs[0];
  std::vector<MetaRef> metas = metas_of(inputs);
  DType result = Rule(op, metas, attrs, 0);
  if (result == self.dtype()) {
    Kernel(op, outputs, inputs, attrs);
    return;
  }
  std::array<Tensor, 1> tmp{empty_tensor(self.sizes(), result, self.device())};
  Kernel(op, tmp, inputs, attrs);
  CastInputs back = cast_inputs(tmp, self.dtype());
  TensorIterator it(outputs, back);
  KILN_DISPATCH_ALL(self.dtype(), op.name,
                    [&]<class T>() { unary_loop<T, T>(it, [](compute_t<T> x) { return x; }); });
}

// The in-place twin `<name>_` of the registered pointwise op `twin` (which Kernel, Rule and A
// are): the same inputs, python order and attribute struct, writing into self. Its CUDA kernel
// is the twin's expression (register_cuda_pointwise_kernels), and the tracer records it as the
// twin (Note [Functionalized in-place ops]); the derivative entry names both.
template <class A, ComputeKernel Kernel, DTypeRule Rule>
OpDef& def_in_place_twin(OpTable& table, const OpDef& twin) {
  OpDef& d = table.add<A>(twin.name + "_", twin.input_names, kInPlace, twin.attrs_type);
  d.python_order = twin.python_order;
  d.shape = twin.input_names.size() == 1 ? rules::same_shape : inplace_shape_rule;
  d.dtype = inplace_dtype_rule<Rule>;
  d.compute[kCpuKey] = inplace_kernel<Kernel, Rule>;
  return d;
}

// ---- registration of the family's files ----
void register_pointwise_math_ops(OpTable& table);        // pointwise_math_ops.cpp
void register_pointwise_compare_ops(OpTable& table);     // pointwise_compare_ops.cpp
void register_pointwise_rounding_ops(OpTable& table);    // pointwise_rounding_ops.cpp
void register_pointwise_activation_ops(OpTable& table);  // pointwise_activation_ops.cpp

// A unary op's math as a functor over any value type: KILN_MATH1(ExpMath, math::exp_(x)).
#define KILN_MATH1(Name, expr) \
  struct Name {                \
    template <class V>         \
    V operator()(V x) const {  \
      return expr;             \
    }                          \
  };
// Registers a unary pointwise table entry whose math is the functor Math.
template <class Math, Promote P>
void def_unary(OpTable& table, const std::string& name) {
  OpDef& u = table.add<NoAttrs>(name, {"self"}, kPointwise | kRecomputable, "NoAttrs");
  u.shape = rules::same_shape;
  u.dtype = unary_dtype_rule<P>;
  u.compute[kCpuKey] = unary_kernel<Math>;
  u.expr = unary_expr<Math>;
}

}  // namespace kiln::pointwise
