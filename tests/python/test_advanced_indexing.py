"""Advanced indexing beside PyTorch: x[...] with int64/int32 tensors, lists, bool masks, mixed
with ints, slices, None and Ellipsis; x[...] = v; index_put(_), masked_select, nonzero and
where(cond); gradients of reads and writes; and compile with the graph break a mask makes."""

import numpy as np
import pytest

import kiln

torch = pytest.importorskip("torch", reason="PyTorch is not installed in this environment")


def _data(*shape):
    return np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 0.5 - 3


def _pair(*shape):
    d = _data(*shape)
    return kiln.tensor(d.tolist(), dtype=kiln.float64), torch.tensor(d)


def _key(lib, key):
    """The same key with kiln or torch tensors: ("t", values, dtype) entries become tensors."""
    def conv(k):
        if isinstance(k, tuple) and k and k[0] == "t":
            _, values, dtype = k
            return lib.tensor(values, dtype=getattr(lib, dtype))
        return k
    if isinstance(key, tuple) and not (key and key[0] == "t"):
        return tuple(conv(k) for k in key)
    return conv(key)


def _same(a, b):
    assert list(a.shape) == list(b.shape)
    assert a.tolist() == b.tolist()


KEYS = [
    ("t", [0, 2, -1, 2], "int64"),
    ("t", [[0, 1], [2, 0]], "int64"),
    ("t", [1, 0], "int32"),
    [2, 0, 2],
    (slice(None), [1, 3]),
    ([0, 2], [1, 3]),
    ([[0], [2]], [1, 3, 0]),
    ([0, 2], slice(None), [1, -1]),
    (1, [0, 2], slice(1, 3)),
    ([0, 1], 1, [2, 3]),
    (Ellipsis, [0, 3]),
    (None, [0, 2]),
    ([0, 2], None, [1, 3]),
    (slice(None), None, [1, 0], [3, 3]),
    ("t", [True, False, True], "bool"),
    [True, False, True],
    (slice(None), [False, True, True, False]),
    ("t", [[True, False, True, False, False]] * 3, "bool"),  # [3, 5] does not fit [3, 4]: error
    ("t", [[True, False, False, True]] * 3, "bool"),
    (("t", [True, False, True], "bool"), [1, 2]),
    ("t", [], "int64"),
]


@pytest.mark.parametrize("key", KEYS, ids=[str(i) for i in range(len(KEYS))])
def test_getitem_and_gradient_match_torch(key):
    x, tx = _pair(3, 4, 5)
    try:
        want = tx[_key(torch, key)]
    except (IndexError, RuntimeError):
        with pytest.raises((IndexError, kiln.KilnError)):
            x[_key(kiln, key)]
        return
    x.requires_grad_()
    tx.requires_grad_()
    want = tx[_key(torch, key)]
    got = x[_key(kiln, key)]
    _same(got, want)
    w = _data(*want.shape) if want.dim() else np.array(1.5)
    (got * kiln.tensor(w.tolist(), dtype=kiln.float64).reshape(list(w.shape))).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    _same(x.grad, tx.grad)


@pytest.mark.parametrize("key", KEYS, ids=[str(i) for i in range(len(KEYS))])
def test_setitem_matches_torch(key):
    x, tx = _pair(3, 4, 5)
    try:
        shape = tx[_key(torch, key)].shape
    except (IndexError, RuntimeError):
        return
    v = _data(*shape) + 100
    x[_key(kiln, key)] = kiln.tensor(v.tolist(), dtype=kiln.float64).reshape(list(v.shape))
    tx[_key(torch, key)] = torch.tensor(v)
    _same(x, tx)
    x[_key(kiln, key)] = 7
    tx[_key(torch, key)] = 7
    _same(x, tx)


