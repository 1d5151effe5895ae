// kiln.Tensor: the wrapper object (Note [One Python object per tensor]), its garbage-collector
// support, and the methods that are not op-table ops: metadata, conversions, autograd.
#include <nanobind/stl/function.h>
#include <nanobind/stl/tuple.h>

#include "kiln/runtime/api/autograd.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "python_common.h"
#include "python_hooks.h"

namespace kiln::python {
namespace {

nb::handle g_tensor_type;

// Note [Tensor garbage collection]
// A hook is a Python callable held by C++ (the tensor's hook list), and it often refers back to
// its tensor (`x.register_hook(lambda g: g * x)`): a cycle Python's collector can see only if
// the wrapper reports the callables it reaches. As THPVariable does, the wrapper reports them
// only while it is the sole owner of the TensorImpl and of the hook list: when C++ holds the
// tensor too (a graph saved it), the reference from C++ is invisible to the collector, and
// reporting the callables would let it free objects that are still reachable.
bool owns_hooks(const PyTensor& p) {
  return p.tensor.defined() && p.tensor.impl_ptr().use_count() == 1;
}

int tensor_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (PyObject** dict = _PyObject_GetDictPtr(self); dict != nullptr) Py_VISIT(*dict);
  if (!nb::inst_ready(self)) return 0;
  const PyTensor& p = *nb::inst_ptr<PyTensor>(self);
  if (!owns_hooks(p)) return 0;
  const autograd::AutogradMeta* meta = p.tensor.impl()->autograd_meta();
  if (meta == nullptr) return 0;
  if (meta->hooks && meta->hooks.use_count() == 1) {
    for (const auto& fn : meta->hooks->hooks) {
      if (const PyTensorHook* h = fn.target<PyTensorHook>()) Py_VISIT(h->fn.get().ptr());
    }
  }
  if (auto* list = dynamic_cast<const autograd::PostAccumulateGradHookList*>(
          meta->post_acc_grad_hook.get())) {
    for (const auto& fn : list->fns) {
      if (const auto* h = fn.target<PyPostAccumulateGradFn>()) Py_VISIT(h->fn.get().ptr());
    }
  }
  return 0;
}

int tensor_clear(PyObject* self) {
  if (PyObject** dict = _PyObject_GetDictPtr(self); dict != nullptr) Py_CLEAR(*dict);
  if (!nb::inst_ready(self)) return 0;
  PyTensor& p = *nb::inst_ptr<PyTensor>(self);
  if (!owns_hooks(p)) return 0;
  autograd::AutogradMeta* meta = p.tensor.impl()->autograd_meta();
  if (meta == nullptr) return 0;
  if (meta->hooks && meta->hooks.use_count() == 1) {
    for (auto& fn : meta->hooks->hooks) {
      if (fn.target<PyTensorHook>() != nullptr) fn = nullptr;
    }
  }
  if (auto* list =
          dynamic_cast<autograd::PostAccumulateGradHookList*>(meta->post_acc_grad_hook.get())) {
    for (auto& fn : list->fns) {
      if (fn.target<PyPostAccumulateGradFn>() != nullptr) fn = nullptr;
    }
  }
  return 0;
}

// Note [Python object preservation]
// When Python drops its last reference to a kiln.Tensor while C++ still holds the tensor (a
// graph saved it, it is some tensor's .grad), the wrapper is not freed: it takes the reference
// back (refcount 1), gives up its own handle so that it does not keep the tensor alive, and the
// TensorImpl's slot owns it from then on (Note [Python object slot], runtime/pyobj_slot.h).
// Returning the tensor to Python again gives this same object, with its attributes; when C++
// frees the tensor, the slot releases the wrapper and it is freed for real. THPVariable does
// the same.
destructor g_nanobind_tensor_dealloc = nullptr;

void tensor_dealloc(PyObject* self) {
  if (nb::inst_ready(self)) {
    PyTensor& p = *nb::inst_ptr<PyTensor>(self);
    if (p.tensor.defined() && p.tensor.impl_ptr().use_count() > 1) {
      Py_SET_REFCNT(self, 1);
      p.tensor.impl()->pyobj_slot().take_ownership();
      p.tensor = Tensor();  // may free the tensor if another thread just dropped it: see above
      return;
    }
  }
  g_nanobind_tensor_dealloc(self);
}

// The slot's release function: drops the reference a preserved wrapper's slot holds.
void release_wrapper(void* wrapper) {
  if (!python_alive()) return;
  nb::gil_scoped_acquire gil;
  Py_DECREF(static_cast<PyObject*>(wrapper));
}

PyType_Slot tensor_slots[] = {
    {Py_tp_traverse, (void*)tensor_traverse}, {Py_tp_clear, (void*)tensor_clear}, {0, nullptr}};

nb::object item_of(const Tensor& t) {
  KILN_CHECK(t.numel() == 1, "a Tensor with {} elements cannot be converted to Scalar", t.numel());
  if (is_floating(t.dtype())) return nb::float_(t.to(kFloat64).item<double>());
  if (t.dtype() == kBool) return nb::bool_(t.item<bool>());
  return nb::int_(t.to(kInt64).item<int64_t>());
}

nb::object to_list(const Tensor& t) {
  if (t.dim() == 0) return item_of(t);
  Tensor host = t.to(kCPU).contiguous();
  nb::list out;
  for (int64_t i = 0; i < host.size(0); ++i)
    out.append(to_list(host.select(0, i)));
  return out;
}

nb::tuple shape_tuple(const Shape& s) {
  nb::list l;
  for (int64_t v : s)
    l.append(v);
  return nb::tuple(l);
}

// Torch's Tensor.backward(gradient, retain_graph, create_graph, inputs).
void tensor_backward(const Tensor& self, std::optional<Tensor> gradient, nb::handle retain_graph,
                     bool create_graph, std::optional<std::vector<Tensor>> inputs) {
  // An object, not std::optional<bool> (see grad() in python_autograd.cpp).
  bool keep = retain_graph.is_none() ? create_graph : nb::cast<bool>(retain_graph);
  std::vector<Tensor> grads;
  if (gradient) grads.push_back(*gradient);
  run_backward({self}, grads, keep, create_graph, inputs);
}

}  // namespace

