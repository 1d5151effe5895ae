// Tensor's methods: views and conversions through the dispatcher, and the op methods that
// forward to the free functions of ops.h.
#include "kiln/base/call_site.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/indexing_ops.h"
#include "kiln/runtime/api/nn_ops.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/api/reduction_ops.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/autograd/node.h"
#include "kiln/runtime/cuda/cuda_copy.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/tensor_data.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {

namespace detail {
void check_traced_read(const char* accessor, const std::source_location& loc) {
  if (!is_tracing()) return;
  CallSiteScope site(loc);
  current_tracing_state()->on_data_read(accessor);
}

void check_host_access(const Tensor& t, DType want, const char* accessor) {
  check_traced_data_read(accessor);
  KILN_CHECK(t.defined(), "{}: the tensor is undefined", accessor);
  KILN_CHECK(t.dtype() == want, "{}: expected a tensor of dtype {}, but it has dtype {}", accessor,
             want, t.dtype());
  KILN_CHECK(t.device().is_cpu(),
             "{}: the tensor is on {}; only CPU tensors can be read on the host (use .to(kCPU))",
             accessor, t.device());
}
}  // namespace detail

int64_t Tensor::size(int64_t dim) const {
  int64_t d = wrap_dim("size", dim, this->dim());
  // Note [Size reads while tracing]: only this dim was read.
  if (detail::g_symbolic_traces.load(std::memory_order_relaxed) != 0)
    detail::report_size_read(*this, d);
  return checked()->sizes()[static_cast<size_t>(d)];
}
SymShape Tensor::sym_sizes() const {
  if (is_tracing()) {
    if (std::optional<SymShape> sizes = current_tracing_state()->symbolic_sizes(*this))
      return *sizes;
  }
  return to_sym_shape(checked()->sizes());
}
SymInt Tensor::sym_size(int64_t dim) const {
  auto d = static_cast<size_t>(wrap_dim("sym_size", dim, this->dim()));
  if (is_tracing()) {
    if (std::optional<SymShape> sizes = current_tracing_state()->symbolic_sizes(*this))
      return (*sizes)[d];
  }
  return checked()->sizes()[d];  // no SymShape built outside a symbolic trace
}
SymInt Tensor::sym_numel() const {
  SymInt n = 1;
  for (const SymInt& s : sym_sizes())
    n *= s;
  return n;
}
int64_t Tensor::stride(int64_t dim) const {
  return strides()[static_cast<size_t>(wrap_dim("stride", dim, this->dim()))];
}
Tensor detail::host_copy(const Tensor& t) {
  Tensor out = empty_tensor(t.sizes(), t.dtype(), kCPU);
  cuda::copy_between_devices(out, t);
  return out;
}

void* Tensor::raw_data(std::source_location loc) const {
  detail::check_traced_read("raw_data", loc);
  KILN_CHECK(device().is_cpu(), "raw_data: the tensor is on {}, not the CPU", device());
  return impl_->data();
}

// ---- conversions ----
namespace {

// The backward of a copy to another device (Tensor::to(Device)): the gradient is copied back
// to the source device. A Node of its own rather than an op, since its input and output live
// on different devices, which no op's kernel does.
class ToDeviceBackward : public autograd::Node {
 public:
  ToDeviceBackward(Device source, autograd::edge_list&& next)
      : Node(std::move(next)), source_(source) {}
  std::string name() const override { return "ToDeviceBackward"; }

 protected:
  autograd::variable_list apply(autograd::variable_list&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    return {grads[0].to(source_)};
  }

 private:
  Device source_;
};

}  // namespace

Tensor Tensor::to(DType t, std::source_location loc) const {
  CallSiteScope site(loc);
  if (dtype() == t) return *this;
  return call_op1(KILN_OP("convert"), {*this}, DTypeAttrs{t});
}

