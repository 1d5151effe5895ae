// OpInfo entries of the normalization and loss ops: softmax, log_softmax, layer_norm,
// nll_loss, cross_entropy, mse_loss. References are loops over doubles in the test.
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

const std::vector<DType> kFloats = {kiln::kFloat32, kiln::kFloat64};

// Applies f to every line of x along `dim` (the line's values in index order), writing the
// line it returns in place: the reference shape of softmax-like ops.
RefTensor ref_along_dim(const RefTensor& x, int64_t dim,
                        const std::function<Values(const Values&)>& f) {
  RefTensor out = x;
  auto nd = static_cast<int64_t>(x.sizes.size());
  if (nd == 0) {
    out.data = f(x.data);
    return out;
  }
  int64_t d = dim < 0 ? dim + nd : dim;
  int64_t len = x.sizes[d];
  int64_t inner = 1;
  for (int64_t i = d + 1; i < nd; ++i)
    inner *= x.sizes[i];
  int64_t outer = len == 0 ? 0 : x.numel() / (len * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      Values line;
      for (int64_t k = 0; k < len; ++k)
        line.push_back(x.data[static_cast<size_t>((o * len + k) * inner + in)]);
      Values r = f(line);
      for (int64_t k = 0; k < len; ++k)
        out.data[static_cast<size_t>((o * len + k) * inner + in)] = r[static_cast<size_t>(k)];
    }
  }
  for (double& v : out.data)
    v = round_to(v, x.dtype);
  return out;
}

Values ref_softmax(const Values& v) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (double x : v)
    m = std::max(m, x);
  for (double x : v)
    s += std::exp(x - m);
  Values out;
  for (double x : v)
    out.push_back(std::exp(x - m) / s);
  return out;
}
Values ref_log_softmax(const Values& v) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (double x : v)
    m = std::max(m, x);
  for (double x : v)
    s += std::exp(x - m);
  Values out;
  for (double x : v)
    out.push_back(x - m - std::log(s));
  return out;
}

struct DimCase {
  Shape shape;
  int64_t dim;
  Layout layout;
};

template <bool kLog>
OpInfo softmax_info(const char* name) {
  OpInfo info{name, {name}};
  info.samples = [] {
    const std::vector<DimCase> cases = {
        {{4, 7}, 1, Layout::Contiguous},    {{4, 7}, -1, Layout::Contiguous},
        {{4, 7}, 0, Layout::Contiguous},    {{3, 5, 6}, 1, Layout::Contiguous},
        {{5, 6}, 1, Layout::Transposed},    {{5, 6}, 0, Layout::Strided},
        {{3, 1, 4}, 1, Layout::Contiguous}, {{2, 0, 3}, 2, Layout::Contiguous},
        {{2, 0, 3}, 1, Layout::Contiguous}, {{}, 0, Layout::Contiguous},
        {{6, 3000}, 1, Layout::Contiguous}, {{40, 2}, 0, Layout::Contiguous},
    };
    std::vector<Sample> out;
    uint32_t seed = 11;
    for (DType dt : kFloats) {
      for (const DimCase& c : cases) {
        Sample s;
        s.name = fmt::format("{}_[{}]_dim{}_{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
                             c.dim, layout_name(c.layout));
        s.inputs = {make_input(c.shape, dt, c.layout, -8, 8, seed++)};
        int64_t dim = c.dim;
        s.call = [dim](const std::vector<Tensor>& in) {
          return std::vector{kLog ? kiln::log_softmax(in[0], dim) : kiln::softmax(in[0], dim)};
        };
        s.reference = [dim](const std::vector<RefTensor>& in) {
          return std::vector{ref_along_dim(in[0], dim, kLog ? ref_log_softmax : ref_softmax)};
        };
        out.push_back(std::move(s));
      }
    }
    // Large logits: the max subtraction keeps exp finite.
    Sample big;
    big.name = "float32_large_logits";
    big.inputs = {make_input({3, 9}, kiln::kFloat32, Layout::Contiguous, 500, 1000, 5)};
    big.call = [](const std::vector<Tensor>& in) {
      return std::vector{kLog ? kiln::log_softmax(in[0], 1) : kiln::softmax(in[0], 1)};
    };
    big.reference = [](const std::vector<RefTensor>& in) {
      return std::vector{ref_along_dim(in[0], 1, kLog ? ref_log_softmax : ref_softmax)};
    };
    big.atol = 1e-4;  // x - max - log(sum) of values near 1000 in float32
    out.push_back(std::move(big));
    return out;
  };
  return info;
}
KILN_REGISTER_OPINFO(softmax, softmax_info<false>("softmax"));
KILN_REGISTER_OPINFO(log_softmax, softmax_info<true>("log_softmax"));

// ---- layer_norm ----

