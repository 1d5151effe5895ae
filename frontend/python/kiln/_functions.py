"""Functions torch has at the top level that are compositions, not op-table ops."""

import builtins

from . import _C

_nn = _C._nn


def matmul(input, other):
    return _C._nn.matmul(input, other)


def stack(tensors, dim=0):
    return _C._nn.stack(list(tensors), dim)


def reshape(input, shape):
    return input.reshape(shape)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def split(tensor, split_size_or_sections, dim=0):
    if not isinstance(split_size_or_sections, int):
        raise TypeError("split(): only an int split size is supported, not "
                        f"{type(split_size_or_sections).__name__}")
    return tensor.split(split_size_or_sections, dim)


def numel(input):
    return input.numel()


def _reduce_or_pair(name, full):
    """torch's max/min: the whole tensor's value without a dim, (values, indices) with one."""
    def fn(input, dim=None, keepdim=False):
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}(): keepdim needs a dim")
            return full(input)
        return getattr(_C.ops, name)(input, dim, keepdim)
    fn.__name__ = name
    return fn


max = _reduce_or_pair("max", lambda t: _C.ops.amax(t))
min = _reduce_or_pair("min", lambda t: _C.ops.amin(t))
_C.Tensor.max = max
_C.Tensor.min = min


# ---- comparisons and conveniences torch scripts use, composed of ops ----

def is_tensor(obj):
    return isinstance(obj, _C.Tensor)


