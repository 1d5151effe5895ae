"""The backward graph's Node type: what ``tensor.grad_fn`` returns (torch's
``torch.autograd.graph.Node``): ``name()``, ``next_functions``, ``register_hook``,
``register_prehook`` and ``metadata``."""

from .._C import Node, RemovableHandle

__all__ = ["Node", "RemovableHandle"]
