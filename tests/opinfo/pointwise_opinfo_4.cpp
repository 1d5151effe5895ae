// OpInfo entries of the rounding and remainder ops, reciprocal, the activations beyond relu, gelu
// and silu, lerp and clamp with tensor bounds. References are C++ <cmath> on doubles.
#include <array>
#include <cfenv>
#include <cmath>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Tensor;

const std::vector<DType> kFloatTypes = {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16,
                                        kiln::kBFloat16};

std::vector<DType> all_numeric() {
  std::vector<DType> t = kFloatTypes;
  t.insert(t.end(), kIntegerDTypes.begin(), kIntegerDTypes.end());  // Note [OpInfo integer dtypes]
  return t;
}
DType same(DType t) {
  return t;
}
DType int_to_float(DType t) {
  return kiln::is_floating(t) ? t : kiln::kFloat32;
}

void append(std::vector<Sample>& s, std::vector<Sample> more, const std::string& prefix = "") {
  for (Sample& x : more) {
    x.name = prefix + x.name;
    s.push_back(std::move(x));
  }
}

// A sample of `op` on fixed float32 and float64 values against `ref`. The values hold the kinks
// and ties the random samples miss; they include inf and NaN, so gradcheck (which needs finite
// inputs: finite differences across a jump mean nothing) leaves them out.
std::vector<Sample> special_samples(const std::string& name,
                                    const std::function<Tensor(const Tensor&)>& op,
                                    const std::function<double(double)>& ref,
                                    std::vector<double> values) {
  values.insert(values.end(), {INFINITY, -INFINITY, NAN, 0.0, -0.0});
  std::vector<Sample> s;
  for (DType t : {kiln::kFloat32, kiln::kFloat64}) {
    Sample sample;
    sample.name = fmt::format("{}_{}", name, kiln::dtype_name(t));
    sample.inputs = {kiln::from_vector(values, {static_cast<int64_t>(values.size())}).to(t)};
    sample.call = [op](const std::vector<Tensor>& in) { return std::vector{op(in[0])}; };
    sample.reference = [ref, t](const std::vector<RefTensor>& in) {
      return std::vector{ref_map(in[0], t, ref)};
    };
    s.push_back(std::move(sample));
  }
  return s;
}

// ---- floor, ceil, round, trunc ----

// Round half to even, as torch.round: nearbyint under the default rounding mode.
double round_half_even(double x) {
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
  return std::nearbyint(x);
}

const std::vector<double> kRoundingPoints = {0.5,  1.5, 2.5,  -0.5, -1.5, -2.5, 0.49,  -0.51,
                                             -0.3, 0.7, -0.7, 3.0,  -3.0, 1e20, -1e20, 8388609};

OpInfo rounding(const char* name, Tensor (*op)(const Tensor&), double (*ref)(double)) {
  OpInfo info{name, {name}};
  info.samples = [=] {
    auto f = [op](const Tensor& x) { return op(x); };
    std::vector<Sample> s = unary_samples(f, ref, all_numeric(), -5, 5, same);
    append(s, special_samples("ties", f, ref, kRoundingPoints));
    return s;
  };
  return info;
}

KILN_REGISTER_OPINFO(floor, rounding(
                                "floor", [](const Tensor& x) { return kiln::floor(x); },
                                [](double x) { return std::floor(x); }));
KILN_REGISTER_OPINFO(ceil, rounding(
                               "ceil", [](const Tensor& x) { return kiln::ceil(x); },
                               [](double x) { return std::ceil(x); }));
KILN_REGISTER_OPINFO(trunc, rounding(
                                "trunc", [](const Tensor& x) { return kiln::trunc(x); },
                                [](double x) { return std::trunc(x); }));
