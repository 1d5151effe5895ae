// Tensor's methods: views and conversions through the dispatcher, and the op methods that
// forward to the free functions of ops.h.
#include "kiln/frontend/factories.h"
#include "kiln/frontend/indexing_ops.h"
#include "kiln/frontend/nn_ops.h"
#include "kiln/frontend/ops.h"
#include "kiln/frontend/reduction_ops.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/tensor_data.h"

namespace kiln {

namespace detail {
void check_host_access(const Tensor& t, DType want, const char* accessor) {
  KILN_CHECK(t.defined(), "{}: the tensor is undefined", accessor);
  KILN_CHECK(t.dtype() == want, "{}: expected a tensor of dtype {}, but it has dtype {}", accessor,
             want, t.dtype());
  KILN_CHECK(t.device().is_cpu(),
             "{}: the tensor is on {}; only CPU tensors can be read on the host (use .to(kCPU))",
             accessor, t.device());
}
}  // namespace detail

int64_t Tensor::size(int64_t dim) const {
  return sizes()[static_cast<size_t>(wrap_dim("size", dim, this->dim()))];
}
int64_t Tensor::stride(int64_t dim) const {
  return strides()[static_cast<size_t>(wrap_dim("stride", dim, this->dim()))];
}
void* Tensor::raw_data() const {
  KILN_CHECK(device().is_cpu(), "raw_data: the tensor is on {}, not the CPU", device());
  return impl_->data();
}

// ---- conversions ----
Tensor Tensor::to(DType t) const {
  if (dtype() == t) return *this;
  return call_op1(KILN_OP("convert"), {*this}, DTypeAttrs{t});
}

Tensor Tensor::to(Device d) const {
  if (device() == d) return *this;
  if (d.is_meta()) {
    // Shape-only copy: no data moves.
    return Tensor(std::make_shared<TensorImpl>(make_storage(0, kMeta), dtype(), sizes(), strides(),
                                               storage_offset()));
  }
  KILN_ERROR("to: copying a tensor from {} to {} is not supported in this build", device(), d);
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}
Tensor Tensor::clone() const {
  return call_op1(KILN_OP("clone"), {*this}, NoAttrs{});
}

// ---- views ----
Tensor Tensor::view(Shape sizes) const {
  return call_op1(KILN_OP("view"), {*this}, SizeAttrs{std::move(sizes)});
}
Tensor Tensor::reshape(Shape sizes) const {
  Shape inferred = infer_size("reshape", sizes, numel());
  if (view_strides(this->sizes(), strides(), inferred)) return view(std::move(inferred));
  return clone().view(std::move(inferred));
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return call_op1(KILN_OP("transpose"), {*this}, TransposeAttrs{dim0, dim1});
}
Tensor Tensor::t() const {
  KILN_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but it has shape {}",
             shape_str(sizes()));
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::permute(Shape dims) const {
  return call_op1(KILN_OP("permute"), {*this}, DimsAttrs{std::move(dims)});
}
Tensor Tensor::expand(Shape sizes) const {
  return call_op1(KILN_OP("expand"), {*this}, SizeAttrs{std::move(sizes)});
}
Tensor Tensor::unsqueeze(int64_t dim) const {
  return call_op1(KILN_OP("unsqueeze"), {*this}, DimAttrs{dim});
}
Tensor Tensor::squeeze(int64_t dim) const {
  return call_op1(KILN_OP("squeeze"), {*this}, DimsAttrs{Shape{dim}});
}
Tensor Tensor::squeeze() const {
  return call_op1(KILN_OP("squeeze"), {*this}, DimsAttrs{});
}
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return call_op1(KILN_OP("slice"), {*this}, SliceAttrs{dim, start, end, step});
}
Tensor Tensor::select(int64_t dim, int64_t index) const {
  return call_op1(KILN_OP("select"), {*this}, SelectAttrs{dim, index});
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  KILN_CHECK(this->dim() > 0, "narrow: cannot narrow a 0-dim tensor");
  int64_t size = sizes()[static_cast<size_t>(wrap_dim("narrow", dim, this->dim()))];
  int64_t s = start < 0 ? start + size : start;
  KILN_CHECK(s >= 0 && length >= 0 && s + length <= size,
             "narrow: start ({}) + length ({}) exceeds dimension size ({}) of shape {}", start,
             length, size, shape_str(sizes()));
  return slice(dim, s, s + length);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  return kiln::chunk(*this, chunks, dim);
}
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  return kiln::split(*this, split_size, dim);
}
Tensor Tensor::flatten() const {
  return reshape({-1});
}

