// softmax, log_softmax and layer_norm on CUDA devices, each one kernel with a block per row:
// the kernel generated from the op's row program (Note [Row programs]), or, for contiguous rows
// that fit in registers, the hand-written row-cached entries (Note [Row-cached normalization
// entries] in codegen/cuda/eager_normalization.cpp). Built on the first call with the op and
// dtype. Their fused backwards (Note [Fused normalization backward]) run the kernels generated
// from their row programs.
#include <bit>
#include <cstdint>
#include <functional>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/codegen/cuda/eager_normalization.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/kernels/row_programs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

// Blocks for `rows` rows: one each, or one per kEagerNormalizationWarpRows for the
// warp-per-row entry.
int64_t blocks_for(int entry, int64_t rows) {
  if (entry != 2) return rows;
  return (rows + cg::kEagerNormalizationWarpRows - 1) / cg::kEagerNormalizationWarpRows;
}

// The kernels generated from the ops' row programs (Note [Row programs]): one per op, dtype,
// device and, for layer_norm, its affine inputs and eps.
struct RowKey {
  const OpDef* op = nullptr;
  DType dtype = kFloat32;
  int device = 0;
  int affine = 0;
  uint64_t eps_bits = 0;  // the bits, so that every eps (NaN too) matches itself
  bool operator==(const RowKey&) const = default;
};
struct RowKeyHash {
  size_t operator()(const RowKey& k) const {
    return std::hash<const void*>()(k.op) ^ std::hash<uint64_t>()(k.eps_bits) ^
           (static_cast<size_t>(k.dtype) << 1 | static_cast<size_t>(k.device) << 9 |
            static_cast<size_t>(k.affine) << 17);
  }
};

}  // namespace

void run_row_program_cuda(const OpDef& op, std::span<const Tensor> inputs,
                          std::span<const Tensor> outputs, const void* attrs) {
  RowCall call = row_call(op, inputs, outputs, attrs);
  if (call.rows == 0 || call.row_length == 0) return;
  RowKey key{&op, inputs[0].dtype(), outputs[0].device().index, 0, 0};
  if (op.name == "layer_norm" || op.name == "layer_norm_backward") {
    const auto& a = attrs_as<LayerNormAttrs>(attrs);
    key.affine = (a.has_weight ? 1 : 0) | (a.has_bias ? 2 : 0);
    key.eps_bits = std::bit_cast<uint64_t>(a.eps);
  }
  // Never destroyed: kernels may run during exit.
  static auto* kernels = new cuda::EagerKernelCache<RowKey, RowKeyHash>();
  auto kernel = kernels->get(key, key.device, call.buffers.size(),
                             [&] { return cg::emit_cuda(row_program(op, key.dtype, attrs)); });
  std::vector<void*> buffers;
  for (const Tensor& t : call.buffers)
    buffers.push_back(t.impl()->data());
  kernel->launch_sized(buffers, call.sizes, call.rows);
  call.finish(outputs);
}

namespace {

void softmax_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                         std::span<const Tensor> inputs, const void* attrs) {
  const Tensor& x = inputs[0];
  const Tensor& out = outputs[0];
  check_same_device(op, inputs, out);
  int64_t nd = x.dim();
  int64_t dim = wrap_dim(op.name, attrs_as<SoftmaxAttrs>(attrs).dim, nd);
  if (out.numel() == 0) return;
  long long n = nd == 0 ? 1 : x.size(dim);
  void* out_ptr = out.impl()->data();
  void* in_ptr = x.impl()->data();
  // Contiguous rows along the last dim: the row-cached entries (Note [Row-cached normalization
  // entries]); every other call runs the row program.
  int entry = nd > 0 && dim == nd - 1 && x.is_contiguous() && out.is_contiguous()
                  ? cg::eager_normalization_entry(x.dtype(), n, in_ptr, out_ptr)
                  : 0;
  if (entry == 0) return run_row_program_cuda(op, inputs, outputs, attrs);
  cuda::OpDTypeKey key{&op, x.dtype(), x.dtype(), out.device().index};
  bool log = op.name == "log_softmax";
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 2, [&] { return cg::eager_softmax_source(x.dtype(), log); });
  long long rows = x.numel() / n;
  void* args[] = {&out_ptr, &in_ptr, &rows, &n};
  kernel->launch_entry(static_cast<size_t>(entry - 1), args, blocks_for(entry, rows));
}

void layer_norm_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                            std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<LayerNormAttrs>(attrs);
  const Tensor& out = outputs[0];
  check_same_device(op, inputs, out);
  if (out.numel() == 0) return;
  long long n = shape_numel(a.normalized_shape);
  const Tensor& x = inputs[0];
  int entry =
      x.is_contiguous() && out.is_contiguous()
          ? cg::eager_normalization_entry(x.dtype(), n, x.impl()->data(), out.impl()->data())
          : 0;
  if (entry == 0) return run_row_program_cuda(op, inputs, outputs, attrs);
  // The kernel reads the affine tensors in the compute dtype, as the CPU kernel converts them:
  // a float32 weight of a float16 input keeps its bits.
  DType compute = element_size(x.dtype()) == 2 ? kFloat32 : x.dtype();
  auto affine = [&](const Tensor& t) { return t.to(compute).contiguous(); };
  Tensor w = a.has_weight ? affine(inputs[1]) : Tensor();
  Tensor b = a.has_bias ? affine(inputs[a.has_weight ? 2 : 1]) : Tensor();
  long long rows = n == 0 ? 0 : x.numel() / n;
  double eps = a.eps;
  cuda::OpDTypeKey key{&op, x.dtype(), x.dtype(), out.device().index};
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 4, [&] { return cg::eager_layer_norm_source(x.dtype()); });
  void* out_ptr = out.impl()->data();
  void* in_ptr = x.impl()->data();
  void* w_ptr = w.defined() ? w.impl()->data() : nullptr;
  void* b_ptr = b.defined() ? b.impl()->data() : nullptr;
  void* args[] = {&out_ptr, &in_ptr, &w_ptr, &b_ptr, &rows, &n, &eps};
  kernel->launch_entry(static_cast<size_t>(entry - 1), args, blocks_for(entry, rows));
}

// The fused backwards (Note [Fused normalization backward]) always run their row programs.
void row_backward_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                              std::span<const Tensor> inputs, const void* attrs) {
  for (const Tensor& out : outputs)
    check_same_device(op, inputs, out);
  run_row_program_cuda(op, inputs, outputs, attrs);
}

}  // namespace

void register_cuda_nn_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  table.mutable_op("softmax").compute[kCuda] = softmax_cuda_kernel;
  table.mutable_op("log_softmax").compute[kCuda] = softmax_cuda_kernel;
  table.mutable_op("layer_norm").compute[kCuda] = layer_norm_cuda_kernel;
  for (const char* name : {"softmax_backward", "log_softmax_backward", "layer_norm_backward"})
    table.mutable_op(name).compute[kCuda] = row_backward_cuda_kernel;
}

}  // namespace kiln
