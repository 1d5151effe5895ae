"""Every op of the op table is callable from Python: the test walks the table, so an op added
in C++ without a sample here fails it. Public ops are also kiln.<name> and, when their first
input is `self`, Tensor methods; all three spellings must agree. Unary pointwise ops are
compared with Python's math module in float64."""

import math

import pytest

import kiln
from kiln import ops

f64 = kiln.float64


def t(*shape, lo=0.1, hi=0.9, dtype=kiln.float32):
    kiln.manual_seed(sum(shape) + len(shape))
    return (kiln.rand(*shape, dtype=dtype) * (hi - lo) + lo)


def idx(*values):
    return kiln.tensor(list(values))


def mask():
    return kiln.tensor([[True, False, True, False]] * 3)


def binary():
    return dict(self=t(3, 4), other=t(3, 4))


def unary():
    return dict(self=t(3, 4))


def scalar(v=2.0):
    return lambda: dict(self=t(3, 4), other=v)


# name -> a function returning keyword arguments for kiln.ops.<name>
SAMPLES = {
    **{n: binary for n in ("add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne",
                           "lt", "le", "gt", "ge", "logical_and", "logical_or", "add_", "sub_",
                           "mul_", "div_")},
    "pow": lambda: dict(self=t(3, 4), exponent=t(3, 4)),
    "copy_": lambda: dict(self=t(3, 4), src=t(3, 4)),
    **{n: unary for n in ("neg", "exp", "log", "tanh", "sigmoid", "relu", "relu_", "log1p",
                          "expm1", "sqrt", "rsqrt", "abs", "sign", "silu", "sin", "cos", "erf",
                          "gelu", "logical_not", "clone", "sum", "mean", "prod", "amax", "amin",
                          "logsumexp", "var", "max", "min", "argmax", "argmin", "floor",
                          "ceil", "round", "trunc", "reciprocal", "leaky_relu", "elu",
                          "softplus", "hardtanh", "hardswish", "mish", "floor_", "ceil_",
                          "round_", "trunc_", "reciprocal_", "leaky_relu_", "elu_",
                          "hardtanh_", "hardswish_", "mish_", "silu_")},
    **{n: scalar() for n in ("add_scalar", "sub_scalar", "mul_scalar", "div_scalar",
                             "add_scalar_", "sub_scalar_", "mul_scalar_", "div_scalar_",
                             "pow_scalar", "eq_scalar", "ne_scalar", "lt_scalar", "le_scalar",
                             "gt_scalar", "ge_scalar", "fmod_scalar", "remainder_scalar",
                             "fmod_scalar_", "remainder_scalar_")},
    **{n: binary for n in ("fmod", "remainder", "fmod_", "remainder_")},
    **{n: (lambda: dict(self=t(3, 4), end=t(3, 4), weight=t(3, 4))) for n in ("lerp", "lerp_")},
    **{n: (lambda: dict(self=t(3, 4), end=t(3, 4), weight=0.3))
       for n in ("lerp_scalar", "lerp_scalar_")},
    "clamp_tensor": lambda: dict(self=t(3, 4), min=t(3, 4, lo=0.2, hi=0.4),
                                 max=t(4, lo=0.5, hi=0.7)),
    "clamp_min": lambda: dict(self=t(3, 4), min=t(3, 4, lo=0.2, hi=0.4)),
    "clamp_max": lambda: dict(self=t(3, 4), max=t(4, lo=0.5, hi=0.7)),
    "gelu_backward": lambda: dict(grad_output=t(3, 4), self=t(3, 4)),
    "clamp": lambda: dict(self=t(3, 4), min=0.3, max=0.6),
    "clamp_": lambda: dict(self=t(3, 4), min=0.3, max=0.6),
    "where": lambda: dict(condition=mask(), self=t(3, 4), other=t(3, 4)),
    "masked_fill": lambda: dict(self=t(3, 4), mask=mask(), value=-1.0),
    "masked_fill_": lambda: dict(self=t(3, 4), mask=mask(), value=-1.0),
    "mm": lambda: dict(self=t(3, 4), mat2=t(4, 5)),
    "bmm": lambda: dict(self=t(2, 3, 4), mat2=t(2, 4, 5)),
    "view": lambda: dict(self=t(3, 4), size=(4, 3)),
    "expand": lambda: dict(self=t(1, 4), size=(3, 4)),
    "transpose": lambda: dict(self=t(3, 4), dim0=0, dim1=1),
    "permute": lambda: dict(self=t(3, 4), dims=(1, 0)),
    "squeeze": lambda: dict(self=t(3, 1, 4), dims=(1,)),
    "unsqueeze": lambda: dict(self=t(3, 4), dim=0),
    "slice": lambda: dict(self=t(3, 4), dim=1, start=0, end=3, step=2),
    "select": lambda: dict(self=t(3, 4), dim=0, index=1),
    "slice_backward": lambda: dict(grad=t(3, 2), input_sizes=(3, 4), dim=1, start=0, end=3,
                                   step=2),
    "select_backward": lambda: dict(grad=t(4), input_sizes=(3, 4), dim=0, index=1),
    "fill_": lambda: dict(self=t(3, 4), value=1.5),
    "convert": lambda: dict(self=t(3, 4), dtype=f64),
    "cat": lambda: dict(tensors=[t(3, 4), t(2, 4)], dim=0),
    "empty": lambda: dict(size=(2, 3), dtype=kiln.float32, device="cpu"),
    "full": lambda: dict(size=(2, 3), value=1.5, dtype=kiln.float32, device="cpu"),
    "arange": lambda: dict(start=0, end=5, step=1, dtype=kiln.int64, device="cpu"),
    "rand": lambda: dict(size=(2, 3), dtype=kiln.float32, device="cpu", seed=1, offset=0),
    "randn": lambda: dict(size=(2, 3), dtype=kiln.float32, device="cpu", seed=1, offset=0),
    "softmax": lambda: dict(self=t(3, 4), dim=1),
    "log_softmax": lambda: dict(self=t(3, 4), dim=1),
    "softmax_backward": lambda: dict(grad_output=t(3, 4), output=t(3, 4), dim=1),
    "log_softmax_backward": lambda: dict(grad_output=t(3, 4), output=t(3, 4), dim=1),
    "layer_norm": lambda: dict(tensors=[t(3, 4), t(4), t(4)], normalized_shape=(4,), eps=1e-5,
                               has_weight=True, has_bias=True),
    "layer_norm_backward": lambda: dict(tensors=[t(3, 4), t(3, 4), t(4)], normalized_shape=(4,),
                                        eps=1e-5, has_weight=True, has_bias=False),
    "nll_loss": lambda: dict(input=t(3, 4), target=idx(0, 3, 1), reduction="mean",
                             ignore_index=-100),
    "embedding": lambda: dict(weight=t(5, 4), indices=idx(4, 0, 2)),
    "index_select": lambda: dict(self=t(3, 4), dim=1, index=idx(3, 0)),
    "gather": lambda: dict(self=t(3, 4), dim=1, index=kiln.tensor([[0, 3], [1, 1], [2, 0]])),
    "scatter_add": lambda: dict(self=t(3, 4), dim=1, index=kiln.tensor([[0, 3], [1, 1], [2, 0]]),
                                src=t(3, 2)),
    "dropout": lambda: dict(self=t(3, 4), p=0.5, seed=1, offset=0),
    "sort": lambda: dict(self=t(3, 4), dim=1, descending=True),
    "argsort": lambda: dict(self=t(3, 4), dim=0),
    "topk": lambda: dict(self=t(3, 4), k=2, dim=1),
    "cumsum": lambda: dict(self=t(3, 4), dim=1),
    "cumprod": lambda: dict(self=t(3, 4), dim=0),
    # (self, index tensors...) and (self, values, index tensors...) with the dims they index
    "index": lambda: dict(tensors=[t(3, 4), idx(2, 0), idx(-1, 1)], dims=(0, 1)),
    **{n: (lambda: dict(tensors=[t(3, 4), t(4), idx(0, 2)], dims=(0,), accumulate=True))
       for n in ("index_put", "index_put_")},
    "nonzero": lambda: dict(self=mask()),
    "masked_select": lambda: dict(self=t(3, 4), mask=mask()),
    "convolution": lambda: dict(tensors=[t(1, 2, 4, 4), t(3, 2, 3, 3), t(3)], stride=(1,),
                                padding=(1,), dilation=(1,), transposed=False,
                                output_padding=(0,), groups=1),
    "convolution_backward": lambda: dict(grad_output=t(1, 3, 4, 4), input=t(1, 2, 4, 4),
                                         weight=t(3, 2, 3, 3), stride=(1,), padding=(1,),
                                         dilation=(1,), transposed=False, output_padding=(0,),
                                         groups=1, output_mask=(1, 1, 1)),
    "scaled_dot_product_flash_attention": lambda: dict(
        tensors=[t(2, 3, 4), t(2, 5, 4), t(2, 5, 3), kiln.ones(2, 3, 5, dtype=kiln.bool)],
        scale=0.5, is_causal=False, has_mask=True),
    "scaled_dot_product_flash_attention_backward": lambda: dict(
        tensors=[t(2, 3, 3), t(2, 3, 4), t(2, 5, 4), t(2, 5, 3), t(2, 3, 3), t(2, 3)], scale=0.5,
        is_causal=True, has_mask=False),
}


