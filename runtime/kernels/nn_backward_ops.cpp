// softmax_backward, log_softmax_backward and layer_norm_backward: the fused backward kernels of
// the normalization ops, which the derivatives of nn_derivatives.cpp call when the backward is
// not itself recorded (Note [Fused normalization backward]). Internal ops: each reads a row of
// its inputs, reduces it and writes the row, where the Tensor-op formula makes five to ten
// passes over memory. The CPU kernels here work one contiguous row at a time with the rows split
// across the thread pool, like the forward kernels (nn_ops.cpp); half types compute in float32.
// The same arithmetic is written as row programs (row_programs.cpp), which the CUDA kernels are
// generated from and the program OpInfo test runs against these kernels.
#include <algorithm>
#include <cmath>

#include "kiln/base/error.h"
#include "kiln/base/pointwise_math.h"
#include "kiln/base/thread_pool.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/kernels/nn_registry.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/reduction_vec.h"
#include "kiln/runtime/kernels/row_kernels.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

constexpr int64_t kGrain = 32768;  // elements per parallel chunk at least
constexpr int64_t kBlock = 1024;   // elements summed in T lanes before the double total

// sum(f(i)) over i in [0, n): blocks of kBlock summed in 16 T lanes (a loop the compiler
// vectorizes), the blocks combined in double, as block_sum does for the forward kernels.
template <class T, class F>
double row_sum(int64_t n, F f) {
  constexpr int kLanes = 16;
  double total = 0;
  for (int64_t k = 0; k < n; k += kBlock) {
    int64_t end = std::min(n, k + kBlock);
    T lanes[kLanes] = {};
    int64_t i = k;
    for (; i + kLanes <= end; i += kLanes)
      for (int l = 0; l < kLanes; ++l)
        lanes[l] += f(i + l);
    for (; i < end; ++i)
      lanes[0] += f(i);
    for (T v : lanes)
      total += static_cast<double>(v);
  }
  return total;
}

// ---- softmax_backward, log_softmax_backward ----

// A template over the size type (Note [Symbolic sizes]).
template <class Ref>
std::vector<rules::GeometryOf<Ref>> softmax_backward_shape(const OpDef& op,
                                                           std::span<const Ref> inputs,
                                                           const void* attrs) {
  const auto &g = inputs[0].sizes, &y = inputs[1].sizes;
  KILN_CHECK(std::equal(g.begin(), g.end(), y.begin(), y.end()),
             "{}: grad_output of shape {} does not match output of shape {}", op.name, shape_str(g),
             shape_str(y));
  wrap_dim(op.name, attrs_as<SoftmaxAttrs>(attrs).dim, static_cast<int64_t>(g.size()));
  return {{rules::SizesOf<Ref>(g.begin(), g.end())}};
}

// Every input of a fused backward has the dtype of the forward's input and output.
DType same_floating_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  DType t = inputs[0].dtype;
  KILN_CHECK(is_floating(t), "{}: expected a floating point grad_output, got {} (shape {})",
             op.name, t, shape_str(inputs[0].sizes));
  for (size_t i = 1; i < inputs.size(); ++i)
    KILN_CHECK(inputs[i].dtype == t || (i == 2 && is_floating(inputs[i].dtype)),
               "{}: expected {} of dtype {} (grad_output's), got {}", op.name, op.input_names[i], t,
               inputs[i].dtype);
  return t;
}

// softmax:     dx = y * (g - sum(g * y))
// log_softmax: dx = g - exp(y) * sum(g)
// with the sum combined in double and rounded once, as the Tensor-op formula's sum.
template <class T, bool kLog>
void softmax_backward_rows(const T* g, const T* y, T* out, int64_t rows, int64_t n) {
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* gr = g + r * n;
      const T* yr = y + r * n;
      T* o = out + r * n;
      if constexpr (kLog) {
        auto s = static_cast<T>(row_sum<T>(n, [&](int64_t i) { return gr[i]; }));
        for (int64_t i = 0; i < n; ++i)
          o[i] = gr[i] - math::exp_(yr[i]) * s;
      } else {
        auto s = static_cast<T>(row_sum<T>(n, [&](int64_t i) { return gr[i] * yr[i]; }));
        for (int64_t i = 0; i < n; ++i)
          o[i] = yr[i] * (gr[i] - s);
      }
    }
  });
}

