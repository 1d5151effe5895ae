// tril, triu, flip, roll and repeat as composites of table ops (arange, comparisons, where,
// index_select, slice, cat, expand, reshape), so that autograd, tracing, fusion and the CUDA
// kernels need nothing of their own.
#include <fmt/format.h>

#include "kiln/base/call_site.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/indexing_ops.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/api/shape_ops.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {

namespace {

// The mask is built from two aranges on x's device, so that under compile it fuses with the
// select instead of being a constant of the traced shape.
Tensor triangle(const char* name, const Tensor& x, int64_t diagonal, bool lower) {
  KILN_CHECK(x.dim() >= 2, "{}: input tensor must have at least 2 dimensions, but got shape {}",
             name, shape_str(x.sizes()));
  Tensor col_minus_row =
      sub(arange_symint(x.sym_size(-1), TensorOptions(kInt64).device(x.device())),
          arange_symint(x.sym_size(-2), TensorOptions(kInt64).device(x.device())).unsqueeze(1));
  Tensor keep = lower ? le(col_minus_row, diagonal) : ge(col_minus_row, diagonal);
  // false is the zero of every dtype and, being of the lowest category, keeps x's dtype.
  return where(keep, x, Scalar(false));
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal, std::source_location loc) {
  CallSiteScope site(loc);
  return triangle("tril", x, diagonal, true);
}
Tensor triu(const Tensor& x, int64_t diagonal, std::source_location loc) {
  CallSiteScope site(loc);
  return triangle("triu", x, diagonal, false);
}

Tensor flip(const Tensor& x, Shape dims, std::source_location loc) {
  CallSiteScope site(loc);
  // A 0-dim tensor accepts dim 0 and -1, as everywhere in torch.
  int64_t ndim = std::max<int64_t>(x.dim(), 1);
  std::vector<bool> seen(static_cast<size_t>(ndim));
  Tensor out = x;
  for (int64_t d : dims) {
    int64_t w = wrap_dim("flip", d, ndim);
    KILN_CHECK(!seen[static_cast<size_t>(w)],
               "flip: dim {} appears multiple times in the list of dims [{}] (input shape {})", d,
               fmt::join(dims, ", "), shape_str(x.sizes()));
    seen[static_cast<size_t>(w)] = true;
    if (x.dim() == 0) continue;
    SymInt n = x.sym_size(w);
    TensorOptions idx = TensorOptions(kInt64).device(x.device());
    Tensor reversed;
    if (n.maybe_int()) {
      reversed = arange(*n.maybe_int() - 1, -1, -1, idx);
    } else {
      // n - 1 - i over a symbolic n (arange_symint): the count of ones minus their running sum.
      Tensor ones = full_symint({n}, 1, idx);
      reversed = sub(ones.sum(), ones.cumsum(0));
    }
    out = index_select(out, w, reversed);
  }
  // torch.flip always returns a new tensor, also when nothing was reversed.
  return out.is_same(x) ? x.clone() : out;
}

Tensor roll(const Tensor& x, Shape shifts, Shape dims, std::source_location loc) {
  CallSiteScope site(loc);
  if (dims.empty()) {
    KILN_CHECK(shifts.size() == 1,
               "roll: without dims, shifts must hold one value (it rolls the flattened tensor), "
               "got shifts [{}] for input shape {}",
               fmt::join(shifts, ", "), shape_str(x.sizes()));
    return roll(x.flatten(), std::move(shifts), {0}).view_symint(x.sym_sizes());
  }
  KILN_CHECK(shifts.size() == dims.size(),
             "roll: shifts and dimensions must align. shifts: [{}], dims: [{}] (input shape {})",
             fmt::join(shifts, ", "), fmt::join(dims, ", "), shape_str(x.sizes()));
  Tensor out = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim("roll", dims[i], std::max<int64_t>(x.dim(), 1));
    if (x.dim() == 0) continue;
    int64_t k = shifts[i];
    if (k == 0) continue;
    // Over a symbolic size n, a shift shorter than n needs no modulo of n: x[-k:] moves to the
    // front (for k < 0, x[|k|:]). The comparison is a guard of the trace (guard_size_fact)
    // instead of a read of n.
    SymInt n = x.sym_size(d);
    if (n.is_symbolic() && guard_size_fact({n, SymFact::Relation::kGt, k > 0 ? k : -k})) {
      out = cat({out.slice(d, -k, INT64_MAX), out.slice(d, 0, -k)}, d);
      continue;
    }
    int64_t size = x.size(d);
    if (size == 0) continue;
    int64_t s = ((k % size) + size) % size;
    if (s == 0) continue;
    out = cat({out.slice(d, size - s, size), out.slice(d, 0, size - s)}, d);
  }
  return out.is_same(x) ? x.clone() : out;
}

Tensor repeat(const Tensor& x, Shape sizes, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(static_cast<int64_t>(sizes.size()) >= x.dim(),
             "repeat: Number of dimensions of repeat dims can not be smaller than number of "
             "dimensions of tensor (repeats [{}], input shape {})",
             fmt::join(sizes, ", "), shape_str(x.sizes()));
  size_t lead = sizes.size() - static_cast<size_t>(x.dim());
  // [s0, s1] repeated [r0, r1] is x viewed as [1, s0, 1, s1], expanded to [r0, s0, r1, s1]
  // and merged pairwise: one copy, and expand's backward sums the tiles.
  SymShape interleaved, expanded, out_shape;
  for (size_t i = 0; i < sizes.size(); ++i) {
    KILN_CHECK(sizes[i] >= 0, "repeat: Trying to create tensor with negative dimension {}: [{}]",
               sizes[i], fmt::join(sizes, ", "));
    SymInt s = i < lead ? SymInt(1) : x.sym_size(static_cast<int64_t>(i - lead));
    interleaved.insert(interleaved.end(), {1, s});
    expanded.insert(expanded.end(), {sizes[i], s});
    out_shape.push_back(sizes[i] * s);
  }
  // clone, not reshape: the result must never share x's storage (reshape of an expanded size-1
  // dim can be a view).
  return x.reshape_symint(interleaved).expand_symint(expanded).clone().view_symint(out_shape);
}

}  // namespace kiln
