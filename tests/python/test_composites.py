"""The composite helpers from Python (std, any, all, tril, triu, flip, roll, repeat, outer,
addmm, baddbmm, einsum, where with numbers, nn.functional.pad and one_hot): torch's call forms,
dtypes, gradients and errors. References are literal values or plain Python loops."""

import math

import pytest

import kiln
import kiln.nn.functional as F


def _mat(rows, cols, dtype=kiln.float32):
    return kiln.arange(rows * cols, dtype=dtype).view(rows, cols)


def test_std_forms():
    x = kiln.tensor([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]])
    mean0 = 7.0 / 3
    expected = math.sqrt(sum((v - mean0) ** 2 for v in (1.0, 2.0, 4.0)) / 2)
    assert x.std(1).tolist()[0] == pytest.approx(expected)
    assert kiln.std(x, dim=1, correction=0).tolist()[0] == pytest.approx(
        math.sqrt(sum((v - mean0) ** 2 for v in (1.0, 2.0, 4.0)) / 3))
    assert x.std(unbiased=False).shape == ()
    assert kiln.std(x, False).item() == pytest.approx(x.std(correction=0).item())
    assert x.std(0, keepdim=True).shape == (1, 3)


def test_any_all_dtypes_and_empty():
    x = kiln.tensor([[0, 2], [0, 0]])
    assert x.any().item() is True and x.all().item() is False
    assert x.any(1).tolist() == [True, False]
    assert kiln.all(x.ne(5), dim=(0, 1)).item() is True
    assert x.any(0, keepdim=True).shape == (1, 2)
    assert x.any(1).dtype == kiln.bool
    assert kiln.tensor([float("nan")]).all().item() is True  # NaN is nonzero
    empty = kiln.zeros(2, 0)
    assert empty.any(1).tolist() == [False, False]
    assert empty.all(1).tolist() == [True, True]


def test_triangles():
    x = kiln.ones(3, 4)
    assert x.tril().tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    assert kiln.triu(x, 1).tolist() == [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1]]
    assert kiln.tril(kiln.ones(2, 2, 2, dtype=kiln.bool), diagonal=-1).tolist() == \
        [[[False, False], [True, False]]] * 2


def test_flip_roll_repeat():
    x = _mat(2, 3, kiln.int64)
    assert x.flip(0, 1).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert kiln.flip(x, [1]).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert x.flip((0,)).tolist() == [[3, 4, 5], [0, 1, 2]]
    assert x.roll(1).tolist() == [[5, 0, 1], [2, 3, 4]]
    assert kiln.roll(x, (1, -1), (0, 1)).tolist() == [[4, 5, 3], [1, 2, 0]]
    assert x.roll(shifts=-4, dims=1).tolist() == [[1, 2, 0], [4, 5, 3]]
    assert kiln.arange(3).repeat(2, 2).tolist() == [[0, 1, 2, 0, 1, 2]] * 2
    assert x.repeat((1, 2)).shape == (2, 6)
    assert x.repeat(2, 1, 1).shape == (2, 2, 3)


def test_products():
    a, b = kiln.tensor([1.0, 2.0]), kiln.tensor([3.0, 4.0, 5.0])
    assert kiln.outer(a, b).tolist() == [[3, 4, 5], [6, 8, 10]]
    assert a.outer(b).shape == (2, 3)
    m1, m2 = _mat(2, 3), _mat(3, 2)
    prod = [[sum(m1.tolist()[i][k] * m2.tolist()[k][j] for k in range(3)) for j in range(2)]
            for i in range(2)]
    out = kiln.addmm(kiln.ones(2), m1, m2, beta=0.5, alpha=2)
    assert out.tolist() == [[0.5 + 2 * v for v in row] for row in prod]
    nan = kiln.full((2, 2), float("nan"))
    assert nan.addmm(m1, m2, beta=0).tolist() == prod
    b1, b2 = m1.view(1, 2, 3).repeat(2, 1, 1), m2.view(1, 3, 2).repeat(2, 1, 1)
    assert kiln.baddbmm(kiln.zeros(2, 2), b1, b2).tolist() == [prod, prod]
    assert kiln.zeros(2, 2).baddbmm(b1, b2, alpha=3).tolist()[1][0][0] == 3 * prod[0][0]


