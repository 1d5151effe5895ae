// OpInfo entries of the in-place pointwise ops (add_, sub_, mul_, div_ and their scalar forms,
// clamp_, relu_, the rounding, remainder, lerp and activation twins; masked_fill_ is with
// masked_fill). Each sample copies self into a fresh
// tensor of the same layout, applies the op to the copy, checks that the op returned self and
// bumped its version, and compares the copy with a <cmath> reference.
#include <cmath>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Scalar;
using kiln::Tensor;

// Applies `op` to a copy of in[0] laid out as `layout`; returns the copy.
template <class Op>
std::vector<Tensor> apply_inplace(const std::vector<Tensor>& in, Layout layout, const Op& op) {
  Tensor self = copy_with_layout(in[0], layout);
  uint32_t before = self.version();
  const Tensor& r = op(self, in);
  EXPECT_TRUE(r.is_same(self)) << "an in-place op returns self";
  EXPECT_EQ(self.version(), before + 1) << "an in-place op bumps the version once";
  return {self};
}

struct InplacePair {
  kiln::Shape self, other;
  Layout ls, lo;
};
// `other` always broadcasts to `self`'s shape.
const std::vector<InplacePair> kPairs = {
    {{4, 5}, {4, 5}, Layout::Contiguous, Layout::Contiguous},
    {{4, 5}, {4, 5}, Layout::Transposed, Layout::Strided},
    {{2, 3, 4}, {4}, Layout::Strided, Layout::Strided},
    {{3, 1, 6}, {1, 6}, Layout::Contiguous, Layout::Contiguous},
    {{3, 4}, {}, Layout::Transposed, Layout::Contiguous},
    {{2, 0, 3}, {1, 3}, Layout::Contiguous, Layout::Contiguous},
    {{}, {}, Layout::Contiguous, Layout::Contiguous},
    {{1, 1}, {1}, Layout::Contiguous, Layout::Contiguous},
};

using BinaryInplace = std::function<void(const Tensor&, const Tensor&)>;
using ScalarInplace = std::function<void(const Tensor&, const Scalar&)>;

// Samples for self.op_(other) and self.op_(scalar). `types` are (self, other, self) triples:
// the result always has self's dtype.
OpInfo binary_inplace(const std::string& name, BinaryInplace op, ScalarInplace scalar_op,
                      std::function<double(double, double)> ref, std::vector<DTypeTriple> types,
                      double b_lo, double b_hi) {
  OpInfo info{name, {name, name.substr(0, name.size() - 1) + "_scalar_"}};
  info.samples = [=] {
    std::vector<Sample> s;
    uint32_t seed = 1000;
    for (const DTypeTriple& t : types) {
      for (const InplacePair& p : kPairs) {
        Sample sample;
        sample.name = fmt::format("{}_{}_[{}]{}_[{}]{}", kiln::dtype_name(t.a),
                                  kiln::dtype_name(t.b), fmt::join(p.self, "x"), layout_name(p.ls),
                                  fmt::join(p.other, "x"), layout_name(p.lo));
        sample.inputs = {make_input(p.self, t.a, p.ls, -5, 5, seed),
                         make_input(p.other, t.b, p.lo, b_lo, b_hi, seed + 1)};
        seed += 2;
        Layout ls = p.ls;
        sample.call = [op, ls](const std::vector<Tensor>& in) {
          return apply_inplace(in, ls, [&](const Tensor& self, const std::vector<Tensor>& i) {
            op(self, i[1]);
            return self;
          });
        };
        DType out = t.a;
        sample.reference = [ref, out](const std::vector<RefTensor>& in) {
          return std::vector{ref_zip(in[0], in[1], out, ref)};
        };
        s.push_back(std::move(sample));
      }
      // The scalar form on the same self dtype, each layout.
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        double v = kiln::is_floating(t.a) ? (b_lo + b_hi) / 2 + 0.37 : std::round(b_hi);
        Scalar sv = kiln::is_floating(t.a) ? Scalar(v) : Scalar(static_cast<int64_t>(v));
        Sample sample;
        sample.name =
            fmt::format("scalar_{}_{}_{}", kiln::dtype_name(t.a), sv, layout_name(layout));
        sample.inputs = {make_input({3, 4}, t.a, layout, -5, 5, seed++)};
        sample.call = [scalar_op, layout, sv](const std::vector<Tensor>& in) {
          return apply_inplace(in, layout, [&](const Tensor& self, const std::vector<Tensor>&) {
            scalar_op(self, sv);
            return self;
          });
        };
        DType out = t.a;
        sample.reference = [ref, out, v](const std::vector<RefTensor>& in) {
          return std::vector{ref_map(in[0], out, [&](double x) { return ref(x, v); })};
        };
        s.push_back(std::move(sample));
      }
    }
    return s;
  };
  return info;
}

