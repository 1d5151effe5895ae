"""Per-call overhead from Python, beside PyTorch in the same run: a 16-element add (eager), and
a compiled call on tiny tensors (kiln.compile beside torch.compile). Prints the CPU model and
the median of several timed batches.

    PYTHONPATH=build/python .venv/bin/python bench/python_overhead.py
    PYTHONPATH=build/python /root/torch-venv/bin/python bench/python_overhead.py  # with torch
"""

import argparse
import statistics
import time


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def per_call_us(fn, calls, repeats):
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    import kiln
    rows = []
    a, b = kiln.ones(16), kiln.ones(16)
    rows.append(("add, 16 elements (a + b)", "kiln", per_call_us(lambda: a + b, args.calls, args.repeats)))
    rows.append(("add(a, b), 16 elements", "kiln",
                 per_call_us(lambda: kiln.add(a, b), args.calls, args.repeats)))

    def tiny(x, y):
        return x * y + x

    ck = kiln.compile(tiny)
    rows.append(("compiled x*y+x, 16 elements", "kiln",
                 per_call_us(lambda: ck(a, b), args.calls // 4, args.repeats)))
    try:
        import torch
        torch.set_num_threads(1)
        ta, tb = torch.ones(16), torch.ones(16)
        rows.append(("add, 16 elements (a + b)", "torch",
                     per_call_us(lambda: ta + tb, args.calls, args.repeats)))
        rows.append(("add(a, b), 16 elements", "torch",
                     per_call_us(lambda: torch.add(ta, tb), args.calls, args.repeats)))
        ct = torch.compile(tiny)
        ct(ta, tb)
        rows.append(("compiled x*y+x, 16 elements", "torch",
                     per_call_us(lambda: ct(ta, tb), args.calls // 4, args.repeats)))
        torch_version = torch.__version__
    except ImportError:
        torch_version = None

    print(f"CPU: {cpu_model()}; kiln {kiln.__version__}; torch {torch_version or 'not installed'}")
    print(f"{'workload':32} {'kiln us/call':>13} {'torch us/call':>14} {'kiln/torch':>11}")
    names = dict.fromkeys(r[0] for r in rows)
    for name in names:
        k = next(v for n, lib, v in rows if n == name and lib == "kiln")
        t = next((v for n, lib, v in rows if n == name and lib == "torch"), None)
        ratio = f"{k / t:.2f}" if t else "-"
        ts = f"{t:.3f}" if t else "-"
        print(f"{name:32} {k:13.3f} {ts:>14} {ratio:>11}")


if __name__ == "__main__":
    main()
