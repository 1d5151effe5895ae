// Eager pointwise ops on CUDA devices: every op with a kernel-IR expression (OpDef::expr), their
// in-place twins, fill_ and full, and copy_ within a device, each run by a shape-generic NVRTC
// kernel (Note [Eager CUDA pointwise kernels] in codegen/cuda/eager_pointwise.cpp). A kernel is
// built on the first call with its op, attributes and dtypes, through the CUDA backend's memory
// and disk caches, and kept here per device.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_backend.h"
#include "kiln/codegen/cuda/eager_pointwise.h"
#include "kiln/runtime/cuda/cuda_copy.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/cuda/cuda_pointwise_ops.h"
#include "kiln/runtime/kernels/copy_attrs.h"
#include "kiln/runtime/kernels/factory_attrs.h"
#include "kiln/runtime/kernels/pointwise_kernels.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/type_promotion.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

// What makes two calls share a kernel: the op, its attributes (compared and hashed through the
// op's AttrVTable, so two scalars that print alike are still told apart), the dtypes, the
// dtype a comparison's operands are converted to, and the device.
struct KernelKey {
  const OpDef* op = nullptr;
  std::shared_ptr<void> attrs;  // a clone, owned
  DType output = kFloat32;
  std::vector<DType> inputs;
  int compare_in = -1;  // the comparison's operand dtype, or -1
  int device = 0;

  bool operator==(const KernelKey& o) const {
    if (op != o.op || output != o.output || inputs != o.inputs || compare_in != o.compare_in ||
        device != o.device)
      return false;
    if (attrs == nullptr || o.attrs == nullptr) return attrs == o.attrs;
    return op->attrs->equal(attrs.get(), o.attrs.get());
  }
};

struct KernelKeyHash {
  size_t operator()(const KernelKey& k) const {
    size_t h = std::hash<const void*>()(k.op);
    auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    if (k.attrs != nullptr) mix(k.op->attrs->hash(k.attrs.get()));
    mix(static_cast<size_t>(k.output));
    for (DType t : k.inputs)
      mix(static_cast<size_t>(t));
    mix(static_cast<size_t>(k.compare_in + 1));
    mix(static_cast<size_t>(k.device));
    return h;
  }
};

cuda::EagerKernelCache<KernelKey, KernelKeyHash>& kernel_cache() {
  // Never destroyed: kernels may run during exit.
  static auto* c = new cuda::EagerKernelCache<KernelKey, KernelKeyHash>();
  return *c;
}

bool is_fill(const OpDef& op) {
  return op.name == "fill_" || op.name == "full";
}
bool is_copy(const OpDef& op) {
  return op.name == "copy_";
}

// The op whose expression computes `op`: itself, or an in-place op's out-of-place twin.
const OpDef& expression_op(const OpDef& op) {
  if (op.expr != nullptr) return op;
  return get_op(std::string_view(op.name).substr(0, op.name.size() - 1));
}

// The inputs the kernel reads: none for fills, the source for copy_, all of them otherwise.
template <class T>
std::span<const T> kernel_operands(const OpDef& op, std::span<const T> inputs) {
  if (is_fill(op)) return {};
  if (is_copy(op)) return inputs.subspan(1);
  return inputs;
}

// A comparison's operand dtype: eager compares in result_type, where a zero-dim operand ranks
// below a dimensioned one (as the fusion lowering handles it); the expression sees only dtypes,
// so the operands are converted first.
std::optional<DType> comparison_dtype(const OpDef& op, std::span<const MetaRef> inputs) {
  if (is_fill(op) || is_copy(op) || !expression_op(op).has(kTensorComparison)) return {};
  return result_type(inputs);
}

// Launches `kernel`: element i of out = its value at the operands broadcast to out's shape.
void launch(const OpDef& op, const cg::CudaKernel& kernel, const Tensor& out,
            std::span<const Tensor> operands) {
  std::vector<std::vector<int64_t>> strides;
  std::vector<void*> pointers;
  auto add = [&](const Tensor& t) {
    KILN_CHECK(t.device() == out.device(), "{}: expected all tensors on {}, got one on {}", op.name,
               out.device(), t.device());
    const TensorImpl* impl = t.impl();
    std::vector<int64_t> s(static_cast<size_t>(out.dim()), 0);
    size_t lead = static_cast<size_t>(out.dim() - t.dim());
    for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d)
      s[lead + d] = impl->sizes()[d] == 1 ? 0 : impl->strides()[d];
    strides.push_back(std::move(s));
    pointers.push_back(impl->data());
  };
  add(out);
  for (const Tensor& t : operands)
    add(t);
  cg::EagerIndexer ix = cg::make_eager_indexer(op.name, out.sizes(), strides);
  std::vector<void*> args;
  for (void*& p : pointers)
    args.push_back(&p);
  args.push_back(&ix);
  kernel.launch_entry(0, args, ix.numel);
}

