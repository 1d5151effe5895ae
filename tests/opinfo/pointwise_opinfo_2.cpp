// OpInfo entries of the pointwise math ops: pow, the float functions, gelu, abs, sign, clamp.
// References are C++ <cmath> on doubles.
#include <cmath>
#include <numbers>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Tensor;

const std::vector<DType> kFloatTypes = {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16,
                                        kiln::kBFloat16};
const std::vector<DType>& kIntTypes = kIntegerDTypes;  // Note [OpInfo integer dtypes]

std::vector<DType> all_numeric() {
  std::vector<DType> t = kFloatTypes;
  t.insert(t.end(), kIntTypes.begin(), kIntTypes.end());
  return t;
}
DType same(DType t) {
  return t;
}
DType int_to_float(DType t) {
  return kiln::is_floating(t) ? t : kiln::kFloat32;
}

// A unary float function: float inputs keep their dtype, integer inputs give float32.
OpInfo float_unary(const char* name, Tensor (*op)(const Tensor&), double (*ref)(double), double lo,
                   double hi) {
  OpInfo info{name, {name}};
  info.samples = [=] {
    return unary_samples([op](const Tensor& x) { return op(x); }, ref, all_numeric(), lo, hi,
                         int_to_float);
  };
  return info;
}

KILN_REGISTER_OPINFO(log1p, float_unary(
                                "log1p", [](const Tensor& x) { return kiln::log1p(x); },
                                [](double x) { return std::log1p(x); }, -0.9, 10));
KILN_REGISTER_OPINFO(expm1, float_unary(
                                "expm1", [](const Tensor& x) { return kiln::expm1(x); },
                                [](double x) { return std::expm1(x); }, -3, 3));
KILN_REGISTER_OPINFO(sqrt, float_unary(
                               "sqrt", [](const Tensor& x) { return kiln::sqrt(x); },
                               [](double x) { return std::sqrt(x); }, 0, 20));
KILN_REGISTER_OPINFO(rsqrt, float_unary(
                                "rsqrt", [](const Tensor& x) { return kiln::rsqrt(x); },
                                [](double x) { return 1 / std::sqrt(x); }, 1, 20));
KILN_REGISTER_OPINFO(silu, float_unary(
                               "silu", [](const Tensor& x) { return kiln::silu(x); },
                               [](double x) { return x / (1 + std::exp(-x)); }, -6, 6));
KILN_REGISTER_OPINFO(sin, float_unary(
                              "sin", [](const Tensor& x) { return kiln::sin(x); },
                              [](double x) { return std::sin(x); }, -6, 6));
KILN_REGISTER_OPINFO(cos, float_unary(
                              "cos", [](const Tensor& x) { return kiln::cos(x); },
                              [](double x) { return std::cos(x); }, -6, 6));
KILN_REGISTER_OPINFO(erf, float_unary(
                              "erf", [](const Tensor& x) { return kiln::erf(x); },
                              [](double x) { return std::erf(x); }, -3, 3));

