// OpInfo entries of the composite reductions std, any and all, and of where with Python-number
// operands. References are loops over doubles; none calls a kiln op.
#include <cmath>
#include <limits>

#include "opinfo/index_map_ref.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
using Values = std::vector<double>;

struct Case {
  Shape shape, dims;
  Layout layout = Layout::Contiguous;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {{4, 5, 6}, {1}},
      {{4, 5, 6}, {0, 2}},
      {{4, 5, 6}, {-1}},
      {{4, 5, 6}, {}},
      {{5, 7}, {0}, Layout::Transposed},
      {{3, 6}, {1}, Layout::Strided},
      {{3, 1, 4}, {1}},
      {{2, 0, 3}, {2}},  // empty output
      {{2, 0, 3}, {1}},  // reduces over nothing
      {{0}, {}},
      {{}, {}},
      {{}, {0}},
  };
  return c;
}

using ReduceCall = std::function<Tensor(const Tensor&, const Shape&, bool)>;

std::vector<Sample> samples(const char* name, const ReduceCall& op,
                            const std::function<double(const Values&)>& ref,
                            const std::vector<DType>& dtypes, DType (*out)(DType), double lo,
                            double hi) {
  std::vector<Sample> s;
  uint32_t seed = 3000;
  for (DType dt : dtypes) {
    for (const Case& c : cases()) {
      for (bool keepdim : {false, true}) {
        Shape dims = c.dims;
        // A 0-dim input reduces over "dim 0" as over all of it.
        Shape ref_dims = c.shape.empty() ? Shape{} : dims;
        DType od = out(dt);
        s.push_back(make_sample(
            fmt::format("{}_{}_[{}]_dims[{}]_{}{}", name, kiln::dtype_name(dt), shape_name(c.shape),
                        fmt::join(dims, ","), layout_name(c.layout), keepdim ? "_keepdim" : ""),
            {make_input(c.shape, dt, c.layout, lo, hi, seed++)},
            [op, dims, keepdim](const std::vector<Tensor>& in) {
              return std::vector{op(in[0], dims, keepdim)};
            },
            [ref, ref_dims, keepdim, od](const std::vector<RefTensor>& in) {
              return std::vector{ref_reduce(in[0], ref_dims, keepdim, od, ref)};
            }));
      }
    }
  }
  return s;
}

double ref_std(const Values& v, double correction) {
  double mean = 0;
  for (double x : v)
    mean += x / static_cast<double>(v.size());
  double m2 = 0;
  for (double x : v)
    m2 += (x - mean) * (x - mean);
  return std::sqrt(m2 / std::max(0.0, static_cast<double>(v.size()) - correction));
}

DType same(DType t) {
  return t;
}
DType to_bool(DType) {
  return kiln::kBool;
}

KILN_REGISTER_OPINFO(std_info, [] {
  OpInfo info{"std", {"var", "sqrt"}};
  info.samples = [] {
    std::vector<Sample> out;
    for (double corr : {1.0, 0.0}) {
      std::vector<Sample> s = samples(
          corr == 1 ? "correction1" : "correction0",
          [corr](const Tensor& x, const Shape& d, bool k) { return kiln::std(x, d, corr, k); },
          [corr](const Values& v) { return ref_std(v, corr); }, {kiln::kFloat64, kiln::kFloat32},
          same, -3, 3);
      for (Sample& x : s) {
        // One element per row with correction 0 has std 0, where the derivative is 0 * inf
        // (NaN, as in torch): finite differences disagree, so those stay with correction 1.
        bool single =
            x.name.find("3x1x4") != std::string::npos || x.name.find("scalar") != std::string::npos;
        if (corr == 0 && single) continue;
        out.push_back(std::move(x));
      }
    }
    return out;
  };
  return info;
}());

// Integers in [-1, 1] and bools are zero often; the floating samples get zeros and a NaN (which
// counts as true) from a literal.
OpInfo logical_reduction(const char* name, bool any) {
  OpInfo info{name, {any ? "ne_scalar" : "eq_scalar", "sum", any ? "gt_scalar" : "eq_scalar"}};
  info.samples = [name, any] {
    auto op = [any](const Tensor& x, const Shape& d, bool k) {
      return any ? kiln::any(x, d, k) : kiln::all(x, d, k);
    };
    auto ref = [any](const Values& v) {
      bool r = !any;
      for (double x : v)
        r = any ? (r || x != 0) : (r && x != 0);
      return r ? 1.0 : 0.0;
    };
    std::vector<Sample> out =
        samples(name, op, ref, {kiln::kInt64, kiln::kBool, kiln::kInt32}, to_bool, -1, 1);
    std::vector<Sample> f = samples(name, op, ref, {kiln::kFloat32}, to_bool, -2, 2);
    out.insert(out.end(), f.begin(), f.end());
    float nan = std::nanf("");
    // Rows: all zero, one NaN, mixed, all nonzero.
    Tensor special = kiln::from_vector<float>({0, 0, 0, 0, nan, 0, 0, 2, 0, 1, -1, 3}, {4, 3});
    for (int64_t dim : {0, 1}) {
      out.push_back(make_sample(
          fmt::format("{}_zeros_and_nan_dim{}", name, dim), {special},
          [op, dim](const std::vector<Tensor>& in) { return std::vector{op(in[0], {dim}, false)}; },
          [ref, dim](const std::vector<RefTensor>& in) {
            return std::vector{ref_reduce(in[0], {dim}, false, kiln::kBool, ref)};
          }));
    }
    return out;
  };
  return info;
}

