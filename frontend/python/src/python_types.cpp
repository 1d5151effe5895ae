// kiln.dtype and kiln.device, Python scalars, and the GIL-safe reference holder.
#include <array>
#include <charconv>

#include "kiln/runtime/api/factories.h"
#include "python_common.h"

namespace kiln::python {

PyRef::PyRef(const PyRef& other) : obj_(other.obj_) {
  if (obj_ != nullptr) {
    nb::gil_scoped_acquire gil;
    Py_INCREF(obj_);
  }
}

PyRef& PyRef::operator=(const PyRef& other) {
  if (this != &other) {
    PyRef copy(other);
    std::swap(obj_, copy.obj_);
  }
  return *this;
}

PyRef::~PyRef() {
  reset();
}

void PyRef::reset() {
  if (obj_ == nullptr) return;
  // At interpreter exit, C++ statics may outlive Python: leak rather than touch a dead runtime.
  if (python_alive()) {
    nb::gil_scoped_acquire gil;
    Py_DECREF(obj_);
  }
  obj_ = nullptr;
}

namespace {

PyObject* g_kiln_error_type = nullptr;

}  // namespace

void set_kiln_error_type(nb::handle type) {
  g_kiln_error_type = type.ptr();
}

void set_python_error_from_exception() noexcept {
  try {
    throw;
  } catch (nb::python_error& e) {
    e.restore();
  } catch (PyForeignError& e) {
    e.error.restore();
  } catch (const nb::builtin_exception& e) {
    PyObject* type = PyExc_RuntimeError;
    switch (e.type()) {
      case nb::exception_type::type_error:
        type = PyExc_TypeError;
        break;
      case nb::exception_type::value_error:
        type = PyExc_ValueError;
        break;
      case nb::exception_type::index_error:
        type = PyExc_IndexError;
        break;
      case nb::exception_type::attribute_error:
        type = PyExc_AttributeError;
        break;
      default:
        break;
    }
    PyErr_SetString(type, e.what());
  } catch (const Error& e) {
    PyErr_SetString(g_kiln_error_type != nullptr ? g_kiln_error_type : PyExc_RuntimeError,
                    e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
}

namespace {

// Borrowed: the module's attributes (kiln._C.float32, ...) own the singletons.
std::array<nb::handle, kNumDTypes>& dtype_objects() {
  static std::array<nb::handle, kNumDTypes> objects;
  return objects;
}

}  // namespace

nb::handle dtype_object(DType t) {
  return dtype_objects()[static_cast<size_t>(t)];
}

Device parse_device(const std::string& text) {
  std::string type = text;
  int index = 0;
  if (size_t colon = text.find(':'); colon != std::string::npos) {
    type = text.substr(0, colon);
    std::string_view digits = std::string_view(text).substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size() || index < 0) {
      throw nb::value_error(("Invalid device string: '" + text + "'").c_str());
    }
  }
  if (type == "cpu") return kCPU;
  if (type == "cuda") return Device::cuda(index);
  if (type == "meta") return kMeta;
  throw nb::value_error(
      ("Expected one of cpu, cuda, meta device type at start of device string: " + text).c_str());
}

// A kiln.SymInt counts as a number: used as a scalar, it is read as an integer (which
// specializes its symbols), as torch reads a SymInt that meets a tensor op's scalar.
bool is_python_scalar(nb::handle h) {
  return PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) || is_sym_int(h);
}

Scalar to_scalar(nb::handle h) {
  if (PyBool_Check(h.ptr())) return Scalar(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow != 0)
      throw nb::value_error("value cannot be converted to type int64 without overflow");
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(h.ptr())) return Scalar(PyFloat_AS_DOUBLE(h.ptr()));
  if (is_sym_int(h)) return Scalar(sym_int_value(h));
  if (is_tensor(h)) {
    const Tensor& t = unwrap_tensor(h);
    if (t.numel() == 1) {
      if (is_floating(t.dtype())) return Scalar(t.to(kFloat64).item<double>());
      if (t.dtype() == kBool) return Scalar(t.item<bool>());
      return Scalar(t.to(kInt64).item<int64_t>());
    }
  }
  throw nb::type_error(
      ("expected a number, but got " + std::string(nb::type_name(h.type()).c_str())).c_str());
}

