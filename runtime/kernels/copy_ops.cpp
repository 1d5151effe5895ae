// Data movement: copy_ (with broadcasting and dtype conversion), fill_, convert (to(dtype)),
// clone, and cat, all built on copy_into/fill_into (copy_kernels.h), which kernels also use to
// write their own outputs.
#include <cstring>

#include "kiln/base/error.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/runtime/kernels/copy_attrs.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/pointwise_loops.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/type_promotion.h"

namespace kiln {

namespace {

// A device tensor's copy or fill: the device's own copy_ or fill_ kernel, called directly (not
// dispatched, as these helpers promise). So a CUDA kernel can use copy_into and fill_into too.
void on_device(const char* op_name, const Tensor& dst, std::span<const Tensor> inputs,
               const void* attrs) {
  const OpDef& op = get_op(op_name);
  auto kernel = op.compute[static_cast<int>(DispatchKey::CUDA)];
  KILN_CHECK(dst.device().is_cuda() && kernel != nullptr, "{}: no kernel for a tensor on {}",
             op_name, dst.device());
  kernel(op, std::span<const Tensor>(&dst, 1), inputs, attrs);
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (!dst.device().is_cpu()) {
    Tensor ins[] = {dst, src};
    NoAttrs none;
    on_device("copy_", dst, ins, &none);
    return;
  }
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    size_t nbytes = static_cast<size_t>(dst.numel()) * dst.element_size();
    // Large copies split across threads; memcpy of each half is as fast as it gets.
    auto* d = static_cast<char*>(dst.raw_data());
    const auto* s = static_cast<const char*>(src.raw_data());
    parallel_for(0, static_cast<int64_t>(nbytes), int64_t{1} << 20, [&](int64_t b, int64_t e) {
      std::memcpy(d + b, s + b, static_cast<size_t>(e - b));
    });
    return;
  }
  Tensor outs[] = {dst};
  Tensor ins[] = {src};
  TensorIterator it(outs, ins);
  KILN_DISPATCH_ALL(dst.dtype(), "copy_", [&]<class Out>() {
    KILN_DISPATCH_ALL(src.dtype(), "copy_", [&]<class In>() {
      if constexpr (std::is_same_v<Out, bool>) {
        unary_loop<Out, In>(it, [](compute_t<In> v) { return v != compute_t<In>(0); });
      } else {
        unary_loop<Out, In>(it, [](compute_t<In> v) { return static_cast<compute_t<Out>>(v); });
      }
    });
  });
}

void fill_into(const Tensor& dst, const Scalar& value) {
  if (dst.numel() == 0) return;
  if (!dst.device().is_cpu()) {
    Tensor ins[] = {dst};
    FillAttrs fill;
    fill.value = value;
    on_device("fill_", dst, ins, &fill);
    return;
  }
  Tensor outs[] = {dst};
  TensorIterator it(outs, {});
  KILN_DISPATCH_ALL(dst.dtype(), "fill_", [&]<class T>() {
    T v = value.to<T>();
    it.for_each([&](char** data, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(T)) {
        T* out = reinterpret_cast<T*>(data[0]);
        for (int64_t i = 0; i < n; ++i)
          out[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<T*>(data[0] + i * s[0]) = v;
      }
    });
  });
}

namespace {

// Templates over the size type (Note [Symbolic sizes]).
template <class Ref>
std::vector<rules::GeometryOf<Ref>> copy_shape(const OpDef& op, std::span<const Ref> in,
                                               const void*) {
  rules::SizesOf<Ref> shape = broadcast_shapes(op.name, in[0].sizes, in[1].sizes);
  KILN_CHECK(shape.size() == in[0].sizes.size() &&
                 std::equal(shape.begin(), shape.end(), in[0].sizes.begin()),
             "{}: source of shape {} cannot be broadcast to the destination's shape {}", op.name,
             shape_str(in[1].sizes), shape_str(in[0].sizes));
  return {{std::move(shape)}};
}

void copy_kernel(const OpDef&, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                 const void*) {
  copy_into(outputs[0], inputs[1]);
}

void convert_kernel(const OpDef&, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                    const void*) {
  copy_into(outputs[0], inputs[0]);
}

// convert and clone: copy_into converts as cast_inputs does, which is what to_compute mirrors.
kir::Val convert_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType result) {
  return kir::to_compute(in[0], result);
}

DType convert_dtype(const OpDef&, std::span<const MetaRef>, const void* attrs, size_t) {
  return attrs_as<DTypeAttrs>(attrs).dtype;
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> fill_shape(const OpDef& op, std::span<const Ref> in,
                                               const void* attrs) {
  check_scalar_fits(op.name, attrs_as<FillAttrs>(attrs).value, in[0].dtype);
  return {{rules::SizesOf<Ref>(in[0].sizes.begin(), in[0].sizes.end())}};
}

void fill_kernel(const OpDef&, std::span<const Tensor> outputs, std::span<const Tensor>,
                 const void* attrs) {
  fill_into(outputs[0], attrs_as<FillAttrs>(attrs).value);
}

// ---- cat ----
// A template over the size type (Note [Symbolic sizes]): over symbols the other dims must be
// the same expressions, and the cat dim is their sum.
template <class Ref>
std::vector<rules::GeometryOf<Ref>> cat_shape(const OpDef& op, std::span<const Ref> in,
                                              const void* attrs) {
  KILN_CHECK(!in.empty(), "{}: expected a non-empty list of tensors", op.name);
  const Ref& first = in[0];
  auto nd = static_cast<int64_t>(first.sizes.size());
  KILN_CHECK(nd > 0, "{}: zero-dimensional tensor (input 0) cannot be concatenated", op.name);
  int64_t d = wrap_dim(op.name, attrs_as<DimAttrs>(attrs).dim, nd);
  rules::SizesOf<Ref> out(first.sizes.begin(), first.sizes.end());
  out[d] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Ref& t = in[i];
    KILN_CHECK(static_cast<int64_t>(t.sizes.size()) == nd,
               "{}: tensors must have the same number of dimensions: input 0 has shape {}, "
               "input {} has shape {}",
               op.name, shape_str(first.sizes), i, shape_str(t.sizes));
    for (int64_t k = 0; k < nd; ++k) {
      KILN_CHECK(k == d || t.sizes[k] == first.sizes[k],
                 "{}: sizes of tensors must match except in dimension {}: input 0 has shape {}, "
                 "input {} has shape {}",
                 op.name, d, shape_str(first.sizes), i, shape_str(t.sizes));
    }
    out[d] += t.sizes[d];
  }
  return {{std::move(out)}};
}

DType cat_dtype(const OpDef&, std::span<const MetaRef> in, const void*, size_t) {
  DType t = in[0].dtype;
  for (const MetaRef& m : in)
    t = promote_types(t, m.dtype);
  return t;
}

void cat_kernel(const OpDef&, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                const void* attrs) {
  const Tensor& out = outputs[0];
  int64_t d = wrap_dim("cat", attrs_as<DimAttrs>(attrs).dim, out.dim());
  int64_t offset = 0;
  for (const Tensor& t : inputs) {
    int64_t n = t.size(d);
    if (n > 0) copy_into(out.slice(d, offset, offset + n), t);
    offset += n;
  }
}

}  // namespace

