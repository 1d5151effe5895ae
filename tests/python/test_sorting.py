"""sort, argsort, topk, cumsum and cumprod from Python: torch's named (values, indices) results,
the dtype= argument of the scans, and errors that name the op and the shapes."""

import math

import pytest

import kiln


def test_sort_and_topk_return_named_values_and_indices():
    x = kiln.tensor([[3.0, 1.0, 3.0, 2.0]])
    out = x.sort(descending=True)
    assert type(out).__name__ == "sort" and out._fields == ("values", "indices")
    assert out.values.tolist() == [[3.0, 3.0, 2.0, 1.0]]
    assert out.indices.tolist() == [[0, 2, 3, 1]]  # ties in input order
    values, indices = kiln.topk(x, 2, largest=False)
    assert values.tolist() == [[1.0, 2.0]] and indices.tolist() == [[1, 3]]
    assert kiln.ops.sort(x)[1].tolist() == [[1, 3, 0, 2]]  # the table op: a plain tuple


def test_nan_sorts_above_every_number():
    x = kiln.tensor([1.0, math.nan, -math.inf, 0.5])
    assert x.argsort().tolist() == [2, 3, 0, 1]
    assert x.argsort(descending=True).tolist() == [1, 0, 3, 2]
    assert x.topk(1).indices.tolist() == [1]


def test_scans_take_a_dtype_and_accumulate_integers_in_int64():
    x = kiln.tensor([1, 2, 3], dtype=kiln.int32)
    assert x.cumsum(0).dtype == kiln.int64
    assert x.cumprod(0).tolist() == [1, 2, 6]
    y = kiln.cumsum(x, 0, dtype=kiln.float64)
    assert y.dtype == kiln.float64 and y.tolist() == [1.0, 3.0, 6.0]


def test_cumprod_gradient_with_zeros():
    x = kiln.tensor([2.0, 0.0, 3.0, 0.0], dtype=kiln.float64, requires_grad=True)
    x.cumprod(0).sum().backward()
    # d/dx_i of sum_j prod_{k<=j} x_k, written out: only products without a zero other than x_i
    assert x.grad.tolist() == [1.0, 2.0 + 6.0, 0.0, 0.0]


def test_bad_arguments_name_the_op_and_shapes():
    x = kiln.ones(2, 3)
    with pytest.raises(kiln.KilnError, match=r"topk\(\): selected index k out of range.*\[2, 3\]"):
        kiln.topk(x, 4)
    with pytest.raises(kiln.KilnError, match="sort"):
        kiln.sort(x, 2)
    with pytest.raises(kiln.KilnError, match="cumsum"):
        kiln.cumsum(x, -3)
    assert not kiln.argsort(x.requires_grad_()).requires_grad