Tensor Tensor::to(Device d, std::source_location loc) const {
  CallSiteScope site(loc);
  if (device() == d) return *this;
  if (d.is_meta()) {
    // Shape-only copy: no data moves.
    return Tensor(std::make_shared<TensorImpl>(make_storage(0, kMeta), dtype(), sizes(), strides(),
                                               storage_offset()));
  }
  std::string what = fmt::format("to: cannot copy a {}{} tensor from {} to {}", dtype_name(dtype()),
                                 shape_str(sizes()), device(), d);
  if (d.is_cuda() || device().is_cuda()) {
    // Name the reason a user can act on: no driver or device first.
    if (d.is_cuda()) cuda::require_device(d.index, what);
    detail::check_traced_read("to(device)", loc);
    Tensor out = empty_tensor(sizes(), dtype(), d);
    cuda::copy_between_devices(out, *this);
    if (requires_grad() && GradMode::is_enabled()) {
      auto fn = autograd::make_node<ToDeviceBackward>(
          device(), autograd::collect_next_edges(std::span(this, 1)));
      autograd::set_history(out, fn, 0);
    }
    return out;
  }
  KILN_ERROR("{}: no copy between these devices", what);
}

Tensor Tensor::contiguous(std::source_location loc) const {
  return is_contiguous() ? *this : clone(loc);
}
Tensor Tensor::clone(std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("clone"), {*this}, NoAttrs{});
}

// ---- views ----
Tensor Tensor::view(Shape sizes, std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("view"), {*this}, SizeAttrs{to_sym_shape(sizes)});
}
Tensor Tensor::view_symint(SymShape sizes, std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("view"), {*this}, SizeAttrs{std::move(sizes)});
}
Tensor Tensor::reshape_symint(SymShape sizes, std::source_location loc) const {
  if (is_static(sizes) && is_static(sym_sizes()))
    return reshape(expect_ints(sizes, "reshape"), loc);
  CallSiteScope site(loc);
  // Symbols come only from a symbolic trace. A contiguous tensor always views to sizes of the
  // same numel (the view's rule checks that over the symbols); another copies first (eager may
  // have found view strides for it, but whether reshape returns a view is unspecified, as in
  // torch, and the values are the same).
  if (impl()->is_contiguous()) return view_symint(std::move(sizes), loc);
  return clone(loc).view_symint(std::move(sizes), loc);
}
Tensor Tensor::reshape(Shape sizes, std::source_location loc) const {
  // Under a symbolic trace a -1 is inferred over the symbols (reshape({-1, d}) of a [s0, s1, d]
  // tensor is [s0*s1, d]) instead of from numel() read as an integer.
  if (detail::g_symbolic_traces.load(std::memory_order_relaxed) != 0 && !is_static(sym_sizes()))
    return reshape_symint(to_sym_shape(sizes), loc);
  CallSiteScope site(loc);
  Shape inferred = infer_size("reshape", sizes, numel());
  if (view_strides(this->sizes(), strides(), inferred)) return view(std::move(inferred), loc);
  return clone(loc).view(std::move(inferred), loc);
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1, std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("transpose"), {*this}, TransposeAttrs{dim0, dim1});
}
Tensor Tensor::t(std::source_location loc) const {
  CallSiteScope site(loc);
  KILN_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but it has shape {}",
             shape_str(sizes()));
  return dim() < 2 ? *this : transpose(0, 1, loc);
}
Tensor Tensor::permute(Shape dims, std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("permute"), {*this}, DimsAttrs{std::move(dims)});
}
Tensor Tensor::expand(Shape sizes, std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("expand"), {*this}, SizeAttrs{to_sym_shape(sizes)});
}
Tensor Tensor::expand_symint(SymShape sizes, std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("expand"), {*this}, SizeAttrs{std::move(sizes)});
}
Tensor Tensor::unsqueeze(int64_t dim, std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("unsqueeze"), {*this}, DimAttrs{dim});
}
Tensor Tensor::squeeze(int64_t dim, std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("squeeze"), {*this}, DimsAttrs{Shape{dim}});
}
Tensor Tensor::squeeze(std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("squeeze"), {*this}, DimsAttrs{});
}
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step,
                     std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("slice"), {*this}, SliceAttrs{dim, start, end, step});
}
Tensor Tensor::slice_symint(int64_t dim, SymInt start, SymInt end, int64_t step,
                            std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("slice"), {*this},
                  SliceAttrs{dim, std::move(start), std::move(end), step});
}
Tensor Tensor::select(int64_t dim, int64_t index, std::source_location loc) const {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("select"), {*this}, SelectAttrs{dim, index});
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length, std::source_location loc) const {
  CallSiteScope site(loc);
  KILN_CHECK(this->dim() > 0, "narrow: cannot narrow a 0-dim tensor");
  int64_t size = sizes()[static_cast<size_t>(wrap_dim("narrow", dim, this->dim()))];
  int64_t s = start < 0 ? start + size : start;
  KILN_CHECK(s >= 0 && length >= 0 && s + length <= size,
             "narrow: start ({}) + length ({}) exceeds dimension size ({}) of shape {}", start,
             length, size, shape_str(sizes()));
  return slice(dim, s, s + length, 1, loc);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim, std::source_location loc) const {
  return kiln::chunk(*this, chunks, dim, loc);
}
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim, std::source_location loc) const {
  return kiln::split(*this, split_size, dim, loc);
}
Tensor Tensor::flatten(std::source_location loc) const {
  return reshape({-1}, loc);
}

