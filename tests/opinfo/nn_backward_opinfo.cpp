// OpInfo entries of the fused normalization backwards (Note [Fused normalization backward]):
// softmax_backward, log_softmax_backward and layer_norm_backward, internal ops reached through
// the op table. References are the gradient formulas as loops over doubles.
#include <cmath>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

const std::vector<DType> kFloats = {kiln::kFloat32, kiln::kFloat64};

// For every line along `dim` of g and y (same shape), writes f(g line, y line) into the result.
RefTensor ref_lines(const RefTensor& g, const RefTensor& y, int64_t dim,
                    const std::function<std::vector<double>(const std::vector<double>&,
                                                            const std::vector<double>&)>& f) {
  RefTensor out = g;
  auto nd = static_cast<int64_t>(g.sizes.size());
  int64_t d = nd == 0 ? 0 : (dim < 0 ? dim + nd : dim);
  int64_t len = nd == 0 ? 1 : g.sizes[static_cast<size_t>(d)];
  int64_t inner = 1;
  for (int64_t i = d + 1; i < nd; ++i)
    inner *= g.sizes[static_cast<size_t>(i)];
  int64_t outer = len == 0 ? 0 : g.numel() / (len * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      std::vector<double> gl, yl;
      for (int64_t k = 0; k < len; ++k) {
        auto at = static_cast<size_t>((o * len + k) * inner + in);
        gl.push_back(g.data[at]);
        yl.push_back(y.data[at]);
      }
      std::vector<double> r = f(gl, yl);
      for (int64_t k = 0; k < len; ++k)
        out.data[static_cast<size_t>((o * len + k) * inner + in)] =
            round_to(r[static_cast<size_t>(k)], g.dtype);
    }
  }
  return out;
}

template <bool kLog>
std::vector<double> ref_softmax_backward(const std::vector<double>& g,
                                         const std::vector<double>& y) {
  double s = 0;
  for (size_t i = 0; i < g.size(); ++i)
    s += kLog ? g[i] : g[i] * y[i];
  std::vector<double> dx;
  for (size_t i = 0; i < g.size(); ++i)
    dx.push_back(kLog ? g[i] - std::exp(y[i]) * s : y[i] * (g[i] - s));
  return dx;
}

struct DimCase {
  Shape shape;
  int64_t dim;
  Layout layout;
};

