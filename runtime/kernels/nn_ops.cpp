// The normalization op family: softmax, log_softmax and layer_norm, each a table entry with a
// fused CPU kernel that works one contiguous row at a time, rows split across the thread pool.
// A row (a few KB) stays in L1 between the passes, so the input is read from memory once and
// the output written once:
//   softmax      pass 1 max; pass 2 out = exp(x - max) and its sum; pass 3 out *= 1 / sum
//   log_softmax  pass 1 max; pass 2 sum of exp(x - max); pass 3 out = x - max - log(sum)
//   layer_norm   pass 1 mean; pass 2 sum of squared deviations; pass 3 normalize and affine
// Half types compute in float32. A reduced dim that is not innermost is moved there by a copy.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/base/error.h"
#include "kiln/base/pointwise_math.h"
#include "kiln/base/thread_pool.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/exp_sum_vec.h"
#include "kiln/runtime/kernels/float_loop_clones.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/kernels/nn_registry.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/reduction_vec.h"
#include "kiln/runtime/kernels/row_kernels.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

constexpr int64_t kGrain = 32768;  // elements per parallel chunk at least

// The row max (NaN if the row has one: every output is then NaN, as torch).
template <class T>
T row_max(const T* x, int64_t n) {
  return extreme_run<T, true>(x, n, -std::numeric_limits<T>::infinity());
}

// out[i] = exp(x[i] - m): a plain loop over the vectorizable math::exp_, compute bound, hence
// the AVX-512 clone (Note [Multiversioned float loops]).
template <class T>
KILN_FLOAT_LOOP_CLONES void exp_shifted(const T* x, T m, int64_t n, T* out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = math::exp_(x[i] - m);
}

// Sum of exp(x - m) over the row, for float32 in sum_exp_shifted's lanes (Note [Table-driven exp
// for sums], exp_sum_vec.cpp). m is the row max: where it is not finite, the row holds a NaN or
// +inf, or is all -inf, and the sum is NaN, so that every output is NaN as torch's is.
template <class T>
double row_sum_exp(const T* x, T m, int64_t n) {
  if (!std::isfinite(m)) return std::numeric_limits<double>::quiet_NaN();
  if constexpr (std::is_same_v<T, float>) {
    return sum_exp_shifted(x, n, m).sum;
  } else {
    double total = 0;
    for (int64_t i = 0; i < n; ++i)
      total += std::exp(x[i] - m);
    return total;
  }
}

template <class T, bool kLog>
void softmax_rows(const T* x, T* out, int64_t rows, int64_t n) {
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * n;
      T* o = out + r * n;
      T m = row_max(xr, n);
      // A NaN anywhere makes every output NaN through exp(NaN - m); all -inf gives NaN, as torch.
      if constexpr (kLog) {
        auto shift = static_cast<T>(static_cast<double>(m) + std::log(row_sum_exp(xr, m, n)));
        for (int64_t i = 0; i < n; ++i)
          o[i] = xr[i] - shift;
      } else {
        exp_shifted(xr, m, n, o);
        double sum = 0;
        for (int64_t k = 0; k < n; k += 1024)
          sum += block_sum<T, false>(o + k, std::min<int64_t>(1024, n - k), T(0));
        auto inv = static_cast<T>(1.0 / sum);
        for (int64_t i = 0; i < n; ++i)
          o[i] *= inv;
      }
    }
  });
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> softmax_shape(const OpDef& op, std::span<const Ref> inputs,
                                                  const void* attrs) {
  wrap_dim(op.name, attrs_as<SoftmaxAttrs>(attrs).dim,
           static_cast<int64_t>(inputs[0].sizes.size()));
  return {
      rules::GeometryOf<Ref>{rules::SizesOf<Ref>(inputs[0].sizes.begin(), inputs[0].sizes.end())}};
}

DType floating_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  DType t = inputs[0].dtype;
  KILN_CHECK(is_floating(t), "{}: expected a floating point input, got {} (shape {})", op.name, t,
             shape_str(inputs[0].sizes));
  return t;
}

template <bool kLog>
void softmax_kernel(const OpDef& op, std::span<const Tensor> outputs,
                    std::span<const Tensor> inputs, const void* attrs) {
  const Tensor& in = inputs[0];
  int64_t dim = wrap_dim(op.name, attrs_as<SoftmaxAttrs>(attrs).dim, in.dim());
  over_rows(outputs.first(1), in, dim, [&]<class T>(DType compute, std::vector<Tensor>& res) {
    Tensor x = rows_of(in, compute, dim);
    int64_t n = x.dim() == 0 ? 1 : x.size(x.dim() - 1);
    softmax_rows<T, kLog>(x.data_ptr<T>(), res[0].data_ptr<T>(), x.numel() / n, n);
  });
}

// ---- layer_norm ----

