#!/usr/bin/env python3
"""The benchmark suite's workloads in PyTorch eager and torch.compile.

Each workload is bench/suite/workloads.cpp written again with torch: the same shapes, the same
ops, the same step (forward, backward, then SGD where the Kiln workload has one). The results
are written as Google Benchmark JSON with the counters the Kiln suite uses, so that

    kiln bench --json kiln.json
    python3 bench/torch_suite.py --json torch.json
    kiln bench --report kiln.json --report torch.json

prints one table with both, each row's speedup taken against Kiln eager.

Compile time is the first compiled step minus a steady step: cold with an empty Inductor cache
folder of this run's own, warm after torch._dynamo.reset() with that folder filled.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import sys
import tempfile
import time

# Inductor reads its cache folder when it loads: "cold" must not find kernels an earlier run
# left in the default one.
_OWN_CACHE = tempfile.mkdtemp(prefix="kiln_torch_suite_inductor_")
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", _OWN_CACHE)

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the script is optional: say why nothing was measured
    print(f"torch_suite: PyTorch is not installed here ({e}); nothing to compare", file=sys.stderr)
    sys.exit(2)


class Instance:
    """One workload's inputs and step, as bench/suite/workload.h's Instance."""

    def __init__(self, fn, inputs, params, grad_seeds=None, backward=True, update=None):
        self.fn = fn
        self.inputs = inputs
        self.params = params
        self.grad_seeds = grad_seeds
        self.backward = backward
        self.update = update


def leaf(t):
    return t.detach().requires_grad_()


def sgd(params, lr=1e-3):
    def update():
        with torch.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=lr)
                p.grad = None

    return update


def gelu_tanh(x):
    inner = (x + x * x * x * 0.044715) * 0.7978845608028654
    return x * 0.5 * (inner.tanh() + 1.0)


def gelu_chain(dev, n):
    torch.manual_seed(1)
    x = leaf(torch.randn(n, device=dev))
    return Instance(lambda x: [gelu_tanh(x)], [x], [x], [torch.randn(n, device=dev)])


def bias_dropout_residual(dev):
    rows, cols = 8192, 1024
    torch.manual_seed(2)
    b = leaf(torch.randn(cols, device=dev) * 0.1)
    x = leaf(torch.randn(rows, cols, device=dev))
    r = leaf(torch.randn(rows, cols, device=dev))

    def fn(x, r):
        return [F.dropout(x + b, 0.1, True) + r]

    return Instance(fn, [x, r], [x, r, b], [torch.randn(rows, cols, device=dev)])


def layer_norm(dev):
    rows, cols = 8192, 1024
    torch.manual_seed(3)
    w, b = leaf(torch.rand(cols, device=dev)), leaf(torch.rand(cols, device=dev))

    def fn(x):
        mu = x.mean(1, keepdim=True)
        d = x - mu
        var = (d * d).mean(1, keepdim=True)
        return [d * (var + 1e-5).rsqrt() * w + b]

    x = leaf(torch.randn(rows, cols, device=dev))
    return Instance(fn, [x], [x, w, b], [torch.randn(rows, cols, device=dev)])


def softmax_cross_entropy(dev):
    rows, cols = 8192, 1024
    torch.manual_seed(4)
    x = leaf(torch.randn(rows, cols, device=dev))
    t = torch.randn(rows, cols, device=dev).argmax(1)
    return Instance(lambda x, t: [F.cross_entropy(x, t)], [x, t], [x])


def mlp_step(dev):
    batch, d, hidden = 256, 1024, 4096
    torch.manual_seed(5)
    w1 = leaf(torch.randn(hidden, d, device=dev) / 32)
    b1 = leaf(torch.zeros(hidden, device=dev))
    w2 = leaf(torch.randn(d, hidden, device=dev) / 64)
    b2 = leaf(torch.zeros(d, device=dev))

    def fn(x, y):
        h = F.gelu(F.linear(x, w1, b1), approximate="tanh")
        return [F.mse_loss(F.linear(h, w2, b2), y)]

    params = [w1, b1, w2, b2]
    inputs = [torch.randn(batch, d, device=dev), torch.randn(batch, d, device=dev)]
    return Instance(fn, inputs, params, update=sgd(params))


def lstm_cell_10(dev):
    batch, hidden, steps = 64, 512, 10
    torch.manual_seed(6)
    s = 1.0 / math.sqrt(hidden)
    wx = leaf(torch.randn(4 * hidden, hidden, device=dev) * s)
    wh = leaf(torch.randn(4 * hidden, hidden, device=dev) * s)
    b = leaf(torch.zeros(4 * hidden, device=dev))

    def fn(x):
        h = torch.zeros(batch, hidden, device=dev)
        c = torch.zeros(batch, hidden, device=dev)
        for t in range(steps):
            gates = F.linear(x[t], wx, b) + F.linear(h, wh)
            i, f, g, o = gates.split(hidden, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
        return [(h * h).mean()]

    params = [wx, wh, b]
    inputs = [torch.randn(steps, batch, hidden, device=dev)]
    return Instance(fn, inputs, params, update=sgd(params))


def attention(dev):
    batch, heads, seq, dh = 2, 4, 256, 64
    torch.manual_seed(7)

    def fn(q, k, v):
        scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(dh))
        return [scores.softmax(-1) @ v]

    inputs = [leaf(torch.randn(batch, heads, seq, dh, device=dev)) for _ in range(3)]
    return Instance(fn, inputs, inputs, [torch.randn(batch, heads, seq, dh, device=dev)])


def transformer_block_step(dev):
    """frontend/models.cpp's transformer model."""
    batch, seq, d, heads = 4, 128, 256, 4
    dh = d // heads
    torch.manual_seed(8)
    s = 1.0 / math.sqrt(d)

    def param(*sizes, scale):
        return leaf(torch.randn(*sizes, device=dev) * scale)

    ones = lambda n: leaf(torch.ones(n, device=dev))  # noqa: E731
    zeros = lambda n: leaf(torch.zeros(n, device=dev))  # noqa: E731
    ln1_w, ln1_b = ones(d), zeros(d)
    wq, wk, wv = param(d, d, scale=s), param(d, d, scale=s), param(d, d, scale=s)
    wo, bo = param(d, d, scale=s), zeros(d)
    ln2_w, ln2_b = ones(d), zeros(d)
    w_fc, b_fc = param(4 * d, d, scale=s), zeros(4 * d)
    w_proj, b_proj = param(d, 4 * d, scale=0.5 / math.sqrt(4 * d)), zeros(d)
    params = [ln1_w, ln1_b, wq, wk, wv, wo, bo, ln2_w, ln2_b, w_fc, b_fc, w_proj, b_proj]
    teacher = torch.randn(d, d, device=dev) * s
    x = torch.randn(batch, seq, d, device=dev)
    target = torch.tanh(x @ teacher)
    future = torch.arange(seq, device=dev).view(seq, 1) < torch.arange(seq, device=dev).view(1, seq)

    def fn(x, target):
        def split_heads(t):
            return t.view(batch, seq, heads, dh).transpose(1, 2)

        h = F.layer_norm(x, (d,), ln1_w, ln1_b)
        q, k, v = split_heads(F.linear(h, wq)), split_heads(F.linear(h, wk)), split_heads(F.linear(h, wv))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        scores = scores.masked_fill(future, float("-inf"))
        attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, d)
        x1 = x + F.linear(attended, wo, bo)
        h2 = F.layer_norm(x1, (d,), ln2_w, ln2_b)
        x2 = x1 + F.linear(F.gelu(F.linear(h2, w_fc, b_fc), approximate="tanh"), w_proj, b_proj)
        return [F.mse_loss(x2, target)]

    return Instance(fn, [x, target], params, update=sgd(params))