// ---- in-place ----
const Tensor& Tensor::copy_(const Tensor& src, std::source_location loc) const {
  CallSiteScope site(loc);
  call_op(KILN_OP("copy_"), std::vector<Tensor>{*this, src}, nullptr);
  return *this;
}
const Tensor& Tensor::fill_(const Scalar& value, std::source_location loc) const {
  CallSiteScope site(loc);
  call_op1(KILN_OP("fill_"), {*this}, FillAttrs{value});
  return *this;
}
const Tensor& Tensor::zero_(std::source_location loc) const {
  return fill_(0, loc);
}

// ---- op methods ----
Tensor Tensor::add(const Tensor& o, const Scalar& alpha, std::source_location loc) const {
  return kiln::add(*this, o, alpha, loc);
}
Tensor Tensor::add(const Scalar& o, const Scalar& alpha, std::source_location loc) const {
  return kiln::add(*this, o, alpha, loc);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha, std::source_location loc) const {
  return kiln::sub(*this, o, alpha, loc);
}
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha, std::source_location loc) const {
  return kiln::sub(*this, o, alpha, loc);
}
Tensor Tensor::mul(const Tensor& o, std::source_location loc) const {
  return kiln::mul(*this, o, loc);
}
Tensor Tensor::mul(const Scalar& o, std::source_location loc) const {
  return kiln::mul(*this, o, loc);
}
Tensor Tensor::div(const Tensor& o, std::source_location loc) const {
  return kiln::div(*this, o, loc);
}
Tensor Tensor::div(const Scalar& o, std::source_location loc) const {
  return kiln::div(*this, o, loc);
}
Tensor Tensor::neg(std::source_location loc) const {
  return kiln::neg(*this, loc);
}
Tensor Tensor::exp(std::source_location loc) const {
  return kiln::exp(*this, loc);
}
Tensor Tensor::log(std::source_location loc) const {
  return kiln::log(*this, loc);
}
Tensor Tensor::tanh(std::source_location loc) const {
  return kiln::tanh(*this, loc);
}
Tensor Tensor::sigmoid(std::source_location loc) const {
  return kiln::sigmoid(*this, loc);
}
Tensor Tensor::relu(std::source_location loc) const {
  return kiln::relu(*this, loc);
}
Tensor Tensor::sum(Shape dims, bool keepdim, std::source_location loc) const {
  return kiln::sum(*this, std::move(dims), keepdim, loc);
}
Tensor Tensor::mean(Shape dims, bool keepdim, std::source_location loc) const {
  return kiln::mean(*this, std::move(dims), keepdim, loc);
}
Tensor Tensor::matmul(const Tensor& o, std::source_location loc) const {
  return kiln::matmul(*this, o, loc);
}
Tensor Tensor::mm(const Tensor& o, std::source_location loc) const {
  return kiln::mm(*this, o, loc);
}
Tensor Tensor::bmm(const Tensor& o, std::source_location loc) const {
  return kiln::bmm(*this, o, loc);
}

