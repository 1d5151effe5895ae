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
#include "kiln/runtime/api/nn_ops.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/api/reduction_ops.h"
#include "kiln/runtime/api/shape_ops.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/tracing_state.h"

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

// torch's pooling_output_shape: (in + 2p - d(k - 1) - 1) / s rounded down (up in ceil mode),
// plus one; in ceil mode a last window that would start inside the right padding is dropped.
// Over symbols the comparison is a guard of the trace (guard_size_fact).
SymInt output_size(const SymInt& in, const Window& w, bool ceil_mode) {
  SymInt span = in + 2 * w.p - w.d * (w.k - 1) - 1;
  SymInt out = floordiv(ceil_mode ? span + w.s - 1 : span, w.s) + 1;
  if (ceil_mode && guard_size_fact(SymFact{(out - 1) * w.s, SymFact::Relation::kGe, in + w.p}))
    out -= 1;
  return out;
}

struct Plan2d {
  Window h, w;
  SymInt in_h, in_w, out_h, out_w;
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
  pl.in_h = x.sym_size(-2);
  pl.in_w = x.sym_size(-1);
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
  using R = SymFact::Relation;
  KILN_CHECK(guard_size_fact(SymFact{pl.out_h, R::kGe, 1}) &&
                 guard_size_fact(SymFact{pl.out_w, R::kGe, 1}),
             "{}: Given input size: {}. Calculated output size: [{}, {}]. Output size is too "
             "small",
             op, shape_str(x.sizes()), pl.out_h.str(), pl.out_w.str());
  return pl;
}

// Note [Pooling matrices over symbols]
// The pooling matrices are built with tensor ops from the sizes, not on the host, so that a
// traced graph computes them at each call's sizes and one symbolic plan serves every image
// size. Every entry is decided by integer comparisons (no rounded division), so the matrices
// are exact whatever the sizes.

// P[out, in] for average pooling along one dim (Note [Pooling as products and windows]): output
// o averages inputs [max(start, 0), min(end, in)), start = o s - p, end = min(start + k, in + p),
// dividing by end - start with count_include_pad and by the count of inputs otherwise.
Tensor average_matrix(const SymInt& in, const SymInt& out, const Window& w, bool count_include_pad,
                      bool unit_weights, const Tensor& like) {
  TensorOptions io = TensorOptions(kInt64).device(like.device());
  Tensor n = scalar_tensor_symint(in, io);
  Tensor start = sub(mul(arange_symint(out, io), w.s), w.p).unsqueeze(1);  // [out, 1]
  Tensor end = minimum(add(start, w.k), add(n, w.p));
  Tensor i = arange_symint(in, io);  // [in]
  Tensor inside = logical_and(ge(i, start), lt(i, end)).to(like.dtype());
  if (unit_weights) return inside;
  Tensor len = count_include_pad ? sub(end, start).to(like.dtype()) : inside.sum({1}, true);
  return div(inside, len);
}

// P[out, in] for adaptive pooling: output o averages inputs [floor(o in / out),
// ceil((o + 1) in / out)), that is the i with o in < (i + 1) out and i out < (o + 1) in.
Tensor adaptive_matrix(const SymInt& in, int64_t out, const Tensor& like) {
  TensorOptions io = TensorOptions(kInt64).device(like.device());
  Tensor n = scalar_tensor_symint(in, io);
  Tensor o = arange_symint(out, io).unsqueeze(1);  // [out, 1]
  Tensor i = arange_symint(in, io);                // [in]
  Tensor inside =
      logical_and(lt(mul(o, n), mul(add(i, 1), out)), lt(mul(i, out), mul(add(o, 1), n)))
          .to(like.dtype());
  return div(inside, inside.sum({1}, true));
}

// P_h x P_w^T over the last two dims.
Tensor pool_by_products(const Tensor& x, const Tensor& ph, const Tensor& pw) {
  return matmul(matmul(ph, x), pw.t());
}

// The extent of a max-pooling input padded with -inf: at integer sizes exactly what the
// windows read, over symbols the most any size needs (every window ends by in + 2p, or in +
// 2p + s - 1 in ceil mode).
SymInt padded_extent(const SymInt& in, const SymInt& out, const Window& w, bool ceil_mode) {
  if (std::optional<int64_t> n = in.maybe_int()) {
    int64_t need = (out.expect_int("max_pool2d") - 1) * w.s + (w.k - 1) * w.d + 1;
    return std::max(need, w.p + *n);
  }
  return in + 2 * w.p + (ceil_mode ? w.s - 1 : 0);
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
  Tensor ph = adaptive_matrix(input.sym_size(-2), output_size[0], input);
  Tensor pw = adaptive_matrix(input.sym_size(-1), output_size[1], input);
  return pool_by_products(input, ph, pw);
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Shape kernel_size,
                                                   Shape stride, Shape padding, Shape dilation,
                                                   bool ceil_mode, std::source_location loc) {
  CallSiteScope site(loc);
  Plan2d pl = plan("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode);
  Tensor x = pl.batched ? input : input.unsqueeze(0);
  SymInt full_h = padded_extent(pl.in_h, pl.out_h, pl.h, ceil_mode);
  SymInt full_w = padded_extent(pl.in_w, pl.out_w, pl.w, ceil_mode);
  // -inf before the plane and after it, up to the padded extent.
  int64_t tail_h = (full_h - pl.in_h - pl.h.p).expect_int("max_pool2d");
  int64_t tail_w = (full_w - pl.in_w - pl.w.p).expect_int("max_pool2d");
  Tensor padded = x;
  if (pl.h.p > 0 || pl.w.p > 0 || tail_h > 0 || tail_w > 0)
    padded = pad(x, {pl.w.p, tail_w, pl.h.p, tail_h}, "constant",
                 -std::numeric_limits<double>::infinity());
  // Window offset (i, j) reads rows i d, i d + s, ... and likewise columns, one per output
  // position (Note [Pooling as products and windows]).
  std::vector<Tensor> windows;
  std::vector<int64_t> offset_rows, offset_cols;  // each offset's displacement in the plane
  for (int64_t i = 0; i < pl.h.k; ++i) {
    for (int64_t j = 0; j < pl.w.k; ++j) {
      int64_t h0 = i * pl.h.d, w0 = j * pl.w.d;
      windows.push_back(padded.slice_symint(2, h0, (pl.out_h - 1) * pl.h.s + h0 + 1, pl.h.s)
                            .slice_symint(3, w0, (pl.out_w - 1) * pl.w.s + w0 + 1, pl.w.s));
      offset_rows.push_back(h0);
      offset_cols.push_back(w0);
    }
  }
  auto [values, which] = max(stack(windows, 2), 2);
  // The index of window (oh, ow)'s first element in the unpadded plane, plus the winner's
  // offset: computed with tensor ops, as the plane's width may be a symbol.
  Tensor indices;
  {
    NoGradGuard no_grad;
    TensorOptions io = TensorOptions(kInt64).device(x.device());
    Tensor width = scalar_tensor_symint(pl.in_w, io);
    Tensor offsets = add(mul(from_vector(offset_rows).to(x.device()), width),
                         from_vector(offset_cols).to(x.device()));
    Tensor rows = sub(mul(arange_symint(pl.out_h, io), pl.h.s), pl.h.p);
    Tensor cols = sub(mul(arange_symint(pl.out_w, io), pl.w.s), pl.w.p);
    Tensor corner = add(mul(rows.unsqueeze(1), width), cols);
    Tensor picked = index_select(offsets, 0, which.reshape({-1}));
    indices = add(picked.reshape_symint(which.sym_sizes()), corner);
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
