// OpInfo entries of the reductions: sum, mean, prod, amax, amin, var, logsumexp, max/min (all
// elements and over a dim, with indices), argmax, argmin. References are loops over doubles
// (ref_reduce) in the test; none calls a kiln op.
#include <cmath>
#include <limits>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
using Values = std::vector<double>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// One reduction call: input shape and layout, the dims (empty: all).
struct Case {
  Shape shape;
  Shape dims;
  Layout layout = Layout::Contiguous;
  bool reduces_empty = false;  // some reduced dim has size 0 while the output is non-empty
};

std::vector<Case> reduce_cases() {
  return {
      {{4, 5, 6}, {1}},
      {{4, 5, 6}, {0, 2}},  // non-adjacent
      {{4, 5, 6}, {-1}},
      {{4, 5, 6}, {-1, 0}},
      {{4, 5, 6}, {0}},  // leading dims of a contiguous input: the column form
      {{4, 5, 6}, {0, 1}},
      {{4, 5, 6}, {}},
      {{5, 7}, {1}, Layout::Transposed},
      {{5, 7}, {0}, Layout::Transposed},
      {{5, 7}, {}, Layout::Strided},
      {{3, 6}, {1}, Layout::Strided},
      {{3, 1, 4}, {1}},
      {{3, 1, 4}, {0, 2}},
      {{2, 0, 3}, {2}},  // empty output
      {{2, 0, 3}, {1}, Layout::Contiguous, true},
      {{0}, {}, Layout::Contiguous, true},
      {{}, {}},
      {{}, {0}},
      {{3, 70001}, {1}},  // long rows
      {{140000}, {}},     // one row split across threads
      {{3000, 40}, {0}},  // column form with many rows
  };
}

std::string case_name(DType dt, const Case& c, bool keepdim) {
  return fmt::format("{}_[{}]_dims[{}]_{}{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
                     fmt::join(c.dims, ","), layout_name(c.layout), keepdim ? "_keepdim" : "");
}

using ReduceCall = std::function<Tensor(const Tensor&, const Shape&, bool)>;
using ReduceRef = std::function<double(const Values&)>;

// Every case x keepdim x dtype. Cases with an empty reduced dim only when `empty_ok`.
std::vector<Sample> reduce_samples(const ReduceCall& op, const ReduceRef& ref,
                                   const std::vector<DType>& dtypes, DType (*out)(DType), double lo,
                                   double hi, bool empty_ok) {
  std::vector<Sample> samples;
  uint32_t seed = 7;
  for (DType dt : dtypes) {
    for (const Case& c : reduce_cases()) {
      if (c.reduces_empty && !empty_ok) continue;
      for (bool keepdim : {false, true}) {
        Sample s;
        s.name = case_name(dt, c, keepdim);
        s.inputs = {make_input(c.shape, dt, c.layout, lo, hi, seed++)};
        Shape dims = c.dims;
        s.call = [op, dims, keepdim](const std::vector<Tensor>& in) {
          return std::vector{op(in[0], dims, keepdim)};
        };
        DType od = out(dt);
        // A 0-dim input reduces over "dim 0" as over all of it.
        Shape ref_dims = c.shape.empty() ? Shape{} : dims;
        s.reference = [ref, ref_dims, keepdim, od](const std::vector<RefTensor>& in) {
          return std::vector{ref_reduce(in[0], ref_dims, keepdim, od, ref)};
        };
        samples.push_back(std::move(s));
      }
    }
  }
  return samples;
}

// ---- references ----

double ref_sum(const Values& v) {
  double s = 0;
  for (double x : v)
    s += x;
  return s;
}
double ref_mean(const Values& v) {
  return v.empty() ? kNaN : ref_sum(v) / static_cast<double>(v.size());
}
double ref_prod(const Values& v) {
  double p = 1;
  for (double x : v)
    p *= x;
  return p;
}
template <bool kMax>
double ref_extreme(const Values& v) {
  double m = v.at(0);
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = kMax ? std::max(m, x) : std::min(m, x);
  }
  return m;
}
double ref_var(const Values& v, double correction) {
  double mean = ref_sum(v) / static_cast<double>(v.size());
  double m2 = 0;
  for (double x : v)
    m2 += (x - mean) * (x - mean);
  return m2 / std::max(0.0, static_cast<double>(v.size()) - correction);
}
double ref_logsumexp(const Values& v) {
  double m = -kInf;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  if (std::isinf(m)) return m;
  double s = 0;
  for (double x : v)
    s += std::exp(x - m);
  return m + std::log(s);
}
// Position of the first extreme element (the first NaN if any).
template <bool kMax>
double ref_index(const Values& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (kMax ? v[i] > v[best] : v[i] < v[best]) best = i;
  }
  return static_cast<double>(best);
}

