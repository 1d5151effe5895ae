// OpInfo entries of the selecting and comparing pointwise ops: maximum/minimum, comparisons,
// logical ops, where, masked_fill. References are plain C++ on doubles.
#include <cmath>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Tensor;

// Note [OpInfo integer dtypes]
const std::vector<DType> kAllTypes = {kiln::kFloat32,  kiln::kFloat64, kiln::kFloat16,
                                      kiln::kBFloat16, kiln::kInt32,   kiln::kInt64,
                                      kiln::kUInt8,    kiln::kInt8,    kiln::kInt16};

std::vector<DTypeTriple> same_triples(const std::vector<DType>& types, std::optional<DType> out) {
  std::vector<DTypeTriple> r;
  for (DType t : types)
    r.push_back({t, t, out.value_or(t)});
  return r;
}

// ---- maximum / minimum ----

double max_ref(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}
double min_ref(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
}

OpInfo max_min(const char* name, Tensor (*op)(const Tensor&, const Tensor&),
               double (*ref)(double, double)) {
  OpInfo info{name, {name}};
  info.samples = [=] {
    auto f = [op](const Tensor& a, const Tensor& b) { return op(a, b); };
    std::vector<DTypeTriple> types = same_triples(kAllTypes, std::nullopt);
    types.push_back({kiln::kInt32, kiln::kFloat32, kiln::kFloat32});
    types.push_back({kiln::kBool, kiln::kBool, kiln::kBool});
    types.push_back({kiln::kFloat16, kiln::kBFloat16, kiln::kFloat32});
    std::vector<Sample> s = binary_samples(f, ref, types, -4, 4, -4, 4);
    // NaN on either side propagates.
    Sample nan;
    nan.name = "nan";
    nan.inputs = {kiln::from_vector(std::vector<float>{NAN, 1, NAN, -2}, {4}),
                  kiln::from_vector(std::vector<float>{0, NAN, NAN, 3}, {4})};
    nan.call = [op](const std::vector<Tensor>& in) { return std::vector{op(in[0], in[1])}; };
    nan.reference = [ref](const std::vector<RefTensor>& in) {
      return std::vector{ref_zip(in[0], in[1], kiln::kFloat32, ref)};
    };
    s.push_back(std::move(nan));
    return s;
  };
  return info;
}

KILN_REGISTER_OPINFO(maximum,
                     max_min(
                         "maximum",
                         [](const Tensor& a, const Tensor& b) { return kiln::maximum(a, b); },
                         max_ref));
KILN_REGISTER_OPINFO(minimum,
                     max_min(
                         "minimum",
                         [](const Tensor& a, const Tensor& b) { return kiln::minimum(a, b); },
                         min_ref));

// ---- comparisons ----

using CmpFn = Tensor (*)(const Tensor&, const Tensor&);
using CmpScalarFn = Tensor (*)(const Tensor&, const kiln::Scalar&);

// Values are small integers stored in every dtype, so that equal pairs occur often.
OpInfo compare(const std::string& name, CmpFn op, CmpScalarFn scalar_op,
               bool (*ref)(double, double)) {
  OpInfo info{name, {name, name + "_scalar"}};
  info.samples = [=] {
    auto f = [op](const Tensor& a, const Tensor& b) { return op(a, b); };
    auto r = [ref](double a, double b) { return ref(a, b) ? 1.0 : 0.0; };
    std::vector<DTypeTriple> types = same_triples(kAllTypes, kiln::kBool);
    types.push_back({kiln::kBool, kiln::kBool, kiln::kBool});
    types.push_back({kiln::kInt32, kiln::kFloat32, kiln::kBool});
    types.push_back({kiln::kInt64, kiln::kInt32, kiln::kBool});
    types.push_back({kiln::kFloat16, kiln::kFloat64, kiln::kBool});
    std::vector<Sample> s = binary_samples(f, r, types, -2, 2, -2, 2);
    // Scalar forms; an int tensor against 1.5 compares in float (1 < 1.5 holds).
    uint32_t seed = 700;
    struct Case {
      DType t;
      kiln::Scalar v;
    };
    for (Case c : {Case{kiln::kFloat32, 0.5}, Case{kiln::kInt64, 1}, Case{kiln::kInt32, 1.5},
                   Case{kiln::kFloat16, 1}, Case{kiln::kBool, true}}) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        Sample sample;
        sample.name =
            fmt::format("scalar_{}_{}_{}", kiln::dtype_name(c.t), c.v, layout_name(layout));
        sample.inputs = {make_input({3, 4}, c.t, layout, -2, 2, seed++)};
        kiln::Scalar v = c.v;
        sample.call = [scalar_op, v](const std::vector<Tensor>& in) {
          return std::vector{scalar_op(in[0], v)};
        };
        double vd = v.to_double();
        sample.reference = [r, vd](const std::vector<RefTensor>& in) {
          return std::vector{ref_map(in[0], kiln::kBool, [&](double x) { return r(x, vd); })};
        };
        s.push_back(std::move(sample));
      }
    }
    return s;
  };
  return info;
}

