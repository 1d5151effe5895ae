// Eager reductions over dims on CUDA devices: sum, mean, prod, amax and amin, each run by the
// kernel generated from its reduction program (Note [Reduction programs] in
// runtime/kernels/reduction_programs.cpp) for the launch's layout rank and form (Note [Eager
// CUDA reduction layouts] in codegen/cuda/eager_reduction.cpp), built on first use.
#include "kiln/runtime/cuda/cuda_reduction_ops.h"

#include <functional>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/codegen/cuda/eager_reduction.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/kernels/reduction_programs.h"
#include "kiln/runtime/kernels/reduction_strategy.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

constexpr const char* kReductions[] = {"sum", "mean", "prod", "amax", "amin"};

bool needs_nonempty(const OpDef& op) {
  return op.name == "amax" || op.name == "amin";
}

struct ReductionKey {
  ReductionProgramSpec spec;
  int device = 0;
  bool operator==(const ReductionKey&) const = default;
};
struct ReductionKeyHash {
  size_t operator()(const ReductionKey& k) const {
    const ReductionProgramSpec& s = k.spec;
    return static_cast<size_t>(s.op) | static_cast<size_t>(s.input) << 3 |
           static_cast<size_t>(s.accumulate) << 8 | static_cast<size_t>(s.output) << 13 |
           static_cast<size_t>(s.mean) << 18 | static_cast<size_t>(s.kept_dims) << 19 |
           static_cast<size_t>(s.reduced_dims) << 23 | static_cast<size_t>(s.serial) << 27 |
           static_cast<size_t>(k.device) << 28;
  }
};

}  // namespace

cg::EagerReductionLayout reduction_launch_layout(const OpDef& op, const Tensor& x,
                                                 const Tensor& out, const void* attrs) {
  const auto& a = attrs_as<ReduceAttrs>(attrs);
  ReducePlan p = plan_reduction(op, x, a.dims);
  std::vector<int64_t> out_strides;
  for (size_t i = 0; i < p.kept.size(); ++i)
    out_strides.push_back(out.stride(a.keepdim ? p.kept[i] : static_cast<int64_t>(i)));
  return cg::make_eager_reduction_layout(op.name, x.sizes(), x.strides(), p.reduced, out_strides);
}

ReductionLayout reduction_layout_of(const cg::EagerReductionLayout& l) {
  ReductionLayout r;
  for (int d = 0; d < l.kept.ndim; ++d) {
    r.kept_sizes.push_back(l.kept.sizes[d]);
    r.out_strides.push_back(l.kept.strides[0][d]);
    r.in_kept_strides.push_back(l.kept.strides[1][d]);
  }
  for (int d = 0; d < l.reduced.ndim; ++d) {
    r.reduced_sizes.push_back(l.reduced.sizes[d]);
    r.in_reduced_strides.push_back(l.reduced.strides[0][d]);
  }
  return r;
}

namespace {

void reduction_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                           std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<ReduceAttrs>(attrs);
  const Tensor& x = inputs[0];
  const Tensor& out = outputs[0];
  KILN_CHECK(x.device() == out.device(),
             "{}: expected the input and output on one device, got {} and {}", op.name, x.device(),
             out.device());
  if (needs_nonempty(op)) check_nonempty_reduction(op, x, plan_reduction(op, x, a.dims));
  if (out.numel() == 0) return;
  cg::EagerReductionLayout layout = reduction_launch_layout(op, x, out, attrs);
  // The kernel generated from the reduction program of this op, dtypes and layout rank (Note
  // [Reduction programs]), with the layout's sizes and strides as its size parameters.
  ReductionProgramSpec spec = reduction_spec(op, x.dtype(), out.dtype());
  spec.kept_dims = layout.kept.ndim;
  spec.reduced_dims = layout.reduced.ndim;
  spec.serial = layout.entry == 1;
  ReductionKey key{spec, out.device().index};
  // Never destroyed: kernels may run during exit.
  static auto* kernels = new cuda::EagerKernelCache<ReductionKey, ReductionKeyHash>();
  auto kernel =
      kernels->get(key, key.device, 2, [&] { return cg::emit_cuda(reduction_program(spec)); });
  void* buffers[] = {out.impl()->data(), x.impl()->data()};
  kernel->launch_sized(buffers, reduction_layout_of(layout).sizes(), layout.kept.numel);
}

}  // namespace

bool has_cuda_reduction_kernel(const OpDef& op) {
  return op.compute[static_cast<int>(DispatchKey::CUDA)] == reduction_cuda_kernel;
}

void register_cuda_reduction_kernels(OpTable& table) {
  for (const char* name : kReductions)
    table.mutable_op(name).compute[static_cast<int>(DispatchKey::CUDA)] = reduction_cuda_kernel;
}

}  // namespace kiln
