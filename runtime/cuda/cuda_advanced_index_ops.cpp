// index, index_put, index_put_, nonzero and masked_select on CUDA devices (Note [Eager CUDA
// index kernels] in codegen/cuda/eager_indexing.cpp, Note [Advanced index schema] in
// runtime/kernels/advanced_index.h). The index tensors become one offset per position of their
// broadcast shape B through device ops (wrapping negative indices, and raising the CPU's error
// for one out of range, which reads a flag back); index then runs the gather kernel and
// index_put the scatter kernel over those offsets. nonzero counts with cumsum's kernel and
// writes coordinates with its own; masked_select is index_select at nonzero's positions.
#include <fmt/format.h>

#include <limits>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/eager_indexing.h"
#include "kiln/runtime/api/advanced_index_ops.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/indexing_ops.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/api/reduction_ops.h"
#include "kiln/runtime/api/sort_ops.h"
#include "kiln/runtime/cuda/cuda_index_check.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/kernels/advanced_index.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

// Offsets are checked before the kernels read them: any value passes the kernels' own check.
constexpr long long kAnyOffset = std::numeric_limits<long long>::max();

IndexGeometry geometry_of(const OpDef& op, const Tensor& self, std::span<const Tensor> indices,
                          ShapeRef dims) {
  std::vector<ShapeRef> shapes;
  std::vector<DType> dtypes;
  for (const Tensor& t : indices) {
    shapes.push_back(t.sizes());
    dtypes.push_back(t.dtype());
  }
  return index_geometry(op.name, self.sizes(), shapes, dtypes, dims);
}

// sum_k wrap(i_k) * strides[dims[k]] over B, a contiguous int64 tensor on the indices' device.
Tensor device_offsets(const OpDef& op, const IndexGeometry& g, ShapeRef sizes, ShapeRef strides,
                      std::span<const Tensor> indices, ShapeRef dims) {
  Tensor total = zeros(g.index_shape, TensorOptions(kInt64).device(indices[0].device()));
  for (size_t k = 0; k < indices.size(); ++k) {
    auto d = static_cast<size_t>(dims[k]);
    int64_t size = sizes[d];
    const Tensor& i = indices[k];
    Tensor bad = logical_or(lt(i, Scalar(-size)), ge(i, Scalar(size)));
    if (any(bad).to(kCPU).item<bool>()) {
      int64_t v = masked_select(i, bad).to(kCPU).to_vector<int64_t>().at(0);
      KILN_ERROR("{}: index {} is out of bounds for dimension {} with size {}", op.name, v, d,
                 size);
    }
    Tensor wrapped = where(lt(i, Scalar(0)), add(i, Scalar(size)), i);
    total = add(total, mul(wrapped, Scalar(strides[d])));
  }
  return total.contiguous();
}

std::vector<int64_t> vec(ShapeRef s) {
  return {s.begin(), s.end()};
}

void index_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                       std::span<const Tensor> inputs, const void* attrs) {
  const Tensor &x = inputs[0], &out = outputs[0];
  check_same_device(op, inputs, out);
  const Shape& dims = attrs_as<IndexAttrs>(attrs).dims;
  IndexGeometry g = geometry_of(op, x, inputs.subspan(1), dims);
  Tensor offsets = device_offsets(op, g, x.sizes(), x.strides(), inputs.subspan(1), dims);
  if (out.numel() == 0) return;
  IndexSteps steps = index_steps(g, x.strides());
  std::vector<std::vector<int64_t>> strides = {vec(out.strides()), vec(steps.self_step),
                                               vec(steps.b_step)};
  cg::EagerIndexer ix = cg::make_eager_indexer(op.name, vec(g.result), strides);
  cuda::OpDTypeKey key{&op, x.dtype(), x.dtype(), out.device().index};
  auto kernel = cuda::op_dtype_kernels().get(
      key, key.device, 3, [&] { return cg::eager_gather_source(x.element_size()); });
  void* out_ptr = out.impl()->data();
  void* x_ptr = x.impl()->data();
  void* offsets_ptr = offsets.impl()->data();
  cuda::DeviceIndexCheck check(out.device());  // never set: the offsets were checked
  void* bad_ptr = check.pointer();
  long long step = 1, size = kAnyOffset;
  void* args[] = {&out_ptr, &x_ptr, &offsets_ptr, &ix, &step, &size, &bad_ptr};
  kernel->launch_entry(0, args, ix.numel);
}

struct ScatterKey {
  DType dtype = kFloat32;
  bool accumulate = false;
  int device = 0;
  bool operator==(const ScatterKey&) const = default;
};
struct ScatterKeyHash {
  size_t operator()(const ScatterKey& k) const {
    return static_cast<size_t>(k.dtype) | static_cast<size_t>(k.accumulate) << 8 |
           static_cast<size_t>(k.device) << 9;
  }
};

