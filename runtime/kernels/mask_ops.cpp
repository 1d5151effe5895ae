// nonzero and masked_select: ops whose output size is a count of the input's values.
//
// Note [Data-dependent output shapes]
// How many elements nonzero and masked_select return depends on the values, so no shape rule
// can give it: their backend kernels are boxed (OpDef::boxed[CPU]) and allocate the output after
// counting, and the shape rules only check the inputs and give the largest possible output (for
// messages; nothing allocates from them). A Meta tensor has no values: its kernel throws. A graph
// cannot hold such an op either, so the entries are kNonTraceable: compile() makes each call a
// graph break (Note [Graph breaks], frontend/compile/segments.cpp), run eagerly with autograd
// between compiled segments; a call whose count differs from the traced one runs eagerly as a
// whole (Note [Shapes after a data-dependent break], frontend/compile/segments.h). trace()
// throws naming the op.
#include "kiln/base/error.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/index_loops.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using index_loops::for_each_index;
using index_loops::offset_of;

// Whether each element of x (row-major over `sizes`, read through `strides`) is nonzero.
std::vector<bool> nonzero_flags(const Tensor& x, ShapeRef sizes, ShapeRef strides, const char* op) {
  std::vector<bool> flags(static_cast<size_t>(shape_numel(sizes)));
  KILN_DISPATCH_ALL(x.dtype(), op, [&]<class T>() {
    const T* p = x.data_ptr<T>();
    for_each_index(sizes, 0, shape_numel(sizes), [&](int64_t i, const Shape& idx) {
      // NaN compares unequal to 0, so it counts as nonzero, as in torch.
      flags[static_cast<size_t>(i)] =
          static_cast<compute_t<T>>(p[offset_of(idx, strides)]) != compute_t<T>(0);
    });
  });
  return flags;
}

void check_cpu(const OpDef& op, std::span<const Tensor> inputs) {
  for (const Tensor& t : inputs)
    KILN_CHECK(t.device().is_cpu(), "{}: the CPU kernel got a tensor on {}", op.name, t.device());
}

std::vector<OutputGeometry> nonzero_shape(const OpDef&, std::span<const MetaRef> in, const void*) {
  return {OutputGeometry{{shape_numel(in[0].sizes), static_cast<int64_t>(in[0].sizes.size())}}};
}

DType int64_dtype(const OpDef&, std::span<const MetaRef>, const void*, size_t) {
  return kInt64;
}

std::vector<Tensor> nonzero_cpu(const OpDef& op, std::span<const Tensor> inputs, const void*) {
  check_cpu(op, inputs);
  const Tensor& x = inputs[0];
  std::vector<bool> flags = nonzero_flags(x, x.sizes(), x.strides(), op.name.c_str());
  int64_t n = 0;
  for (bool f : flags)
    n += f ? 1 : 0;
  int64_t nd = x.dim();
  Tensor out = empty_tensor({n, nd}, kInt64, x.device());
  int64_t* o = out.data_ptr<int64_t>();
  for_each_index(x.sizes(), 0, x.numel(), [&](int64_t i, const Shape& idx) {
    if (!flags[static_cast<size_t>(i)]) return;
    for (int64_t d = 0; d < nd; ++d)
      *o++ = idx[static_cast<size_t>(d)];
  });
  return {out};
}

std::vector<OutputGeometry> masked_select_shape(const OpDef& op, std::span<const MetaRef> in,
                                                const void*) {
  KILN_CHECK(in[1].dtype == kBool, "{}: expected mask to be a bool tensor, but got {} (shape {})",
             op.name, in[1].dtype, shape_str(in[1].sizes));
  Shape b = broadcast_shapes(op.name, in[0].sizes, in[1].sizes);
  return {OutputGeometry{{shape_numel(b)}}};
}

Shape broadcast_strides(const Tensor& t, ShapeRef sizes) {
  return index_loops::broadcast_strides(t.sizes(), t.strides(), sizes.size());
}

std::vector<Tensor> masked_select_cpu(const OpDef& op, std::span<const Tensor> inputs,
                                      const void* attrs) {
  check_cpu(op, inputs);
  const Tensor &x = inputs[0], &mask = inputs[1];
  std::vector<MetaRef> metas{MetaRef::of(x), MetaRef::of(mask)};
  masked_select_shape(op, metas, attrs);
  Shape b = broadcast_shapes(op.name, x.sizes(), mask.sizes());
  std::vector<bool> flags = nonzero_flags(mask, b, broadcast_strides(mask, b), op.name.c_str());
  int64_t n = 0;
  for (bool f : flags)
    n += f ? 1 : 0;
  Tensor out = empty_tensor({n}, x.dtype(), x.device());
  Shape xs = broadcast_strides(x, b);
  index_loops::with_element_bytes(x.element_size(), [&]<class U>() {
    const U* src = static_cast<const U*>(x.raw_data());
    U* dst = static_cast<U*>(out.raw_data());
    for_each_index(b, 0, shape_numel(b), [&](int64_t i, const Shape& idx) {
      if (flags[static_cast<size_t>(i)]) *dst++ = src[offset_of(idx, xs)];
    });
  });
  return {out};
}

std::vector<Tensor> no_meta(const OpDef& op, std::span<const Tensor>, const void*) {
  KILN_ERROR(
      "{}: the output shape depends on the input's values, which a Meta tensor does not "
      "have (Note [Data-dependent output shapes])",
      op.name);
}

}  // namespace

void register_mask_ops(OpTable& table) {
  constexpr int cpu = static_cast<int>(DispatchKey::CPU);
  constexpr int meta = static_cast<int>(DispatchKey::Meta);
  OpDef& nonzero =
      table.add<NoAttrs>("nonzero", {"self"}, kNonTraceable | kNonDifferentiable, "NoAttrs");
  nonzero.shape = nonzero_shape;
  nonzero.dtype = int64_dtype;
  nonzero.boxed[cpu] = nonzero_cpu;
  nonzero.boxed[meta] = no_meta;

  OpDef& ms = table.add<NoAttrs>("masked_select", {"self", "mask"}, kNonTraceable, "NoAttrs");
  ms.shape = masked_select_shape;
  ms.dtype = rules::same_dtype;
  ms.boxed[cpu] = masked_select_cpu;
  ms.boxed[meta] = no_meta;
}

}  // namespace kiln