KILN_REGISTER_OPINFO(any_info, logical_reduction("any", true));
KILN_REGISTER_OPINFO(all_info, logical_reduction("all", false));

// ---- where with a Python number: torch's wrapped-number promotion ----

KILN_REGISTER_OPINFO(where_scalar_info, [] {
  OpInfo info{"where_scalar", {"where", "full"}};
  info.samples = [] {
    struct ScalarCase {
      DType x;
      Shape cond_shape, x_shape;
      kiln::Scalar s;
      DType out;
      int form;  // 0: (cond, x, s), 1: (cond, s, x), 2: (cond, s, s2) with s2 = x's first value
      Layout layout = Layout::Contiguous;
    };
    const std::vector<ScalarCase> cases = {
        {kiln::kFloat32, {3, 4}, {3, 4}, 2.5, kiln::kFloat32, 0},
        {kiln::kFloat64, {3, 4}, {4}, 2.5, kiln::kFloat64, 1, Layout::Strided},
        {kiln::kFloat32, {4}, {3, 4}, -1, kiln::kFloat32, 0, Layout::Transposed},
        {kiln::kInt32, {3, 4}, {3, 4}, 7, kiln::kInt32, 0},
        {kiln::kInt64, {3, 4}, {3, 4}, 1.5, kiln::kFloat32, 1},
        {kiln::kBool, {3, 4}, {3, 4}, 5, kiln::kInt64, 0},
        {kiln::kInt32, {2, 3}, {}, 4, kiln::kInt32, 0},  // 0-dim x still decides the dtype
        {kiln::kFloat64, {2, 3}, {}, 0.5, kiln::kFloat64, 1},
        {kiln::kFloat32, {0, 3}, {3}, 1.0, kiln::kFloat32, 0},
        {kiln::kInt64, {2, 3}, {}, 1.5, kiln::kFloat32, 2},
        {kiln::kInt64, {2, 3}, {}, 3, kiln::kInt64, 2},
        {kiln::kBool, {2, 3}, {}, true, kiln::kBool, 2},
    };
    std::vector<Sample> out;
    uint32_t seed = 3100;
    for (const ScalarCase& c : cases) {
      Tensor cond = make_input(c.cond_shape, kiln::kBool, c.layout, 0, 1, seed++);
      Tensor x = make_input(c.x_shape, c.x, c.layout, -5, 5, seed++);
      kiln::Scalar s = c.s;
      int form = c.form;
      DType od = c.out;
      out.push_back(make_sample(
          fmt::format("form{}_{}[{}]_cond[{}]_{}_{}", form, kiln::dtype_name(c.x),
                      shape_name(c.x_shape), shape_name(c.cond_shape), s, layout_name(c.layout)),
          {cond, x},
          [s, form](const std::vector<Tensor>& in) {
            if (form == 0) return std::vector{kiln::where(in[0], in[1], s)};
            if (form == 1) return std::vector{kiln::where(in[0], s, in[1])};
            kiln::Scalar s2 = in[1].dtype() == kiln::kBool ? kiln::Scalar(false) : kiln::Scalar(-3);
            return std::vector{kiln::where(in[0], s, s2)};
          },
          [s, form, od](const std::vector<RefTensor>& in) {
            double sv = s.to_double(), s2 = form == 2 && od == kiln::kBool ? 0 : -3;
            Shape shape = form == 2 ? in[0].sizes : ref_broadcast_shape(in[0].sizes, in[1].sizes);
            return std::vector{ref_from_index(shape, od, [&](const Index& idx) {
              bool take_a =
                  in[0].data[static_cast<size_t>(broadcast_source(idx, in[0].sizes))] != 0;
              double xv = form == 2
                              ? s2
                              : in[1].data[static_cast<size_t>(broadcast_source(idx, in[1].sizes))];
              double a = form == 0 ? xv : sv, b = form == 0 ? sv : xv;
              return round_to(take_a ? a : b, od);
            })};
          }));
    }
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
