// softmax, log_softmax and layer_norm on CUDA devices, each one kernel with a block per row
// (Note [Eager CUDA normalization kernels] in codegen/cuda/eager_normalization.cpp), built on
// the first call with its op and dtype. Their backward formulas are Tensor ops
// (nn_derivatives.cpp), which run on the pointwise and reduction kernels.
#include <functional>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/eager_normalization.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/nn_attrs.h"
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

void softmax_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                         std::span<const Tensor> inputs, const void* attrs) {
  const Tensor& x = inputs[0];
  const Tensor& out = outputs[0];
  check_same_device(op, inputs, out);
  int64_t nd = x.dim();
  int64_t dim = wrap_dim(op.name, attrs_as<SoftmaxAttrs>(attrs).dim, nd);
  if (out.numel() == 0) return;
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides(2);
  for (int64_t d = 0; d < nd; ++d) {
    if (d == dim) continue;
    sizes.push_back(x.size(d));
    strides[0].push_back(out.stride(d));
    strides[1].push_back(x.stride(d));
  }
  cg::EagerIndexer rows = cg::make_eager_indexer(op.name, sizes, strides);
  long long n = nd == 0 ? 1 : x.size(dim);
  long long in_step = nd == 0 ? 0 : x.stride(dim);
  long long out_step = nd == 0 ? 0 : out.stride(dim);
  cuda::OpDTypeKey key{&op, x.dtype(), x.dtype(), out.device().index};
  bool log = op.name == "log_softmax";
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 2, [&] { return cg::eager_softmax_source(x.dtype(), log); });
  void* out_ptr = out.impl()->data();
  void* in_ptr = x.impl()->data();
  void* args[] = {&out_ptr, &in_ptr, &rows, &n, &in_step, &out_step};
  // Contiguous rows along the last dim: the row-cached entry (Note [Row-cached normalization
  // entries]).
  int entry = nd > 0 && dim == nd - 1 && x.is_contiguous() && out.is_contiguous()
                  ? cg::eager_normalization_entry(x.dtype(), n, in_ptr, out_ptr)
                  : 0;
  kernel->launch_entry(static_cast<size_t>(entry), args, blocks_for(entry, rows.numel));
}

void layer_norm_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                            std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<LayerNormAttrs>(attrs);
  const Tensor& out = outputs[0];
  check_same_device(op, inputs, out);
  if (out.numel() == 0) return;
  Tensor x = inputs[0].contiguous();
  // The kernel reads the affine tensors in the compute dtype, as the CPU kernel converts them:
  // a float32 weight of a float16 input keeps its bits.
  DType compute = element_size(x.dtype()) == 2 ? kFloat32 : x.dtype();
  auto affine = [&](const Tensor& t) { return t.to(compute).contiguous(); };
  Tensor w = a.has_weight ? affine(inputs[1]) : Tensor();
  Tensor b = a.has_bias ? affine(inputs[a.has_weight ? 2 : 1]) : Tensor();
  KILN_CHECK(out.is_contiguous(), "{}: expected a contiguous output", op.name);
  long long n = shape_numel(a.normalized_shape);
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
  int entry = cg::eager_normalization_entry(x.dtype(), n, in_ptr, out_ptr);
  kernel->launch_entry(static_cast<size_t>(entry), args, blocks_for(entry, rows));
}

}  // namespace

void register_cuda_nn_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  table.mutable_op("softmax").compute[kCuda] = softmax_cuda_kernel;
  table.mutable_op("log_softmax").compute[kCuda] = softmax_cuda_kernel;
  table.mutable_op("layer_norm").compute[kCuda] = layer_norm_cuda_kernel;
}

}  // namespace kiln
