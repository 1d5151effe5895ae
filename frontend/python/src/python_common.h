// What every file of the Python binding shares: the Python objects that wrap a Tensor and a
// Node, the casters that turn kiln::Tensor, DType and Device into those objects and back, and
// the reference holder that C++ objects use for Python callables.
//
// Note [One Python object per tensor]
// Python sees a tensor through one kiln.Tensor object (a PyTensor) for as long as Python holds
// it, as THPVariable in PyTorch: the TensorImpl's pyobj slot (Note [Python object slot] in
// runtime/tensor_impl.h) points at the live wrapper, and wrap_tensor returns that wrapper when
// there is one and makes it otherwise. The wrapper owns a Tensor handle; the slot does not own
// the wrapper, and the wrapper's destructor clears the slot. So `x.grad is x.grad`, and an
// attribute set on a tensor survives while Python holds the tensor. grad_fn objects (PyGradFn)
// follow the same rule through the Node's slot.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/base/call_site.h"
#include "kiln/base/device.h"
#include "kiln/base/dtype.h"
#include "kiln/base/error.h"
#include "kiln/base/scalar.h"
#include "kiln/runtime/autograd/node.h"
#include "kiln/runtime/tensor.h"

namespace nb = nanobind;

namespace kiln::python {

struct PyTensor {
  Tensor tensor;
  ~PyTensor();
};

struct PyGradFn {
  std::shared_ptr<autograd::Node> node;
  nb::object metadata;  // grad_fn.metadata, made on first use
  ~PyGradFn();
};

// New references (or null with a Python error set). An undefined tensor or null Node is None.
PyObject* wrap_tensor(const Tensor& t);
PyObject* wrap_node(const std::shared_ptr<autograd::Node>& node);
void count_new_wrapper();  // for kiln._C._live_objects
bool is_tensor(nb::handle h);
const Tensor& unwrap_tensor(nb::handle h);  // h must satisfy is_tensor
nb::handle tensor_type();

// Whether Python references may be released here: not once the interpreter is gone, and during
// its shutdown only on the thread that holds the GIL (the one finalizing); another thread then
// leaks the reference rather than wait for the GIL of a dying interpreter.
inline bool python_alive() {
  return Py_IsInitialized() != 0 && (_Py_IsFinalizing() == 0 || PyGILState_Check() != 0);
}

// A strong reference to a Python object that C++ code may copy and destroy on any thread: it
// takes the GIL to change the reference count (hooks and Nodes die wherever the graph does).
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(nb::handle h) : obj_(h.ptr()) { Py_XINCREF(obj_); }
  PyRef(const PyRef& other);
  PyRef& operator=(const PyRef& other);
  ~PyRef();
  nb::handle get() const { return obj_; }
  void reset();

 private:
  PyObject* obj_ = nullptr;
};

// A Python exception raised in a hook or a Function's backward, carried through the engine to
// the backward() call that ran it (base/error.h, ForeignError), where it is raised again.
struct PyForeignError : ForeignError {
  explicit PyForeignError(nb::python_error e) : error(std::move(e)) {}
  nb::python_error error;
};

// For code called straight from a type slot, outside nanobind's function dispatch: sets the
// Python error for the exception being handled (Python errors as they are, kiln::Error as
// kiln.KilnError, nanobind's builtin exceptions as their Python types).
void set_python_error_from_exception() noexcept;
void set_kiln_error_type(nb::handle type);

// The DType and Device objects (kiln.float32, kiln.device("cpu")).
struct PyDType {
  DType dtype;
};
struct PyDevice {
  Device device;
};
nb::handle dtype_object(DType t);  // the singleton kiln.<dtype>
Device parse_device(const std::string& text);

// Python scalars: bool, int, float.
bool is_python_scalar(nb::handle h);
Scalar to_scalar(nb::handle h);  // throws nb::type_error for anything else
// A Python number as a 0-dim tensor beside `like`, with the dtype torch gives a "wrapped
// number": a float next to an integer tensor is float32, otherwise the tensor's dtype decides.
Tensor scalar_to_tensor(nb::handle value, const Tensor& like);

