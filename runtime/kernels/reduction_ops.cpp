// Reductions over dims: sum and mean.
//
// Strategy: view the input as [kept..., reduced...]. When the reduced dims are innermost in
// memory each output is a contiguous row reduction (blocked, several accumulators); when they
// are outermost each input row is added into a vector of accumulators (vectorized across the
// kept elements). Any other layout is first copied into the first form. Float32 and the half
// types accumulate in double, which keeps sums of millions of elements accurate to float
// rounding without a pairwise tree.
#include <algorithm>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/error.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/thread_pool.h"

namespace kiln {
namespace {

// The reduced-dim mask after wrapping; an empty list means every dim.
std::vector<bool> reduced_mask(const OpDef& op, const ReduceAttrs& a, int64_t ndim) {
  std::vector<bool> mask(static_cast<size_t>(ndim), a.dims.empty());
  for (int64_t d : a.dims) {
    int64_t w = wrap_dim(op.name, d, ndim);
    if (ndim == 0) continue;
    KILN_CHECK(!mask[static_cast<size_t>(w)], "{}: dim {} appears multiple times in dims {}",
               op.name, w, shape_str(a.dims));
    mask[static_cast<size_t>(w)] = true;
  }
  return mask;
}

std::vector<OutputGeometry> reduce_shape(const OpDef& op, std::span<const MetaRef> inputs,
                                         const void* attrs) {
  const auto& a = attrs_as<ReduceAttrs>(attrs);
  const MetaRef& x = inputs[0];
  auto ndim = static_cast<int64_t>(x.sizes.size());
  std::vector<bool> mask = reduced_mask(op, a, ndim);
  Shape out;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!mask[static_cast<size_t>(d)]) {
      out.push_back(x.sizes[d]);
    } else if (a.keepdim) {
      out.push_back(1);
    }
  }
  return {OutputGeometry{std::move(out)}};
}

DType sum_dtype(const OpDef&, std::span<const MetaRef> inputs, const void*, size_t) {
  return is_floating(inputs[0].dtype) ? inputs[0].dtype : kInt64;
}

DType mean_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  DType t = inputs[0].dtype;
  KILN_CHECK(is_floating(t),
             "{}: could not infer output dtype. Input dtype must be floating point, got {}",
             op.name, t);
  return t;
}

template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Sum of a contiguous run with independent accumulators, so the loop vectorizes without
// reassociating a single dependency chain.
template <class T>
acc_t<T> sum_contiguous(const T* x, int64_t n) {
  using A = acc_t<T>;
  constexpr int kLanes = 16;
  A acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j)
      acc[j] += static_cast<A>(x[i + j]);
  }
  A total = 0;
  for (; i < n; ++i)
    total += static_cast<A>(x[i]);
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j)
      acc[j] += acc[j + w];
  }
  return total + acc[0];
}

constexpr int64_t kReduceGrain = 32768;

// out[o] = scale * sum_r x[o * r_size + r], x contiguous [outer, r_size].
template <class T>
void reduce_rows(const T* x, T* out, int64_t outer, int64_t r_size, double scale) {
  using A = acc_t<T>;
  if (outer == 1 && r_size >= 2 * kReduceGrain && get_num_threads() > 1) {
    int chunks = get_num_threads();
    std::vector<A> partial(static_cast<size_t>(chunks), A(0));
    int64_t step = (r_size + chunks - 1) / chunks;
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t lo = c * step, hi = std::min(r_size, lo + step);
        if (lo < hi) partial[static_cast<size_t>(c)] = sum_contiguous(x + lo, hi - lo);
      }
    });
    A total = 0;
    for (A p : partial)
      total += p;
    out[0] = static_cast<T>(static_cast<double>(total) * scale);
    return;
  }
  int64_t grain = std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(r_size, 1));
  parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      A s = sum_contiguous(x + o * r_size, r_size);
      if constexpr (std::is_floating_point_v<T>) {
        out[o] = static_cast<T>(static_cast<double>(s) * scale);
      } else {
        out[o] = static_cast<T>(s);
      }
    }
  });
}

