#include "kiln/runtime/api/pooling_ops.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "kiln/base/call_site.h"
#include "kiln/base/error.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/indexing_ops.h"
#include "kiln/runtime/api/linalg_ops.h"
#include "kiln/runtime/api/reduction_ops.h"
#include "kiln/runtime/api/shape_ops.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln {
namespace {

// One spatial dim of a pooling window: size k, stride s, padding p, dilation d.
struct Window {
  int64_t k, s, p, d;
};

// A pooling argument of one value or two (torch's _pair), for dim `i` (0: H, 1: W).
int64_t pair_at(const char* op, const char* what, const Shape& v, size_t i) {
  KILN_CHECK(v.size() == 1 || v.size() == 2, "{}: {} must be one int or two, got {}", op, what,
             shape_str(v));
  return v.size() == 1 ? v[0] : v[i];
}

// torch's pooling_output_shape: floor or ceil of (in + 2p - d(k - 1) - 1) / s, plus one; in
// ceil mode a last window that would start inside the right padding is dropped.
int64_t output_size(int64_t in, const Window& w, bool ceil_mode) {
  int64_t span = in + 2 * w.p - w.d * (w.k - 1) - 1;
  int64_t out = (ceil_mode ? (span + w.s - 1) / w.s : span / w.s) + 1;
  if (span < 0) out = span / w.s + 1;  // too small; reported by the caller
  if (ceil_mode && (out - 1) * w.s >= in + w.p) --out;
  return out;
}

struct Plan2d {
  Window h, w;
  int64_t in_h, in_w, out_h, out_w;
  bool batched;
};

Plan2d plan(const char* op, const Tensor& x, const Shape& kernel, const Shape& stride,
            const Shape& padding, const Shape& dilation, bool ceil_mode) {
  KILN_CHECK(x.dim() == 3 || x.dim() == 4,
             "{}: Expected 3D or 4D (batch mode) tensor for input, but got input of shape {}", op,
             shape_str(x.sizes()));
  KILN_CHECK(is_floating(x.dtype()), "{}: expected a floating input, got {}", op, x.dtype());
  Plan2d pl{};
  pl.batched = x.dim() == 4;
  pl.in_h = x.size(-2);
  pl.in_w = x.size(-1);
  Window* ws[2] = {&pl.h, &pl.w};
  for (size_t i = 0; i < 2; ++i) {
    Window& w = *ws[i];
    w.k = pair_at(op, "kernel_size", kernel, i);
    w.s = stride.empty() ? w.k : pair_at(op, "stride", stride, i);
    w.p = pair_at(op, "padding", padding, i);
    w.d = pair_at(op, "dilation", dilation, i);
    KILN_CHECK(w.k > 0 && w.s > 0 && w.d > 0 && w.p >= 0,
               "{}: kernel_size, stride and dilation must be positive and padding non-negative, "
               "got kernel_size={}, stride={}, padding={}, dilation={}",
               op, shape_str(kernel), shape_str(stride), shape_str(padding), shape_str(dilation));
    KILN_CHECK(w.p <= (w.d * (w.k - 1) + 1) / 2,
               "{}: pad should be at most half of effective kernel size, but got pad={}, "
               "kernel_size={} and dilation={}",
               op, w.p, w.k, w.d);
  }
  pl.out_h = output_size(pl.in_h, pl.h, ceil_mode);
  pl.out_w = output_size(pl.in_w, pl.w, ceil_mode);
  KILN_CHECK(pl.out_h >= 1 && pl.out_w >= 1,
             "{}: Given input size: {}. Calculated output size: [{}, {}]. Output size is too "
             "small",
             op, shape_str(x.sizes()), pl.out_h, pl.out_w);
  return pl;
}

// P[out, in] for average pooling along one dim (Note [Pooling as products and windows]).
Tensor average_matrix(int64_t in, int64_t out, const Window& w, bool count_include_pad,
                      bool unit_weights, const Tensor& like) {
  std::vector<double> p(static_cast<size_t>(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = o * w.s - w.p;
    int64_t end = std::min(start + w.k, in + w.p);
    int64_t padded_len = end - start;
    int64_t lo = std::max<int64_t>(start, 0), hi = std::min(end, in);
    int64_t len = count_include_pad ? padded_len : hi - lo;
    for (int64_t i = lo; i < hi; ++i)
      p[static_cast<size_t>(o * in + i)] = unit_weights ? 1.0 : 1.0 / static_cast<double>(len);
  }
  return from_vector(p, {out, in}).to(like.dtype()).to(like.device());
}

Tensor adaptive_matrix(int64_t in, int64_t out, const Tensor& like) {
  std::vector<double> p(static_cast<size_t>(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
    for (int64_t i = start; i < end; ++i)
      p[static_cast<size_t>(o * in + i)] = 1.0 / static_cast<double>(end - start);
  }
  return from_vector(p, {out, in}).to(like.dtype()).to(like.device());
}

// P_h x P_w^T over the last two dims.
Tensor pool_by_products(const Tensor& x, const Tensor& ph, const Tensor& pw) {
  return matmul(matmul(ph, x), pw.t());
}

}  // namespace

Tensor avg_pool2d(const Tensor& input, Shape kernel_size, Shape stride, Shape padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override,
                  std::source_location loc) {
  CallSiteScope site(loc);
  Plan2d pl = plan("avg_pool2d", input, kernel_size, stride, padding, {1}, ceil_mode);
  KILN_CHECK(!divisor_override || *divisor_override != 0, "avg_pool2d: divisor must be not zero");
  bool unit = divisor_override.has_value();
  Tensor ph = average_matrix(pl.in_h, pl.out_h, pl.h, count_include_pad, unit, input);
  Tensor pw = average_matrix(pl.in_w, pl.out_w, pl.w, count_include_pad, unit, input);
  Tensor out = pool_by_products(input, ph, pw);
  return unit ? out / static_cast<double>(*divisor_override) : out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, Shape output_size, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(input.dim() == 3 || input.dim() == 4,
             "adaptive_avg_pool2d: Expected 3D or 4D tensor, but got input of shape {}",
             shape_str(input.sizes()));
  KILN_CHECK(output_size.size() == 2 && output_size[0] >= 0 && output_size[1] >= 0,
             "adaptive_avg_pool2d: output_size must be 2 non-negative ints, got {}",
             shape_str(output_size));
  KILN_CHECK(is_floating(input.dtype()), "adaptive_avg_pool2d: expected a floating input, got {}",
             input.dtype());
  for (int64_t d = 0; d < input.dim() - 2; ++d) {
    KILN_CHECK(!(input.sym_size(d) == 0),  // a symbol is never 0: no read
               "adaptive_avg_pool2d: Expected input to have non-zero size for non-batch "
               "dimensions, but input has sizes {} with dimension {} being empty",
               shape_str(input.sizes()), d);
  }
  Tensor ph = adaptive_matrix(input.size(-2), output_size[0], input);
  Tensor pw = adaptive_matrix(input.size(-1), output_size[1], input);
  return pool_by_products(input, ph, pw);
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Shape kernel_size,
                                                   Shape stride, Shape padding, Shape dilation,
                                                   bool ceil_mode, std::source_location loc) {
  CallSiteScope site(loc);
  Plan2d pl = plan("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode);
  Tensor x = pl.batched ? input : input.unsqueeze(0);
  // The batch and channels over symbols; the windows need the spatial sizes as integers.
  SymInt n = x.sym_size(0), c = x.sym_size(1);
  // Every window reads [start, start + (out - 1) s + (k - 1) d] of the padded input.
  int64_t need_h = (pl.out_h - 1) * pl.h.s + (pl.h.k - 1) * pl.h.d + 1;
  int64_t need_w = (pl.out_w - 1) * pl.w.s + (pl.w.k - 1) * pl.w.d + 1;
  Tensor padded = x;
  if (pl.h.p > 0 || pl.w.p > 0 || need_h > pl.in_h || need_w > pl.in_w) {
    int64_t full_h = std::max(need_h, pl.h.p + pl.in_h);
    int64_t full_w = std::max(need_w, pl.w.p + pl.in_w);
    padded =
        full_symint({n, c, full_h, full_w}, -std::numeric_limits<double>::infinity(), x.options());
    padded.slice(2, pl.h.p, pl.h.p + pl.in_h).slice(3, pl.w.p, pl.w.p + pl.in_w).copy_(x);
  }
  std::vector<Tensor> windows;
  std::vector<int64_t> offsets;  // each window offset's displacement within an input plane
  for (int64_t i = 0; i < pl.h.k; ++i) {
    for (int64_t j = 0; j < pl.w.k; ++j) {
      int64_t h0 = i * pl.h.d, w0 = j * pl.w.d;
      windows.push_back(padded.slice(2, h0, h0 + (pl.out_h - 1) * pl.h.s + 1, pl.h.s)
                            .slice(3, w0, w0 + (pl.out_w - 1) * pl.w.s + 1, pl.w.s));
      offsets.push_back(h0 * pl.in_w + w0);
    }
  }
  auto [values, which] = max(stack(windows, 2), 2);
  // Index of window (oh, ow)'s first element in the unpadded plane, plus the winner's offset.
  std::vector<int64_t> corner(static_cast<size_t>(pl.out_h * pl.out_w));
  for (int64_t oh = 0; oh < pl.out_h; ++oh) {
    for (int64_t ow = 0; ow < pl.out_w; ++ow) {
      corner[static_cast<size_t>(oh * pl.out_w + ow)] =
          (oh * pl.h.s - pl.h.p) * pl.in_w + (ow * pl.w.s - pl.w.p);
    }
  }
  Tensor indices;
  {
    NoGradGuard no_grad;
    Tensor picked = index_select(from_vector(offsets).to(x.device()), 0, which.reshape({-1}));
    indices = picked.reshape_symint(which.sym_sizes()) +
              from_vector(corner, {pl.out_h, pl.out_w}).to(x.device());
  }
  if (!pl.batched) return {values.squeeze(0), indices.squeeze(0)};
  return {values, indices};
}

Tensor max_pool2d(const Tensor& input, Shape kernel_size, Shape stride, Shape padding,
                  Shape dilation, bool ceil_mode, std::source_location loc) {
  return std::get<0>(max_pool2d_with_indices(input, std::move(kernel_size), std::move(stride),
                                             std::move(padding), std::move(dilation), ceil_mode,
                                             loc));
}

}  // namespace kiln
