// Autograd from Python: hooks, grad_fn objects (kiln.autograd.graph.Node), grad modes,
// kiln.autograd.grad / backward, anomaly mode, checkpoint, and the live-object counters.
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>

#include "kiln/frontend/checkpoint.h"
#include "kiln/runtime/api/autograd.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/basic_nodes.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "python_common.h"
#include "python_hooks.h"

namespace kiln::python {

// ---- hooks ------------------------------------------------------------------------------------

void raise_python(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

Tensor tensor_from_hook_result(nb::handle result, const char* what) {
  if (result.is_none()) return {};
  if (!is_tensor(result)) {
    raise_python(PyExc_TypeError, std::string(what) +
                                      " must return None or a Tensor, but returned " +
                                      nb::type_name(result.type()).c_str());
  }
  return unwrap_tensor(result);
}

namespace {

autograd::variable_list to_variable_list(nb::handle seq, const autograd::variable_list& fallback,
                                         const char* what) {
  if (seq.is_none()) return fallback;
  autograd::variable_list out;
  for (nb::handle item : seq)
    out.push_back(tensor_from_hook_result(item, what));
  if (out.size() != fallback.size()) {
    raise_python(PyExc_ValueError, std::string(what) + " returned " + std::to_string(out.size()) +
                                       " gradients, expected " + std::to_string(fallback.size()));
  }
  return out;
}

nb::tuple to_tuple(const autograd::variable_list& v) {
  nb::list l;
  for (const Tensor& t : v)
    l.append(nb::steal(wrap_tensor(t)));
  return nb::tuple(l);
}

}  // namespace

Tensor PyTensorHook::operator()(const Tensor& grad) const {
  return call_python([&] { return tensor_from_hook_result(fn.get()(grad), "a tensor hook"); });
}

void PyPostAccumulateGradFn::operator()(const Tensor& param) const {
  call_python([&] { fn.get()(param); });
}

autograd::variable_list PyNodePreHook::operator()(const autograd::variable_list& grads) {
  if (*removed) return grads;
  return call_python(
      [&] { return to_variable_list(fn.get()(to_tuple(grads)), grads, "a grad_fn pre hook"); });
}

autograd::variable_list PyNodePostHook::operator()(const autograd::variable_list& outputs,
                                                   const autograd::variable_list& inputs) {
  return call_python([&] {
    return to_variable_list(fn.get()(to_tuple(outputs), to_tuple(inputs)), outputs,
                            "a grad_fn hook");
  });
}

RemovableHandle register_tensor_hook(const Tensor& t, nb::handle fn) {
  if (!PyCallable_Check(fn.ptr())) throw nb::type_error("register_hook: the hook must be callable");
  unsigned id = t.register_hook(PyTensorHook{PyRef(fn)});
  std::weak_ptr<TensorImpl> weak = t.impl_ptr();
  return {[weak, id] {
    if (auto impl = weak.lock()) Tensor(impl).remove_hook(id);
  }};
}

RemovableHandle register_post_accumulate_grad_hook(const Tensor& t, nb::handle fn) {
  if (!PyCallable_Check(fn.ptr())) {
    throw nb::type_error("register_post_accumulate_grad_hook: the hook must be callable");
  }
  t.register_post_accumulate_grad_hook(PyPostAccumulateGradFn{PyRef(fn)});
  auto* list = static_cast<autograd::PostAccumulateGradHookList*>(
      t.impl()->autograd_meta()->post_acc_grad_hook.get());
  size_t index = list->fns.size() - 1;
  std::weak_ptr<TensorImpl> weak = t.impl_ptr();
  return {[weak, index] {
    auto impl = weak.lock();
    if (!impl || impl->autograd_meta() == nullptr) return;
    auto* l = dynamic_cast<autograd::PostAccumulateGradHookList*>(
        impl->autograd_meta()->post_acc_grad_hook.get());
    if (l != nullptr && index < l->fns.size()) l->fns[index] = nullptr;
  }};
}

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                  bool retain_graph, bool create_graph,
                  const std::optional<std::vector<Tensor>>& inputs) {
  nb::gil_scoped_release release;
  autograd::backward(roots, grads, retain_graph, create_graph, inputs);
}

// ---- grad_fn objects ----------------------------------------------------------------------

namespace {

nb::handle g_node_type;
int64_t g_live_wrappers = 0;  // PyTensor + PyGradFn objects; changed with the GIL held

// The same rule as tensors (Note [Tensor garbage collection]): a grad_fn object reports the
// Python hooks of its Node while it is the Node's only owner.
int node_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  const PyGradFn& p = *nb::inst_ptr<PyGradFn>(self);
  Py_VISIT(p.metadata.ptr());
  if (!p.node || p.node.use_count() != 1) return 0;
  for (const auto& h : p.node->pre_hooks())
    if (auto* py = dynamic_cast<const PyNodePreHook*>(h.get())) Py_VISIT(py->fn.get().ptr());
  for (const auto& h : p.node->post_hooks())
    if (auto* py = dynamic_cast<const PyNodePostHook*>(h.get())) Py_VISIT(py->fn.get().ptr());
  return 0;
}

int node_clear(PyObject* self) {
  if (!nb::inst_ready(self)) return 0;
  PyGradFn& p = *nb::inst_ptr<PyGradFn>(self);
  p.metadata.reset();
  if (!p.node || p.node.use_count() != 1) return 0;
  auto& pre = p.node->pre_hooks();
  std::erase_if(pre, [](const auto& h) { return dynamic_cast<PyNodePreHook*>(h.get()); });
  auto& post = p.node->post_hooks();
  std::erase_if(post, [](const auto& h) { return dynamic_cast<PyNodePostHook*>(h.get()); });
  return 0;
}

destructor g_nanobind_node_dealloc = nullptr;

// Note [Python object preservation] in python_tensor.cpp: a grad_fn object outlives Python's
// references while its Node is in a graph, so its metadata and identity survive.
void node_dealloc(PyObject* self) {
  if (nb::inst_ready(self)) {
    PyGradFn& p = *nb::inst_ptr<PyGradFn>(self);
    if (p.node && p.node.use_count() > 1) {
      Py_SET_REFCNT(self, 1);
      p.node->pyobj_slot().take_ownership();
      p.node.reset();
      return;
    }
  }
  g_nanobind_node_dealloc(self);
}

PyType_Slot node_slots[] = {
    {Py_tp_traverse, (void*)node_traverse}, {Py_tp_clear, (void*)node_clear}, {0, nullptr}};

std::shared_ptr<autograd::Node> node_of(nb::handle self) {
  return nb::inst_ptr<PyGradFn>(self)->node;
}

}  // namespace

