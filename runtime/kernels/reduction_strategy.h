// The strategy every reduction over dims shares (sum, mean, prod, amax, amin, var, logsumexp).
//
// View the input as [kept..., reduced...]. When the reduced dims are outermost in a contiguous
// input and the reducer can take one element at a time, each input row is folded into a vector
// of accumulators (vectorized across the kept elements): the column form. Otherwise the input
// is brought into [kept, reduced] row-major order (no copy when it already is) and each output
// reduces one contiguous row with the reducer's own blocked loop: the row form. A single huge
// row is split across the thread pool and the partial results merged in order.
//
// A reducer R over element type T provides:
//   using Acc;                                  // the accumulator
//   Acc run(const T* x, int64_t n) const;       // a contiguous run (n may be 0)
//   Acc merge(const Acc& a, const Acc& b) const;  // a then b
//   T finish(const Acc& a, int64_t n) const;    // the output value for n reduced elements
// and, for the column form (kColumns = true), Acc identity() const; void step(Acc&, T) const.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/base/thread_pool.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_kernels.h"

namespace kiln {

// The reduced-dim mask after wrapping; an empty list means every dim. Throws naming the op for
// a dim out of range or repeated.
std::vector<bool> reduced_mask(const OpDef& op, const Shape& dims, int64_t ndim);

// The output geometry of a reduction of `sizes` over `dims` (empty: all).
OutputGeometry reduce_geometry(const OpDef& op, ShapeRef sizes, const Shape& dims, bool keepdim);

struct ReducePlan {
  Shape kept, reduced;  // input dims, in order
  int64_t kept_numel = 1, reduced_numel = 1;
  bool reduced_outer = false;  // contiguous input with the reduced dims leading
};
ReducePlan plan_reduction(const OpDef& op, const Tensor& x, const Shape& dims);

// Throws "op(): Expected reduction dim d to have non-zero size" (torch's wording) when a
// reduced dim of a non-empty output is empty: for reductions without an identity.
void check_nonempty_reduction(const OpDef& op, const Tensor& x, const ReducePlan& p);

// The compute dtype of a reduction over dtype t: half types in float32, integers and bool in
// int64 (the kernels instantiate float, double and int64_t).
DType reduction_compute_dtype(DType t);

inline constexpr int64_t kReduceGrain = 32768;

// f.template operator()<T>() with T the C++ type of a compute dtype of reduction_compute_dtype
// (float, double, or int64_t for the integers).
template <class F>
void with_compute_type(DType compute, F&& f) {
  switch (compute) {
    case kFloat32:
      return f.template operator()<float>();
    case kFloat64:
      return f.template operator()<double>();
    default:
      return f.template operator()<int64_t>();
  }
}

// The row form of an index reduction (max/min with indices, argmax/argmin) that the CPU and
// CUDA kernels share: the input in reduction_compute_dtype with the reduced dim moved last and
// made contiguous, `outer` rows of `r` elements (no dim: every element in one row). Rows are in
// the output's order.
struct IndexReductionRows {
  Tensor rows;
  int64_t outer = 1;
  int64_t r = 1;
  DType compute = kFloat32;
};
// `dim` is the op's optional dim (wrapped here); empty rows give outer or r 0.
IndexReductionRows index_reduction_rows(const OpDef& op, const Tensor& input,
                                        std::optional<int64_t> dim);
// Where an index reduction writes its values: the values output itself when it has the compute
// dtype, else a temporary of the compute dtype that the caller copies back (undefined without a
// values output).
Tensor index_reduction_values(DType compute, const Tensor* values);

template <class T, class R>
void reduce_row_form(const R& r, const T* x, T* out, int64_t outer, int64_t r_size) {
  using Acc = typename R::Acc;
  if (outer == 1 && r_size >= 2 * kReduceGrain && get_num_threads() > 1 && !in_parallel_region()) {
    int chunks = get_num_threads();
    std::vector<Acc> partial(static_cast<size_t>(chunks), r.run(x, 0));
    int64_t step = (r_size + chunks - 1) / chunks;
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t lo = std::min(r_size, c * step), hi = std::min(r_size, lo + step);
        partial[static_cast<size_t>(c)] = r.run(x + lo, hi - lo);
      }
    });
    Acc total = partial[0];
    for (size_t c = 1; c < partial.size(); ++c)
      total = r.merge(total, partial[c]);
    out[0] = r.finish(total, r_size);
    return;
  }
  int64_t grain = std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(r_size, 1));
  parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      out[o] = r.finish(r.run(x + o * r_size, r_size), r_size);
  });
}

