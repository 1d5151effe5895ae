// Reductions over dims: sum, mean, prod, amax, amin, var, logsumexp. Each is a reducer plugged
// into the shared strategy of reduction_strategy.h (row form / column form). Floating inputs
// are reduced in blocks of about a thousand elements (or 32 rows in the column form) in their
// own type, and the block results merged in double (prod multiplies in double throughout);
// this keeps reductions of millions of float32 elements accurate to float rounding without a
// pairwise tree, at full SIMD width.
#include <cmath>
#include <limits>

#include "kiln/runtime/kernels/exp_sum_vec.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/kernels/reduction_registry.h"
#include "kiln/runtime/kernels/reduction_strategy.h"
#include "kiln/runtime/kernels/reduction_vec.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

std::vector<bool> reduced_mask(const OpDef& op, const Shape& dims, int64_t ndim) {
  std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(op.name, d, ndim);
    if (ndim == 0) continue;
    KILN_CHECK(!mask[static_cast<size_t>(w)], "{}: dim {} appears multiple times in dims {}",
               op.name, w, shape_str(dims));
    mask[static_cast<size_t>(w)] = true;
  }
  return mask;
}

// Over either size type (Note [Symbolic sizes]).
template <class Ref>
rules::GeometryOf<Ref> reduced_geometry_of(const OpDef& op, const Ref& x, const Shape& dims,
                                           bool keepdim) {
  auto ndim = static_cast<int64_t>(x.sizes.size());
  std::vector<bool> mask = reduced_mask(op, dims, ndim);
  rules::SizesOf<Ref> out;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!mask[static_cast<size_t>(d)]) {
      out.push_back(x.sizes[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return {std::move(out)};
}

OutputGeometry reduce_geometry(const OpDef& op, ShapeRef sizes, const Shape& dims, bool keepdim) {
  return reduced_geometry_of(op, MetaRef{sizes, {}, 0, kFloat32, kCPU}, dims, keepdim);
}

ReducePlan plan_reduction(const OpDef& op, const Tensor& x, const Shape& dims) {
  ReducePlan p;
  int64_t ndim = x.dim();
  std::vector<bool> mask = reduced_mask(op, dims, ndim);
  for (int64_t d = 0; d < ndim; ++d) {
    if (mask[static_cast<size_t>(d)]) {
      p.reduced.push_back(d);
      p.reduced_numel *= x.size(d);
    } else {
      p.kept.push_back(d);
      p.kept_numel *= x.size(d);
    }
  }
  auto nred = static_cast<int64_t>(p.reduced.size());
  p.reduced_outer = x.is_contiguous() && std::all_of(p.reduced.begin(), p.reduced.end(),
                                                     [&](int64_t d) { return d < nred; });
  return p;
}

void check_nonempty_reduction(const OpDef& op, const Tensor& x, const ReducePlan& p) {
  if (p.kept_numel == 0) return;
  for (int64_t d : p.reduced) {
    KILN_CHECK(x.size(d) != 0,
               "{}(): Expected reduction dim {} to have non-zero size (input shape {})", op.name, d,
               shape_str(x.sizes()));
  }
}

DType reduction_compute_dtype(DType t) {
  if (is_floating(t)) return element_size(t) == 2 ? kFloat32 : t;
  return kInt64;
}

namespace {

template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
constexpr int kLanes = 16;

// ---- sum and mean ----

template <class T>
struct SumReducer {
  static constexpr bool kColumns = true;
  using Acc = acc_t<T>;
  double scale = 1;  // mean: 1/n (NaN for n = 0)
  Acc identity() const { return 0; }
  void step(Acc& a, T x) const { a += static_cast<Acc>(x); }
  Acc merge(const Acc& a, const Acc& b) const { return a + b; }
  // Floating types: blocks of 1024 summed in T lanes (block_sum), combined in double; the
  // column form sums groups of 32 rows in T. Integers: independent int64 accumulators.
  static constexpr int64_t kPartialRows = std::is_floating_point_v<T> ? 32 : 0;
  Acc run(const T* x, int64_t n) const {
    if constexpr (std::is_floating_point_v<T>) {
      double total = 0;
      for (int64_t b = 0; b < n; b += 1024)
        total += block_sum<T, false>(x + b, std::min<int64_t>(1024, n - b), T(0));
      return total;
    } else {
      Acc acc[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes) {
        for (int j = 0; j < kLanes; ++j)
          acc[j] += static_cast<Acc>(x[i + j]);
      }
      Acc total = 0;
      for (; i < n; ++i)
        total += static_cast<Acc>(x[i]);
      for (Acc a : acc)
        total += a;
      return total;
    }
  }
  T finish(const Acc& a, int64_t) const {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(static_cast<double>(a) * scale);
    } else {
      return static_cast<T>(a);
    }
  }
};

// ---- prod (integers multiply as unsigned: wrap-around as torch, without overflow UB) ----

template <class T>
struct ProdReducer {
  static constexpr bool kColumns = true;
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  Acc identity() const { return 1; }
  void step(Acc& a, T x) const { a *= static_cast<Acc>(x); }
  Acc merge(const Acc& a, const Acc& b) const { return a * b; }
  Acc run(const T* x, int64_t n) const {
    constexpr int kP = 8;
    Acc acc[kP];
    std::fill(acc, acc + kP, Acc(1));
    int64_t i = 0;
    for (; i + kP <= n; i += kP) {
      for (int j = 0; j < kP; ++j)
        acc[j] *= static_cast<Acc>(x[i + j]);
    }
    Acc total = 1;
    for (; i < n; ++i)
      total *= static_cast<Acc>(x[i]);
    for (Acc a : acc)
      total *= a;
    return total;
  }
  T finish(const Acc& a, int64_t) const { return static_cast<T>(a); }
};

// ---- amax and amin (NaN propagates, as torch) ----

template <class T, bool kMax>
struct ExtremumReducer {
  static constexpr bool kColumns = true;
  using Acc = T;
  static T better(T a, T b) {  // the winner of a and b, NaN-blind (vectorizes to max/min)
    if constexpr (kMax) {
      return b > a ? b : a;
    } else {
      return b < a ? b : a;
    }
  }
  Acc identity() const {
    if constexpr (std::is_floating_point_v<T>) {
      return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    } else {
      return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    }
  }
  void step(Acc& a, T x) const {
    if (x != x) {
      a = x;
    } else if (a == a) {
      a = better(a, x);
    }
  }
  Acc merge(const Acc& a, const Acc& b) const {
    if (a != a) return a;
    if (b != b) return b;
    return better(a, b);
  }
  Acc run(const T* x, int64_t n) const { return extreme_run<T, kMax>(x, n, identity()); }
  T finish(const Acc& a, int64_t) const { return a; }
};

// ---- var: per block of kBlock elements the moments about the block's first element (one
// pass; the deviations are small, so M2 = s2 - s1^2 / n does not cancel), blocks merged with
// Chan's formula in double ----

struct Moments {
  double n = 0, mean = 0, m2 = 0;
};

inline Moments merge_moments(const Moments& a, const Moments& b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  double n = a.n + b.n;
  double delta = b.mean - a.mean;
  return {n, a.mean + delta * (b.n / n), a.m2 + b.m2 + delta * delta * (a.n * b.n / n)};
}

template <class T>
struct VarReducer {
  static constexpr bool kColumns = false;
  static constexpr int64_t kBlock = 2048;
  using Acc = Moments;
  double correction = 1;
  Acc merge(const Acc& a, const Acc& b) const { return merge_moments(a, b); }
  static Moments block(const T* x, int64_t n) {
    double s1 = 0, s2 = 0;
    block_moments<T>(x, n, x[0], s1, s2);
    auto nd = static_cast<double>(n);
    return {nd, static_cast<double>(x[0]) + s1 / nd, std::max(s2 - s1 * s1 / nd, 0.0)};
  }
  Acc run(const T* x, int64_t n) const {
    Moments m;
    for (int64_t b = 0; b < n; b += kBlock)
      m = merge_moments(m, block(x + b, std::min(kBlock, n - b)));
    return m;
  }
  T finish(const Acc& a, int64_t) const {
    return static_cast<T>(a.m2 / std::max(0.0, a.n - correction));
  }
};

// ---- logsumexp: blocks merged by rescaling to the larger max. -inf everywhere stays -inf; +inf
// gives +inf; NaN propagates ----

struct LseAcc {
  double m = -std::numeric_limits<double>::infinity();
  double s = 0;
};

// The unit of the merge. sum_exp_shifted keeps a long block accurate by itself (float32 lanes
// of 32 terms, added in double), and a larger block spreads the per-call work, the lanes' final
// sum and the max across vector lanes, over more elements.
constexpr int64_t kLogSumExpBlock = 8192;

// Note [One pass for logsumexp]
// Per block, the careful form finds the block's max and then sums exp(x - max) over the cached
// block. For float32 that max pass and the per-block merge (a libm exp) cost as much as a third
// of the exp terms. After the first block, the float32 run therefore sums each block's terms
// against ref, the largest max merged so far, in one pass that also finds the block's max
// (sum_exp_shifted). Those sums need no rescaling: they add up in `pending`, in double. A block
// whose max exceeds ref by more than kExpSumMaxShift (some term could overflow) is summed again
// against its own max, which that pass found; one that holds NaN or +inf (its sum is NaN) is
// done the careful way. Terms under exp(-87) are dropped, which a sum that holds ref's own term,
// 1, does not feel. Data that rises steadily reads each block twice, as the careful form does.
template <class T>
struct LogSumExpReducer {
  static constexpr bool kColumns = false;
  static constexpr int64_t kBlock = kLogSumExpBlock;
  using Acc = LseAcc;
  Acc merge(const Acc& a, const Acc& b) const {
    if (std::isnan(a.m) || std::isnan(b.m)) return {std::nan(""), 1};
    double m = std::max(a.m, b.m);
    if (std::isinf(m)) return {m, m > 0 ? 1.0 : 0.0};
    // One of the two scalings is exp(0) = 1 exactly: only the other side's is computed, one libm
    // exp per block instead of two.
    if (a.m < m) return {m, a.s * std::exp(a.m - m) + b.s};
    return {m, a.s + (b.m < m ? b.s * std::exp(b.m - m) : b.s)};
  }
  // The careful form: the block's max, then the sum of exp(x - max).
  Acc block(const T* x, int64_t n) const {
    ExtremumReducer<T, true> maxr;
    auto m = maxr.run(x, n);
    if (std::isnan(m) || std::isinf(m)) return {static_cast<double>(m), m > 0 ? 1.0 : 0.0};
    if constexpr (std::is_same_v<T, float>) {
      return {static_cast<double>(m), sum_exp_shifted(x, n, m).sum};
    } else {
      // double (integer inputs are reduced in a float type, never as T).
      double total = 0;
      for (int64_t i = 0; i < n; ++i)
        total += std::exp(static_cast<double>(x[i]) - static_cast<double>(m));
      return {static_cast<double>(m), total};
    }
  }
  Acc run(const T* x, int64_t n) const {
    Acc a;
    if constexpr (std::is_same_v<T, float>) {
      // Note [One pass for logsumexp]. The reference is a.m, a float's value, while it is finite;
      // pending holds the one-pass sums against it since a was last merged.
      double pending = 0;
      for (int64_t b = 0; b < n; b += kBlock) {
        int64_t len = std::min(kBlock, n - b);
        Acc blk;
        if (std::isfinite(a.m)) {
          auto ref = static_cast<float>(a.m);
          ExpSum e = sum_exp_shifted(x + b, len, ref);
          // A NaN sum means a NaN or +inf element. Otherwise e.max is finite or -inf, and the
          // difference is the one the terms were computed from (ref + 64 could round up).
          if (!std::isnan(e.sum) && e.max - ref <= kExpSumMaxShift) {
            pending += e.sum;
            continue;
          }
          blk = std::isnan(e.sum) ? block(x + b, len)
                                  : Acc{e.max, sum_exp_shifted(x + b, len, e.max).sum};
          a = merge(a, {a.m, pending});
          pending = 0;
        } else {
          blk = block(x + b, len);
        }
        a = merge(a, blk);
      }
      if (std::isfinite(a.m)) a = merge(a, {a.m, pending});
    } else {
      for (int64_t b = 0; b < n; b += kBlock)
        a = merge(a, block(x + b, std::min(kBlock, n - b)));
    }
    return a;
  }
  T finish(const Acc& a, int64_t) const {
    if (std::isnan(a.m) || std::isinf(a.m)) return static_cast<T>(a.m);
    return static_cast<T>(a.m + std::log(a.s));
  }
};

// ---- rules and kernels ----

template <class Ref>
std::vector<rules::GeometryOf<Ref>> reduce_shape(const OpDef& op, std::span<const Ref> inputs,
                                                 const void* attrs) {
  const auto& a = attrs_as<ReduceAttrs>(attrs);
  return {reduced_geometry_of(op, inputs[0], a.dims, a.keepdim)};
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> var_shape(const OpDef& op, std::span<const Ref> inputs,
                                              const void* attrs) {
  const auto& a = attrs_as<VarAttrs>(attrs);
  return {reduced_geometry_of(op, inputs[0], a.dims, a.keepdim)};
}

DType int64_unless_floating(const OpDef&, std::span<const MetaRef> inputs, const void*, size_t) {
  return is_floating(inputs[0].dtype) ? inputs[0].dtype : kInt64;
}

DType same_dtype(const OpDef&, std::span<const MetaRef> inputs, const void*, size_t) {
  return inputs[0].dtype;
}

DType float_only_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  DType t = inputs[0].dtype;
  KILN_CHECK(is_floating(t),
             "{}: could not infer output dtype. Input dtype must be floating point, got {}",
             op.name, t);
  return t;
}

DType float_or_default_dtype(const OpDef&, std::span<const MetaRef> inputs, const void*, size_t) {
  return is_floating(inputs[0].dtype) ? inputs[0].dtype : kDefaultFloat;
}

// One kernel for every reducer: `make<T>(plan)` builds the reducer for element type T.
template <class Attrs, template <class> class Reducer, bool kNeedsNonEmpty = false>
void reduce_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                   const void* attrs) {
  const auto& a = attrs_as<Attrs>(attrs);
  const Tensor& out = outputs[0];
  DType compute = reduction_compute_dtype(out.dtype());
  with_compute_dtype(inputs[0], out, compute, [&]<class T>(const Tensor& x, const Tensor& res) {
    ReducePlan p = plan_reduction(op, x, a.dims);
    if constexpr (kNeedsNonEmpty) check_nonempty_reduction(op, x, p);
    Reducer<T> r;
    if constexpr (std::is_same_v<Attrs, VarAttrs>) {
      r.correction = a.correction;
    } else if constexpr (requires { r.scale; }) {
      if (op.name == "mean") {
        r.scale = p.reduced_numel == 0 ? std::numeric_limits<double>::quiet_NaN()
                                       : 1.0 / static_cast<double>(p.reduced_numel);
      }
    }
    run_reduction<T>(r, x, res.data_ptr<T>(), p);
  });
}

template <class T>
using AmaxReducer = ExtremumReducer<T, true>;
template <class T>
using AminReducer = ExtremumReducer<T, false>;

OpDef& add_reduction(OpTable& table, const char* name, ComputeKernel kernel, DTypeRule dtype) {
  OpDef& op = table.add<ReduceAttrs>(name, {"self"}, kReduction, "ReduceAttrs");
  rules::set_shape_rules(op, reduce_shape<MetaRef>, reduce_shape<SymMetaRef>);
  op.dtype = dtype;
  op.compute[static_cast<int>(DispatchKey::CPU)] = kernel;
  return op;
}

}  // namespace

void register_reduction_ops(OpTable& table) {
  add_reduction(table, "sum", reduce_kernel<ReduceAttrs, SumReducer>, int64_unless_floating);
  add_reduction(table, "mean", reduce_kernel<ReduceAttrs, SumReducer>, float_only_dtype);
  add_reduction(table, "prod", reduce_kernel<ReduceAttrs, ProdReducer>, int64_unless_floating);
  add_reduction(table, "amax", reduce_kernel<ReduceAttrs, AmaxReducer, true>, same_dtype);
  add_reduction(table, "amin", reduce_kernel<ReduceAttrs, AminReducer, true>, same_dtype);
  add_reduction(table, "logsumexp", reduce_kernel<ReduceAttrs, LogSumExpReducer>,
                float_or_default_dtype);

  OpDef& var = table.add<VarAttrs>("var", {"self"}, kReduction, "VarAttrs");
  rules::set_shape_rules(var, var_shape<MetaRef>, var_shape<SymMetaRef>);
  var.dtype = float_only_dtype;
  var.compute[static_cast<int>(DispatchKey::CPU)] = reduce_kernel<VarAttrs, VarReducer>;

  register_index_reduction_ops(table);
}

}  // namespace kiln