KILN_REGISTER_OPINFO(round, [] {
  OpInfo info = rounding(
      "round", [](const Tensor& x) { return kiln::round(x); }, round_half_even);
  auto plain = info.samples;
  info.samples = [plain] {
    std::vector<Sample> s = plain();
    // decimals: the scaled value rounded in the input's precision first, as torch computes it.
    for (int64_t d : {2, -1}) {
      for (DType t : {kiln::kFloat32, kiln::kFloat64}) {
        double scale = std::pow(10.0, std::abs(static_cast<double>(d)));
        auto ref = [d, t, scale](double x) {
          return d > 0 ? round_half_even(round_to(x * scale, t)) / scale
                       : round_half_even(round_to(x / scale, t)) * scale;
        };
        append(s,
               unary_samples([d](const Tensor& x) { return kiln::round(x, d); }, ref, {t}, -40, 40,
                             same),
               fmt::format("decimals{}_", d));
      }
    }
    return s;
  };
  return info;
}());

// ---- fmod, remainder ----

// Python's %: floored division's remainder, with the divisor's sign.
double remainder_ref(double a, double b) {
  return a - b * std::floor(a / b);
}
double fmod_ref(double a, double b) {
  return std::fmod(a, b);
}

std::vector<Sample> divmod_scalar_samples(Tensor (*op)(const Tensor&, const kiln::Scalar&),
                                          double (*ref)(double, double)) {
  struct Case {
    DType t;
    kiln::Scalar v;
    DType out;
  };
  std::vector<Sample> s;
  uint32_t seed = 1700;
  for (Case c :
       {Case{kiln::kFloat32, 1.5, kiln::kFloat32}, Case{kiln::kFloat64, -0.75, kiln::kFloat64},
        Case{kiln::kInt64, 3, kiln::kInt64}, Case{kiln::kInt32, -4, kiln::kInt32},
        Case{kiln::kInt32, 2.5, kiln::kFloat32}, Case{kiln::kFloat16, 2, kiln::kFloat16}}) {
    for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      Sample sample;
      sample.name = fmt::format("scalar_{}_{}_{}", kiln::dtype_name(c.t), c.v, layout_name(layout));
      sample.inputs = {make_input({3, 4}, c.t, layout, -9, 9, seed++)};
      kiln::Scalar v = c.v;
      sample.call = [op, v](const std::vector<Tensor>& in) { return std::vector{op(in[0], v)}; };
      double vd = v.to_double();
      DType out = c.out;
      sample.reference = [ref, vd, out](const std::vector<RefTensor>& in) {
        return std::vector{ref_map(in[0], out, [&](double x) { return ref(x, vd); })};
      };
      s.push_back(std::move(sample));
    }
  }
  return s;
}

OpInfo divmod(const std::string& name, Tensor (*op)(const Tensor&, const Tensor&),
              Tensor (*scalar_op)(const Tensor&, const kiln::Scalar&),
              double (*ref)(double, double)) {
  OpInfo info{name, {name, name + "_scalar"}};
  info.samples = [=] {
    auto f = [op](const Tensor& a, const Tensor& b) { return op(a, b); };
    std::vector<DTypeTriple> floats;
    for (DType t : kFloatTypes)
      floats.push_back({t, t, t});
    const std::vector<DTypeTriple> ints = {{kiln::kInt32, kiln::kInt32, kiln::kInt32},
                                           {kiln::kInt64, kiln::kInt64, kiln::kInt64},
                                           {kiln::kInt64, kiln::kInt32, kiln::kInt64},
                                           {kiln::kInt32, kiln::kFloat32, kiln::kFloat32}};
    std::vector<Sample> s = binary_samples(f, ref, floats, -6, 6, 0.5, 3);
    append(s, binary_samples(f, ref, floats, -6, 6, -3, -0.5), "negdiv_");
    append(s, binary_samples(f, ref, ints, -9, 9, 1, 4), "int_");
    append(s, binary_samples(f, ref, ints, -9, 9, -4, -1), "int_negdiv_");
    append(s, divmod_scalar_samples(scalar_op, ref));
    // Exact multiples (a zero result with either sign) and a dividend of either sign.
    Sample exact;
    exact.name = "exact_multiples";
    exact.inputs = {
        kiln::from_vector(std::vector<double>{6, -6, 6, -6, 0.5, -0.5, 7, -7}, {8}),
        kiln::from_vector(std::vector<double>{3, 3, -3, -3, -2, 2, INFINITY, 2.5}, {8})};
    exact.call = [op](const std::vector<Tensor>& in) { return std::vector{op(in[0], in[1])}; };
    exact.reference = [ref](const std::vector<RefTensor>& in) {
      return std::vector{ref_zip(in[0], in[1], kiln::kFloat64, [ref](double a, double b) {
        // fmod(x, inf) is x; Python's remainder there is x or inf-adjusted, as fmod then fixed up.
        if (std::isinf(b)) return (a != 0 && (a < 0) != (b < 0)) && ref == remainder_ref ? b : a;
        return ref(a, b);
      })};
    };
    s.push_back(std::move(exact));
    return s;
  };
  return info;
}