void register_copy_ops(OpTable& table) {
  constexpr int cpu = static_cast<int>(DispatchKey::CPU);
  OpDef& copy = table.add<NoAttrs>("copy_", {"self", "src"}, kInPlace, "NoAttrs");
  rules::set_shape_rules(copy, copy_shape<MetaRef>, copy_shape<SymMetaRef>);
  copy.dtype = rules::same_dtype;
  copy.compute[cpu] = copy_kernel;

  OpDef& fill = table.add<FillAttrs>("fill_", {"self"}, kInPlace, "FillAttrs");
  rules::set_shape_rules(fill, fill_shape<MetaRef>, fill_shape<SymMetaRef>);
  fill.dtype = rules::same_dtype;
  fill.compute[cpu] = fill_kernel;

  OpDef& convert =
      table.add<DTypeAttrs>("convert", {"self"}, kPointwise | kRecomputable, "DTypeAttrs");
  convert.shape = rules::same_shape;
  convert.dtype = convert_dtype;
  convert.compute[cpu] = convert_kernel;
  convert.expr = convert_expr;

  OpDef& clone = table.add<NoAttrs>("clone", {"self"}, kPointwise | kRecomputable, "NoAttrs");
  clone.shape = rules::same_shape;
  clone.dtype = rules::same_dtype;
  clone.compute[cpu] = convert_kernel;
  clone.expr = convert_expr;

  OpDef& cat = table.add<DimAttrs>("cat", {"tensors"}, 0, "DimAttrs");
  cat.variadic = true;
  rules::set_shape_rules(cat, cat_shape<MetaRef>, cat_shape<SymMetaRef>);
  cat.dtype = cat_dtype;
  cat.compute[cpu] = cat_kernel;
}

}  // namespace kiln
