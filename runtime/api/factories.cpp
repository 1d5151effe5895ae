#include "kiln/runtime/api/factories.h"

#include <cstring>

#include "kiln/base/call_site.h"
#include "kiln/base/philox.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/factory_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {

namespace {

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad_) t.requires_grad_(true);
  return t;
}

const OpDef& op_named(const char* name) {
  return get_op(name);
}

}  // namespace

Tensor empty(Shape size, TensorOptions options, std::source_location loc) {
  return empty_symint(to_sym_shape(size), std::move(options), loc);
}
Tensor empty_symint(SymShape size, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  static const OpDef& op = op_named("empty");
  FullAttrs a{std::move(size), 0, options.dtype_or(), options.device_or()};
  return finish(call_op1(op, {}, a), options);
}

Tensor full(Shape size, const Scalar& value, TensorOptions options, std::source_location loc) {
  return full_symint(to_sym_shape(size), value, std::move(options), loc);
}
Tensor full_symint(SymShape size, const Scalar& value, TensorOptions options,
                   std::source_location loc) {
  CallSiteScope site(loc);
  static const OpDef& op = op_named("full");
  FullAttrs a{std::move(size), value, options.dtype_or(), options.device_or()};
  return finish(call_op1(op, {}, a), options);
}

Tensor zeros(Shape size, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return full(std::move(size), 0, options);
}
Tensor ones(Shape size, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return full(std::move(size), 1, options);
}

Tensor arange(const Scalar& end, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return arange(0, end, 1, options);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions options,
              std::source_location loc) {
  CallSiteScope site(loc);
  static const OpDef& op = op_named("arange");
  bool all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
  ArangeAttrs a{start, end, step, options.dtype_or(all_int ? kInt64 : kDefaultFloat),
                options.device_or()};
  return finish(call_op1(op, {}, a), options);
}

Tensor arange_symint(const SymInt& end, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  if (std::optional<int64_t> n = end.maybe_int()) return arange(*n, options);
  DType dtype = options.dtype_or(kInt64);
  Tensor ones = full_symint({end}, 1, options.dtype(dtype));
  return sub(ones.cumsum(0).to(dtype), 1);
}

Tensor scalar_tensor_symint(const SymInt& n, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  TensorOptions o = options.dtype(options.dtype_or(kInt64));
  if (std::optional<int64_t> v = n.maybe_int()) return full({}, *v, o);
  return full_symint({n}, 1, o).sum();
}

namespace {
Tensor random_tensor(const char* name, Shape size, const TensorOptions& options, bool normal) {
  const OpDef& op = op_named(name);
  DType dtype = options.dtype_or();
  KILN_CHECK(is_floating(dtype), "{}: expected a floating point dtype, got {}", name, dtype);
  uint64_t elements_per_block = random_elements_per_block(normal, dtype == kFloat64);
  auto numel = static_cast<uint64_t>(shape_numel(size));
  GeneratorState g = reserve_random_blocks((numel + elements_per_block - 1) / elements_per_block);
  RandomAttrs a{std::move(size), dtype, options.device_or(), static_cast<int64_t>(g.seed),
                static_cast<int64_t>(g.offset)};
  return finish(call_op1(op, {}, a), options);
}
}  // namespace

Tensor rand(Shape size, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return random_tensor("rand", std::move(size), options, false);
}
Tensor randn(Shape size, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return random_tensor("randn", std::move(size), options, true);
}

TensorOptions like_options(const Tensor& x, const TensorOptions& options) {
  TensorOptions o = options;
  o.dtype_opt = options.dtype_or(x.dtype());
  o.device_opt = options.device_or(x.device());
  return o;
}
namespace {
// x's sizes as a symbolic trace sees them, so that the *_like factories keep its symbols.
SymShape like_sizes(const Tensor& x) {
  return x.sym_sizes();
}
}  // namespace

Tensor empty_like(const Tensor& x, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return empty_symint(like_sizes(x), like_options(x, options));
}
Tensor zeros_like(const Tensor& x, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return full_symint(like_sizes(x), 0, like_options(x, options));
}
Tensor ones_like(const Tensor& x, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return full_symint(like_sizes(x), 1, like_options(x, options));
}
Tensor full_like(const Tensor& x, const Scalar& value, TensorOptions options,
                 std::source_location loc) {
  CallSiteScope site(loc);
  return full_symint(like_sizes(x), value, like_options(x, options));
}

namespace detail {
Tensor from_host(const void* data, size_t count, DType src_dtype, Shape size,
                 const TensorOptions& options, std::source_location loc) {
  CallSiteScope site(loc);
  if (size.empty() && count != 1) size = Shape{static_cast<int64_t>(count)};
  KILN_CHECK(shape_numel(size) == static_cast<int64_t>(count),
             "from_vector: {} elements cannot fill a tensor of shape {} ({} elements)", count,
             shape_str(size), shape_numel(size));
  Device device = options.device_or();
  Tensor t = empty_tensor(size, src_dtype, kCPU);
  // impl()->data(), not raw_data(): filling a new tensor is no data-dependent read, and a
  // traced function may build constants this way.
  if (count > 0) std::memcpy(t.impl()->data(), data, count * element_size(src_dtype));
  // Built by a function being traced: a constant of its graph (TracingState::on_host_tensor).
  if (is_tracing()) current_tracing_state()->on_host_tensor(t);
  DType want = options.dtype_or(src_dtype);
  if (want != src_dtype) t = t.to(want);
  // Another device's tensor is the host values copied there, as torch.tensor(..., device=).
  if (!device.is_cpu()) t = t.to(device);
  return finish(t, options);
}
}  // namespace detail

}  // namespace kiln