KILN_REGISTER_OPINFO(fmod,
                     divmod(
                         "fmod", [](const Tensor& a, const Tensor& b) { return kiln::fmod(a, b); },
                         [](const Tensor& a, const kiln::Scalar& b) { return kiln::fmod(a, b); },
                         fmod_ref));
KILN_REGISTER_OPINFO(
    remainder,
    divmod(
        "remainder", [](const Tensor& a, const Tensor& b) { return kiln::remainder(a, b); },
        [](const Tensor& a, const kiln::Scalar& b) { return kiln::remainder(a, b); },
        remainder_ref));

// ---- reciprocal and the activations ----

OpInfo activation(const char* name, const std::function<Tensor(const Tensor&)>& op,
                  const std::function<double(double)>& ref, std::vector<double> kinks) {
  OpInfo info{name, {name}};
  info.samples = [=] {
    std::vector<Sample> s = unary_samples(op, ref, all_numeric(), -5, 5, int_to_float);
    append(s, special_samples("kinks", op, ref, kinks));
    return s;
  };
  return info;
}

double softplus_ref(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

KILN_REGISTER_OPINFO(reciprocal, [] {
  OpInfo info{"reciprocal", {"reciprocal"}};
  info.samples = [] {
    auto f = [](const Tensor& x) { return kiln::reciprocal(x); };
    auto ref = [](double x) { return 1 / x; };
    std::vector<Sample> s = unary_samples(f, ref, all_numeric(), 0.25, 4, int_to_float);
    append(s, unary_samples(f, ref, {kiln::kFloat32, kiln::kFloat64}, -4, -0.25, same), "neg_");
    append(s, special_samples("special", f, ref, {1e-30, -3}));
    return s;
  };
  return info;
}());

// Each activation with its default parameters and with others, over every dtype and layout.
OpInfo activation_pair(const char* name, const std::function<Tensor(const Tensor&)>& op,
                       const std::function<double(double)>& ref,
                       const std::function<Tensor(const Tensor&)>& op2,
                       const std::function<double(double)>& ref2, std::vector<double> kinks) {
  OpInfo info{name, {name}};
  info.samples = [=] {
    std::vector<Sample> s = unary_samples(op, ref, all_numeric(), -5, 5, int_to_float);
    append(s, unary_samples(op2, ref2, all_numeric(), -5, 5, int_to_float), "params_");
    append(s, special_samples("kinks", op, ref, kinks));
    append(s, special_samples("params_kinks", op2, ref2, kinks));
    return s;
  };
  return info;
}

KILN_REGISTER_OPINFO(leaky_relu,
                     activation_pair(
                         "leaky_relu", [](const Tensor& x) { return kiln::leaky_relu(x); },
                         [](double x) { return x > 0 ? x : x * 0.01; },
                         [](const Tensor& x) { return kiln::leaky_relu(x, 0.2); },
                         [](double x) { return x > 0 ? x : x * 0.2; }, {1e-3, -1e-3}));
KILN_REGISTER_OPINFO(elu, activation_pair(
                              "elu", [](const Tensor& x) { return kiln::elu(x); },
                              [](double x) { return x > 0 ? x : std::expm1(x); },
                              [](const Tensor& x) { return kiln::elu(x, 0.5); },
                              [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); },
                              {-30, 1e-3, -1e-3}));
