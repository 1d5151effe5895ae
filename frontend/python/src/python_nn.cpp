// The composite functions of the C++ API that are not single op-table ops (matmul, linear, the
// losses, dropout, stack): kiln.nn.functional and kiln.* call these under torch's names and
// argument orders (kiln/nn/functional.py).
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
}

}  // namespace kiln::python