def test_index_put_accumulates_duplicates_like_torch():
    x, tx = _pair(4, 3)
    i = [0, 2, 0, 0]
    v = _data(4, 3)
    got = kiln.index_put(x, (kiln.tensor(i),), kiln.tensor(v.tolist(), dtype=kiln.float64), True)
    want = torch.index_put(tx, (torch.tensor(i),), torch.tensor(v), True)
    assert np.allclose(np.array(got.tolist()), want.numpy())
    x.index_put_((kiln.tensor(i), kiln.tensor([1, 1, 2, 1])), kiln.tensor(1.0, dtype=kiln.float64),
                 accumulate=True)
    tx.index_put_((torch.tensor(i), torch.tensor([1, 1, 2, 1])), torch.tensor(1.0,
                  dtype=torch.float64), accumulate=True)
    _same(x, tx)


def test_index_put_gradients_match_torch():
    x, tx = _pair(4, 3)
    v = kiln.tensor([1.0, 2.0, 3.0], dtype=kiln.float64, requires_grad=True)
    tv = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    x.requires_grad_()
    tx.requires_grad_()
    for acc in (False, True):
        got = kiln.index_put(x, (kiln.tensor([1, 3]),), v, acc)
        want = torch.index_put(tx, (torch.tensor([1, 3]),), tv, acc)
        w = _data(4, 3)
        (got * kiln.tensor(w.tolist(), dtype=kiln.float64).reshape(list(w.shape))).sum().backward()
        (want * torch.tensor(w)).sum().backward()
        _same(x.grad, tx.grad)
        _same(v.grad, tv.grad)


def test_errors_name_the_op_and_sizes():
    x = kiln.zeros(3, 4)
    with pytest.raises(kiln.KilnError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[kiln.tensor([5])]
    with pytest.raises(kiln.KilnError, match="could not be broadcast together"):
        x[kiln.tensor([0, 1]), kiln.tensor([0, 1, 2])]
    with pytest.raises(IndexError, match="shape of the mask"):
        x[kiln.tensor([True, False])]
    with pytest.raises(kiln.KilnError, match="index_put"):
        kiln.index_put(x, (kiln.tensor([0]),), kiln.zeros(2, dtype=kiln.float64))


def test_masked_select_nonzero_and_where_match_torch():
    x, tx = _pair(3, 4)
    m = (_data(3, 4) % 1.5) == 0
    km, tm = kiln.tensor(m.tolist()), torch.tensor(m)
    x.requires_grad_()
    tx.requires_grad_()
    got, want = kiln.masked_select(x, km), torch.masked_select(tx, tm)
    _same(got, want)
    (got * 2).sum().backward()
    (want * 2).sum().backward()
    _same(x.grad, tx.grad)
    _same(kiln.nonzero(km), torch.nonzero(tm))
    for a, b in zip(kiln.nonzero(km, as_tuple=True), torch.nonzero(tm, as_tuple=True)):
        _same(a, b)
    for a, b in zip(kiln.where(km), torch.where(tm)):
        _same(a, b)
    _same(km.nonzero(), tm.nonzero())
    _same(kiln.tensor(3.0).nonzero(as_tuple=True)[0], torch.tensor(3.0).nonzero(as_tuple=True)[0])


def test_compile_with_a_mask_is_a_graph_break_with_gradients():
    def fn(x):
        y = x.exp()
        picked = y[y > 1.5]
        return (picked * picked).sum()

    compiled = kiln.compile(fn)
    for seed in range(3):  # the mask picks a different count each call
        d = np.random.default_rng(seed).standard_normal((4, 5))
        x = kiln.tensor(d.tolist(), dtype=kiln.float64, requires_grad=True)
        tx = torch.tensor(d, requires_grad=True)
        got = compiled(x)
        ty = tx.exp()
        want = (ty[ty > 1.5] ** 2).sum()
        assert got.item() == pytest.approx(want.item(), rel=1e-12)
        got.backward()
        want.backward()
        assert np.allclose(np.array(x.grad.tolist()), tx.grad.numpy(), rtol=1e-12)
    assert compiled.stats()["fallback_ops"] >= 1