// ---- operators ----
// Operators cannot take a defaulted std::source_location, so they pass kUnknownCallSite: their
// ops report an unknown call site unless an enclosing op opened a scope.
Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b, 1, kUnknownCallSite);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b, 1, kUnknownCallSite);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b, kUnknownCallSite);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b, kUnknownCallSite);
}
Tensor operator-(const Tensor& a) {
  return neg(a, kUnknownCallSite);
}
Tensor operator+(const Tensor& a, const Scalar& b) {
  return add(a, b, 1, kUnknownCallSite);
}
Tensor operator-(const Tensor& a, const Scalar& b) {
  return sub(a, b, 1, kUnknownCallSite);
}
Tensor operator*(const Tensor& a, const Scalar& b) {
  return mul(a, b, kUnknownCallSite);
}
Tensor operator/(const Tensor& a, const Scalar& b) {
  return div(a, b, kUnknownCallSite);
}
Tensor operator+(const Scalar& a, const Tensor& b) {
  return add(b, a, 1, kUnknownCallSite);
}
Tensor operator-(const Scalar& a, const Tensor& b) {
  return add(neg(b, kUnknownCallSite), a, 1, kUnknownCallSite);
}
Tensor operator*(const Scalar& a, const Tensor& b) {
  return mul(b, a, kUnknownCallSite);
}
Tensor operator/(const Scalar& a, const Tensor& b) {
  // A 0-dim tensor promotes like a Python number against a dimensioned tensor; giving it b's
  // dtype when b is floating keeps float64 division exact.
  DType t = is_floating(b.dtype()) ? b.dtype() : a.default_dtype();
  return div(full({}, a, TensorOptions(t).device(b.device()), kUnknownCallSite), b,
             kUnknownCallSite);
}

// ---- more op methods: each forwards to the free function of the same name ----
#define KILN_UNARY_METHOD(name)                         \
  Tensor Tensor::name(std::source_location loc) const { \
    return kiln::name(*this, loc);                      \
  }
KILN_UNARY_METHOD(sqrt)
KILN_UNARY_METHOD(rsqrt)
KILN_UNARY_METHOD(abs)
KILN_UNARY_METHOD(sign)
KILN_UNARY_METHOD(log1p)
KILN_UNARY_METHOD(expm1)
KILN_UNARY_METHOD(sin)
KILN_UNARY_METHOD(cos)
KILN_UNARY_METHOD(erf)
KILN_UNARY_METHOD(silu)
KILN_UNARY_METHOD(floor)
KILN_UNARY_METHOD(ceil)
KILN_UNARY_METHOD(trunc)
KILN_UNARY_METHOD(reciprocal)
KILN_UNARY_METHOD(logical_not)
KILN_UNARY_METHOD(max)
KILN_UNARY_METHOD(min)
#undef KILN_UNARY_METHOD

#define KILN_BINARY_METHOD(name, Other)                                 \
  Tensor Tensor::name(const Other& o, std::source_location loc) const { \
    return kiln::name(*this, o, loc);                                   \
  }