def _call(fn, kwargs):
    kwargs = dict(kwargs)
    if "tensors" in kwargs:
        return fn(kwargs.pop("tensors"), **kwargs)
    return fn(**kwargs)


def _as_list(out):
    if isinstance(out, tuple):
        return [o.tolist() for o in out]
    return out.tolist()


def test_every_op_has_a_sample():
    missing = [n for n in kiln._C._all_ops if n not in SAMPLES]
    assert not missing, f"ops without a Python sample: {missing}"


@pytest.mark.parametrize("name", kiln._C._all_ops)
def test_op_is_callable_from_python(name):
    out = _call(getattr(ops, name), SAMPLES[name]())
    assert isinstance(out, (kiln.Tensor, tuple))
    if name not in kiln._C._public_ops:
        # Internal ops that kiln also has under torch's name, with torch's signature.
        assert not hasattr(kiln, name) or name in ("empty", "full", "arange", "rand", "randn",
                                                   "index_put")
        return
    assert hasattr(kiln, name)
    if name in ("empty", "rand", "randn", "full", "arange"):
        return  # torch-shaped factories with their own signatures (test_tensor.py)
    params, variadic, _, _ = kiln._C._op_schema(name)
    kwargs = SAMPLES[name]()
    first = [kwargs.pop("self")] if params[0][0] == "self" else []
    again = _call(lambda *a, **k: getattr(kiln, name)(*first, *a, **k), kwargs)
    if name in ("max", "min"):
        out = out[0]  # torch's max(x) is the value alone; the op also returns the index
    assert _as_list(again) == _as_list(out)
    if params and params[0][0] == "self":
        kwargs = SAMPLES[name]()
        self_ = kwargs.pop("self")
        method = _call(getattr(self_, name), kwargs)
        assert _as_list(method) == _as_list(out)