RefTensor ref_layer_norm(const RefTensor& x, int64_t n, const RefTensor* w, const RefTensor* b,
                         double eps) {
  RefTensor out = x;
  for (int64_t r = 0; n > 0 && r < x.numel() / n; ++r) {
    double mean = 0, m2 = 0;
    for (int64_t i = 0; i < n; ++i)
      mean += x.data[static_cast<size_t>(r * n + i)];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      double d = x.data[static_cast<size_t>(r * n + i)] - mean;
      m2 += d * d;
    }
    double rstd = 1 / std::sqrt(m2 / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      auto k = static_cast<size_t>(r * n + i);
      double v = (x.data[k] - mean) * rstd;
      if (w != nullptr) v *= w->data[static_cast<size_t>(i)];
      if (b != nullptr) v += b->data[static_cast<size_t>(i)];
      out.data[k] = round_to(v, x.dtype);
    }
  }
  return out;
}

KILN_REGISTER_OPINFO(layer_norm, [] {
  OpInfo info{"layer_norm", {"layer_norm"}};
  info.samples = [] {
    struct LnCase {
      Shape shape, normalized;
      Layout layout;
    };
    const std::vector<LnCase> cases = {
        {{4, 6}, {6}, Layout::Contiguous},
        {{2, 3, 4}, {3, 4}, Layout::Contiguous},
        {{5, 6}, {6}, Layout::Transposed},
        {{3, 8}, {8}, Layout::Strided},
        {{7}, {7}, Layout::Contiguous},
        {{0, 5}, {5}, Layout::Contiguous},
        {{3, 1}, {1}, Layout::Contiguous},
        {{4, 2000}, {2000}, Layout::Contiguous},
        {{2, 3, 4}, {2, 3, 4}, Layout::Transposed},
    };
    std::vector<Sample> out;
    uint32_t seed = 40;
    for (DType dt : kFloats) {
      for (const LnCase& c : cases) {
        for (int affine = 0; affine < 4; ++affine) {
          bool has_w = (affine & 1) != 0, has_b = (affine & 2) != 0;
          Sample s;
          s.name = fmt::format("{}_[{}]_norm[{}]_{}{}{}", kiln::dtype_name(dt),
                               fmt::join(c.shape, "x"), fmt::join(c.normalized, "x"),
                               layout_name(c.layout), has_w ? "_weight" : "", has_b ? "_bias" : "");
          s.inputs = {make_input(c.shape, dt, c.layout, 2, 6, seed++)};
          if (has_w)
            s.inputs.push_back(make_input(c.normalized, dt, Layout::Contiguous, 0.5, 2, seed++));
          if (has_b)
            s.inputs.push_back(make_input(c.normalized, dt, Layout::Contiguous, -1, 1, seed++));
          Shape ns = c.normalized;
          double eps = affine == 3 ? 1e-3 : 1e-5;
          s.call = [ns, has_w, has_b, eps](const std::vector<Tensor>& in) {
            Tensor w = has_w ? in[1] : Tensor();
            Tensor b = has_b ? in[has_w ? 2 : 1] : Tensor();
            return std::vector{kiln::layer_norm(in[0], ns, w, b, eps)};
          };
          int64_t n = ref_numel(ns);
          s.reference = [n, has_w, has_b, eps](const std::vector<RefTensor>& in) {
            const RefTensor* w = has_w ? &in[1] : nullptr;
            const RefTensor* b = has_b ? &in[has_w ? 2 : 1] : nullptr;
            return std::vector{ref_layer_norm(in[0], n, w, b, eps)};
          };
          if (dt == kiln::kFloat32) s.atol = 1e-5;
          out.push_back(std::move(s));
        }
      }
    }
    return out;
  };
  return info;
}());

// ---- losses ----

// -input[i, target[i]] per row, reduced; ignore_index rows contribute 0 and are not counted.
RefTensor ref_nll(const RefTensor& input, const RefTensor& target, const std::string& reduction,
                  int64_t ignore) {
  bool batched = input.sizes.size() == 2;
  int64_t n = batched ? input.sizes[0] : 1;
  int64_t c = input.sizes.back();
  Values losses;
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto t = static_cast<int64_t>(target.data[static_cast<size_t>(i)]);
    double l = t == ignore ? 0.0 : -input.data[static_cast<size_t>(i * c + t)];
    count += t == ignore ? 0 : 1;
    losses.push_back(round_to(l, input.dtype));
    total += l;
  }
  if (reduction == "none") return {batched ? Shape{n} : Shape{}, losses, input.dtype};
  double r = reduction == "sum" ? total : (count == 0 ? kNaN : total / static_cast<double>(count));
  return {{}, {round_to(r, input.dtype)}, input.dtype};
}