// (self, other, self): same dtypes, a lower category other, and a wider other of the same
// category (float16 self += float32 other computes in float32, then rounds to float16).
const std::vector<DTypeTriple> kArithTypes = {
    {kiln::kFloat32, kiln::kFloat32, kiln::kFloat32},
    {kiln::kFloat64, kiln::kFloat64, kiln::kFloat64},
    {kiln::kFloat16, kiln::kFloat16, kiln::kFloat16},
    {kiln::kBFloat16, kiln::kBFloat16, kiln::kBFloat16},
    {kiln::kInt32, kiln::kInt32, kiln::kInt32},
    {kiln::kInt64, kiln::kInt64, kiln::kInt64},
    {kiln::kFloat32, kiln::kInt64, kiln::kFloat32},
    {kiln::kFloat16, kiln::kFloat32, kiln::kFloat16},
    {kiln::kFloat32, kiln::kFloat64, kiln::kFloat32},
    {kiln::kInt64, kiln::kInt32, kiln::kInt64},
    {kiln::kInt32, kiln::kBool, kiln::kInt32},
};

KILN_REGISTER_OPINFO(add_, binary_inplace(
                               "add_", [](const Tensor& a, const Tensor& b) { kiln::add_(a, b); },
                               [](const Tensor& a, const Scalar& b) { kiln::add_(a, b); },
                               [](double a, double b) { return a + b; }, kArithTypes, -5, 5));
KILN_REGISTER_OPINFO(sub_,
                     binary_inplace(
                         "sub_", [](const Tensor& a, const Tensor& b) { kiln::sub_(a, b, 2); },
                         [](const Tensor& a, const Scalar& b) { kiln::sub_(a, b, 2); },
                         [](double a, double b) { return a - 2 * b; },
                         {kArithTypes.begin(), kArithTypes.end() - 1}, -5, 5));
KILN_REGISTER_OPINFO(mul_, binary_inplace(
                               "mul_", [](const Tensor& a, const Tensor& b) { kiln::mul_(a, b); },
                               [](const Tensor& a, const Scalar& b) { kiln::mul_(a, b); },
                               [](double a, double b) { return a * b; }, kArithTypes, -5, 5));
// True division needs a floating self; the divisor stays away from 0.
KILN_REGISTER_OPINFO(div_, binary_inplace(
                               "div_", [](const Tensor& a, const Tensor& b) { kiln::div_(a, b); },
                               [](const Tensor& a, const Scalar& b) { kiln::div_(a, b); },
                               [](double a, double b) { return a / b; },
                               {{kiln::kFloat32, kiln::kFloat32, kiln::kFloat32},
                                {kiln::kFloat64, kiln::kFloat64, kiln::kFloat64},
                                {kiln::kFloat16, kiln::kFloat16, kiln::kFloat16},
                                {kiln::kFloat32, kiln::kInt64, kiln::kFloat32},
                                {kiln::kFloat16, kiln::kFloat32, kiln::kFloat16}},
                               1, 6));