KILN_BINARY_METHOD(pow, Tensor)
KILN_BINARY_METHOD(pow, Scalar)
KILN_BINARY_METHOD(fmod, Tensor)
KILN_BINARY_METHOD(fmod, Scalar)
KILN_BINARY_METHOD(remainder, Tensor)
KILN_BINARY_METHOD(remainder, Scalar)
KILN_BINARY_METHOD(maximum, Tensor)
KILN_BINARY_METHOD(minimum, Tensor)
KILN_BINARY_METHOD(eq, Tensor)
KILN_BINARY_METHOD(eq, Scalar)
KILN_BINARY_METHOD(ne, Tensor)
KILN_BINARY_METHOD(ne, Scalar)
KILN_BINARY_METHOD(lt, Tensor)
KILN_BINARY_METHOD(lt, Scalar)
KILN_BINARY_METHOD(le, Tensor)
KILN_BINARY_METHOD(le, Scalar)
KILN_BINARY_METHOD(gt, Tensor)
KILN_BINARY_METHOD(gt, Scalar)
KILN_BINARY_METHOD(ge, Tensor)
KILN_BINARY_METHOD(ge, Scalar)
KILN_BINARY_METHOD(logical_and, Tensor)
KILN_BINARY_METHOD(logical_or, Tensor)
#undef KILN_BINARY_METHOD

Tensor Tensor::gelu(const std::string& approximate, std::source_location loc) const {
  return kiln::gelu(*this, approximate, loc);
}
Tensor Tensor::clamp(const std::optional<Scalar>& lo, const std::optional<Scalar>& hi,
                     std::source_location loc) const {
  return kiln::clamp(*this, lo, hi, loc);
}
Tensor Tensor::clamp(const Tensor& lo, const Tensor& hi, std::source_location loc) const {
  return kiln::clamp(*this, lo, hi, loc);
}
Tensor Tensor::clamp_min(const Tensor& lo, std::source_location loc) const {
  return kiln::clamp_min(*this, lo, loc);
}
Tensor Tensor::clamp_max(const Tensor& hi, std::source_location loc) const {
  return kiln::clamp_max(*this, hi, loc);
}
Tensor Tensor::round(int64_t decimals, std::source_location loc) const {
  return kiln::round(*this, decimals, loc);
}
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight, std::source_location loc) const {
  return kiln::lerp(*this, end, weight, loc);
}
Tensor Tensor::lerp(const Tensor& end, const Scalar& weight, std::source_location loc) const {
  return kiln::lerp(*this, end, weight, loc);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value,
                           std::source_location loc) const {
  return kiln::masked_fill(*this, mask, value, loc);
}
Tensor Tensor::prod(Shape dims, bool keepdim, std::source_location loc) const {
  return kiln::prod(*this, std::move(dims), keepdim, loc);
}
Tensor Tensor::amax(Shape dims, bool keepdim, std::source_location loc) const {
  return kiln::amax(*this, std::move(dims), keepdim, loc);
}
Tensor Tensor::amin(Shape dims, bool keepdim, std::source_location loc) const {
  return kiln::amin(*this, std::move(dims), keepdim, loc);
}
Tensor Tensor::logsumexp(Shape dims, bool keepdim, std::source_location loc) const {
  return kiln::logsumexp(*this, std::move(dims), keepdim, loc);
}
Tensor Tensor::var(Shape dims, double correction, bool keepdim, std::source_location loc) const {
  return kiln::var(*this, std::move(dims), correction, keepdim, loc);
}
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim, std::source_location loc) const {
  return kiln::max(*this, dim, keepdim, loc);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim, std::source_location loc) const {
  return kiln::min(*this, dim, keepdim, loc);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim, std::source_location loc) const {
  return kiln::argmax(*this, dim, keepdim, loc);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim, std::source_location loc) const {
  return kiln::argmin(*this, dim, keepdim, loc);
}
Tensor Tensor::std(Shape dims, double correction, bool keepdim, std::source_location loc) const {
  return kiln::std(*this, std::move(dims), correction, keepdim, loc);
}
Tensor Tensor::any(Shape dims, bool keepdim, std::source_location loc) const {
  return kiln::any(*this, std::move(dims), keepdim, loc);
}
Tensor Tensor::all(Shape dims, bool keepdim, std::source_location loc) const {
  return kiln::all(*this, std::move(dims), keepdim, loc);
}
Tensor Tensor::tril(int64_t diagonal, std::source_location loc) const {
  return kiln::tril(*this, diagonal, loc);
}
Tensor Tensor::triu(int64_t diagonal, std::source_location loc) const {
  return kiln::triu(*this, diagonal, loc);
}
Tensor Tensor::flip(Shape dims, std::source_location loc) const {
  return kiln::flip(*this, std::move(dims), loc);
}
Tensor Tensor::roll(Shape shifts, Shape dims, std::source_location loc) const {
  return kiln::roll(*this, std::move(shifts), std::move(dims), loc);
}
Tensor Tensor::repeat(Shape sizes, std::source_location loc) const {
  return kiln::repeat(*this, std::move(sizes), loc);
}
Tensor Tensor::outer(const Tensor& other, std::source_location loc) const {
  return kiln::outer(*this, other, loc);
}
Tensor Tensor::addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                     const Scalar& alpha, std::source_location loc) const {
  return kiln::addmm(*this, mat1, mat2, beta, alpha, loc);
}
Tensor Tensor::baddbmm(const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                       const Scalar& alpha, std::source_location loc) const {
  return kiln::baddbmm(*this, batch1, batch2, beta, alpha, loc);
}
Tensor Tensor::softmax(int64_t dim, std::source_location loc) const {
  return kiln::softmax(*this, dim, loc);
}
Tensor Tensor::log_softmax(int64_t dim, std::source_location loc) const {
  return kiln::log_softmax(*this, dim, loc);
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index, std::source_location loc) const {
  return kiln::index_select(*this, dim, index, loc);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index, std::source_location loc) const {
  return kiln::gather(*this, dim, index, loc);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src,
                           std::source_location loc) const {
  return kiln::scatter_add(*this, dim, index, src, loc);
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable,
                                        std::source_location loc) const {
  return kiln::sort(*this, dim, descending, stable, loc);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable, std::source_location loc) const {
  return kiln::argsort(*this, dim, descending, stable, loc);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted,
                                        std::source_location loc) const {
  return kiln::topk(*this, k, dim, largest, sorted, loc);
}
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype, std::source_location loc) const {
  return kiln::cumsum(*this, dim, dtype, loc);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype, std::source_location loc) const {
  return kiln::cumprod(*this, dim, dtype, loc);
}
Tensor Tensor::index(const std::vector<std::optional<Tensor>>& indices,
                     std::source_location loc) const {
  return kiln::index(*this, indices, loc);
}
Tensor Tensor::index_put(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                         bool accumulate, std::source_location loc) const {
  return kiln::index_put(*this, indices, values, accumulate, loc);
}
Tensor Tensor::masked_select(const Tensor& mask, std::source_location loc) const {
  return kiln::masked_select(*this, mask, loc);
}
Tensor Tensor::nonzero(std::source_location loc) const {
  return kiln::nonzero(*this, loc);
}

