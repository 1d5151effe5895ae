#!/usr/bin/env python3
"""Dynamic shapes: Kiln's compile against torch.compile when the sizes change between calls.

    PYTHONPATH=build/python python3 bench/dynamic_shapes_vs_torch.py [--calls 30] [--json FILE]

Run with a Python that has both kiln (the build's package) and torch. Two measurements, in one
process, on 2 threads for both libraries:

1. **A sequence of calls with changing sizes.** An inference MLP block (linear, gelu, linear,
   residual, layer_norm; width 256) is called `--calls` times with batch sizes drawn (seeded)
   from 2..512. For each `dynamic` setting (unset, True, False) of kiln.compile and
   torch.compile: how many compiles the sequence caused and how long its calls took in all,
   compiles included. Each library starts from empty in-memory caches (torch._dynamo.reset();
   a fresh Kiln function; Kiln's disk cache of kernels is left as it is, as Inductor's is).
2. **A training step with changing sizes.** A pre-LayerNorm transformer block (d 64, 4 heads,
   attention, 4x GELU MLP, residuals, MSE) whose shapes come from `x.shape`, trained for
   `--calls` steps (forward and backward) at drawn (batch, sequence) sizes: batch 2..16,
   sequence 16..128. The same counts and totals, and the steady step time at one size on the
   static plan and on the symbolic plan traced at another size.
3. **Symbolic kernels against static ones.** Forward workloads at fixed sizes, steady state
   (median of many calls after warm-up): the plan compiled with integer sizes
   (dynamic=False) against the symbolic plan traced at another size (dynamic=True), for Kiln
   and torch. Kiln's symbolic plans should stay within 10% of its static ones.

torch is not a dependency of Kiln: the script exits with status 2 when it is missing.
"""

import argparse
import json
import random
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as TF
except ImportError as e:
    print(f"dynamic_shapes_vs_torch: PyTorch is not installed here ({e})", file=sys.stderr)
    sys.exit(2)

import kiln
import kiln.nn.functional as KF
from python_overhead import cpu_model  # bench/, the folder of this script

WIDTH = 256


# ---- the MLP block, in both libraries, with the same weights ----

def block_params(seed=0):
    g = torch.Generator().manual_seed(seed)
    p = {
        "w1": torch.randn(4 * WIDTH, WIDTH, generator=g) * WIDTH ** -0.5,
        "b1": torch.randn(4 * WIDTH, generator=g) * 0.1,
        "w2": torch.randn(WIDTH, 4 * WIDTH, generator=g) * (4 * WIDTH) ** -0.5,
        "b2": torch.randn(WIDTH, generator=g) * 0.1,
        "g": torch.ones(WIDTH),
        "b": torch.zeros(WIDTH),
    }
    return p, {k: kiln.tensor(v.tolist()) for k, v in p.items()}


def torch_block(p):
    def block(x):
        h = TF.gelu(TF.linear(x, p["w1"], p["b1"]))
        return TF.layer_norm(x + TF.linear(h, p["w2"], p["b2"]), (WIDTH,), p["g"], p["b"])
    return block


def kiln_block(p):
    def block(x):
        h = KF.gelu(KF.linear(x, p["w1"], p["b1"]))
        return KF.layer_norm(x + KF.linear(h, p["w2"], p["b2"]), (WIDTH,), p["g"], p["b"])
    return block


def torch_graphs():
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


def sequence(calls, seed):
    rng = random.Random(seed)
    return [rng.randint(2, 512) for _ in range(calls)]


def time_calls(fn, inputs, no_grad):
    """Seconds for fn over every input, compiles included."""
    with no_grad():
        start = time.perf_counter()
        for x in inputs:
            fn(x)
        return time.perf_counter() - start


def run_sequence(batches, dynamic):
    tp, kp = block_params()
    rows = {}
    # Kiln
    f = kiln.compile(kiln_block(kp), dynamic=dynamic, name=f"block_dynamic_{dynamic}")
    total = time_calls(f, [kiln.randn(b, WIDTH) for b in batches], kiln.no_grad)
    rows["kiln"] = {"compiles": f.stats()["compiles"], "seconds": total}
    # torch
    torch._dynamo.reset()
    before = torch_graphs()
    g = torch.compile(torch_block(tp), dynamic=dynamic)
    total = time_calls(g, [torch.randn(b, WIDTH) for b in batches], torch.no_grad)
    rows["torch"] = {"compiles": torch_graphs() - before, "seconds": total}
    return rows


# ---- a training step of a transformer block, shapes from x.shape ----