def _unary_refs():
    erf = math.erf
    return {
        "neg": lambda v: -v, "exp": math.exp, "log": math.log, "tanh": math.tanh,
        "sigmoid": lambda v: 1 / (1 + math.exp(-v)), "relu": lambda v: max(v, 0.0),
        "log1p": math.log1p, "expm1": math.expm1, "sqrt": math.sqrt,
        "rsqrt": lambda v: 1 / math.sqrt(v), "abs": abs, "sign": lambda v: (v > 0) - (v < 0),
        "sin": math.sin, "cos": math.cos, "erf": erf, "silu": lambda v: v / (1 + math.exp(-v)),
        "gelu": lambda v: 0.5 * v * (1 + erf(v / math.sqrt(2))),
        "floor": math.floor, "ceil": math.ceil, "trunc": math.trunc, "round": round,
        "reciprocal": lambda v: 1 / v, "leaky_relu": lambda v: v if v > 0 else 0.01 * v,
        "elu": lambda v: v if v > 0 else math.expm1(v),
        "softplus": lambda v: math.log1p(math.exp(v)),
        "hardtanh": lambda v: min(max(v, -1.0), 1.0),
        "hardswish": lambda v: v * min(max(v + 3, 0.0), 6.0) / 6,
        "mish": lambda v: v * math.tanh(math.log1p(math.exp(v))),
    }


@pytest.mark.parametrize("name", sorted(_unary_refs()))
def test_unary_ops_match_math_in_float64(name):
    x = t(5, lo=-0.9, hi=0.9, dtype=f64) if name not in ("log", "sqrt", "rsqrt") else t(5, dtype=f64)
    got = getattr(kiln, name)(x).tolist()
    ref = [_unary_refs()[name](v) for v in x.tolist()]
    assert got == pytest.approx(ref, rel=1e-12, abs=1e-14)


GARBAGE = [None, "text", [1, "a"], object(), 1.5, -1, (), {"k": 1}]


def _bad_tensors():
    return [kiln.ones(2, 3, dtype=kiln.int64), kiln.tensor(True), kiln.zeros(0),
            kiln.ones(7, 1, 2), kiln.ones(2, 3, dtype=kiln.float16)]


@pytest.mark.parametrize("name", kiln._C._all_ops)
def test_bad_arguments_raise_and_never_crash(name):
    """Every argument of every op replaced by garbage or by a tensor of another shape or dtype:
    each call returns or raises a Python exception (a crash would take pytest down)."""
    fn = getattr(ops, name)
    base = SAMPLES[name]()
    expected = (TypeError, ValueError, IndexError, kiln.KilnError)
    for key in base:
        for bad in GARBAGE + _bad_tensors():
            kwargs = dict(base)
            kwargs[key] = bad
            try:
                _call(fn, kwargs)
            except expected as e:
                assert str(e), f"{name}({key}={bad!r}) raised {type(e).__name__} with no message"