#define KILN_CMP_INFO(fn, expr)                                                                   \
  KILN_REGISTER_OPINFO(fn,                                                                        \
                       compare(                                                                   \
                           #fn, [](const Tensor& a, const Tensor& b) { return kiln::fn(a, b); },  \
                           [](const Tensor& a, const kiln::Scalar& b) { return kiln::fn(a, b); }, \
                           [](double a, double b) { return expr; }));
KILN_CMP_INFO(eq, a == b)
KILN_CMP_INFO(ne, a != b)
KILN_CMP_INFO(lt, a < b)
KILN_CMP_INFO(le, a <= b)
KILN_CMP_INFO(gt, a > b)
KILN_CMP_INFO(ge, a >= b)
#undef KILN_CMP_INFO

// ---- logical ops ----

const std::vector<DTypeTriple> kLogicalTypes = {
    {kiln::kBool, kiln::kBool, kiln::kBool},     {kiln::kFloat32, kiln::kFloat32, kiln::kBool},
    {kiln::kInt32, kiln::kBool, kiln::kBool},    {kiln::kInt64, kiln::kFloat64, kiln::kBool},
    {kiln::kFloat16, kiln::kInt32, kiln::kBool},
};

OpInfo logical2(const char* name, CmpFn op, double (*ref)(double, double)) {
  OpInfo info{name, {name}};
  info.samples = [=] {
    // Integers in [-1, 1] hit zero often; floats are rounded to the same by the int inputs.
    return binary_samples([op](const Tensor& a, const Tensor& b) { return op(a, b); }, ref,
                          kLogicalTypes, -1, 1, -1, 1);
  };
  return info;
}

KILN_REGISTER_OPINFO(logical_and,
                     logical2(
                         "logical_and",
                         [](const Tensor& a, const Tensor& b) { return kiln::logical_and(a, b); },
                         [](double a, double b) { return (a != 0 && b != 0) ? 1.0 : 0.0; }));
KILN_REGISTER_OPINFO(logical_or,
                     logical2(
                         "logical_or",
                         [](const Tensor& a, const Tensor& b) { return kiln::logical_or(a, b); },
                         [](double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; }));
KILN_REGISTER_OPINFO(logical_not, [] {
  OpInfo info{"logical_not", {"logical_not"}};
  info.samples = [] {
    std::vector<DType> types = kAllTypes;
    types.push_back(kiln::kBool);
    std::vector<Sample> s = unary_samples([](const Tensor& x) { return kiln::logical_not(x); },
                                          [](double x) { return x == 0 ? 1.0 : 0.0; }, types, -1, 1,
                                          [](DType) { return kiln::kBool; });
    // Exact zeros and NaN (which is true) in a float tensor.
    Sample z;
    z.name = "zeros_and_nan";
    z.inputs = {kiln::from_vector(std::vector<float>{0, -0.0f, NAN, 2}, {4})};
    z.call = [](const std::vector<Tensor>& in) { return std::vector{kiln::logical_not(in[0])}; };
    z.reference = [](const std::vector<RefTensor>& in) {
      return std::vector{ref_map(in[0], kiln::kBool, [](double x) { return x == 0 ? 1.0 : 0.0; })};
    };
    s.push_back(std::move(z));
    return s;
  };
  return info;
}());

// ---- where ----

struct Shape3 {
  kiln::Shape c, a, b;
  Layout lc, la, lb;
};

