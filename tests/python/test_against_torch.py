"""Kiln beside PyTorch on the same Python code, where `import torch` works (skipped, with the
reason, where it does not; CI does not need torch)."""

import importlib.util
import math
import pathlib
import sys

import pytest

import kiln

torch = pytest.importorskip("torch", reason="PyTorch is not installed in this environment")

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "train_mlp.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("train_mlp", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_mlp"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("optim", ["sgd", "adamw"])
def test_training_script_losses_equal_torch_step_by_step(optim):
    ex = _load_example()
    torch.set_num_threads(1)
    ours, _ = ex.train(kiln, optim=optim)
    theirs, _ = ex.train(torch, optim=optim)
    assert len(ours) == len(theirs)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-6), f"step {step}: kiln {a}, torch {b}"


def _both(fn):
    return fn(kiln), fn(torch)


@pytest.mark.parametrize("expr", [
    lambda m: m.tensor([[1.0, -2.0], [3.0, 0.5]]).exp().sum(1),
    lambda m: (m.arange(6).view(2, 3) * 2.5),
    lambda m: m.tensor([1, 2, 3]) * 2,
    lambda m: m.tensor([[0.1, 0.9], [0.3, 0.2]]).softmax(-1),
    lambda m: m.tensor([[0.1, 0.9], [0.3, 0.2]]).max(1)[1],
    lambda m: m.arange(24).view(2, 3, 4)[1, ..., ::2],
    lambda m: m.arange(12).view(3, 4)[m.tensor([2, 0])],
    lambda m: m.tensor([1.0, 2.0]) == 2,
    lambda m: m.nn.functional.gelu(m.tensor([-1.0, 0.5]), approximate="tanh"),
    lambda m: m.cat([m.ones(2), m.zeros(1)]),
    lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]]).var(0),
    lambda m: m.full((2,), 3).dtype == m.int64,
    lambda m: m.tensor([[3.0, 4.0], [1.0, 1.0]]).norm(dim=1),
    lambda m: m.isclose(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.1])),
    lambda m: m.allclose(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0 + 1e-9])),
    lambda m: m.ones(2, 3).new_zeros(4).dtype == m.float32,
])
def test_same_results_as_torch(expr):
    ours, theirs = _both(expr)
    if isinstance(ours, bool):
        assert ours == theirs
        return
    assert ours.reshape(-1).tolist() == pytest.approx(theirs.reshape(-1).tolist(), rel=1e-6)
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def _flat_list(t):
    return t.reshape(-1).tolist()


def _ties(m):
    return m.tensor([[2.0, 1.0, 2.0, float("nan"), 1.0, 0.0], [3.0, 3.0, -1.0, 3.0, 0.0, 0.0]])


@pytest.mark.parametrize("expr", [
    lambda m: m.sort(_ties(m), stable=True),
    lambda m: _ties(m).sort(dim=0, descending=True, stable=True),
    lambda m: m.sort(_ties(m), dim=-1, descending=True, stable=True),
    lambda m: m.sort(m.tensor([3, 1, 3, 2, 1]), stable=True),
    lambda m: m.sort(m.tensor(5.0)),
    lambda m: m.sort(m.zeros(2, 0), dim=1),
    # topk without ties (torch's own topk orders ties arbitrarily; see the test below).
    lambda m: m.topk(m.tensor([[2.0, 1.0, float("nan"), 0.5], [3.0, -1.0, 0.0, 4.0]]), 3),
    lambda m: m.topk(m.tensor([[2.0, 1.0, 7.0], [3.0, -1.0, 0.0]]), 2, dim=0, largest=False),
    lambda m: m.topk(m.tensor(5.0), 1),
])
def test_sort_and_topk_match_torch_with_ties_and_nan(expr):
    ours, theirs = _both(expr)
    assert _flat_list(ours.values) == pytest.approx(_flat_list(theirs.values), nan_ok=True)
    assert _flat_list(ours.indices) == _flat_list(theirs.indices)
    assert ours.values.shape == tuple(theirs.values.shape)
    values, indices = ours  # unpacks as torch's named tuple
    assert values.dtype == ours[0].dtype and indices.dtype == kiln.int64


@pytest.mark.parametrize("k, dim, largest", [(3, -1, True), (2, 1, False), (1, 0, True),
                                             (2, 0, False), (6, 1, True)])