PyGradFn::~PyGradFn() {
  if (node) node->pyobj_slot().set(nullptr);
  --g_live_wrappers;
}

PyTensor::~PyTensor() {
  if (tensor.defined()) tensor.impl()->pyobj_slot().set(nullptr);
  --g_live_wrappers;
}

void count_new_wrapper() {
  ++g_live_wrappers;
}

PyObject* wrap_node(const std::shared_ptr<autograd::Node>& node) {
  if (!node) {
    Py_INCREF(Py_None);
    return Py_None;
  }
  if (void* existing = node->pyobj()) {
    if (node->pyobj_slot().owns_wrapper()) {  // preserved: the slot's reference is the caller's
      node->pyobj_slot().give_ownership_back();
      nb::inst_ptr<PyGradFn>(static_cast<PyObject*>(existing))->node = node;
      return static_cast<PyObject*>(existing);
    }
    Py_INCREF(static_cast<PyObject*>(existing));
    return static_cast<PyObject*>(existing);
  }
  PyObject* obj = nb::detail::nb_inst_alloc((PyTypeObject*)g_node_type.ptr());
  if (obj == nullptr) return nullptr;
  new (nb::inst_ptr<PyGradFn>(obj)) PyGradFn{node, nb::object()};
  nb::inst_mark_ready(obj);
  node->pyobj_slot().set(obj);
  ++g_live_wrappers;
  return obj;
}

