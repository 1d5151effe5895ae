// The extension module kiln._C: the C++ half of the Python package (the pure-Python half is
// frontend/python/kiln/). Each bind_* function is in the file of its name.
#include "kiln/base/warning.h"
#include "kiln/runtime/allocator.h"
#include "python_common.h"
#include "python_hooks.h"

namespace {

// Note [Warning handlers] in base/warning.h: Kiln's warnings become Python UserWarnings, issued
// at the Python line that called into Kiln, so `warnings` filters apply (and "error" raises).
struct PyWarningHandler : kiln::WarningHandler {
  void process(const std::string& message) override {
#if PY_VERSION_HEX >= 0x030D0000
    bool finalizing = Py_IsFinalizing();
#else
    bool finalizing = _Py_IsFinalizing();
#endif
    if (finalizing) {
      WarningHandler::process(message);
      return;
    }
    kiln::python::call_python([&] {
      if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) < 0) throw nb::python_error();
    });
  }
};

}  // namespace

NB_MODULE(_C, m) {
  using namespace kiln::python;
  m.doc() = "Kiln's C++ core: tensors, ops, autograd and compile";
  // nanobind reports wrappers still alive when this module is torn down at exit. With PyObject
  // preservation (Note [Python object preservation]) a wrapper owned by a tensor that a global
  // still holds at that moment is expected, not a leak; leaks are measured with
  // kiln._C._live_objects() in tests/python/test_lifetime.py instead.
  nb::set_leak_warnings(false);
  // kiln::Error is kiln.KilnError, a RuntimeError, with the same message.
  static nb::exception<kiln::Error> kiln_error(m, "KilnError", PyExc_RuntimeError);
  set_kiln_error_type(kiln_error);
  static PyWarningHandler warnings;
  kiln::set_warning_handler(&warnings);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (PyForeignError& e) {
      e.error.restore();  // the user's own exception, raised again with its traceback
    }
  });
  bind_types(m);
  bind_sym_int(m);
  bind_tensor(m);
  bind_tensor_data(m);
  bind_autograd(m);
  bind_function(m);
  bind_compile(m);
  bind_nn(m);
  bind_nn_layers(m);
  bind_optim(m);
  bind_ops(m);  // last: Tensor methods written above take precedence over generated ones
  m.def("_set_package_dir", &set_package_dir);
  // The CPU allocator's byte counts (runtime/allocator.h), for memory benchmarks
  // (bench/sdpa_vs_torch.py): allocated, peak_allocated (since the last reset) and cached.
  m.def("_cpu_allocator_stats", [] {
    kiln::CachingAllocatorStats s = kiln::cpu_allocator_stats();
    nb::dict d;
    d["allocated"] = s.allocated_bytes;
    d["peak_allocated"] = s.peak_allocated_bytes;
    d["cached"] = s.cached_bytes;
    return d;
  });
  m.def("_cpu_allocator_reset_peak", &kiln::cpu_allocator_reset_peak);
}