Tensor scalar_to_tensor(nb::handle value, const Tensor& like) {
  Scalar s = to_scalar(value);
  DType dtype = like.dtype();
  if (s.is_floating() && !is_floating(dtype)) dtype = kDefaultFloat;
  if (s.is_integral() && dtype == kBool) dtype = kInt64;
  return full({}, s, TensorOptions().dtype(dtype).device(like.device()));
}

void bind_types(nb::module_& m) {
  nb::class_<PyDType>(m, "dtype")
      .def("__repr__", [](const PyDType& d) { return "kiln." + std::string(dtype_name(d.dtype)); })
      .def_prop_ro("is_floating_point", [](const PyDType& d) { return is_floating(d.dtype); })
      .def_prop_ro("itemsize", [](const PyDType& d) { return element_size(d.dtype); })
      .def_prop_ro("is_signed",
                   [](const PyDType& d) { return d.dtype != kBool && d.dtype != kUInt8; })
      .def("__reduce__", [](const PyDType& d) { return std::string(dtype_name(d.dtype)); });
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    nb::object obj = nb::cast(PyDType{t});
    dtype_objects()[i] = obj;
    m.attr(std::string(dtype_name(t)).c_str()) = obj;
  }
  // torch's other names for the same objects
  m.attr("float") = dtype_object(kFloat32);
  m.attr("double") = dtype_object(kFloat64);
  m.attr("half") = dtype_object(kFloat16);
  m.attr("short") = dtype_object(kInt16);
  m.attr("int") = dtype_object(kInt32);
  m.attr("long") = dtype_object(kInt64);
  m.def(
      "promote_types",
      [](const PyDType& a, const PyDType& b) -> nb::object {
        return nb::borrow(dtype_object(promote_types(a.dtype, b.dtype)));
      },
      nb::arg("type1"), nb::arg("type2"));

  nb::class_<PyDevice>(m, "device")
      .def(
          "__init__",
          [](PyDevice* self, nb::handle spec, std::optional<int> index) {
            Device d;
            if (nb::isinstance<PyDevice>(spec)) {
              d = nb::cast<PyDevice>(spec).device;
            } else if (nb::isinstance<nb::str>(spec)) {
              d = parse_device(nb::cast<std::string>(spec));
            } else {
              throw nb::type_error("device(): argument must be a str or a kiln.device");
            }
            if (index) d.index = static_cast<int16_t>(*index);
            new (self) PyDevice{d};
          },
          nb::arg("type"), nb::arg("index") = nb::none())
      .def_prop_ro("type",
                   [](const PyDevice& d) {
                     return d.device.is_cpu() ? "cpu" : d.device.is_cuda() ? "cuda" : "meta";
                   })
      .def_prop_ro("index",
                   [](const PyDevice& d) -> std::optional<int> {
                     if (d.device.is_cuda()) return d.device.index;
                     return std::nullopt;
                   })
      .def("__str__", [](const PyDevice& d) { return d.device.str(); })
      .def("__repr__",
           [](const PyDevice& d) {
             if (d.device.is_cuda()) {
               return "device(type='cuda', index=" + std::to_string(d.device.index) + ")";
             }
             return "device(type='" + d.device.str() + "')";
           })
      .def("__eq__",
           [](const PyDevice& a, nb::handle b) {
             if (nb::isinstance<PyDevice>(b)) return a.device == nb::cast<PyDevice>(b).device;
             if (nb::isinstance<nb::str>(b)) {
               return a.device.str() == nb::cast<std::string>(b) ||
                      (a.device.is_cuda() && nb::cast<std::string>(b) == "cuda" &&
                       a.device.index == 0);
             }
             return false;
           })
      .def("__hash__", [](const PyDevice& d) {
        return static_cast<int64_t>(d.device.type) * 1024 + d.device.index;
      });
}

}  // namespace kiln::python

namespace nanobind::detail {

bool type_caster<kiln::Device>::from_python(handle src, uint8_t, cleanup_list*) noexcept {
  if (isinstance<kiln::python::PyDevice>(src)) {
    value = cast<kiln::python::PyDevice>(src).device;
    return true;
  }
  if (PyUnicode_Check(src.ptr())) {
    try {
      value = kiln::python::parse_device(cast<std::string>(src));
      return true;
    } catch (...) {
      return false;
    }
  }
  return false;
}

handle type_caster<kiln::Device>::from_cpp(kiln::Device d, rv_policy, cleanup_list*) noexcept {
  try {
    return cast(kiln::python::PyDevice{d}).release();
  } catch (...) {
    return handle();
  }
}

}  // namespace nanobind::detail
