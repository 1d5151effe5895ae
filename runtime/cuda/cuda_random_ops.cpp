// rand, randn, dropout and arange on CUDA devices: elementwise kernels that compute element i
// from the op's (seed, offset) by the same Philox functions as the CPU kernels (Note [Random
// streams]), so a CUDA tensor drawn with a seed holds the CPU's uniform values bitwise and its
// normal values to double rounding.
#include <functional>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/eager_random.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/factory_attrs.h"
#include "kiln/runtime/kernels/random_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

std::shared_ptr<const cg::CudaKernel> kernel_for(const OpDef& op, const Tensor& out, size_t buffers,
                                                 const std::function<cg::CudaSource()>& source) {
  KILN_CHECK(out.is_contiguous(), "{}: expected a contiguous output", op.name);
  cuda::OpDTypeKey key{&op, out.dtype(), out.dtype(), out.device().index};
  return cuda::op_dtype_kernels().get(key, key.device, buffers, source);
}

void random_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor>,
                        const void* attrs) {
  const auto& a = attrs_as<RandomAttrs>(attrs);
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  cg::EagerRandom kind = op.name == "randn" ? cg::EagerRandom::Normal : cg::EagerRandom::Uniform;
  auto kernel = kernel_for(op, out, 1, [&] { return cg::eager_random_source(kind, out.dtype()); });
  void* out_ptr = out.impl()->data();
  long long numel = out.numel();
  auto seed = static_cast<unsigned long long>(a.seed);
  auto offset = static_cast<unsigned long long>(a.offset);
  void* args[] = {&out_ptr, &numel, &seed, &offset};
  kernel->launch_entry(0, args, numel);
}

void dropout_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                         std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<DropoutAttrs>(attrs);
  const Tensor& out = outputs[0];
  KILN_CHECK(inputs[0].device() == out.device(), "{}: expected all tensors on {}, got one on {}",
             op.name, out.device(), inputs[0].device());
  if (out.numel() == 0) return;
  Tensor x = inputs[0].contiguous();  // element i of the row-major input (Note [Random streams])
  auto kernel = kernel_for(
      op, out, 2, [&] { return cg::eager_random_source(cg::EagerRandom::Dropout, out.dtype()); });
  void* out_ptr = out.impl()->data();
  void* in_ptr = x.impl()->data();
  long long numel = out.numel();
  auto seed = static_cast<unsigned long long>(a.seed);
  auto offset = static_cast<unsigned long long>(a.offset);
  double p = a.p;
  double scale = a.p < 1 ? 1.0 / (1.0 - a.p) : 0.0;  // as the CPU kernel's
  void* args[] = {&out_ptr, &in_ptr, &numel, &seed, &offset, &p, &scale};
  kernel->launch_entry(0, args, numel);
}

void arange_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor>,
                        const void* attrs) {
  const auto& a = attrs_as<ArangeAttrs>(attrs);
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  auto kernel = kernel_for(op, out, 1, [&] { return cg::eager_arange_source(out.dtype()); });
  void* out_ptr = out.impl()->data();
  long long numel = out.numel();
  double start = a.start.to_double(), step = a.step.to_double();
  void* args[] = {&out_ptr, &numel, &start, &step};
  kernel->launch_entry(0, args, numel);
}

}  // namespace

void register_cuda_random_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  table.mutable_op("rand").compute[kCuda] = random_cuda_kernel;
  table.mutable_op("randn").compute[kCuda] = random_cuda_kernel;
  table.mutable_op("dropout").compute[kCuda] = dropout_cuda_kernel;
  table.mutable_op("arange").compute[kCuda] = arange_cuda_kernel;
}

}  // namespace kiln
