#include "kiln/runtime/dispatcher.h"

#include <optional>

#include "kiln/base/error.h"
#include "kiln/base/profiler.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln {

std::string_view dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::Meta:
      return "Meta";
    case DispatchKey::CUDA:
      return "CUDA";
    case DispatchKey::CPU:
      return "CPU";
    case DispatchKey::Autograd:
      return "Autograd";
    case DispatchKey::Tracer:
      return "Tracer";
  }
  return "?";
}

LocalDispatchKeySet& local_dispatch_keys() {
  thread_local LocalDispatchKeySet keys;
  return keys;
}

ExcludeDispatchKeysGuard::ExcludeDispatchKeysGuard(DispatchKeySet keys)
    : saved_(local_dispatch_keys().excluded) {
  local_dispatch_keys().excluded = saved_ | keys;
}
ExcludeDispatchKeysGuard::~ExcludeDispatchKeysGuard() {
  local_dispatch_keys().excluded = saved_;
}

IncludeDispatchKeysGuard::IncludeDispatchKeysGuard(DispatchKeySet keys)
    : saved_(local_dispatch_keys().included) {
  local_dispatch_keys().included = saved_ | keys;
}
IncludeDispatchKeysGuard::~IncludeDispatchKeysGuard() {
  local_dispatch_keys().included = saved_;
}

namespace {

DispatchKey backend_key(Device d) {
  switch (d.type) {
    case DeviceType::CPU:
      return DispatchKey::CPU;
    case DeviceType::CUDA:
      return DispatchKey::CUDA;
    case DeviceType::Meta:
      return DispatchKey::Meta;
  }
  return DispatchKey::CPU;
}

}  // namespace

Tensor empty_tensor(const Shape& sizes, DType dtype, Device device) {
  size_t nbytes = checked_nbytes("empty", sizes, element_size(dtype));
  return Tensor(std::make_shared<TensorImpl>(make_storage(nbytes, device), dtype, sizes,
                                             contiguous_strides(sizes), 0));
}

DispatchKeySet call_key_set(const OpDef& op, std::span<const Tensor> inputs, const void* attrs) {
  Device device;
  bool requires_grad = false;
  if (inputs.empty()) {
    KILN_CHECK(op.attr_device != nullptr, "{}: called without tensor inputs", op.name);
    device = op.attr_device(attrs);
  } else {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorImpl* t = inputs[i].impl();
      KILN_CHECK(t != nullptr, "{}: input {} is an undefined tensor", op.name, i);
      if (i == 0) {
        device = t->device();
      } else {
        KILN_CHECK(t->device() == device,
                   "{}: expected all tensors to be on the same device, but found {} (input 0) "
                   "and {} (input {})",
                   op.name, device, t->device(), i);
      }
      // A view's history may have changed through its base since it was last looked at; the
      // autograd kernel finds out (Note [Views in autograd]).
      const autograd::AutogradMeta* meta = t->autograd_meta();
      requires_grad =
          requires_grad || (meta != nullptr && (meta->requires_grad || meta->is_view()));
    }
  }
  DispatchKeySet keys(backend_key(device));
  bool grad_on = GradMode::is_enabled();
  // View ops also record their views when nothing requires grad (Note [Views in autograd]).
  if ((requires_grad && grad_on) || (op.has(kView) && (grad_on || requires_grad)))
    keys = keys.add(DispatchKey::Autograd);
  return keys;
}

namespace {
// The op whose dispatch this thread is in, between its wrapper keys and its backend kernel: a
// wrapper (autograd, tracer) redispatches the same call, which is one op for the profiler.
thread_local const OpDef* t_dispatching = nullptr;

struct DispatchingGuard {
  explicit DispatchingGuard(const OpDef* op) : saved(t_dispatching) { t_dispatching = op; }
  ~DispatchingGuard() { t_dispatching = saved; }
  const OpDef* saved;
};
}  // namespace

