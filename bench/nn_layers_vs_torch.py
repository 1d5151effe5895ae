"""conv2d forward+backward on issue 37's shapes (batch 32), eager and compiled, beside PyTorch
eager in the same run (torch on the same number of threads). Prints the CPU model, the BLAS
kernel and the median milliseconds per step, alternating Kiln and torch runs.

    PYTHONPATH=build/python /root/torch-venv/bin/python bench/nn_layers_vs_torch.py
    ... --batch 8 --repeats 3   # a quicker look
"""

import argparse
import os

import kiln
import kiln.nn.functional as KF
from cpu_vs_torch import add_timing_args, cpu_model, median_ms, torch_on_threads

# (in channels, out channels, size, kernel, stride, padding)
SHAPES = [
    (64, 64, 56, 3, 1, 1),
    (64, 128, 56, 3, 2, 1),
    (256, 256, 14, 1, 1, 0),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    add_timing_args(parser)
    args = parser.parse_args()
    torch = torch_on_threads(args.threads)
    print(f"CPU: {cpu_model()}; BLAS: {os.environ.get('OPENBLAS_CORETYPE', 'OpenBLAS default core')};"
          f" threads {args.threads}; batch {args.batch}; median of {args.repeats}")
    print(f"{'shape':32} {'kiln eager':>11} {'kiln compiled':>14} {'torch eager':>12} {'ratio':>7}")
    for cin, cout, size, k, s, p in SHAPES:
        x = kiln.randn(args.batch, cin, size, size, requires_grad=True)
        w = kiln.randn(cout, cin, k, k, requires_grad=True)

        def loss(x, w):
            return KF.conv2d(x, w, stride=s, padding=p).sum()

        compiled = kiln.compile(loss)

        def eager_step():
            loss(x, w).backward()

        def compiled_step():
            compiled(x, w).backward()

        k_eager = median_ms(eager_step, args.repeats)
        k_comp = median_ms(compiled_step, args.repeats)
        t_ms = float("nan")
        if torch is not None:
            xt = torch.randn(args.batch, cin, size, size, requires_grad=True)
            wt = torch.randn(cout, cin, k, k, requires_grad=True)
            t_ms = median_ms(lambda: torch.nn.functional.conv2d(xt, wt, stride=s, padding=p)
                             .sum().backward(), args.repeats)
        name = f"C{cin}->{cout} {size}x{size} k{k} s{s}"
        best = min(k_eager, k_comp)
        print(f"{name:32} {k_eager:11.1f} {k_comp:14.1f} {t_ms:12.1f} {best / t_ms:7.2f}")


if __name__ == "__main__":
    main()
