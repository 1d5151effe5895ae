// index, index_put and index_put_ (Note [Advanced index schema] in advanced_index.h): CPU
// kernels and op-table entries. Both kernels first turn the index tensors into one offset per
// position of their broadcast shape (checking every index on the calling thread), then walk the
// result: index in parallel, index_put serially, so that duplicate indices accumulate or
// overwrite in one fixed order (the last write in row-major order wins).
#include "kiln/base/error.h"
#include "kiln/base/thread_pool.h"
#include "kiln/runtime/kernels/advanced_index.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/index_loops.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using index_loops::for_each_index;
using index_loops::with_element_bytes;

constexpr int64_t kGrain = 4096;

// Over either size type (Note [Symbolic sizes]): the index tensors' shapes may hold symbols.
template <class Ref>
auto geometry_of(const OpDef& op, std::span<const Ref> in, size_t first_index, ShapeRef dims) {
  using Size = typename rules::SizesOf<Ref>::value_type;
  std::vector<std::span<const Size>> shapes;
  std::vector<DType> dtypes;
  for (size_t k = first_index; k < in.size(); ++k) {
    shapes.push_back(in[k].sizes);
    dtypes.push_back(in[k].dtype);
  }
  return index_geometry(op.name, std::span<const Size>(in[0].sizes), std::span(shapes), dtypes,
                        dims);
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> index_shape(const OpDef& op, std::span<const Ref> in,
                                                const void* attrs) {
  return {{geometry_of(op, in, 1, attrs_as<IndexAttrs>(attrs).dims).result}};
}

// Calls f(i, self_offset, values_index) for every element i of the result, in row-major
// order, within [begin, end).
template <class F>
void walk_result(const IndexGeometry& g, const IndexSteps& s, const std::vector<int64_t>& offsets,
                 int64_t begin, int64_t end, F&& f) {
  for_each_index(g.result, begin, end, [&](int64_t i, const Shape& c) {
    int64_t off = 0, b = 0;
    for (size_t j = 0; j < c.size(); ++j) {
      off += c[j] * s.self_step[j];
      b += c[j] * s.b_step[j];
    }
    f(i, off + offsets[static_cast<size_t>(b)], c);
  });
}

void index_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                  const void* attrs) {
  const Tensor &x = inputs[0], &out = outputs[0];
  const Shape& dims = attrs_as<IndexAttrs>(attrs).dims;
  std::vector<MetaRef> metas;
  for (const Tensor& t : inputs)
    metas.push_back(MetaRef::of(t));
  IndexGeometry g = geometry_of(op, std::span<const MetaRef>(metas), 1, dims);
  std::vector<int64_t> offsets =
      index_offsets(op.name, g, x.sizes(), x.strides(), inputs.subspan(1), dims);
  IndexSteps steps = index_steps(g, x.strides());
  with_element_bytes(x.element_size(), [&]<class U>() {
    const U* src = static_cast<const U*>(x.raw_data());
    U* dst = static_cast<U*>(out.raw_data());
    parallel_for(0, out.numel(), kGrain, [&](int64_t b, int64_t e) {
      walk_result(g, steps, offsets, b, e,
                  [&](int64_t i, int64_t off, const Shape&) { dst[i] = src[off]; });
    });
  });
}

// ---- index_put(self, values, indices...) ----
// Over symbols, values' sizes must equal the result's as expressions (or be 1).
template <class Ref>
std::vector<rules::GeometryOf<Ref>> index_put_shape(const OpDef& op, std::span<const Ref> in,
                                                    const void* attrs) {
  auto g = geometry_of(op, in, 2, attrs_as<IndexPutAttrs>(attrs).dims);
  const auto& values = in[1].sizes;
  bool fits = values.size() <= g.result.size();
  for (size_t j = 0; fits && j < values.size(); ++j) {
    const auto& r = g.result[g.result.size() - values.size() + j];
    fits = values[j] == 1 || values[j] == r;
  }
  KILN_CHECK(fits,
             "{}: shape mismatch: value tensor of shape {} cannot be broadcast to indexing result "
             "of shape {}",
             op.name, shape_str(values), shape_str(g.result));
  return {{rules::SizesOf<Ref>(in[0].sizes.begin(), in[0].sizes.end())}};
}

