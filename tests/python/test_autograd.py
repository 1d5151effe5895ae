"""The C++ autograd suite's behaviours seen from Python: backward and grad, hooks and their
order, retain_grad, create_graph, in-place checks, anomaly mode and checkpoint. References are
closed-form derivatives."""

import pytest

import kiln
import kiln.autograd
import kiln.utils.checkpoint


def test_backward_and_grad():
    x = kiln.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    (gx,) = kiln.autograd.grad((x ** 3).sum(), x)
    assert gx.tolist() == [3.0, 12.0, 27.0]
    assert x.grad.tolist() == [2.0, 4.0, 6.0]  # grad() leaves .grad alone
    (x * 2).sum().backward()
    assert x.grad.tolist() == [4.0, 6.0, 8.0]  # accumulates
    x.grad = None
    assert x.grad is None


def test_grad_allow_unused_and_messages():
    x = kiln.ones(2, requires_grad=True)
    z = kiln.ones(2, requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(kiln.KilnError, match="allow_unused=True"):
        kiln.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = kiln.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [2.0, 2.0] and gz is None
    gx, gz = kiln.autograd.grad(y, [x, z], materialize_grads=True)
    assert gz.tolist() == [0.0, 0.0]
    with pytest.raises(kiln.KilnError, match="grad requires non-empty inputs."):
        kiln.autograd.grad(y, [])


def test_backward_with_inputs_only_fills_those():
    a = kiln.ones(2, requires_grad=True)
    b = kiln.ones(2, requires_grad=True)
    (a * b * 3).sum().backward(inputs=[a])
    assert a.grad.tolist() == [3.0, 3.0] and b.grad is None


def test_create_graph_gives_second_derivatives():
    x = kiln.tensor([2.0], requires_grad=True)
    y = x ** 3
    (g,) = kiln.autograd.grad(y, x, create_graph=True)
    assert g.item() == 12.0 and g.requires_grad
    (g2,) = kiln.autograd.grad(g, x)
    assert g2.item() == 12.0  # 6x


def test_hooks_run_in_torch_order_and_can_replace_gradients():
    order = []
    x = kiln.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: order.append("tensor hook 1"))
    y.register_hook(lambda g: (order.append("tensor hook 2"), g * 10)[1])
    y.grad_fn.register_prehook(lambda gouts: order.append("prehook"))
    y.grad_fn.register_hook(lambda gins, gouts: order.append("posthook"))
    x.register_post_accumulate_grad_hook(lambda p: order.append(f"post acc {p.grad.tolist()}"))
    y.sum().backward()
    assert order == ["tensor hook 1", "tensor hook 2", "prehook", "posthook",
                     "post acc [20.0, 20.0]"]
    assert x.grad.tolist() == [20.0, 20.0]


def test_removed_hooks_do_not_run():
    calls = []
    x = kiln.ones(2, requires_grad=True)
    h = x.register_hook(lambda g: calls.append(1))
    h.remove()
    y = x * 2
    h2 = y.grad_fn.register_prehook(lambda g: calls.append(2))
    h2.remove()
    y.sum().backward()
    assert calls == []


def test_retain_grad():
    x = kiln.ones(2, requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 6.0]


def test_grad_fn_graph_objects():
    x = kiln.ones(2, requires_grad=True)
    y = (x * 2).exp()
    fn = y.grad_fn
    assert fn is y.grad_fn and "Exp" in fn.name()
    (mul, nr), = fn.next_functions
    assert "Mul" in mul.name() and nr == 0
    acc = mul.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    fn.metadata["note"] = 1
    assert y.grad_fn.metadata == {"note": 1}
    assert x.grad_fn is None and x.is_leaf and not y.is_leaf


def test_in_place_on_saved_tensor_is_detected():
    x = kiln.ones(3, requires_grad=True)
    y = x * 1
    z = y.sin()  # saves its input
    y.add_(1)
    with pytest.raises(kiln.KilnError, match="modified by an inplace operation"):
        z.sum().backward()


def test_requires_grad_flags():
    x = kiln.ones(2)
    assert x.requires_grad_() is x and x.requires_grad
    y = x * 2
    with pytest.raises(kiln.KilnError):
        y.requires_grad = False
    x.requires_grad = False
    assert not x.requires_grad


def test_no_grad_and_enable_grad_as_context_managers_and_decorators():
    x = kiln.ones(2, requires_grad=True)
    with kiln.no_grad():
        assert not (x * 2).requires_grad
        with kiln.enable_grad():
            assert (x * 2).requires_grad
    assert (x * 2).requires_grad

    @kiln.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad and kiln.is_grad_enabled()
    with kiln.set_grad_enabled(False):
        assert not kiln.is_grad_enabled()
    assert kiln.is_grad_enabled()


def test_anomaly_mode_names_the_forward_op():
    x = kiln.tensor([0.0], requires_grad=True)
    with pytest.warns(UserWarning), kiln.autograd.detect_anomaly():
        y = x.sqrt() * 0  # the gradient of sqrt at 0 times 0 is nan
        with pytest.raises(kiln.KilnError, match="sqrt"):
            y.sum().backward()


def test_checkpoint_with_non_tensor_arguments_and_results():
    calls = []

    def block(x, scale, tag):
        calls.append(tag)
        return {"out": (x * scale).exp(), "tag": tag}

    x = kiln.tensor([0.0, 1.0], requires_grad=True)
    out = kiln.utils.checkpoint.checkpoint(block, x, 2.0, "b1")
    assert out["tag"] == "b1" and not out["out"].grad_fn is None
    out["out"].sum().backward()
    import math
    assert x.grad.tolist() == pytest.approx([2.0, 2.0 * math.exp(2.0)])
    assert calls == ["b1", "b1"]  # forward, then the recomputation in backward


def test_backward_twice_without_retain_graph_fails_cleanly():
    x = kiln.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(kiln.KilnError):
        y.backward()
    (x * 3).sum().backward()  # the engine is still usable
    assert x.grad.tolist() == [5.0, 5.0]


def test_anomaly_mode_names_the_python_line():
    import inspect
    x = kiln.tensor([0.0], requires_grad=True)
    with pytest.warns(UserWarning), kiln.autograd.detect_anomaly():
        line = inspect.currentframe().f_lineno + 1
        y = x.sqrt() * 0  # the gradient of sqrt at 0 times 0 is nan: this line is named
        with pytest.raises(kiln.KilnError, match=f"test_autograd.py:{line}"):
            y.sum().backward()


def test_autograd_backward_with_inputs_and_several_roots():
    a = kiln.ones(2, requires_grad=True)
    b = kiln.ones(2, requires_grad=True)
    y1, y2 = (a * b * 3).sum(), (a * 5).sum()
    kiln.autograd.backward([y1, y2], inputs=[a])
    assert a.grad.tolist() == [8.0, 8.0] and b.grad is None
