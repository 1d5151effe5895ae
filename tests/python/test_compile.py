"""kiln.compile on Python functions: equal to eager, graph breaks at Python Functions,
guards on Python scalars, recompile log lines, stats and dumps."""

import pytest

import kiln
import kiln.nn.functional as F
from kiln.autograd import Function


def _params():
    kiln.manual_seed(0)
    w = kiln.randn(8, 4, requires_grad=True)
    b = kiln.zeros(4, requires_grad=True)
    return w, b


def test_compiled_equals_eager_forward_and_backward():
    w, b = _params()
    x = kiln.randn(16, 8)
    y = kiln.tensor([i % 4 for i in range(16)])

    def loss_fn(x, y):
        return F.cross_entropy(F.gelu(x @ w + b), y)

    eager = loss_fn(x, y)
    eager.backward()
    gw, gb = w.grad.reshape(-1).tolist(), b.grad.tolist()
    w.grad, b.grad = None, None
    compiled = kiln.compile(loss_fn)
    got = compiled(x, y)
    got.backward()
    assert got.item() == pytest.approx(eager.item(), rel=1e-6)
    assert w.grad.reshape(-1).tolist() == pytest.approx(gw, rel=1e-5, abs=1e-7)
    assert b.grad.tolist() == pytest.approx(gb, rel=1e-5, abs=1e-7)
    stats = compiled.stats()
    assert stats["compiles"] == 1 and stats["forward_kernels"] >= 1
    compiled(x, y)
    assert compiled.stats()["cache_hits"] >= 1 and compiled.stats()["compiles"] == 1
    assert "graph" in compiled.dump("forward")


def test_decorator_forms_and_structured_results():
    @kiln.compile
    def f(a, pair, opts):
        s, t = pair
        return {"sum": a + s * t, "scale": opts["scale"], "list": [a * opts["scale"]]}

    a = kiln.ones(3)
    out = f(a, (kiln.ones(3), kiln.full((3,), 2.0)), {"scale": 4})
    assert out["sum"].tolist() == [3.0] * 3 and out["scale"] == 4
    assert out["list"][0].tolist() == [4.0] * 3

    @kiln.compile(backend="interpreter")
    def g(x):
        return x.exp()

    assert g(kiln.zeros(2)).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="unknown backend"):
        kiln.compile(lambda x: x, backend="tpu")(kiln.ones(1))


def test_python_scalars_are_guards(capfd):
    calls = []

    @kiln.compile(name="scaled")
    def scaled(x, k):
        calls.append(k)
        if k > 2:  # Python control flow on a scalar, specialized at trace time
            return x * k
        return x - k

    x = kiln.ones(2)
    old = kiln.set_logs(["recompiles"])
    try:
        assert scaled(x, 3).tolist() == [3.0, 3.0]
        assert scaled(x, 3).tolist() == [3.0, 3.0]
        assert scaled(x, 1).tolist() == [0.0, 0.0]
        assert scaled(x, 1.0).tolist() == [0.0, 0.0]  # a float is another guard than an int
    finally:
        kiln.set_logs(old)
    assert scaled.stats()["compiles"] == 3
    err = capfd.readouterr().err
    assert "[kiln:recompiles] scaled: recompiling because arguments" in err
    assert "changed from 3 to 1" in err


def test_python_function_is_a_graph_break():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    def f(x):
        return Square.apply(x.exp()).sum()

    x = kiln.tensor([0.5, 1.0], requires_grad=True)
    eager = f(x)
    eager.backward()
    ref = x.grad.tolist()
    x.grad = None
    cf = kiln.compile(f)
    for _ in range(2):
        out = cf(x)
        out.backward()
        assert out.item() == pytest.approx(eager.item(), rel=1e-6)
        assert x.grad.tolist() == pytest.approx(ref, rel=1e-6)
        x.grad = None
    assert cf.stats()["fallback_ops"] >= 1


def test_exception_in_compiled_function_propagates():
    @kiln.compile
    def bad(x):
        raise ValueError("inside the traced function")

    with pytest.raises(ValueError, match="inside the traced function"):
        bad(kiln.ones(1))


def test_dumps_name_the_python_line_of_each_op():
    w = kiln.ones(3, 2, requires_grad=True)

    @kiln.compile
    def f(x):
        h = x @ w  # the line the dump must name
        return h.relu().sum()

    f(kiln.ones(4, 3)).backward()
    import inspect
    line = inspect.getsourcelines(f.__wrapped__)[1] + 2  # the decorator, def, then this line
    dump = f.dump("traced")
    assert f"test_compile.py:{line} in f" in dump, dump


