"""kiln.optim against float64 loops of torch.optim's rules (always) and against torch.optim
itself (where torch is importable): parameter groups, learning-rate schedules through
param_groups, skipped parameters, state, closures and errors."""

import math

import pytest

import kiln

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not importable")


def make_params(dtype=kiln.float64):
    kiln.manual_seed(0)
    return [kiln.randn(n, dtype=dtype).requires_grad_() for n in (1, 17, 40000)]


def grads_for(params, step):
    kiln.manual_seed(100 + step)
    return [kiln.randn(*p.shape, dtype=p.dtype) for p in params]


def adam_reference(p, g, m, v, t, lr, b1, b2, eps, wd, decoupled):
    """One step of torch.optim.Adam(W)'s rule on Python floats, in place on lists."""
    for k in range(len(p)):
        d = g[k]
        if decoupled:
            p[k] *= 1 - lr * wd
        else:
            d += wd * p[k]
        m[k] = b1 * m[k] + (1 - b1) * d
        v[k] = b2 * v[k] + (1 - b2) * d * d
        m_hat = m[k] / (1 - b1 ** t)
        v_hat = v[k] / (1 - b2 ** t)
        p[k] -= lr * m_hat / (math.sqrt(v_hat) + eps)


@pytest.mark.parametrize("cls,decoupled", [(kiln.optim.Adam, False), (kiln.optim.AdamW, True)])
@pytest.mark.parametrize("fused", [None, False])
def test_adam_follows_torchs_rule_with_a_schedule_and_a_skipped_parameter(cls, decoupled, fused):
    params = make_params()
    opt = cls(params, lr=0.01, betas=(0.8, 0.99), weight_decay=0.05, fused=fused)
    expected = [p.tolist() for p in params]
    m = [[0.0] * len(e) for e in expected]
    v = [[0.0] * len(e) for e in expected]
    steps = [0] * len(params)
    for step in range(4):
        lr = 0.01 / (step + 1)
        opt.param_groups[0]["lr"] = lr
        grads = grads_for(params, step)
        for i, (p, g) in enumerate(zip(params, grads)):
            p.grad = None if (step % 2 == 1 and i == 1) else g
        opt.step()
        for i, g in enumerate(grads):
            if step % 2 == 1 and i == 1:
                continue
            steps[i] += 1
            adam_reference(expected[i], g.tolist(), m[i], v[i], steps[i], lr, 0.8, 0.99, 1e-8,
                           0.05, decoupled)
        for p, e in zip(params, expected):
            assert p.tolist() == pytest.approx(e, rel=1e-10, abs=1e-12)
    state = opt.state[params[1]]
    assert state["step"].item() == 2
    assert state["exp_avg"].tolist() == pytest.approx(m[1], rel=1e-10, abs=1e-12)
    assert opt.last_step_compiled == (fused is None and kiln._C._with_llvm)


def test_sgd_groups_keep_their_own_options():
    a, b = kiln.zeros(3, requires_grad=True), kiln.zeros(3, requires_grad=True)
    opt = kiln.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    for _ in range(2):
        a.grad = kiln.ones(3)
        b.grad = kiln.ones(3)
        opt.step()
    assert a.tolist() == pytest.approx([-0.2] * 3)
    # b: buffer 1 then 0.9 * 1 + 1 = 1.9; steps of 0.5 and 0.95
    assert b.tolist() == pytest.approx([-1.45] * 3)
    assert opt.state[b]["momentum_buffer"].tolist() == pytest.approx([1.9] * 3)
    assert a not in opt.state


def test_closure_zero_grad_and_errors():
    w = kiln.zeros(2, requires_grad=True)
    opt = kiln.optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 2
    assert w.tolist() == [0.5, 0.5]
    opt.zero_grad()
    assert w.grad is None
    with pytest.raises(ValueError, match="empty parameter list"):
        kiln.optim.Adam([])
    with pytest.raises(ValueError, match="more than one parameter group"):
        kiln.optim.Adam([{"params": [w]}, {"params": [w]}])
    with pytest.raises(kiln.KilnError, match="Invalid learning rate"):
        kiln.optim.SGD([w], lr=-1)
    with pytest.raises(kiln.KilnError, match="amsgrad=True is not supported"):
        kiln.optim.Adam([w], amsgrad=True)
    adam = kiln.optim.Adam([w])
    adam.param_groups[0]["betas"] = (0.5, 0.5)
    w.grad = kiln.ones(2)
    with pytest.raises(kiln.KilnError, match="only 'lr' may change"):
        adam.step()


def test_adam_trains_a_linear_model():
    kiln.manual_seed(3)
    x = kiln.randn(64, 4)
    y = x @ kiln.randn(4, 1)
    w = kiln.zeros(4, 1, requires_grad=True)
    opt = kiln.optim.AdamW([w], lr=0.1, weight_decay=0.0)
    losses = []
    for _ in range(150):
        opt.zero_grad()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 1e-3