KILN_REGISTER_OPINFO(softplus, activation_pair(
                                   "softplus", [](const Tensor& x) { return kiln::softplus(x); },
                                   [](double x) { return softplus_ref(x, 1, 20); },
                                   [](const Tensor& x) { return kiln::softplus(x, 2, 5); },
                                   [](double x) { return softplus_ref(x, 2, 5); },
                                   {2.5, 2.4999, 20, 20.5, 100, -100}));
KILN_REGISTER_OPINFO(hardtanh, activation_pair(
                                   "hardtanh", [](const Tensor& x) { return kiln::hardtanh(x); },
                                   [](double x) { return std::min(std::max(x, -1.0), 1.0); },
                                   [](const Tensor& x) { return kiln::hardtanh(x, -2, 0.5); },
                                   [](double x) { return std::min(std::max(x, -2.0), 0.5); },
                                   {-1, 1, -2, 0.5}));
KILN_REGISTER_OPINFO(hardswish,
                     activation(
                         "hardswish", [](const Tensor& x) { return kiln::hardswish(x); },
                         [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; },
                         {-3, 3, -3.5, 3.5}));
KILN_REGISTER_OPINFO(mish, activation(
                               "mish", [](const Tensor& x) { return kiln::mish(x); },
                               [](double x) { return x * std::tanh(std::log1p(std::exp(x))); },
                               {-30, 30, 100}));

// ---- lerp, clamp with tensor bounds ----