def test_debug_dir_receives_every_stage_as_in_cpp(tmp_path):
    @kiln.compile(debug_dir=str(tmp_path), name="dbg")
    def f(x):
        return (x * 2).exp().sum()

    x = kiln.ones(3, requires_grad=True)
    f(x).backward()
    names = {p.name for p in tmp_path.rglob("*") if p.is_file()}
    assert {"summary.txt", "kernels.kir", "repro.kir"} <= names, names
    assert any(n.endswith(".ir") for n in names)


def _close(got, want):
    return got.reshape(-1).tolist() == pytest.approx(want.reshape(-1).tolist(), rel=1e-5,
                                                     abs=1e-6)


def test_dynamic_true_compiles_once_and_shape_reads_specialize(capfd):
    kiln.manual_seed(0)
    w = kiln.randn(6, 5)

    @kiln.compile(dynamic=True)
    def head(x):
        return F.gelu(x @ w) * 0.5

    for rows in (8, 3, 17):
        x = kiln.randn(rows, 6)
        got = head(x)
        assert tuple(got.shape) == (rows, 5)
        assert _close(got, F.gelu(x @ w) * 0.5)
    assert head.stats()["compiles"] == 1

    @kiln.compile(dynamic=True, name="mean_rows")
    def mean_rows(x):
        return x.sum(0) / x.size(0)  # a Python int: the plan specializes dim 0 to it

    old = kiln.set_logs(["recompiles"])
    try:
        for rows, cols in ((4, 3), (4, 7), (6, 3)):
            x = kiln.randn(rows, cols)
            assert _close(mean_rows(x), x.mean(0))
    finally:
        kiln.set_logs(old)
    assert mean_rows.stats()["compiles"] == 2
    assert "mean_rows: input 0 dim 0: specialized to 4: a size read as an integer" in (
        capfd.readouterr().err)

    @kiln.compile(dynamic=True)
    def mean_all(x):
        return x.sum(0) / x.shape[0]  # only dim 0 is read as an integer: dim 1 stays symbolic

    for rows, cols in ((4, 3), (4, 7), (6, 3)):
        x = kiln.randn(rows, cols)
        assert _close(mean_all(x), x.mean(0))
    assert mean_all.stats()["compiles"] == 2
    with pytest.raises(TypeError, match="dynamic must be None, True or False"):
        kiln.compile(lambda x: x, dynamic="yes")


def test_mark_dynamic_makes_a_dim_symbolic_from_the_first_call():
    @kiln.compile
    def f(x):
        return x.exp() + 1.0

    for rows in (5, 9, 12):
        x = kiln.randn(rows, 3)
        kiln.mark_dynamic(x, 0)
        assert _close(f(x), x.exp() + 1.0)
    assert f.stats()["compiles"] == 1
    with pytest.raises(kiln.KilnError, match="mark_dynamic"):
        kiln.mark_dynamic(kiln.ones(2), 3)


def test_shapes_inside_a_symbolic_trace_are_sym_ints():
    seen = []

    @kiln.compile(dynamic=True)
    def reshapes(x):
        n = x.shape[0]
        # Comparisons with 0 and 1 follow from the symbol (it is at least 2): no read.
        seen.append((type(n).__name__, str(n), n == 1, n > 1, x.size(2) != 0))
        return (x.view(n, -1) * 2.0, x.reshape(x.size(0) * x.size(1), -1).sum(1),
                x.flatten(0, 1) + 1.0, x.numel() * 0 + x.sum())

    for shape in ((4, 6, 2), (3, 5, 7), (9, 2, 3)):
        x = kiln.randn(*shape)
        a, b, c, d = reshapes(x)
        assert _close(a, x.reshape(shape[0], -1) * 2.0)
        assert _close(b, x.reshape(shape[0] * shape[1], -1).sum(1))
        assert _close(c, x.reshape(shape[0] * shape[1], shape[2]) + 1.0)
        assert _close(d, x.sum())
    assert reshapes.stats()["compiles"] == 1
    assert seen == [("SymInt", "s0", False, True, True)]
    assert type(kiln.ones(2, 3).shape[0]) is int  # outside a trace: ints