// out (holding self's values) takes values at the indexed positions: a thread per position of
// the dims of the result that self keeps, looping over B in row-major order.
void index_put_into(const OpDef& op, const Tensor& out, const Tensor& values,
                    std::span<const Tensor> indices, const IndexPutAttrs& a) {
  IndexGeometry g = geometry_of(op, out, indices, a.dims);
  Tensor offsets = device_offsets(op, g, out.sizes(), out.strides(), indices, a.dims);
  if (shape_numel(g.result) == 0) return;
  IndexSteps steps = index_steps(g, out.strides());
  // values broadcast to the result, with B's dims first and flattened: [|B|, kept dims...].
  std::vector<int64_t> order, kept_sizes, out_steps;
  for (size_t j = 0; j < g.result.size(); ++j) {
    if (g.self_dim[j] < 0) order.push_back(static_cast<int64_t>(j));
  }
  for (size_t j = 0; j < g.result.size(); ++j) {
    if (g.self_dim[j] >= 0) {
      order.push_back(static_cast<int64_t>(j));
      kept_sizes.push_back(g.result[j]);
      out_steps.push_back(steps.self_step[j]);
    }
  }
  Tensor v = values.expand(g.result).permute(order).contiguous();
  long long n = shape_numel(g.index_shape);
  long long kept = std::accumulate(kept_sizes.begin(), kept_sizes.end(), 1LL,
                                   [](long long p, int64_t s) { return p * s; });
  std::vector<int64_t> v_steps(kept_sizes.size());
  for (size_t j = kept_sizes.size(); j-- > 0;)
    v_steps[j] = j + 1 == kept_sizes.size() ? 1 : v_steps[j + 1] * kept_sizes[j + 1];
  std::vector<std::vector<int64_t>> strides = {out_steps,
                                               std::vector<int64_t>(kept_sizes.size(), 0), v_steps};
  cg::EagerIndexer ix = cg::make_eager_indexer(op.name, kept_sizes, strides);
  static auto* cache = new cuda::EagerKernelCache<ScatterKey, ScatterKeyHash>();
  ScatterKey key{out.dtype(), a.accumulate, out.device().index};
  auto kernel = cache->get(key, key.device, 3,
                           [&] { return cg::eager_scatter_add_source(out.dtype(), a.accumulate); });
  void* out_ptr = out.impl()->data();
  void* offsets_ptr = offsets.impl()->data();
  void* src_ptr = v.impl()->data();
  cuda::DeviceIndexCheck check(out.device());  // never set: the offsets were checked
  void* bad_ptr = check.pointer();
  long long index_step = 1, src_step = kept, out_step = 1, size = kAnyOffset;
  void* args[] = {&out_ptr,    &offsets_ptr, &src_ptr,  &ix,   &n,
                  &index_step, &src_step,    &out_step, &size, &bad_ptr};
  kernel->launch_entry(0, args, ix.numel);
}

void index_put_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                           std::span<const Tensor> inputs, const void* attrs) {
  check_same_device(op, inputs, outputs[0]);
  copy_into(outputs[0], inputs[0]);
  index_put_into(op, outputs[0], inputs[1], inputs.subspan(2), attrs_as<IndexPutAttrs>(attrs));
}

// index_put_: outputs[0] is self.
void index_put_inplace_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                                   std::span<const Tensor> inputs, const void* attrs) {
  check_same_device(op, inputs, outputs[0]);
  index_put_into(op, outputs[0], inputs[1], inputs.subspan(2), attrs_as<IndexPutAttrs>(attrs));
}

// The coordinates of x's nonzero elements, [n, x.dim()] int64, in row-major order.
Tensor nonzero_of(const OpDef& op, const Tensor& x) {
  KILN_CHECK(x.dim() <= cg::kNonzeroMaxDims,
             "{}: at most {} dims on CUDA, got a tensor of shape {}", op.name, cg::kNonzeroMaxDims,
             shape_str(x.sizes()));
  Tensor flags = ne(x, Scalar(0)).reshape({-1});  // NaN is nonzero, as in torch
  Tensor count = cumsum(flags, 0, kInt64);
  int64_t n = x.numel() == 0 ? 0 : count.select(0, x.numel() - 1).to(kCPU).item<int64_t>();
  Tensor out = empty_tensor({n, x.dim()}, kInt64, x.device());
  if (n == 0 || x.dim() == 0) return out;
  cg::NonzeroSizes sizes;
  sizes.ndim = static_cast<int>(x.dim());
  for (int64_t d = 0; d < x.dim(); ++d)
    sizes.sizes[d] = x.size(d);
  cuda::OpDTypeKey key{&op, kInt64, kInt64, x.device().index};
  auto kernel =
      cuda::op_dtype_kernels().get(key, key.device, 2, [] { return cg::eager_nonzero_source(); });
  void* out_ptr = out.impl()->data();
  void* count_ptr = count.impl()->data();
  long long numel = x.numel();
  void* args[] = {&out_ptr, &count_ptr, &sizes, &numel};
  kernel->launch_entry(0, args, numel);
  return out;
}

std::vector<Tensor> nonzero_cuda(const OpDef& op, std::span<const Tensor> inputs, const void*) {
  return {nonzero_of(op, inputs[0])};
}

std::vector<Tensor> masked_select_cuda(const OpDef& op, std::span<const Tensor> inputs,
                                       const void*) {
  const Tensor &x = inputs[0], &mask = inputs[1];
  KILN_CHECK(mask.dtype() == kBool, "{}: expected mask to be a bool tensor, but got {} (shape {})",
             op.name, mask.dtype(), shape_str(mask.sizes()));
  KILN_CHECK(x.device() == mask.device(), "{}: expected self and mask on one device, got {} and {}",
             op.name, x.device(), mask.device());
  Shape b = broadcast_shapes(op.name, x.sizes(), mask.sizes());
  Tensor positions = nonzero_of(op, mask.expand(b).reshape({-1})).reshape({-1});
  return {index_select(x.expand(b).reshape({-1}), 0, positions)};
}

}  // namespace

void register_cuda_advanced_index_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  table.mutable_op("index").compute[kCuda] = index_cuda_kernel;
  table.mutable_op("index_put").compute[kCuda] = index_put_cuda_kernel;
  table.mutable_op("index_put_").compute[kCuda] = index_put_inplace_cuda_kernel;
  table.mutable_op("nonzero").boxed[kCuda] = nonzero_cuda;
  table.mutable_op("masked_select").boxed[kCuda] = masked_select_cuda;
}

}  // namespace kiln