nb::handle tensor_type() {
  return g_tensor_type;
}

bool is_tensor(nb::handle h) {
  return h.ptr() != nullptr && PyObject_TypeCheck(h.ptr(), (PyTypeObject*)g_tensor_type.ptr());
}

const Tensor& unwrap_tensor(nb::handle h) {
  return nb::inst_ptr<PyTensor>(h)->tensor;
}

PyObject* wrap_tensor(const Tensor& t) {
  if (!t.defined()) {
    Py_INCREF(Py_None);
    return Py_None;
  }
  if (void* existing = t.impl()->pyobj()) {
    if (t.impl()->pyobj_slot().owns_wrapper()) {  // preserved: the slot's reference is ours now
      t.impl()->pyobj_slot().give_ownership_back();
      nb::inst_ptr<PyTensor>(static_cast<PyObject*>(existing))->tensor = t;
      return static_cast<PyObject*>(existing);
    }
    Py_INCREF(static_cast<PyObject*>(existing));
    return static_cast<PyObject*>(existing);
  }
  PyObject* obj = nb::detail::nb_inst_alloc((PyTypeObject*)g_tensor_type.ptr());
  if (obj == nullptr) return nullptr;
  new (nb::inst_ptr<PyTensor>(obj)) PyTensor{t};
  nb::inst_mark_ready(obj);
  t.impl()->pyobj_slot().set(obj);
  count_new_wrapper();
  return obj;
}

