"""Convolution, normalization and pooling in kiln.nn.functional against PyTorch (forward, gradients, batch
norm's running statistics, eagerly and compiled). Skipped where torch is not importable; the
C++ OpInfo suite checks the same functions against loop references everywhere."""

import pytest

import kiln
import kiln.nn.functional as KF

try:
    import torch
    TF = torch.nn.functional
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not importable")


def test_closed_form_values_without_torch():
    x = kiln.arange(16, dtype=kiln.float32).view(1, 1, 4, 4)
    values, indices = KF.max_pool2d(x, 2, return_indices=True)
    assert values.tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert indices.tolist() == [[[[5, 7], [13, 15]]]]
    assert KF.avg_pool2d(x, 2).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
    assert KF.adaptive_avg_pool2d(x, 1).tolist() == [[[[7.5]]]]
    rm, rv = kiln.zeros(1), kiln.ones(1)
    y = KF.batch_norm(kiln.tensor([[1.0], [3.0]]), rm, rv, training=True, momentum=0.5)
    assert y.view(2).tolist() == pytest.approx([-1.0, 1.0], abs=1e-4)
    assert rm.tolist() == [1.0] and rv.tolist() == [1.5]  # unbiased variance 2
    assert KF.rms_norm(kiln.tensor([3.0, 4.0]), 2, eps=0.0).tolist() == pytest.approx(
        [3 / 12.5 ** 0.5, 4 / 12.5 ** 0.5])


def _both(shape, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, generator=g, dtype=torch.float64)
    return kiln.tensor(t.tolist(), dtype=kiln.float64), t


def _close(k, t, tol=1e-9):
    assert list(k.shape) == list(t.shape)
    assert kiln.allclose(k.detach(), kiln.tensor(t.detach().tolist(), dtype=k.dtype),
                         rtol=tol, atol=tol)


CASES = [
    ("max_pool2d", dict(kernel_size=3, stride=2, padding=1), (2, 3, 9, 7)),
    ("max_pool2d", dict(kernel_size=(2, 3), stride=1, dilation=2, ceil_mode=True), (1, 2, 8, 9)),
    ("max_pool2d", dict(kernel_size=2, ceil_mode=True), (3, 7, 7)),
    ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1), (2, 3, 9, 7)),
    ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                        count_include_pad=False), (2, 3, 8, 8)),
    ("avg_pool2d", dict(kernel_size=2, divisor_override=3), (1, 1, 4, 6)),
    ("adaptive_avg_pool2d", dict(output_size=(3, 2)), (2, 3, 7, 5)),
    ("adaptive_avg_pool2d", dict(output_size=(None, 4)), (2, 3, 7, 9)),
    ("group_norm", dict(num_groups=2, eps=1e-3), (3, 4, 5)),
    ("rms_norm", dict(normalized_shape=(5,)), (3, 4, 5)),
]


@needs_torch
@pytest.mark.parametrize("name,kwargs,shape", CASES)
def test_forward_and_backward_match_torch(name, kwargs, shape):
    xk, xt = _both(shape, 1)
    xk.requires_grad_()
    xt.requires_grad_()
    yk, yt = getattr(KF, name)(xk, **kwargs), getattr(TF, name)(xt, **kwargs)
    _close(yk, yt)
    gk, gt = _both(yt.shape, 2)
    yk.backward(gk)
    yt.backward(gt)
    _close(xk.grad, xt.grad)


@needs_torch
def test_max_pool_indices_match_torch():
    xk, xt = _both((2, 3, 9, 7), 3)
    vk, ik = KF.max_pool2d(xk, 3, 2, 1, return_indices=True)
    vt, it = TF.max_pool2d(xt, 3, 2, 1, return_indices=True)
    _close(vk, vt)
    assert ik.tolist() == it.tolist()