def test_topk_is_the_head_of_torchs_stable_sort(k, dim, largest):
    """Kiln's topk keeps tied elements in input order: the first k of torch's stable sort."""
    ours = kiln.topk(_ties(kiln), k, dim, largest)
    want = torch.sort(_ties(torch), dim=dim, descending=largest, stable=True)
    head = [v.narrow(dim, 0, k) for v in want]
    assert _flat_list(ours.values) == pytest.approx(_flat_list(head[0]), nan_ok=True)
    assert _flat_list(ours.indices) == _flat_list(head[1])
    theirs = torch.topk(_ties(torch), k, dim, largest)  # the same values, whatever the ties
    assert _flat_list(ours.values) == pytest.approx(_flat_list(theirs.values), nan_ok=True)


@pytest.mark.parametrize("expr", [
    lambda m: m.argsort(_ties(m), dim=1, stable=True),
    lambda m: _ties(m).argsort(descending=True, stable=True),
    lambda m: m.cumsum(m.tensor([[1.0, -2.0, 3.5], [0.25, 4.0, -1.0]]), 1),
    lambda m: m.cumsum(m.tensor([[1, 2], [3, 4]], dtype=m.int32), 0),
    lambda m: m.cumsum(m.tensor([True, False, True]), 0),
    lambda m: m.cumsum(m.tensor([1, 2, 3]), 0, dtype=m.float64),
    lambda m: m.tensor([[2.0, 0.0, 3.0], [-1.0, 0.5, 4.0]]).cumprod(-1),
    lambda m: m.cumprod(m.tensor([1, -2, 3], dtype=m.int32), 0),
    lambda m: m.cumsum(m.tensor(2.5), 0),
])
def test_argsort_and_scans_match_torch(expr):
    ours, theirs = _both(expr)
    assert _flat_list(ours) == pytest.approx(_flat_list(theirs))
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_sort_and_scan_gradients_match_torch():
    def run(m):
        x = m.tensor([[0.5, -1.0, 2.0, 0.0], [3.0, 0.0, 0.2, -0.3]], requires_grad=True)
        w = m.tensor([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.25, 2.0]])
        loss = (m.sort(x, 1).values * w).sum() + (m.topk(x, 2).values * w[:, :2]).sum()
        loss = loss + (x.cumsum(1) * w).sum() + (x.cumprod(1) * w).sum()
        loss.backward()
        return _flat_list(x.grad)

    ours, theirs = _both(run)
    assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-7)


def test_scan_and_sort_second_derivatives_match_torch():
    """Second derivatives through the backward formulas (create_graph), zeros included."""
    def run(m):
        x = m.tensor([[0.5, 0.0, 2.0, -1.5], [3.0, 0.0, 0.0, -0.3]], dtype=m.float64,
                     requires_grad=True)
        y = (x.cumprod(1) ** 2).sum() + (x.cumsum(0) ** 3).sum() + (m.sort(x, 1).values ** 3).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        return _flat_list(g), _flat_list(gg)

    (g, gg), (tg, tgg) = _both(run)
    assert g == pytest.approx(tg, rel=1e-12, abs=1e-12)
    assert gg == pytest.approx(tgg, rel=1e-12, abs=1e-12)


def test_repr_matches_torch():
    for make in (lambda m: m.tensor([1.0, 2.5]), lambda m: m.tensor([[1, 2], [3, 4]]),
                 lambda m: m.tensor(3.25), lambda m: m.tensor([1e-6, 1.0]),
                 lambda m: m.tensor([True, False])):
        ours, theirs = _both(make)
        assert repr(ours) == repr(theirs)


def test_gradients_match_torch():
    def run(m):
        x = m.tensor([[0.5, -1.0, 2.0], [0.1, 0.2, 0.3]], requires_grad=True)
        w = m.tensor([[1.0, 0.5], [-0.5, 0.25], [0.3, 0.7]], requires_grad=True)
        y = m.nn.functional.log_softmax(m.tanh(x @ w), dim=1)
        loss = m.nn.functional.nll_loss(y, m.tensor([1, 0]))
        loss.backward()
        return x.grad.tolist(), w.grad.tolist()

    (gx, gw), (tx, tw) = _both(run)
    for a, b in zip(gx + gw, tx + tw):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-7)