const std::vector<Shape3> kWhereShapes = {
    {{4, 5}, {4, 5}, {4, 5}, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
    {{4, 5}, {4, 5}, {4, 5}, Layout::Transposed, Layout::Strided, Layout::Transposed},
    {{3, 1}, {1, 4}, {4}, Layout::Contiguous, Layout::Contiguous, Layout::Strided},
    {{2, 3, 4}, {}, {3, 1}, Layout::Strided, Layout::Contiguous, Layout::Contiguous},
    {{}, {2, 3}, {}, Layout::Contiguous, Layout::Transposed, Layout::Contiguous},
    {{2, 0, 3}, {1, 3}, {3}, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
    {{}, {}, {}, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
    {{1, 1}, {1}, {5}, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
};

KILN_REGISTER_OPINFO(where, [] {
  OpInfo info{"where", {"where"}};
  info.samples = [] {
    std::vector<Sample> s;
    uint32_t seed = 300;
    for (DTypeTriple t :
         std::vector<DTypeTriple>{{kiln::kFloat32, kiln::kFloat32, kiln::kFloat32},
                                  {kiln::kFloat64, kiln::kFloat64, kiln::kFloat64},
                                  {kiln::kFloat16, kiln::kFloat16, kiln::kFloat16},
                                  {kiln::kInt64, kiln::kInt64, kiln::kInt64},
                                  {kiln::kBool, kiln::kBool, kiln::kBool},
                                  {kiln::kInt32, kiln::kFloat32, kiln::kFloat32},
                                  {kiln::kFloat16, kiln::kFloat64, kiln::kFloat64}}) {
      for (const Shape3& p : kWhereShapes) {
        if (t.a != t.b && p.a.empty() != p.b.empty()) continue;
        Sample sample;
        sample.name =
            fmt::format("{}_{}_[{}]_[{}]_[{}]", kiln::dtype_name(t.a), kiln::dtype_name(t.b),
                        fmt::join(p.c, "x"), fmt::join(p.a, "x"), fmt::join(p.b, "x"));
        sample.inputs = {make_input(p.c, kiln::kBool, p.lc, 0, 1, seed),
                         make_input(p.a, t.a, p.la, -5, 5, seed + 1),
                         make_input(p.b, t.b, p.lb, -5, 5, seed + 2)};
        seed += 3;
        sample.call = [](const std::vector<Tensor>& in) {
          return std::vector{kiln::where(in[0], in[1], in[2])};
        };
        DType out = t.out;
        sample.reference = [out](const std::vector<RefTensor>& in) {
          return std::vector{ref_zip3(in[0], in[1], in[2], out,
                                      [](double c, double a, double b) { return c != 0 ? a : b; })};
        };
        s.push_back(std::move(sample));
      }
    }
    return s;
  };
  return info;
}());

// ---- masked_fill ----

struct MaskCase {
  kiln::Shape x, mask;
  Layout lx, lm;
};
const std::vector<MaskCase> kMaskShapes = {
    {{4, 5}, {4, 5}, Layout::Contiguous, Layout::Contiguous},
    {{4, 5}, {5}, Layout::Transposed, Layout::Strided},
    {{3, 1, 6}, {3, 1, 1}, Layout::Strided, Layout::Contiguous},
    {{2, 0, 3}, {3}, Layout::Contiguous, Layout::Contiguous},
    {{}, {}, Layout::Contiguous, Layout::Contiguous},
    {{1, 1}, {1}, Layout::Contiguous, Layout::Contiguous},
    {{3, 4}, {}, Layout::Transposed, Layout::Contiguous},
};

// Samples of masked_fill, or of masked_fill_ when `inplace` (applied to a copy of x laid out
// like x, which is returned).
std::vector<Sample> masked_fill_samples(bool inplace) {
  struct TypeValue {
    DType t;
    kiln::Scalar v;
  };
  std::vector<Sample> s;
  uint32_t seed = inplace ? 650 : 600;
  for (TypeValue tv : {TypeValue{kiln::kFloat32, -7.5}, TypeValue{kiln::kFloat64, 3.25},
                       TypeValue{kiln::kFloat16, 0.5}, TypeValue{kiln::kInt64, 7},
                       TypeValue{kiln::kInt32, -3}, TypeValue{kiln::kBool, true}}) {
    for (const MaskCase& m : kMaskShapes) {
      Sample sample;
      sample.name = fmt::format("{}_[{}]{}_mask[{}]{}", kiln::dtype_name(tv.t), fmt::join(m.x, "x"),
                                layout_name(m.lx), fmt::join(m.mask, "x"), layout_name(m.lm));
      sample.inputs = {make_input(m.x, tv.t, m.lx, -5, 5, seed),
                       make_input(m.mask, kiln::kBool, m.lm, 0, 1, seed + 1)};
      seed += 2;
      kiln::Scalar v = tv.v;
      Layout lx = m.lx;
      sample.call = [v, inplace, lx](const std::vector<Tensor>& in) {
        if (!inplace) return std::vector{kiln::masked_fill(in[0], in[1], v)};
        Tensor self = copy_with_layout(in[0], lx);
        uint32_t before = self.version();
        const Tensor& r = kiln::masked_fill_(self, in[1], v);
        EXPECT_TRUE(r.is_same(self));
        EXPECT_GT(self.version(), before);
        return std::vector{self};
      };
      double vd = v.to_double();
      DType out = tv.t;
      sample.reference = [vd, out](const std::vector<RefTensor>& in) {
        return std::vector{
            ref_zip(in[0], in[1], out, [vd](double x, double mk) { return mk != 0 ? vd : x; })};
      };
      s.push_back(std::move(sample));
    }
  }
  return s;
}

KILN_REGISTER_OPINFO(masked_fill, [] {
  OpInfo info{"masked_fill", {"masked_fill"}};
  info.samples = [] { return masked_fill_samples(false); };
  return info;
}());
KILN_REGISTER_OPINFO(masked_fill_, [] {
  OpInfo info{"masked_fill_", {"masked_fill_"}};
  info.samples = [] { return masked_fill_samples(true); };
  return info;
}());

}  // namespace
}  // namespace kiln_test
