#!/usr/bin/env python3
"""fp32 GEMM beside PyTorch, on the shapes of bench/eager_linalg.cpp, in one run.

Runs kiln_bench_eager's BM_MatmulSgemm (OpenBLAS as Kiln loads it, Note [BLAS loading]) and
BM_MatmulKiln (kiln::matmul), then torch.matmul on the same shapes and thread count, and
OpenBLAS's other AVX cores (OPENBLAS_CORETYPE in a child process) so that "the best kernel
available here" is measured, not assumed. Prints one markdown table with each rate as a
fraction of the best.

    python3 bench/gemm_vs_torch.py [--build build] [--threads 2]
"""

import argparse
import json
import os
import subprocess
import sys
import time

SHAPES = [  # (m, k, n, b transposed), as kShapes in bench/eager_linalg.cpp
    (256, 1024, 4096, False),
    (1024, 1024, 1024, False),
    (8192, 1024, 1024, False),
    (1024, 1024, 4096, True),
]


def cpu_model():
    with open("/proc/cpuinfo") as f:
        fields = {}
        for line in f:
            if not line.strip():
                break
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    return f"{fields.get('model name', '?')} (family {fields.get('cpu family')}, model {fields.get('model')})"


def kiln_rows(build, threads, coretype=None):
    env = dict(os.environ, KILN_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run(
        [os.path.join(build, "bench", "kiln_bench_eager"), "--benchmark_filter=BM_Matmul",
         "--benchmark_format=json", "--benchmark_min_time=0.5"],
        env=env, check=True, capture_output=True, text=True).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        name, shape = b["name"].split("/")[0], int(b["name"].split("shape:")[1].split("/")[0])
        rows[(name, shape)] = b["GFLOP/s"]
    return rows


def torch_rows(threads):
    import torch
    torch.set_num_threads(threads)
    rates = {}
    for i, (m, k, n, bt) in enumerate(SHAPES):
        a = torch.rand(m, k)
        b = torch.rand(n, k).t() if bt else torch.rand(k, n)
        torch.matmul(a, b)
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < 1.0:
            torch.matmul(a, b)
            reps += 1
        seconds = (time.perf_counter() - start) / reps
        rates[i] = 2.0 * m * n * k / seconds * 1e-9
    return rates, torch.__version__, ("MKL" if torch.backends.mkl.is_available() else "no MKL")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args()
    print(f"CPU: {cpu_model()}; {args.threads} threads", file=sys.stderr)
    print("measuring Kiln (OpenBLAS core chosen by Kiln)...", file=sys.stderr)
    kiln = kiln_rows(args.build, args.threads)
    others = {}
    for core in ("SkylakeX", "Cooperlake", "Haswell"):
        print(f"measuring OpenBLAS core {core}...", file=sys.stderr)
        others[core] = kiln_rows(args.build, args.threads, core)
    try:
        print("measuring torch.matmul...", file=sys.stderr)
        torch_rate, torch_version, torch_blas = torch_rows(args.threads)
    except ImportError as e:
        print(f"gemm_vs_torch: PyTorch is not importable ({e})", file=sys.stderr)
        return 2
    print(f"torch {torch_version} ({torch_blas}); OpenBLAS cores measured: {', '.join(others)}\n")
    print("| shape (m, k, n) | kiln.matmul | OpenBLAS sgemm (Kiln's core) | best OpenBLAS core | torch.matmul | kiln / best | kiln / torch |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for i, (m, k, n, bt) in enumerate(SHAPES):
        k_rate = kiln[("BM_MatmulKiln", i)]
        sgemm = kiln[("BM_MatmulSgemm", i)]
        best_core, best_rate = max(((c, r[("BM_MatmulSgemm", i)]) for c, r in others.items()), key=lambda x: x[1])
        best = max(best_rate, sgemm, torch_rate[i])
        print(f"| {m}, {k}, {n}{' (b.t())' if bt else ''} | {k_rate:.0f} | {sgemm:.0f} | {best_rate:.0f} ({best_core}) | "
              f"{torch_rate[i]:.0f} | {k_rate / best:.2f} | {k_rate / torch_rate[i]:.2f} |")
    print("\nGFLOP/s; 'best' is the fastest of every kernel measured here, PyTorch's included.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