def test_a_sym_int_read_as_an_integer_specializes(capfd):
    @kiln.compile(dynamic=True, name="halves")
    def halves(x):
        n = int(x.shape[1])  # read as an integer: dim 1 is specialized
        return x.view(x.shape[0], 2, n // 2).sum(2)

    old = kiln.set_logs(["recompiles"])
    try:
        for shape in ((3, 4), (5, 4), (3, 6)):
            x = kiln.randn(*shape)
            assert _close(halves(x), x.view(shape[0], 2, shape[1] // 2).sum(2))
    finally:
        kiln.set_logs(old)
    assert halves.stats()["compiles"] == 2
    assert "halves: input 0 dim 1: specialized to 4: a size read as an integer" in (
        capfd.readouterr().err)


def test_a_comparison_of_sizes_is_a_guard_not_a_specialization(capfd):
    # As torch's guards: the branch taken at the traced size becomes a fact of the plan
    # (s0 >= 4), and the plan serves every size that satisfies it.
    @kiln.compile(dynamic=True, name="branchy")
    def branchy(x):
        if x.shape[0] >= 4:
            return x[:4] * 2.0 + x[-1]
        return x * 3.0

    old = kiln.set_logs(["recompiles"])
    try:
        for rows in (6, 5, 9, 3, 2, 4):
            x = kiln.randn(rows, 7)
            want = x[:4] * 2.0 + x[-1] if rows >= 4 else x * 3.0
            assert _close(branchy(x), want)
    finally:
        kiln.set_logs(old)
    # One plan for 6, 5, 9 and 4 rows (s0 >= 4), one for 3 and 2 (s0 < 4).
    assert branchy.stats()["compiles"] == 2
    err = capfd.readouterr().err
    assert "but the graph expects s0 >= 4" in err
    assert "specialized" not in err


def test_a_slice_bound_read_from_a_size_stays_symbolic(capfd):
    # pos[:x.shape[0]] as a learned positional table is written: the bound is the symbol, so
    # one plan serves every length up to the table's 16 rows (the fact s0 <= 16); past them
    # the slice clamps, which takes a second plan.
    pos = kiln.randn(16, 3)

    @kiln.compile(dynamic=True, name="table_rows")
    def table_rows(x):
        return pos[:x.shape[0]] * 2.0 + x.sum()

    old = kiln.set_logs(["recompiles"])
    try:
        for rows in (5, 9, 16, 3, 20, 30):
            x = kiln.randn(rows, 3)
            want = pos[:min(rows, 16)] * 2.0 + x.sum()
            assert _close(table_rows(x), want)
    finally:
        kiln.set_logs(old)
    assert table_rows.stats()["compiles"] == 2
    err = capfd.readouterr().err
    assert "but the graph expects s0 <= 16" in err
    assert "specialized" not in err


def test_arange_over_a_symbolic_size_keeps_it():
    @kiln.compile(dynamic=True)
    def positions(x):
        return x + kiln.arange(x.shape[1]) * 0.5 + kiln.arange(0, x.shape[1], dtype=kiln.float32)

    for shape in ((3, 4), (5, 7), (2, 9)):
        x = kiln.randn(*shape)
        want = x + kiln.arange(shape[1]) * 0.5 + kiln.arange(0, shape[1], dtype=kiln.float32)
        assert _close(positions(x), want)
    assert positions.stats()["compiles"] == 1


def test_a_training_step_written_with_x_shape_compiles_once_for_every_size():
    kiln.manual_seed(3)
    d, heads = 16, 2
    wq = (kiln.randn(d, d) * d ** -0.5).requires_grad_()
    wo = (kiln.randn(d, d) * d ** -0.5).requires_grad_()

    def step(x):
        b, s, _ = x.shape
        q = F.linear(x, wq).view(b, s, heads, d // heads).transpose(1, 2)
        att = F.softmax(q @ q.transpose(-2, -1) * (d // heads) ** -0.5, dim=-1) @ q
        y = F.linear(att.transpose(1, 2).reshape(b, s, d), wo)
        return F.mse_loss(y, x)

    compiled = kiln.compile(step)
    for b, s in ((2, 5), (3, 7), (4, 6), (6, 3)):
        x = kiln.randn(b, s, d)
        loss = compiled(x)
        got = kiln.autograd.grad(loss, [wq, wo])
        want_loss = step(x)
        want = kiln.autograd.grad(want_loss, [wq, wo])
        assert _close(loss, want_loss)
        for g, w in zip(got, want):
            assert _close(g, w)
    # The static first call, then one symbolic plan for the batch and sequence sizes.
    assert compiled.stats()["compiles"] == 2


def test_factories_take_symbolic_sizes():
    @kiln.compile(dynamic=True)
    def shifted(x):
        b, s = x.shape
        return x + kiln.full((b, 1), 2.0) + kiln.zeros(b, 1) - kiln.ones(x.shape)

    for shape in ((4, 6), (3, 9), (7, 2)):
        x = kiln.randn(*shape)
        assert _close(shifted(x), x + 1.0)
    assert shifted.stats()["compiles"] == 1


def test_float_arithmetic_on_a_sym_int_reads_it():
    seen = []

    @kiln.compile(dynamic=True)
    def scaled(x):
        n = x.shape[0]
        seen.append((n * 0.5, 0.5 * n, n / 2, 3 / n))  # each reads n: dim 0 is specialized
        return x * 1.0

    for rows in (4, 6):
        scaled(kiln.randn(rows, 3))
    assert seen == [(2.0, 2.0, 2.0, 0.75), (3.0, 3.0, 3.0, 0.5)]
    assert scaled.stats()["compiles"] == 2
