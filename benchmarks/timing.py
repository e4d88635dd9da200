"""Timing shared by the benchmark scripts: medians of single calls (these machines are noisy)."""
import time

import numpy as np


def median_seconds(call, repeats):
    """The median wall time of `repeats` calls of call() (no arguments), in seconds."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return float(np.median(times))
