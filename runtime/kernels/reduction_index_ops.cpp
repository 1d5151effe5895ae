// Reductions that return positions: max/min over one dim (two outputs: values and int64
// indices, as torch.max(x, dim)) and argmax/argmin (over one dim, or over the flattened input
// when no dim is given). The first extreme element wins; a NaN beats every number, and the
// first NaN wins, as in torch. The all-element max(x)/min(x) are amax/amin over every dim (see
// runtime/api/reduction_ops.cpp).
#include <algorithm>
#include <limits>

#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/kernels/reduction_registry.h"
#include "kiln/runtime/kernels/reduction_strategy.h"

namespace kiln {
namespace {

// The reduced dim of a call with a dim: wrapped (a 0-dim input reduces its one element).
int64_t index_dim(const OpDef& op, const DimIndexAttrs& a, int64_t ndim) {
  KILN_CHECK(a.dim.has_value() || op.name == "argmax" || op.name == "argmin",
             "{}: a dim is required", op.name);
  return wrap_dim(op.name, *a.dim, ndim);
}

// The rules below are templates over the size type (Note [Symbolic sizes]); a symbolic size is
// at least 2, so it is never the empty dim the check refuses.
template <class Sizes, class In>
Sizes index_out_shape(const OpDef& op, const In& sizes, const DimIndexAttrs& a) {
  auto ndim = static_cast<int64_t>(sizes.size());
  if (!a.dim.has_value()) {
    // argmax over every element: 0-dim, or all ones with keepdim.
    return a.keepdim ? Sizes(sizes.size(), 1) : Sizes{};
  }
  int64_t d = index_dim(op, a, ndim);
  Sizes out;
  for (int64_t i = 0; i < ndim; ++i) {
    if (i != d) {
      out.push_back(sizes[i]);
    } else if (a.keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

template <class In>
void check_index_reduction(const OpDef& op, const In& sizes, const DimIndexAttrs& a) {
  auto is_zero = [](const auto& s) { return s == std::decay_t<decltype(s)>(0); };
  if (!a.dim.has_value()) {
    bool empty = std::any_of(sizes.begin(), sizes.end(), is_zero);
    KILN_CHECK(!empty,
               "{}(): Expected reduction dim to be specified for input.numel() == 0 (input "
               "shape {})",
               op.name, shape_str(sizes));
    return;
  }
  auto ndim = static_cast<int64_t>(sizes.size());
  int64_t d = index_dim(op, a, ndim);
  if (ndim == 0) return;
  bool kept_empty = false;
  for (int64_t i = 0; i < ndim; ++i)
    kept_empty = kept_empty || (i != d && is_zero(sizes[i]));
  KILN_CHECK(!is_zero(sizes[d]) || kept_empty,
             "{}(): Expected reduction dim {} to have non-zero size (input shape {})", op.name, d,
             shape_str(sizes));
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> max_dim_shape(const OpDef& op, std::span<const Ref> inputs,
                                                  const void* attrs) {
  const auto& a = attrs_as<DimIndexAttrs>(attrs);
  check_index_reduction(op, inputs[0].sizes, a);
  auto out = index_out_shape<rules::SizesOf<Ref>>(op, inputs[0].sizes, a);
  return {{out}, {out}};
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> argmax_shape(const OpDef& op, std::span<const Ref> inputs,
                                                 const void* attrs) {
  const auto& a = attrs_as<DimIndexAttrs>(attrs);
  check_index_reduction(op, inputs[0].sizes, a);
  return {{index_out_shape<rules::SizesOf<Ref>>(op, inputs[0].sizes, a)}};
}

DType values_then_indices(const OpDef&, std::span<const MetaRef> inputs, const void*, size_t i) {
  return i == 0 ? inputs[0].dtype : kInt64;
}

DType argmax_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  KILN_CHECK(inputs[0].dtype != kBool, "{}: bool tensors are not supported (got dtype {})", op.name,
             inputs[0].dtype);
  return kInt64;
}

// Position of the first extreme element of x[0..n) (stride 1): NaN first, then the extreme.
template <class T, bool kMax>
int64_t extreme_index(const T* x, int64_t n) {
  int64_t best = 0;
  T v = x[0];
  if (v != v) return 0;
  for (int64_t i = 1; i < n; ++i) {
    T y = x[i];
    if (y != y) return i;
    if (kMax ? y > v : y < v) {
      v = y;
      best = i;
    }
  }
  return best;
}

}  // namespace

IndexReductionRows index_reduction_rows(const OpDef& op, const Tensor& input,
                                        std::optional<int64_t> dim) {
  IndexReductionRows f;
  f.compute = reduction_compute_dtype(input.dtype());
  Tensor x = input.dtype() == f.compute ? input : input.to(f.compute);
  if (!dim.has_value() || x.dim() == 0) {
    f.rows = x.contiguous();
    f.r = x.numel();
    return f;
  }
  int64_t d = wrap_dim(op.name, *dim, x.dim());
  Shape order;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (i != d) order.push_back(i);
  }
  order.push_back(d);
  f.rows = x.permute(order).contiguous();
  f.r = x.size(d);
  f.outer = f.r == 0 ? 0 : x.numel() / f.r;
  return f;
}

Tensor index_reduction_values(DType compute, const Tensor* values) {
  if (values == nullptr) return Tensor();
  return values->dtype() == compute ? *values
                                    : empty_tensor(values->sizes(), compute, values->device());
}

namespace {

// Row form over [kept, r] for the dim (or every dim): values (optional) and indices.
template <bool kMax>
void index_reduce(const OpDef& op, const Tensor& input, const DimIndexAttrs& a,
                  const Tensor* values, const Tensor& indices) {
  IndexReductionRows f = index_reduction_rows(op, input, a.dim);
  const Tensor& rows = f.rows;
  int64_t outer = f.outer, r = f.r;
  DType compute = f.compute;
  if (outer == 0 || r == 0) return;
  Tensor vals = index_reduction_values(compute, values);
  auto run = [&]<class T>() {
    const T* src = rows.data_ptr<T>();
    T* vout = values != nullptr ? vals.data_ptr<T>() : nullptr;
    int64_t* iout = indices.data_ptr<int64_t>();
    int64_t grain = std::max<int64_t>(1, kReduceGrain / r);
    parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        int64_t i = extreme_index<T, kMax>(src + o * r, r);
        iout[o] = i;
        if (vout != nullptr) vout[o] = src[o * r + i];
      }
    });
  };
  with_compute_type(compute, run);
  if (values != nullptr && !vals.is_same(*values)) values->copy_(vals);
}

template <bool kMax>
void max_dim_kernel(const OpDef& op, std::span<const Tensor> outputs,
                    std::span<const Tensor> inputs, const void* attrs) {
  index_reduce<kMax>(op, inputs[0], attrs_as<DimIndexAttrs>(attrs), &outputs[0], outputs[1]);
}

template <bool kMax>
void argmax_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                   const void* attrs) {
  index_reduce<kMax>(op, inputs[0], attrs_as<DimIndexAttrs>(attrs), nullptr, outputs[0]);
}

}  // namespace

