// kiln.autograd.Function: a Python forward and backward. The seeds' THPFunction / PyNode
// split: the Function call makes a C++ Node (PyFunctionNode, a CppNodeBase like libtorch's
// custom-function Node) whose backward takes the GIL and calls the class's Python `backward`.
// The ctx object Python code sees (kiln.autograd.function.FunctionCtx) holds the Node weakly;
// the Node holds the ctx, so attributes set on ctx in forward live as long as the graph.
//
// Under kiln.compile a Function whose class does not set `is_traceable = True` is a graph
// break: it runs eagerly between compiled segments, now and on every later call (Note [Graph
// breaks], frontend/compile/segments.cpp), exactly as a C++ autograd::Function is.
#include "kiln/frontend/custom_function.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/tracing_state.h"
#include "python_common.h"
#include "python_hooks.h"

namespace kiln::python {
namespace {

class PyFunctionNode : public autograd::CppNodeBase {
 public:
  PyFunctionNode(std::string name, bool traceable, nb::handle cls)
      : CppNodeBase(std::move(name), traceable), cls_(cls) {}
  PyRef ctx_object;

 protected:
  autograd::variable_list call_backward(autograd::variable_list grads) override {
    return call_python([&] {
      nb::list args;
      args.append(ctx_object.get());
      for (const Tensor& g : grads)
        args.append(nb::steal(wrap_tensor(g)));
      nb::object result = cls_.get().attr("backward")(*nb::tuple(args));
      autograd::variable_list out;
      if (!PyTuple_Check(result.ptr()) && !PyList_Check(result.ptr())) {
        out.push_back(tensor_from_hook_result(result, "Function.backward"));
      } else {
        for (nb::handle h : result)
          out.push_back(
              h.is_none() || !is_tensor(h)
                  ? (h.is_none() ? Tensor() : tensor_from_hook_result(h, "Function.backward"))
                  : unwrap_tensor(h));
      }
      return out;
    });
  }