// normalized_shape is integers: the normalized dims of a symbolic input must be those integers.
template <class Ref>
std::vector<rules::GeometryOf<Ref>> layer_norm_shape(const OpDef& op, std::span<const Ref> inputs,
                                                     const void* attrs) {
  const auto& a = attrs_as<LayerNormAttrs>(attrs);
  size_t expected = 1 + (a.has_weight ? 1 : 0) + (a.has_bias ? 1 : 0);
  KILN_CHECK(inputs.size() == expected,
             "{}: expected {} inputs (has_weight={}, has_bias={}), got {}", op.name, expected,
             a.has_weight, a.has_bias, inputs.size());
  const auto& xs = inputs[0].sizes;
  const Shape& ns = a.normalized_shape;
  auto same = [](int64_t n, const auto& size) { return size == n; };
  KILN_CHECK(!ns.empty(), "{}: normalized_shape must have at least one dim", op.name);
  bool fits =
      ns.size() <= xs.size() &&
      std::equal(ns.begin(), ns.end(), xs.end() - static_cast<std::ptrdiff_t>(ns.size()), same);
  KILN_CHECK(fits,
             "{}: Given normalized_shape={}, expected input with shape [*, {}], but got input of "
             "size {}",
             op.name, shape_str(ns), fmt::join(ns, ", "), shape_str(xs));
  for (size_t i = 1; i < inputs.size(); ++i) {
    const char* what = (i == 1 && a.has_weight) ? "weight" : "bias";
    KILN_CHECK(
        std::equal(ns.begin(), ns.end(), inputs[i].sizes.begin(), inputs[i].sizes.end(), same),
        "{}: expected {} of shape {} (normalized_shape), but got {}", op.name, what, shape_str(ns),
        shape_str(inputs[i].sizes));
    KILN_CHECK(is_floating(inputs[i].dtype), "{}: expected a floating point {}, got {}", op.name,
               what, inputs[i].dtype);
  }
  return {rules::GeometryOf<Ref>{rules::SizesOf<Ref>(xs.begin(), xs.end())}};
}

template <class T>
void layer_norm_rows(const T* x, T* out, const T* w, const T* b, int64_t rows, int64_t n,
                     double eps) {
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const T* xr = x + r * n;
      T* o = out + r * n;
      // Blocks of 1024 in T lanes, combined in double (block_sum): rows stay accurate.
      double sum = 0;
      for (int64_t k = 0; k < n; k += 1024)
        sum += block_sum<T, false>(xr + k, std::min<int64_t>(1024, n - k), T(0));
      auto mean = static_cast<T>(sum / static_cast<double>(n));
      double m2 = 0;
      for (int64_t k = 0; k < n; k += 1024)
        m2 += block_sum<T, true>(xr + k, std::min<int64_t>(1024, n - k), mean);
      auto rstd = static_cast<T>(1.0 / std::sqrt(m2 / static_cast<double>(n) + eps));
      if (w != nullptr && b != nullptr) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = (xr[i] - mean) * rstd * w[i] + b[i];
      } else if (w != nullptr) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = (xr[i] - mean) * rstd * w[i];
      } else if (b != nullptr) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = (xr[i] - mean) * rstd + b[i];
      } else {
        for (int64_t i = 0; i < n; ++i)
          o[i] = (xr[i] - mean) * rstd;
      }
    }
  });
}

void layer_norm_kernel(const OpDef&, std::span<const Tensor> outputs,
                       std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<LayerNormAttrs>(attrs);
  const Tensor& in = inputs[0];
  int64_t n = shape_numel(a.normalized_shape);
  int64_t last = in.dim() - 1;
  DType compute = row_compute_dtype(in.dtype());
  auto prep = [&](const Tensor& t) {
    return (t.dtype() == compute ? t : t.to(compute)).contiguous();
  };
  Tensor w = a.has_weight ? prep(inputs[1]) : Tensor();
  Tensor b = a.has_bias ? prep(inputs[a.has_weight ? 2 : 1]) : Tensor();
  over_rows(outputs.first(1), in, last, [&]<class T>(DType, std::vector<Tensor>& res) {
    if (n == 0) return;
    Tensor x = rows_of(in, compute, last);
    layer_norm_rows<T>(x.data_ptr<T>(), res[0].data_ptr<T>(),
                       w.defined() ? w.data_ptr<T>() : nullptr,
                       b.defined() ? b.data_ptr<T>() : nullptr, x.numel() / n, n, a.eps);
  });
}

}  // namespace

void register_nn_ops(OpTable& table) {
  auto softmax_like = [&](const char* name, ComputeKernel kernel) {
    OpDef& op = table.add<SoftmaxAttrs>(name, {"self"}, 0, "SoftmaxAttrs");
    rules::set_shape_rules(op, softmax_shape<MetaRef>, softmax_shape<SymMetaRef>);
    op.dtype = floating_dtype;
    op.compute[static_cast<int>(DispatchKey::CPU)] = kernel;
  };
  softmax_like("softmax", softmax_kernel<false>);
  softmax_like("log_softmax", softmax_kernel<true>);

  OpDef& ln =
      table.add<LayerNormAttrs>("layer_norm", {"input", "weight", "bias"}, 0, "LayerNormAttrs");
  ln.variadic = true;  // (input, [weight], [bias]): see LayerNormAttrs
  rules::set_shape_rules(ln, layer_norm_shape<MetaRef>, layer_norm_shape<SymMetaRef>);
  ln.dtype = floating_dtype;
  ln.compute[static_cast<int>(DispatchKey::CPU)] = layer_norm_kernel;

  register_nn_loss_ops(table);
  register_nn_backward_ops(table);
}

}  // namespace kiln
