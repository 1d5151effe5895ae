"""In-place ops on views (CopySlices), `.data`, `detach_`, `_is_view`/`_base`, and Kiln's
warnings as Python warnings. References are closed-form derivatives, or PyTorch's results where
torch is importable."""

import subprocess
import sys
import warnings

import pytest

import kiln


def test_setitem_on_a_non_leaf_differentiates_through_the_base():
    x = kiln.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    w = kiln.tensor([5.0, 6.0], requires_grad=True)
    b = x * 2
    b[:2] *= w  # an in-place op on a view
    assert b.grad_fn.name() == "CopySlices"
    (b * kiln.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [10.0, 24.0, 6.0, 8.0]
    assert w.grad.tolist() == [2.0, 8.0]


def test_writing_a_gradient_carrying_value_into_a_plain_buffer():
    x = kiln.tensor([7.0, 9.0], requires_grad=True)
    buf = kiln.zeros(4)
    buf[1:3] = x
    assert buf.requires_grad and not buf.is_leaf
    (buf * kiln.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [2.0, 3.0]


def test_views_of_leaves_are_refused_as_in_torch():
    x = kiln.ones(3, requires_grad=True)
    with pytest.raises(kiln.KilnError, match="a view of a leaf Variable that requires grad"):
        x[:2].mul_(2)
    with kiln.no_grad():
        x[:2].mul_(2)
    assert x.tolist() == [2.0, 2.0, 1.0]


def test_is_view_base_data_and_detach_():
    a = kiln.zeros(2, 3)
    v = a[1]
    assert v._is_view() and not a._is_view()
    assert v[0:2]._base is a
    assert a._base is None
    d = a.data
    assert not d.requires_grad and d.data_ptr() == a.data_ptr()
    w = kiln.ones(2, requires_grad=True)
    (w * 3).sum().backward()
    w.data = kiln.tensor([4.0, 5.0, 6.0])
    assert w.tolist() == [4.0, 5.0, 6.0] and w.requires_grad
    assert w.grad.tolist() == [3.0, 3.0]
    y = w * 2
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad


def test_backward_inputs_accumulates_into_a_non_leaf():
    a = kiln.tensor([1.0, 2.0], requires_grad=True)
    b = kiln.tensor([3.0, 4.0], requires_grad=True)
    h = a * b
    (h * h).sum().backward(inputs=[a, h])
    assert a.grad.tolist() == [18.0, 64.0]
    assert b.grad is None
    assert h.grad.tolist() == [6.0, 16.0]


def test_non_leaf_grad_access_is_a_user_warning():
    y = kiln.ones(1, requires_grad=True) * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="retain_grad"):
            y.grad


def test_create_graph_backward_warns_once_per_process():
    # A fresh interpreter: the warning is TORCH_WARN_ONCE, process-wide.
    code = (
        "import warnings, kiln\n"
        "warnings.simplefilter('always')\n"
        "x = kiln.ones(2, requires_grad=True)\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    (x * x).sum().backward(create_graph=True)\n"
        "    (x * x).sum().backward(create_graph=True)\n"
        "msgs = [str(w.message) for w in seen if 'reference cycle' in str(w.message)]\n"
        "assert len(msgs) == 1, msgs\n"
        "assert seen[0].filename == '<string>', seen[0].filename\n"
        "assert x.grad.requires_grad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_matches_torch_on_a_chain_of_views():
    torch = pytest.importorskip("torch")

    def run(m, x0, w0):
        x = m.tensor(x0, requires_grad=True)
        w = m.tensor(w0, requires_grad=True)
        b = x * 1.5
        b.t()[2][:2].mul_(w)
        b[:, 0].add_(w.sum())
        (b * b).sum().backward()
        return b.tolist(), x.grad.tolist(), w.grad.tolist()

    x0 = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [2.0, 1.0, 0.5]]
    w0 = [0.3, -1.2]
    got, want = run(kiln, x0, w0), run(torch, x0, w0)
    for g, e in zip(got, want):
        assert kiln.allclose(kiln.tensor(g), kiln.tensor(e), rtol=1e-6, atol=1e-6)


def test_compiled_writes_through_views_match_eager():
    def step(x, w):
        b = x * 2
        b[:, :2] *= w
        cache = kiln.zeros(3, 4)
        cache[1] = b[0]
        return (b.exp() * x).sum() + (cache * cache).sum()

    compiled = kiln.compile(step)
    x0, w0 = kiln.randn(3, 4), kiln.randn(3, 2)
    x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
    step(x, w).backward()
    for _ in range(2):
        xc, wc = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        loss = compiled(xc, wc)
        loss.backward()
        assert kiln.allclose(loss, step(x0, w0), rtol=1e-5, atol=1e-5)
        assert kiln.allclose(xc.grad, x.grad, rtol=1e-5, atol=1e-5)
        assert kiln.allclose(wc.grad, w.grad, rtol=1e-5, atol=1e-5)
    assert compiled.stats()["eager_calls"] == 0 and compiled.stats()["compiles"] == 1
