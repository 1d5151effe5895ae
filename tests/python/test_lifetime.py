"""Reference cycles through hooks are collected, and nothing leaks over many iterations:
measured with the package's live-object counters, not process memory."""

import gc
import weakref

import kiln
from kiln.autograd import Function


def test_hook_cycle_through_a_tensor_is_collected(live):
    before = live()
    x = kiln.ones(3, requires_grad=True)
    x.register_hook(lambda g: g * x)  # the hook refers to its own tensor
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None
    after = live()
    assert after["tensors"] == before["tensors"] and after["wrappers"] == before["wrappers"]


def test_hook_cycle_through_a_grad_fn_is_collected(live):
    before = live()
    x = kiln.ones(3, requires_grad=True)
    y = x * 2
    fn = y.grad_fn
    fn.register_prehook(lambda g: fn)  # the hook refers to its own Node object
    del y, fn, x
    after = live()
    assert after == before


def test_no_leaks_over_ten_thousand_iterations(live):
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 + x * 0

    w = kiln.ones(8, requires_grad=True)
    before = None
    for i in range(10_001):
        if i == 1:
            before = live()  # after the first step made w.grad
        y = Double.apply(w * 1.5)
        y.register_hook(lambda g: g)
        loss = (y * y).sum()
        loss.backward()
        seen = (loss.grad_fn, w.grad, repr(loss) if i % 1000 == 0 else None)
        del y, loss, seen
    with kiln.no_grad():
        w.grad.zero_()
    after = live()
    assert after == before, (before, after)


def test_compiled_calls_leave_no_reference_cycles(live):
    """Tensors a compiled call touched are freed when the last reference goes, without waiting
    for the garbage collector (a cycle through the argument flattening once held them)."""
    before = live()
    gc.disable()
    try:
        w = kiln.ones(4, requires_grad=True)
        f = kiln.compile(lambda x, d: (x * w).sum() * d["k"])
        for _ in range(3):
            f(kiln.ones(4), {"k": 2.0}).backward()
        del f, w
        after = kiln._C._live_objects()  # deliberately without gc.collect()
    finally:
        gc.enable()
    assert after == before