double gelu_erf_ref(double x) {
  return x * 0.5 * std::erfc(-x / std::numbers::sqrt2);
}
double gelu_tanh_ref(double x) {
  double k = std::sqrt(2 / std::numbers::pi);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

KILN_REGISTER_OPINFO(gelu, [] {
  OpInfo info{"gelu", {"gelu"}};
  info.samples = [] {
    std::vector<Sample> s = unary_samples([](const Tensor& x) { return kiln::gelu(x); },
                                          gelu_erf_ref, all_numeric(), -5, 5, int_to_float);
    std::vector<Sample> t = unary_samples([](const Tensor& x) { return kiln::gelu(x, "tanh"); },
                                          gelu_tanh_ref, all_numeric(), -5, 5, int_to_float);
    for (Sample& x : t) {
      x.name = "tanh_" + x.name;
      s.push_back(std::move(x));
    }
    return s;
  };
  return info;
}());

KILN_REGISTER_OPINFO(abs, [] {
  OpInfo info{"abs", {"abs"}};
  info.samples = [] {
    return unary_samples([](const Tensor& x) { return kiln::abs(x); },
                         [](double x) { return std::fabs(x); }, all_numeric(), -5, 5, same);
  };
  return info;
}());

KILN_REGISTER_OPINFO(sign, [] {
  OpInfo info{"sign", {"sign"}};
  info.samples = [] {
    return unary_samples([](const Tensor& x) { return kiln::sign(x); },
                         [](double x) { return x > 0   ? 1.0
                                               : x < 0 ? -1.0
                                                       : 0.0; }, all_numeric(),
                         -2, 2, same);
  };
  return info;
}());

// ---- pow ----

std::vector<DTypeTriple> same_triples(const std::vector<DType>& types) {
  std::vector<DTypeTriple> out;
  for (DType t : types)
    out.push_back({t, t, t});
  return out;
}

// Integer powers by repeated multiplication, the way the reference spells int ** int.
double int_pow_ref(double a, double b) {
  double r = 1;
  for (int i = 0; i < static_cast<int>(b); ++i)
    r *= a;
  return r;
}

// pow(tensor, scalar) on a {3, 4} tensor of each layout.
std::vector<Sample> pow_scalar_samples(DType t, double lo, double hi, const kiln::Scalar& e,
                                       DType out, uint32_t seed) {
  std::vector<Sample> s;
  for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
    Sample sample;
    sample.name = fmt::format("scalar_{}_{}_{}", kiln::dtype_name(t), e, layout_name(layout));
    sample.inputs = {make_input({3, 4}, t, layout, lo, hi, seed++)};
    sample.call = [e](const std::vector<Tensor>& in) { return std::vector{kiln::pow(in[0], e)}; };
    double ev = e.to_double();
    sample.reference = [ev, out](const std::vector<RefTensor>& in) {
      return std::vector{ref_map(in[0], out, [ev](double x) { return std::pow(x, ev); })};
    };
    s.push_back(std::move(sample));
  }
  return s;
}

// gelu_backward(g, x) = g gelu'(x), against the derivatives in closed form: Phi(x) + x phi(x),
// and for "tanh" 0.5 (1 + t) + 0.5 x (1 - t^2) u' with t = tanh(u), u = k (x + 0.044715 x^3).
double gelu_erf_grad_ref(double g, double x) {
  double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
  return g * (0.5 * std::erfc(-x / std::numbers::sqrt2) + x * pdf);
}
double gelu_tanh_grad_ref(double g, double x) {
  double k = std::sqrt(2 / std::numbers::pi);
  double t = std::tanh(k * (x + 0.044715 * x * x * x));
  double du = k * (1 + 3 * 0.044715 * x * x);
  return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du);
}

KILN_REGISTER_OPINFO(gelu_backward, [] {
  OpInfo info{"gelu_backward", {"gelu_backward"}};
  info.samples = [] {
    std::vector<DTypeTriple> dtypes = same_triples(kFloatTypes);
    dtypes.push_back({kiln::kFloat32, kiln::kFloat64, kiln::kFloat64});
    dtypes.push_back({kiln::kInt32, kiln::kFloat32, kiln::kFloat32});
    std::vector<Sample> s =
        binary_samples([](const Tensor& g, const Tensor& x) { return kiln::gelu_backward(g, x); },
                       gelu_erf_grad_ref, dtypes, -2, 2, -5, 5);
    std::vector<Sample> t = binary_samples(
        [](const Tensor& g, const Tensor& x) { return kiln::gelu_backward(g, x, "tanh"); },
        gelu_tanh_grad_ref, dtypes, -2, 2, -5, 5);
    for (Sample& x : t) {
      x.name = "tanh_" + x.name;
      s.push_back(std::move(x));
    }
    return s;
  };
  return info;
}());