namespace {

// retain_graph and allow_unused arrive as objects (None or a bool): an empty
// std::optional<bool> has an indeterminate payload byte that memcheck reports once value_or
// reads it.
nb::object grad(nb::handle outputs, nb::handle inputs, nb::handle grad_outputs,
                nb::handle retain_graph, bool create_graph, nb::handle allow_unused,
                bool materialize_grads) {
  auto as_list = [](nb::handle h, const char* name) {
    std::vector<Tensor> out;
    if (h.is_none()) return out;
    if (is_tensor(h)) return std::vector<Tensor>{unwrap_tensor(h)};
    for (nb::handle item : h) {
      if (item.is_none()) {
        out.emplace_back();
      } else if (is_tensor(item)) {
        out.push_back(unwrap_tensor(item));
      } else {
        throw nb::type_error((std::string("grad(): ") + name + " must be Tensors, not " +
                              nb::type_name(item.type()).c_str())
                                 .c_str());
      }
    }
    return out;
  };
  std::vector<Tensor> outs = as_list(outputs, "outputs");
  std::vector<Tensor> ins = as_list(inputs, "inputs");
  std::vector<Tensor> gouts = as_list(grad_outputs, "grad_outputs");
  KILN_CHECK(!ins.empty(), "grad requires non-empty inputs.");
  bool unused = allow_unused.is_none() ? materialize_grads : nb::cast<bool>(allow_unused);
  bool retain = retain_graph.is_none() ? create_graph : nb::cast<bool>(retain_graph);
  std::vector<Tensor> result;
  {
    nb::gil_scoped_release release;
    result = autograd::grad(outs, ins, gouts, retain, create_graph, unused);
  }
  nb::list l;
  for (size_t i = 0; i < result.size(); ++i) {
    Tensor g = result[i];
    if (!g.defined() && materialize_grads) g = zeros_like(ins[i]);
    l.append(nb::steal(wrap_tensor(g)));
  }
  return nb::tuple(l);
}

void backward(nb::handle tensors, nb::handle grad_tensors, nb::handle retain_graph,
              bool create_graph, std::optional<std::vector<Tensor>> inputs) {
  bool retain = retain_graph.is_none() ? create_graph : nb::cast<bool>(retain_graph);
  std::vector<Tensor> outs, grads;
  if (is_tensor(tensors)) {
    outs.push_back(unwrap_tensor(tensors));
  } else {
    for (nb::handle t : tensors)
      outs.push_back(nb::cast<Tensor>(t));
  }
  if (is_tensor(grad_tensors)) {
    grads.push_back(unwrap_tensor(grad_tensors));
  } else if (!grad_tensors.is_none()) {
    for (nb::handle t : grad_tensors)
      grads.push_back(t.is_none() ? Tensor() : nb::cast<Tensor>(t));
  }
  run_backward(outs, grads, retain, create_graph, inputs);
}

// kiln.utils.checkpoint's core: fn maps a list of tensors to a list of tensors.
std::vector<Tensor> checkpoint_flat(nb::callable fn, std::vector<Tensor> inputs) {
  auto [seed, offset] = autograd::checkpoint_rng_state();
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;
    outputs = nb::cast<std::vector<Tensor>>(fn(inputs));
  }
  PyRef held(fn);
  autograd::RecomputeFn recompute = [held](const std::vector<Tensor>& in) {
    return call_python([&] { return nb::cast<std::vector<Tensor>>(held.get()(in)); });
  };
  std::vector<Tensor*> ptrs;
  for (Tensor& t : outputs)
    ptrs.push_back(&t);
  autograd::attach_checkpoint(std::move(recompute), inputs, ptrs, seed, offset);
  return outputs;
}

}  // namespace

