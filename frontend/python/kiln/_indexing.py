"""Python indexing of tensors with torch's semantics. Basic indexing (int, slice, None, ...)
gives views (select, slice, unsqueeze). Advanced indexing (int64/int32 tensors, lists of ints,
bool tensors and lists) then goes through the op table's `index` on that view: index tensors
broadcast together, and their result dims land where the indexed dims were when those are
adjacent, first otherwise (torch's rule). A bool mask over k dims stands for the k columns of
its nonzero(), so x[mask] is a graph break under kiln.compile (its size depends on the data).
Writes with tensor indices call index_put_ on the basic-indexed view; the others copy_ or
fill_ it."""

import builtins
import sys

from . import _C

Tensor = _C.Tensor


def _normalize(key):
    if not isinstance(key, tuple):
        key = (key,)
    return tuple(_as_index_tensor(k) for k in key)


def _as_index_tensor(k):
    """Lists of ints or bools become index tensors (int64 or bool), as in torch."""
    if not isinstance(k, list):
        return k
    if k and builtins.all(isinstance(v, builtins.bool) for v in k):
        return _C.tensor(k, dtype=_C.bool)
    return _C.tensor(k, dtype=_C.int64)


def _is_scalar_index(k):
    return isinstance(k, Tensor) and k.dim() == 0 and k.dtype in (_C.int64, _C.int32)


def _consumed(k):
    if k is None or k is Ellipsis:
        return 0
    if isinstance(k, Tensor) and k.dtype == _C.bool:
        return k.dim()
    return 1


def _expand_ellipsis(t, key):
    consumed = builtins.sum(_consumed(k) for k in key)
    n_ellipsis = builtins.sum(1 for k in key if k is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > t.dim():
        raise IndexError(f"too many indices for tensor of dimension {t.dim()}")
    if n_ellipsis == 0:
        return key
    i = key.index(Ellipsis)
    return key[:i] + (slice(None),) * (t.dim() - consumed) + key[i + 1:]


def _bound(v):
    return v if isinstance(v, _C.SymInt) else builtins.int(v)


def _basic(self, key):
    """Applies the basic part of `key` as views; returns the view and the advanced entries as
    (dim of the view, index tensor) pairs."""
    key = _expand_ellipsis(self, _normalize(key))
    out = self
    dim = 0
    tensors = []
    for k in key:
        if k is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif isinstance(k, builtins.bool):
            raise IndexError("indexing with a Python bool is not supported")
        elif isinstance(k, builtins.int) or _is_scalar_index(k):
            k = builtins.int(k)
            size = out.shape[dim]
            if k < -size or k >= size:
                raise IndexError(
                    f"index {k} is out of bounds for dimension {dim} with size {size}")
            out = out.select(dim, k)
        elif isinstance(k, slice):
            # The bounds go to the slice op as written: it clamps them as Python does, also
            # against a symbolic size, where slice.indices would read the size as an integer.
            # A bound that is a size (pos[:x.shape[1]]) stays a kiln.SymInt, so a compiled
            # function slices at every call's size instead of specializing it.
            step = 1 if k.step is None else builtins.int(k.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if k.start is not None or k.stop is not None or step != 1:
                start = 0 if k.start is None else _bound(k.start)
                stop = sys.maxsize if k.stop is None else _bound(k.stop)
                out = out.slice(dim, start, stop, step)
            dim += 1
        elif isinstance(k, Tensor):
            if k.dtype not in (_C.int64, _C.int32, _C.bool):
                raise IndexError("tensors used as indices must be long, int or bool tensors")
            if k.dtype == _C.bool and k.dim() == 0:
                raise IndexError("indexing with a 0-dim bool tensor is not supported")
            tensors.append((dim, k))
            dim += k.dim() if k.dtype == _C.bool else 1
        else:
            raise TypeError(f"invalid index type {type(k).__name__}; expected int, slice, "
                            "None, Ellipsis, a list or a Tensor")
    return out, tensors


def _resolve(view, tensors):
    """The op's index inputs and the dims they index: int32 becomes int64, and a mask over
    dims [d, d + k) becomes the k columns of its nonzero()."""
    inputs, dims = [], []
    for d, k in tensors:
        if k.dtype == _C.bool:
            for j in builtins.range(k.dim()):
                if k.shape[j] != view.shape[d + j]:
                    raise IndexError(
                        f"The shape of the mask {list(k.shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {list(view.shape)} at index {d + j}")
            nz = _C.ops.nonzero(k)
            for j in builtins.range(k.dim()):
                inputs.append(nz.select(1, j))
                dims.append(d + j)
        else:
            inputs.append(k if k.dtype == _C.int64 else k.long())
            dims.append(d)
    return inputs, dims


def _indices_from_list(self, indices):
    """torch's index_put_ argument: a tuple of optional tensors, one per leading dim."""
    tensors = []
    d = 0
    for k in indices:
        k = _as_index_tensor(k)
        if k is not None:
            tensors.append((d, k))
        d += k.dim() if isinstance(k, Tensor) and k.dtype == _C.bool else 1
    if d > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()} (got {d})")
    return _resolve(self, tensors)


def _getitem(self, key):
    out, tensors = _basic(self, key)
    if not tensors:
        return out
    inputs, dims = _resolve(out, tensors)
    return _C.ops.index([out, *inputs], dims=dims)


def _values_like(view, value):
    if isinstance(value, Tensor):
        return value if value.dtype == view.dtype else value.to(view.dtype)
    return _C.tensor(value, dtype=view.dtype)


def _setitem(self, key, value):
    view, tensors = _basic(self, key)
    if tensors:
        inputs, dims = _resolve(view, tensors)
        _C.ops.index_put_([view, _values_like(view, value), *inputs], dims=dims,
                          accumulate=False)
    elif isinstance(value, Tensor):
        view.copy_(value)
    else:
        view.fill_(value)


def index_put_(self, indices, values, accumulate=False):
    inputs, dims = _indices_from_list(self, indices)
    _C.ops.index_put_([self, values, *inputs], dims=dims, accumulate=accumulate)
    return self


def index_put(input, indices, values, accumulate=False):  # noqa: A002  (torch's name)
    """Out-of-place: a copy of input with input[indices] = values (+= with accumulate). Of
    duplicate indices without accumulate, the last written wins on the CPU (torch leaves the
    order unspecified)."""
    inputs, dims = _indices_from_list(input, indices)
    return _C.ops.index_put([input, values, *inputs], dims=dims, accumulate=accumulate)


def nonzero(input, *, as_tuple=False):  # noqa: A002  (torch's name)
    """int64 [n, input.dim()] indices of the nonzero elements, or with as_tuple one 1-D tensor
    per dim (a 0-dim input counts as 1-D). Its size depends on the data: a graph break under
    kiln.compile."""
    if not as_tuple:
        return _C.ops.nonzero(input)
    x = input.reshape([1]) if input.dim() == 0 else input
    nz = _C.ops.nonzero(x)
    return tuple(nz.select(1, d) for d in builtins.range(x.dim()))


def _iter(self):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    for i in builtins.range(self.shape[0]):
        yield self.select(0, i)


Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem
Tensor.__iter__ = _iter
Tensor.index_put_ = index_put_
Tensor.index_put = index_put
Tensor.nonzero = nonzero