KILN_REGISTER_OPINFO(pow, [] {
  OpInfo info{"pow", {"pow", "pow_scalar"}};
  info.samples = [] {
    auto op = [](const Tensor& a, const Tensor& b) { return kiln::pow(a, b); };
    auto fref = [](double a, double b) { return std::pow(a, b); };
    std::vector<Sample> s = binary_samples(op, fref, same_triples(kFloatTypes), 0.1, 3, -2, 2);
    auto add = [&](std::vector<Sample> more) {
      for (Sample& x : more)
        s.push_back(std::move(x));
    };
    add(binary_samples(op, int_pow_ref, same_triples(kIntTypes), -3, 3, 0, 4));
    add(binary_samples(op, fref,
                       {{kiln::kInt32, kiln::kFloat32, kiln::kFloat32},
                        {kiln::kFloat16, kiln::kFloat32, kiln::kFloat32},
                        {kiln::kInt64, kiln::kInt32, kiln::kInt64}},
                       1, 3, 0, 3));
    add(pow_scalar_samples(kiln::kFloat32, 0.1, 4, 0.5, kiln::kFloat32, 900));
    add(pow_scalar_samples(kiln::kFloat64, 0.1, 4, -1.5, kiln::kFloat64, 910));
    add(pow_scalar_samples(kiln::kInt64, -4, 4, 3, kiln::kInt64, 920));
    add(pow_scalar_samples(kiln::kInt32, 0, 9, 0.5, kiln::kFloat32, 930));
    add(pow_scalar_samples(kiln::kFloat16, 0.1, 3, 2, kiln::kFloat16, 940));
    // The exponents computed without pow (Note [pow by a constant exponent]), negative bases
    // where pow is defined.
    add(pow_scalar_samples(kiln::kFloat32, -3, 3, 2, kiln::kFloat32, 950));
    add(pow_scalar_samples(kiln::kFloat32, -3, 3, 3, kiln::kFloat32, 960));
    add(pow_scalar_samples(kiln::kFloat64, 0.5, 3, -2, kiln::kFloat64, 970));
    add(pow_scalar_samples(kiln::kFloat32, 0.1, 4, -0.5, kiln::kFloat32, 980));
    add(pow_scalar_samples(kiln::kBFloat16, 0.5, 4, -1, kiln::kBFloat16, 990));
    return s;
  };
  return info;
}());

// ---- clamp ----

Sample clamp_sample(const Tensor& x, std::optional<kiln::Scalar> lo, std::optional<kiln::Scalar> hi,
                    DType out, const std::string& name) {
  Sample s;
  s.name = name;
  s.inputs = {x};
  s.call = [lo, hi](const std::vector<Tensor>& in) {
    return std::vector{kiln::clamp(in[0], lo, hi)};
  };
  double l = lo ? lo->to_double() : -INFINITY, h = hi ? hi->to_double() : INFINITY;
  s.reference = [l, h, out](const std::vector<RefTensor>& in) {
    return std::vector{ref_map(in[0], out, [l, h](double v) {
      if (std::isnan(v)) return v;
      return std::min(std::max(v, l), h);
    })};
  };
  return s;
}

KILN_REGISTER_OPINFO(clamp, [] {
  OpInfo info{"clamp", {"clamp"}};
  info.samples = [] {
    // Both bounds, over every dtype, shape and layout.
    std::vector<Sample> s = unary_samples([](const Tensor& x) { return kiln::clamp(x, -1, 2); },
                                          [](double v) { return std::min(std::max(v, -1.0), 2.0); },
                                          all_numeric(), -4, 4, same);
    uint32_t seed = 500;
    for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      std::string l = layout_name(layout);
      Tensor f = make_input({4, 5}, kiln::kFloat32, layout, -3, 3, seed++);
      Tensor i = make_input({4, 5}, kiln::kInt64, layout, -3, 3, seed++);
      s.push_back(clamp_sample(f, -0.5, std::nullopt, kiln::kFloat32, "min_only_" + l));
      s.push_back(clamp_sample(f, std::nullopt, 0.25, kiln::kFloat32, "max_only_" + l));
      // min > max: every element is max, as torch.
      s.push_back(clamp_sample(f, 1.0, -1.0, kiln::kFloat32, "min_above_max_" + l));
      // A float bound promotes an integer tensor to float32.
      s.push_back(clamp_sample(i, 0.5, std::nullopt, kiln::kFloat32, "int_float_min_" + l));
      s.push_back(clamp_sample(i, -2, 1, kiln::kInt64, "int_int_bounds_" + l));
    }
    // NaN propagates.
    Tensor nan = kiln::from_vector(std::vector<float>{NAN, -5, 5, 0.5f}, {4});
    s.push_back(clamp_sample(nan, -1, 1, kiln::kFloat32, "nan"));
    return s;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