template <bool kLog>
void softmax_backward_kernel(const OpDef& op, std::span<const Tensor> outputs,
                             std::span<const Tensor> inputs, const void* attrs) {
  const Tensor& g = inputs[0];
  int64_t dim = wrap_dim(op.name, attrs_as<SoftmaxAttrs>(attrs).dim, g.dim());
  over_rows(outputs, g, dim, [&]<class T>(DType compute, std::vector<Tensor>& res) {
    Tensor gr = rows_of(g, compute, dim), yr = rows_of(inputs[1], compute, dim);
    int64_t n = g.dim() == 0 ? 1 : g.size(dim);
    softmax_backward_rows<T, kLog>(gr.data_ptr<T>(), yr.data_ptr<T>(), res[0].data_ptr<T>(),
                                   g.numel() / n, n);
  });
}

// ---- layer_norm_backward ----

// Inputs (grad_output, input, [weight]) as layer_norm's has_weight says; outputs dx and, with a
// weight, the per-element g * xhat that the engine sums into the weight's gradient.
template <class Ref>
std::vector<rules::GeometryOf<Ref>> layer_norm_backward_shape(const OpDef& op,
                                                              std::span<const Ref> inputs,
                                                              const void* attrs) {
  const auto& a = attrs_as<LayerNormAttrs>(attrs);
  size_t expected = a.has_weight ? 3 : 2;
  KILN_CHECK(inputs.size() == expected, "{}: expected {} inputs (has_weight={}), got {}", op.name,
             expected, a.has_weight, inputs.size());
  const auto &g = inputs[0].sizes, &x = inputs[1].sizes;
  KILN_CHECK(std::equal(g.begin(), g.end(), x.begin(), x.end()),
             "{}: grad_output of shape {} does not match input of shape {}", op.name, shape_str(g),
             shape_str(x));
  const Shape& ns = a.normalized_shape;
  KILN_CHECK(!ns.empty() && ns.size() <= x.size() &&
                 std::equal(ns.begin(), ns.end(), x.end() - static_cast<std::ptrdiff_t>(ns.size())),
             "{}: normalized_shape {} does not end input of shape {}", op.name, shape_str(ns),
             shape_str(x));
  if (a.has_weight) {
    KILN_CHECK(std::equal(ns.begin(), ns.end(), inputs[2].sizes.begin(), inputs[2].sizes.end()),
               "{}: expected weight of shape {} (normalized_shape), but got {}", op.name,
               shape_str(ns), shape_str(inputs[2].sizes));
  }
  std::vector<rules::GeometryOf<Ref>> out{{rules::SizesOf<Ref>(x.begin(), x.end())}};
  if (a.has_weight) out.push_back(out[0]);
  return out;
}

