"""Python indexing of tensors: int, slice, None, ..., and integer or bool tensors where the op
library supports them. Reads are views (select, slice, unsqueeze) and, for an integer tensor
index, index_select; writes go through in-place ops on the indexed view (copy_, fill_)."""

import builtins

from . import _C

Tensor = _C.Tensor


def _normalize(key):
    if not isinstance(key, tuple):
        key = (key,)
    return key


def _expand_ellipsis(t, key):
    consumed = builtins.sum(1 for k in key if k is not None and k is not Ellipsis and not (
        isinstance(k, Tensor) and k.dtype == _C.bool))
    consumed += builtins.sum(k.dim() for k in key if isinstance(k, Tensor) and k.dtype == _C.bool)
    n_ellipsis = builtins.sum(1 for k in key if k is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > t.dim():
        raise IndexError(f"too many indices for tensor of dimension {t.dim()}")
    if n_ellipsis == 0:
        return key
    i = key.index(Ellipsis)
    return key[:i] + (slice(None),) * (t.dim() - consumed) + key[i + 1:]


def _getitem(self, key):
    key = _expand_ellipsis(self, _normalize(key))
    out = self
    dim = 0
    tensor_index = None
    for k in key:
        if k is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif isinstance(k, builtins.bool):
            raise IndexError("indexing with a Python bool is not supported")
        elif isinstance(k, builtins.int) or (isinstance(k, Tensor) and k.dim() == 0
                                            and not k.dtype.is_floating_point
                                            and k.dtype != _C.bool):
            k = builtins.int(k)
            size = out.shape[dim]
            if k < -size or k >= size:
                raise IndexError(
                    f"index {k} is out of bounds for dimension {dim} with size {size}")
            out = out.select(dim, k)
        elif isinstance(k, slice):
            size = out.shape[dim]
            start, stop, step = k.indices(size)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if stop < start:
                stop = start
            if (start, stop, step) != (0, size, 1):
                out = out.slice(dim, start, stop, step)
            dim += 1
        elif isinstance(k, (Tensor, list)):
            if tensor_index is not None:
                raise IndexError("indexing with more than one tensor index is not supported yet")
            idx = k if isinstance(k, Tensor) else _C.tensor(k)
            if idx.dtype == _C.bool:
                raise IndexError("boolean mask indexing needs masked_select, which Kiln does "
                                 "not have yet")
            if idx.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int or bool tensors")
            tensor_index = (dim, idx)
            dim += 1
        else:
            raise TypeError(f"invalid index type {type(k).__name__}; expected int, slice, "
                            "None, Ellipsis or a Tensor")
    if tensor_index is not None:
        d, idx = tensor_index
        flat = idx.reshape(-1).long()
        picked = out.index_select(d, flat)
        shape = list(out.shape[:d]) + list(idx.shape) + list(out.shape[d + 1:])
        out = picked.reshape(shape)
    return out


def _setitem(self, key, value):
    key_t = _normalize(key)
    if any(isinstance(k, (Tensor, list)) and not (isinstance(k, Tensor) and k.dim() == 0)
           for k in key_t):
        raise IndexError("assignment through tensor indices needs index_put_, which Kiln does "
                         "not have yet")
    view = _getitem(self, key)
    if isinstance(value, Tensor):
        view.copy_(value)
    else:
        view.fill_(value)


def _iter(self):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    for i in builtins.range(self.shape[0]):
        yield self.select(0, i)


Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem
Tensor.__iter__ = _iter
