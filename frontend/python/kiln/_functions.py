"""Functions torch has at the top level that are compositions, not op-table ops."""

from . import _C


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