@needs_torch
@pytest.mark.parametrize("compiled", [False, True])
def test_batch_norm_training_and_running_statistics_match_torch(compiled):
    wk, wt = _both((4,), 4)
    bk, bt = _both((4,), 5)
    for p in (wk, wt, bk, bt):
        p.requires_grad_()
    rmk, rvk = kiln.zeros(4, dtype=kiln.float64), kiln.ones(4, dtype=kiln.float64)
    rmt, rvt = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)

    def step(x, rm, rv, w, b):
        return (KF.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2) ** 2).sum()

    f = kiln.compile(step) if compiled else step
    for i in range(4):
        xk, xt = _both((6, 4, 3), 10 + i)
        lk = f(xk, rmk, rvk, wk, bk)
        lt = (TF.batch_norm(xt, rmt, rvt, wt, bt, training=True, momentum=0.2) ** 2).sum()
        lk.backward()
        lt.backward()
        _close(lk, lt)
        _close(rmk, rmt)
        _close(rvk, rvt)
    _close(wk.grad, wt.grad)
    _close(bk.grad, bt.grad)
    xk, xt = _both((2, 4, 3), 20)
    _close(KF.batch_norm(xk, rmk, rvk, wk, bk), TF.batch_norm(xt, rmt, rvt, wt, bt))


def test_errors_use_torch_wording():
    with pytest.raises(kiln.KilnError, match="pad should be at most half"):
        KF.max_pool2d(kiln.ones(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(kiln.KilnError, match="Expected more than 1 value per channel"):
        KF.batch_norm(kiln.ones(1, 3), None, None, training=True)
    with pytest.raises(kiln.KilnError, match="divisible by num_groups"):
        KF.group_norm(kiln.ones(2, 6, 3), 4)


CONV_CASES = [
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 3), dict(stride=2, padding=1, groups=2)),
    ("conv2d", (1, 3, 6, 5), (4, 3, 4, 2), dict(padding="same", dilation=1)),
    ("conv2d", (2, 2, 9, 8), (3, 2, 3, 3), dict(padding="same", dilation=2)),
    ("conv2d", (3, 5, 6), (4, 3, 2, 3), dict(stride=(1, 2), padding=(0, 1))),
    ("conv1d", (2, 4, 9), (6, 4, 3), dict(padding="same", dilation=2)),
    ("conv1d", (2, 4, 9), (6, 2, 3), dict(stride=2, groups=2, padding="valid")),
    ("conv_transpose2d", (2, 4, 5, 4), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (1, 4, 3, 3), (4, 2, 2, 2), dict(groups=2, dilation=2)),
]


@needs_torch
@pytest.mark.parametrize("name,xshape,wshape,kwargs", CONV_CASES)
def test_convolutions_match_torch(name, xshape, wshape, kwargs):
    xk, xt = _both(xshape, 30)
    wk, wt = _both(wshape, 31)
    out_channels = wshape[1] * kwargs.get("groups", 1) if "transpose" in name else wshape[0]
    bk, bt = _both((out_channels,), 32)
    for t in (xk, xt, wk, wt, bk, bt):
        t.requires_grad_()
    yk = getattr(KF, name)(xk, wk, bk, **kwargs)
    yt = getattr(TF, name)(xt, wt, bt, **kwargs)
    _close(yk, yt)
    gk, gt = _both(yt.shape, 33)
    yk.backward(gk)
    yt.backward(gt)
    for a, b in ((xk, xt), (wk, wt), (bk, bt)):
        _close(a.grad, b.grad)


def test_conv_errors_use_torch_wording():
    with pytest.raises(kiln.KilnError, match="expected input.* to have 4 channels"):
        KF.conv2d(kiln.ones(1, 3, 5, 5), kiln.ones(2, 4, 3, 3))
    with pytest.raises(kiln.KilnError, match="padding='same' is not supported for strided"):
        KF.conv2d(kiln.ones(1, 1, 5, 5), kiln.ones(1, 1, 3, 3), stride=2, padding="same")
    with pytest.raises(kiln.KilnError, match="Kernel size can't be greater than actual input"):
        KF.conv2d(kiln.ones(1, 1, 2, 2), kiln.ones(1, 1, 3, 3))


