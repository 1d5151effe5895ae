// Tensors from Python data and back: factories with torch's signatures, kiln.tensor from nested
// sequences, Tensor.to, NumPy (no copy for CPU tensors) and DLPack in both directions.
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>

#include "kiln/base/cuda/driver.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/random_ops.h"
#include "kiln/runtime/type_promotion.h"
#include "python_common.h"

namespace kiln::python {
namespace {

// ---- factories --------------------------------------------------------------------------------

// torch's size arguments: zeros(2, 3), zeros((2, 3)), zeros([2, 3]), zeros(()).
Shape size_from_args(const nb::args& args, const char* fn) {
  auto as_int = [&](nb::handle h) {
    // A kiln.SymInt is read as an integer: a factory's sizes are integers (a symbolic trace
    // specializes what it reads).
    if (is_sym_int(h)) return sym_int_value(h);
    if (!PyLong_Check(h.ptr())) {
      throw nb::type_error(
          (std::string(fn) +
           "(): argument 'size' must be tuple of ints, but found element of type " +
           nb::type_name(h.type()).c_str())
              .c_str());
    }
    return nb::cast<int64_t>(h);
  };
  Shape s;
  if (args.size() == 1 && !PyLong_Check(args[0].ptr()) && !is_sym_int(args[0])) {
    if (!PyTuple_Check(args[0].ptr()) && !PyList_Check(args[0].ptr())) {
      throw nb::type_error((std::string(fn) + "(): argument 'size' must be tuple of ints, not " +
                            nb::type_name(args[0].type()).c_str())
                               .c_str());
    }
    for (nb::handle h : args[0])
      s.push_back(as_int(h));
    return s;
  }
  for (nb::handle h : args)
    s.push_back(as_int(h));
  return s;
}

TensorOptions make_options(std::optional<DType> dtype, std::optional<Device> device,
                           bool requires_grad) {
  TensorOptions o;
  o.dtype_opt = dtype;
  o.device_opt = device;
  o.requires_grad_ = requires_grad;
  return o;
}

// ---- kiln.tensor(data) ------------------------------------------------------------------------

enum class Kind { Bool, Int, Float };

void infer(nb::handle obj, size_t depth, Shape& shape, Kind& kind, bool& seen_leaf) {
  if (is_python_scalar(obj) || (is_tensor(obj) && unwrap_tensor(obj).dim() == 0)) {
    if (depth != shape.size() && seen_leaf) {
      throw nb::value_error("expected a sequence, but got a scalar inside a nested sequence");
    }
    Kind k = PyBool_Check(obj.ptr())                   ? Kind::Bool
             : PyLong_Check(obj.ptr())                 ? Kind::Int
             : PyFloat_Check(obj.ptr())                ? Kind::Float
             : is_floating(unwrap_tensor(obj).dtype()) ? Kind::Float
             : unwrap_tensor(obj).dtype() == kBool     ? Kind::Bool
                                                       : Kind::Int;
    kind = std::max(kind, k);
    if (!seen_leaf) shape.resize(depth);
    seen_leaf = true;
    return;
  }
  if (!PySequence_Check(obj.ptr()) || PyUnicode_Check(obj.ptr())) {
    throw nb::type_error(
        (std::string("tensor(): could not infer dtype of ") + nb::type_name(obj.type()).c_str())
            .c_str());
  }
  int64_t n = static_cast<int64_t>(nb::len(obj));
  if (!seen_leaf) {
    if (shape.size() <= depth) shape.push_back(n);
  }
  if (depth >= shape.size() || shape[depth] != n) {
    throw nb::value_error(("expected sequence of length " +
                           std::to_string(depth < shape.size() ? shape[depth] : 0) + " at dim " +
                           std::to_string(depth) + " (got " + std::to_string(n) + ")")
                              .c_str());
  }
  for (nb::handle item : obj)
    infer(item, depth + 1, shape, kind, seen_leaf);
}

template <class T>
void fill(nb::handle obj, std::vector<T>& out) {
  if (is_python_scalar(obj) || is_tensor(obj)) {
    Scalar s = to_scalar(obj);
    if constexpr (std::is_same_v<T, double>) {
      out.push_back(s.to_double());
    } else {
      out.push_back(static_cast<T>(s.to_int()));
    }
    return;
  }
  for (nb::handle item : obj)
    fill(item, out);
}

Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype, std::optional<Device> device,
                        bool requires_grad) {
  TensorOptions options = make_options(dtype, std::nullopt, false);
  Tensor t;
  if (is_tensor(data)) {
    t = unwrap_tensor(data).detach().clone();
    if (dtype) t = t.to(*dtype);
  } else if (nb::hasattr(data, "__array_interface__") || nb::hasattr(data, "__dlpack__")) {
    t = nb::cast<Tensor>(nb::module_::import_("kiln").attr("from_dlpack")(data)).clone();
    if (dtype) t = t.to(*dtype);
  } else {
    Shape shape;
    Kind kind = Kind::Bool;
    bool seen_leaf = false;
    infer(data, 0, shape, kind, seen_leaf);
    if (!seen_leaf) kind = Kind::Float;  // tensor([]) is float32, as in torch
    if (kind == Kind::Float) {
      std::vector<double> v;
      fill(data, v);
      t = detail::from_host(v.data(), v.size(), kFloat64, shape,
                            options.dtype(dtype.value_or(kDefaultFloat)), {});
    } else if (kind == Kind::Int) {
      std::vector<int64_t> v;
      fill(data, v);
      // As torch: a Python int outside an integer dtype's range is an error, not a wrap.
      if (dtype && is_integral(*dtype, false)) {
        for (int64_t x : v)
          check_scalar_fits("tensor", Scalar(x), *dtype);
      }
      t = detail::from_host(v.data(), v.size(), kInt64, shape, options, {});
    } else {
      std::vector<uint8_t> v;
      fill(data, v);
      t = detail::from_host(v.data(), v.size(), kBool, shape, options, {});
    }
  }
  if (device && *device != t.device()) t = t.to(*device);
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// ---- NumPy and DLPack ---------------------------------------------------------------------------

nb::dlpack::dtype dlpack_dtype(DType t) {
  using nb::dlpack::dtype_code;
  switch (t) {
    case kBool:
      return {static_cast<uint8_t>(dtype_code::Bool), 8, 1};
    case kUInt8:
      return nb::dtype<uint8_t>();
    case kInt8:
      return nb::dtype<int8_t>();
    case kInt16:
      return nb::dtype<int16_t>();
    case kInt32:
      return nb::dtype<int32_t>();
    case kInt64:
      return nb::dtype<int64_t>();
    case kFloat16:
      return {static_cast<uint8_t>(dtype_code::Float), 16, 1};
    case kBFloat16:
      return {static_cast<uint8_t>(dtype_code::Bfloat), 16, 1};
    case kFloat32:
      return nb::dtype<float>();
    case kFloat64:
      return nb::dtype<double>();
  }
  return {};
}

std::optional<DType> kiln_dtype(nb::dlpack::dtype d) {
  using nb::dlpack::dtype_code;
  if (d.lanes != 1) return std::nullopt;
  auto code = static_cast<dtype_code>(d.code);
  if (code == dtype_code::Bool && d.bits == 8) return kBool;
  if (code == dtype_code::UInt && d.bits == 8) return kUInt8;
  if (code == dtype_code::Int && d.bits == 8) return kInt8;
  if (code == dtype_code::Int && d.bits == 16) return kInt16;
  if (code == dtype_code::Int && d.bits == 32) return kInt32;
  if (code == dtype_code::Int && d.bits == 64) return kInt64;
  if (code == dtype_code::Float && d.bits == 16) return kFloat16;
  if (code == dtype_code::Bfloat && d.bits == 16) return kBFloat16;
  if (code == dtype_code::Float && d.bits == 32) return kFloat32;
  if (code == dtype_code::Float && d.bits == 64) return kFloat64;
  return std::nullopt;
}

// An ndarray view of the tensor's memory that keeps the storage alive.
nb::ndarray<> as_ndarray(const Tensor& t) {
  std::vector<size_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  auto* owner = new Tensor(t);
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  int device_type = t.device().is_cuda() ? nb::device::cuda::value : nb::device::cpu::value;
  return nb::ndarray<>(t.impl()->data(), shape.size(), shape.data(), keep, strides.data(),
                       dlpack_dtype(t.dtype()), device_type,
                       t.device().is_cuda() ? t.device().index : 0);
}

nb::object to_numpy(const Tensor& t, bool force) {
  Tensor src = t;
  if (force) src = t.detach().to(kCPU);
  if (src.requires_grad()) {
    throw nb::value_error(
        "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  }
  if (!src.device().is_cpu()) {
    throw nb::type_error(("can't convert " + src.device().str() +
                          " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                          "host memory first.")
                             .c_str());
  }
  if (src.dtype() == kBFloat16) throw nb::type_error("Got unsupported ScalarType BFloat16");
  return nb::cast(nb::ndarray<nb::numpy>(as_ndarray(src)));
}

// A tensor over an ndarray's memory (NumPy, DLPack); the storage keeps the producer alive.
Tensor from_ndarray(const nb::ndarray<>& a, const char* fn) {
  std::optional<DType> dtype = kiln_dtype(a.dtype());
  if (!dtype) {
    throw nb::type_error(
        (std::string(fn) + "(): unsupported element type (bits=" + std::to_string(a.dtype().bits) +
         ", code=" + std::to_string(a.dtype().code) +
         "); supported: bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, "
         "float64")
            .c_str());
  }
  Device device = kCPU;
  if (a.device_type() == nb::device::cuda::value) {
    device = Device::cuda(a.device_id());
  } else if (a.device_type() != nb::device::cpu::value) {
    throw nb::type_error((std::string(fn) + "(): only CPU and CUDA memory is supported").c_str());
  }
  Shape sizes, strides;
  int64_t extent = 1;
  bool empty = false;
  for (size_t d = 0; d < a.ndim(); ++d) {
    sizes.push_back(static_cast<int64_t>(a.shape(d)));
    strides.push_back(a.stride(d));
    if (a.stride(d) < 0) {
      throw nb::value_error((std::string(fn) + "(): at least one stride in the given array is "
                                               "negative, and tensors with negative strides are "
                                               "not supported. (You can make a copy first.)")
                                .c_str());
    }
    if (a.shape(d) == 0) empty = true;
    extent += (static_cast<int64_t>(a.shape(d)) - 1) * a.stride(d);
  }
  size_t nbytes = empty ? 0 : static_cast<size_t>(extent) * element_size(*dtype);
  auto* holder = new nb::ndarray<>(a);
  Storage storage = make_external_storage(const_cast<void*>(a.data()), nbytes, device, [holder] {
    nb::gil_scoped_acquire gil;
    delete holder;
  });
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), *dtype, sizes, strides, 0));
}

Tensor tensor_to(const Tensor& t, nb::args args, nb::kwargs kwargs) {
  std::optional<DType> dtype;
  std::optional<Device> device;
  auto take = [&](nb::handle h) {
    if (nb::isinstance<PyDType>(h)) {
      dtype = nb::cast<PyDType>(h).dtype;
    } else if (is_tensor(h)) {
      dtype = unwrap_tensor(h).dtype();
      device = unwrap_tensor(h).device();
    } else if (h.is_none()) {
    } else {
      device = nb::cast<Device>(h);
    }
  };
  for (nb::handle h : args)
    take(h);
  bool copy = false;
  for (auto [k, v] : kwargs) {
    std::string key = nb::cast<std::string>(k);
    if (key == "dtype" || key == "device" || key == "other") {
      take(v);
    } else if (key == "copy") {
      copy = nb::cast<bool>(v);
    } else if (key != "non_blocking") {
      throw nb::type_error(("to() got an unexpected keyword argument '" + key + "'").c_str());
    }
  }
  Tensor out = t;
  nb::gil_scoped_release release;
  if (device && *device != out.device()) out = out.to(*device);
  if (dtype && *dtype != out.dtype()) out = out.to(*dtype);
  if (copy && out.is_same(t)) out = out.clone();
  return out;
}

}  // namespace

namespace {
// Sizes that may stay symbolic (kiln.SymInt inside a symbolic trace), for the factories whose
// sizes are a SymShape attribute; torch's TypeError for anything but ints.
SymShape sym_size_from_args(const nb::args& args, const char* fn) {
  bool one = args.size() == 1 && !PyLong_Check(args[0].ptr()) && !is_sym_int(args[0]);
  if (std::optional<SymShape> s = maybe_sym_shape(one ? args[0] : nb::handle(args))) return *s;
  return to_sym_shape(size_from_args(args, fn));
}
}  // namespace

void bind_tensor_data(nb::module_& m) {
#define KILN_SIZE_FACTORY(NAME, SIZES, CALL)                                      \
  m.def(                                                                          \
      NAME,                                                                       \
      [](nb::args size, std::optional<DType> dtype, std::optional<Device> device, \
         bool requires_grad) {                                                    \
        auto s = SIZES(size, NAME);                                               \
        TensorOptions o = make_options(dtype, device, requires_grad);             \
        return CALL;                                                              \
      },                                                                          \
      nb::arg("size"), nb::kw_only(), nb::arg("dtype") = nb::none(),              \
      nb::arg("device") = nb::none(), nb::arg("requires_grad") = false)
  KILN_SIZE_FACTORY("zeros", sym_size_from_args, full_symint(s, 0, o));
  KILN_SIZE_FACTORY("ones", sym_size_from_args, full_symint(s, 1, o));
  KILN_SIZE_FACTORY("empty", sym_size_from_args, empty_symint(s, o));
  // Random ops draw as many numbers as their sizes say: integer sizes.
  KILN_SIZE_FACTORY("rand", size_from_args, rand(s, o));
  KILN_SIZE_FACTORY("randn", size_from_args, randn(s, o));
#undef KILN_SIZE_FACTORY
  m.def(
      "full",
      [](nb::handle size, nb::handle value, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        nb::args args = nb::borrow<nb::args>(nb::make_tuple(size));
        Scalar v = to_scalar(value);
        // torch: full() infers the dtype from the fill value
        DType inferred = v.is_floating() ? kDefaultFloat : v.is_bool() ? kBool : kInt64;
        return full_symint(sym_size_from_args(args, "full"), v,
                           make_options(dtype.value_or(inferred), device, requires_grad));
      },
      nb::arg("size"), nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype") = nb::none(),
      nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  m.def(
      "arange",
      [](nb::handle a, nb::handle b, nb::handle step, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        TensorOptions o = make_options(dtype, device, requires_grad);
        // arange(n) and arange(0, n) with n = x.shape[0] inside a symbolic trace: a range over
        // the symbol (arange_symint) instead of a read of it.
        bool from_zero = b.is_none() || (PyLong_Check(a.ptr()) && nb::cast<int64_t>(a) == 0);
        nb::handle end = b.is_none() ? a : b;
        if (from_zero && step.is_none() && !requires_grad && is_sym_int(end))
          return arange_symint(*sym_size_item(end), o);
        if (b.is_none()) return arange(to_scalar(a), o);
        return arange(to_scalar(a), to_scalar(b), step.is_none() ? Scalar(1) : to_scalar(step), o);
      },
      nb::arg("start"), nb::arg("end") = nb::none(), nb::arg("step") = nb::none(), nb::kw_only(),
      nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
      nb::arg("requires_grad") = false);
#define KILN_LIKE_FACTORY(NAME, CALL)                                               \
  m.def(                                                                            \
      NAME,                                                                         \
      [](const Tensor& x, std::optional<DType> dtype, std::optional<Device> device, \
         bool requires_grad) {                                                      \
        TensorOptions o = make_options(dtype, device, requires_grad);               \
        return CALL;                                                                \
      },                                                                            \
      nb::arg("input"), nb::kw_only(), nb::arg("dtype") = nb::none(),               \
      nb::arg("device") = nb::none(), nb::arg("requires_grad") = false)
  KILN_LIKE_FACTORY("zeros_like", zeros_like(x, o));
  KILN_LIKE_FACTORY("ones_like", ones_like(x, o));
  KILN_LIKE_FACTORY("empty_like", empty_like(x, o));
  KILN_LIKE_FACTORY("rand_like", rand_like(x, o));
  KILN_LIKE_FACTORY("randn_like", randn_like(x, o));
#undef KILN_LIKE_FACTORY
  m.def(
      "full_like",
      [](const Tensor& x, nb::handle value, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        return full_like(x, to_scalar(value), make_options(dtype, device, requires_grad));
      },
      nb::arg("input"), nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype") = nb::none(),
      nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  m.def("tensor", &tensor_from_data, nb::arg("data"), nb::kw_only(), nb::arg("dtype") = nb::none(),
        nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);

  m.def(
      "from_numpy",
      [](nb::handle array) {
        nb::handle np_ndarray = nb::module_::import_("numpy").attr("ndarray");
        if (!PyObject_IsInstance(array.ptr(), np_ndarray.ptr())) {
          throw nb::type_error(
              ("expected np.ndarray (got " + std::string(nb::type_name(array.type()).c_str()) + ")")
                  .c_str());
        }
        return from_ndarray(nb::cast<nb::ndarray<>>(array), "from_numpy");
      },
      nb::arg("ndarray"));
  m.def(
      "from_dlpack",
      [](nb::handle obj) {
        if (is_tensor(obj)) return unwrap_tensor(obj);
        return from_ndarray(nb::cast<nb::ndarray<>>(obj), "from_dlpack");
      },
      nb::arg("ext_tensor"));

  nb::handle cls = tensor_type();
  nb::setattr(cls, "numpy",
              nb::cpp_function([](const Tensor& t, bool force) { return to_numpy(t, force); },
                               nb::is_method(), nb::name("numpy"), nb::kw_only(),
                               nb::arg("force") = false));
  nb::setattr(cls, "__dlpack__",
              nb::cpp_function(
                  [](const Tensor& t, nb::kwargs kwargs) {
                    if (t.requires_grad()) {
                      throw nb::value_error(
                          "Can't export tensors that require gradient, use "
                          "tensor.detach()");
                    }
                    // nanobind's array-API object speaks the DLPack protocol, versioned
                    // capsules included (so consumers may write); CPU memory needs no stream.
                    nb::object arr = nb::cast(nb::ndarray<nb::array_api>(as_ndarray(t)));
                    if (kwargs.contains("stream")) nb::del(kwargs["stream"]);
                    return arr.attr("__dlpack__")(**kwargs);
                  },
                  nb::is_method(), nb::name("__dlpack__")));
  nb::setattr(cls, "__dlpack_device__",
              nb::cpp_function(
                  [](const Tensor& t) {
                    if (t.device().is_cuda()) return std::make_pair(2, int(t.device().index));
                    return std::make_pair(1, 0);
                  },
                  nb::is_method(), nb::name("__dlpack_device__")));
  nb::setattr(cls, "to", nb::cpp_function(&tensor_to, nb::is_method(), nb::name("to")));

  nb::module_ cuda = m.def_submodule("cuda", "CUDA devices");
  cuda.def("is_available", [] { return cuda::driver_loaded() && cuda::device_count() > 0; });
  cuda.def("device_count", [] { return cuda::driver_loaded() ? cuda::device_count() : 0; });
}

}  // namespace kiln::python
