// Tensor: the user's handle, a shared pointer to a TensorImpl. Copying a Tensor shares the
// data; view methods share the storage; ops return new tensors. Op methods are defined in
// runtime/api/ (they go through the dispatcher); the accessors here read the TensorImpl directly.
// Op, view and conversion methods take a trailing defaulted std::source_location, the user's
// call site (base/call_site.h); callers never pass it.
#pragma once

#include <atomic>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/base/scalar.h"
#include "kiln/base/sym_int.h"
#include "kiln/runtime/tensor_impl.h"
#include "kiln/runtime/tensor_options.h"

namespace kiln {

namespace autograd {
class Node;
}

class Tensor;

// Note [Size reads while tracing]
// A trace with symbolic sizes (frontend/tracer.h, docs/dynamic_shapes.md) must know when the
// traced code reads a size as a plain integer: the value it read may end up in the graph (an
// attribute, a scalar, a loop count), so the plan may only be reused at that value. Tensor's
// size accessors report each read to the tracing state, which specializes the symbols the read
// size holds. Reads inside op kernels run with the Tracer key excluded and are not reported
// (Note [Tracing state]); sym_size() and sym_sizes() read without specializing. The check costs
// one relaxed load of a global counter while no symbolic trace is active anywhere.
namespace detail {
extern std::atomic<int> g_symbolic_traces;
// `dim` is the dim read, or -1 for all of them (sizes(), strides(), numel()).
void report_size_read(const Tensor& t, int64_t dim = -1);
// Sizes autograd saved (Note [Symbolic saved sizes], autograd/derivative.h) read as integers.
void report_sym_sizes_read(std::span<const SymInt> sizes);
// `t`'s sizes over the current symbolic trace's symbols, or empty when it holds none for `t`
// (asked even while the Tracer key is excluded: autograd saves them below it).
SymShape traced_symbolic_sizes(const Tensor& t);
// `sizes` as the active trace has them now (TracingState::resolve_symbols).
SymShape resolve_traced_symbols(const SymShape& sizes);
inline void observe_size_read(const Tensor& t) {
  if (g_symbolic_traces.load(std::memory_order_relaxed) != 0) report_size_read(t);
}
}  // namespace detail

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
  // The size accessors report the read to a symbolic trace (Note [Size reads while tracing]).
  const Shape& sizes() const {
    detail::observe_size_read(*this);
    return checked()->sizes();
  }
  const Shape& strides() const {
    detail::observe_size_read(*this);
    return checked()->strides();
  }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  // The sizes as a symbolic trace sees them: symbols where the traced graph has them, integers
  // elsewhere and outside a trace. Reading them does not specialize the plan (torch's
  // sym_size); arithmetic on the result is traced symbolically.
  SymInt sym_size(int64_t dim) const;
  SymShape sym_sizes() const;
  SymInt sym_numel() const;
  int64_t dim() const { return checked()->dim(); }
  int64_t numel() const {
    detail::observe_size_read(*this);
    return checked()->numel();
  }
  int64_t storage_offset() const { return checked()->storage_offset(); }
  DType dtype() const { return checked()->dtype(); }
  Device device() const { return checked()->device(); }
  bool is_contiguous() const { return checked()->is_contiguous(); }
  size_t element_size() const { return checked()->itemsize(); }
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()); }
  uint32_t version() const { return checked()->version(); }

  // ---- data access (copies to host, contiguous order) ----
  // `loc` names the caller in the error a read inside trace() throws (runtime/tracing_state.h).
  template <class T>
  std::vector<T> to_vector(std::source_location loc = std::source_location::current()) const;
  template <class T>
  T item(std::source_location loc = std::source_location::current()) const;
  template <class T>
  T* data_ptr(std::source_location loc = std::source_location::current()) const;
  // Untyped, for kernels and tests; throws on Meta tensors.
  void* raw_data(std::source_location loc = std::source_location::current()) const;

  // ---- conversions ----
  Tensor to(Device device, std::source_location loc = std::source_location::current()) const;
  Tensor to(DType dtype, std::source_location loc = std::source_location::current()) const;
  Tensor contiguous(std::source_location loc = std::source_location::current()) const;
  Tensor clone(std::source_location loc = std::source_location::current()) const;

  // ---- views ----
  Tensor view(Shape sizes, std::source_location loc = std::source_location::current()) const;
  Tensor reshape(Shape sizes, std::source_location loc = std::source_location::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1,
                   std::source_location loc = std::source_location::current()) const;
  Tensor t(std::source_location loc = std::source_location::current()) const;
  Tensor permute(Shape dims, std::source_location loc = std::source_location::current()) const;
  Tensor expand(Shape sizes, std::source_location loc = std::source_location::current()) const;
  // view, reshape and expand to sizes that may be symbolic (torch's view_symint...): inside a
  // symbolic trace the graph keeps the expressions (Note [Symbolic size attributes]), so
  // `x.view_symint({x.sym_size(0), heads, -1})` serves every batch size. Elsewhere the sizes
  // are integers and these are view, reshape and expand.
  Tensor view_symint(SymShape sizes,
                     std::source_location loc = std::source_location::current()) const;
  Tensor reshape_symint(SymShape sizes,
                        std::source_location loc = std::source_location::current()) const;
  Tensor expand_symint(SymShape sizes,
                       std::source_location loc = std::source_location::current()) const;
  Tensor unsqueeze(int64_t dim, std::source_location loc = std::source_location::current()) const;
  Tensor squeeze(int64_t dim, std::source_location loc = std::source_location::current()) const;
  Tensor squeeze(std::source_location loc = std::source_location::current()) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1,
               std::source_location loc = std::source_location::current()) const;
  // slice with bounds that may be symbolic (torch's slice.Tensor with SymInt bounds): inside a
  // symbolic trace, `pos.slice_symint(0, 0, x.sym_size(0))` keeps the bound an expression
  // (Note [Symbolic slice bounds]); elsewhere the bounds are integers and this is slice.
  Tensor slice_symint(int64_t dim, SymInt start, SymInt end, int64_t step = 1,
                      std::source_location loc = std::source_location::current()) const;
  Tensor select(int64_t dim, int64_t index,
                std::source_location loc = std::source_location::current()) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length,
                std::source_location loc = std::source_location::current()) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0,
                            std::source_location loc = std::source_location::current()) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0,
                            std::source_location loc = std::source_location::current()) const;
  Tensor flatten(std::source_location loc = std::source_location::current()) const;

  // ---- in-place (each bumps the version counter) ----
  // Like libtorch, these are const: they modify the data, not the handle.
  const Tensor& copy_(const Tensor& src,
                      std::source_location loc = std::source_location::current()) const;
  const Tensor& fill_(const Scalar& value,
                      std::source_location loc = std::source_location::current()) const;
  const Tensor& zero_(std::source_location loc = std::source_location::current()) const;

  // ---- autograd (runtime/api/autograd.cpp; Note [Leaf and non-leaf] in autograd_meta.h) ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);
  Tensor grad() const;           // the accumulated gradient; undefined before the first backward
  Tensor& mutable_grad() const;  // to reset or replace .grad (optimizers)
  std::shared_ptr<autograd::Node> grad_fn() const;
  bool is_leaf() const;
  uint32_t output_nr() const;
  // Computes the gradient of this tensor w.r.t. the leaves and accumulates it into their .grad.
  // `grad` may be omitted for a one-element tensor. The graph is freed unless retain_graph or
  // create_graph is set; create_graph records the backward pass for higher-order gradients.
  // libtorch's backward: retain_graph defaults to create_graph; with `inputs`, only the
  // gradients of those tensors are computed and accumulated into their .grad (a non-leaf among
  // them retains its grad from then on, as in torch).
  void backward(const Tensor& grad = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false,
                const std::optional<std::vector<Tensor>>& inputs = std::nullopt,
                std::source_location loc = std::source_location::current()) const;
  void retain_grad() const;  // a non-leaf keeps its .grad too
  bool retains_grad() const;
  Tensor detach() const;  // same data (and version counter), no history
  // Detaches this tensor itself: it loses its history and becomes a leaf that does not require
  // grad. Refused for a view that autograd records (detach() it instead), as in libtorch.
  Tensor& detach_();
  // libtorch's `.data()`: detach() (kept for code written against it).
  Tensor data() const { return detach(); }
  // `x.data = y` in PyTorch: this tensor takes y's storage, sizes, strides and dtype, and keeps
  // its own autograd state (requires_grad, .grad, hooks). Devices must match.
  void set_data(const Tensor& new_data) const;
  // True for the result of a view op (slice, view, transpose, ...), recorded while grad mode is
  // on; _base() is the tensor the chain of views started from (undefined when not a view).
  bool is_view() const;
  Tensor _base() const;
  // Runs `hook` on this tensor's gradient before it is used; a defined result replaces it.
  // Returns a handle for remove_hook.
  unsigned register_hook(std::function<Tensor(const Tensor&)> hook) const;
  void remove_hook(unsigned handle) const;
  // Runs after .grad of this leaf was updated by a backward pass.
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  uint32_t _version() const { return version(); }

  // ---- ops (the common ones; every op is also a free function) ----
  Tensor add(const Tensor& other, const Scalar& alpha = 1,
             std::source_location loc = std::source_location::current()) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1,
             std::source_location loc = std::source_location::current()) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1,
             std::source_location loc = std::source_location::current()) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1,
             std::source_location loc = std::source_location::current()) const;
  Tensor mul(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor mul(const Scalar& other, std::source_location loc = std::source_location::current()) const;
  Tensor div(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor div(const Scalar& other, std::source_location loc = std::source_location::current()) const;
  Tensor neg(std::source_location loc = std::source_location::current()) const;
  Tensor exp(std::source_location loc = std::source_location::current()) const;
  Tensor log(std::source_location loc = std::source_location::current()) const;
  Tensor tanh(std::source_location loc = std::source_location::current()) const;
  Tensor sigmoid(std::source_location loc = std::source_location::current()) const;
  Tensor relu(std::source_location loc = std::source_location::current()) const;
  Tensor sum(Shape dims = {}, bool keepdim = false,
             std::source_location loc = std::source_location::current()) const;
  Tensor mean(Shape dims = {}, bool keepdim = false,
              std::source_location loc = std::source_location::current()) const;
  Tensor matmul(const Tensor& other,
                std::source_location loc = std::source_location::current()) const;
  Tensor mm(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor bmm(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor pow(const Tensor& exponent,
             std::source_location loc = std::source_location::current()) const;
  Tensor pow(const Scalar& exponent,
             std::source_location loc = std::source_location::current()) const;
  Tensor sqrt(std::source_location loc = std::source_location::current()) const;
  Tensor rsqrt(std::source_location loc = std::source_location::current()) const;
  Tensor abs(std::source_location loc = std::source_location::current()) const;
  Tensor sign(std::source_location loc = std::source_location::current()) const;
  Tensor log1p(std::source_location loc = std::source_location::current()) const;
  Tensor expm1(std::source_location loc = std::source_location::current()) const;
  Tensor sin(std::source_location loc = std::source_location::current()) const;
  Tensor cos(std::source_location loc = std::source_location::current()) const;
  Tensor erf(std::source_location loc = std::source_location::current()) const;
  Tensor gelu(const std::string& approximate = "none",
              std::source_location loc = std::source_location::current()) const;
  Tensor silu(std::source_location loc = std::source_location::current()) const;
  Tensor floor(std::source_location loc = std::source_location::current()) const;
  Tensor ceil(std::source_location loc = std::source_location::current()) const;
  Tensor trunc(std::source_location loc = std::source_location::current()) const;
  Tensor round(int64_t decimals = 0,
               std::source_location loc = std::source_location::current()) const;
  Tensor reciprocal(std::source_location loc = std::source_location::current()) const;
  Tensor fmod(const Tensor& other,
              std::source_location loc = std::source_location::current()) const;
  Tensor fmod(const Scalar& other,
              std::source_location loc = std::source_location::current()) const;
  Tensor remainder(const Tensor& other,
                   std::source_location loc = std::source_location::current()) const;
  Tensor remainder(const Scalar& other,
                   std::source_location loc = std::source_location::current()) const;
  Tensor lerp(const Tensor& end, const Tensor& weight,
              std::source_location loc = std::source_location::current()) const;
  Tensor lerp(const Tensor& end, const Scalar& weight,
              std::source_location loc = std::source_location::current()) const;
  // Tensor bounds; an undefined Tensor leaves that side open.
  Tensor clamp(const Tensor& min, const Tensor& max,
               std::source_location loc = std::source_location::current()) const;
  Tensor clamp_min(const Tensor& min,
                   std::source_location loc = std::source_location::current()) const;
  Tensor clamp_max(const Tensor& max,
                   std::source_location loc = std::source_location::current()) const;
  Tensor clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max = {},
               std::source_location loc = std::source_location::current()) const;
  Tensor maximum(const Tensor& other,
                 std::source_location loc = std::source_location::current()) const;
  Tensor minimum(const Tensor& other,
                 std::source_location loc = std::source_location::current()) const;
  Tensor eq(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor eq(const Scalar& other, std::source_location loc = std::source_location::current()) const;
  Tensor ne(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor ne(const Scalar& other, std::source_location loc = std::source_location::current()) const;
  Tensor lt(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor lt(const Scalar& other, std::source_location loc = std::source_location::current()) const;
  Tensor le(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor le(const Scalar& other, std::source_location loc = std::source_location::current()) const;
  Tensor gt(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor gt(const Scalar& other, std::source_location loc = std::source_location::current()) const;
  Tensor ge(const Tensor& other, std::source_location loc = std::source_location::current()) const;
  Tensor ge(const Scalar& other, std::source_location loc = std::source_location::current()) const;
  Tensor logical_and(const Tensor& other,
                     std::source_location loc = std::source_location::current()) const;
  Tensor logical_or(const Tensor& other,
                    std::source_location loc = std::source_location::current()) const;
  Tensor logical_not(std::source_location loc = std::source_location::current()) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value,
                     std::source_location loc = std::source_location::current()) const;
  Tensor prod(Shape dims = {}, bool keepdim = false,
              std::source_location loc = std::source_location::current()) const;
  Tensor amax(Shape dims = {}, bool keepdim = false,
              std::source_location loc = std::source_location::current()) const;
  Tensor amin(Shape dims = {}, bool keepdim = false,
              std::source_location loc = std::source_location::current()) const;
  Tensor logsumexp(Shape dims = {}, bool keepdim = false,
                   std::source_location loc = std::source_location::current()) const;
  Tensor var(Shape dims = {}, double correction = 1, bool keepdim = false,
             std::source_location loc = std::source_location::current()) const;
  Tensor max(std::source_location loc = std::source_location::current()) const;
  Tensor min(std::source_location loc = std::source_location::current()) const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false,
                                 std::source_location loc = std::source_location::current()) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false,
                                 std::source_location loc = std::source_location::current()) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                std::source_location loc = std::source_location::current()) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                std::source_location loc = std::source_location::current()) const;
  // sqrt(var); any/all reduce to bool (nonzero is true) over `dims`, every dim when empty.
  Tensor std(Shape dims = {}, double correction = 1, bool keepdim = false,
             std::source_location loc = std::source_location::current()) const;
  Tensor any(Shape dims = {}, bool keepdim = false,
             std::source_location loc = std::source_location::current()) const;
  Tensor all(Shape dims = {}, bool keepdim = false,
             std::source_location loc = std::source_location::current()) const;
  Tensor tril(int64_t diagonal = 0,
              std::source_location loc = std::source_location::current()) const;
  Tensor triu(int64_t diagonal = 0,
              std::source_location loc = std::source_location::current()) const;
  Tensor flip(Shape dims, std::source_location loc = std::source_location::current()) const;
  Tensor roll(Shape shifts, Shape dims = {},
              std::source_location loc = std::source_location::current()) const;
  Tensor repeat(Shape sizes, std::source_location loc = std::source_location::current()) const;
  Tensor outer(const Tensor& other,
               std::source_location loc = std::source_location::current()) const;
  Tensor addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
               const Scalar& alpha = 1,
               std::source_location loc = std::source_location::current()) const;
  Tensor baddbmm(const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1,
                 const Scalar& alpha = 1,
                 std::source_location loc = std::source_location::current()) const;
  Tensor softmax(int64_t dim, std::source_location loc = std::source_location::current()) const;
  Tensor log_softmax(int64_t dim, std::source_location loc = std::source_location::current()) const;
  Tensor index_select(int64_t dim, const Tensor& index,
                      std::source_location loc = std::source_location::current()) const;
  Tensor gather(int64_t dim, const Tensor& index,
                std::source_location loc = std::source_location::current()) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src,
                     std::source_location loc = std::source_location::current()) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false,
                                  std::source_location loc = std::source_location::current()) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false,
                 std::source_location loc = std::source_location::current()) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true,
                                  std::source_location loc = std::source_location::current()) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt,
                std::source_location loc = std::source_location::current()) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt,
                 std::source_location loc = std::source_location::current()) const;
  // Advanced indexing (runtime/api/advanced_index_ops.h): torch's x[indices], its
  // out-of-place assignment, the elements where a mask is true, and the indices of nonzeros.
  Tensor index(const std::vector<std::optional<Tensor>>& indices,
               std::source_location loc = std::source_location::current()) const;
  Tensor index_put(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                   bool accumulate = false,
                   std::source_location loc = std::source_location::current()) const;
  Tensor masked_select(const Tensor& mask,
                       std::source_location loc = std::source_location::current()) const;
  Tensor nonzero(std::source_location loc = std::source_location::current()) const;

  // ---- in-place ops (const, like copy_: they modify the data, not the handle) ----
  const Tensor& add_(const Tensor& other, const Scalar& alpha = 1,
                     std::source_location loc = std::source_location::current()) const;
  const Tensor& add_(const Scalar& other, const Scalar& alpha = 1,
                     std::source_location loc = std::source_location::current()) const;
  const Tensor& sub_(const Tensor& other, const Scalar& alpha = 1,
                     std::source_location loc = std::source_location::current()) const;
  const Tensor& sub_(const Scalar& other, const Scalar& alpha = 1,
                     std::source_location loc = std::source_location::current()) const;
  const Tensor& mul_(const Tensor& other,
                     std::source_location loc = std::source_location::current()) const;
  const Tensor& mul_(const Scalar& other,
                     std::source_location loc = std::source_location::current()) const;
  const Tensor& div_(const Tensor& other,
                     std::source_location loc = std::source_location::current()) const;
  const Tensor& div_(const Scalar& other,
                     std::source_location loc = std::source_location::current()) const;
  const Tensor& clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max = {},
                       std::source_location loc = std::source_location::current()) const;
  const Tensor& index_put_(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                           bool accumulate = false,
                           std::source_location loc = std::source_location::current()) const;
  const Tensor& masked_fill_(const Tensor& mask, const Scalar& value,
                             std::source_location loc = std::source_location::current()) const;
  const Tensor& relu_(std::source_location loc = std::source_location::current()) const;
  const Tensor& floor_(std::source_location loc = std::source_location::current()) const;
  const Tensor& ceil_(std::source_location loc = std::source_location::current()) const;
  const Tensor& trunc_(std::source_location loc = std::source_location::current()) const;
  const Tensor& round_(int64_t decimals = 0,
                       std::source_location loc = std::source_location::current()) const;
  const Tensor& reciprocal_(std::source_location loc = std::source_location::current()) const;
  const Tensor& fmod_(const Tensor& other,
                      std::source_location loc = std::source_location::current()) const;
  const Tensor& fmod_(const Scalar& other,
                      std::source_location loc = std::source_location::current()) const;
  const Tensor& remainder_(const Tensor& other,
                           std::source_location loc = std::source_location::current()) const;
  const Tensor& remainder_(const Scalar& other,
                           std::source_location loc = std::source_location::current()) const;
  const Tensor& lerp_(const Tensor& end, const Tensor& weight,
                      std::source_location loc = std::source_location::current()) const;
  const Tensor& lerp_(const Tensor& end, const Scalar& weight,
                      std::source_location loc = std::source_location::current()) const;

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