// ---- in-place methods ----
const Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha, std::source_location loc) const {
  return kiln::add_(*this, o, alpha, loc);
}
const Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha, std::source_location loc) const {
  return kiln::add_(*this, o, alpha, loc);
}
const Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha, std::source_location loc) const {
  return kiln::sub_(*this, o, alpha, loc);
}
const Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha, std::source_location loc) const {
  return kiln::sub_(*this, o, alpha, loc);
}
const Tensor& Tensor::mul_(const Tensor& o, std::source_location loc) const {
  return kiln::mul_(*this, o, loc);
}
const Tensor& Tensor::mul_(const Scalar& o, std::source_location loc) const {
  return kiln::mul_(*this, o, loc);
}
const Tensor& Tensor::div_(const Tensor& o, std::source_location loc) const {
  return kiln::div_(*this, o, loc);
}
const Tensor& Tensor::div_(const Scalar& o, std::source_location loc) const {
  return kiln::div_(*this, o, loc);
}
const Tensor& Tensor::clamp_(const std::optional<Scalar>& lo, const std::optional<Scalar>& hi,
                             std::source_location loc) const {
  return kiln::clamp_(*this, lo, hi, loc);
}
const Tensor& Tensor::index_put_(const std::vector<std::optional<Tensor>>& indices,
                                 const Tensor& values, bool accumulate,
                                 std::source_location loc) const {
  return kiln::index_put_(*this, indices, values, accumulate, loc);
}
const Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value,
                                   std::source_location loc) const {
  return kiln::masked_fill_(*this, mask, value, loc);
}
const Tensor& Tensor::relu_(std::source_location loc) const {
  return kiln::relu_(*this, loc);
}
const Tensor& Tensor::floor_(std::source_location loc) const {
  return kiln::floor_(*this, loc);
}
const Tensor& Tensor::ceil_(std::source_location loc) const {
  return kiln::ceil_(*this, loc);
}
const Tensor& Tensor::trunc_(std::source_location loc) const {
  return kiln::trunc_(*this, loc);
}
const Tensor& Tensor::round_(int64_t decimals, std::source_location loc) const {
  return kiln::round_(*this, decimals, loc);
}
const Tensor& Tensor::reciprocal_(std::source_location loc) const {
  return kiln::reciprocal_(*this, loc);
}
const Tensor& Tensor::fmod_(const Tensor& other, std::source_location loc) const {
  return kiln::fmod_(*this, other, loc);
}
const Tensor& Tensor::fmod_(const Scalar& other, std::source_location loc) const {
  return kiln::fmod_(*this, other, loc);
}
const Tensor& Tensor::remainder_(const Tensor& other, std::source_location loc) const {
  return kiln::remainder_(*this, other, loc);
}
const Tensor& Tensor::remainder_(const Scalar& other, std::source_location loc) const {
  return kiln::remainder_(*this, other, loc);
}
const Tensor& Tensor::lerp_(const Tensor& end, const Tensor& weight,
                            std::source_location loc) const {
  return kiln::lerp_(*this, end, weight, loc);
}
const Tensor& Tensor::lerp_(const Tensor& end, const Scalar& weight,
                            std::source_location loc) const {
  return kiln::lerp_(*this, end, weight, loc);
}