struct Shape3 {
  kiln::Shape a, b, c;
  Layout la, lb, lc;
};
const std::vector<Shape3> kTernaryShapes = {
    {{4, 5}, {4, 5}, {4, 5}, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
    {{4, 5}, {4, 5}, {4, 5}, Layout::Transposed, Layout::Strided, Layout::Transposed},
    {{3, 1}, {1, 4}, {4}, Layout::Contiguous, Layout::Contiguous, Layout::Strided},
    {{2, 3, 4}, {}, {3, 1}, Layout::Strided, Layout::Contiguous, Layout::Contiguous},
    {{2, 0, 3}, {1, 3}, {3}, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
    {{}, {}, {}, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
};

using Fn3 = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
std::vector<Sample> ternary_samples(const Fn3& op,
                                    const std::function<double(double, double, double)>& ref,
                                    DType ta, DType tb, DType tc, DType out,
                                    std::array<double, 6> ranges, uint32_t seed) {
  std::vector<Sample> s;
  for (const Shape3& p : kTernaryShapes) {
    Sample sample;
    sample.name = fmt::format("{}_{}_{}_[{}]_[{}]_[{}]", kiln::dtype_name(ta), kiln::dtype_name(tb),
                              kiln::dtype_name(tc), fmt::join(p.a, "x"), fmt::join(p.b, "x"),
                              fmt::join(p.c, "x"));
    sample.inputs = {make_input(p.a, ta, p.la, ranges[0], ranges[1], seed),
                     make_input(p.b, tb, p.lb, ranges[2], ranges[3], seed + 1),
                     make_input(p.c, tc, p.lc, ranges[4], ranges[5], seed + 2)};
    seed += 3;
    sample.call = [op](const std::vector<Tensor>& in) {
      return std::vector{op(in[0], in[1], in[2])};
    };
    sample.reference = [ref, out](const std::vector<RefTensor>& in) {
      return std::vector{ref_zip3(in[0], in[1], in[2], out, ref)};
    };
    s.push_back(std::move(sample));
  }
  return s;
}

double lerp_ref(double a, double b, double w) {
  return a + w * (b - a);
}

KILN_REGISTER_OPINFO(lerp, [] {
  OpInfo info{"lerp", {"lerp", "lerp_scalar"}};
  info.samples = [] {
    Fn3 f = [](const Tensor& a, const Tensor& b, const Tensor& w) { return kiln::lerp(a, b, w); };
    std::vector<Sample> s;
    uint32_t seed = 1900;
    for (DType t : kFloatTypes) {
      append(s, ternary_samples(f, lerp_ref, t, t, t, t, {-4, 4, -4, 4, -0.5, 1.5}, seed));
      seed += 100;
    }
    // Weights 0, 1 and ties at 0.5 give the ends exactly.
    for (double w : {0.0, 0.3, 0.5, 0.7, 1.0, -0.5}) {
      for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kBFloat16}) {
        Sample sample;
        sample.name = fmt::format("scalar_{}_{}", kiln::dtype_name(t), w);
        sample.inputs = {make_input({3, 4}, t, Layout::Transposed, -4, 4, seed++),
                         make_input({4}, t, Layout::Strided, -4, 4, seed++)};
        sample.call = [w](const std::vector<Tensor>& in) {
          return std::vector{kiln::lerp(in[0], in[1], kiln::Scalar(w))};
        };
        sample.reference = [w, t](const std::vector<RefTensor>& in) {
          return std::vector{
              ref_zip(in[0], in[1], t, [w](double a, double b) { return lerp_ref(a, b, w); })};
        };
        s.push_back(std::move(sample));
      }
    }
    return s;
  };
  return info;
}());

double clamp3_ref(double x, double lo, double hi) {
  if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return NAN;
  return std::min(std::max(x, lo), hi);
}

KILN_REGISTER_OPINFO(clamp_tensor, [] {
  OpInfo info{"clamp_tensor", {"clamp_tensor", "clamp_min", "clamp_max"}};
  info.samples = [] {
    Fn3 f = [](const Tensor& x, const Tensor& lo, const Tensor& hi) {
      return kiln::clamp(x, lo, hi);
    };
    std::vector<Sample> s;
    uint32_t seed = 2500;
    struct Types {
      DType x, lo, hi, out;
    };
    // The bounds overlap, so that some elements have min > max (max wins, as torch).
    for (Types t : {Types{kiln::kFloat32, kiln::kFloat32, kiln::kFloat32, kiln::kFloat32},
                    Types{kiln::kFloat64, kiln::kFloat64, kiln::kFloat64, kiln::kFloat64},
                    Types{kiln::kFloat16, kiln::kFloat16, kiln::kFloat16, kiln::kFloat16},
                    Types{kiln::kInt64, kiln::kInt64, kiln::kInt64, kiln::kInt64},
                    Types{kiln::kInt32, kiln::kFloat32, kiln::kInt32, kiln::kFloat32},
                    Types{kiln::kInt64, kiln::kInt32, kiln::kInt32, kiln::kInt64}}) {
      append(s,
             ternary_samples(f, clamp3_ref, t.x, t.lo, t.hi, t.out, {-5, 5, -3, 1, -1, 3}, seed));
      seed += 100;
    }
    auto lo_only = [](const Tensor& x, const Tensor& lo) { return kiln::clamp(x, lo, Tensor()); };
    auto hi_only = [](const Tensor& x, const Tensor& hi) { return kiln::clamp_max(x, hi); };
    std::vector<DTypeTriple> types = {{kiln::kFloat32, kiln::kFloat32, kiln::kFloat32},
                                      {kiln::kFloat64, kiln::kFloat64, kiln::kFloat64},
                                      {kiln::kInt64, kiln::kInt64, kiln::kInt64},
                                      {kiln::kInt32, kiln::kFloat32, kiln::kFloat32}};
    append(s,
           binary_samples(
               lo_only, [](double x, double lo) { return clamp3_ref(x, lo, INFINITY); }, types, -4,
               4, -2, 2),
           "min_");
    append(s,
           binary_samples(
               hi_only, [](double x, double hi) { return clamp3_ref(x, -INFINITY, hi); }, types, -4,
               4, -2, 2),
           "max_");
    // NaN in x or in either bound propagates.
    Sample nan;
    nan.name = "nan";
    nan.inputs = {kiln::from_vector(std::vector<float>{NAN, 0.5f, 0.5f, 4, -4}, {5}),
                  kiln::from_vector(std::vector<float>{0, NAN, 0, 0, 0}, {5}),
                  kiln::from_vector(std::vector<float>{1, 1, NAN, 1, 1}, {5})};
    nan.call = [f](const std::vector<Tensor>& in) { return std::vector{f(in[0], in[1], in[2])}; };
    nan.reference = [](const std::vector<RefTensor>& in) {
      return std::vector{ref_zip3(in[0], in[1], in[2], kiln::kFloat32, clamp3_ref)};
    };
    s.push_back(std::move(nan));
    return s;
  };
  return info;
}());

// ---- errors ----

// `stmt` throws a kiln::Error whose message contains `msg`.
#define EXPECT_THROW_MSG(stmt, msg)                                              \
  do {                                                                           \
    try {                                                                        \
      (void)(stmt);                                                              \
      ADD_FAILURE() << "no error from " #stmt;                                   \
    } catch (const kiln::Error& e) {                                             \
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what(); \
    }                                                                            \
  } while (0)

TEST(PointwiseRoundingErrors, IntegerDivisionByZeroThrows) {
  Tensor a = kiln::from_vector(std::vector<int64_t>{5, -7, 3}, {3});
  Tensor b = kiln::from_vector(std::vector<int64_t>{2, 0, 1}, {3});
  for (auto* op : {+[](const Tensor&x, const Tensor&y) { return kiln::remainder(x, y); },
                   +[](const Tensor&x, const Tensor&y) { return kiln::fmod(x, y); }}) {
    EXPECT_THROW_MSG(op(a, b), "ZeroDivisionError");
  }
  EXPECT_THROW_MSG(kiln::remainder(a, 0), "ZeroDivisionError");
  EXPECT_THROW_MSG(kiln::fmod(a, 0), "ZeroDivisionError");
  // A float divisor of zero gives NaN, as torch.
  EXPECT_TRUE(std::isnan(kiln::fmod(a.to(kiln::kFloat32), 0.0).to_vector<float>()[0]));
}

TEST(PointwiseRoundingErrors, BadInputsNameTheOp) {
  Tensor bools = kiln::from_vector(std::vector<bool>{true, false}, {2});
  Tensor f = kiln::from_vector(std::vector<float>{1, 2}, {2});
  Tensor d = f.to(kiln::kFloat64);
  Tensor i = f.to(kiln::kInt64);
  EXPECT_THROW_MSG(kiln::floor(bools), "floor");
  EXPECT_THROW_MSG(kiln::remainder(bools, bools), "remainder");
  EXPECT_THROW_MSG(kiln::round(i, 2), "round: decimals=2");
  EXPECT_THROW_MSG(kiln::lerp(f, d, f), "lerp: expected end");
  EXPECT_THROW_MSG(kiln::lerp(i, i, i), "lerp: expected floating");
  EXPECT_THROW_MSG(kiln::lerp(f, f, d), "lerp: expected weight");
  EXPECT_THROW_MSG(kiln::clamp(f, Tensor(), Tensor()), "clamp: at least one");
  EXPECT_THROW_MSG(kiln::clamp(bools, bools, bools), "clamp_tensor");
}

#undef EXPECT_THROW_MSG

}  // namespace
}  // namespace kiln_test
