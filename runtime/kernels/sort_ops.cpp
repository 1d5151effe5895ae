// sort, argsort and topk (values and int64 positions along a dim) and the scans cumsum and
// cumprod. Sorting is always stable: equal elements keep their input order, ascending and
// descending alike, as torch's stable=True; NaN orders above every number, as in torch (last
// ascending, first descending, and the largest for topk). topk keeps the same order and ties,
// so its result is the first k of the stable sort.
#include <algorithm>
#include <numeric>
#include <optional>
#include <type_traits>

#include "kiln/base/error.h"
#include "kiln/base/thread_pool.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/sort_attrs.h"
#include "kiln/runtime/kernels/sort_ops.h"

namespace kiln {

IndexReductionRows scan_rows(const OpDef& op, const Tensor& input, int64_t dim) {
  DType acc = is_floating(input.dtype()) ? kFloat64 : kInt64;
  return index_reduction_rows(op, input.dtype() == acc ? input : input.to(acc), dim);
}

void store_rows(const Tensor& out, int64_t dim, const Tensor& rows) {
  if (out.dim() == 0) {
    out.copy_(rows.reshape({}));
    return;
  }
  int64_t d = wrap_dim("store_rows", dim, out.dim());
  Shape order;
  for (int64_t i = 0; i < out.dim(); ++i)
    if (i != d) order.push_back(i);
  order.push_back(d);
  Tensor view = out.permute(order);
  view.copy_(rows.reshape(view.sizes()));
}

int64_t topk_count(const Tensor& input, int64_t k) {
  return input.dim() == 0 ? 1 : k;
}

namespace {

template <class In>
int64_t ordering_dim(const OpDef& op, int64_t dim, const In& sizes) {
  return wrap_dim(op.name, dim, std::max<int64_t>(static_cast<int64_t>(sizes.size()), 1));
}

// The rules below are templates over the size type (Note [Symbolic sizes]).
template <class Ref>
std::vector<rules::GeometryOf<Ref>> sort_shape(const OpDef& op, std::span<const Ref> in,
                                               const void* attrs) {
  ordering_dim(op, attrs_as<SortAttrs>(attrs).dim, in[0].sizes);
  rules::SizesOf<Ref> out(in[0].sizes.begin(), in[0].sizes.end());
  if (op.max_outputs == 1) return {{out}};
  return {{out}, {out}};
}

// k against a symbolic size holds for every value of it only up to 2 (Note [Symbolic sizes]:
// every symbol is at least 2); a larger k is assumed to fit (Note [Assumed size facts]) or
// refuses, and the tracer specializes the dim.
template <class Ref>
std::vector<rules::GeometryOf<Ref>> topk_shape(const OpDef& op, std::span<const Ref> in,
                                               const void* attrs) {
  const auto& a = attrs_as<TopkAttrs>(attrs);
  const auto& sizes = in[0].sizes;
  int64_t d = ordering_dim(op, a.dim, sizes);
  rules::SizesOf<Ref> out(sizes.begin(), sizes.end());
  using Size = typename rules::SizesOf<Ref>::value_type;
  Size size = sizes.empty() ? Size(1) : Size(sizes[static_cast<size_t>(d)]);
  std::optional<int64_t> known = SymInt(size).maybe_int();
  KILN_CHECK(a.k >= 0 && (known ? a.k <= *known : rules::at_least(SymInt(size), a.k)),
             "{}(): selected index k out of range: k = {} but dimension {} has size {} (input "
             "shape {})",
             op.name, a.k, d, size, shape_str(sizes));
  if (!out.empty()) out[static_cast<size_t>(d)] = a.k;
  return {{out}, {out}};
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> scan_shape(const OpDef& op, std::span<const Ref> in,
                                               const void* attrs) {
  ordering_dim(op, attrs_as<ScanAttrs>(attrs).dim, in[0].sizes);
  return {{rules::SizesOf<Ref>(in[0].sizes.begin(), in[0].sizes.end())}};
}

DType values_then_indices(const OpDef&, std::span<const MetaRef> in, const void*, size_t i) {
  return i == 0 ? in[0].dtype : kInt64;
}

DType indices_dtype(const OpDef&, std::span<const MetaRef>, const void*, size_t) {
  return kInt64;
}

// torch: integer and bool inputs accumulate into int64.
DType scan_dtype(const OpDef&, std::span<const MetaRef> in, const void*, size_t) {
  return is_floating(in[0].dtype) ? in[0].dtype : kInt64;
}

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// Strict order of positions i, j of a row by value: NaN above every number.
template <class T>
struct ValueOrder {
  const T* x;
  bool descending;
  bool operator()(int64_t i, int64_t j) const {
    T a = x[i], b = x[j];
    if (descending) return !is_nan(b) && (is_nan(a) || a > b);
    return !is_nan(a) && (is_nan(b) || a < b);
  }
};

// The first `k` positions of each row in stable order, and their values when `values` is set.
void order_rows(const OpDef& op, const Tensor& input, int64_t dim, bool descending, int64_t k,
                const Tensor* values, const Tensor& indices) {
  IndexReductionRows f = index_reduction_rows(op, input, dim);
  int64_t outer = f.outer, r = f.r;
  if (outer == 0 || r == 0 || k == 0) return;
  Tensor idx_rows = empty_tensor({outer, k}, kInt64, kCPU);
  Tensor val_rows = values != nullptr ? empty_tensor({outer, k}, f.compute, kCPU) : Tensor();
  auto run = [&]<class T>() {
    const T* src = f.rows.data_ptr<T>();
    int64_t* iout = idx_rows.data_ptr<int64_t>();
    T* vout = values != nullptr ? val_rows.data_ptr<T>() : nullptr;
    parallel_for(0, outer, std::max<int64_t>(1, kReduceGrain / r), [&](int64_t b, int64_t e) {
      std::vector<int64_t> order(static_cast<size_t>(r));
      for (int64_t o = b; o < e; ++o) {
        const T* x = src + o * r;
        std::iota(order.begin(), order.end(), int64_t{0});
        ValueOrder<T> before{x, descending};
        if (k == r) {
          std::stable_sort(order.begin(), order.end(), before);
        } else {
          // A total order (ties by position) makes the partial sort's prefix the stable one.
          std::partial_sort(
              order.begin(), order.begin() + k, order.end(),
              [&](int64_t i, int64_t j) { return before(i, j) || (!before(j, i) && i < j); });
        }
        for (int64_t j = 0; j < k; ++j) {
          int64_t i = order[static_cast<size_t>(j)];
          iout[o * k + j] = i;
          if (vout != nullptr) vout[o * k + j] = x[i];
        }
      }
    });
  };
  with_compute_type(f.compute, run);
  store_rows(indices, dim, idx_rows);
  if (values != nullptr) store_rows(*values, dim, val_rows);
}

void sort_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                 const void* attrs) {
  const auto& a = attrs_as<SortAttrs>(attrs);
  int64_t r = inputs[0].dim() == 0 ? 1 : inputs[0].size(ordering_dim(op, a.dim, inputs[0].sizes()));
  if (outputs.size() == 2) {
    order_rows(op, inputs[0], a.dim, a.descending, r, &outputs[0], outputs[1]);
  } else {
    order_rows(op, inputs[0], a.dim, a.descending, r, nullptr, outputs[0]);
  }
}

void topk_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                 const void* attrs) {
  const auto& a = attrs_as<TopkAttrs>(attrs);
  order_rows(op, inputs[0], a.dim, a.largest, topk_count(inputs[0], a.k), &outputs[0], outputs[1]);
}

// Integers wrap on overflow (through unsigned: signed overflow is undefined in C++).
template <bool kProd, class T>
T scan_step(T acc, T v) {
  if constexpr (std::is_integral_v<T>) {
    auto ua = static_cast<uint64_t>(acc), uv = static_cast<uint64_t>(v);
    return static_cast<T>(kProd ? ua * uv : ua + uv);
  } else {
    return kProd ? acc * v : acc + v;
  }
}

template <bool kProd>
void scan_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                 const void* attrs) {
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  int64_t dim = attrs_as<ScanAttrs>(attrs).dim;
  IndexReductionRows f = scan_rows(op, inputs[0], dim);
  int64_t outer = f.outer, r = f.r;
  Tensor res = empty_tensor({outer, r}, f.compute, kCPU);
  auto run = [&]<class T>() {
    const T* src = f.rows.data_ptr<T>();
    T* dst = res.data_ptr<T>();
    parallel_for(0, outer, std::max<int64_t>(1, kReduceGrain / r), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        T acc = kProd ? T(1) : T(0);
        for (int64_t j = 0; j < r; ++j) {
          acc = scan_step<kProd>(acc, src[o * r + j]);
          dst[o * r + j] = acc;
        }
      }
    });
  };
  with_compute_type(f.compute, run);  // float64 or int64
  store_rows(out, dim, res);
}

}  // namespace