def test_einsum_forms():
    a, b = _mat(2, 3), _mat(3, 4)
    want = kiln.matmul(a, b).tolist()
    assert kiln.einsum("ij,jk->ik", a, b).tolist() == want
    assert kiln.einsum("ij,jk", [a, b]).tolist() == want
    assert kiln.einsum("ij,jk->ki", (a, b)).tolist() == [list(c) for c in zip(*want)]
    assert kiln.einsum("ii", _mat(3, 3)).item() == 0 + 4 + 8
    assert kiln.einsum("...ij,...jk", kiln.ones(2, 1, 3, 4), kiln.ones(3, 4, 2)).shape == \
        (2, 3, 3, 2)
    with pytest.raises(kiln.KilnError, match="subscript j"):
        kiln.einsum("ij,jk", a, a)


def test_einsum_gradients():
    a = _mat(2, 3).requires_grad_()
    b = _mat(3, 4).requires_grad_()
    kiln.einsum("ij,jk->", a, b).backward()
    # d/da_ij sum_k a_ij b_jk = sum_k b_jk
    assert a.grad.tolist() == [[sum(r) for r in b.tolist()]] * 2
    assert b.grad.tolist() == [[sum(col)] * 4 for col in zip(*a.tolist())]


def test_where_with_numbers_promotes_like_torch():
    cond = kiln.tensor([True, False])
    assert kiln.where(cond, kiln.tensor([1, 2], dtype=kiln.int32), 5).dtype == kiln.int32
    assert kiln.where(cond, kiln.tensor([1, 2]), 2.5).dtype == kiln.float32
    assert kiln.where(cond, 2.5, kiln.tensor([1, 2])).tolist() == [2.5, 2.0]
    assert kiln.where(cond, 1, 0).dtype == kiln.int64
    assert kiln.where(cond, 1.0, 0).tolist() == [1.0, 0.0]
    assert kiln.tensor([1.0, 2.0]).where(cond, -1.0).tolist() == [1.0, -1.0]
    assert kiln.where(cond, kiln.tensor(3, dtype=kiln.int32), 4).dtype == kiln.int32


def test_pad_modes():
    x = kiln.tensor([[1.0, 2.0, 3.0]])
    assert F.pad(x, (1, 2)).tolist() == [[0, 1, 2, 3, 0, 0]]
    assert F.pad(x, (1, 0, 1, 0), value=9).tolist() == [[9, 9, 9, 9], [9, 1, 2, 3]]
    assert F.pad(x, (-1, 1)).tolist() == [[2, 3, 0]]
    assert F.pad(x, (2, 2), mode="reflect").tolist() == [[3, 2, 1, 2, 3, 2, 1]]
    assert F.pad(x, [2, 1], mode="replicate").tolist() == [[1, 1, 1, 2, 3, 3]]
    assert F.pad(x, (2, 3), mode="circular").tolist() == [[2, 3, 1, 2, 3, 1, 2, 3]]
    with pytest.raises(kiln.KilnError, match="wrapping around more than once"):
        F.pad(x, (4, 0), mode="circular")
    with pytest.raises(kiln.KilnError, match="less than the corresponding input dimension"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="doesn't take in value"):
        F.pad(x, (1, 1), mode="reflect", value=1.0)


def test_one_hot():
    out = F.one_hot(kiln.tensor([0, 2, 1]))
    assert out.dtype == kiln.int64
    assert out.tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert F.one_hot(kiln.tensor([[1]]), num_classes=4).tolist() == [[[0, 1, 0, 0]]]
    with pytest.raises(kiln.KilnError, match="smaller than num_classes"):
        F.one_hot(kiln.tensor([3]), 2)


def test_composites_compile_like_eager():
    def fn(x, w):
        y = kiln.einsum("bi,ij->bj", x, w).tril()
        return F.pad(y.roll(1, 1), (1, 1), mode="reflect").std(1) + y.flip(0).sum()

    x = kiln.randn(3, 4)
    w = kiln.randn(4, 3)
    compiled = kiln.compile(fn)
    assert compiled(x, w).tolist() == pytest.approx(fn(x, w).tolist(), rel=1e-5, abs=1e-6)
