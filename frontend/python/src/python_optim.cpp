// kiln._C._optim: the C++ optimizers (frontend/optim/), which kiln.optim wraps with torch's
// Python interface (param_groups, state, closures).
#include <nanobind/stl/pair.h>
#include <nanobind/stl/unique_ptr.h>

#include <memory>
#include <utility>

#include "kiln/config.h"
#include "kiln/frontend/optim.h"
#include "python_common.h"

namespace kiln::python {

void bind_optim(nb::module_& m) {
  nb::module_ o = m.def_submodule("_optim", "The C++ optimizers behind kiln.optim");
  // Whether this build has the LLVM backend, so that a step can be compiled (tests).
  m.attr("_with_llvm") = static_cast<bool>(KILN_WITH_LLVM);
  using optim::Optimizer;
  nb::class_<Optimizer>(o, "Optimizer")
      .def("step", &Optimizer::step, nb::call_guard<nb::gil_scoped_release>())
      .def("zero_grad", &Optimizer::zero_grad, nb::arg("set_to_none") = true)
      .def("set_lr", &Optimizer::set_lr)
      .def_prop_ro("lr", &Optimizer::lr)
      .def_prop_ro("last_step_compiled", &Optimizer::last_step_compiled)
      .def("state", &Optimizer::state)
      .def("step_count", &Optimizer::step_count);
  o.def(
      "sgd",
      [](std::vector<Tensor> params, double lr, double momentum, double dampening,
         double weight_decay, bool nesterov, std::optional<bool> fused) {
        return std::unique_ptr<Optimizer>(
            std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions(lr)
                                                                .momentum(momentum)
                                                                .dampening(dampening)
                                                                .weight_decay(weight_decay)
                                                                .nesterov(nesterov)
                                                                .fused(fused)));
      },
      nb::arg("params"), nb::arg("lr"), nb::arg("momentum"), nb::arg("dampening"),
      nb::arg("weight_decay"), nb::arg("nesterov"), nb::arg("fused").none());
  o.def(
      "adam",
      [](std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
         double weight_decay, bool decoupled, std::optional<bool> fused) {
        optim::AdamOptions options(lr);
        options.betas(betas).eps(eps).weight_decay(weight_decay).fused(fused);
        if (decoupled)
          return std::unique_ptr<Optimizer>(
              std::make_unique<optim::AdamW>(std::move(params), options));
        return std::unique_ptr<Optimizer>(
            std::make_unique<optim::Adam>(std::move(params), options));
      },
      nb::arg("params"), nb::arg("lr"), nb::arg("betas"), nb::arg("eps"), nb::arg("weight_decay"),
      nb::arg("decoupled"), nb::arg("fused").none());
}

}  // namespace kiln::python
