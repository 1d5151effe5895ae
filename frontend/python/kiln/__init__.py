"""Kiln: tensors with PyTorch-style autograd and a tracing JIT, from Python.

The C++ core is the extension module ``kiln._C``; this package gives it torch's names. Every
op of the op table is a function here and, where its first input is ``self``, a Tensor method
(bound from the op's schema by ``kiln._C``); ``kiln.ops.<name>`` reaches every op, internal
ones included, by its table name.
"""

from . import _C
from ._C.ops import *  # noqa: F403  (the public ops; the imports below override a few)
from ._C import (
    KilnError,
    Tensor,
    arange,
    bool,
    bfloat16,
    device,
    double,
    dtype,
    empty,
    empty_like,
    float,
    float16,
    float32,
    float64,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    is_grad_enabled,
    long,
    manual_seed,
    ones,
    ones_like,
    ops,
    promote_types,
    rand,
    rand_like,
    randn,
    randn_like,
    set_logs,
    short,
    tensor,
    uint8,
    zeros,
    zeros_like,
)
from ._C import cuda  # noqa: F401  (kiln.cuda.is_available(), kiln.cuda.device_count())
from . import _indexing, _tensor_str  # noqa: F401  (install Tensor.__getitem__, __repr__)
from .autograd.grad_mode import enable_grad, no_grad, set_grad_enabled
from ._compile import compile  # noqa: A001  (torch's name)
from ._C import mark_dynamic, SymInt  # noqa: F401  (sizes inside a symbolic trace)

from ._functions import (  # noqa: E402, A004  (composites beside the table ops)
    addmm,
    all,
    allclose,
    any,
    baddbmm,
    chunk,
    clamp,
    einsum,
    equal,
    flatten,
    flip,
    is_floating_point,
    is_tensor,
    isclose,
    lerp,
    matmul,
    max,
    min,
    numel,
    outer,
    reshape,
    roll,
    split,
    stack,
    std,
    tril,
    triu,
    where,
)

from ._sorting import argsort, cumprod, cumsum, sort, topk  # noqa: E402, A004
from ._indexing import index_put, nonzero  # noqa: E402, A004  (torch's signatures)
from . import autograd, nn, optim, utils  # noqa: E402, F401  (kiln.nn.functional, as torch.nn)

import os as _os  # noqa: E402

# Frames inside this folder are skipped when ops record the user's Python line as call site.
_C._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)) + _os.sep)
del _os

__version__ = "0.1.0"
