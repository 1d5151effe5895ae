"""kiln.nn.functional.scaled_dot_product_attention against torch's (forward and gradients, with
causal, bool and additive masks, broadcast batch dims and inputs transposed from [B, S, H, E]),
its errors, dropout, and a small transformer block trained eagerly and compiled. The torch
comparisons are skipped where torch is not importable; the C++ OpInfo suite checks the same
function against a loop reference everywhere."""

import pytest

import kiln
import kiln.nn.functional as KF

try:
    import torch
    TF = torch.nn.functional
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not importable")


def test_closed_form_without_torch():
    # Two keys with equal scores: the output is the mean of their values; a causal first query
    # sees only the first key.
    q = kiln.zeros(1, 2, 3)
    k = kiln.zeros(1, 2, 3)
    v = kiln.tensor([[[1.0, 2.0], [3.0, 6.0]]])
    assert KF.scaled_dot_product_attention(q, k, v).tolist() == [[[2.0, 4.0], [2.0, 4.0]]]
    causal = KF.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert causal.tolist() == [[[1.0, 2.0], [2.0, 4.0]]]


def _both(shape, seed, dtype=None):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, generator=g, dtype=torch.float64)
    if dtype is not None:
        t = t.to(dtype)
    return kiln.tensor(t.double().tolist(), dtype=_kdtype(t.dtype)), t


def _kdtype(t):
    return {torch.float64: kiln.float64, torch.float32: kiln.float32}[t]


def _close(k, t, tol):
    assert list(k.shape) == list(t.shape)
    got = torch.tensor(k.detach().to(kiln.float64).tolist(), dtype=torch.float64)
    torch.testing.assert_close(got, t.detach().double(), rtol=tol, atol=tol, equal_nan=True)


CASES = [
    # (q shape, k shape, v shape, mask kind, is_causal)
    ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4), None, False),
    ((2, 3, 70, 8), (2, 3, 70, 8), (2, 3, 70, 6), None, True),
    ((2, 3, 9, 8), (2, 3, 4, 8), (2, 3, 4, 8), None, True),
    ((2, 2, 66, 4), (2, 2, 130, 4), (2, 2, 130, 5), "bool", False),
    ((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3), "float", False),
    ((3, 5, 4), (1, 6, 4), (1, 6, 2), "bool_per_batch", False),
]


def _mask(kind, L, S, batch, seed):
    g = torch.Generator().manual_seed(seed)
    if kind == "bool":
        m = torch.rand(L, S, generator=g) > 0.3
        m[:, 0] = True
        return kiln.tensor(m.tolist(), dtype=kiln.bool), m
    if kind == "bool_per_batch":
        m = torch.rand(batch, 1, S, generator=g) > 0.3
        m[..., 0] = True
        return kiln.tensor(m.tolist(), dtype=kiln.bool), m
    m = torch.randn(batch, 1, L, S, generator=g, dtype=torch.float64)
    return kiln.tensor(m.tolist(), dtype=kiln.float64), m


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("qs,ks,vs,mask,causal", CASES)
def test_forward_and_gradients_match_torch(dtype, qs, ks, vs, mask, causal):
    tdt = getattr(torch, dtype)
    tol = 1e-9 if dtype == "float64" else 2e-5
    qk, qt = _both(qs, 1, tdt)
    kk, kt = _both(ks, 2, tdt)
    vk, vt = _both(vs, 3, tdt)
    for t in (qk, kk, vk, qt, kt, vt):
        t.requires_grad_()
    mk = mt = None
    if mask is not None:
        mk, mt = _mask(mask, qs[-2], ks[-2], qs[0], 4)
        if mask == "float":
            mk, mt = mk.to(qk.dtype), mt.to(tdt)
    yk = KF.scaled_dot_product_attention(qk, kk, vk, attn_mask=mk, is_causal=causal)
    yt = TF.scaled_dot_product_attention(qt, kt, vt, attn_mask=mt, is_causal=causal)
    _close(yk, yt, tol)
    gk, gt = _both(yt.shape, 5, tdt)
    yk.backward(gk)
    yt.backward(gt)
    for a, b in ((qk, qt), (kk, kt), (vk, vt)):
        _close(a.grad, b.grad, tol * 10)


@needs_torch
def test_inputs_transposed_from_bshe_and_scale():
    qk, qt = _both((2, 7, 3, 8), 6)
    kk, kt = _both((2, 9, 3, 8), 7)
    vk, vt = _both((2, 9, 3, 5), 8)
    args_k = [t.transpose(1, 2) for t in (qk, kk, vk)]
    args_t = [t.transpose(1, 2) for t in (qt, kt, vt)]
    _close(KF.scaled_dot_product_attention(*args_k, scale=0.3),
           TF.scaled_dot_product_attention(*args_t, scale=0.3), 1e-9)