DType same(DType t) {
  return t;
}
DType int64_unless_floating(DType t) {
  return kiln::is_floating(t) ? t : kiln::kInt64;
}
DType float_unless_floating(DType t) {
  return kiln::is_floating(t) ? t : kiln::kFloat32;
}

const std::vector<DType> kFloats = {kiln::kFloat32, kiln::kFloat64};
// Note [OpInfo integer dtypes]
const std::vector<DType> kAll = {kiln::kFloat32, kiln::kFloat64, kiln::kInt32, kiln::kInt64,
                                 kiln::kBool,    kiln::kUInt8,   kiln::kInt8,  kiln::kInt16};

// A tensor from literal values (NaN and infinities allowed).
Tensor literal(const std::vector<float>& v, const Shape& shape) {
  return kiln::from_vector(v, shape);
}

Sample special(std::string name, Tensor x, CallFn call, RefFn ref) {
  Sample s;
  s.name = std::move(name);
  s.inputs = {std::move(x)};
  s.call = std::move(call);
  s.reference = std::move(ref);
  return s;
}

// Rows with NaN, +inf and -inf: {1, NaN, 3}, {-inf, -inf, -inf}, {2, +inf, 1}, {5, 5, -1}.
Tensor special_rows() {
  auto inf = std::numeric_limits<float>::infinity();
  return literal({1, std::nanf(""), 3, -inf, -inf, -inf, 2, inf, 1, 5, 5, -1}, {4, 3});
}

// Samples of a ReduceAttrs reduction plus its special-value rows over dim 1.
OpInfo reduction(const char* name, ReduceCall op, ReduceRef ref, std::vector<DType> dtypes,
                 DType (*out)(DType), double lo, double hi, bool empty_ok) {
  OpInfo info{name, {name}};
  info.samples = [=] {
    std::vector<Sample> s = reduce_samples(op, ref, dtypes, out, lo, hi, empty_ok);
    s.push_back(special(
        "special_values", special_rows(),
        [op](const std::vector<Tensor>& in) { return std::vector{op(in[0], {1}, false)}; },
        [ref](const std::vector<RefTensor>& in) {
          return std::vector{ref_reduce(in[0], {1}, false, kiln::kFloat32, ref)};
        }));
    return s;
  };
  return info;
}

KILN_REGISTER_OPINFO(sum,
                     reduction(
                         "sum",
                         [](const Tensor& x, const Shape& d, bool k) { return kiln::sum(x, d, k); },
                         ref_sum, kAll, int64_unless_floating, -3, 3, true));
KILN_REGISTER_OPINFO(
    mean, reduction(
              "mean", [](const Tensor& x, const Shape& d, bool k) { return kiln::mean(x, d, k); },
              ref_mean, kFloats, same, -3, 3, true));
KILN_REGISTER_OPINFO(
    prod, reduction(
              "prod", [](const Tensor& x, const Shape& d, bool k) { return kiln::prod(x, d, k); },
              ref_prod, kAll, int64_unless_floating, 0.8, 1.25, true));
KILN_REGISTER_OPINFO(
    amax, reduction(
              "amax", [](const Tensor& x, const Shape& d, bool k) { return kiln::amax(x, d, k); },
              ref_extreme<true>, kAll, same, -50, 50, false));
KILN_REGISTER_OPINFO(
    amin, reduction(
              "amin", [](const Tensor& x, const Shape& d, bool k) { return kiln::amin(x, d, k); },
              ref_extreme<false>, kAll, same, -50, 50, false));
