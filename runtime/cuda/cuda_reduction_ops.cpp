// Eager reductions over dims on CUDA devices: sum, mean, prod, amax and amin, each run by a
// shape-generic NVRTC kernel (Note [Eager CUDA reduction kernels] in
// codegen/cuda/eager_reduction.cpp), built on the first call with its op and dtypes.
#include "kiln/runtime/cuda/cuda_reduction_ops.h"

#include <fmt/format.h>

#include <functional>
#include <limits>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/eager_reduction.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/kernels/reduction_strategy.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

constexpr const char* kReductions[] = {"sum", "mean", "prod", "amax", "amin"};

kir::ReduceOp reduce_op_of(const OpDef& op) {
  if (op.name == "prod") return kir::ReduceOp::Prod;
  if (op.name == "amax") return kir::ReduceOp::Max;
  if (op.name == "amin") return kir::ReduceOp::Min;
  return kir::ReduceOp::Sum;  // sum, mean
}

bool needs_nonempty(const OpDef& op) {
  return op.name == "amax" || op.name == "amin";
}

void reduction_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                           std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<ReduceAttrs>(attrs);
  const Tensor& x = inputs[0];
  const Tensor& out = outputs[0];
  KILN_CHECK(x.device() == out.device(),
             "{}: expected the input and output on one device, got {} and {}", op.name, x.device(),
             out.device());
  ReducePlan p = plan_reduction(op, x, a.dims);
  if (needs_nonempty(op)) check_nonempty_reduction(op, x, p);
  if (out.numel() == 0) return;
  std::vector<int64_t> out_strides;
  for (size_t i = 0; i < p.kept.size(); ++i)
    out_strides.push_back(out.stride(a.keepdim ? p.kept[i] : static_cast<int64_t>(i)));
  cg::EagerReductionLayout layout =
      cg::make_eager_reduction_layout(op.name, x.sizes(), x.strides(), p.reduced, out_strides);
  double scale = 1;
  if (op.name == "mean") {
    scale = p.reduced_numel == 0 ? std::numeric_limits<double>::quiet_NaN()
                                 : 1.0 / static_cast<double>(p.reduced_numel);
  }
  cuda::OpDTypeKey key{&op, x.dtype(), out.dtype(), out.device().index};
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 2, [&] { return cuda_reduction_source(op, x.dtype(), out.dtype()); });
  void* out_ptr = out.impl()->data();
  void* in_ptr = x.impl()->data();
  void* args[] = {&out_ptr, &in_ptr, &layout.kept, &layout.reduced, &scale};
  kernel->launch_entry(static_cast<size_t>(layout.entry), args, layout.kept.numel);
}

}  // namespace

cg::CudaSource cuda_reduction_source(const OpDef& op, DType input, DType output) {
  cg::EagerReductionSpec spec;
  spec.name = fmt::format("{}_{}_{}", op.name, input, output);
  spec.op = reduce_op_of(op);
  spec.input = input;
  // sum, mean and prod of floats in double, as the CPU merges its blocks (and multiplies) in
  // double: a float32 prod of [1e30, 1e30, 1e-30, 1e-30] is 1 on both devices, not inf on one.
  // amax and amin are exact in any type.
  bool extremum = spec.op == kir::ReduceOp::Max || spec.op == kir::ReduceOp::Min;
  spec.accumulate = is_floating(output) && !extremum ? kFloat64 : reduction_compute_dtype(output);
  spec.output = output;
  spec.scaled = op.name == "mean";
  return cg::eager_reduction_source(spec);
}

bool has_cuda_reduction_kernel(const OpDef& op) {
  return op.compute[static_cast<int>(DispatchKey::CUDA)] == reduction_cuda_kernel;
}

void register_cuda_reduction_kernels(OpTable& table) {
  for (const char* name : kReductions)
    table.mutable_op(name).compute[static_cast<int>(DispatchKey::CUDA)] = reduction_cuda_kernel;
}

}  // namespace kiln
