#include "kiln/runtime/kernel_args.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/base/error.h"
#include "kiln/kernel_ir/kernel_interpreter.h"

namespace kiln::kir {
namespace {

BoundBuffer bind(const Kernel& k, size_t i, const Tensor& t, std::string_view who) {
  const Buffer& b = k.buffers[i];
  KILN_CHECK(t.defined(),
             "{}: kernel {}: argument {} for buffer %{} is an "
             "undefined tensor",
             who, k.name, i, b.name);
  KILN_CHECK(t.device().is_cpu(),
             "{}: kernel {}: argument {} for buffer %{} is on {}; the "
             "backend runs on the CPU",
             who, k.name, i, b.name, t.device());
  KILN_CHECK(t.dtype() == b.dtype, "{}: kernel {}: buffer %{} is {}, but argument {} is {}", who,
             k.name, b.name, dtype_short_name(b.dtype), i, dtype_short_name(t.dtype()));
  // Memory from element 0 to the end of the storage: what the kernel may address.
  auto item = static_cast<int64_t>(t.element_size());
  int64_t addressable =
      static_cast<int64_t>(t.impl()->storage()->nbytes()) / item - t.storage_offset();
  KILN_CHECK(addressable >= b.extent,
             "{}: kernel {}: buffer %{} has extent {}, but argument {} ({} "
             "[{}], storage offset {}) has only {} elements from its first",
             who, k.name, b.name, b.extent, i, dtype_short_name(t.dtype()),
             fmt::join(t.sizes(), ", "), t.storage_offset(), addressable);
  if (b.extent == kRuntimeExtent) {
    // Note [Size parameters]: the buffer is what the tensor's own elements span, which the
    // launch's bounds check holds the kernel to.
    int64_t span = t.numel() == 0 ? 0 : 1;
    for (int64_t d = 0; d < t.dim() && span > 0; ++d)
      span += (t.size(d) - 1) * t.stride(d);
    KILN_CHECK(span <= addressable,
               "{}: kernel {}: argument {} for buffer %{} ({} [{}]) spans {} elements, but its "
               "storage holds {} from its first",
               who, k.name, i, b.name, dtype_short_name(t.dtype()), fmt::join(t.sizes(), ", "),
               span, addressable);
    char* data = span > 0 ? static_cast<char*>(t.raw_data()) : nullptr;
    return {data, b.dtype, span, t.impl()->storage().get()};
  }
  char* data = b.extent > 0 ? static_cast<char*>(t.raw_data()) : nullptr;
  return {data, b.dtype, b.extent, t.impl()->storage().get()};
}

}  // namespace

std::vector<BoundBuffer> bind_arguments(const Kernel& kernel, std::span<const Tensor> args,
                                        std::string_view who) {
  KILN_CHECK(args.size() == kernel.buffers.size(), "{}: kernel {} takes {} buffers, got {} tensors",
             who, kernel.name, kernel.buffers.size(), args.size());
  std::vector<BoundBuffer> buffers;
  buffers.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i)
    buffers.push_back(bind(kernel, i, args[i], who));
  return buffers;
}

void run_kernel(const Kernel& kernel, std::span<const Tensor> args,
                std::span<const int64_t> sizes) {
  // The buffer overload verifies the kernel; this one only binds.
  std::vector<BoundBuffer> buffers = bind_arguments(kernel, args, "kernel-IR interpreter");
  run_kernel(kernel, std::span<const BoundBuffer>(buffers), sizes);
}

}  // namespace kiln::kir
