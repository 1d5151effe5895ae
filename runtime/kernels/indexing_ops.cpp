// The indexing op family: embedding, index_select, gather and scatter_add. Index tensors are
// int64 and may have any layout; each kernel first checks every index against the indexed
// dimension (throwing on the calling thread, naming the op, the index and the size), then does
// the data movement. embedding, index_select and gather move whole elements as raw bytes, so
// they serve every dtype.
#include <cstring>

#include "kiln/base/error.h"
#include "kiln/base/thread_pool.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/index_loops.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using index_loops::for_each_index;
using index_loops::offset_of;
using index_loops::with_element_bytes;

constexpr int64_t kGrain = 4096;

// The shape rules are templates over the size type (Note [Symbolic sizes]); the kernels check
// the index values.
template <class Ref>
void check_index_dtype(const OpDef& op, const Ref& index, const char* what) {
  KILN_CHECK(index.dtype == kInt64, "{}: expected {} of dtype int64, but got {} (shape {})",
             op.name, what, index.dtype, shape_str(index.sizes));
}

// The int64 values of `index` in row-major order, each checked to lie in [0, size).
std::vector<int64_t> checked_indices(const OpDef& op, const Tensor& index, int64_t size,
                                     int64_t dim) {
  std::vector<int64_t> out(static_cast<size_t>(index.numel()));
  const int64_t* p = index.data_ptr<int64_t>();
  for_each_index(index.sizes(), 0, index.numel(), [&](int64_t i, const Shape& idx) {
    int64_t v = p[offset_of(idx, index.strides())];
    KILN_CHECK(v >= 0 && v < size,
               "{}: index {} is out of range for dimension {} with size {} (at position {} of an "
               "index of shape {})",
               op.name, v, dim, size, i, shape_str(index.sizes()));
    out[static_cast<size_t>(i)] = v;
  });
  return out;
}

// ---- embedding ----
template <class Ref>
std::vector<rules::GeometryOf<Ref>> embedding_shape(const OpDef& op, std::span<const Ref> in,
                                                    const void*) {
  const Ref &weight = in[0], &indices = in[1];
  check_index_dtype(op, indices, "indices");
  KILN_CHECK(weight.sizes.size() == 2,
             "{}: expected a 2-D weight [num_embeddings, dim], got shape {}", op.name,
             shape_str(weight.sizes));
  rules::SizesOf<Ref> out(indices.sizes.begin(), indices.sizes.end());
  out.push_back(weight.sizes[1]);
  return {{std::move(out)}};
}

void embedding_kernel(const OpDef& op, std::span<const Tensor> outputs,
                      std::span<const Tensor> inputs, const void*) {
  const Tensor &weight = inputs[0], &out = outputs[0];
  std::vector<int64_t> rows = checked_indices(op, inputs[1], weight.size(0), 0);
  int64_t dim = weight.size(1), rs = weight.stride(0), cs = weight.stride(1);
  with_element_bytes(weight.element_size(), [&]<class U>() {
    const U* w = static_cast<const U*>(weight.raw_data());
    U* o = static_cast<U*>(out.raw_data());
    parallel_for(0, static_cast<int64_t>(rows.size()), std::max<int64_t>(1, kGrain / (dim + 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t i = b; i < e; ++i) {
                     const U* src = w + rows[static_cast<size_t>(i)] * rs;
                     U* dst = o + i * dim;
                     if (cs == 1) {
                       std::memcpy(dst, src, static_cast<size_t>(dim) * sizeof(U));
                     } else {
                       for (int64_t j = 0; j < dim; ++j)
                         dst[j] = src[j * cs];
                     }
                   }
                 });
  });
}

// ---- index_select ----
template <class Ref>
std::vector<rules::GeometryOf<Ref>> index_select_shape(const OpDef& op, std::span<const Ref> in,
                                                       const void* attrs) {
  const Ref &x = in[0], &index = in[1];
  check_index_dtype(op, index, "index");
  KILN_CHECK(index.sizes.size() <= 1, "{}: index must be 1-D, got shape {}", op.name,
             shape_str(index.sizes));
  KILN_CHECK(!x.sizes.empty(), "{}: cannot index a 0-dim tensor", op.name);
  auto nd = static_cast<int64_t>(x.sizes.size());
  int64_t d = wrap_dim(op.name, attrs_as<DimAttrs>(attrs).dim, nd);
  rules::SizesOf<Ref> out(x.sizes.begin(), x.sizes.end());
  out[static_cast<size_t>(d)] = index.sizes.empty() ? 1 : index.sizes[0];
  return {{std::move(out)}};
}