void bind_autograd(nb::module_& m) {
  nb::class_<RemovableHandle>(m, "RemovableHandle")
      .def("remove", &RemovableHandle::remove)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](RemovableHandle& h, nb::args) { h.remove(); });

  auto node =
      nb::class_<PyGradFn>(m, "Node", nb::is_weak_referenceable(), nb::type_slots(node_slots));
  g_node_type = node;
  auto* node_type = reinterpret_cast<PyTypeObject*>(node.ptr());
  g_nanobind_node_dealloc = node_type->tp_dealloc;
  node_type->tp_dealloc = node_dealloc;
  node.def("name", [](nb::handle self) { return node_of(self)->name(); })
      .def("__repr__",
           [](nb::handle self) {
             return fmt::format("<{} object at {:#x}>", node_of(self)->name(),
                                reinterpret_cast<uintptr_t>(self.ptr()));
           })
      .def_prop_ro("next_functions",
                   [](nb::handle self) {
                     nb::list l;
                     for (const autograd::Edge& e : node_of(self)->next_edges()) {
                       l.append(nb::make_tuple(nb::steal(wrap_node(e.function)), e.input_nr));
                     }
                     return nb::tuple(l);
                   })
      .def_prop_ro("variable",
                   [](nb::handle self) {
                     auto* acc = dynamic_cast<autograd::AccumulateGrad*>(node_of(self).get());
                     if (acc == nullptr) {
                       throw nb::attribute_error("only AccumulateGrad nodes have a variable");
                     }
                     return acc->variable();
                   })
      .def_prop_ro("metadata",
                   [](nb::handle self) {
                     PyGradFn& p = *nb::inst_ptr<PyGradFn>(self);
                     if (!p.metadata.is_valid()) p.metadata = nb::dict();
                     return p.metadata;
                   })
      .def("register_hook",
           [](nb::handle self, nb::handle fn) {
             auto hook = std::make_unique<PyNodePostHook>();
             hook->fn = PyRef(fn);
             std::shared_ptr<autograd::Node> n = node_of(self);
             uintptr_t key = n->add_post_hook(std::move(hook));
             std::weak_ptr<autograd::Node> weak = n;
             return RemovableHandle{[weak, key] {
               if (auto alive = weak.lock()) alive->del_post_hook(key);
             }};
           })
      .def("register_prehook",
           [](nb::handle self, nb::handle fn) {
             auto hook = std::make_unique<PyNodePreHook>();
             hook->fn = PyRef(fn);
             std::shared_ptr<bool> removed = hook->removed;
             node_of(self)->add_pre_hook(std::move(hook));
             return RemovableHandle{[removed] { *removed = true; }};
           })
      .def("__eq__", [](nb::handle a, nb::handle b) { return a.ptr() == b.ptr(); })
      .def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); });

  m.def("_set_grad_enabled", [](bool on) { GradMode::set_enabled(on); });
  m.def("is_grad_enabled", [] { return GradMode::is_enabled(); });
  m.def("_set_anomaly_enabled", [](bool on) { AnomalyMode::set_enabled(on); });
  m.def("_is_anomaly_enabled", [] { return AnomalyMode::is_enabled(); });
  m.def(
      "manual_seed", [](uint64_t seed) { manual_seed(seed); }, nb::arg("seed"));
  m.def("_grad", &grad, nb::arg("outputs"), nb::arg("inputs"),
        nb::arg("grad_outputs").none() = nb::none(), nb::arg("retain_graph").none() = nb::none(),
        nb::arg("create_graph") = false, nb::arg("allow_unused").none() = nb::none(),
        nb::arg("materialize_grads") = false);
  m.def("_backward", &backward, nb::arg("tensors"), nb::arg("grad_tensors").none() = nb::none(),
        nb::arg("retain_graph").none() = nb::none(), nb::arg("create_graph") = false,
        nb::arg("inputs") = nb::none());
  m.def("_checkpoint", &checkpoint_flat);
  m.def("_live_objects", [] {
    nb::dict d;
    d["tensors"] = TensorImpl::live_count();
    d["nodes"] = autograd::Node::live_count();
    d["wrappers"] = g_live_wrappers;
    return d;
  });
}

}  // namespace kiln::python