// Opens a call-site scope naming the innermost Python frame outside the kiln package, while a
// trace or anomaly mode records call sites (python_call_site.cpp). Takes the GIL to be held;
// usable as nb::call_guard<PythonCallSite>.
class PythonCallSite {
 public:
  PythonCallSite();

 private:
  std::optional<CallSiteScope> scope_;
};
void set_package_dir(std::string dir);

// backward() from Python (Tensor.backward, kiln.autograd.backward): into every leaf's .grad,
// or, with `inputs`, only into those tensors' .grad (torch's inputs=), without the GIL.
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                  bool retain_graph, bool create_graph,
                  const std::optional<std::vector<Tensor>>& inputs);

// kiln.SymInt (python_sym_int.cpp): sizes as a symbolic trace sees them.
// An int when `s` holds no symbol, else a kiln.SymInt.
nb::object wrap_sym_int(const SymInt& s);
// Whether a trace with symbolic sizes records on this thread (x.shape then returns SymInts).
bool symbolic_trace_active();
// x.shape inside a symbolic trace: a SymInt for each dim the graph holds symbolically.
nb::tuple sym_shape_tuple(const Tensor& t);
// One size: an int, a SymInt or a one-element integer tensor; nullopt for anything else.
std::optional<SymInt> sym_size_item(nb::handle item);
// Sizes given as one size or a tuple or list of them; nullopt otherwise, or with
// to_sym_shape_arg a TypeError naming `what`.
std::optional<SymShape> maybe_sym_shape(nb::handle h);
SymShape to_sym_shape_arg(nb::handle h, const char* what);
// The same for *args: one sequence, or the sizes themselves.
SymShape sizes_from_args(const nb::args& args, const char* what);
bool is_sym_int(nb::handle h);
// A kiln.SymInt's value, read as an integer (which specializes its symbols).
int64_t sym_int_value(nb::handle h);

// Registration, one per file.
void bind_sym_int(nb::module_& m);
void bind_types(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_tensor_data(nb::module_& m);
void bind_ops(nb::module_& m);
void bind_autograd(nb::module_& m);
void bind_function(nb::module_& m);
void bind_compile(nb::module_& m);
void bind_nn(nb::module_& m);
void bind_nn_layers(nb::module_& m);  // python_nn_layers.cpp, after bind_nn
void bind_optim(nb::module_& m);

}  // namespace kiln::python

namespace nanobind::detail {

template <>
struct type_caster<kiln::Tensor> {
  NB_TYPE_CASTER(kiln::Tensor, const_name("kiln.Tensor"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    if (!kiln::python::is_tensor(src)) return false;
    value = kiln::python::unwrap_tensor(src);
    return true;
  }
  static handle from_cpp(const kiln::Tensor& t, rv_policy, cleanup_list*) noexcept {
    return kiln::python::wrap_tensor(t);
  }
};

template <>
struct type_caster<std::shared_ptr<kiln::autograd::Node>> {
  NB_TYPE_CASTER(std::shared_ptr<kiln::autograd::Node>, const_name("kiln.autograd.graph.Node"))
  bool from_python(handle, uint8_t, cleanup_list*) noexcept { return false; }
  static handle from_cpp(const std::shared_ptr<kiln::autograd::Node>& n, rv_policy,
                         cleanup_list*) noexcept {
    return kiln::python::wrap_node(n);
  }
};

template <>
struct type_caster<kiln::DType> {
  NB_TYPE_CASTER(kiln::DType, const_name("kiln.dtype"))
  bool from_python(handle src, uint8_t flags, cleanup_list* cleanup) noexcept {
    make_caster<kiln::python::PyDType> inner;
    if (!inner.from_python(src, flags & ~(uint8_t)cast_flags::convert, cleanup)) return false;
    value = inner.operator kiln::python::PyDType&().dtype;
    return true;
  }
  static handle from_cpp(kiln::DType t, rv_policy, cleanup_list*) noexcept {
    return kiln::python::dtype_object(t).inc_ref();
  }
};

template <>
struct type_caster<kiln::Device> {
  NB_TYPE_CASTER(kiln::Device, const_name("kiln.device | str"))
  bool from_python(handle src, uint8_t flags, cleanup_list* cleanup) noexcept;
  static handle from_cpp(kiln::Device d, rv_policy, cleanup_list*) noexcept;
};

}  // namespace nanobind::detail
