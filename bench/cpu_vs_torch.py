"""What the CPU benchmarks beside PyTorch share (nn_layers_vs_torch.py, sdpa_vs_torch.py): the
CPU's name, a median-of-repeats timer, the --repeats/--threads arguments, and torch on that many
threads (None where it is not installed)."""

import os
import statistics
import time


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def median_ms(step, repeats):
    step()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def add_timing_args(parser):
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())


def torch_on_threads(threads):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    return torch