KILN_REGISTER_OPINFO(logsumexp, reduction(
                                    "logsumexp",
                                    [](const Tensor& x, const Shape& d, bool k) {
                                      return kiln::logsumexp(x, d, k);
                                    },
                                    ref_logsumexp, {kiln::kFloat32, kiln::kFloat64, kiln::kInt64},
                                    float_unless_floating, -10, 10, true));

// var: correction 1 (default), 0 and 2; too few elements give NaN or inf as torch.
KILN_REGISTER_OPINFO(var, [] {
  OpInfo info{"var", {"var"}};
  info.samples = [] {
    std::vector<Sample> out;
    for (double corr : {1.0, 0.0, 2.0}) {
      std::vector<Sample> s = reduce_samples(
          [corr](const Tensor& x, const Shape& d, bool k) { return kiln::var(x, d, corr, k); },
          [corr](const Values& v) { return ref_var(v, corr); }, kFloats, same, -3, 3, true);
      for (Sample& x : s)
        x.name += fmt::format("_correction{}", corr);
      out.insert(out.end(), s.begin(), s.end());
    }
    // A large offset: the blocked two-pass moments must not cancel.
    Sample big;
    big.name = "float32_offset_1e4";
    big.inputs = {make_input({8, 5000}, kiln::kFloat32, Layout::Contiguous, 1e4, 1e4 + 1, 3)};
    big.call = [](const std::vector<Tensor>& in) { return std::vector{kiln::var(in[0], {1})}; };
    big.reference = [](const std::vector<RefTensor>& in) {
      return std::vector{ref_reduce(in[0], {1}, false, kiln::kFloat32,
                                    [](const Values& v) { return ref_var(v, 1); })};
    };
    big.rtol = 1e-4;
    out.push_back(std::move(big));
    // One element with correction 1: 0 / 0 = NaN; two distinct elements with correction 2: inf.
    out.push_back(special(
        "too_few_elements", literal({1, 2, 3, 7}, {2, 2}),
        [](const std::vector<Tensor>& in) {
          return std::vector{kiln::var(in[0].narrow(1, 0, 1), {1}), kiln::var(in[0], {1}, 2)};
        },
        [](const std::vector<RefTensor>&) {
          return std::vector{RefTensor{{2}, {kNaN, kNaN}, kiln::kFloat32},
                             RefTensor{{2}, {kInf, kInf}, kiln::kFloat32}};
        }));
    return out;
  };
  return info;
}());