template <bool kLog>
OpInfo softmax_backward_info(const char* name) {
  OpInfo info{name, {name}};
  info.samples = [name] {
    const std::vector<DimCase> cases = {
        {{4, 7}, 1, Layout::Contiguous},    {{4, 7}, 0, Layout::Contiguous},
        {{3, 5, 6}, 1, Layout::Contiguous}, {{5, 6}, 1, Layout::Transposed},
        {{5, 6}, 0, Layout::Strided},       {{2, 0, 3}, 2, Layout::Contiguous},
        {{}, 0, Layout::Contiguous},        {{6, 3000}, 1, Layout::Contiguous},
        {{40, 2}, 0, Layout::Contiguous},
    };
    std::vector<Sample> out;
    uint32_t seed = 300;
    for (DType dt : kFloats) {
      for (const DimCase& c : cases) {
        Sample s;
        s.name = fmt::format("{}_[{}]_dim{}_{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
                             c.dim, layout_name(c.layout));
        // y as the forward leaves it: probabilities, or their logarithms.
        s.inputs = {make_input(c.shape, dt, c.layout, -2, 2, seed++),
                    kLog ? make_input(c.shape, dt, c.layout, -6, 0, seed++)
                         : make_input(c.shape, dt, c.layout, 0, 1, seed++)};
        int64_t dim = c.dim;
        std::string op = name;
        s.call = [dim, op](const std::vector<Tensor>& in) {
          return std::vector{
              kiln::call_op1(kiln::get_op(op), {in[0], in[1]}, kiln::SoftmaxAttrs{dim})};
        };
        s.reference = [dim](const std::vector<RefTensor>& in) {
          return std::vector{ref_lines(in[0], in[1], dim, ref_softmax_backward<kLog>)};
        };
        if (dt == kiln::kFloat32) s.atol = 1e-4;  // sums of up to 3000 products
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}
KILN_REGISTER_OPINFO(softmax_backward, softmax_backward_info<false>("softmax_backward"));
KILN_REGISTER_OPINFO(log_softmax_backward, softmax_backward_info<true>("log_softmax_backward"));

// ---- layer_norm_backward ----

// dx and, with a weight, g * xhat, from the formula of nn_derivatives.cpp in doubles.
std::vector<RefTensor> ref_layer_norm_backward(const RefTensor& g, const RefTensor& x, int64_t n,
                                               const RefTensor* w, double eps) {
  RefTensor dx = x, gw = x;
  for (int64_t r = 0; n > 0 && r < x.numel() / n; ++r) {
    auto at = [&](int64_t i) { return static_cast<size_t>(r * n + i); };
    double mean = 0, m2 = 0, s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i)
      mean += x.data[at(i)];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i)
      m2 += (x.data[at(i)] - mean) * (x.data[at(i)] - mean);
    double rstd = 1 / std::sqrt(m2 / static_cast<double>(n) + eps);
    auto xhat = [&](int64_t i) { return (x.data[at(i)] - mean) * rstd; };
    auto gx = [&](int64_t i) {
      return g.data[at(i)] * (w != nullptr ? w->data[static_cast<size_t>(i)] : 1.0);
    };
    for (int64_t i = 0; i < n; ++i) {
      s1 += gx(i);
      s2 += gx(i) * xhat(i);
    }
    for (int64_t i = 0; i < n; ++i) {
      double d =
          rstd * (gx(i) - s1 / static_cast<double>(n) - xhat(i) * s2 / static_cast<double>(n));
      dx.data[at(i)] = round_to(d, x.dtype);
      gw.data[at(i)] = round_to(g.data[at(i)] * xhat(i), x.dtype);
    }
  }
  if (w == nullptr) return {dx};
  return {dx, gw};
}

KILN_REGISTER_OPINFO(layer_norm_backward, [] {
  OpInfo info{"layer_norm_backward", {"layer_norm_backward"}};
  info.samples = [] {
    struct LnCase {
      Shape shape, normalized;
      Layout layout;
    };
    const std::vector<LnCase> cases = {
        {{4, 6}, {6}, Layout::Contiguous}, {{2, 3, 4}, {3, 4}, Layout::Contiguous},
        {{5, 6}, {6}, Layout::Transposed}, {{3, 8}, {8}, Layout::Strided},
        {{7}, {7}, Layout::Contiguous},    {{0, 5}, {5}, Layout::Contiguous},
        {{3, 1}, {1}, Layout::Contiguous}, {{4, 2000}, {2000}, Layout::Contiguous},
    };
    std::vector<Sample> out;
    uint32_t seed = 400;
    for (DType dt : kFloats) {
      for (const LnCase& c : cases) {
        for (bool has_w : {false, true}) {
          Sample s;
          s.name = fmt::format("{}_[{}]_norm[{}]_{}{}", kiln::dtype_name(dt),
                               fmt::join(c.shape, "x"), fmt::join(c.normalized, "x"),
                               layout_name(c.layout), has_w ? "_weight" : "");
          s.inputs = {make_input(c.shape, dt, c.layout, -1, 1, seed++),
                      make_input(c.shape, dt, c.layout, 2, 6, seed++)};
          if (has_w)
            s.inputs.push_back(make_input(c.normalized, dt, Layout::Contiguous, 0.5, 2, seed++));
          Shape ns = c.normalized;
          double eps = has_w ? 1e-3 : 1e-5;
          s.call = [ns, has_w, eps](const std::vector<Tensor>& in) {
            kiln::LayerNormAttrs a{ns, eps, has_w, false};
            return kiln::call_op(kiln::get_op("layer_norm_backward"), in, &a);
          };
          int64_t n = ref_numel(ns);
          s.reference = [n, has_w, eps](const std::vector<RefTensor>& in) {
            return ref_layer_norm_backward(in[0], in[1], n, has_w ? &in[2] : nullptr, eps);
          };
          if (dt == kiln::kFloat32) s.atol = 1e-4;
          out.push_back(std::move(s));
        }
      }
    }
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