@needs_torch
def test_fully_masked_rows_are_zero_with_no_gradient_as_torch():
    qk, qt = _both((1, 3, 4), 9)
    kk, kt = _both((1, 5, 4), 10)
    vk, vt = _both((1, 5, 2), 11)
    m = torch.ones(3, 5, dtype=torch.bool)
    m[1] = False
    mk = kiln.tensor(m.tolist(), dtype=kiln.bool)
    for dropout in (0.0, 1e-300):  # the fused path, and the composite (dropout keeps all)
        args_k = [t.detach().requires_grad_() for t in (qk, kk, vk)]
        args_t = [t.detach().requires_grad_() for t in (qt, kt, vt)]
        yk = KF.scaled_dot_product_attention(*args_k, attn_mask=mk, dropout_p=dropout)
        yt = TF.scaled_dot_product_attention(*args_t, attn_mask=m)
        assert yk[0, 1].tolist() == [0.0, 0.0]
        _close(yk, yt, 1e-9)
        gk, gt = _both(yt.shape, 12)
        yk.backward(gk)
        yt.backward(gt)
        for a, b in zip(args_k, args_t):
            _close(a.grad, b.grad, 1e-9)


def test_errors_name_the_function_and_shapes():
    q, k, v = kiln.ones(1, 2, 4), kiln.ones(1, 3, 4), kiln.ones(1, 3, 2)
    with pytest.raises(kiln.KilnError, match="Explicit attn_mask should not be set when is_causal"):
        KF.scaled_dot_product_attention(q, k, v, attn_mask=kiln.ones(2, 3, dtype=kiln.bool),
                                        is_causal=True)
    with pytest.raises(kiln.KilnError, match="Expected query, key, and value to have the same dtype"):
        KF.scaled_dot_product_attention(q, k.to(kiln.float64), v)
    with pytest.raises(kiln.KilnError, match=r"scaled_dot_product_attention: query \[1, 2, 4\], "
                       r"key \[1, 3, 5\]"):
        KF.scaled_dot_product_attention(q, kiln.ones(1, 3, 5), v)
    with pytest.raises(kiln.KilnError, match="attn_mask of shape"):
        KF.scaled_dot_product_attention(q, k, v, attn_mask=kiln.ones(4, 3, dtype=kiln.bool))
    with pytest.raises(kiln.KilnError, match="Expected attn_mask dtype to be bool or float"):
        KF.scaled_dot_product_attention(q, k, v, attn_mask=kiln.ones(2, 3, dtype=kiln.int64))


def test_double_backward_through_the_fused_op_throws():
    q = kiln.randn(1, 3, 4, requires_grad=True)
    k = kiln.randn(1, 3, 4, requires_grad=True)
    v = kiln.randn(1, 3, 4, requires_grad=True)
    y = KF.scaled_dot_product_attention(q, k, v)
    (gq,) = kiln.autograd.grad(y.sum(), [q], create_graph=True)
    with pytest.raises(kiln.KilnError, match="double backward is not supported"):
        gq.sum().backward()


def test_dropout_runs_the_composite():
    kiln.manual_seed(0)
    q, k = kiln.zeros(1, 64, 4), kiln.zeros(1, 64, 4)
    v = kiln.ones(1, 64, 1)
    # Uniform weights 1/64, each kept with probability 1/2 and doubled: the row sums are
    # 2 * (kept count) / 64, about 1 on average, and differ from row to row.
    y = KF.scaled_dot_product_attention(q, k, v, dropout_p=0.5).view(64).tolist()
    assert len(set(y)) > 1
    assert abs(sum(y) / len(y) - 1.0) < 0.15
    assert KF.scaled_dot_product_attention(q, k, v, dropout_p=1.0).view(64).tolist() == [0.0] * 64


def test_small_transformer_block_trains_the_same_eagerly_and_compiled():
    # LayerNorm -> qkv linear -> causal SDPA -> out projection -> residual -> LayerNorm -> MLP.
    B, T, C, H = 2, 12, 16, 2

    def make_params():
        kiln.manual_seed(0)
        p = {
            "qkv": (kiln.randn(3 * C, C) * 0.2).requires_grad_(),
            "proj": (kiln.randn(C, C) * 0.2).requires_grad_(),
            "fc1": (kiln.randn(4 * C, C) * 0.2).requires_grad_(),
            "fc2": (kiln.randn(C, 4 * C) * 0.2).requires_grad_(),
            "head": (kiln.randn(5, C) * 0.2).requires_grad_(),
        }
        return p

    def loss_fn(x, y, p):
        h = KF.layer_norm(x, (C,))
        q, k, v = KF.linear(h, p["qkv"]).split(C, -1)
        heads = [t.reshape(B, T, H, C // H).transpose(1, 2) for t in (q, k, v)]
        a = KF.scaled_dot_product_attention(*heads, is_causal=True)
        x = x + KF.linear(a.transpose(1, 2).reshape(B, T, C), p["proj"])
        x = x + KF.linear(KF.gelu(KF.linear(KF.layer_norm(x, (C,)), p["fc1"])), p["fc2"])
        return KF.cross_entropy(KF.linear(x, p["head"]).reshape(B * T, 5), y)

    eager, comp = make_params(), make_params()
    compiled = kiln.compile(loss_fn)
    kiln.manual_seed(1)
    for step in range(4):
        x = kiln.randn(B, T, C)
        y = (kiln.rand(B * T) * 5).to(kiln.int64)
        losses = []
        for params, fn in ((eager, loss_fn), (comp, compiled)):
            loss = fn(x, y, params)
            loss.backward()
            with kiln.no_grad():
                for name in params:
                    params[name] -= 0.1 * params[name].grad
                    params[name].grad = None
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) <= 1e-5 * (1 + abs(losses[0])), (step, losses)
    for name in eager:
        assert kiln.allclose(eager[name], comp[name], rtol=1e-5, atol=1e-6), name
    assert compiled.stats()["eager_calls"] == 0