def test_small_cnn_trains_the_same_eagerly_and_compiled():
    # conv -> batch norm (training, running statistics) -> relu -> max pool -> linear, with SGD.
    def make_params():
        kiln.manual_seed(0)
        return {
            "conv": (kiln.randn(4, 2, 3, 3) * 0.3).requires_grad_(),
            "gamma": kiln.ones(4, requires_grad=True),
            "beta": kiln.zeros(4, requires_grad=True),
            "fc": (kiln.randn(3, 4 * 3 * 3) * 0.2).requires_grad_(),
            "mean": kiln.zeros(4),
            "var": kiln.ones(4),
        }

    def loss_fn(x, y, p):
        h = KF.conv2d(x, p["conv"], padding=1)
        h = KF.batch_norm(h, p["mean"], p["var"], p["gamma"], p["beta"], training=True)
        h = KF.max_pool2d(KF.relu(h), 2)
        return KF.cross_entropy(KF.linear(h.flatten(1), p["fc"]), y)

    eager, comp = make_params(), make_params()
    compiled = kiln.compile(loss_fn)
    kiln.manual_seed(1)
    for step in range(4):
        x = kiln.randn(5, 2, 6, 6)
        y = kiln.tensor([0, 2, 1, 1, 0])
        losses = []
        for params, fn in ((eager, loss_fn), (comp, compiled)):
            loss = fn(x, y, params)
            loss.backward()
            with kiln.no_grad():
                for name in ("conv", "gamma", "beta", "fc"):
                    params[name] -= 0.1 * params[name].grad
                    params[name].grad = None
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) <= 1e-5 * (1 + abs(losses[0])), (step, losses)
    for name in ("conv", "fc", "mean", "var"):
        assert kiln.allclose(eager[name], comp[name], rtol=1e-5, atol=1e-6), name
    assert compiled.stats()["eager_calls"] == 0


_INPLACE_ACTIVATIONS = [
    ("leaky_relu", dict(negative_slope=0.2)), ("elu", dict(alpha=1.5)),
    ("hardtanh", dict(min_val=-0.5, max_val=2.0)), ("hardswish", {}), ("mish", {}), ("silu", {}),
    ("relu6", {}), ("relu", {}),
]


@needs_torch
@pytest.mark.parametrize("name,kw", _INPLACE_ACTIVATIONS)
def test_inplace_activations_match_torch_values_and_gradients(name, kw):
    xk, xt = _both((3, 5), 7)
    xk.requires_grad_(True)
    xt.requires_grad_(True)
    wk, wt = _both((3, 5), 8)
    hk = xk * 3  # a non-leaf, as in torch (an in-place op on a leaf that requires grad is refused)
    ht = xt * 3
    rk = getattr(KF, name)(hk, inplace=True, **kw)
    rt = getattr(TF, name)(ht, inplace=True, **kw)
    assert rk is hk and hk._version == 1
    _close(hk, ht.detach())
    (rk * wk).sum().backward()
    (rt * wt).sum().backward()
    _close(xk.grad, xt.grad)


@needs_torch
def test_inplace_rounding_remainder_and_lerp_methods_match_torch():
    xk, xt = _both((4, 3), 9)
    for name, args in [("floor_", ()), ("ceil_", ()), ("trunc_", ()), ("round_", ()),
                       ("fmod_", (0.7,)), ("remainder_", (0.7,)), ("reciprocal_", ())]:
        a, b = xk * 2, xt * 2
        getattr(a, name)(*args)
        getattr(b, name)(*args)
        _close(a, b)
    ek, et = _both((4, 3), 10)
    a, b = xk * 1, xt * 1
    a.lerp_(ek, 0.3)
    b.lerp_(et, 0.3)
    _close(a, b)
    with pytest.raises(kiln.KilnError, match="leaky_relu_"):
        KF.leaky_relu(kiln.ones(2, requires_grad=True), inplace=True)