void index_select_kernel(const OpDef& op, std::span<const Tensor> outputs,
                         std::span<const Tensor> inputs, const void* attrs) {
  const Tensor &x = inputs[0], &out = outputs[0];
  auto d = static_cast<size_t>(wrap_dim(op.name, attrs_as<DimAttrs>(attrs).dim, x.dim()));
  std::vector<int64_t> picks =
      checked_indices(op, inputs[1], x.size(static_cast<int64_t>(d)), static_cast<int64_t>(d));
  with_element_bytes(x.element_size(), [&]<class U>() {
    const U* src = static_cast<const U*>(x.raw_data());
    U* dst = static_cast<U*>(out.raw_data());
    parallel_for(0, out.numel(), kGrain, [&](int64_t b, int64_t e) {
      for_each_index(out.sizes(), b, e, [&](int64_t i, const Shape& idx) {
        int64_t off = 0;
        for (size_t k = 0; k < idx.size(); ++k) {
          int64_t v = k == d ? picks[static_cast<size_t>(idx[k])] : idx[k];
          off += v * x.strides()[k];
        }
        dst[i] = src[off];
      });
    });
  });
}

// ---- gather / scatter_add ----
// index.size(k) <= x.size(k) for every k != dim (and, for scatter_add, <= src.size(k) for
// every k); all tensors have the same number of dimensions.
// Over symbols, a size must be no larger for every value of the symbols or assumed no larger
// (rules::le_or_assumed).
template <class Ref>
void check_index_fits(const OpDef& op, const Ref& x, const Ref& index, int64_t dim,
                      const Ref* src) {
  KILN_CHECK(index.sizes.size() == x.sizes.size(),
             "{}: index (shape {}) must have as many dimensions as the input (shape {})", op.name,
             shape_str(index.sizes), shape_str(x.sizes));
  for (size_t k = 0; k < x.sizes.size(); ++k) {
    KILN_CHECK(static_cast<int64_t>(k) == dim || rules::le_or_assumed(index.sizes[k], x.sizes[k]),
               "{}: index of shape {} is larger than the input of shape {} at dimension {} (only "
               "dimension {} may be larger)",
               op.name, shape_str(index.sizes), shape_str(x.sizes), k, dim);
  }
  if (src == nullptr) return;
  KILN_CHECK(src->sizes.size() == x.sizes.size(),
             "{}: src (shape {}) must have as many dimensions as the input (shape {})", op.name,
             shape_str(src->sizes), shape_str(x.sizes));
  for (size_t k = 0; k < x.sizes.size(); ++k) {
    KILN_CHECK(rules::le_or_assumed(index.sizes[k], src->sizes[k]),
               "{}: index of shape {} is larger than src of shape {} at dimension {}", op.name,
               shape_str(index.sizes), shape_str(src->sizes), k);
  }
}

