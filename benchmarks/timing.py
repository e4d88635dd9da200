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


def calls_per_loop(call, args, min_seconds, warmup):
    """After `warmup` calls of call(*args): the number of calls r (a power of 2) for which a
    loop of r calls lasts at least `min_seconds` (timing loops, not single fast calls)."""
    for _ in range(warmup):
        call(*args)
    try:                              # funcgrad's background compiles: time the kernels
        from funcgrad.api.background import wait_all
        wait_all()
    except ImportError:
        pass
    for _ in range(warmup):
        call(*args)
    r = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(r):
            call(*args)
        if time.perf_counter() - t0 >= min_seconds:
            return r
        r *= 2