 private:
  PyRef cls_;
};

// The Python-visible context of one Function call.
struct FunctionCtx {
  std::weak_ptr<PyFunctionNode> node;
  nb::tuple needs_input_grad;
  std::shared_ptr<PyFunctionNode> lock() const {
    auto n = node.lock();
    if (!n) throw nb::value_error("this Function's graph was freed");
    return n;
  }
};

std::vector<Tensor> tensors_of(const nb::args& args) {
  std::vector<Tensor> out;
  for (nb::handle h : args)
    if (!h.is_none() && is_tensor(h)) out.push_back(unwrap_tensor(h));
  return out;
}

nb::object apply_eager(nb::handle cls, nb::tuple args) {
  bool traceable = nb::cast<bool>(nb::bool_(nb::getattr(cls, "is_traceable", nb::bool_(false))));
  std::string name = nb::cast<std::string>(cls.attr("__name__")) + "Backward";
  auto node = autograd::make_node<PyFunctionNode>(name, traceable, cls);
  std::vector<Tensor> tensor_inputs;
  nb::list needs;
  for (nb::handle h : args) {
    bool tensor = is_tensor(h);
    node->is_variable_input.push_back(tensor);
    if (tensor) tensor_inputs.push_back(unwrap_tensor(h));
    needs.append(tensor && GradMode::is_enabled() && unwrap_tensor(h).requires_grad());
  }
  bool record = autograd::prepare_custom_function(*node, tensor_inputs);
  nb::object ctx = nb::cast(FunctionCtx{node, nb::tuple(needs)});
  node->ctx_object = PyRef(ctx);
  nb::object out;
  {
    AutoGradMode forward_without_grad(false);
    nb::list call_args;
    call_args.append(ctx);
    for (nb::handle h : args)
      call_args.append(h);
    out = cls.attr("forward")(*nb::tuple(call_args));
  }
  bool single = is_tensor(out);
  std::vector<nb::object> items;
  if (single) {
    items.push_back(out);
  } else if (PyTuple_Check(out.ptr()) || PyList_Check(out.ptr())) {
    for (nb::handle h : out)
      items.push_back(nb::borrow(h));
  } else {
    items.push_back(out);
    single = true;
  }
  std::vector<Tensor> outputs;
  std::vector<size_t> where;
  for (size_t i = 0; i < items.size(); ++i) {
    if (is_tensor(items[i])) {
      outputs.push_back(unwrap_tensor(items[i]));
      where.push_back(i);
    }
  }
  std::vector<Tensor*> ptrs;
  for (Tensor& t : outputs)
    ptrs.push_back(&t);
  autograd::finish_custom_function(node, record, tensor_inputs, ptrs);
  for (size_t k = 0; k < outputs.size(); ++k)
    items[where[k]] = nb::steal(wrap_tensor(outputs[k]));
  if (single) return items[0];
  nb::list l;
  for (auto& o : items)
    l.append(o);
  return nb::tuple(l);
}

// A graph break: one opaque step of the trace that runs the Function eagerly (see the file's
// comment). Non-tensor arguments are constants of the compiled plan; the result's structure is
// the capture run's.
nb::object apply_as_graph_break(TracingState& state, nb::handle cls, nb::tuple args) {
  struct Shared {
    PyRef cls;
    PyRef args;
    bool capturing = true;
    PyRef first;
  };
  auto shared = std::make_shared<Shared>(Shared{PyRef(cls), PyRef(args)});
  std::vector<Tensor> inputs = tensors_of(nb::borrow<nb::args>(args));
  TracingState::OpaqueFn call = [shared](const std::vector<Tensor>& new_inputs) {
    nb::gil_scoped_acquire gil;
    nb::list a;
    size_t k = 0;
    for (nb::handle h : shared->args.get()) {
      if (!h.is_none() && is_tensor(h)) {
        a.append(nb::steal(wrap_tensor(new_inputs.at(k++))));
      } else {
        a.append(h);
      }
    }
    nb::object out = apply_eager(shared->cls.get(), nb::tuple(a));
    std::vector<Tensor> flat;
    if (is_tensor(out)) {
      flat.push_back(unwrap_tensor(out));
    } else if (PyTuple_Check(out.ptr())) {
      for (nb::handle h : out)
        if (is_tensor(h)) flat.push_back(unwrap_tensor(h));
    }
    if (shared->capturing) shared->first = PyRef(out);
    return flat;
  };
  std::string name = nb::cast<std::string>(cls.attr("__name__"));
  std::vector<Tensor> traced;
  {
    nb::gil_scoped_release release;  // record_fallback calls back into Python with the GIL
    traced = state.record_fallback(name, std::move(call), inputs);
  }
  shared->capturing = false;
  // The trace's tensors stand for the results: substitute them into the structure.
  nb::object first = nb::borrow(shared->first.get());
  shared->first.reset();
  size_t k = 0;
  if (is_tensor(first)) return nb::steal(wrap_tensor(traced.at(0)));
  if (PyTuple_Check(first.ptr())) {
    nb::list l;
    for (nb::handle h : first)
      l.append(is_tensor(h) ? nb::steal(wrap_tensor(traced.at(k++))) : nb::borrow(h));
    return nb::tuple(l);
  }
  return first;
}

nb::object function_apply(nb::handle cls, nb::args args) {
  bool traceable = nb::cast<bool>(nb::bool_(nb::getattr(cls, "is_traceable", nb::bool_(false))));
  TracingState* state = current_tracing_state();
  if (!traceable && state != nullptr && state->records_graph_breaks() && is_tracing()) {
    return apply_as_graph_break(*state, cls, nb::tuple(args));
  }
  return apply_eager(cls, nb::tuple(args));
}

std::vector<Tensor> tensors_from(nb::args ts) {
  std::vector<Tensor> out;
  for (nb::handle h : ts)
    out.push_back(nb::cast<Tensor>(h));
  return out;
}

}  // namespace

void bind_function(nb::module_& m) {
  nb::class_<FunctionCtx>(m, "FunctionCtx", nb::dynamic_attr())
      .def("save_for_backward",
           [](FunctionCtx& c, nb::args ts) {
             std::vector<Tensor> v;
             for (nb::handle h : ts)
               v.push_back(h.is_none() ? Tensor() : nb::cast<Tensor>(h));
             c.lock()->ctx.save_for_backward(std::move(v));
           })
      .def_prop_ro("saved_tensors",
                   [](FunctionCtx& c) {
                     nb::list l;
                     for (const Tensor& t : c.lock()->ctx.get_saved_variables())
                       l.append(nb::steal(wrap_tensor(t)));
                     return nb::tuple(l);
                   })
      .def_prop_ro("needs_input_grad", [](FunctionCtx& c) { return c.needs_input_grad; })
      .def("mark_non_differentiable",
           [](FunctionCtx& c, nb::args ts) {
             c.lock()->ctx.mark_non_differentiable(tensors_from(ts));
           })
      .def("mark_dirty",
           [](FunctionCtx& c, nb::args ts) { c.lock()->ctx.mark_dirty(tensors_from(ts)); })
      .def("set_materialize_grads",
           [](FunctionCtx& c, bool value) { c.lock()->ctx.set_materialize_grads(value); });
  m.def("_function_apply", &function_apply);
}

}  // namespace kiln::python