// gather and scatter_add of a 0-dim tensor index it as a 1-element 1-D one.
int64_t gather_dim(const OpDef& op, const void* attrs, int64_t nd) {
  return wrap_dim(op.name, attrs_as<DimAttrs>(attrs).dim, std::max<int64_t>(nd, 1));
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> gather_shape(const OpDef& op, std::span<const Ref> in,
                                                 const void* attrs) {
  const Ref &x = in[0], &index = in[1];
  check_index_dtype(op, index, "index");
  int64_t d = gather_dim(op, attrs, static_cast<int64_t>(x.sizes.size()));
  check_index_fits<Ref>(op, x, index, d, nullptr);
  return {{rules::SizesOf<Ref>(index.sizes.begin(), index.sizes.end())}};
}

// Size of dim `d` of t, with a 0-dim tensor seen as shape [1].
int64_t size_or_one(const Tensor& t, int64_t d) {
  return t.dim() == 0 ? 1 : t.size(d);
}

void gather_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                   const void* attrs) {
  const Tensor &x = inputs[0], &index = inputs[1], &out = outputs[0];
  int64_t d = gather_dim(op, attrs, x.dim());
  std::vector<int64_t> picks = checked_indices(op, index, size_or_one(x, d), d);
  with_element_bytes(x.element_size(), [&]<class U>() {
    const U* src = static_cast<const U*>(x.raw_data());
    U* dst = static_cast<U*>(out.raw_data());
    parallel_for(0, out.numel(), kGrain, [&](int64_t b, int64_t e) {
      for_each_index(index.sizes(), b, e, [&](int64_t i, const Shape& idx) {
        int64_t off = 0;
        for (size_t k = 0; k < idx.size(); ++k) {
          int64_t v = static_cast<int64_t>(k) == d ? picks[static_cast<size_t>(i)] : idx[k];
          off += v * x.strides()[k];
        }
        dst[i] = src[off];
      });
    });
  });
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> scatter_add_shape(const OpDef& op, std::span<const Ref> in,
                                                      const void* attrs) {
  const Ref &x = in[0], &index = in[1], &src = in[2];
  check_index_dtype(op, index, "index");
  int64_t d = gather_dim(op, attrs, static_cast<int64_t>(x.sizes.size()));
  check_index_fits(op, x, index, d, &src);
  return {{rules::SizesOf<Ref>(x.sizes.begin(), x.sizes.end())}};
}

DType scatter_add_dtype(const OpDef& op, std::span<const MetaRef> in, const void*, size_t) {
  KILN_CHECK(in[0].dtype == in[2].dtype,
             "{}: expected self and src to have the same dtype, but got {} and {}", op.name,
             in[0].dtype, in[2].dtype);
  KILN_CHECK(in[0].dtype != kBool, "{}: dtype bool is not supported (expected numeric)", op.name);
  return in[0].dtype;
}

// Serial: duplicate indices accumulate into the same element.
void scatter_add_kernel(const OpDef& op, std::span<const Tensor> outputs,
                        std::span<const Tensor> inputs, const void* attrs) {
  const Tensor &x = inputs[0], &index = inputs[1], &src = inputs[2], &out = outputs[0];
  int64_t d = gather_dim(op, attrs, x.dim());
  std::vector<int64_t> picks = checked_indices(op, index, size_or_one(x, d), d);
  copy_into(out, x);
  KILN_DISPATCH_NUMERIC(out.dtype(), op.name, [&]<class T>() {
    T* o = out.data_ptr<T>();
    const T* s = src.data_ptr<T>();
    for_each_index(index.sizes(), 0, index.numel(), [&](int64_t i, const Shape& idx) {
      int64_t off = 0;
      for (size_t k = 0; k < idx.size(); ++k) {
        int64_t v = static_cast<int64_t>(k) == d ? picks[static_cast<size_t>(i)] : idx[k];
        off += v * out.strides()[k];
      }
      T& slot = o[off];
      slot = static_cast<T>(static_cast<compute_t<T>>(slot) +
                            static_cast<compute_t<T>>(s[offset_of(idx, src.strides())]));
    });
  });
}

DType first_dtype(const OpDef&, std::span<const MetaRef> in, const void*, size_t) {
  return in[0].dtype;
}

}  // namespace

void register_indexing_ops(OpTable& table) {
  constexpr int cpu = static_cast<int>(DispatchKey::CPU);
  OpDef& embedding = table.add<NoAttrs>("embedding", {"weight", "indices"}, 0, "NoAttrs");
  rules::set_shape_rules(embedding, embedding_shape<MetaRef>, embedding_shape<SymMetaRef>);
  embedding.dtype = first_dtype;
  embedding.compute[cpu] = embedding_kernel;

  OpDef& index_select = table.add<DimAttrs>("index_select", {"self", "index"}, 0, "DimAttrs");
  index_select.python_order = {"self", "dim", "index"};  // torch's argument order
  rules::set_shape_rules(index_select, index_select_shape<MetaRef>, index_select_shape<SymMetaRef>);
  index_select.dtype = first_dtype;
  index_select.compute[cpu] = index_select_kernel;

  OpDef& gather = table.add<DimAttrs>("gather", {"self", "index"}, 0, "DimAttrs");
  gather.python_order = {"self", "dim", "index"};
  rules::set_shape_rules(gather, gather_shape<MetaRef>, gather_shape<SymMetaRef>);
  gather.dtype = first_dtype;
  gather.compute[cpu] = gather_kernel;

  OpDef& scatter_add = table.add<DimAttrs>("scatter_add", {"self", "index", "src"}, 0, "DimAttrs");
  scatter_add.python_order = {"self", "dim", "index", "src"};
  rules::set_shape_rules(scatter_add, scatter_add_shape<MetaRef>, scatter_add_shape<SymMetaRef>);
  scatter_add.dtype = scatter_add_dtype;
  scatter_add.compute[cpu] = scatter_add_kernel;
}

}  // namespace kiln
