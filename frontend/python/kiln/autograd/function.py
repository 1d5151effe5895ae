"""kiln.autograd.Function: a custom op with a Python forward and backward.

    class Exp(kiln.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

``forward`` runs without grad; ``backward`` runs as a C++ Node that takes the GIL and calls
it (frontend/python/src/python_function.cpp). Under kiln.compile a Function is a graph break
unless its class sets ``is_traceable = True`` (its backward then only calls kiln ops).
"""

from .. import _C

FunctionCtx = _C.FunctionCtx


class Function:
    is_traceable = False

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Function subclasses are used through their apply() classmethod, "
                           "not instantiated")

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply() takes positional arguments only")
        return _C._function_apply(cls, *args)
