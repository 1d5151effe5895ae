// OpInfo entries of the normalization and pooling composites: batch_norm (training, with the
// running statistics it updates, and evaluation), group_norm, rms_norm, avg_pool2d,
// adaptive_avg_pool2d, max_pool2d (values and indices). References are loops over doubles.
#include <cmath>
#include <limits>
#include <optional>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

const std::vector<DType> kFloats = {kiln::kFloat32, kiln::kFloat64};

RefTensor rounded(RefTensor t) {
  for (double& v : t.data)
    v = round_to(v, t.dtype);
  return t;
}

// x as [N, C, S] (S: the product of the dims after C).
struct Ncs {
  int64_t n, c, s;
  explicit Ncs(const Shape& sizes) : n(sizes[0]), c(sizes[1]), s(1) {
    for (size_t d = 2; d < sizes.size(); ++d)
      s *= sizes[d];
  }
  size_t at(int64_t i, int64_t ch, int64_t k) const {
    return static_cast<size_t>((i * c + ch) * s + k);
  }
};

// ---- batch_norm ----

struct BnCase {
  Shape shape;
  Layout layout;
  bool training, running, affine;
};

KILN_REGISTER_OPINFO(batch_norm, [] {
  OpInfo info{"batch_norm", {"mean", "var", "sub", "rsqrt", "mul", "add", "mul_scalar_", "add_"}};
  info.samples = [] {
    const std::vector<BnCase> cases = {
        {{4, 3}, Layout::Contiguous, true, false, false},
        {{4, 3, 5}, Layout::Contiguous, true, true, true},
        {{2, 3, 4, 5}, Layout::Transposed, true, true, false},
        {{3, 2, 6}, Layout::Strided, true, false, true},
        {{2, 3, 4, 5}, Layout::Contiguous, false, true, true},
        {{5, 4}, Layout::Transposed, false, true, false},
    };
    std::vector<Sample> out;
    uint32_t seed = 700;
    for (DType dt : kFloats) {
      for (const BnCase& c : cases) {
        int64_t ch = c.shape[1];
        Sample s;
        s.name = fmt::format("{}_[{}]_{}{}{}{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
                             layout_name(c.layout), c.training ? "_train" : "_eval",
                             c.running ? "_running" : "", c.affine ? "_affine" : "");
        // The running statistics are buffers, not differentiable inputs (as in torch): the call
        // captures them and updates copies (on the input's device), which it returns.
        Tensor rm0 = make_input({ch}, dt, Layout::Contiguous, -1, 1, seed++);
        Tensor rv0 = make_input({ch}, dt, Layout::Contiguous, 0.5, 2, seed++);
        s.inputs = {make_input(c.shape, dt, c.layout, -2, 3, seed++),
                    make_input({ch}, dt, Layout::Contiguous, 0.5, 2, seed++),
                    make_input({ch}, dt, Layout::Contiguous, -1, 1, seed++)};
        const double momentum = 0.3, eps = 1e-3;
        s.call = [c, momentum, eps, rm0, rv0](const std::vector<Tensor>& in) {
          Tensor rm = c.running ? rm0.to(in[0].device()).clone() : Tensor();
          Tensor rv = c.running ? rv0.to(in[0].device()).clone() : Tensor();
          Tensor w = c.affine ? in[1] : Tensor(), b = c.affine ? in[2] : Tensor();
          Tensor y = kiln::batch_norm(in[0], rm, rv, w, b, c.training, momentum, eps);
          if (!c.running) return std::vector{y};
          return std::vector{y, rm, rv};
        };
        RefTensor rm_ref = to_ref(rm0), rv_ref = to_ref(rv0);
        s.reference = [c, momentum, eps, rm_ref, rv_ref](const std::vector<RefTensor>& in) {
          const RefTensor& x = in[0];
          Ncs g(x.sizes);
          RefTensor y = x, rm = rm_ref, rv = rv_ref;
          for (int64_t k = 0; k < g.c; ++k) {
            auto kk = static_cast<size_t>(k);
            double mean = 0, var = 0, count = static_cast<double>(g.n * g.s);
            if (c.training) {
              for (int64_t i = 0; i < g.n; ++i)
                for (int64_t j = 0; j < g.s; ++j)
                  mean += x.data[g.at(i, k, j)];
              mean /= count;
              for (int64_t i = 0; i < g.n; ++i)
                for (int64_t j = 0; j < g.s; ++j)
                  var += (x.data[g.at(i, k, j)] - mean) * (x.data[g.at(i, k, j)] - mean);
              var /= count;
              rm.data[kk] = (1 - momentum) * rm_ref.data[kk] + momentum * mean;
              rv.data[kk] = (1 - momentum) * rv_ref.data[kk] + momentum * var * count / (count - 1);
            } else {
              mean = rm_ref.data[kk];
              var = rv_ref.data[kk];
            }
            for (int64_t i = 0; i < g.n; ++i) {
              for (int64_t j = 0; j < g.s; ++j) {
                double v = (x.data[g.at(i, k, j)] - mean) / std::sqrt(var + eps);
                if (c.affine) v = v * in[1].data[kk] + in[2].data[kk];
                y.data[g.at(i, k, j)] = v;
              }
            }
          }
          if (!c.running) return std::vector{rounded(y)};
          return std::vector{rounded(y), rounded(rm), rounded(rv)};
        };
        s.atol = 1e-4;
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

// ---- group_norm ----

KILN_REGISTER_OPINFO(group_norm, [] {
  OpInfo info{"group_norm", {"view", "mean", "var", "sub", "rsqrt", "mul", "add"}};
  info.samples = [] {
    struct GnCase {
      Shape shape;
      int64_t groups;
      Layout layout;
      bool affine;
    };
    const std::vector<GnCase> cases = {
        {{2, 6, 4}, 1, Layout::Contiguous, false}, {{2, 6, 4}, 3, Layout::Contiguous, true},
        {{2, 6, 4}, 6, Layout::Transposed, true},  {{3, 4, 2, 3}, 2, Layout::Strided, false},
        {{1, 4}, 2, Layout::Contiguous, true},
    };
    std::vector<Sample> out;
    uint32_t seed = 760;
    for (DType dt : kFloats) {
      for (const GnCase& c : cases) {
        int64_t ch = c.shape[1];
        Sample s;
        s.name = fmt::format("{}_[{}]_groups{}_{}{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
                             c.groups, layout_name(c.layout), c.affine ? "_affine" : "");
        s.inputs = {make_input(c.shape, dt, c.layout, -2, 3, seed++)};
        if (c.affine) {
          s.inputs.push_back(make_input({ch}, dt, Layout::Contiguous, 0.5, 2, seed++));
          s.inputs.push_back(make_input({ch}, dt, Layout::Contiguous, -1, 1, seed++));
        }
        const double eps = 1e-3;
        s.call = [c, eps](const std::vector<Tensor>& in) {
          Tensor w = c.affine ? in[1] : Tensor(), b = c.affine ? in[2] : Tensor();
          return std::vector{kiln::group_norm(in[0], c.groups, w, b, eps)};
        };
        s.reference = [c, eps](const std::vector<RefTensor>& in) {
          const RefTensor& x = in[0];
          Ncs g(x.sizes);
          RefTensor y = x;
          int64_t per = g.c / c.groups;
          for (int64_t i = 0; i < g.n; ++i) {
            for (int64_t grp = 0; grp < c.groups; ++grp) {
              double mean = 0, var = 0, count = static_cast<double>(per * g.s);
              for (int64_t k = grp * per; k < (grp + 1) * per; ++k)
                for (int64_t j = 0; j < g.s; ++j)
                  mean += x.data[g.at(i, k, j)];
              mean /= count;
              for (int64_t k = grp * per; k < (grp + 1) * per; ++k)
                for (int64_t j = 0; j < g.s; ++j)
                  var += std::pow(x.data[g.at(i, k, j)] - mean, 2);
              var /= count;
              for (int64_t k = grp * per; k < (grp + 1) * per; ++k) {
                for (int64_t j = 0; j < g.s; ++j) {
                  double v = (x.data[g.at(i, k, j)] - mean) / std::sqrt(var + eps);
                  if (c.affine) {
                    v = v * in[1].data[static_cast<size_t>(k)] + in[2].data[static_cast<size_t>(k)];
                  }
                  y.data[g.at(i, k, j)] = v;
                }
              }
            }
          }
          return std::vector{rounded(y)};
        };
        s.atol = 1e-4;
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

// ---- rms_norm ----

KILN_REGISTER_OPINFO(rms_norm, [] {
  OpInfo info{"rms_norm", {"mul", "mean", "add_scalar", "rsqrt"}};
  info.samples = [] {
    struct RmsCase {
      Shape shape, normalized;
      Layout layout;
      bool weight;
      std::optional<double> eps;
    };
    const std::vector<RmsCase> cases = {
        {{4, 6}, {6}, Layout::Contiguous, false, std::nullopt},
        {{2, 3, 4}, {3, 4}, Layout::Transposed, true, 1e-3},
        {{5, 8}, {8}, Layout::Strided, true, std::nullopt},
        {{0, 3}, {3}, Layout::Contiguous, true, 1e-5},
    };
    std::vector<Sample> out;
    uint32_t seed = 800;
    for (DType dt : kFloats) {
      for (const RmsCase& c : cases) {
        Sample s;
        s.name =
            fmt::format("{}_[{}]_norm[{}]_{}{}{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
                        fmt::join(c.normalized, "x"), layout_name(c.layout),
                        c.weight ? "_weight" : "", c.eps ? "_eps" : "_default_eps");
        s.inputs = {make_input(c.shape, dt, c.layout, -2, 3, seed++)};
        if (c.weight)
          s.inputs.push_back(make_input(c.normalized, dt, Layout::Contiguous, 0.5, 2, seed++));
        s.call = [c](const std::vector<Tensor>& in) {
          return std::vector{
              kiln::rms_norm(in[0], c.normalized, c.weight ? in[1] : Tensor(), c.eps)};
        };
        s.reference = [c, dt](const std::vector<RefTensor>& in) {
          const RefTensor& x = in[0];
          double eps = c.eps.value_or(dt == kiln::kFloat64 ? std::numeric_limits<double>::epsilon()
                                                           : std::numeric_limits<float>::epsilon());
          int64_t n = ref_numel(c.normalized);
          RefTensor y = x;
          for (int64_t r = 0; n > 0 && r < x.numel() / n; ++r) {
            double sq = 0;
            for (int64_t i = 0; i < n; ++i)
              sq += std::pow(x.data[static_cast<size_t>(r * n + i)], 2);
            double scale = 1 / std::sqrt(sq / static_cast<double>(n) + eps);
            for (int64_t i = 0; i < n; ++i) {
              auto k = static_cast<size_t>(r * n + i);
              y.data[k] = x.data[k] * scale * (c.weight ? in[1].data[static_cast<size_t>(i)] : 1.0);
            }
          }
          return std::vector{rounded(y)};
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

// ---- pooling ----

struct PoolCase {
  Shape shape;  // [N, C, H, W] or [C, H, W]
  Shape kernel, stride, padding, dilation;
  bool ceil_mode;
  Layout layout;
};

// The output size along one dim (torch's pooling_output_shape).
int64_t pooled(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

int64_t pick(const Shape& v, size_t i) {
  return v.size() == 1 ? v[0] : v[i];
}

// Calls f(plane, h, w) over the planes (N * C) of an NCHW or CHW shape.
template <class F>
void over_planes(const Shape& sizes, F&& f) {
  int64_t planes = 1;
  for (size_t d = 0; d + 2 < sizes.size(); ++d)
    planes *= sizes[d];
  for (int64_t p = 0; p < planes; ++p)
    f(p, sizes[sizes.size() - 2], sizes[sizes.size() - 1]);
}

Shape pooled_shape(const Shape& in, int64_t oh, int64_t ow) {
  Shape out = in;
  out[out.size() - 2] = oh;
  out[out.size() - 1] = ow;
  return out;
}

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> cases = {
      {{2, 3, 6, 6}, {2}, {}, {0}, {1}, false, Layout::Contiguous},
      {{2, 3, 7, 5}, {3}, {2}, {1}, {1}, false, Layout::Contiguous},
      {{1, 2, 7, 5}, {3, 2}, {2, 1}, {1, 0}, {1}, true, Layout::Transposed},
      {{3, 8, 8}, {2}, {3}, {1}, {1}, true, Layout::Strided},
      {{2, 2, 9, 9}, {3}, {2}, {1}, {2}, false, Layout::Contiguous},
      {{1, 1, 5, 5}, {5}, {1}, {2}, {1}, false, Layout::Contiguous},
  };
  return cases;
}

KILN_REGISTER_OPINFO(avg_pool2d, [] {
  OpInfo info{"avg_pool2d", {"mm", "bmm", "div_scalar"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 840;
    for (DType dt : kFloats) {
      for (const PoolCase& c : pool_cases()) {
        if (c.dilation[0] != 1) continue;  // avg_pool2d has no dilation
        for (int variant = 0; variant < 3; ++variant) {
          bool include_pad = variant != 1;
          std::optional<int64_t> divisor = variant == 2 ? std::optional<int64_t>(5) : std::nullopt;
          Sample s;
          s.name = fmt::format("{}_[{}]_k{}_s{}_p{}{}_{}{}{}", kiln::dtype_name(dt),
                               fmt::join(c.shape, "x"), fmt::join(c.kernel, "x"),
                               fmt::join(c.stride, "x"), fmt::join(c.padding, "x"),
                               c.ceil_mode ? "_ceil" : "", layout_name(c.layout),
                               include_pad ? "" : "_exclude_pad", divisor ? "_divisor5" : "");
          s.inputs = {make_input(c.shape, dt, c.layout, -2, 3, seed++)};
          s.call = [c, include_pad, divisor](const std::vector<Tensor>& in) {
            return std::vector{kiln::avg_pool2d(in[0], c.kernel, c.stride, c.padding, c.ceil_mode,
                                                include_pad, divisor)};
          };
          s.reference = [c, include_pad, divisor](const std::vector<RefTensor>& in) {
            const RefTensor& x = in[0];
            int64_t kh = pick(c.kernel, 0), kw = pick(c.kernel, 1);
            int64_t sh = c.stride.empty() ? kh : pick(c.stride, 0);
            int64_t sw = c.stride.empty() ? kw : pick(c.stride, 1);
            int64_t ph = pick(c.padding, 0), pw = pick(c.padding, 1);
            Shape in_sizes = x.sizes;
            int64_t h = in_sizes[in_sizes.size() - 2], w = in_sizes[in_sizes.size() - 1];
            int64_t oh = pooled(h, kh, sh, ph, 1, c.ceil_mode),
                    ow = pooled(w, kw, sw, pw, 1, c.ceil_mode);
            RefTensor y{pooled_shape(in_sizes, oh, ow), {}, x.dtype};
            over_planes(in_sizes, [&](int64_t p, int64_t H, int64_t W) {
              for (int64_t i = 0; i < oh; ++i) {
                for (int64_t j = 0; j < ow; ++j) {
                  int64_t h0 = i * sh - ph, w0 = j * sw - pw;
                  int64_t h1 = std::min(h0 + kh, H + ph), w1 = std::min(w0 + kw, W + pw);
                  double padded_count = static_cast<double>((h1 - h0) * (w1 - w0));
                  double sum = 0, real = 0;
                  for (int64_t a = std::max<int64_t>(h0, 0); a < std::min(h1, H); ++a) {
                    for (int64_t b = std::max<int64_t>(w0, 0); b < std::min(w1, W); ++b) {
                      sum += x.data[static_cast<size_t>((p * H + a) * W + b)];
                      real += 1;
                    }
                  }
                  double div = divisor       ? static_cast<double>(*divisor)
                               : include_pad ? padded_count
                                             : real;
                  y.data.push_back(round_to(sum / div, x.dtype));
                }
              }
            });
            return std::vector{y};
          };
          out.push_back(std::move(s));
        }
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(adaptive_avg_pool2d, [] {
  OpInfo info{"adaptive_avg_pool2d", {"mm", "bmm"}};
  info.samples = [] {
    struct AdCase {
      Shape shape, out;
      Layout layout;
    };
    const std::vector<AdCase> cases = {{{2, 3, 5, 7}, {3, 2}, Layout::Contiguous},
                                       {{2, 3, 4, 4}, {1, 1}, Layout::Transposed},
                                       {{3, 6, 6}, {6, 6}, Layout::Strided},
                                       {{1, 2, 2, 3}, {3, 5}, Layout::Contiguous}};
    std::vector<Sample> out;
    uint32_t seed = 880;
    for (DType dt : kFloats) {
      for (const AdCase& c : cases) {
        Sample s;
        s.name = fmt::format("{}_[{}]_to[{}]_{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
                             fmt::join(c.out, "x"), layout_name(c.layout));
        s.inputs = {make_input(c.shape, dt, c.layout, -2, 3, seed++)};
        s.call = [c](const std::vector<Tensor>& in) {
          return std::vector{kiln::adaptive_avg_pool2d(in[0], c.out)};
        };
        s.reference = [c](const std::vector<RefTensor>& in) {
          const RefTensor& x = in[0];
          int64_t oh = c.out[0], ow = c.out[1];
          RefTensor y{pooled_shape(x.sizes, oh, ow), {}, x.dtype};
          over_planes(x.sizes, [&](int64_t p, int64_t H, int64_t W) {
            for (int64_t i = 0; i < oh; ++i) {
              for (int64_t j = 0; j < ow; ++j) {
                int64_t h0 = i * H / oh, h1 = ((i + 1) * H + oh - 1) / oh;
                int64_t w0 = j * W / ow, w1 = ((j + 1) * W + ow - 1) / ow;
                double sum = 0;
                for (int64_t a = h0; a < h1; ++a)
                  for (int64_t b = w0; b < w1; ++b)
                    sum += x.data[static_cast<size_t>((p * H + a) * W + b)];
                y.data.push_back(
                    round_to(sum / static_cast<double>((h1 - h0) * (w1 - w0)), x.dtype));
              }
            }
          });
          return std::vector{y};
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(max_pool2d, [] {
  OpInfo info{"max_pool2d", {"full", "slice", "copy_", "cat", "max", "index_select"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 900;
    for (DType dt : kFloats) {
      for (const PoolCase& c : pool_cases()) {
        Sample s;
        s.name = fmt::format(
            "{}_[{}]_k{}_s{}_p{}_d{}{}_{}", kiln::dtype_name(dt), fmt::join(c.shape, "x"),
            fmt::join(c.kernel, "x"), fmt::join(c.stride, "x"), fmt::join(c.padding, "x"),
            fmt::join(c.dilation, "x"), c.ceil_mode ? "_ceil" : "", layout_name(c.layout));
        s.inputs = {make_input(c.shape, dt, c.layout, -2, 3, seed++)};
        s.call = [c](const std::vector<Tensor>& in) {
          auto [v, i] = kiln::max_pool2d_with_indices(in[0], c.kernel, c.stride, c.padding,
                                                      c.dilation, c.ceil_mode);
          return std::vector{v, i};
        };
        s.reference = [c](const std::vector<RefTensor>& in) {
          const RefTensor& x = in[0];
          int64_t kh = pick(c.kernel, 0), kw = pick(c.kernel, 1);
          int64_t sh = c.stride.empty() ? kh : pick(c.stride, 0);
          int64_t sw = c.stride.empty() ? kw : pick(c.stride, 1);
          int64_t ph = pick(c.padding, 0), pw = pick(c.padding, 1);
          int64_t dh = pick(c.dilation, 0), dw = pick(c.dilation, 1);
          int64_t H = x.sizes[x.sizes.size() - 2], W = x.sizes[x.sizes.size() - 1];
          int64_t oh = pooled(H, kh, sh, ph, dh, c.ceil_mode),
                  ow = pooled(W, kw, sw, pw, dw, c.ceil_mode);
          RefTensor vals{pooled_shape(x.sizes, oh, ow), {}, x.dtype};
          RefTensor idx{pooled_shape(x.sizes, oh, ow), {}, kiln::kInt64};
          over_planes(x.sizes, [&](int64_t p, int64_t, int64_t) {
            for (int64_t i = 0; i < oh; ++i) {
              for (int64_t j = 0; j < ow; ++j) {
                double best = -std::numeric_limits<double>::infinity();
                int64_t where = -1;
                for (int64_t a = 0; a < kh; ++a) {
                  for (int64_t b = 0; b < kw; ++b) {
                    int64_t r = i * sh - ph + a * dh, q = j * sw - pw + b * dw;
                    if (r < 0 || r >= H || q < 0 || q >= W) continue;
                    double v = x.data[static_cast<size_t>((p * H + r) * W + q)];
                    if (where < 0 || v > best) {
                      best = v;
                      where = r * W + q;
                    }
                  }
                }
                vals.data.push_back(best);
                idx.data.push_back(static_cast<double>(where));
              }
            }
          });
          return std::vector{vals, idx};
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
