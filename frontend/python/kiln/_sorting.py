"""torch's signatures for the ordering and scan ops: sort and topk return a named
(values, indices) tuple as torch.return_types does, and cumsum/cumprod take dtype=, which
converts the input first (the op-table ops, kiln.ops.*, have no dtype argument and return plain
tuples)."""

import collections

from . import _C

sort_result = collections.namedtuple("sort", ["values", "indices"])
topk_result = collections.namedtuple("topk", ["values", "indices"])
sort_result.__module__ = topk_result.__module__ = "kiln.return_types"


def sort(input, dim=-1, descending=False, stable=False):
    """Always stable: ties keep their input order (torch's stable=True)."""
    return sort_result(*_C.ops.sort(input, dim, descending, stable))


def argsort(input, dim=-1, descending=False, stable=False):
    return _C.ops.argsort(input, dim, descending, stable)


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002  (torch's name)
    return topk_result(*_C.ops.topk(input, k, dim, largest, sorted))


def _converted(input, dtype):
    return input if dtype is None or dtype == input.dtype else input.to(dtype)


def cumsum(input, dim, *, dtype=None):
    return _C.ops.cumsum(_converted(input, dtype), dim)


def cumprod(input, dim, *, dtype=None):
    return _C.ops.cumprod(_converted(input, dtype), dim)


for _fn in (sort, argsort, topk, cumsum, cumprod):
    setattr(_C.Tensor, _fn.__name__, _fn)