// A reducer may declare kPartialRows > 0: the column form then combines that many rows in T
// before stepping the accumulator with the partial result (for sums, where it is exact enough).
template <class R>
constexpr int64_t partial_rows() {
  if constexpr (requires { R::kPartialRows; }) {
    return R::kPartialRows;
  } else {
    return 0;
  }
}

template <class T, class R>
void reduce_column_form(const R& r, const T* x, T* out, int64_t r_size, int64_t k_size) {
  using Acc = typename R::Acc;
  int64_t grain = std::max<int64_t>(64, kReduceGrain / std::max<int64_t>(r_size, 1));
  parallel_for(0, k_size, grain, [&](int64_t b, int64_t e) {
    constexpr int64_t kBlock = 1024;  // accumulators stay in L1 while rows stream past
    Acc acc[kBlock];  // on the stack: provably not aliasing the input, so the loop vectorizes
    for (int64_t k0 = b; k0 < e; k0 += kBlock) {
      int64_t n = std::min(kBlock, e - k0);
      std::fill(acc, acc + n, r.identity());
      if constexpr (partial_rows<R>() > 0) {
        // Groups of rows summed in T (vectorizes at full width), each group merged into Acc.
        T part[kBlock];
        for (int64_t i0 = 0; i0 < r_size; i0 += partial_rows<R>()) {
          int64_t i1 = std::min(r_size, i0 + partial_rows<R>());
          std::copy(x + i0 * k_size + k0, x + i0 * k_size + k0 + n, part);
          for (int64_t i = i0 + 1; i < i1; ++i) {
            const T* row = x + i * k_size + k0;
            for (int64_t j = 0; j < n; ++j)
              part[j] += row[j];
          }
          for (int64_t j = 0; j < n; ++j)
            r.step(acc[j], part[j]);
        }
      } else {
        for (int64_t i = 0; i < r_size; ++i) {
          const T* row = x + i * k_size + k0;
          for (int64_t j = 0; j < n; ++j)
            r.step(acc[j], row[j]);
        }
      }
      for (int64_t j = 0; j < n; ++j)
        out[k0 + j] = r.finish(acc[j], r_size);
    }
  });
}

// Reduces x (already of type T) as planned into `out`, a contiguous buffer of p.kept_numel.
template <class T, class R>
void run_reduction(const R& r, const Tensor& x, T* out, const ReducePlan& p) {
  if (p.kept_numel == 0) return;
  if constexpr (R::kColumns) {
    if (p.reduced_outer && !p.reduced.empty() && !p.kept.empty()) {
      reduce_column_form<T>(r, x.data_ptr<T>(), out, p.reduced_numel, p.kept_numel);
      return;
    }
  }
  Shape order = p.kept;
  order.insert(order.end(), p.reduced.begin(), p.reduced.end());
  Tensor rows = x.permute(order).contiguous();
  reduce_row_form<T>(r, rows.data_ptr<T>(), out, p.kept_numel, p.reduced_numel);
}

// Runs `body.template operator()<T>(x, result)` with x cast to the compute dtype and a result
// buffer of that dtype, then writes `out` (converting when its dtype differs).
template <class Body>
void with_compute_dtype(const Tensor& input, const Tensor& out, DType compute, Body&& body) {
  Tensor x = input.dtype() == compute ? input : input.to(compute);
  Tensor result = out.dtype() == compute ? out : empty_tensor(out.sizes(), compute, out.device());
  switch (compute) {
    case kFloat32:
      body.template operator()<float>(x, result);
      break;
    case kFloat64:
      body.template operator()<double>(x, result);
      break;
    default:
      body.template operator()<int64_t>(x, result);
      break;
  }
  if (!result.is_same(out)) copy_into(out, result);
}

}  // namespace kiln
