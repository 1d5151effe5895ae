"""kiln.autograd: grad, backward, Function, anomaly mode and the graph's Node type."""

from .. import _C
from . import graph  # noqa: F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function, FunctionCtx
from .grad_mode import enable_grad, no_grad, set_grad_enabled

__all__ = ["Function", "FunctionCtx", "backward", "detect_anomaly", "enable_grad", "grad",
           "no_grad", "set_detect_anomaly", "set_grad_enabled"]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, as a tuple (torch's
    ``torch.autograd.grad``); .grad fields are not touched."""
    if is_grads_batched:
        raise NotImplementedError("grad(): is_grads_batched is not supported")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    return _C._grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                    materialize_grads)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates the gradients of ``tensors`` into the leaves' .grad (torch's
    ``torch.autograd.backward``)."""
    if isinstance(inputs, _C.Tensor):
        inputs = [inputs]
    _C._backward(tensors, grad_tensors, retain_graph, create_graph,
                 None if inputs is None else list(inputs))