// ---- in-place ----
const Tensor& Tensor::copy_(const Tensor& src) const {
  call_op(KILN_OP("copy_"), std::vector<Tensor>{*this, src}, nullptr);
  return *this;
}
const Tensor& Tensor::fill_(const Scalar& value) const {
  call_op1(KILN_OP("fill_"), {*this}, FillAttrs{value});
  return *this;
}
const Tensor& Tensor::zero_() const {
  return fill_(0);
}

// ---- autograd ----
bool Tensor::requires_grad() const {
  const autograd::AutogradMeta* meta = checked()->autograd_meta();
  return meta != nullptr && meta->requires_grad;
}
Tensor& Tensor::requires_grad_(bool requires_grad) {
  KILN_CHECK(!requires_grad || is_floating(dtype()),
             "requires_grad_: only tensors of floating point dtype can require gradients, got {}",
             dtype());
  checked()->ensure_autograd_meta().requires_grad = requires_grad;
  return *this;
}

// ---- op methods ----
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const {
  return kiln::add(*this, o, alpha);
}
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const {
  return kiln::add(*this, o, alpha);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const {
  return kiln::sub(*this, o, alpha);
}
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const {
  return kiln::sub(*this, o, alpha);
}
Tensor Tensor::mul(const Tensor& o) const {
  return kiln::mul(*this, o);
}
Tensor Tensor::mul(const Scalar& o) const {
  return kiln::mul(*this, o);
}
Tensor Tensor::div(const Tensor& o) const {
  return kiln::div(*this, o);
}
Tensor Tensor::div(const Scalar& o) const {
  return kiln::div(*this, o);
}
Tensor Tensor::neg() const {
  return kiln::neg(*this);
}
Tensor Tensor::exp() const {
  return kiln::exp(*this);
}
Tensor Tensor::log() const {
  return kiln::log(*this);
}
Tensor Tensor::tanh() const {
  return kiln::tanh(*this);
}
Tensor Tensor::sigmoid() const {
  return kiln::sigmoid(*this);
}
Tensor Tensor::relu() const {
  return kiln::relu(*this);
}
Tensor Tensor::sum(Shape dims, bool keepdim) const {
  return kiln::sum(*this, std::move(dims), keepdim);
}
Tensor Tensor::mean(Shape dims, bool keepdim) const {
  return kiln::mean(*this, std::move(dims), keepdim);
}
Tensor Tensor::matmul(const Tensor& o) const {
  return kiln::matmul(*this, o);
}
Tensor Tensor::mm(const Tensor& o) const {
  return kiln::mm(*this, o);
}
Tensor Tensor::bmm(const Tensor& o) const {
  return kiln::bmm(*this, o);
}

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator-(const Tensor& a) {
  return neg(a);
}
Tensor operator+(const Tensor& a, const Scalar& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Scalar& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Scalar& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Scalar& b) {
  return div(a, b);
}
Tensor operator+(const Scalar& a, const Tensor& b) {
  return add(b, a);
}
Tensor operator-(const Scalar& a, const Tensor& b) {
  return add(neg(b), a);
}
Tensor operator*(const Scalar& a, const Tensor& b) {
  return mul(b, a);
}
Tensor operator/(const Scalar& a, const Tensor& b) {
  // A 0-dim tensor promotes like a Python number against a dimensioned tensor; giving it b's
  // dtype when b is floating keeps float64 division exact.
  DType t = is_floating(b.dtype()) ? b.dtype() : a.default_dtype();
  return div(full({}, a, TensorOptions(t).device(b.device())), b);
}

// ---- more op methods: each forwards to the free function of the same name ----
#define KILN_UNARY_METHOD(name) \
  Tensor Tensor::name() const { \
    return kiln::name(*this);   \
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
KILN_UNARY_METHOD(logical_not)
KILN_UNARY_METHOD(max)
KILN_UNARY_METHOD(min)
#undef KILN_UNARY_METHOD

#define KILN_BINARY_METHOD(name, Other)       \
  Tensor Tensor::name(const Other& o) const { \
    return kiln::name(*this, o);              \
  }
KILN_BINARY_METHOD(pow, Tensor)
KILN_BINARY_METHOD(pow, Scalar)
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

Tensor Tensor::gelu(const std::string& approximate) const {
  return kiln::gelu(*this, approximate);
}
Tensor Tensor::clamp(const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) const {
  return kiln::clamp(*this, lo, hi);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return kiln::masked_fill(*this, mask, value);
}
Tensor Tensor::prod(Shape dims, bool keepdim) const {
  return kiln::prod(*this, std::move(dims), keepdim);
}
Tensor Tensor::amax(Shape dims, bool keepdim) const {
  return kiln::amax(*this, std::move(dims), keepdim);
}
Tensor Tensor::amin(Shape dims, bool keepdim) const {
  return kiln::amin(*this, std::move(dims), keepdim);
}
Tensor Tensor::logsumexp(Shape dims, bool keepdim) const {
  return kiln::logsumexp(*this, std::move(dims), keepdim);
}
Tensor Tensor::var(Shape dims, double correction, bool keepdim) const {
  return kiln::var(*this, std::move(dims), correction, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return kiln::max(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return kiln::min(*this, dim, keepdim);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmin(*this, dim, keepdim);
}
Tensor Tensor::softmax(int64_t dim) const {
  return kiln::softmax(*this, dim);
}
Tensor Tensor::log_softmax(int64_t dim) const {
  return kiln::log_softmax(*this, dim);
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return kiln::index_select(*this, dim, index);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return kiln::gather(*this, dim, index);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return kiln::scatter_add(*this, dim, index, src);
}

// ---- in-place methods ----
const Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const {
  return kiln::add_(*this, o, alpha);
}
const Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) const {
  return kiln::add_(*this, o, alpha);
}
const Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) const {
  return kiln::sub_(*this, o, alpha);
}
const Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) const {
  return kiln::sub_(*this, o, alpha);
}
const Tensor& Tensor::mul_(const Tensor& o) const {
  return kiln::mul_(*this, o);
}
const Tensor& Tensor::mul_(const Scalar& o) const {
  return kiln::mul_(*this, o);
}
const Tensor& Tensor::div_(const Tensor& o) const {
  return kiln::div_(*this, o);
}
const Tensor& Tensor::div_(const Scalar& o) const {
  return kiln::div_(*this, o);
}
const Tensor& Tensor::clamp_(const std::optional<Scalar>& lo,
                             const std::optional<Scalar>& hi) const {
  return kiln::clamp_(*this, lo, hi);
}
const Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  return kiln::masked_fill_(*this, mask, value);
}
const Tensor& Tensor::relu_() const {
  return kiln::relu_(*this);
}