DType index_put_dtype(const OpDef& op, std::span<const MetaRef> in, const void* attrs, size_t) {
  KILN_CHECK(in[0].dtype == in[1].dtype,
             "{}: index_put requires the source and destination dtypes match, got {} for the "
             "destination and {} for the source",
             op.name, in[0].dtype, in[1].dtype);
  KILN_CHECK(!attrs_as<IndexPutAttrs>(attrs).accumulate || in[0].dtype != kBool,
             "{}: accumulate=true is not supported for dtype bool", op.name);
  return in[0].dtype;
}

// out (self's values already in it) gets values at the indexed positions. out may be self
// itself (index_put_), with any strides.
void index_put_into(const OpDef& op, const Tensor& out, const Tensor& values,
                    std::span<const Tensor> indices, const IndexPutAttrs& a) {
  std::vector<MetaRef> metas{MetaRef::of(out), MetaRef::of(values)};
  for (const Tensor& t : indices)
    metas.push_back(MetaRef::of(t));
  IndexGeometry g = geometry_of(op, std::span<const MetaRef>(metas), 2, a.dims);
  std::vector<int64_t> offsets =
      index_offsets(op.name, g, out.sizes(), out.strides(), indices, a.dims);
  IndexSteps steps = index_steps(g, out.strides());
  Shape vstep = index_loops::broadcast_strides(values.sizes(), values.strides(), g.result.size());
  int64_t n = shape_numel(g.result);
  if (!a.accumulate) {
    with_element_bytes(out.element_size(), [&]<class U>() {
      U* dst = static_cast<U*>(out.raw_data());
      const U* src = static_cast<const U*>(values.raw_data());
      walk_result(g, steps, offsets, 0, n, [&](int64_t, int64_t off, const Shape& c) {
        dst[off] = src[index_loops::offset_of(c, vstep)];
      });
    });
    return;
  }
  KILN_DISPATCH_NUMERIC(out.dtype(), op.name, [&]<class T>() {
    T* dst = out.data_ptr<T>();
    const T* src = values.data_ptr<T>();
    walk_result(g, steps, offsets, 0, n, [&](int64_t, int64_t off, const Shape& c) {
      T& slot = dst[off];
      slot = static_cast<T>(static_cast<compute_t<T>>(slot) +
                            static_cast<compute_t<T>>(src[index_loops::offset_of(c, vstep)]));
    });
  });
}

void index_put_kernel(const OpDef& op, std::span<const Tensor> outputs,
                      std::span<const Tensor> inputs, const void* attrs) {
  copy_into(outputs[0], inputs[0]);
  index_put_into(op, outputs[0], inputs[1], inputs.subspan(2), attrs_as<IndexPutAttrs>(attrs));
}

// index_put_: outputs[0] is self (the dispatcher's in-place output).
void index_put_inplace_kernel(const OpDef& op, std::span<const Tensor> outputs,
                              std::span<const Tensor> inputs, const void* attrs) {
  index_put_into(op, outputs[0], inputs[1], inputs.subspan(2), attrs_as<IndexPutAttrs>(attrs));
}

}  // namespace

void register_mask_ops(OpTable& table);  // mask_ops.cpp: nonzero, masked_select

void register_advanced_index_ops(OpTable& table) {
  constexpr int cpu = static_cast<int>(DispatchKey::CPU);
  // kInternal: torch's signatures (a list of optional tensors) are the API's, not the schema's
  // (runtime/api/advanced_index_ops.h, frontend/python/kiln/_indexing.py).
  OpDef& index = table.add<IndexAttrs>("index", {"self", "indices"}, kInternal, "IndexAttrs");
  index.variadic = index.variadic_list_tail = true;
  rules::set_shape_rules(index, index_shape<MetaRef>, index_shape<SymMetaRef>);
  index.dtype = rules::same_dtype;
  index.compute[cpu] = index_kernel;

  for (bool in_place : {false, true}) {
    uint32_t flags = kInternal;
    if (in_place) flags |= kInPlace;
    OpDef& put = table.add<IndexPutAttrs>(in_place ? "index_put_" : "index_put",
                                          {"self", "values", "indices"}, flags, "IndexPutAttrs");
    put.variadic = put.variadic_list_tail = true;
    rules::set_shape_rules(put, index_put_shape<MetaRef>, index_put_shape<SymMetaRef>);
    put.dtype = index_put_dtype;
    put.compute[cpu] = in_place ? index_put_inplace_kernel : index_put_kernel;
  }
  register_mask_ops(table);
}

}  // namespace kiln
