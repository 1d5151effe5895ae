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
2. **Symbolic kernels against static ones.** Forward workloads at fixed sizes, steady state
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
    result = {"cpu": cpu_model(), "torch": torch.__version__, "batches": batches,
              "sequence": {}, "steady": []}
    print("\n| dynamic | Kiln compiles | Kiln total (s) | torch.compile compiles | "
          "torch.compile total (s) |")
    print("|---|---:|---:|---:|---:|")
    for dynamic in (None, True, False):
        print(f"# sequence with dynamic={dynamic} ...", file=sys.stderr, flush=True)
        r = run_sequence(batches, dynamic)
        result["sequence"][str(dynamic)] = r
        print(f"| {dynamic} | {r['kiln']['compiles']} | {r['kiln']['seconds']:.2f} | "
              f"{r['torch']['compiles']} | {r['torch']['seconds']:.2f} |", flush=True)
    print("\n| workload | size | Kiln static (ms) | Kiln symbolic (ms) | symbolic/static | "
          "torch static (ms) | torch symbolic (ms) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    print("# steady state ...", file=sys.stderr, flush=True)
    for row in steady(args.repeats):
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
