"""torch.nn.functional's names and argument orders over Kiln's ops and composites."""

from .. import _C

_nn = _C._nn
_ops = _C.ops

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(fn, reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:
        raise TypeError(f"{fn}(): size_average and reduce are deprecated in torch and not "
                        "supported; use reduction=")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def relu(input, inplace=False):
    return input.relu_() if inplace else _ops.relu(input)


def gelu(input, approximate="none"):
    return _ops.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    if inplace:
        raise NotImplementedError("silu(inplace=True) is not supported")
    return _ops.silu(input)


def sigmoid(input):
    return _ops.sigmoid(input)


def tanh(input):
    return _ops.tanh(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise TypeError("softmax(): argument 'dim' must be given (the implicit choice is "
                        "deprecated in torch)")
    if dtype is not None:
        input = input.to(dtype)
    return _ops.softmax(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise TypeError("log_softmax(): argument 'dim' must be given")
    if dtype is not None:
        input = input.to(dtype)
    return _ops.log_softmax(input, dim)


def linear(input, weight, bias=None):
    return _nn.linear(input, weight, bias)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _nn.layer_norm(input, list(normalized_shape), weight, bias, eps)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    out = _nn.dropout(input, p, training)
    if inplace:
        return input.copy_(out)
    return out


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if padding_idx is not None or max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): padding_idx, max_norm, scale_grad_by_freq and "
                                  "sparse are not supported")
    return _nn.embedding(input, weight)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    if weight is not None:
        raise NotImplementedError("nll_loss(): class weights are not supported")
    return _nn.nll_loss(input, target, _reduction("nll_loss", reduction, size_average, reduce),
                        ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    if weight is not None or label_smoothing != 0.0:
        raise NotImplementedError("cross_entropy(): class weights and label smoothing are not "
                                  "supported")
    return _nn.cross_entropy(input, target,
                             _reduction("cross_entropy", reduction, size_average, reduce),
                             ignore_index)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is not None:
        raise NotImplementedError("mse_loss(): weight is not supported")
    return _nn.mse_loss(input, target, _reduction("mse_loss", reduction, size_average, reduce))