std::vector<Tensor> call_op(const OpDef& op, std::span<const Tensor> inputs, const void* attrs) {
  // Without a running profiler a call pays one atomic load here, nothing else.
  std::optional<profiler::RecordScope> scope;
  std::optional<DispatchingGuard> dispatching;
  if (profiler::is_enabled()) {
    if (t_dispatching != &op) scope.emplace(profiler::ScopeKind::Op, op.name);
    dispatching.emplace(&op);
  }
  const LocalDispatchKeySet& local = local_dispatch_keys();
  DispatchKeySet keys = (call_key_set(op, inputs, attrs) | local.included).remove(local.excluded);
  for (int k = kNumDispatchKeys - 1; k >= 0; --k) {
    auto key = static_cast<DispatchKey>(k);
    if (!keys.has(key)) continue;
    if (BoxedKernel kernel = op.boxed[k]) return kernel(op, inputs, attrs);
    if (key == DispatchKey::Meta || key == DispatchKey::CPU || key == DispatchKey::CUDA) {
      return run_backend(op, key, inputs, attrs);
    }
    // A wrapper key with no kernel for this op falls through to the next key.
  }
  KILN_ERROR("{}: no kernel to dispatch to (every key of the call is excluded)", op.name);
}

std::vector<Tensor> run_backend(const OpDef& op, DispatchKey backend,
                                std::span<const Tensor> inputs, const void* attrs) {
  // Most ops have at most a few inputs: keep their MetaRefs on the stack.
  constexpr size_t kInline = 4;
  MetaRef inline_metas[kInline];
  std::vector<MetaRef> heap_metas;
  std::span<MetaRef> metas;
  if (inputs.size() <= kInline) {
    metas = std::span<MetaRef>(inline_metas, inputs.size());
  } else {
    heap_metas.resize(inputs.size());
    metas = heap_metas;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    metas[i] = MetaRef::of(inputs[i]);

  std::vector<OutputGeometry> geoms = op.shape(op, metas, attrs);
  Device device = inputs.empty() ? op.attr_device(attrs) : inputs[0].device();
  std::vector<Tensor> outputs;
  outputs.reserve(geoms.size());
  for (size_t i = 0; i < geoms.size(); ++i) {
    DType dtype = op.dtype(op, metas, attrs, i);
    OutputGeometry& g = geoms[i];
    if (op.has(kView)) {
      checked_numel(op.name, g.sizes);
      const TensorImpl* base = inputs[0].impl();
      outputs.emplace_back(std::make_shared<TensorImpl>(base->storage(), dtype, std::move(g.sizes),
                                                        std::move(g.strides), g.storage_offset));
    } else if (op.has(kInPlace) && i == 0) {
      const TensorImpl* self = inputs[0].impl();
      for (int64_t d = 0; d < self->dim(); ++d) {
        KILN_CHECK(self->strides()[d] != 0 || self->sizes()[d] <= 1,
                   "{}: unsupported operation: more than one element of the written-to tensor "
                   "(shape {}, strides {}) refers to a single memory location; clone() it first",
                   op.name, shape_str(self->sizes()), shape_str(self->strides()));
      }
      KILN_CHECK(g.sizes == inputs[0].sizes(),
                 "{}: the result of shape {} does not fit the in-place output of shape {}", op.name,
                 shape_str(g.sizes), shape_str(inputs[0].sizes()));
      KILN_CHECK(dtype == inputs[0].dtype(),
                 "{}: result type {} can't be cast to the in-place output of dtype {}", op.name,
                 dtype, inputs[0].dtype());
      outputs.push_back(inputs[0]);
    } else {
      // Checked here, under the op's own name, before empty_tensor would name "empty".
      checked_nbytes(op.name, g.sizes, element_size(dtype));
      try {
        outputs.push_back(empty_tensor(g.sizes, dtype, device));
      } catch (const Error& e) {
        KILN_ERROR("{}: could not allocate its output of shape {} and dtype {} on {}: {}", op.name,
                   shape_str(g.sizes), dtype, device, e.what());
      }
    }
  }
  if (!op.has(kView) && backend != DispatchKey::Meta) {
    ComputeKernel kernel = op.compute[static_cast<int>(backend)];
    KILN_CHECK(kernel != nullptr, "{}: no {} kernel (the op has no implementation on {})", op.name,
               dispatch_key_name(backend), device);
    // A kernel may call other ops (a cast, a contiguous copy). Those are part of this op's
    // implementation, not calls the tracer or autograd should see.
    ExcludeDispatchKeysGuard inner(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
    profiler::RecordScope scope(profiler::ScopeKind::Kernel, op.name, dispatch_key_name(backend));
    std::optional<DispatchingGuard> in_kernel;  // ops the kernel calls are calls of their own
    if (profiler::is_enabled()) in_kernel.emplace(nullptr);
    kernel(op, outputs, inputs, attrs);
  }
  if (op.has(kInPlace)) inputs[0].impl()->bump_version();
  return outputs;
}

}  // namespace kiln