// Unary in-place ops over every dtype and layout of unary_samples' inputs.
std::vector<Sample> unary_inplace_samples(const std::function<void(const Tensor&)>& op,
                                          const std::function<double(double)>& ref,
                                          const std::vector<DType>& types, double lo, double hi) {
  std::vector<Sample> s = unary_samples([](const Tensor& x) { return x; }, ref, types, lo, hi,
                                        [](DType t) { return t; });
  for (Sample& sample : s) {
    Layout layout = sample.name.ends_with("transposed") ? Layout::Transposed
                    : sample.name.ends_with("strided")  ? Layout::Strided
                                                        : Layout::Contiguous;
    sample.call = [op, layout](const std::vector<Tensor>& in) {
      return apply_inplace(in, layout, [&](const Tensor& self, const std::vector<Tensor>&) {
        op(self);
        return self;
      });
    };
  }
  return s;
}

// Note [OpInfo integer dtypes]
const std::vector<DType> kNumeric = {kiln::kFloat32,  kiln::kFloat64, kiln::kFloat16,
                                     kiln::kBFloat16, kiln::kInt32,   kiln::kInt64,
                                     kiln::kUInt8,    kiln::kInt8,    kiln::kInt16};

KILN_REGISTER_OPINFO(relu_, [] {
  OpInfo info{"relu_", {"relu_"}};
  info.samples = [] {
    return unary_inplace_samples([](const Tensor& x) { kiln::relu_(x); },
                                 [](double x) { return x > 0 ? x : 0.0; }, kNumeric, -3, 3);
  };
  return info;
}());

KILN_REGISTER_OPINFO(clamp_, [] {
  OpInfo info{"clamp_", {"clamp_"}};
  info.samples = [] {
    std::vector<Sample> s = unary_inplace_samples(
        [](const Tensor& x) { kiln::clamp_(x, -1, 2); },
        [](double x) { return std::min(std::max(x, -1.0), 2.0); }, kNumeric, -4, 4);
    std::vector<Sample> lo = unary_inplace_samples([](const Tensor& x) { kiln::clamp_(x, 0.5); },
                                                   [](double x) { return std::max(x, 0.5); },
                                                   {kiln::kFloat32, kiln::kFloat64}, -4, 4);
    std::vector<Sample> hi = unary_inplace_samples(
        [](const Tensor& x) { kiln::clamp_(x, std::nullopt, 1); },
        [](double x) { return std::min(x, 1.0); }, {kiln::kInt64, kiln::kFloat16}, -4, 4);
    for (auto* v : {&lo, &hi}) {
      for (Sample& x : *v) {
        x.name = (v == &lo ? "min_only_" : "max_only_") + x.name;
        s.push_back(std::move(x));
      }
    }
    return s;
  };
  return info;
}());

// ---- the in-place twins of the rounding, remainder, lerp and activation ops ----

const std::vector<DType> kFloating = {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16,
                                      kiln::kBFloat16};

OpInfo unary_inplace(const std::string& name, const std::function<void(const Tensor&)>& op,
                     const std::function<double(double)>& ref, const std::vector<DType>& types,
                     double lo, double hi) {
  OpInfo info{name, {name}};
  info.samples = [=] { return unary_inplace_samples(op, ref, types, lo, hi); };
  return info;
}

KILN_REGISTER_OPINFO(floor_, unary_inplace(
                                 "floor_", [](const Tensor& x) { x.floor_(); },
                                 [](double x) { return std::floor(x); }, kNumeric, -4, 4));
KILN_REGISTER_OPINFO(ceil_, unary_inplace(
                                "ceil_", [](const Tensor& x) { x.ceil_(); },
                                [](double x) { return std::ceil(x); }, kNumeric, -4, 4));
KILN_REGISTER_OPINFO(trunc_, unary_inplace(
                                 "trunc_", [](const Tensor& x) { x.trunc_(); },
                                 [](double x) { return std::trunc(x); }, kNumeric, -4, 4));
// Half to even, as the default rounding mode of nearbyint.
KILN_REGISTER_OPINFO(round_, unary_inplace(
                                 "round_", [](const Tensor& x) { x.round_(); },
                                 [](double x) { return std::nearbyint(x); }, kNumeric, -4, 4));
KILN_REGISTER_OPINFO(reciprocal_, unary_inplace(
                                      "reciprocal_", [](const Tensor& x) { x.reciprocal_(); },
                                      [](double x) { return 1 / x; }, kFloating, 0.5, 4));