D_MODEL, HEADS = 64, 4


def train_params(seed=1):
    g = torch.Generator().manual_seed(seed)
    d = D_MODEL
    shapes = {"ln1_w": (d,), "ln1_b": (d,), "wq": (d, d), "wk": (d, d), "wv": (d, d),
              "wo": (d, d), "bo": (d,), "ln2_w": (d,), "ln2_b": (d,), "w1": (4 * d, d),
              "b1": (4 * d,), "w2": (d, 4 * d), "b2": (d,)}
    p = {}
    for name, shape in shapes.items():
        if name.startswith("ln") and name.endswith("_w"):
            p[name] = torch.ones(shape)
        elif len(shape) == 1:
            p[name] = torch.zeros(shape)
        else:
            p[name] = torch.randn(*shape, generator=g) * shape[1] ** -0.5
    tp = {k: v.clone().requires_grad_() for k, v in p.items()}
    kp = {k: kiln.tensor(v.tolist()).requires_grad_() for k, v in p.items()}
    return tp, kp


def train_block(F, p):
    d, h = D_MODEL, HEADS

    def loss(x, target):
        b, s, _ = x.shape

        def heads(t):
            return t.view(b, s, h, d // h).transpose(1, 2)

        y = F.layer_norm(x, (d,), p["ln1_w"], p["ln1_b"])
        q, k, v = heads(F.linear(y, p["wq"])), heads(F.linear(y, p["wk"])), heads(F.linear(y, p["wv"]))
        att = F.softmax(q @ k.transpose(-2, -1) * (d // h) ** -0.5, dim=-1) @ v
        x1 = x + F.linear(att.transpose(1, 2).reshape(b, s, d), p["wo"], p["bo"])
        y2 = F.layer_norm(x1, (d,), p["ln2_w"], p["ln2_b"])
        x2 = x1 + F.linear(F.gelu(F.linear(y2, p["w1"], p["b1"])), p["w2"], p["b2"])
        return F.mse_loss(x2, target)
    return loss


def train_sizes(calls, seed):
    rng = random.Random(seed)
    return [(rng.randint(2, 16), rng.randint(16, 128)) for _ in range(calls)]


def time_steps(step, params, batches):
    """Seconds for a forward and backward per batch, compiles included."""
    start = time.perf_counter()
    for x, t in batches:
        step(x, t).backward()
        for p in params:
            p.grad = None
    return time.perf_counter() - start


def run_training(sizes, dynamic):
    tp, kp = train_params()
    rows = {}
    f = kiln.compile(train_block(KF, kp), dynamic=dynamic, name=f"train_dynamic_{dynamic}")
    batches = [(kiln.randn(b, s, D_MODEL), kiln.randn(b, s, D_MODEL)) for b, s in sizes]
    total = time_steps(f, kp.values(), batches)
    rows["kiln"] = {"compiles": f.stats()["compiles"], "seconds": total}
    torch._dynamo.reset()
    before = torch_graphs()
    g = torch.compile(train_block(TF, tp), dynamic=dynamic)
    batches = [(torch.randn(b, s, D_MODEL), torch.randn(b, s, D_MODEL)) for b, s in sizes]
    total = time_steps(g, tp.values(), batches)
    rows["torch"] = {"compiles": torch_graphs() - before, "seconds": total}
    return rows


def median_step_seconds(step, params, x, t, repeats):
    for _ in range(3):
        step(x, t).backward()
    times = []
    for _ in range(repeats):
        for p in params:
            p.grad = None
        start = time.perf_counter()
        step(x, t).backward()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def steady_training(repeats, size=(8, 128), trace_size=(4, 96)):
    row = {"workload": "transformer_step", "size": [size[0], size[1], D_MODEL]}
    for libname, F, randn in (("kiln", KF, kiln.randn), ("torch", TF, torch.randn)):
        tp, kp = train_params()
        p = kp if libname == "kiln" else tp
        if libname == "torch":
            torch._dynamo.reset()
        compile_fn = kiln.compile if libname == "kiln" else torch.compile
        static = compile_fn(train_block(F, p), dynamic=False)
        symbolic = compile_fn(train_block(F, p), dynamic=True)
        symbolic(randn(*trace_size, D_MODEL), randn(*trace_size, D_MODEL)).backward()
        x, t = randn(*size, D_MODEL), randn(*size, D_MODEL)
        row[f"{libname}_static_ms"] = median_step_seconds(static, p.values(), x, t, repeats) * 1e3
        row[f"{libname}_symbolic_ms"] = (
            median_step_seconds(symbolic, p.values(), x, t, repeats) * 1e3)
        if libname == "kiln":
            row["kiln_symbolic_compiles"] = symbolic.stats()["compiles"]
    return row


# ---- steady state: static plan against symbolic plan ----

def median_seconds(fn, x, repeats):
    for _ in range(3):
        fn(x)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def workloads():
    def gelu_chain(lib, F):
        return lambda x: F.gelu(x * 1.5 + 0.1) * x
    def layer_norm(lib, F):
        return lambda x: F.layer_norm(x, (1024,))
    def softmax(lib, F):
        return lambda x: F.softmax(x * 0.5, dim=-1)
    return [("gelu_chain", gelu_chain, (1024, 4096), (96, 4096)),
            ("layer_norm", layer_norm, (4096, 1024), (96, 1024)),
            ("softmax", softmax, (4096, 1024), (96, 1024))]


def steady(repeats):
    rows = []
    for name, make, size, trace_size in workloads():
        row = {"workload": name, "size": list(size)}
        for libname, lib, F, randn, compile_fn, ctx in (
                ("kiln", kiln, KF, kiln.randn, kiln.compile, kiln.no_grad),
                ("torch", torch, TF, torch.randn, torch.compile, torch.no_grad)):
            if libname == "torch":
                torch._dynamo.reset()
            with ctx():
                static = compile_fn(make(lib, F), dynamic=False)
                symbolic = compile_fn(make(lib, F), dynamic=True)
                symbolic(randn(*trace_size))  # traced at another size than the one timed
                x = randn(*size)
                row[f"{libname}_static_ms"] = median_seconds(static, x, repeats) * 1e3
                row[f"{libname}_symbolic_ms"] = median_seconds(symbolic, x, repeats) * 1e3
                if libname == "kiln":
                    row["kiln_symbolic_compiles"] = symbolic.stats()["compiles"]
        rows.append(row)
    return rows


def sequence_table(what, run):
    """Prints the compiles-and-totals table of `run(dynamic)` for each setting; returns them."""
    rows = {}
    print("\n| dynamic | Kiln compiles | Kiln total (s) | torch.compile compiles | "
          "torch.compile total (s) |")
    print("|---|---:|---:|---:|---:|")
    for dynamic in (None, True, False):
        print(f"# {what} with dynamic={dynamic} ...", file=sys.stderr, flush=True)
        r = rows[str(dynamic)] = run(dynamic)
        print(f"| {dynamic} | {r['kiln']['compiles']} | {r['kiln']['seconds']:.2f} | "
              f"{r['torch']['compiles']} | {r['torch']['seconds']:.2f} |", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=30, help="calls in the sequence (default 30)")
    ap.add_argument("--seed", type=int, default=38, help="seed of the batch sizes")
    ap.add_argument("--repeats", type=int, default=30, help="timed calls per steady figure")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    torch.set_num_threads(2)
    batches = sequence(args.calls, args.seed)
    print(f"# {cpu_model()}; torch {torch.__version__} ({torch.get_num_threads()} threads); "
          f"{args.calls} calls, batch sizes {min(batches)}..{max(batches)}, "
          f"{len(set(batches))} distinct", flush=True)
    result = {"cpu": cpu_model(), "torch": torch.__version__, "batches": batches, "steady": []}
    result["sequence"] = sequence_table("sequence", lambda d: run_sequence(batches, d))
    sizes = train_sizes(args.calls, args.seed)
    print(f"\n# training steps: {args.calls} calls, (batch, sequence) from "
          f"({min(b for b, _ in sizes)}..{max(b for b, _ in sizes)}, "
          f"{min(s for _, s in sizes)}..{max(s for _, s in sizes)}), "
          f"{len(set(sizes))} distinct", flush=True)
    result["training_sizes"] = sizes
    result["training"] = sequence_table("training", lambda d: run_training(sizes, d))
    print("\n| workload | size | Kiln static (ms) | Kiln symbolic (ms) | symbolic/static | "
          "torch static (ms) | torch symbolic (ms) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    print("# steady state ...", file=sys.stderr, flush=True)
    for row in steady(args.repeats) + [steady_training(args.repeats)]:
        result["steady"].append(row)
        ratio = row["kiln_symbolic_ms"] / row["kiln_static_ms"]
        print(f"| {row['workload']} | {row['size']} | {row['kiln_static_ms']:.3f} | "
              f"{row['kiln_symbolic_ms']:.3f} | {ratio:.2f} | {row['torch_static_ms']:.3f} | "
              f"{row['torch_symbolic_ms']:.3f} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