// out[k] = scale * sum_r x[r * k_size + k], x contiguous [r_size, k_size].
template <class T>
void reduce_columns(const T* x, T* out, int64_t r_size, int64_t k_size, double scale) {
  using A = acc_t<T>;
  int64_t grain = std::max<int64_t>(64, kReduceGrain / std::max<int64_t>(r_size, 1));
  parallel_for(0, k_size, grain, [&](int64_t b, int64_t e) {
    constexpr int64_t kBlock = 1024;  // accumulators stay in L1 while rows stream past
    A acc[kBlock];
    for (int64_t k0 = b; k0 < e; k0 += kBlock) {
      int64_t n = std::min(kBlock, e - k0);
      std::fill(acc, acc + n, A(0));
      for (int64_t r = 0; r < r_size; ++r) {
        const T* row = x + r * k_size + k0;
        for (int64_t j = 0; j < n; ++j)
          acc[j] += static_cast<A>(row[j]);
      }
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (std::is_floating_point_v<T>) {
          out[k0 + j] = static_cast<T>(static_cast<double>(acc[j]) * scale);
        } else {
          out[k0 + j] = static_cast<T>(acc[j]);
        }
      }
    }
  });
}

template <bool kMean>
void sum_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                const void* attrs) {
  const auto& a = attrs_as<ReduceAttrs>(attrs);
  const Tensor& out = outputs[0];
  // Compute in a type the loops support: half types in float, integers and bool in int64.
  DType compute =
      is_floating(out.dtype()) && element_size(out.dtype()) == 2 ? kFloat32 : out.dtype();
  Tensor x = inputs[0].dtype() == compute ? inputs[0] : inputs[0].to(compute);
  Tensor result = out.dtype() == compute ? out : empty_tensor(out.sizes(), compute, out.device());

  int64_t ndim = x.dim();
  std::vector<bool> mask = reduced_mask(op, a, ndim);
  Shape kept, reduced;
  int64_t kept_numel = 1, reduced_numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (mask[static_cast<size_t>(d)]) {
      reduced.push_back(d);
      reduced_numel *= x.size(d);
    } else {
      kept.push_back(d);
      kept_numel *= x.size(d);
    }
  }
  double scale = kMean ? 1.0 / static_cast<double>(reduced_numel) : 1.0;
  if (kMean && reduced_numel == 0) scale = std::numeric_limits<double>::quiet_NaN();

  // Reduced dims first in memory order on a contiguous input: column form.
  bool reduced_outer =
      x.is_contiguous() && std::all_of(reduced.begin(), reduced.end(), [&](int64_t d) {
        return d < static_cast<int64_t>(reduced.size());
      });
  auto run = [&]<class T>() {
    T* dst = result.data_ptr<T>();
    if (kept_numel == 0) return;
    if (reduced_outer && !reduced.empty() && !kept.empty()) {
      reduce_columns<T>(x.data_ptr<T>(), dst, reduced_numel, kept_numel, scale);
      return;
    }
    Shape order = kept;
    order.insert(order.end(), reduced.begin(), reduced.end());
    Tensor rows = x.permute(order).contiguous();
    reduce_rows<T>(rows.data_ptr<T>(), dst, kept_numel, reduced_numel, scale);
  };
  switch (compute) {
    case kFloat32:
      run.template operator()<float>();
      break;
    case kFloat64:
      run.template operator()<double>();
      break;
    default:
      run.template operator()<int64_t>();
      break;
  }
  if (!result.is_same(out)) out.copy_(result);
}

}  // namespace

void register_reduction_ops(OpTable& table) {
  OpDef& sum = table.add<ReduceAttrs>("sum", {"self"}, kReduction, "ReduceAttrs");
  sum.shape = reduce_shape;
  sum.dtype = sum_dtype;
  sum.compute[static_cast<int>(DispatchKey::CPU)] = sum_kernel<false>;

  OpDef& mean = table.add<ReduceAttrs>("mean", {"self"}, kReduction, "ReduceAttrs");
  mean.shape = reduce_shape;
  mean.dtype = mean_dtype;
  mean.compute[static_cast<int>(DispatchKey::CPU)] = sum_kernel<true>;
}

}  // namespace kiln