def is_floating_point(input):
    return input.dtype.is_floating_point


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise (torch.isclose)."""
    if equal_nan:
        raise NotImplementedError("isclose(equal_nan=True) is not supported")
    if input.dtype != other.dtype:
        raise TypeError(f"isclose(): the dtypes differ: {input.dtype} and {other.dtype}")
    if not input.dtype.is_floating_point:
        return input == other
    return (input - other).abs() <= (other.abs() * rtol + atol)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _all_true(isclose(input, other, rtol, atol, equal_nan))


def equal(input, other):
    """True when both have the same shape and elements (torch.equal)."""
    return input.shape == other.shape and _all_true(input == other)


def _all_true(t):
    """Whether every element is true (0 elements: True), for allclose and equal."""
    return _nn.all(t, [], False).item()


def clamp(input, min=None, max=None):
    """torch.clamp: number bounds (the clamp op) or tensor bounds, which broadcast with input."""
    if not isinstance(min, _C.Tensor) and not isinstance(max, _C.Tensor):
        return _C.ops.clamp(input, min=min, max=max)
    if min is not None and not isinstance(min, _C.Tensor):
        min = _C.tensor(min)
    if max is not None and not isinstance(max, _C.Tensor):
        max = _C.tensor(max)
    if min is None:
        return _C.ops.clamp_max(input, max)
    if max is None:
        return _C.ops.clamp_min(input, min)
    return _C.ops.clamp_tensor(input, min, max)


def lerp(input, end, weight):
    """torch.lerp with a tensor or a number as weight."""
    if isinstance(weight, _C.Tensor):
        return _C.ops.lerp(input, end, weight)
    return _C.ops.lerp_scalar(input, end, weight=weight)


def _type(self, dtype=None):
    if dtype is None:
        return f"kiln.{str(self.dtype).split('.')[-1]}Tensor"
    return self.to(dtype)


def _norm(self, p="fro", dim=None, keepdim=False):
    """The p-norm over `dim` or everything: "fro" and 2 (torch's default), inf, or any p > 0."""
    if p in ("fro", 2, 2.0):
        return (self * self).sum(dim, keepdim=keepdim).sqrt()
    if p == float("inf"):
        return self.abs().amax(dim, keepdim=keepdim)
    if p == 1:
        return self.abs().sum(dim, keepdim=keepdim)
    if isinstance(p, (int, float)) and p > 0:
        return (self.abs() ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)
    raise ValueError(f"norm(): p must be 'fro', inf or a positive number, got {p!r}")


def _new_factory(make):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        return make(*size, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)
    return method


_C.Tensor.clamp = clamp
_C.Tensor.lerp = lerp
_C.Tensor.type = _type
_C.Tensor.norm = _norm
_C.Tensor.new_zeros = _new_factory(_C.zeros)
_C.Tensor.new_ones = _new_factory(_C.ones)
_C.Tensor.new_empty = _new_factory(_C.empty)
_C.Tensor.new_full = lambda self, size, fill_value, **kw: _C.full(
    size, fill_value, dtype=kw.get("dtype") or self.dtype, device=kw.get("device") or self.device,
    requires_grad=kw.get("requires_grad", False))
_C.Tensor.new_tensor = lambda self, data, **kw: _C.tensor(
    data, dtype=kw.get("dtype") or self.dtype, device=kw.get("device") or self.device,
    requires_grad=kw.get("requires_grad", False))


# ---- shape, linear-algebra and reduction helpers composed in C++ (runtime/api/) ----


def _dims(dim):
    """None (every dim), an int or a sequence of ints, as the list the C++ side takes."""
    if dim is None:
        return []
    if isinstance(dim, int):
        return [dim]
    return list(dim)


def _varargs(name, args, kwargs, keyword):
    """torch's `x.flip(0, 1)`, `x.flip((0, 1))` and `x.flip(dims=(0, 1))` alike."""
    unknown = set(kwargs) - {keyword}
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument '{unknown.pop()}'")
    if keyword in kwargs:
        if args:
            raise TypeError(f"{name}(): got {keyword} both positionally and by keyword")
        return _dims(kwargs[keyword])
    if len(args) == 1 and not isinstance(args[0], int):
        return list(args[0])
    if not builtins.all(isinstance(a, int) for a in args):
        raise TypeError(f"{name}(): expected ints or one sequence of ints")
    return list(args)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """sqrt(var): `correction` (default 1) or torch's older `unbiased` flag."""
    if isinstance(dim, bool):  # torch.std(x, False): the unbiased overload
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    elif unbiased is not None:
        raise TypeError("std(): give either unbiased or correction, not both")
    return _nn.std(input, _dims(dim), float(correction), keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001  (torch's name)
    return _nn.any(input, _dims(dim), keepdim)


def all(input, dim=None, keepdim=False):  # noqa: A001  (torch's name)
    return _nn.all(input, _dims(dim), keepdim)


def tril(input, diagonal=0):
    return _nn.tril(input, diagonal)


def triu(input, diagonal=0):
    return _nn.triu(input, diagonal)


def flip(input, dims):
    return _nn.flip(input, _dims(dims))


def roll(input, shifts, dims=None):
    return _nn.roll(input, _dims(shifts), _dims(dims))


def outer(input, vec2):
    return _nn.outer(input, vec2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    return _nn.addmm(input, mat1, mat2, beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _nn.baddbmm(input, batch1, batch2, beta, alpha)


def einsum(equation, *operands):
    """torch.einsum(equation, *operands), or with the operands as one list."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _nn.einsum(equation, list(operands))


def where(condition, input=None, other=None, *, self=None):
    """torch.where(condition, input, other); either may be a Python number. `self` is the op
    table's name for input (kiln.ops.where)."""
    if self is not None:
        input = self
    if isinstance(input, _C.Tensor) and isinstance(other, _C.Tensor):
        return _C.ops.where(condition, input, other)
    if input is None and other is None:
        # torch.where(condition): nonzero(condition, as_tuple=True), a graph break under compile
        from ._indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes condition alone or condition, input and other")
    return _nn.where(condition, input, other)


_C.Tensor.std = std
_C.Tensor.any = any
_C.Tensor.all = all
_C.Tensor.tril = tril
_C.Tensor.triu = triu
_C.Tensor.flip = lambda self, *dims, **kw: _nn.flip(self, _varargs("flip", dims, kw, "dims"))
_C.Tensor.roll = roll
_C.Tensor.repeat = lambda self, *sizes, **kw: _nn.repeat(
    self, _varargs("repeat", sizes, kw, "repeats"))
_C.Tensor.outer = outer
_C.Tensor.addmm = addmm
_C.Tensor.baddbmm = baddbmm
_C.Tensor.where = lambda self, condition, other: where(condition, self, other)
