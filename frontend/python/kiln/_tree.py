"""Flattening nested arguments (tuples, lists, dicts) into a list of tensors and a hashable
spec that holds the structure and every non-tensor leaf; the inverse rebuilds them. The spec
is how kiln.compile guards on Python scalars: equal specs mean the same structure and the
same scalar values."""

from ._C import Tensor

TENSOR = _TENSOR = "T"  # the spec of a tensor leaf


# Module-level recursion: a nested function that calls itself is a reference cycle (function
# -> closure cell -> function) that would keep the tensors it saw alive until the next garbage
# collection.
def _flatten(o, tensors):
    if isinstance(o, Tensor):
        tensors.append(o)
        return _TENSOR
    if isinstance(o, tuple):
        return ("tuple", tuple(_flatten(x, tensors) for x in o))
    if isinstance(o, list):
        return ("list", tuple(_flatten(x, tensors) for x in o))
    if isinstance(o, dict):
        keys = tuple(o.keys())
        return ("dict", keys, tuple(_flatten(o[k], tensors) for k in keys))
    # a leaf: its type is part of the key, so 1, 1.0 and True stay apart
    try:
        hash(o)
    except TypeError:
        raise TypeError(f"unsupported argument of type {type(o).__name__}: arguments must be "
                        "tensors, Python scalars, strings, None, or tuples, lists and dicts of "
                        "them") from None
    return ("leaf", type(o), o)


def flatten(obj):
    tensors = []
    spec = _flatten(obj, tensors)
    return tensors, spec


def _unflatten(s, it):
    if s == _TENSOR:
        return next(it)
    kind = s[0]
    if kind == "tuple":
        return tuple(_unflatten(x, it) for x in s[1])
    if kind == "list":
        return [_unflatten(x, it) for x in s[1]]
    if kind == "dict":
        return {k: _unflatten(v, it) for k, v in zip(s[1], s[2])}
    return s[2]


def unflatten(spec, tensors):
    return _unflatten(spec, iter(tensors))


def describe_difference(old, new, path="arguments"):
    """The first place two specs differ, for recompile log lines."""
    if old == new:
        return None
    if old == _TENSOR or new == _TENSOR or old[0] != new[0]:
        return f"{path} changed kind"
    if old[0] == "leaf":
        return f"{path} changed from {old[2]!r} to {new[2]!r}"
    if old[0] == "dict" and old[1] != new[1]:
        return f"{path} keys changed from {list(old[1])} to {list(new[1])}"
    a, b = (old[1], new[1]) if old[0] != "dict" else (old[2], new[2])
    if len(a) != len(b):
        return f"{path} length changed from {len(a)} to {len(b)}"
    keys = old[1] if old[0] == "dict" else range(len(a))
    for k, x, y in zip(keys, a, b):
        d = describe_difference(x, y, f"{path}[{k!r}]")
        if d:
            return d
    return None