def adam_50_params(dev):
    """torch.optim.Adam over 50 parameters whose gradients are set: eager is its default step
    (a loop of tensor ops on the CPU), compile is torch.compile of opt.step (Inductor's
    compiled optimizer)."""
    count, n = 50, 1 << 16
    torch.manual_seed(9)
    params = []
    for _ in range(count):
        p = leaf(torch.randn(n, device=dev))
        p.grad = torch.randn(n, device=dev)
        params.append(p)
    opt = torch.optim.Adam(params, lr=1e-3)

    def fn():
        opt.step()
        return []

    return Instance(fn, [], [], backward=False)


def op_chain_64(dev):
    torch.manual_seed(10)

    def fn(y):
        for _ in range(16):
            y = (y * 0.9 + 0.1).tanh().sin()
        return [y]

    x = leaf(torch.randn(16, device=dev))
    return Instance(fn, [x], [x], [torch.randn(16, device=dev)])


WORKLOADS = [
    ("gelu_chain_2e24", lambda dev: gelu_chain(dev, 1 << 24)),
    ("gelu_chain_2e12", lambda dev: gelu_chain(dev, 1 << 12)),
    ("bias_dropout_residual", bias_dropout_residual),
    ("layer_norm", layer_norm),
    ("softmax_cross_entropy", softmax_cross_entropy),
    ("mlp_step", mlp_step),
    ("lstm_cell_10", lstm_cell_10),
    ("attention", attention),
    ("transformer_block_step", transformer_block_step),
    ("adam_50_params", adam_50_params),
    ("op_chain_64", op_chain_64),
]


