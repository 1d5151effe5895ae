// The composite functions of the C++ API that are not single op-table ops (matmul, linear, the
// losses, dropout, stack, einsum, pad, ...): kiln.nn.functional and kiln.* call these under
// torch's names and argument orders (kiln/nn/functional.py, kiln/_functions.py).
#include "kiln/runtime/api/ops.h"
#include "python_common.h"

namespace kiln::python {

namespace {
// The call site is read with the GIL held, then the GIL is released: members are constructed
// in declaration order, which a guard list does not promise.
struct SiteThenRelease {
  PythonCallSite site;
  nb::gil_scoped_release release;
};

// Numbers arrive as Python objects, read with the GIL held before the op runs without it.
template <class F>
Tensor with_scalars(nb::handle a, nb::handle b, F&& f) {
  PythonCallSite site;
  Scalar sa = to_scalar(a), sb = to_scalar(b);
  nb::gil_scoped_release release;
  return f(sa, sb);
}

Tensor where_any(const Tensor& cond, nb::handle a, nb::handle b) {
  PythonCallSite site;
  bool ta = is_tensor(a), tb = is_tensor(b);
  Tensor x = ta ? unwrap_tensor(a) : Tensor(), y = tb ? unwrap_tensor(b) : Tensor();
  Scalar sa = ta ? Scalar() : to_scalar(a), sb = tb ? Scalar() : to_scalar(b);
  nb::gil_scoped_release release;
  if (ta && tb) return where(cond, x, y);
  if (ta) return where(cond, x, sb);
  if (tb) return where(cond, sa, y);
  return where(cond, sa, sb);
}
}  // namespace

void bind_nn(nb::module_& m) {
  nb::module_ nn = m.def_submodule("_nn", "The C++ API's composite functions");
  // The user's line is the call site; ops run without the GIL (python_ops.cpp).
  auto nogil = nb::call_guard<SiteThenRelease>();
  nn.def(
      "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, nogil);
  nn.def(
      "linear",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) { return linear(x, w, b); },
      nogil, nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none());
  nn.def(
      "layer_norm",
      [](const Tensor& x, Shape shape, std::optional<Tensor> w, std::optional<Tensor> b,
         double eps) {
        return layer_norm(x, shape, w.value_or(Tensor()), b.value_or(Tensor()), eps);
      },
      nogil, nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight") = nb::none(),
      nb::arg("bias") = nb::none(), nb::arg("eps") = 1e-5);
  nn.def(
      "nll_loss",
      [](const Tensor& x, const Tensor& t, const std::string& reduction, int64_t ignore_index) {
        return nll_loss(x, t, reduction, ignore_index);
      },
      nogil, nb::arg("input"), nb::arg("target"), nb::arg("reduction"), nb::arg("ignore_index"));
  nn.def(
      "cross_entropy",
      [](const Tensor& x, const Tensor& t, const std::string& reduction, int64_t ignore_index) {
        return cross_entropy(x, t, reduction, ignore_index);
      },
      nogil, nb::arg("input"), nb::arg("target"), nb::arg("reduction"), nb::arg("ignore_index"));
  nn.def(
      "mse_loss",
      [](const Tensor& x, const Tensor& t, const std::string& reduction) {
        return mse_loss(x, t, reduction);
      },
      nogil, nb::arg("input"), nb::arg("target"), nb::arg("reduction"));
  nn.def(
      "dropout", [](const Tensor& x, double p, bool training) { return dropout(x, p, training); },
      nogil, nb::arg("input"), nb::arg("p"), nb::arg("training"));
  nn.def(
      "embedding", [](const Tensor& indices, const Tensor& w) { return embedding(w, indices); },
      nogil, nb::arg("input"), nb::arg("weight"));
  nn.def(
      "stack", [](const std::vector<Tensor>& ts, int64_t dim) { return stack(ts, dim); }, nogil,
      nb::arg("tensors"), nb::arg("dim") = 0);
  nn.def(
      "std",
      [](const Tensor& x, Shape dims, double correction, bool keepdim) {
        return kiln::std(x, dims, correction, keepdim);
      },
      nogil, nb::arg("input"), nb::arg("dim"), nb::arg("correction"), nb::arg("keepdim"));
  nn.def(
      "any", [](const Tensor& x, Shape dims, bool keepdim) { return any(x, dims, keepdim); }, nogil,
      nb::arg("input"), nb::arg("dim"), nb::arg("keepdim"));
  nn.def(
      "all", [](const Tensor& x, Shape dims, bool keepdim) { return all(x, dims, keepdim); }, nogil,
      nb::arg("input"), nb::arg("dim"), nb::arg("keepdim"));
  nn.def(
      "tril", [](const Tensor& x, int64_t diagonal) { return tril(x, diagonal); }, nogil,
      nb::arg("input"), nb::arg("diagonal") = 0);
  nn.def(
      "triu", [](const Tensor& x, int64_t diagonal) { return triu(x, diagonal); }, nogil,
      nb::arg("input"), nb::arg("diagonal") = 0);
  nn.def(
      "flip", [](const Tensor& x, Shape dims) { return flip(x, dims); }, nogil, nb::arg("input"),
      nb::arg("dims"));
  nn.def(
      "roll", [](const Tensor& x, Shape shifts, Shape dims) { return roll(x, shifts, dims); },
      nogil, nb::arg("input"), nb::arg("shifts"), nb::arg("dims"));
  nn.def(
      "repeat", [](const Tensor& x, Shape sizes) { return repeat(x, sizes); }, nogil,
      nb::arg("input"), nb::arg("repeats"));
  nn.def(
      "outer", [](const Tensor& a, const Tensor& b) { return outer(a, b); }, nogil,
      nb::arg("input"), nb::arg("vec2"));
  nn.def(
      "addmm",
      [](const Tensor& self, const Tensor& m1, const Tensor& m2, nb::handle beta,
         nb::handle alpha) {
        return with_scalars(beta, alpha, [&](const Scalar& b, const Scalar& a) {
          return addmm(self, m1, m2, b, a);
        });
      },
      nb::arg("input"), nb::arg("mat1"), nb::arg("mat2"), nb::arg("beta"), nb::arg("alpha"));
  nn.def(
      "baddbmm",
      [](const Tensor& self, const Tensor& b1, const Tensor& b2, nb::handle beta,
         nb::handle alpha) {
        return with_scalars(beta, alpha, [&](const Scalar& b, const Scalar& a) {
          return baddbmm(self, b1, b2, b, a);
        });
      },
      nb::arg("input"), nb::arg("batch1"), nb::arg("batch2"), nb::arg("beta"), nb::arg("alpha"));
  nn.def(
      "einsum",
      [](const std::string& equation, const std::vector<Tensor>& operands) {
        return einsum(equation, operands);
      },
      nogil, nb::arg("equation"), nb::arg("operands"));
  nn.def(
      "pad",
      [](const Tensor& x, Shape p, const std::string& mode, double value) {
        return pad(x, p, mode, value);
      },
      nogil, nb::arg("input"), nb::arg("pad"), nb::arg("mode"), nb::arg("value"));
  nn.def(
      "one_hot", [](const Tensor& x, int64_t n) { return one_hot(x, n); }, nogil, nb::arg("tensor"),
      nb::arg("num_classes"));
  nn.def("where", where_any, nb::arg("condition"), nb::arg("input"), nb::arg("other"));
}

}  // namespace kiln::python
