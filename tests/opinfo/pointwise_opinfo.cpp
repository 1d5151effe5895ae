// OpInfo entries of the pointwise ops. References are C++ <cmath> on doubles.
#include <cmath>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Tensor;

const std::vector<DType> kFloatTypes = {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16,
                                        kiln::kBFloat16};
const std::vector<DType>& kIntTypes = kIntegerDTypes;  // Note [OpInfo integer dtypes]

DType same(DType t) {
  return t;
}
DType int_to_float(DType t) {
  return kiln::is_floating(t) ? t : kiln::kFloat32;
}

std::vector<DTypeTriple> same_type_triples(const std::vector<DType>& types) {
  std::vector<DTypeTriple> out;
  for (DType t : types)
    out.push_back({t, t, t});
  return out;
}

// Mixed operands: the promoted dtype, spelled out here rather than asked of the library.
const std::vector<DTypeTriple> kMixedTriples = {
    {kiln::kInt32, kiln::kFloat32, kiln::kFloat32},
    {kiln::kFloat16, kiln::kFloat32, kiln::kFloat32},
    {kiln::kInt64, kiln::kInt32, kiln::kInt64},
    {kiln::kFloat16, kiln::kBFloat16, kiln::kFloat32},
};

template <class F>
OpInfo unary(const char* name, F op, double (*ref)(double), std::vector<DType> types, double lo,
             double hi, DType (*out)(DType)) {
  OpInfo info{name, {name}};
  info.samples = [=] { return unary_samples(op, ref, types, lo, hi, out); };
  return info;
}

std::vector<DType> concat(std::vector<DType> a, const std::vector<DType>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

KILN_REGISTER_OPINFO(neg,
                     unary(
                         "neg", [](const Tensor& x) { return kiln::neg(x); },
                         [](double x) { return -x; }, concat(kFloatTypes, kIntTypes), -5, 5, same));
KILN_REGISTER_OPINFO(exp, unary(
                              "exp", [](const Tensor& x) { return kiln::exp(x); },
                              [](double x) { return std::exp(x); }, concat(kFloatTypes, kIntTypes),
                              -4, 4, int_to_float));
KILN_REGISTER_OPINFO(log, unary(
                              "log", [](const Tensor& x) { return kiln::log(x); },
                              [](double x) { return std::log(x); }, concat(kFloatTypes, kIntTypes),
                              0.05, 20, int_to_float));
KILN_REGISTER_OPINFO(tanh, unary(
                               "tanh", [](const Tensor& x) { return kiln::tanh(x); },
                               [](double x) { return std::tanh(x); }, kFloatTypes, -4, 4, same));
KILN_REGISTER_OPINFO(sigmoid, unary(
                                  "sigmoid", [](const Tensor& x) { return kiln::sigmoid(x); },
                                  [](double x) { return 1 / (1 + std::exp(-x)); }, kFloatTypes, -8,
                                  8, same));
KILN_REGISTER_OPINFO(relu, unary(
                               "relu", [](const Tensor& x) { return kiln::relu(x); },
                               [](double x) { return x > 0 ? x : 0.0; },
                               concat(kFloatTypes, kIntTypes), -3, 3, same));

// Binary ops cover the tensor form and the scalar form (a Python-number operand).
OpInfo binary(const char* name, const char* scalar_name,
              std::function<Tensor(const Tensor&, const Tensor&)> op,
              std::function<Tensor(const Tensor&, double)> scalar_op,
              std::function<double(double, double)> ref, std::vector<DTypeTriple> types, double lo,
              double hi, double b_lo, double b_hi) {
  OpInfo info{name, {name, scalar_name}};
  info.samples = [=] {
    std::vector<Sample> s = binary_samples(op, ref, types, lo, hi, b_lo, b_hi);
    // Scalar form on float32 and float64 tensors of a few layouts.
    uint32_t seed = 900;
    for (DType t : {kiln::kFloat32, kiln::kFloat64}) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        double scalar = (b_lo + b_hi) / 2 + 0.37;
        Sample sample;
        sample.name =
            std::string("scalar_") + kiln::dtype_name(t).data() + "_" + layout_name(layout);
        sample.inputs = {make_input({3, 4}, t, layout, lo, hi, seed++)};
        sample.call = [scalar_op, scalar](const std::vector<Tensor>& in) {
          return std::vector{scalar_op(in[0], scalar)};
        };
        sample.reference = [ref, scalar, t](const std::vector<RefTensor>& in) {
          return std::vector{ref_map(in[0], t, [&](double x) { return ref(x, scalar); })};
        };
        s.push_back(std::move(sample));
      }
    }
    return s;
  };
  return info;
}

std::vector<DTypeTriple> with_mixed(std::vector<DTypeTriple> t) {
  t.insert(t.end(), kMixedTriples.begin(), kMixedTriples.end());
  t.insert(t.end(), kSmallIntMixedTriples.begin(), kSmallIntMixedTriples.end());
  return t;
}

KILN_REGISTER_OPINFO(add, binary(
                              "add", "add_scalar",
                              [](const Tensor& a, const Tensor& b) { return kiln::add(a, b); },
                              [](const Tensor& a, double b) { return kiln::add(a, b); },
                              [](double a, double b) { return a + b; },
                              with_mixed(same_type_triples(concat(kFloatTypes, kIntTypes))), -5, 5,
                              -5, 5));
KILN_REGISTER_OPINFO(sub, binary(
                              "sub", "sub_scalar",
                              [](const Tensor& a, const Tensor& b) { return kiln::sub(a, b, 2); },
                              [](const Tensor& a, double b) { return kiln::sub(a, b, 2); },
                              [](double a, double b) { return a - 2 * b; },
                              with_mixed(same_type_triples(concat(kFloatTypes, kIntTypes))), -5, 5,
                              -5, 5));
KILN_REGISTER_OPINFO(mul, binary(
                              "mul", "mul_scalar",
                              [](const Tensor& a, const Tensor& b) { return kiln::mul(a, b); },
                              [](const Tensor& a, double b) { return kiln::mul(a, b); },
                              [](double a, double b) { return a * b; },
                              with_mixed(same_type_triples(concat(kFloatTypes, kIntTypes))), -5, 5,
                              -5, 5));
// Division: integer operands divide in float32 (true division); the divisor stays away from 0.
KILN_REGISTER_OPINFO(div, binary(
                              "div", "div_scalar",
                              [](const Tensor& a, const Tensor& b) { return kiln::div(a, b); },
                              [](const Tensor& a, double b) { return kiln::div(a, b); },
                              [](double a, double b) { return a / b; },
                              {{kiln::kFloat32, kiln::kFloat32, kiln::kFloat32},
                               {kiln::kFloat64, kiln::kFloat64, kiln::kFloat64},
                               {kiln::kFloat16, kiln::kFloat16, kiln::kFloat16},
                               {kiln::kInt64, kiln::kInt64, kiln::kFloat32},
                               {kiln::kInt32, kiln::kFloat64, kiln::kFloat64}},
                              -5, 5, 1, 6));

}  // namespace
}  // namespace kiln_test