void register_sort_ops(OpTable& table) {
  constexpr int cpu = static_cast<int>(DispatchKey::CPU);
  OpDef& sort = table.add<SortAttrs>("sort", {"self"}, 0, "SortAttrs");
  sort.max_outputs = 2;  // values and indices
  rules::set_shape_rules(sort, sort_shape<MetaRef>, sort_shape<SymMetaRef>);
  sort.dtype = values_then_indices;
  sort.compute[cpu] = sort_kernel;

  OpDef& argsort = table.add<SortAttrs>("argsort", {"self"}, 0, "SortAttrs");
  rules::set_shape_rules(argsort, sort_shape<MetaRef>, sort_shape<SymMetaRef>);
  argsort.dtype = indices_dtype;
  argsort.compute[cpu] = sort_kernel;

  OpDef& topk = table.add<TopkAttrs>("topk", {"self"}, 0, "TopkAttrs");
  topk.max_outputs = 2;
  rules::set_shape_rules(topk, topk_shape<MetaRef>, topk_shape<SymMetaRef>);
  topk.dtype = values_then_indices;
  topk.compute[cpu] = topk_kernel;

  for (const char* name : {"cumsum", "cumprod"}) {
    OpDef& scan = table.add<ScanAttrs>(name, {"self"}, 0, "ScanAttrs");
    rules::set_shape_rules(scan, scan_shape<MetaRef>, scan_shape<SymMetaRef>);
    scan.dtype = scan_dtype;
  }
  table.mutable_op("cumsum").compute[cpu] = scan_kernel<false>;
  table.mutable_op("cumprod").compute[cpu] = scan_kernel<true>;
}

}  // namespace kiln
