// embedding, index_select, gather, scatter_add, cat, slice_backward and select_backward on CUDA
// devices. The first four are kernels of their own (Note [Eager CUDA index kernels] in
// codegen/cuda/eager_indexing.cpp), each built on its first call with its op and dtype; their
// indices are checked on the device and a bad one raises the CPU kernel's error. cat and the
// view backwards are copies into regions of their fresh outputs, as on the CPU.
#include <fmt/format.h>

#include <functional>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/eager_indexing.h"
#include "kiln/runtime/cuda/cuda_index_check.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

std::vector<int64_t> strides_of(const Tensor& t) {
  return std::vector<int64_t>(t.strides().begin(), t.strides().end());
}

void raise_if_bad(const OpDef& op, const cuda::DeviceIndexCheck& check, const Tensor& index,
                  int64_t dim, int64_t size) {
  if (std::optional<int64_t> v = check.bad_index()) {
    KILN_ERROR(
        "{}: index {} is out of range for dimension {} with size {} (an element of the "
        "index of shape {} on {})",
        op.name, *v, dim, size, shape_str(index.sizes()), index.device());
  }
}

// out[i] = x[offset_1(i) + index[offset_2(i)] * x_dim_stride] over out's shape (see
// eager_gather_source); `x_strides` has 0 along the indexed dim and `index_strides` picks the
// index element of each output element.
void launch_gather(const OpDef& op, const Tensor& out, const Tensor& x, const Tensor& index,
                   std::vector<int64_t> x_strides, std::vector<int64_t> index_strides,
                   int64_t x_dim_stride, int64_t dim, int64_t dim_size) {
  if (out.numel() == 0) return;
  std::vector<std::vector<int64_t>> strides = {strides_of(out), std::move(x_strides),
                                               std::move(index_strides)};
  std::vector<int64_t> sizes(out.sizes().begin(), out.sizes().end());
  cg::EagerIndexer ix = cg::make_eager_indexer(op.name, sizes, strides);
  cuda::OpDTypeKey key{&op, x.dtype(), x.dtype(), out.device().index};
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 3, [&] { return cg::eager_gather_source(x.element_size()); });
  cuda::DeviceIndexCheck check(out.device());
  void* out_ptr = out.impl()->data();
  void* x_ptr = x.impl()->data();
  void* index_ptr = index.impl()->data();
  void* bad_ptr = check.pointer();
  long long x_step = x_dim_stride, size = dim_size;
  void* args[] = {&out_ptr, &x_ptr, &index_ptr, &ix, &x_step, &size, &bad_ptr};
  kernel->launch_entry(0, args, ix.numel);
  raise_if_bad(op, check, index, dim, dim_size);
}

void embedding_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                           std::span<const Tensor> inputs, const void*) {
  const Tensor &weight = inputs[0], &indices = inputs[1], &out = outputs[0];
  check_same_device(op, inputs, out);
  // out[..., e] = weight[indices[...], e]: the index varies over every dim but the last.
  std::vector<int64_t> w_strides(static_cast<size_t>(indices.dim()), 0);
  w_strides.push_back(weight.stride(1));
  std::vector<int64_t> i_strides = strides_of(indices);
  i_strides.push_back(0);
  launch_gather(op, out, weight, indices, w_strides, i_strides, weight.stride(0), 0,
                weight.size(0));
}

void index_select_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                              std::span<const Tensor> inputs, const void* attrs) {
  const Tensor &x = inputs[0], &index = inputs[1], &out = outputs[0];
  check_same_device(op, inputs, out);
  int64_t d = wrap_dim(op.name, attrs_as<DimAttrs>(attrs).dim, x.dim());
  std::vector<int64_t> x_strides = strides_of(x), i_strides(static_cast<size_t>(x.dim()), 0);
  x_strides[static_cast<size_t>(d)] = 0;
  i_strides[static_cast<size_t>(d)] = index.dim() == 0 ? 0 : index.stride(0);
  launch_gather(op, out, x, index, x_strides, i_strides, x.stride(d), d, x.size(d));
}

int64_t gather_dim(const OpDef& op, const void* attrs, int64_t nd) {
  return wrap_dim(op.name, attrs_as<DimAttrs>(attrs).dim, std::max<int64_t>(nd, 1));
}