void bind_tensor(nb::module_& m) {
  auto cls = nb::class_<PyTensor>(m, "Tensor", nb::dynamic_attr(), nb::is_weak_referenceable(),
                                  nb::type_slots(tensor_slots));
  g_tensor_type = cls;
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  g_nanobind_tensor_dealloc = type->tp_dealloc;
  type->tp_dealloc = tensor_dealloc;
  PyObjectSlot::set_release(release_wrapper);
  using T = const Tensor&;
  // Methods that run ops record the user's Python line as their call site (PythonCallSite).
  auto site = nb::call_guard<PythonCallSite>();
  // Inside a symbolic trace the sizes are kiln.SymInts where the graph holds symbols
  // (python_sym_int.cpp); reading them as ints specializes.
  cls.def_prop_ro(
         "shape",
         [](T t) { return symbolic_trace_active() ? sym_shape_tuple(t) : shape_tuple(t.sizes()); })
      .def(
          "size",
          [](T t, std::optional<int64_t> dim) -> nb::object {
            if (symbolic_trace_active())
              return dim ? wrap_sym_int(t.sym_size(*dim)) : sym_shape_tuple(t);
            if (dim) return nb::int_(t.size(*dim));
            return shape_tuple(t.sizes());
          },
          nb::arg("dim") = nb::none())
      .def(
          "stride",
          [](T t, std::optional<int64_t> dim) -> nb::object {
            if (dim) return nb::int_(t.stride(*dim));
            return shape_tuple(t.strides());
          },
          nb::arg("dim") = nb::none())
      .def("dim", [](T t) { return t.dim(); })
      .def_prop_ro("ndim", [](T t) { return t.dim(); })
      .def("numel",
           [](T t) -> nb::object {
             if (symbolic_trace_active()) return wrap_sym_int(t.sym_numel());
             return nb::int_(t.numel());
           })
      .def("nelement", [](T t) { return t.numel(); })
      .def("element_size", [](T t) { return t.element_size(); })
      .def("storage_offset", [](T t) { return t.storage_offset(); })
      .def("is_contiguous", [](T t) { return t.is_contiguous(); })
      .def("data_ptr", [](T t) { return reinterpret_cast<uintptr_t>(t.impl()->data()); })
      .def_prop_ro("dtype", [](T t) { return t.dtype(); })
      .def_prop_ro("device", [](T t) { return t.device(); })
      .def_prop_ro("is_cuda", [](T t) { return t.device().is_cuda(); })
      .def_prop_ro("is_meta", [](T t) { return t.device().is_meta(); })
      .def("is_floating_point", [](T t) { return is_floating(t.dtype()); })
      .def_prop_ro("_version", [](T t) { return t.version(); })
      .def("__len__",
           [](T t) {
             if (t.dim() == 0) throw nb::type_error("len() of a 0-d tensor");
             return t.size(0);
           })
      .def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); })
      .def("item", [](T t) { return item_of(t); })
      .def("tolist", [](T t) { return to_list(t); })
      .def("__bool__",
           [](T t) {
             if (t.numel() != 1) {
               throw nb::value_error(("Boolean value of Tensor with " + std::to_string(t.numel()) +
                                      " elements is ambiguous")
                                         .c_str());
             }
             return nb::cast<bool>(nb::bool_(item_of(t)));
           })
      .def("__float__", [](T t) { return nb::cast<double>(nb::float_(item_of(t))); })
      .def("__int__", [](T t) { return nb::int_(item_of(t)); })
      .def("__index__",
           [](T t) {
             if (is_floating(t.dtype()) || t.numel() != 1) {
               throw nb::type_error(
                   "only integer tensors of a single element can be converted to "
                   "an index");
             }
             return nb::int_(item_of(t));
           })
      // conversions and copies
      .def(
          "contiguous", [](T t) { return t.contiguous(); }, site)
      .def(
          "cpu", [](T t) { return t.to(kCPU); }, site)
      .def(
          "cuda",
          [](T t, std::optional<int> index) { return t.to(Device::cuda(index.value_or(0))); },
          nb::arg("device") = nb::none())
      .def(
          "float", [](T t) { return t.to(kFloat32); }, site)
      .def(
          "double", [](T t) { return t.to(kFloat64); }, site)
      .def(
          "half", [](T t) { return t.to(kFloat16); }, site)
      .def(
          "bfloat16", [](T t) { return t.to(kBFloat16); }, site)
      .def(
          "byte", [](T t) { return t.to(kUInt8); }, site)
      .def(
          "char", [](T t) { return t.to(kInt8); }, site)
      .def(
          "short", [](T t) { return t.to(kInt16); }, site)
      .def(
          "int", [](T t) { return t.to(kInt32); }, site)
      .def(
          "long", [](T t) { return t.to(kInt64); }, site)
      .def(
          "bool", [](T t) { return t.to(kBool); }, site)
      .def(
          "type_as", [](T t, T other) { return t.to(other.dtype()); }, site)
      .def(
          "copy_", [](T t, T src) { return t.copy_(src); }, nb::arg("src"))
      .def(
          "fill_", [](T t, nb::handle v) { return t.fill_(to_scalar(v)); }, nb::arg("value"))
      .def(
          "zero_", [](T t) { return t.zero_(); }, site)
      // views and composites that are not single table ops
      .def(
          "t", [](T t) { return t.t(); }, site)
      .def_prop_ro("T",
                   [](T t) {
                     Shape dims;
                     for (int64_t d = t.dim() - 1; d >= 0; --d)
                       dims.push_back(d);
                     return t.permute(dims);
                   })
      .def_prop_ro("mT", [](T t) { return t.transpose(-2, -1); })
      .def(
          "reshape",
          [](T t, nb::args shape) { return t.reshape_symint(sizes_from_args(shape, "reshape")); },
          site)
      // The other tensor's sizes as SymInts: under a symbolic trace they stay symbolic.
      .def(
          "view_as", [](T t, T other) { return t.view_symint(other.sym_sizes()); }, site)
      .def(
          "expand_as", [](T t, T other) { return t.expand_symint(other.sym_sizes()); }, site)
      .def(
          "reshape_as", [](T t, T other) { return t.reshape_symint(other.sym_sizes()); }, site)
      .def(
          "flatten",
          [](T t, int64_t start, int64_t end) {
            int64_t n = t.dim();
            if (n == 0) return t.reshape({1});
            if (start < 0) start += n;
            if (end < 0) end += n;
            SymShape all = t.sym_sizes();
            SymShape sizes(all.begin(), all.begin() + start);
            SymInt merged = 1;
            for (int64_t d = start; d <= end; ++d)
              merged *= all[static_cast<size_t>(d)];
            sizes.push_back(merged);
            sizes.insert(sizes.end(), all.begin() + end + 1, all.end());
            return t.reshape_symint(std::move(sizes));
          },
          nb::arg("start_dim") = 0, nb::arg("end_dim") = -1, site)
      .def(
          "narrow",
          [](T t, int64_t dim, int64_t start, int64_t length) {
            return t.narrow(dim, start, length);
          },
          site)
      .def(
          "chunk", [](T t, int64_t chunks, int64_t dim) { return t.chunk(chunks, dim); },
          nb::arg("chunks"), nb::arg("dim") = 0, site)
      .def(
          "split", [](T t, int64_t size, int64_t dim) { return t.split(size, dim); },
          nb::arg("split_size"), nb::arg("dim") = 0, site)
      .def(
          "matmul", [](T a, T b) { return matmul(a, b); }, site)
      .def(
          "__matmul__", [](T a, T b) { return matmul(a, b); }, site)
      .def(
          "__rmatmul__", [](T a, T b) { return matmul(b, a); }, site)
      // autograd
      .def_prop_rw(
          "requires_grad", [](T t) { return t.requires_grad(); },
          [](nb::handle self, bool value) {
            Tensor t = unwrap_tensor(self);
            t.requires_grad_(value);
          })
      .def(
          "requires_grad_",
          [](nb::handle self, bool value) {
            Tensor t = unwrap_tensor(self);
            t.requires_grad_(value);
            return nb::borrow(self);
          },
          nb::arg("requires_grad") = true)
      .def_prop_rw(
          "grad", [](T t) { return t.grad(); },
          [](T t, std::optional<Tensor> g) { t.mutable_grad() = g.value_or(Tensor()); },
          nb::arg("grad").none())
      .def_prop_rw(
          "data", [](T t) { return t.detach(); }, [](T t, const Tensor& data) { t.set_data(data); })
      .def("detach_",
           [](nb::handle self) {
             Tensor t = unwrap_tensor(self);
             t.detach_();
             return nb::borrow(self);
           })
      .def("_is_view", [](T t) { return t.is_view(); })
      .def_prop_ro("_base",
                   [](T t) -> std::optional<Tensor> {
                     Tensor base = t._base();
                     if (!base.defined()) return std::nullopt;
                     return base;
                   })
      .def_prop_ro("grad_fn", [](T t) { return t.grad_fn(); })
      .def_prop_ro("is_leaf", [](T t) { return t.is_leaf(); })
      .def_prop_ro("output_nr", [](T t) { return t.output_nr(); })
      .def_prop_ro("retains_grad", [](T t) { return t.retains_grad(); })
      .def("retain_grad", [](T t) { t.retain_grad(); })
      .def(
          "detach", [](T t) { return t.detach(); }, site)
      .def("backward", &tensor_backward, nb::arg("gradient") = nb::none(),
           nb::arg("retain_graph").none() = nb::none(), nb::arg("create_graph") = false,
           nb::arg("inputs") = nb::none())
      .def("register_hook", &register_tensor_hook, nb::arg("hook"))
      .def("register_post_accumulate_grad_hook", &register_post_accumulate_grad_hook,
           nb::arg("hook"));
}

}  // namespace kiln::python
