// scaled_dot_product_flash_attention and its backward on CUDA devices: the kernels of
// codegen/cuda/eager_attention.cpp (Note [Eager CUDA flash attention]), one per dtype and
// head-dim bound, reading the inputs through their strides.
#include <functional>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/eager_attention.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/cuda/cuda_kernel_cache.h"
#include "kiln/runtime/cuda/cuda_kernels.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/attention_attrs.h"
#include "kiln/runtime/kernels/attention_ops.h"

namespace kiln {
namespace {

namespace cg = codegen::cuda;

struct AttentionKernelKey {
  bool backward = false;
  DType dtype = kFloat32;
  int head_dim = 0;
  int device = 0;
  bool operator==(const AttentionKernelKey&) const = default;
};
struct AttentionKernelKeyHash {
  size_t operator()(const AttentionKernelKey& k) const {
    return std::hash<int>()(k.head_dim) ^ (static_cast<size_t>(k.dtype) << 12) ^
           (static_cast<size_t>(k.device) << 20) ^ (k.backward ? 1u << 30 : 0u);
  }
};

std::shared_ptr<const cg::CudaKernel> attention_kernel(const OpDef& op, bool backward, DType dtype,
                                                       const AttentionSizes& z, int device) {
  int d = cg::eager_attention_head_dim(z.E, z.Ev);
  KILN_CHECK(d > 0, "{}: the CUDA kernel takes head dims up to 256, got E = {} and Ev = {}",
             op.name, z.E, z.Ev);
  // Never destroyed: kernels may run during exit.
  static auto* cache = new cuda::EagerKernelCache<AttentionKernelKey, AttentionKernelKeyHash>();
  AttentionKernelKey key{backward, dtype, d, device};
  size_t buffers = backward ? 13 : 8;
  return cache->get(key, device, buffers, [&] {
    return backward ? cg::eager_attention_backward_source(dtype, d)
                    : cg::eager_attention_forward_source(dtype, d);
  });
}

// The per-batch-entry offsets and the last two strides of `tensors` (undefined ones give
// zeros), as int64 device arrays.
struct Layouts {
  Tensor offsets, strides;
};
Layouts layouts(std::initializer_list<const Tensor*> tensors, int64_t batch, int64_t batch_dims,
                Device device) {
  std::vector<int64_t> off, st;
  for (const Tensor* t : tensors) {
    if (t == nullptr) {
      off.insert(off.end(), static_cast<size_t>(batch), 0);
      st.insert(st.end(), 2, 0);
      continue;
    }
    std::vector<int64_t> o = attention_batch_offsets(*t, batch_dims);
    off.insert(off.end(), o.begin(), o.end());
    st.push_back(t->stride(t->dim() - 2));
    st.push_back(t->stride(t->dim() - 1));
  }
  auto n_off = static_cast<int64_t>(off.size()), n_st = static_cast<int64_t>(st.size());
  return {from_vector<int64_t>(off, {n_off}).to(device),
          from_vector<int64_t>(st, {n_st}).to(device)};
}

// The kernels' scalar parameters, as the launch passes them (by address).
struct Scalars {
  long long batch, L, S, E, Ev;
  float scale32;
  double scale64;
  bool wide;         // float64 kernels take a double scale
  int causal, kind;  // kind: 0 no mask, 1 bool, 2 additive
  Scalars(const AttentionSizes& z, const AttentionAttrs& a, DType dtype, const Tensor* mask)
      : batch(z.batch),
        L(z.L),
        S(z.S),
        E(z.E),
        Ev(z.Ev),
        scale32(static_cast<float>(a.scale_for(z.E))),
        scale64(a.scale_for(z.E)),
        wide(dtype == kFloat64),
        causal(a.is_causal ? 1 : 0),
        kind(mask == nullptr ? 0 : (mask->dtype() == kBool ? 1 : 2)) {}
  void* scale() { return wide ? static_cast<void*>(&scale64) : &scale32; }
};

void* data_of(const Tensor* t) {
  return t == nullptr ? nullptr : t->impl()->data();
}

void flash_attention_cuda(const OpDef& op, std::span<const Tensor> outputs,
                          std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<AttentionAttrs>(attrs);
  check_same_device(op, inputs, outputs[0]);
  const Tensor &q = inputs[0], &k = inputs[1], &v = inputs[2];
  const Tensor* mask = a.has_mask ? &inputs[3] : nullptr;
  AttentionSizes z = attention_sizes(q, k, v);
  if (z.batch == 0 || z.L == 0) return;
  Device device = outputs[0].device();
  auto kernel = attention_kernel(op, false, q.dtype(), z, device.index);
  Layouts lay = layouts({&q, &k, &v, mask}, z.batch, q.dim() - 2, device);
  void *out = outputs[0].impl()->data(), *lse = outputs[1].impl()->data();
  void *qp = q.impl()->data(), *kp = k.impl()->data(), *vp = v.impl()->data();
  void *mp = data_of(mask), *offs = lay.offsets.impl()->data(), *st = lay.strides.impl()->data();
  Scalars sc(z, a, q.dtype(), mask);
  void* args[] = {&out,      &lse,  &qp,   &kp,   &vp,    &mp,        &offs,      &st,
                  &sc.batch, &sc.L, &sc.S, &sc.E, &sc.Ev, sc.scale(), &sc.causal, &sc.kind};
  kernel->launch_entry(0, args, z.batch * ((z.L + 63) / 64));
}

void flash_attention_backward_cuda(const OpDef& op, std::span<const Tensor> outputs,
                                   std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<AttentionAttrs>(attrs);
  check_same_device(op, inputs, outputs[0]);
  const Tensor &g = inputs[0], &q = inputs[1], &k = inputs[2], &v = inputs[3], &o = inputs[4];
  Tensor lse = inputs[5].contiguous();
  const Tensor* mask = a.has_mask ? &inputs[6] : nullptr;
  AttentionSizes z = attention_sizes(q, k, v);
  if (z.batch == 0) return;
  Device device = outputs[0].device();
  // Keys that no query reaches (L = 0) get a gradient of 0 from the second entry's empty sum.
  auto kernel = attention_kernel(op, true, q.dtype(), z, device.index);
  Layouts lay = layouts({&g, &q, &k, &v, &o, mask}, z.batch, q.dim() - 2, device);
  Tensor dsum = empty_tensor({z.batch, z.L}, attention_lse_dtype(q.dtype()), device);
  void *dq = outputs[0].impl()->data(), *dk = outputs[1].impl()->data();
  void *dv = outputs[2].impl()->data(), *ds = dsum.impl()->data();
  void *gp = g.impl()->data(), *qp = q.impl()->data(), *kp = k.impl()->data();
  void *vp = v.impl()->data(), *op_ = o.impl()->data(), *lp = lse.impl()->data();
  void *mp = data_of(mask), *offs = lay.offsets.impl()->data(), *st = lay.strides.impl()->data();
  Scalars sc(z, a, q.dtype(), mask);
  void* args[] = {&dq,   &dk,   &dv,   &ds,    &gp,        &qp,        &kp,
                  &vp,   &op_,  &lp,   &mp,    &offs,      &st,        &sc.batch,
                  &sc.L, &sc.S, &sc.E, &sc.Ev, sc.scale(), &sc.causal, &sc.kind};
  kernel->launch_entry(0, args, z.batch * ((z.L + 63) / 64));
  kernel->launch_entry(1, args, z.batch * ((z.S + 63) / 64));
}

}  // namespace

void register_cuda_attention_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  table.mutable_op("scaled_dot_product_flash_attention").compute[kCuda] = flash_attention_cuda;
  table.mutable_op("scaled_dot_product_flash_attention_backward").compute[kCuda] =
      flash_attention_backward_cuda;
}

}  // namespace kiln