def test_dlpack_with_torch_shares_memory_both_ways():
    k = kiln.arange(6, dtype=kiln.float32)
    t = torch.from_dlpack(k)
    t[0] = 42.0
    assert k[0].item() == 42.0 and t.data_ptr() == k.data_ptr()
    src = torch.arange(4, dtype=torch.float64)
    back = kiln.from_dlpack(src)
    src[3] = -1.0
    assert back.tolist() == [0.0, 1.0, 2.0, -1.0] and back.data_ptr() == src.data_ptr()


def _pad(m, shape, pad, **kw):
    x = m.arange(math.prod(shape), dtype=m.float32).view(*shape)
    return m.nn.functional.pad(x, pad, **kw)


@pytest.mark.parametrize("expr", [
    lambda m: m.tensor([[1.0, 2.0, 4.0], [0.5, 0.0, 3.0]]).std(1),
    lambda m: m.tensor([[1.0, 2.0, 4.0], [0.5, 0.0, 3.0]]).std(dim=0, keepdim=True, correction=0),
    lambda m: m.std(m.tensor([1.0, 2.0, 4.0]), unbiased=False),
    lambda m: m.tensor([[0, 1], [0, 0]]).any(1),
    lambda m: m.tensor([[0.0, 1.0], [2.0, float("nan")]]).all(),
    lambda m: m.any(m.tensor([[True, False]]), dim=0, keepdim=True),
    lambda m: m.all(m.zeros(2, 0), 1),
    lambda m: m.arange(12).view(3, 4).tril(1),
    lambda m: m.triu(m.arange(24).view(2, 3, 4), -1),
    lambda m: m.arange(6).view(2, 3).flip(0, 1),
    lambda m: m.flip(m.arange(6).view(2, 3), [-1]),
    lambda m: m.arange(6).view(2, 3).roll(1),
    lambda m: m.roll(m.arange(6).view(2, 3), (1, -1), (0, 1)),
    lambda m: m.arange(6).view(2, 3).roll(shifts=5, dims=1),
    lambda m: m.arange(3).repeat(2, 2),
    lambda m: m.arange(6).view(2, 3).repeat((2, 1, 2)),
    lambda m: m.outer(m.arange(3.0), m.arange(4.0)),
    lambda m: m.arange(3.0).outer(m.arange(2.0)),
    lambda m: m.addmm(m.ones(2, 3), m.arange(8.0).view(2, 4), m.arange(12.0).view(4, 3),
                      beta=0.5, alpha=2),
    lambda m: m.full((2, 3), float("nan")).addmm(m.ones(2, 4), m.ones(4, 3), beta=0),
    lambda m: m.baddbmm(m.ones(3), m.arange(24.0).view(2, 3, 4), m.arange(24.0).view(2, 4, 3),
                        alpha=0.5),
    lambda m: m.einsum("ij,jk->ik", m.arange(6.0).view(2, 3), m.arange(12.0).view(3, 4)),
    lambda m: m.einsum("ii", m.arange(9.0).view(3, 3)),
    lambda m: m.einsum("ii->i", m.arange(9.0).view(3, 3)),
    lambda m: m.einsum("ba,aC", [m.arange(6.0).view(3, 2), m.arange(8.0).view(2, 4)]),
    lambda m: m.einsum("...ij,...jk", m.arange(24.0).view(2, 1, 3, 4), m.ones(3, 4, 2)),
    lambda m: m.einsum("bn,anm,bm->ba", m.arange(6.0).view(2, 3), m.arange(60.0).view(4, 3, 5),
                       m.arange(10.0).view(2, 5)),
    lambda m: m.einsum("i,j", m.arange(3.0), m.arange(2.0)),
    lambda m: m.einsum("ij,jk", m.arange(6).view(2, 3), m.arange(12).view(3, 4)),
    lambda m: m.einsum("ii", m.arange(9).view(3, 3)),
    lambda m: m.arange(6).view(2, 3).flip(dims=(1,)),
    lambda m: m.einsum("b...,b->...b", m.arange(6.0).view(2, 3), m.arange(2.0)),
    lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2], dtype=m.int32), 5),
    lambda m: m.where(m.tensor([True, False]), 2.5, m.tensor([1, 2])),
    lambda m: m.where(m.tensor([True, False]), 1, 0),
    lambda m: m.where(m.tensor([[True], [False]]), 1.0, 0),
    lambda m: m.tensor([1.0, 2.0]).where(m.tensor([True, False]), 0.0),
    lambda m: _pad(m, (1, 2, 3), (1, 2)),
    lambda m: _pad(m, (1, 2, 3), (1, 1, 1, 1), value=-1.5),
    lambda m: _pad(m, (2, 3), (-1, 1, 0, -1)),
    lambda m: _pad(m, (1, 3, 4), (2, 1), mode="reflect"),
    lambda m: _pad(m, (1, 2, 3, 4), (1, 2, 2, 1), mode="reflect"),
    lambda m: _pad(m, (1, 3, 4), (2, 1), mode="replicate"),
    lambda m: _pad(m, (1, 2, 3, 4), (1, 1, 2, 0), mode="replicate"),
    lambda m: m.nn.functional.one_hot(m.tensor([0, 2, 1])),
    lambda m: m.nn.functional.one_hot(m.tensor([[0], [2]]), num_classes=4),
])
def test_composites_match_torch(expr):
    test_same_results_as_torch(expr)