// Per row, with mean and rstd recomputed as the forward kernel forms them, xhat = (x - mean) *
// rstd and gx = g * w (g without a weight):
//   dx = rstd * (gx - sum(gx) / n - xhat * sum(gx * xhat) / n),  gw = g * xhat
template <class T>
void layer_norm_backward_rows(const T* g, const T* x, const T* w, T* dx, T* gw, int64_t rows,
                              int64_t n, double eps) {
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const T* gr = g + r * n;
      const T* xr = x + r * n;
      double sum = 0, m2 = 0;
      for (int64_t k = 0; k < n; k += kBlock)
        sum += block_sum<T, false>(xr + k, std::min(kBlock, n - k), T(0));
      auto mean = static_cast<T>(sum / static_cast<double>(n));
      for (int64_t k = 0; k < n; k += kBlock)
        m2 += block_sum<T, true>(xr + k, std::min(kBlock, n - k), mean);
      auto rstd = static_cast<T>(1.0 / std::sqrt(m2 / static_cast<double>(n) + eps));
      // gx goes to the output first, rounded: the sums and the final pass then read the same
      // values, so that gx - mean(gx) is exact where it should be (a row of one element has a
      // gradient of exactly 0), whichever multiply-adds the compiler fuses.
      T* o = dx + r * n;
      for (int64_t i = 0; i < n; ++i)
        o[i] = w != nullptr ? gr[i] * w[i] : gr[i];
      auto xhat = [&](int64_t i) { return (xr[i] - mean) * rstd; };
      auto mean_gx =
          static_cast<T>(row_sum<T>(n, [&](int64_t i) { return o[i]; }) / static_cast<double>(n));
      auto mean_gx_xhat = static_cast<T>(row_sum<T>(n, [&](int64_t i) { return o[i] * xhat(i); }) /
                                         static_cast<double>(n));
      for (int64_t i = 0; i < n; ++i)
        o[i] = rstd * (o[i] - mean_gx - xhat(i) * mean_gx_xhat);
      if (gw == nullptr) continue;
      T* ow = gw + r * n;
      for (int64_t i = 0; i < n; ++i)
        ow[i] = gr[i] * xhat(i);
    }
  });
}

void layer_norm_backward_kernel(const OpDef&, std::span<const Tensor> outputs,
                                std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<LayerNormAttrs>(attrs);
  const Tensor& x = inputs[1];
  int64_t n = shape_numel(a.normalized_shape);
  int64_t last = x.dim() - 1;
  over_rows(outputs, x, last, [&]<class T>(DType compute, std::vector<Tensor>& res) {
    if (n == 0) return;
    Tensor g = rows_of(inputs[0], compute, last), xr = rows_of(x, compute, last);
    Tensor w = a.has_weight ? inputs[2].to(compute).contiguous() : Tensor();
    layer_norm_backward_rows<T>(g.data_ptr<T>(), xr.data_ptr<T>(),
                                w.defined() ? w.data_ptr<T>() : nullptr, res[0].data_ptr<T>(),
                                res.size() > 1 ? res[1].data_ptr<T>() : nullptr, x.numel() / n, n,
                                a.eps);
  });
}

}  // namespace

void register_nn_backward_ops(OpTable& table) {
  constexpr int kCpu = static_cast<int>(DispatchKey::CPU);
  auto softmax_like = [&](const char* name, ComputeKernel kernel) {
    OpDef& op = table.add<SoftmaxAttrs>(name, {"grad_output", "output"},
                                        kNonDifferentiable | kInternal, "SoftmaxAttrs");
    rules::set_shape_rules(op, softmax_backward_shape<MetaRef>, softmax_backward_shape<SymMetaRef>);
    op.dtype = same_floating_dtype;
    op.compute[kCpu] = kernel;
  };
  softmax_like("softmax_backward", softmax_backward_kernel<false>);
  softmax_like("log_softmax_backward", softmax_backward_kernel<true>);

  OpDef& ln = table.add<LayerNormAttrs>("layer_norm_backward", {"grad_output", "input", "weight"},
                                        kNonDifferentiable | kInternal, "LayerNormAttrs");
  ln.variadic = true;  // (grad_output, input, [weight]): see LayerNormAttrs
  ln.max_outputs = 2;  // dx and, with a weight, g * xhat
  rules::set_shape_rules(ln, layer_norm_backward_shape<MetaRef>,
                         layer_norm_backward_shape<SymMetaRef>);
  ln.dtype = same_floating_dtype;
  ln.compute[kCpu] = layer_norm_backward_kernel;
}

}  // namespace kiln