// ---- comparison and compound-assignment operators ----
#define KILN_COMPARISON_OPERATOR(op, name)               \
  Tensor operator op(const Tensor& a, const Tensor& b) { \
    return name(a, b, kUnknownCallSite);                 \
  }                                                      \
  Tensor operator op(const Tensor& a, const Scalar& b) { \
    return name(a, b, kUnknownCallSite);                 \
  }
KILN_COMPARISON_OPERATOR(==, eq)
KILN_COMPARISON_OPERATOR(!=, ne)
KILN_COMPARISON_OPERATOR(<, lt)
KILN_COMPARISON_OPERATOR(<=, le)
KILN_COMPARISON_OPERATOR(>, gt)
KILN_COMPARISON_OPERATOR(>=, ge)
#undef KILN_COMPARISON_OPERATOR

// The arguments after the operands: add_/sub_ take alpha before the call site.
#define KILN_COMPOUND_OPERATOR(op, name, ...)                   \
  const Tensor& operator op(const Tensor& a, const Tensor& b) { \
    return name(a, b, __VA_ARGS__);                             \
  }                                                             \
  const Tensor& operator op(const Tensor& a, const Scalar& b) { \
    return name(a, b, __VA_ARGS__);                             \
  }
KILN_COMPOUND_OPERATOR(+=, add_, 1, kUnknownCallSite)
KILN_COMPOUND_OPERATOR(-=, sub_, 1, kUnknownCallSite)
KILN_COMPOUND_OPERATOR(*=, mul_, kUnknownCallSite)
KILN_COMPOUND_OPERATOR(/=, div_, kUnknownCallSite)
#undef KILN_COMPOUND_OPERATOR

}  // namespace kiln