def test_composite_gradients_match_torch():
    def run(m):
        a = m.tensor([[0.5, -1.0, 2.0], [0.1, 0.2, 0.3]], requires_grad=True)
        b = m.tensor([[1.0, 0.5], [-0.5, 0.25], [0.3, 0.7]], requires_grad=True)
        c = m.tensor([[0.2, -0.1], [0.4, 1.5]], requires_grad=True)
        y = m.einsum("ij,jk->ik", a, b).tril()
        y = m.addmm(c, y, c.flip(0), beta=0.5, alpha=2).roll(1, 0).repeat(2, 1)
        y = m.nn.functional.pad(y.view(1, 4, 2), (1, 1), mode="reflect").std(2)
        y.sum().backward()
        return a.grad.tolist(), b.grad.tolist(), c.grad.tolist()

    ours, theirs = _both(run)
    for g, t in zip(ours, theirs):
        for a, b in zip(sum(g, []), sum(t, [])):
            assert a == pytest.approx(b, rel=1e-5, abs=1e-6)


# Values at the kinks and ties of the rounding ops and activations, and ordinary ones.
_KINKS = [-4.0, -3.0, -2.5, -1.5, -1.0, -0.7, -0.5, -0.3, 0.0, 0.3, 0.5, 0.7, 1.0, 1.5, 2.5, 3.0,
          3.5, 25.0]


def _flat(v):
    """Nested lists flattened, so that pytest.approx can compare them."""
    if isinstance(v, list):
        return [x for item in v for x in _flat(item)]
    return [v]


def _pointwise_calls():
    F = "nn.functional."
    return [
        ("floor", {}), ("ceil", {}), ("round", {}), ("trunc", {}), ("reciprocal", {}),
        ("round", {"decimals": 1}), ("round", {"decimals": -1}),
        (F + "leaky_relu", {}), (F + "leaky_relu", {"negative_slope": 0.2}),
        (F + "elu", {}), (F + "elu", {"alpha": 0.5}), (F + "softplus", {}),
        (F + "softplus", {"beta": 2.0, "threshold": 5.0}), (F + "hardtanh", {}),
        (F + "hardtanh", {"min_val": -2.0, "max_val": 0.5}), (F + "hardswish", {}),
        (F + "mish", {}),
    ]


def _resolve(m, name):
    obj = m
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name,kwargs", _pointwise_calls(),
                         ids=[f"{n}{k}" for n, k in _pointwise_calls()])
def test_pointwise_values_and_gradients_match_torch(name, kwargs):
    def run(m):
        x = m.tensor(_KINKS, dtype=m.float64, requires_grad=True)
        y = _resolve(m, name)(x, **kwargs)
        (y * m.arange(len(_KINKS), dtype=m.float64)).sum().backward()
        return y.tolist(), x.grad.tolist()

    (y, g), (ty, tg) = _both(run)
    assert y == pytest.approx(ty, rel=1e-12, abs=1e-15)
    assert g == pytest.approx(tg, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "reciprocal"])
def test_pointwise_integer_inputs_match_torch(name):
    def run(m):
        y = _resolve(m, name)(m.tensor([-3, -1, 1, 2, 7]))
        return y.tolist(), str(y.dtype).split(".")[-1]

    ours, theirs = _both(run)
    assert ours[1] == theirs[1]
    assert ours[0] == pytest.approx(theirs[0], rel=1e-6)