// max/min: the all-element form (amax/amin underneath) and the (values, indices) form over
// one dim, with ties (integers) resolved to the first position.
template <bool kMax>
OpInfo max_min(const char* name) {
  OpInfo info{name, {name, kMax ? "amax" : "amin"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 300;
    struct DimCase {
      Shape shape;
      int64_t dim;
      Layout layout;
    };
    const std::vector<DimCase> cases = {
        {{4, 5, 6}, 1, Layout::Contiguous}, {{4, 5, 6}, -1, Layout::Contiguous},
        {{4, 5, 6}, 0, Layout::Contiguous}, {{5, 7}, 1, Layout::Transposed},
        {{5, 7}, 0, Layout::Strided},       {{3, 1, 4}, 1, Layout::Contiguous},
        {{2, 0, 3}, 2, Layout::Contiguous}, {{}, 0, Layout::Contiguous},
        {{9}, 0, Layout::Contiguous},
    };
    for (DType dt : kAll) {
      for (const DimCase& c : cases) {
        for (bool keepdim : {false, true}) {
          Sample s;
          s.name = fmt::format("{}_[{}]_dim{}_{}{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
                               c.dim, layout_name(c.layout), keepdim ? "_keepdim" : "");
          s.inputs = {make_input(c.shape, dt, c.layout, -4, 4, seed++)};
          int64_t dim = c.dim;
          s.call = [dim, keepdim](const std::vector<Tensor>& in) {
            auto [v, i] = kMax ? kiln::max(in[0], dim, keepdim) : kiln::min(in[0], dim, keepdim);
            return std::vector{v, i};
          };
          Shape dims = c.shape.empty() ? Shape{} : Shape{dim};
          s.reference = [dims, keepdim, dt](const std::vector<RefTensor>& in) {
            return std::vector{ref_reduce(in[0], dims, keepdim, dt, ref_extreme<kMax>),
                               ref_reduce(in[0], dims, keepdim, kiln::kInt64, ref_index<kMax>)};
          };
          out.push_back(std::move(s));
        }
      }
      Sample all;
      all.name = fmt::format("{}_all_elements", kiln::dtype_name(dt));
      all.inputs = {make_input({6, 7}, dt, Layout::Transposed, -40, 40, seed++)};
      all.call = [](const std::vector<Tensor>& in) {
        return std::vector{kMax ? kiln::max(in[0]) : kiln::min(in[0])};
      };
      all.reference = [dt](const std::vector<RefTensor>& in) {
        return std::vector{ref_reduce(in[0], {}, false, dt, ref_extreme<kMax>)};
      };
      out.push_back(std::move(all));
    }
    out.push_back(special(
        "special_values", special_rows(),
        [](const std::vector<Tensor>& in) {
          auto [v, i] = kMax ? kiln::max(in[0], 1) : kiln::min(in[0], 1);
          return std::vector{v, i};
        },
        [](const std::vector<RefTensor>& in) {
          return std::vector{ref_reduce(in[0], {1}, false, kiln::kFloat32, ref_extreme<kMax>),
                             ref_reduce(in[0], {1}, false, kiln::kInt64, ref_index<kMax>)};
        }));
    return out;
  };
  return info;
}
KILN_REGISTER_OPINFO(max, max_min<true>("max"));
KILN_REGISTER_OPINFO(min, max_min<false>("min"));

template <bool kMax>
OpInfo arg_extreme(const char* name) {
  OpInfo info{name, {name}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 500;
    struct ArgCase {
      Shape shape;
      std::optional<int64_t> dim;
      Layout layout;
    };
    const std::vector<ArgCase> cases = {
        {{4, 5, 6}, 1, Layout::Contiguous},  {{4, 5, 6}, -3, Layout::Contiguous},
        {{4, 5, 6}, {}, Layout::Contiguous}, {{5, 7}, 0, Layout::Transposed},
        {{5, 7}, {}, Layout::Transposed},    {{4, 6}, 1, Layout::Strided},
        {{3, 1, 4}, 1, Layout::Contiguous},  {{0, 3}, 1, Layout::Contiguous},
        {{}, {}, Layout::Contiguous},        {{}, 0, Layout::Contiguous},
    };
    for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kInt32, kiln::kInt64}) {
      for (const ArgCase& c : cases) {
        for (bool keepdim : {false, true}) {
          Sample s;
          s.name = fmt::format("{}_[{}]_dim{}_{}{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
                               c.dim ? std::to_string(*c.dim) : "none", layout_name(c.layout),
                               keepdim ? "_keepdim" : "");
          s.inputs = {make_input(c.shape, dt, c.layout, -4, 4, seed++)};
          std::optional<int64_t> dim = c.dim;
          s.call = [dim, keepdim](const std::vector<Tensor>& in) {
            return std::vector{kMax ? kiln::argmax(in[0], dim, keepdim)
                                    : kiln::argmin(in[0], dim, keepdim)};
          };
          Shape dims = dim && !c.shape.empty() ? Shape{*dim} : Shape{};
          // Without a dim, keepdim keeps every dim as size 1: ref_reduce over all dims does too.
          s.reference = [dims, keepdim](const std::vector<RefTensor>& in) {
            return std::vector{ref_reduce(in[0], dims, keepdim, kiln::kInt64, ref_index<kMax>)};
          };
          out.push_back(std::move(s));
        }
      }
    }
    out.push_back(special(
        "special_values", special_rows(),
        [](const std::vector<Tensor>& in) {
          return std::vector{kMax ? kiln::argmax(in[0], 1) : kiln::argmin(in[0], 1)};
        },
        [](const std::vector<RefTensor>& in) {
          return std::vector{ref_reduce(in[0], {1}, false, kiln::kInt64, ref_index<kMax>)};
        }));
    return out;
  };
  return info;
}
KILN_REGISTER_OPINFO(argmax, arg_extreme<true>("argmax"));
KILN_REGISTER_OPINFO(argmin, arg_extreme<false>("argmin"));

}  // namespace
}  // namespace kiln_test