@needs_torch
@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.01)),
    ("AdamW", dict(lr=0.01)),
])
def test_matches_torch_optim(name, kwargs):
    params = make_params(kiln.float32)
    theirs = [torch.tensor(p.tolist(), requires_grad=True) for p in params]
    ours_opt = getattr(kiln.optim, name)(params, **kwargs)
    torch_opt = getattr(torch.optim, name)(theirs, **kwargs)
    for step in range(3):
        for p, t, g in zip(params, theirs, grads_for(params, step)):
            p.grad = g
            t.grad = torch.tensor(g.tolist())
        ours_opt.step()
        torch_opt.step()
    for p, t in zip(params, theirs):
        assert p.tolist() == pytest.approx(t.detach().tolist(), rel=1e-5, abs=1e-6)


def test_the_compiled_step_is_written_to_the_debug_dir(tmp_path):
    """KILN_DEBUG_DIR/optim/ holds the optimizer kernel's IR (and its LLVM IR and assembly where
    the step compiled), as compile() writes its kernels."""
    import os
    import subprocess
    import sys

    code = ("import kiln\n"
            "p = kiln.zeros(100, requires_grad=True)\n"
            "p.grad = kiln.ones(100)\n"
            "opt = kiln.optim.Adam([p])\n"
            "opt.step()\n"
            "print(opt.last_step_compiled)\n")
    env = dict(os.environ, KILN_DEBUG_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    kir = (tmp_path / "optim" / "adam_step_f32.kir").read_text()
    assert kir.startswith("kernel adam_step_f32(%param: f32[?] out, %grad: f32[?]")
    assert "sqrt(" in kir
    if out == "True":
        assert (tmp_path / "optim" / "adam_step_f32.s").exists()


def schedule(make, epochs=8, lr=0.1):
    w = kiln.zeros(1, requires_grad=True)
    opt = kiln.optim.SGD([w], lr=lr)
    sched = make(opt)
    lrs = []
    for _ in range(epochs):
        lrs.append(opt.param_groups[0]["lr"])
        w.grad = kiln.ones(1)
        opt.step()
        sched.step()
    return lrs, sched, w


def test_schedulers_follow_their_closed_forms():
    S = kiln.optim.lr_scheduler
    lrs, sched, w = schedule(lambda o: S.StepLR(o, step_size=3, gamma=0.5))
    assert lrs == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025])
    assert sched.get_last_lr() == pytest.approx([0.025])  # epoch 8
    # the optimizer used each epoch's rate: w moved by their sum
    assert w.item() == pytest.approx(-sum(lrs), rel=1e-6)
    lrs, _, _ = schedule(lambda o: S.MultiStepLR(o, milestones=[2, 5], gamma=0.1))
    assert lrs == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.01, 0.001, 0.001, 0.001])
    lrs, _, _ = schedule(lambda o: S.ExponentialLR(o, gamma=0.9))
    assert lrs == pytest.approx([0.1 * 0.9 ** e for e in range(8)])
    lrs, _, _ = schedule(lambda o: S.LinearLR(o, start_factor=0.5, total_iters=4))
    assert lrs == pytest.approx([0.05, 0.0625, 0.075, 0.0875, 0.1, 0.1, 0.1, 0.1])
    lrs, _, _ = schedule(lambda o: S.CosineAnnealingLR(o, T_max=4, eta_min=0.02))
    assert lrs == pytest.approx([0.02 + 0.08 * (1 + math.cos(math.pi * e / 4)) / 2
                                 for e in range(8)])
    lrs, _, _ = schedule(lambda o: S.LambdaLR(o, lambda e: 1.0 / (e + 1)))
    assert lrs == pytest.approx([0.1 / (e + 1) for e in range(8)])
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        schedule(lambda o: S.LinearLR(o, start_factor=0))


@needs_torch
@pytest.mark.parametrize("name,kwargs", [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5], gamma=0.1)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("LinearLR", dict(start_factor=0.25, total_iters=5)),
    ("CosineAnnealingLR", dict(T_max=6, eta_min=0.01)),
])
def test_schedulers_match_torch(name, kwargs):
    ours, _, _ = schedule(lambda o: getattr(kiln.optim.lr_scheduler, name)(o, **kwargs), 12)
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.1)
    sched = getattr(torch.optim.lr_scheduler, name)(opt, **kwargs)
    theirs = []
    for _ in range(12):
        theirs.append(opt.param_groups[0]["lr"])
        p.grad = torch.ones(1)
        opt.step()
        sched.step()
    assert ours == pytest.approx(theirs, rel=1e-9)
