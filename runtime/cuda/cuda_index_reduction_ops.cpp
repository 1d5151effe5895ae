// max/min with indices, argmax/argmin, nll_loss, logsumexp and var on CUDA devices. The first
// five are kernels of their own (Note [Eager CUDA index kernels] in
// codegen/cuda/eager_indexing.cpp) fed the CPU kernels' row forms, so their positions and
// values are the CPU's. logsumexp and var are compositions of the eager CUDA ops, computed in
// double as the CPU kernels merge their blocks in double.
#include <limits>
#include <optional>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/eager_indexing.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/cuda/cuda_index_check.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/kernels/reduction_strategy.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

// Over the CPU kernel's row form (index_reduction_rows).
void index_reduce(const OpDef& op, bool is_max, const Tensor& input, const DimIndexAttrs& a,
                  const Tensor* values, const Tensor& indices) {
  check_same_device(op, std::span<const Tensor>(&input, 1), indices);
  IndexReductionRows f = index_reduction_rows(op, input, a.dim);
  const Tensor& rows = f.rows;
  int64_t outer = f.outer, r = f.r;
  DType compute = f.compute;
  if (outer == 0 || r == 0) return;
  Tensor vals = index_reduction_values(compute, values);
  cuda::OpDTypeKey key{&op, compute, kInt64, indices.device().index};
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 3, [&] { return cg::eager_index_reduce_source(compute, is_max); });
  void* values_ptr = values != nullptr ? vals.impl()->data() : nullptr;
  void* indices_ptr = indices.impl()->data();
  void* rows_ptr = rows.impl()->data();
  long long n_outer = outer, n_r = r;
  void* args[] = {&values_ptr, &indices_ptr, &rows_ptr, &n_outer, &n_r};
  kernel->launch_entry(0, args, outer);
  if (values != nullptr && !vals.is_same(*values)) values->copy_(vals);
}

template <bool kMax>
void max_dim_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                         std::span<const Tensor> inputs, const void* attrs) {
  index_reduce(op, kMax, inputs[0], attrs_as<DimIndexAttrs>(attrs), &outputs[0], outputs[1]);
}

template <bool kMax>
void argmax_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                        std::span<const Tensor> inputs, const void* attrs) {
  index_reduce(op, kMax, inputs[0], attrs_as<DimIndexAttrs>(attrs), nullptr, outputs[0]);
}

void nll_loss_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                          std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<NllLossAttrs>(attrs);
  const Tensor& out = outputs[0];
  check_same_device(op, inputs, out);
  Tensor x = inputs[0].contiguous(), target = inputs[1].contiguous();
  long long n = x.dim() == 2 ? x.size(0) : 1;
  long long c = x.size(x.dim() - 1);
  long long ignore_index = a.ignore_index;
  int reduction = a.reduction == "none" ? 0 : a.reduction == "sum" ? 1 : 2;
  if (out.numel() == 0) return;
  cuda::OpDTypeKey key{&op, x.dtype(), out.dtype(), out.device().index};
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 3, [&] { return cg::eager_nll_loss_source(x.dtype(), out.dtype()); });
  cuda::DeviceIndexCheck check(out.device());
  void* out_ptr = out.impl()->data();
  void* x_ptr = x.impl()->data();
  void* target_ptr = target.impl()->data();
  void* bad_ptr = check.pointer();
  void* args[] = {&out_ptr, &x_ptr, &target_ptr, &n, &c, &ignore_index, &reduction, &bad_ptr};
  kernel->launch_entry(0, args, 1);
  if (std::optional<int64_t> t = check.bad_index())
    KILN_ERROR("{}: Target {} is out of bounds (number of classes {})", op.name, *t, c);
}

// log(sum(exp(x - m))) + m with m the max over the dims, where m is finite; an infinite or NaN
// max is the result, as the CPU's LogSumExpReducer gives (-inf everywhere stays -inf).
void logsumexp_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                           std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<ReduceAttrs>(attrs);
  const Tensor& out = outputs[0];
  check_same_device(op, inputs, out);
  if (out.numel() == 0) return;
  if (inputs[0].numel() == 0) {
    out.fill_(-std::numeric_limits<double>::infinity());
    return;
  }
  Tensor x = inputs[0].to(kFloat64);
  Tensor m = amax(x, a.dims, /*keepdim=*/true);
  Tensor finite = lt(abs(m), std::numeric_limits<double>::infinity());
  Tensor shift = masked_fill(m, logical_not(finite), 0);
  Tensor r = log(sum(exp(x - shift), a.dims, /*keepdim=*/true)) + shift;
  out.copy_(where(finite, r, m).reshape(out.sizes()));
}

// The mean of squared deviations from the mean, divided by max(0, n - correction).
void var_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                     std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<VarAttrs>(attrs);
  const Tensor& out = outputs[0];
  check_same_device(op, inputs, out);
  if (out.numel() == 0) return;
  Tensor x = inputs[0].to(kFloat64);
  auto n = static_cast<double>(x.numel() / out.numel());
  Tensor deviations = x - mean(x, a.dims, /*keepdim=*/true);
  Tensor m2 = sum(deviations * deviations, a.dims, /*keepdim=*/true);
  out.copy_((m2 / std::max(0.0, n - a.correction)).reshape(out.sizes()));
}

}  // namespace

void register_cuda_index_reduction_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  table.mutable_op("max").compute[kCuda] = max_dim_cuda_kernel<true>;
  table.mutable_op("min").compute[kCuda] = max_dim_cuda_kernel<false>;
  table.mutable_op("argmax").compute[kCuda] = argmax_cuda_kernel<true>;
  table.mutable_op("argmin").compute[kCuda] = argmax_cuda_kernel<false>;
  table.mutable_op("nll_loss").compute[kCuda] = nll_loss_cuda_kernel;
  table.mutable_op("logsumexp").compute[kCuda] = logsumexp_cuda_kernel;
  table.mutable_op("var").compute[kCuda] = var_cuda_kernel;
}

}  // namespace kiln
