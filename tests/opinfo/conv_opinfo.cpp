// OpInfo entries of the public convolutions over the convolution op: conv2d, conv1d,
// conv_transpose2d. References are the defining sums, looped over doubles.
#include <string>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

const std::vector<DType> kFloats = {kiln::kFloat32, kiln::kFloat64};

struct ConvCase {
  Shape input, weight;
  bool bias;
  int64_t sh, sw, ph_before, ph_after, pw_before, pw_after, dh, dw, groups;
  std::string padding_mode;  // "", "same" or "valid" (the p* fields then hold what it means)
  Layout layout;
};

// out[n][o][y][x] = bias[o] + sum over the group's channels and the kernel of x * w.
RefTensor ref_conv2d(const RefTensor& x, const RefTensor& w, const RefTensor* b,
                     const ConvCase& c) {
  int64_t n = x.sizes[0], ch = x.sizes[1], h = x.sizes[2], wd = x.sizes[3];
  int64_t oc = w.sizes[0], cg = w.sizes[1], kh = w.sizes[2], kw = w.sizes[3];
  int64_t oh = (h + c.ph_before + c.ph_after - c.dh * (kh - 1) - 1) / c.sh + 1;
  int64_t ow = (wd + c.pw_before + c.pw_after - c.dw * (kw - 1) - 1) / c.sw + 1;
  RefTensor out{{n, oc, oh, ow}, {}, x.dtype};
  int64_t ocg = oc / c.groups;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o = 0; o < oc; ++o) {
      int64_t g = o / ocg;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t xx = 0; xx < ow; ++xx) {
          double acc = b != nullptr ? b->data[static_cast<size_t>(o)] : 0.0;
          for (int64_t k = 0; k < cg; ++k) {
            int64_t cin = g * cg + k;
            for (int64_t a = 0; a < kh; ++a) {
              for (int64_t q = 0; q < kw; ++q) {
                int64_t r = y * c.sh - c.ph_before + a * c.dh;
                int64_t s = xx * c.sw - c.pw_before + q * c.dw;
                if (r < 0 || r >= h || s < 0 || s >= wd) continue;
                acc += x.data[static_cast<size_t>(((i * ch + cin) * h + r) * wd + s)] *
                       w.data[static_cast<size_t>(((o * cg + k) * kh + a) * kw + q)];
              }
            }
          }
          out.data.push_back(round_to(acc, x.dtype));
        }
      }
    }
  }
  return out;
}

Shape pad_arg(const ConvCase& c) {
  return c.ph_before == c.pw_before ? Shape{c.ph_before} : Shape{c.ph_before, c.pw_before};
}

std::vector<ConvCase> conv2d_cases() {
  return {
      {{2, 4, 7, 6}, {6, 2, 3, 3}, true, 2, 2, 1, 1, 1, 1, 1, 1, 2, "", Layout::Contiguous},
      {{1, 3, 6, 5}, {4, 3, 4, 2}, false, 1, 1, 1, 2, 0, 1, 1, 1, 1, "same", Layout::Transposed},
      {{2, 2, 9, 8}, {3, 2, 3, 3}, true, 1, 1, 2, 2, 2, 2, 2, 2, 1, "same", Layout::Contiguous},
      {{2, 5, 4, 4}, {3, 5, 1, 1}, true, 1, 1, 0, 0, 0, 0, 1, 1, 1, "", Layout::Strided},
      {{3, 5, 6}, {4, 3, 2, 3}, false, 1, 2, 0, 0, 1, 1, 1, 1, 1, "", Layout::Contiguous},
      {{1, 4, 5, 5}, {4, 1, 3, 3}, true, 1, 1, 0, 0, 0, 0, 1, 1, 4, "valid", Layout::Contiguous},
  };
}

