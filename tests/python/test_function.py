"""kiln.autograd.Function and Python exceptions crossing the engine."""

import threading

import pytest

import kiln
from kiln.autograd import Function


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class ScaleWithArgs(Function):
    @staticmethod
    def forward(ctx, x, factor, tag):
        ctx.factor = factor
        ctx.tag = tag
        return x * factor, x.argmax()

    @staticmethod
    def backward(ctx, grad, grad_index):
        assert ctx.tag == "t"
        return grad * ctx.factor, None, None


def test_function_forward_and_backward():
    x = kiln.tensor([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    y.sum().backward()
    import math
    assert x.grad.tolist() == pytest.approx([1.0, math.e])


def test_non_tensor_arguments_and_several_outputs():
    x = kiln.tensor([1.0, 3.0], requires_grad=True)
    y, idx = ScaleWithArgs.apply(x, 4.0, "t")
    assert idx.item() == 1 and not idx.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_needs_input_grad_and_mark_non_differentiable():
    seen = {}

    class F(Function):
        @staticmethod
        def forward(ctx, a, b):
            seen["needs"] = ctx.needs_input_grad
            out = a * b
            mask = a > 0
            ctx.mark_non_differentiable(mask)
            return out, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            return g, None

    a = kiln.ones(2, requires_grad=True)
    out, mask = F.apply(a, kiln.ones(2))
    assert seen["needs"] == (True, False)
    assert not mask.requires_grad and out.requires_grad


def test_mark_dirty_rebases_the_input():
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2  # a made-up derivative the test can see

    a = kiln.ones(2, requires_grad=True)
    b = a * 1
    c = AddOneInPlace.apply(b)
    assert c is b and b.grad_fn.name() == "AddOneInPlaceBackward"
    c.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
    with pytest.raises(kiln.KilnError, match="leaf Variable that requires grad"):
        AddOneInPlace.apply(kiln.ones(2, requires_grad=True))


def test_mark_dirty_on_a_view_rewrites_the_base_as_in_torch():
    class MulInPlace(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(k)
            x.mul_(k)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (k,) = ctx.saved_tensors
            return g * k, None

    a = kiln.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = a * 2
    v = b[1:3]
    MulInPlace.apply(v, kiln.tensor([10.0, 100.0]))
    assert b.grad_fn.name() == "CopySlices"
    assert b.tolist() == [2.0, 40.0, 600.0, 8.0]
    (b * kiln.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert a.grad.tolist() == [2.0, 40.0, 600.0, 8.0]  # 2 * weight * (k on the view)

    class TwoOutputs(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            return g1

    with pytest.raises(kiln.KilnError, match="cannot return more than one Tensor"):
        TwoOutputs.apply((a * 1)[:2])


def test_set_materialize_grads():
    got = {}

    class Two(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got["g2"] = g2
            return g1, None

    x = kiln.ones(2, requires_grad=True)
    Two.apply(x, True)[0].sum().backward()
    assert got["g2"].tolist() == [0.0, 0.0]
    Two.apply(x, False)[0].sum().backward()
    assert got["g2"] is None


class MyError(Exception):
    pass


def test_exception_in_function_backward_comes_back_with_its_type():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise MyError("from backward")

    x = kiln.ones(2, requires_grad=True)
    with pytest.raises(MyError, match="from backward") as info:
        Bad.apply(x).sum().backward()
    assert any("backward" in str(entry.name) for entry in info.traceback)
    (x * 2).sum().backward()  # the engine is usable afterwards
    assert x.grad.tolist() == [2.0, 2.0]


def test_exception_in_hook_comes_back_with_its_type():
    x = kiln.ones(2, requires_grad=True)
    y = x * 2

    def hook(g):
        raise KeyError("hook failed")

    y.register_hook(hook)
    with pytest.raises(KeyError, match="hook failed"):
        y.sum().backward()


def test_hook_returning_a_non_tensor_is_a_type_error():
    x = kiln.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: "nope")
    with pytest.raises(TypeError, match="must return None or a Tensor"):
        y.sum().backward()


def test_backward_from_several_threads_at_once():
    errors = []
    results = []

    def work(seed):
        try:
            x = kiln.full((64,), float(seed), requires_grad=True)
            for _ in range(50):
                y = Exp.apply(x * 0.01)
                y.register_hook(lambda g: g * 1)
                (y * y).sum().backward()
            results.append((seed, x.grad[0].item()))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    import math
    for seed, g in results:
        # d/dx sum(exp(0.01x)^2) = 0.02 exp(0.02x), accumulated 50 times
        assert g == pytest.approx(50 * 0.02 * math.exp(0.02 * seed), rel=1e-4)
