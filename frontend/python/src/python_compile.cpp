// kiln.compile's C++ half: a CompiledFunction over a Python function of a flat list of tensors.
// The Python half (kiln/_compile.py) flattens arguments and results, keys plans on the
// structure and the values of Python scalars, and rebuilds the results.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>

#include "kiln/base/options.h"
#include "kiln/frontend/compile.h"
#include "python_common.h"

namespace kiln::python {

void bind_compile(nb::module_& m) {
  nb::class_<CompiledFunction>(m, "_CompiledFunction")
      .def(
          "__init__",
          [](CompiledFunction* self, nb::callable fn, const std::string& backend,
             int64_t cache_limit, const std::string& debug_dir, const std::string& name,
             bool rematerialize, std::optional<bool> dynamic) {
            CompileOptions o;
            if (backend == "auto") {
              o.backend = Backend::Auto;
            } else if (backend == "interpreter") {
              o.backend = Backend::Interpreter;
            } else if (backend == "llvm") {
              o.backend = Backend::LLVM;
            } else if (backend == "cuda") {
              o.backend = Backend::CUDA;
            } else {
              throw nb::value_error(("compile(): unknown backend '" + backend +
                                     "' (expected 'auto', 'interpreter', 'llvm' or 'cuda')")
                                        .c_str());
            }
            o.cache_limit = cache_limit;
            o.debug_dir = debug_dir;
            o.name = name;
            o.rematerialize = rematerialize;
            o.dynamic = dynamic;
            // A weak reference: the Python plan that owns this object holds `fn`, so the
            // cycle plan -> this -> fn -> (whatever fn refers to) -> plan stays visible to
            // Python's garbage collector instead of passing through C++.
            PyRef weak{nb::weakref(fn)};
            CompiledFunction::Fn call = [weak](const std::vector<Tensor>& in) {
              nb::gil_scoped_acquire gil;
              nb::object target = weak.get()();
              if (target.is_none()) {
                throw nb::value_error("kiln.compile: the traced Python function was freed");
              }
              return nb::cast<std::vector<Tensor>>(target(in));
            };
            new (self) CompiledFunction(std::move(call), o);
          },
          nb::arg("fn"), nb::arg("backend"), nb::arg("cache_limit"), nb::arg("debug_dir"),
          nb::arg("name"), nb::arg("rematerialize"), nb::arg("dynamic").none())
      .def("__call__",
           [](const CompiledFunction& f, const std::vector<Tensor>& inputs) {
             nb::gil_scoped_release release;
             return f(inputs);
           })
      .def("stats",
           [](const CompiledFunction& f) {
             CompileStats s = f.stats();
             nb::dict d;
             d["compiles"] = s.compiles;
             d["cache_hits"] = s.cache_hits;
             d["forward_kernels"] = s.forward_kernels;
             d["backward_kernels"] = s.backward_kernels;
             d["fallback_ops"] = s.fallback_ops;
             d["saved_bytes"] = s.saved_bytes;
             d["eager_calls"] = s.eager_calls;
             return d;
           })
      .def(
          "dump",
          [](const CompiledFunction& f, std::optional<std::string> stage, bool dot) {
            return stage ? f.dump(*stage, dot) : f.dump();
          },
          nb::arg("stage") = nb::none(), nb::arg("dot") = false);
  m.def(
      "mark_dynamic", [](const Tensor& t, int64_t dim) { mark_dynamic(t, dim); }, nb::arg("t"),
      nb::arg("dim"),
      "Marks dim `dim` of `t` dynamic (torch._dynamo.mark_dynamic): kiln.compile traces it as a "
      "symbolic size from the first call.");
  m.def("_log_line",
        [](const std::string& topic, const std::string& message) { log_line(topic, message); });
  m.def("_log_topic_enabled", [](const std::string& topic) { return log_topic_enabled(topic); });
  m.def("set_logs",
        [](std::vector<std::string> topics) { return set_log_topics(std::move(topics)); });
}

}  // namespace kiln::python
