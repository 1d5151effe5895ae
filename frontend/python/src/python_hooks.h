// Python callables as autograd hooks. Each hook type is a distinct C++ type so that the
// garbage-collector support (Note [Tensor garbage collection]) can find the Python objects
// among a tensor's or Node's hooks.
#pragma once

#include "kiln/runtime/autograd/function_hook.h"
#include "python_common.h"

namespace kiln::python {

// Runs `body` with the GIL, turning a Python exception into PyForeignError so that it crosses
// the engine unchanged.
template <class F>
auto call_python(F&& body) {
  nb::gil_scoped_acquire gil;
  try {
    return body();
  } catch (nb::python_error& e) {
    throw PyForeignError(std::move(e));
  }
}

// Sets a Python exception and throws it as nb::python_error, which call_python carries
// through the engine (a C++ nb::type_error would reach the user as a KilnError).
[[noreturn]] void raise_python(PyObject* type, const std::string& message);
Tensor tensor_from_hook_result(nb::handle result, const char* what);

// Tensor.register_hook(fn): fn(grad) returns None or a replacement gradient.
struct PyTensorHook {
  PyRef fn;
  Tensor operator()(const Tensor& grad) const;
};

// Tensor.register_post_accumulate_grad_hook(fn): fn(tensor) after .grad was updated.
struct PyPostAccumulateGradFn {
  PyRef fn;
  void operator()(const Tensor& param) const;
};

// grad_fn.register_prehook(fn): fn(grad_outputs) returns None or replacement gradients.
struct PyNodePreHook : autograd::FunctionPreHook {
  PyRef fn;
  std::shared_ptr<bool> removed = std::make_shared<bool>(false);
  autograd::variable_list operator()(const autograd::variable_list& grads) override;
};

// grad_fn.register_hook(fn): fn(grad_inputs, grad_outputs) returns None or replacement
// gradients for the forward inputs.
struct PyNodePostHook : autograd::FunctionPostHook {
  PyRef fn;
  autograd::variable_list operator()(const autograd::variable_list& outputs,
                                     const autograd::variable_list& inputs) override;
};

// The handle register_hook returns; remove() unregisters the hook (torch's RemovableHandle).
struct RemovableHandle {
  std::function<void()> remove_fn;
  void remove() {
    if (remove_fn) std::exchange(remove_fn, nullptr)();
  }
};

RemovableHandle register_tensor_hook(const Tensor& t, nb::handle fn);
RemovableHandle register_post_accumulate_grad_hook(const Tensor& t, nb::handle fn);

}  // namespace kiln::python