void pointwise_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                           std::span<const Tensor> inputs, const void* attrs) {
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  // A copy (or clone) between same-shaped contiguous tensors of one dtype is a memcpy: the copy
  // engine's bandwidth, which an elementwise kernel does not quite reach.
  if (is_copy(op) || op.name == "clone") {
    const Tensor& src = inputs[is_copy(op) ? 1 : 0];
    if (src.device() == out.device() && src.dtype() == out.dtype() && src.sizes() == out.sizes() &&
        src.is_contiguous() && out.is_contiguous()) {
      // A memcpy's ranges must not overlap: a copy onto itself is nothing to do, and a partly
      // overlapping one (x[1:].copy_(x[:-1])) takes the elementwise kernel, as before.
      auto* a = static_cast<const char*>(out.impl()->data());
      auto* b = static_cast<const char*>(src.impl()->data());
      auto bytes = static_cast<ptrdiff_t>(out.numel() * static_cast<int64_t>(out.element_size()));
      if (a == b) return;
      if (a + bytes <= b || b + bytes <= a) {
        cuda::copy_between_devices(out, src);
        return;
      }
    }
  }
  std::vector<MetaRef> metas;
  for (const Tensor& t : inputs)
    metas.push_back(MetaRef::of(t));
  std::span<const Tensor> operands = kernel_operands(op, inputs);
  KernelKey key;
  key.op = &op;
  if (attrs != nullptr && op.attrs != nullptr)
    key.attrs = std::shared_ptr<void>(op.attrs->clone(attrs), op.attrs->destroy);
  key.output = out.dtype();
  for (const Tensor& t : operands)
    key.inputs.push_back(t.dtype());
  if (std::optional<DType> c = comparison_dtype(op, metas)) key.compare_in = static_cast<int>(*c);
  key.device = out.device().index;
  int device = key.device;
  size_t buffers = key.inputs.size() + 1;
  auto kernel = kernel_cache().get(std::move(key), device, buffers, [&] {
    return cuda_pointwise_source(op, attrs, out.dtype(), metas);
  });
  launch(op, *kernel, out, operands);
}

}  // namespace

codegen::cuda::CudaSource cuda_pointwise_source(const OpDef& op, const void* attrs, DType output,
                                                std::span<const MetaRef> inputs) {
  std::span<const MetaRef> operands = kernel_operands(op, inputs);
  cg::EagerPointwiseSpec spec{op.name, output, {}};
  for (const MetaRef& m : operands)
    spec.inputs.push_back(m.dtype);
  std::optional<DType> compare_in = comparison_dtype(op, inputs);
  auto value = [&](std::span<const kir::Val> loaded) -> kir::Val {
    if (is_fill(op)) {
      const Scalar& v =
          op.name == "full" ? attrs_as<FullAttrs>(attrs).value : attrs_as<FillAttrs>(attrs).value;
      return pointwise::scalar_const(v, output);
    }
    if (is_copy(op)) return loaded[0];  // the store converts it, as a static_cast
    std::vector<kir::Val> args(loaded.begin(), loaded.end());
    if (compare_in) {
      for (kir::Val& a : args)
        a = kir::cast(a, *compare_in);
    }
    const OpDef& math = expression_op(op);
    return math.expr(math, args, attrs, output);
  };
  return cg::eager_pointwise_source(spec, value);
}

bool has_cuda_pointwise_kernel(const OpDef& op) {
  return op.compute[static_cast<int>(DispatchKey::CUDA)] == pointwise_cuda_kernel;
}

void register_cuda_pointwise_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  for (OpDef* op : table.ops()) {
    if (op->compute[kCuda] != nullptr || op->has(kRandom)) continue;
    if (op->expr != nullptr) {
      op->compute[kCuda] = pointwise_cuda_kernel;
    } else if (op->has(kInPlace) && op->name.ends_with('_')) {
      const OpDef* twin = table.find(std::string_view(op->name).substr(0, op->name.size() - 1));
      if (twin != nullptr && twin->expr != nullptr) op->compute[kCuda] = pointwise_cuda_kernel;
    }
  }
  for (const char* name : {"fill_", "full", "copy_"})
    table.mutable_op(name).compute[kCuda] = pointwise_cuda_kernel;
}

}  // namespace kiln
