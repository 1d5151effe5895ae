// max/min with indices, argmax/argmin, nll_loss, logsumexp and var on CUDA devices. The first
// four are kernels of their own (Note [Eager CUDA index kernels] in
// codegen/cuda/eager_indexing.cpp) fed the CPU kernels' row forms, so their positions and
// values are the CPU's. nll_loss is the kernel generated from its program. logsumexp and var
// are compositions of the eager CUDA ops, computed in double as the CPU kernels merge their
// blocks in double.
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/codegen/cuda/eager_indexing.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/cuda/cuda_index_check.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/loss_programs.h"
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

// The kernels generated from nll_loss's program: one per reduction, ignore_index, dtypes and
// device.
struct NllKey {
  std::string reduction;
  int64_t ignore_index = 0;
  DType input = kFloat32, output = kFloat32;
  int device = 0;
  bool operator==(const NllKey&) const = default;
};
struct NllKeyHash {
  size_t operator()(const NllKey& k) const {
    return std::hash<std::string>()(k.reduction) ^ std::hash<int64_t>()(k.ignore_index) ^
           (static_cast<size_t>(k.input) << 1 | static_cast<size_t>(k.output) << 9 |
            static_cast<size_t>(k.device) << 17);
  }
};

// nll_loss by the kernel generated from its program (Note [The nll_loss program]), a block that
// walks the rows; a target out of range is counted on the device and raises the CPU kernel's
// error after the launch.
void nll_loss_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                          std::span<const Tensor> inputs, const void* attrs) {
  const Tensor& out = outputs[0];
  const auto& a = attrs_as<NllLossAttrs>(attrs);
  check_same_device(op, inputs, out);
  if (out.numel() == 0) return;
  const Tensor& x = inputs[0];
  int64_t c = x.size(x.dim() - 1);
  KILN_CHECK(c > 0, "{}: expected at least one class, got input of shape {}", op.name,
             shape_str(x.sizes()));
  bool direct = out.is_contiguous();
  Tensor result = direct ? out : empty_tensor(out.sizes(), out.dtype(), out.device());
  NllLossCall call = nll_loss_call(inputs, result);
  call.buffers[3].zero_();
  NllKey key{a.reduction, a.ignore_index, x.dtype(), out.dtype(), out.device().index};
  // Never destroyed: kernels may run during exit.
  static auto* kernels = new cuda::EagerKernelCache<NllKey, NllKeyHash>();
  auto kernel = kernels->get(key, key.device, call.buffers.size(), [&] {
    return cg::emit_cuda(nll_loss_program(a, key.input, key.output));
  });
  std::vector<void*> buffers;
  for (const Tensor& t : call.buffers)
    buffers.push_back(t.impl()->data());
  kernel->launch_sized(buffers, call.sizes, 1);
  std::vector<int64_t> bad = call.buffers[3].to(kCPU).to_vector<int64_t>();
  if (bad[0] != 0)
    KILN_ERROR("{}: Target {} is out of bounds (number of classes {})", op.name, bad[1], c);
  if (!direct) out.copy_(result);
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
