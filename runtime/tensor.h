// Tensor: the user's handle, a shared pointer to a TensorImpl. Copying a Tensor shares the
// data; view methods share the storage; ops return new tensors. Op methods are defined in
// frontend/ (they go through the dispatcher); the accessors here read the TensorImpl directly.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/runtime/error.h"
#include "kiln/runtime/scalar.h"
#include "kiln/runtime/tensor_impl.h"
#include "kiln/runtime/tensor_options.h"

namespace kiln {

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  // True when both handles refer to the same TensorImpl (not merely equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- metadata ----
  const Shape& sizes() const { return checked()->sizes(); }
  const Shape& strides() const { return checked()->strides(); }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return checked()->dim(); }
  int64_t numel() const { return checked()->numel(); }
  int64_t storage_offset() const { return checked()->storage_offset(); }
  DType dtype() const { return checked()->dtype(); }
  Device device() const { return checked()->device(); }
  bool is_contiguous() const { return checked()->is_contiguous(); }
  size_t element_size() const { return checked()->itemsize(); }
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()); }
  uint32_t version() const { return checked()->version(); }

  // ---- data access (copies to host, contiguous order) ----
  template <class T>
  std::vector<T> to_vector() const;
  template <class T>
  T item() const;
  template <class T>
  T* data_ptr() const;
  void* raw_data() const;  // untyped, for kernels and tests; throws on Meta tensors

  // ---- conversions ----
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor contiguous() const;
  Tensor clone() const;

  // ---- views ----
  Tensor view(Shape sizes) const;
  Tensor reshape(Shape sizes) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor permute(Shape dims) const;
  Tensor expand(Shape sizes) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  Tensor flatten() const;

  // ---- in-place (each bumps the version counter) ----
  // Like libtorch, these are const: they modify the data, not the handle.
  const Tensor& copy_(const Tensor& src) const;
  const Tensor& fill_(const Scalar& value) const;
  const Tensor& zero_() const;

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);

  // ---- ops (the common ones; every op is also a free function) ----
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(const Scalar& other) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor sum(Shape dims = {}, bool keepdim = false) const;
  Tensor mean(Shape dims = {}, bool keepdim = false) const;
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor log1p() const;
  Tensor expm1() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor erf() const;
  Tensor gelu(const std::string& approximate = "none") const;
  Tensor silu() const;
  Tensor clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max = {}) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor eq(const Scalar& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(const Scalar& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(const Scalar& other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(const Scalar& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(const Scalar& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor logical_not() const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor prod(Shape dims = {}, bool keepdim = false) const;
  Tensor amax(Shape dims = {}, bool keepdim = false) const;
  Tensor amin(Shape dims = {}, bool keepdim = false) const;
  Tensor logsumexp(Shape dims = {}, bool keepdim = false) const;
  Tensor var(Shape dims = {}, double correction = 1, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;

  // ---- in-place ops (const, like copy_: they modify the data, not the handle) ----
  const Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  const Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  const Tensor& mul_(const Tensor& other) const;
  const Tensor& mul_(const Scalar& other) const;
  const Tensor& div_(const Tensor& other) const;
  const Tensor& div_(const Scalar& other) const;
  const Tensor& clamp_(const std::optional<Scalar>& min,
                       const std::optional<Scalar>& max = {}) const;
  const Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;
  const Tensor& relu_() const;

 private:
  TensorImpl* checked() const {
    KILN_CHECK(impl_ != nullptr, "use of an undefined Tensor");
    return impl_.get();
  }
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
// Comparisons return bool tensors, as in libtorch.
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
// Compound assignment updates the tensor's data in place (add_, sub_, mul_, div_).
const Tensor& operator+=(const Tensor& a, const Tensor& b);
const Tensor& operator-=(const Tensor& a, const Tensor& b);
const Tensor& operator*=(const Tensor& a, const Tensor& b);
const Tensor& operator/=(const Tensor& a, const Tensor& b);
const Tensor& operator+=(const Tensor& a, const Scalar& b);
const Tensor& operator-=(const Tensor& a, const Scalar& b);
const Tensor& operator*=(const Tensor& a, const Scalar& b);
const Tensor& operator/=(const Tensor& a, const Scalar& b);

// Template definitions live in tensor_data.h (included by kiln.h).

}  // namespace kiln

#include "kiln/runtime/tensor_data.h"  // IWYU pragma: export (templates declared above)