KILN_REGISTER_OPINFO(leaky_relu_,
                     unary_inplace(
                         "leaky_relu_", [](const Tensor& x) { kiln::leaky_relu_(x, 0.2); },
                         [](double x) { return x > 0 ? x : 0.2 * x; }, kFloating, -3, 3));
KILN_REGISTER_OPINFO(elu_, unary_inplace(
                               "elu_", [](const Tensor& x) { kiln::elu_(x, 1.5); },
                               [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); }, kFloating,
                               -3, 3));
KILN_REGISTER_OPINFO(hardtanh_,
                     unary_inplace(
                         "hardtanh_", [](const Tensor& x) { kiln::hardtanh_(x, -0.5, 2); },
                         [](double x) { return std::min(std::max(x, -0.5), 2.0); }, kFloating, -3,
                         3));
KILN_REGISTER_OPINFO(hardswish_,
                     unary_inplace(
                         "hardswish_", [](const Tensor& x) { kiln::hardswish_(x); },
                         [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; },
                         kFloating, -5, 5));
KILN_REGISTER_OPINFO(mish_, unary_inplace(
                                "mish_", [](const Tensor& x) { kiln::mish_(x); },
                                [](double x) { return x * std::tanh(std::log1p(std::exp(x))); },
                                kFloating, -3, 3));

KILN_REGISTER_OPINFO(silu_, unary_inplace(
                                "silu_", [](const Tensor& x) { kiln::silu_(x); },
                                [](double x) { return x / (1 + std::exp(-x)); }, kFloating, -4, 4));

// The divisor stays in [1, 6]: no division by zero (the out-of-place OpInfos take negative
// divisors and the integer error).
const std::vector<DTypeTriple> kDivmodTypes = {
    {kiln::kFloat32, kiln::kFloat32, kiln::kFloat32},
    {kiln::kFloat64, kiln::kFloat64, kiln::kFloat64},
    {kiln::kFloat16, kiln::kFloat16, kiln::kFloat16},
    {kiln::kInt32, kiln::kInt32, kiln::kInt32},
    {kiln::kInt64, kiln::kInt64, kiln::kInt64},
    {kiln::kFloat32, kiln::kInt64, kiln::kFloat32},
};
KILN_REGISTER_OPINFO(fmod_,
                     binary_inplace(
                         "fmod_", [](const Tensor& a, const Tensor& b) { a.fmod_(b); },
                         [](const Tensor& a, const Scalar& b) { a.fmod_(b); },
                         [](double a, double b) { return std::fmod(a, b); }, kDivmodTypes, 1, 6));
KILN_REGISTER_OPINFO(remainder_,
                     binary_inplace(
                         "remainder_", [](const Tensor& a, const Tensor& b) { a.remainder_(b); },
                         [](const Tensor& a, const Scalar& b) { a.remainder_(b); },
                         [](double a, double b) { return a - b * std::floor(a / b); }, kDivmodTypes,
                         1, 6));
// lerp_ with a 0-dim weight tensor; lerp_scalar_ (the "scalar" samples) with a number weight and
// the scalar as the end point.
KILN_REGISTER_OPINFO(
    lerp_, binary_inplace(
               "lerp_",
               [](const Tensor& a, const Tensor& b) {
                 a.lerp_(b,
                         kiln::full({}, 0.25, kiln::TensorOptions(a.dtype()).device(a.device())));
               },
               [](const Tensor& a, const Scalar& b) { a.lerp_(kiln::full_like(a, b), 0.25); },
               [](double a, double b) { return a + 0.25 * (b - a); },
               {{kiln::kFloat32, kiln::kFloat32, kiln::kFloat32},
                {kiln::kFloat64, kiln::kFloat64, kiln::kFloat64},
                {kiln::kFloat16, kiln::kFloat16, kiln::kFloat16},
                {kiln::kBFloat16, kiln::kBFloat16, kiln::kBFloat16}},
               -5, 5));

}  // namespace
}  // namespace kiln_test