void register_index_reduction_ops(OpTable& table) {
  auto add = [&](const char* name, rules::RuleOf<MetaRef> shape,
                 rules::RuleOf<SymMetaRef> sym_shape, DTypeRule dtype, ComputeKernel kernel) {
    OpDef& op = table.add<DimIndexAttrs>(name, {"self"}, kReduction, "DimIndexAttrs");
    rules::set_shape_rules(op, shape, sym_shape);
    op.dtype = dtype;
    op.compute[static_cast<int>(DispatchKey::CPU)] = kernel;
  };
  add("max", max_dim_shape<MetaRef>, max_dim_shape<SymMetaRef>, values_then_indices,
      max_dim_kernel<true>);
  add("min", max_dim_shape<MetaRef>, max_dim_shape<SymMetaRef>, values_then_indices,
      max_dim_kernel<false>);
  table.mutable_op("max").max_outputs = 2;  // values and indices
  table.mutable_op("min").max_outputs = 2;
  add("argmax", argmax_shape<MetaRef>, argmax_shape<SymMetaRef>, argmax_dtype, argmax_kernel<true>);
  add("argmin", argmax_shape<MetaRef>, argmax_shape<SymMetaRef>, argmax_dtype,
      argmax_kernel<false>);
}

}  // namespace kiln