def run_step(fn, w):
    out = fn(*w.inputs)
    if w.backward:
        if w.grad_seeds is None:
            out[0].backward()
        else:
            torch.autograd.backward(out, w.grad_seeds)
    if w.update:
        w.update()
    else:
        for p in w.params:
            p.grad = None


def timed_step(fn, w, dev):
    if dev == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    run_step(fn, w)
    if dev == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def measure(fn, w, dev, min_time, max_steps):
    """Median seconds per step over at least five steps and min_time seconds (after warm-up)."""
    for _ in range(2):
        timed_step(fn, w, dev)
    times = []
    while len(times) < 5 or (sum(times) < min_time and len(times) < max_steps):
        times.append(timed_step(fn, w, dev))
    return statistics.median(times), len(times)


def benchmark(name, make, mode, dev, args):
    w = make(dev)
    result = {"name": f"BM_{name}/torch_{mode}/real_time", "run_type": "iteration"}
    fn = w.fn
    if mode == "compile":
        torch._dynamo.reset()
        fn = torch.compile(w.fn)
        first = timed_step(fn, w, dev)
        steady, _ = measure(fn, w, dev, 0, 5)
        torch._dynamo.reset()  # the in-memory graphs go; Inductor's cache folder stays
        again = torch.compile(w.fn)
        warm = timed_step(again, w, dev)
        result["compile_cold_ms"] = max(first - steady, 0) * 1e3
        result["compile_warm_ms"] = max(warm - steady, 0) * 1e3
        fn = again
    if args.smoke:
        step, iterations = timed_step(fn, w, dev), 1
    else:
        step, iterations = measure(fn, w, dev, args.min_time, args.max_steps)
    result["iterations"] = iterations
    result["median_ms"] = step * 1e3
    result["real_time"] = step * 1e3
    result["time_unit"] = "ms"
    result["label"] = f"torch {mode} ({dev})"
    return result


def mhz():
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"cpu MHz\s*:\s*([0-9.]+)", f.read())
            return round(float(m.group(1))) if m else 0
    except OSError:
        return 0


def main():
    parser = argparse.ArgumentParser(
        description="Run the Kiln benchmark suite's workloads in PyTorch eager and torch.compile "
        "and write Google Benchmark JSON for `kiln bench --report`.")
    parser.add_argument("--json", required=True, help="where to write the results")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=2,
                        help="CPU threads for torch (default 2, as the Kiln suite)")
    parser.add_argument("--filter", default="", help="only workloads whose name matches")
    parser.add_argument("--modes", default="eager,compile", help="eager, compile or both")
    parser.add_argument("--min-time", type=float, default=1.0,
                        help="seconds of measured steps per benchmark (default 1)")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", help="one timed step each")
    args = parser.parse_args()

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch finds no CUDA device")
    torch.set_num_threads(args.threads)
    modes = [m for m in args.modes.split(",") if m]
    results = []
    for name, make in WORKLOADS:
        if args.filter and not re.search(args.filter, name):
            continue
        for mode in modes:
            print(f"torch_suite: {name} {mode} ...", file=sys.stderr, flush=True)
            r = benchmark(name, make, mode, args.device, args)
            print(f"torch_suite: {name} {mode}: {r['median_ms']:.3f} ms/step", file=sys.stderr)
            results.append(r)
    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": platform.node(),
        "num_cpus": os.cpu_count(),
        "mhz_per_cpu": mhz(),
        "kiln_threads": str(args.threads),
        "library": f"torch {torch.__version__} on {args.device}",
        "kiln_smoke": "1" if args.smoke else "0",
    }
    with open(args.json, "w") as f:
        json.dump({"context": context, "benchmarks": results}, f, indent=1)
    print(f"torch_suite: wrote {len(results)} results to {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