@pytest.mark.parametrize("name", ["remainder", "fmod"])
def test_remainder_and_fmod_match_torch(name):
    def run(m):
        a = m.tensor([[5.5, -5.5, 6.0, -6.0, 0.25, -7.0]], dtype=m.float64, requires_grad=True)
        b = m.tensor([[2.0], [-2.0], [1.5], [-0.75]], dtype=m.float64, requires_grad=True)
        y = getattr(m, name)(a, b)
        (y * y).sum().backward()
        ints = getattr(m, name)(m.tensor([7, -7, 7, -7, 0]), m.tensor([3, 3, -3, -3, 5]))
        scalar = getattr(m, name)(m.tensor([7, -7, 6]), -4)
        floats = getattr(m.Tensor, name)(m.tensor([7, -7, 6]), 2.5)
        return (y.tolist(), a.grad.tolist(), b.grad.tolist(), ints.tolist(), scalar.tolist(),
                floats.tolist(), str(floats.dtype).split(".")[-1])

    ours, theirs = _both(run)
    for a, b in zip(ours, theirs):
        assert (_flat(a) == pytest.approx(_flat(b), rel=1e-12)) if isinstance(a, list) else a == b


def test_integer_division_by_zero_raises_like_torch():
    for m in (kiln, torch):
        with pytest.raises(Exception, match="ZeroDivisionError"):
            m.remainder(m.tensor([1, 2]), m.tensor([1, 0]))
        with pytest.raises(Exception, match="ZeroDivisionError"):
            m.fmod(m.tensor([1, 2]), 0)


def test_lerp_matches_torch():
    def run(m):
        a = m.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]], dtype=m.float64, requires_grad=True)
        b = m.tensor([4.0, 2.0, -3.0], dtype=m.float64, requires_grad=True)
        w = m.tensor([[0.0], [0.75]], dtype=m.float64, requires_grad=True)
        y = m.lerp(a, b, w) + a.lerp(b, 0.3) + m.lerp(a, b, 1.0)
        (y * y).sum().backward()
        return y.tolist(), a.grad.tolist(), b.grad.tolist(), w.grad.tolist()

    ours, theirs = _both(run)
    for a, b in zip(ours, theirs):
        assert _flat(a) == pytest.approx(_flat(b), rel=1e-12)


def test_clamp_with_tensor_bounds_matches_torch():
    def run(m):
        x = m.tensor([[-3.0, -1.0, 0.0, 0.5, 2.0, 4.0]], dtype=m.float64, requires_grad=True)
        lo = m.tensor([[-1.0], [1.0]], dtype=m.float64, requires_grad=True)
        hi = m.tensor([[2.0], [0.0]], dtype=m.float64, requires_grad=True)  # second row: min > max
        y = m.clamp(x, lo, hi) + m.clamp(x, min=lo) + x.clamp(max=hi) + x.clamp(lo, None)
        (y * y).sum().backward()
        ints = m.clamp(m.tensor([-5, 0, 5]), m.tensor([-1, -1, -1]), m.tensor([1, 1, 1]))
        nan = m.clamp(m.tensor([0.5, 0.5]), m.tensor([float("nan"), 0.0]), m.tensor([1.0, 1.0]))
        return (y.tolist(), x.grad.tolist(), lo.grad.tolist(), hi.grad.tolist(), ints.tolist(),
                str(nan[0].item()), nan[1].item())

    ours, theirs = _both(run)
    for a, b in zip(ours, theirs):
        assert (_flat(a) == pytest.approx(_flat(b), rel=1e-12)) if isinstance(a, list) else a == b


_NAN = float("nan")


@pytest.mark.parametrize("x,lo,hi", [(0.0, 0.0, 1.0), (1.0, 0.0, 1.0), (0.0, 0.0, 0.0),
                                     (0.0, 1.0, 0.0), (1.0, 1.0, 0.0), (2.0, 1.0, 1.0),
                                     (0.0, 1.0, 1.0), (_NAN, 1.0, 0.0), (0.0, _NAN, 1.0),
                                     (0.5, 0.0, _NAN)])
def test_clamp_tensor_gradients_at_ties_and_nan_match_torch(x, lo, hi):
    def run(m):
        grads = []
        for bounds in ((lo, hi), (lo, None), (None, hi)):
            ts = [m.tensor(v, dtype=m.float64, requires_grad=True) if v is not None else None
                  for v in (x,) + bounds]
            y = m.clamp(ts[0], ts[1], ts[2])
            y.backward()
            grads.append([t.grad.item() for t in ts if t is not None])
            grads.append(str(y.item()))
        return grads

    ours, theirs = _both(run)
    assert ours == theirs