void gather_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                        std::span<const Tensor> inputs, const void* attrs) {
  const Tensor &x = inputs[0], &index = inputs[1], &out = outputs[0];
  check_same_device(op, inputs, out);
  int64_t d = gather_dim(op, attrs, x.dim());
  // out[i] = x[i with dim d replaced by index[i]]: the output's shape is the index's.
  std::vector<int64_t> x_strides = strides_of(x);
  int64_t x_dim_stride = 0, dim_size = 1;  // a 0-dim input has one element
  if (x.dim() > 0) {
    x_dim_stride = x.stride(d);
    dim_size = x.size(d);
    x_strides[static_cast<size_t>(d)] = 0;
  }
  launch_gather(op, out, x, index, x_strides, strides_of(index), x_dim_stride, d, dim_size);
}

void scatter_add_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                             std::span<const Tensor> inputs, const void* attrs) {
  const Tensor &x = inputs[0], &index = inputs[1], &src = inputs[2], &out = outputs[0];
  check_same_device(op, inputs, out);
  int64_t d = gather_dim(op, attrs, x.dim());
  out.copy_(x);
  if (index.numel() == 0) return;
  // A thread per index position outside dim d adds that position's elements along d in order.
  std::vector<int64_t> sizes(index.sizes().begin(), index.sizes().end());
  long long n = 1, index_step = 0, src_step = 0, out_step = 0, dim_size = 1;
  if (index.dim() > 0) {
    n = index.size(d);
    index_step = index.stride(d);
    src_step = src.stride(d);
    out_step = out.stride(d);
    dim_size = x.size(d);
    sizes[static_cast<size_t>(d)] = 1;
  }
  std::vector<int64_t> out_strides = strides_of(out);
  if (out.dim() > 0) out_strides[static_cast<size_t>(d)] = 0;
  std::vector<std::vector<int64_t>> strides = {out_strides, strides_of(index), strides_of(src)};
  cg::EagerIndexer ix = cg::make_eager_indexer(op.name, sizes, strides);
  cuda::OpDTypeKey key{&op, out.dtype(), out.dtype(), out.device().index};
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 3, [&] { return cg::eager_scatter_add_source(out.dtype()); });
  cuda::DeviceIndexCheck check(out.device());
  void* out_ptr = out.impl()->data();
  void* index_ptr = index.impl()->data();
  void* src_ptr = src.impl()->data();
  void* bad_ptr = check.pointer();
  void* args[] = {&out_ptr,    &index_ptr, &src_ptr,  &ix,       &n,
                  &index_step, &src_step,  &out_step, &dim_size, &bad_ptr};
  kernel->launch_entry(0, args, ix.numel);
  raise_if_bad(op, check, index, d, dim_size);
}

void cat_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                     std::span<const Tensor> inputs, const void* attrs) {
  const Tensor& out = outputs[0];
  check_same_device(op, inputs, out);
  int64_t d = wrap_dim(op.name, attrs_as<DimAttrs>(attrs).dim, out.dim());
  int64_t offset = 0;
  for (const Tensor& t : inputs) {
    int64_t n = t.size(d);
    if (n > 0) out.slice(d, offset, offset + n).copy_(t);
    offset += n;
  }
}

// The gradient of a view: zeros, with grad copied into the region the forward view selected.
void slice_backward_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                                std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<SliceBackwardAttrs>(attrs);
  check_same_device(op, inputs, outputs[0]);
  outputs[0].zero_();
  outputs[0].slice_symint(a.dim, a.start, a.end, a.step).copy_(inputs[0]);
}

void select_backward_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                                 std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<SelectBackwardAttrs>(attrs);
  check_same_device(op, inputs, outputs[0]);
  outputs[0].zero_();
  outputs[0].select(a.dim, a.index).copy_(inputs[0]);
}

}  // namespace

void register_cuda_indexing_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  table.mutable_op("embedding").compute[kCuda] = embedding_cuda_kernel;
  table.mutable_op("index_select").compute[kCuda] = index_select_cuda_kernel;
  table.mutable_op("gather").compute[kCuda] = gather_cuda_kernel;
  table.mutable_op("scatter_add").compute[kCuda] = scatter_add_cuda_kernel;
  table.mutable_op("cat").compute[kCuda] = cat_cuda_kernel;
  table.mutable_op("slice_backward").compute[kCuda] = slice_backward_cuda_kernel;
  table.mutable_op("select_backward").compute[kCuda] = select_backward_cuda_kernel;
}

}  // namespace kiln