// ---- comparison and compound-assignment operators ----
#define KILN_COMPARISON_OPERATOR(op, name)               \
  Tensor operator op(const Tensor& a, const Tensor& b) { \
    return name(a, b);                                   \
  }                                                      \
  Tensor operator op(const Tensor& a, const Scalar& b) { \
    return name(a, b);                                   \
  }
KILN_COMPARISON_OPERATOR(==, eq)
KILN_COMPARISON_OPERATOR(!=, ne)
KILN_COMPARISON_OPERATOR(<, lt)
KILN_COMPARISON_OPERATOR(<=, le)
KILN_COMPARISON_OPERATOR(>, gt)
KILN_COMPARISON_OPERATOR(>=, ge)
#undef KILN_COMPARISON_OPERATOR

#define KILN_COMPOUND_OPERATOR(op, name)                        \
  const Tensor& operator op(const Tensor& a, const Tensor& b) { \
    return name(a, b);                                          \
  }                                                             \
  const Tensor& operator op(const Tensor& a, const Scalar& b) { \
    return name(a, b);                                          \
  }
KILN_COMPOUND_OPERATOR(+=, add_)
KILN_COMPOUND_OPERATOR(-=, sub_)
KILN_COMPOUND_OPERATOR(*=, mul_)
KILN_COMPOUND_OPERATOR(/=, div_)
#undef KILN_COMPOUND_OPERATOR

}  // namespace kiln
