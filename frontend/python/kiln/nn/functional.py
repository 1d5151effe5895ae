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
    return (_ops.silu_ if inplace else _ops.silu)(input)


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


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    # The fused flash-attention ops, or the composite with dropout (runtime/api/attention_ops.h).
    if enable_gqa:
        raise NotImplementedError("scaled_dot_product_attention(): enable_gqa is not supported")
    return _nn.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                            scale)


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


# ---- normalization and pooling (runtime/api/norm_ops.h, pooling_ops.h) ----


def _pair(v, name):
    if isinstance(v, int):
        return [v]
    v = list(v)
    if len(v) not in (1, 2):
        raise ValueError(f"{name} must be an int or a pair of ints, got {v}")
    return v


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if momentum is None:
        raise NotImplementedError("batch_norm: momentum=None (a cumulative moving average) is "
                                  "not supported; pass a number")
    return _nn.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return _nn.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _nn.rms_norm(input, list(normalized_shape), weight, eps)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    stride = [] if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _pair(stride, "stride")
    return _nn.avg_pool2d(input, _pair(kernel_size, "kernel_size"), stride,
                          _pair(padding, "padding"), ceil_mode, count_include_pad,
                          divisor_override)


def adaptive_avg_pool2d(input, output_size):
    size = [output_size, output_size] if isinstance(output_size, int) else list(output_size)
    if len(size) != 2:
        raise ValueError(f"adaptive_avg_pool2d: output_size must be an int or a pair, got {size}")
    # None keeps the input's size along that dim, as torch.
    size = [input.shape[-2 + i] if s is None else s for i, s in enumerate(size)]
    return _nn.adaptive_avg_pool2d(input, size)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    stride = [] if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _pair(stride, "stride")
    values, indices = _nn.max_pool2d_with_indices(
        input, _pair(kernel_size, "kernel_size"), stride, _pair(padding, "padding"),
        _pair(dilation, "dilation"), ceil_mode)
    return (values, indices) if return_indices else values


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def pad(input, pad, mode="constant", value=None):
    """(before, after) pairs from the last dim backwards; negative pads crop."""
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad(): mode '{mode}' is not supported (constant, reflect, "
                                  "replicate and circular are)")
    if value is not None and mode != "constant":
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    return _nn.pad(input, list(pad), mode, 0.0 if value is None else float(value))


def one_hot(tensor, num_classes=-1):
    return _nn.one_hot(tensor, num_classes)


# ---- convolution (runtime/api/conv_ops.h) ----


def _conv_padding(padding, n):
    if isinstance(padding, str):
        return padding
    return [padding] if isinstance(padding, int) else list(padding)


def _ints(v):
    return [v] if isinstance(v, int) else list(v)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _nn.conv2d(input, weight, bias, _ints(stride), _conv_padding(padding, 2),
                      _ints(dilation), groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _nn.conv1d(input, weight, bias, _ints(stride), _conv_padding(padding, 1),
                      _ints(dilation), groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _nn.conv_transpose2d(input, weight, bias, _ints(stride), _ints(padding),
                                _ints(output_padding), groups, _ints(dilation))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    fn = _ops.leaky_relu_ if inplace else _ops.leaky_relu
    return fn(input, negative_slope=negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _ops.leaky_relu_(input, negative_slope=negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return (_ops.elu_ if inplace else _ops.elu)(input, alpha=alpha)


def elu_(input, alpha=1.0):
    return _ops.elu_(input, alpha=alpha)


def softplus(input, beta=1.0, threshold=20.0):
    return _ops.softplus(input, beta=beta, threshold=threshold)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    fn = _ops.hardtanh_ if inplace else _ops.hardtanh
    return fn(input, min_val=min_val, max_val=max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _ops.hardtanh_(input, min_val=min_val, max_val=max_val)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def relu_(input):
    return input.relu_()


def hardswish(input, inplace=False):
    return (_ops.hardswish_ if inplace else _ops.hardswish)(input)


def mish(input, inplace=False):
    return (_ops.mish_ if inplace else _ops.mish)(input)