KILN_REGISTER_OPINFO(conv2d, [] {
  OpInfo info{"conv2d", {"convolution"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 950;
    for (DType dt : kFloats) {
      for (const ConvCase& c : conv2d_cases()) {
        Sample s;
        s.name = fmt::format("{}_[{}]_w[{}]_s{}x{}_d{}x{}_g{}_{}{}{}", kiln::dtype_name(dt),
                             fmt::join(c.input, "x"), fmt::join(c.weight, "x"), c.sh, c.sw, c.dh,
                             c.dw, c.groups, c.padding_mode.empty() ? "p" : c.padding_mode,
                             layout_name(c.layout), c.bias ? "_bias" : "");
        s.inputs = {make_input(c.input, dt, c.layout, -2, 2, seed++),
                    make_input(c.weight, dt, Layout::Contiguous, -1, 1, seed++)};
        if (c.bias)
          s.inputs.push_back(make_input({c.weight[0]}, dt, Layout::Contiguous, -1, 1, seed++));
        s.call = [c](const std::vector<Tensor>& in) {
          kiln::ConvPadding p = c.padding_mode.empty() ? kiln::ConvPadding(pad_arg(c))
                                                       : kiln::ConvPadding(c.padding_mode);
          return std::vector{kiln::conv2d(in[0], in[1], c.bias ? in[2] : Tensor(), {c.sh, c.sw}, p,
                                          {c.dh, c.dw}, c.groups)};
        };
        s.reference = [c](const std::vector<RefTensor>& in) {
          RefTensor x = in[0];
          bool unbatched = x.sizes.size() == 3;
          if (unbatched) x.sizes.insert(x.sizes.begin(), 1);
          RefTensor y = ref_conv2d(x, in[1], c.bias ? &in[2] : nullptr, c);
          if (unbatched) y.sizes.erase(y.sizes.begin());
          return std::vector{y};
        };
        s.atol = 1e-4;
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(conv1d, [] {
  OpInfo info{"conv1d", {"convolution", "unsqueeze", "squeeze"}};
  info.samples = [] {
    // conv1d is conv2d over a height of 1: the same reference with h = 1.
    const std::vector<ConvCase> cases = {
        {{2, 4, 9}, {6, 4, 3}, true, 1, 1, 0, 0, 2, 2, 1, 2, 1, "same", Layout::Contiguous},
        {{3, 10}, {2, 3, 4}, false, 1, 3, 0, 0, 1, 1, 1, 1, 1, "", Layout::Transposed},
        {{1, 4, 7}, {4, 2, 2}, true, 1, 2, 0, 0, 0, 0, 1, 1, 2, "", Layout::Strided},
    };
    std::vector<Sample> out;
    uint32_t seed = 990;
    for (DType dt : kFloats) {
      for (const ConvCase& c : cases) {
        Sample s;
        s.name =
            fmt::format("{}_[{}]_w[{}]_s{}_d{}_g{}_{}{}", kiln::dtype_name(dt),
                        fmt::join(c.input, "x"), fmt::join(c.weight, "x"), c.sw, c.dw, c.groups,
                        c.padding_mode.empty() ? "p" : c.padding_mode, layout_name(c.layout));
        s.inputs = {make_input(c.input, dt, c.layout, -2, 2, seed++),
                    make_input(c.weight, dt, Layout::Contiguous, -1, 1, seed++)};
        if (c.bias)
          s.inputs.push_back(make_input({c.weight[0]}, dt, Layout::Contiguous, -1, 1, seed++));
        s.call = [c](const std::vector<Tensor>& in) {
          kiln::ConvPadding p = c.padding_mode.empty() ? kiln::ConvPadding(Shape{c.pw_before})
                                                       : kiln::ConvPadding(c.padding_mode);
          return std::vector{
              kiln::conv1d(in[0], in[1], c.bias ? in[2] : Tensor(), {c.sw}, p, {c.dw}, c.groups)};
        };
        s.reference = [c](const std::vector<RefTensor>& in) {
          RefTensor x = in[0], w = in[1];
          bool unbatched = x.sizes.size() == 2;
          if (unbatched) x.sizes.insert(x.sizes.begin(), 1);
          x.sizes.insert(x.sizes.begin() + 2, 1);
          w.sizes.insert(w.sizes.begin() + 2, 1);
          RefTensor y = ref_conv2d(x, w, c.bias ? &in[2] : nullptr, c);
          y.sizes.erase(y.sizes.begin() + 2);
          if (unbatched) y.sizes.erase(y.sizes.begin());
          return std::vector{y};
        };
        s.atol = 1e-4;
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

struct TransposeCase {
  Shape input, weight;
  bool bias;
  int64_t s, p, output_padding, groups, d;
  Layout layout;
};

KILN_REGISTER_OPINFO(conv_transpose2d, [] {
  OpInfo info{"conv_transpose2d", {"convolution"}};
  info.samples = [] {
    const std::vector<TransposeCase> cases = {
        {{2, 4, 5, 4}, {4, 3, 3, 3}, true, 2, 1, 1, 1, 1, Layout::Contiguous},
        {{1, 4, 3, 3}, {4, 2, 2, 2}, false, 1, 0, 0, 2, 2, Layout::Transposed},
        {{3, 4, 4}, {3, 2, 3, 3}, true, 3, 2, 2, 1, 1, Layout::Strided},
    };
    std::vector<Sample> out;
    uint32_t seed = 1020;
    for (DType dt : kFloats) {
      for (const TransposeCase& c : cases) {
        Sample s;
        s.name = fmt::format("{}_[{}]_w[{}]_s{}_p{}_op{}_g{}_d{}_{}", kiln::dtype_name(dt),
                             fmt::join(c.input, "x"), fmt::join(c.weight, "x"), c.s, c.p,
                             c.output_padding, c.groups, c.d, layout_name(c.layout));
        s.inputs = {make_input(c.input, dt, c.layout, -2, 2, seed++),
                    make_input(c.weight, dt, Layout::Contiguous, -1, 1, seed++)};
        int64_t oc = c.weight[1] * c.groups;
        if (c.bias) s.inputs.push_back(make_input({oc}, dt, Layout::Contiguous, -1, 1, seed++));
        s.call = [c](const std::vector<Tensor>& in) {
          return std::vector{kiln::conv_transpose2d(in[0], in[1], c.bias ? in[2] : Tensor(), {c.s},
                                                    {c.p}, {c.output_padding}, c.groups, {c.d})};
        };
        s.reference = [c, oc](const std::vector<RefTensor>& in) {
          RefTensor x = in[0];
          const RefTensor& w = in[1];
          bool unbatched = x.sizes.size() == 3;
          if (unbatched) x.sizes.insert(x.sizes.begin(), 1);
          int64_t n = x.sizes[0], ch = x.sizes[1], h = x.sizes[2], wd = x.sizes[3];
          int64_t ocg = w.sizes[1], kh = w.sizes[2], kw = w.sizes[3], cg = ch / c.groups;
          int64_t oh = (h - 1) * c.s - 2 * c.p + c.d * (kh - 1) + c.output_padding + 1;
          int64_t ow = (wd - 1) * c.s - 2 * c.p + c.d * (kw - 1) + c.output_padding + 1;
          RefTensor y{
              {n, oc, oh, ow}, std::vector<double>(static_cast<size_t>(n * oc * oh * ow)), x.dtype};
          for (int64_t i = 0; i < n; ++i) {
            for (int64_t cin = 0; cin < ch; ++cin) {
              int64_t g = cin / cg;
              for (int64_t r = 0; r < h; ++r) {
                for (int64_t q = 0; q < wd; ++q) {
                  double v = x.data[static_cast<size_t>(((i * ch + cin) * h + r) * wd + q)];
                  for (int64_t k = 0; k < ocg; ++k) {
                    for (int64_t a = 0; a < kh; ++a) {
                      for (int64_t b = 0; b < kw; ++b) {
                        int64_t yy = r * c.s - c.p + a * c.d, xx = q * c.s - c.p + b * c.d;
                        if (yy < 0 || yy >= oh || xx < 0 || xx >= ow) continue;
                        int64_t o = g * ocg + k;
                        y.data[static_cast<size_t>(((i * oc + o) * oh + yy) * ow + xx)] +=
                            v * w.data[static_cast<size_t>(((cin * ocg + k) * kh + a) * kw + b)];
                      }
                    }
                  }
                }
              }
            }
          }
          for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < oc; ++o)
              for (int64_t k = 0; k < oh * ow; ++k) {
                double& v = y.data[static_cast<size_t>((i * oc + o) * oh * ow + k)];
                if (c.bias) v += in[2].data[static_cast<size_t>(o)];
                v = round_to(v, x.dtype);
              }
          if (unbatched) y.sizes.erase(y.sizes.begin());
          return std::vector{y};
        };
        s.atol = 1e-4;
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