template <bool kCrossEntropy>
OpInfo class_loss(const char* name, std::vector<std::string> covers) {
  OpInfo info{name, std::move(covers)};
  info.samples = [] {
    struct LossCase {
      Shape shape;
      std::vector<int64_t> target;
      int64_t ignore;
      Layout layout;
    };
    const std::vector<LossCase> cases = {
        {{5, 4}, {0, 3, 1, 2, 3}, -100, Layout::Contiguous},
        {{5, 4}, {0, 3, -100, 2, 3}, -100, Layout::Transposed},
        {{4, 6}, {1, 5, 1, 5}, 1, Layout::Strided},
        {{3, 3}, {2, 2, 2}, 2, Layout::Contiguous},  // every target ignored: mean is NaN
        {{6}, {4}, -100, Layout::Contiguous},        // one sample: input [C], target []
        {{0, 3}, {}, -100, Layout::Contiguous},
    };
    std::vector<Sample> out;
    uint32_t seed = 70;
    for (DType dt : kFloats) {
      for (const LossCase& c : cases) {
        for (std::string reduction : {"none", "mean", "sum"}) {
          Sample s;
          s.name = fmt::format("{}_[{}]_ignore{}_{}_{}", kiln::dtype_name(dt),
                               fmt::join(c.shape, "x"), c.ignore, layout_name(c.layout), reduction);
          Tensor tg = c.shape.size() == 1 ? kiln::from_vector(c.target, {1}).view({})
                                          : kiln::from_vector(c.target, {c.shape[0]});
          s.inputs = {make_input(c.shape, dt, c.layout, kCrossEntropy ? -4 : -5,
                                 kCrossEntropy ? 4 : 0, seed++),
                      tg};
          int64_t ignore = c.ignore;
          s.call = [reduction, ignore](const std::vector<Tensor>& in) {
            return std::vector{kCrossEntropy ? kiln::cross_entropy(in[0], in[1], reduction, ignore)
                                             : kiln::nll_loss(in[0], in[1], reduction, ignore)};
          };
          s.reference = [reduction, ignore](const std::vector<RefTensor>& in) {
            RefTensor logp = in[0];
            if (kCrossEntropy) {
              logp = ref_along_dim(in[0], -1, ref_log_softmax);
              logp.dtype = kiln::kFloat64;  // keep the log-probabilities unrounded
            }
            RefTensor r = ref_nll(logp, in[1], reduction, ignore);
            r.dtype = in[0].dtype;
            for (double& v : r.data)
              v = round_to(v, in[0].dtype);
            return std::vector{r};
          };
          out.push_back(std::move(s));
        }
      }
    }
    return out;
  };
  return info;
}
KILN_REGISTER_OPINFO(nll_loss, class_loss<false>("nll_loss", {"nll_loss"}));
KILN_REGISTER_OPINFO(cross_entropy, class_loss<true>("cross_entropy", {"log_softmax", "nll_loss"}));

KILN_REGISTER_OPINFO(mse_loss, [] {
  OpInfo info{"mse_loss", {"sub", "mul", "mean", "sum"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 90;
    const std::vector<std::pair<Shape, Layout>> cases = {{{4, 5}, Layout::Contiguous},
                                                         {{4, 5}, Layout::Transposed},
                                                         {{7}, Layout::Strided},
                                                         {{2, 0, 3}, Layout::Contiguous},
                                                         {{}, Layout::Contiguous}};
    for (DType dt : kFloats) {
      for (const auto& [shape, layout] : cases) {
        for (std::string reduction : {"none", "mean", "sum"}) {
          Sample s;
          s.name = fmt::format("{}_[{}]_{}_{}", kiln::dtype_name(dt), fmt::join(shape, "x"),
                               layout_name(layout), reduction);
          s.inputs = {make_input(shape, dt, layout, -3, 3, seed),
                      make_input(shape, dt, Layout::Contiguous, -3, 3, seed + 1)};
          seed += 2;
          s.call = [reduction](const std::vector<Tensor>& in) {
            return std::vector{kiln::mse_loss(in[0], in[1], reduction)};
          };
          s.reference = [reduction](const std::vector<RefTensor>& in) {
            RefTensor sq = ref_zip(in[0], in[1], kiln::kFloat64,
                                   [](double a, double b) { return (a - b) * (a - b); });
            if (reduction == "none") {
              sq.dtype = in[0].dtype;
              for (double& v : sq.data)
                v = round_to(v, in[0].dtype);
              return std::vector{sq};
            }
            double total = 0;
            for (double v : sq.data)
              total += v;
            double r = reduction == "sum"
                           ? total
                           : (sq.data.empty() ? kNaN : total / static_cast<double>(sq.data.size()));
            return std::vector{RefTensor{{}, {round_to(r, in[0].dtype)}, in[0].dtype}};
          };
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
