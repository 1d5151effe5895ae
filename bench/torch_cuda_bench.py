#!/usr/bin/env python3
"""The workloads of bench/cuda_bench.cpp in PyTorch eager and torch.compile, for the side-by-side
table in a GPU session's note. Same sizes, same ideal bytes, same timing (CUDA events around each
call, median of 15 after warm-up), and a device-to-device copy measured in the same process.

    python3 bench/torch_cuda_bench.py [--json OUT.json]

Prints one line per workload and variant: median microseconds, GB/s of ideal bytes and the
fraction of copy bandwidth; for torch.compile also the first call's wall time (compilation).
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

POINTWISE = 1 << 26
ROWS, COLS = 65536, 1024
LONG_ROWS, LONG_COLS = 8192, 8192  # rows too long for Kiln's row-cached entries


def time_ms(work):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def median_ms(work, reps=15):
    for _ in range(3):
        work()
    return statistics.median(time_ms(work) for _ in range(reps))


def copy_gbps():
    src = torch.randn(POINTWISE, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    return 2 * POINTWISE * 4 / (ms * 1e-3) * 1e-9


def first_call_s(work):
    torch.cuda.synchronize()
    t = time.perf_counter()
    work()
    torch.cuda.synchronize()
    return time.perf_counter() - t


def chain(x, y):
    return F.gelu(x * y + 0.5, approximate="tanh") * 2.0


def softmax(x):
    return torch.softmax(x, 1)


def layer_norm_wb(x, w, b):
    return F.layer_norm(x, (COLS,), w, b)


def layer_norm(x):
    return F.layer_norm(x, (COLS,))


def gelu(x):
    return F.gelu(x, approximate="tanh")


def workloads():
    """(name, ideal bytes, {variant: (work, first call or None)})."""
    dev = "cuda"
    x, y = torch.randn(POINTWISE, device=dev), torch.randn(POINTWISE, device=dev)
    dst = torch.empty_like(x)
    rows = torch.randn(ROWS, COLS, device=dev)
    w, b = torch.randn(COLS, device=dev), torch.randn(COLS, device=dev)
    out = []
    out.append(("copy", 2 * POINTWISE * 4, {"eager": lambda: dst.copy_(x)}))
    out.append(("eager_add", 3 * POINTWISE * 4, {"eager": lambda: x + y}))
    c_chain = torch.compile(chain)
    out.append(("fused_pointwise", 3 * POINTWISE * 4,
                {"eager": lambda: chain(x, y), "compiled": lambda: c_chain(x, y)}))
    c_soft = torch.compile(softmax)
    out.append(("softmax_forward", 2 * ROWS * COLS * 4,
                {"eager": lambda: softmax(rows), "compiled": lambda: c_soft(rows)}))
    c_ln = torch.compile(layer_norm_wb)
    out.append(("layer_norm_forward", 2 * ROWS * COLS * 4,
                {"eager": lambda: layer_norm_wb(rows, w, b),
                 "compiled": lambda: c_ln(rows, w, b)}))

    long_rows = torch.randn(LONG_ROWS, LONG_COLS, device=dev)
    out.append(("softmax_long_rows", 2 * LONG_ROWS * LONG_COLS * 4,
                {"eager": lambda: softmax(long_rows), "compiled": lambda: c_soft(long_rows)}))
    c_ln_long = torch.compile(lambda t: F.layer_norm(t, (LONG_COLS,)))
    out.append(("layer_norm_long_rows", 2 * LONG_ROWS * LONG_COLS * 4,
                {"eager": lambda: F.layer_norm(long_rows, (LONG_COLS,)),
                 "compiled": lambda: c_ln_long(long_rows)}))

    def backward_only(fn):
        xg = torch.randn(ROWS, COLS, device=dev, requires_grad=True)
        g = torch.randn(ROWS, COLS, device=dev)
        y = fn(xg)
        return lambda: torch.autograd.grad(y, xg, g, retain_graph=True)

    for name, fn in (("softmax_backward", softmax), ("layer_norm_backward", layer_norm)):
        compiled = torch.compile(fn)
        out.append((name, 3 * ROWS * COLS * 4,
                    {"eager": backward_only(fn), "compiled": backward_only(compiled)}))

    xg = torch.randn(POINTWISE, device=dev, requires_grad=True)
    g = torch.randn(POINTWISE, device=dev)
    c_gelu = torch.compile(gelu)

    def fwd_bwd(fn):
        return lambda: torch.autograd.grad(fn(xg), xg, g)

    out.append(("gelu_forward_backward", 4 * POINTWISE * 4,
                {"eager": fwd_bwd(gelu), "compiled": fwd_bwd(c_gelu)}))
    return out


def compute_workloads():
    """bench/cuda_bench.cpp's forward + backward workloads: (name, flops, work), torch eager
    (its own fused attention and cuDNN; torch.compile calls the same kernels for these)."""
    dev = "cuda"
    out = []
    b, h, s, d = 4, 8, 1024, 64
    q, k, v = (torch.randn(b, h, s, d, device=dev, requires_grad=True) for _ in range(3))
    g = torch.randn(b, h, s, d, device=dev)
    for causal in (False, True):
        def step(causal=causal):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.autograd.grad(y, (q, k, v), g)
        flops = 7.0 * 2 * b * h * s * s * d * (0.5 if causal else 1.0)
        out.append((f"sdpa_forward_backward causal={int(causal)}", flops, step))
    for c, oc, hw, kk, stride in ((64, 64, 56, 3, 1), (64, 128, 56, 3, 2), (256, 256, 14, 1, 1)):
        x = torch.randn(32, c, hw, hw, device=dev, requires_grad=True)
        w = torch.randn(oc, c, kk, kk, device=dev, requires_grad=True)
        size = (hw + 2 * (kk // 2) - kk) // stride + 1
        gy = torch.randn(32, oc, size, size, device=dev)
        flops = 3.0 * 2 * 32 * oc * size * size * c * kk * kk
        for find in (False, True):  # torch.backends.cudnn.benchmark

            def step(x=x, w=w, gy=gy, stride=stride, pad=kk // 2, find=find):
                torch.backends.cudnn.benchmark = find
                y = F.conv2d(x, w, stride=stride, padding=pad)
                torch.autograd.grad(y, (x, w), gy)
            out.append((f"conv2d_forward_backward C{c} OC{oc} HW{hw} k{kk} s{stride} find={int(find)}",
                        flops, step))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--compute-only", action="store_true",
                        help="only the attention and convolution forward + backward workloads")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    results = []
    for name, flops, work in compute_workloads():
        ms = median_ms(work)
        tflops = flops / (ms * 1e-3) * 1e-12
        results.append({"workload": name, "variant": "eager", "median_ms": ms, "TFLOP/s": tflops})
        print(f"{name:48s} eager {ms:9.3f} ms {tflops:7.2f} TFLOP/s", flush=True)
    for name, ideal, variants in ([] if args.compute_only else workloads()):
        for variant, work in variants.items():
            compile_s = first_call_s(work)
            ms = median_ms(work)
            copy = copy_gbps()
            gbps = ideal / (ms * 1e-3) * 1e-9
            row = {"workload": name, "variant": variant, "median_us": ms * 1e3, "GB/s": gbps,
                   "copy_GB/s": copy, "copy_frac": gbps / copy, "first_call_s": compile_s}
            results.append(row)
            print(f"{name:24s} {variant:9s} {ms * 1e3:9.1f} us {gbps:8.0f} GB/s "
                  f"copy {copy:6.0f} frac {gbps / copy:5.2f} first call {compile_s:6.2f} s",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
