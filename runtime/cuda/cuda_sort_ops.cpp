// sort, argsort, topk, cumsum and cumprod on CUDA devices: the kernels of
// codegen/cuda/eager_sort.cpp (Note [Eager CUDA sort kernels]) over the CPU kernels' row form,
// so that positions and values are the CPU's.
#include "kiln/codegen/cuda/eager_sort.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/sort_attrs.h"
#include "kiln/runtime/kernels/sort_ops.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

void order_rows_cuda(const OpDef& op, const Tensor& input, int64_t dim, bool descending, int64_t k,
                     const Tensor* values, const Tensor& indices) {
  check_same_device(op, std::span<const Tensor>(&input, 1), indices);
  IndexReductionRows f = index_reduction_rows(op, input, dim);
  int64_t outer = f.outer, r = f.r;
  if (outer == 0 || r == 0 || k == 0) return;
  Device device = indices.device();
  Tensor idx_rows = empty_tensor({outer, k}, kInt64, device);
  Tensor val_rows = values != nullptr ? empty_tensor({outer, k}, f.compute, device) : Tensor();
  cuda::OpDTypeKey key{&op, f.compute, kInt64, device.index};
  auto kernel = cuda::op_dtype_kernels().get(key, key.device, 3,
                                             [&] { return cg::eager_rank_source(key.input); });
  void* values_ptr = values != nullptr ? val_rows.impl()->data() : nullptr;
  void* indices_ptr = idx_rows.impl()->data();
  void* rows_ptr = f.rows.impl()->data();
  long long n_outer = outer, n_r = r, n_k = k;
  int desc = descending ? 1 : 0;
  void* args[] = {&values_ptr, &indices_ptr, &rows_ptr, &n_outer, &n_r, &n_k, &desc};
  kernel->launch_entry(0, args, outer * r);
  store_rows(indices, dim, idx_rows);
  if (values != nullptr) store_rows(*values, dim, val_rows);
}

void sort_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                      std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<SortAttrs>(attrs);
  const Tensor& x = inputs[0];
  int64_t r = x.dim() == 0 ? 1 : x.size(wrap_dim(op.name, a.dim, x.dim()));
  if (outputs.size() == 2) {
    order_rows_cuda(op, x, a.dim, a.descending, r, &outputs[0], outputs[1]);
  } else {
    order_rows_cuda(op, x, a.dim, a.descending, r, nullptr, outputs[0]);
  }
}

void topk_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                      std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<TopkAttrs>(attrs);
  order_rows_cuda(op, inputs[0], a.dim, a.largest, topk_count(inputs[0], a.k), &outputs[0],
                  outputs[1]);
}

template <bool kProd>
void scan_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                      std::span<const Tensor> inputs, const void* attrs) {
  const Tensor& out = outputs[0];
  check_same_device(op, inputs, out);
  if (out.numel() == 0) return;
  int64_t dim = attrs_as<ScanAttrs>(attrs).dim;
  IndexReductionRows f = scan_rows(op, inputs[0], dim);
  Tensor res = empty_tensor({f.outer, f.r}, f.compute, out.device());
  cuda::OpDTypeKey key{&op, f.compute, f.compute, out.device().index};
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 2, [&] { return cg::eager_scan_source(key.input, kProd); });
  void* out_ptr = res.impl()->data();
  void* rows_ptr = f.rows.impl()->data();
  long long n_outer = f.outer, n_r = f.r;
  void* args[] = {&out_ptr, &rows_ptr, &n_outer, &n_r};
  kernel->launch_entry(0, args, f.outer);
  store_rows(out, dim, res);
}

}  // namespace

void register_cuda_sort_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  table.mutable_op("sort").compute[kCuda] = sort_cuda_kernel;
  table.mutable_op("argsort").compute[kCuda] = sort_cuda_kernel;
  table.mutable_op("topk").compute[kCuda] = topk_cuda_kernel;
  table.mutable_op("cumsum").compute[kCuda] = scan_cuda_kernel<false>;
  table.mutable_op("cumprod").compute[kCuda] = scan_cuda_kernel<true>;
}

}  // namespace kiln
