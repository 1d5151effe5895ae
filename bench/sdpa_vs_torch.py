"""scaled_dot_product_attention forward+backward: Kiln's fused flash attention against Kiln's
composite (matmul, softmax, matmul: the scores materialized) and torch's eager SDPA, in one run,
alternating; then the CPU allocator's peak bytes during a forward+backward at a longer sequence
against one S x S float32 matrix per batch entry and head (the fused path must stay below).

    PYTHONPATH=build/python /root/torch-venv/bin/python bench/sdpa_vs_torch.py
    ... --repeats 3 --seq 512   # a quicker look
"""

import argparse
import math

import kiln
import kiln.nn.functional as KF
from cpu_vs_torch import add_timing_args, cpu_model, median_ms, torch_on_threads  # bench/ is the script's folder


def composite(q, k, v, causal):
    scores = kiln.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        L, S = q.shape[-2], k.shape[-2]
        keep = kiln.arange(L).unsqueeze(1) >= kiln.arange(S).unsqueeze(0)
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    return kiln.matmul(KF.softmax(scores, -1), v)


def fused(q, k, v, causal):
    return KF.scaled_dot_product_attention(q, k, v, is_causal=causal)


def inputs(b, h, s, d):
    return [kiln.randn(b, h, s, d, requires_grad=True) for _ in range(3)]


def step_of(fn, q, k, v, causal):
    def step():
        fn(q, k, v, causal).sum().backward()
        for t in (q, k, v):
            t.grad = None
    return step


def peak_bytes(fn, b, h, s, d, causal):
    q, k, v = inputs(b, h, s, d)
    step = step_of(fn, q, k, v, causal)
    step()  # the first call's one-time allocations out of the way
    kiln._C._cpu_allocator_reset_peak()
    base = kiln._C._cpu_allocator_stats()["allocated"]
    step()
    return kiln._C._cpu_allocator_stats()["peak_allocated"] - base


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--mem-seq", type=int, default=2048)
    add_timing_args(parser)
    args = parser.parse_args()
    torch = torch_on_threads(args.threads)
    b, h, s, d = args.batch, args.heads, args.seq, args.dim
    print(f"CPU: {cpu_model()}; threads {args.threads}; median of {args.repeats}; float32")
    print(f"forward+backward B{b} h{h} S{s} d{d}:")
    print(f"{'':10} {'kiln fused':>11} {'kiln composite':>15} {'torch eager':>12}")
    for causal in (False, True):
        q, k, v = inputs(b, h, s, d)
        fused_ms = median_ms(step_of(fused, q, k, v, causal), args.repeats)
        comp_ms = median_ms(step_of(composite, q, k, v, causal), args.repeats)
        t_ms = float("nan")
        if torch is not None:
            qt, kt, vt = (torch.randn(b, h, s, d, requires_grad=True) for _ in range(3))

            def torch_step():
                torch.nn.functional.scaled_dot_product_attention(
                    qt, kt, vt, is_causal=causal).sum().backward()
                for t in (qt, kt, vt):
                    t.grad = None
            t_ms = median_ms(torch_step, args.repeats)
        label = "causal" if causal else "full"
        print(f"{label:10} {fused_ms:9.1f}ms {comp_ms:13.1f}ms {t_ms:10.1f}ms")

    ms = args.mem_seq
    one_matrix = 1 * h * ms * ms * 4
    print(f"allocator peak during forward+backward, B1 h{h} S{ms} d{d} (beyond the inputs):")
    print(f"  one S x S float32 matrix per head: {one_matrix / 2**20:8.1f} MiB")
    for name, fn in (("kiln fused", fused), ("kiln composite", composite)):
        peak = peak_bytes(fn, 1, h, ms, d, False)
        print(f"  {name:15}: {peak / 2**20:8.1f} MiB ({peak / one_matrix:.3f} of it)")


if __name__ == "__main__":
    main()
