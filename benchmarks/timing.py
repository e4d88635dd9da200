"""Timing shared by the benchmark scripts: medians of single calls (these machines are noisy)."""
import time

import numpy as np


def settle():
    """Wait for funcgrad's background compiles: a timed loop times kernels, not the
    interpreter answering while they compile."""
    try:
        from funcgrad.api.background import wait_all
    except ImportError:              # (a funcgrad before background compiles)
        return
    wait_all()


WARMUP_SECONDS = 1.0    # covers tiering's cost rule: a hot signature compiles once its
#                         interpreted calls have cost 2% of its compile (a 50 s compile: 1 s)


def warm_up(call, args, calls):
    """Call call(*args) `calls` times and for at least WARMUP_SECONDS, wait for the background
    compiles that started, then `calls` times more (the kernels' first calls load them): code
    that compiles once hot reaches its steady state."""
    t0, n = time.perf_counter(), 0
    while n < calls or time.perf_counter() - t0 < WARMUP_SECONDS:
        call(*args)
        n += 1
    settle()
    for _ in range(calls):
        call(*args)


def median_seconds(call, repeats):
    """The median wall time of `repeats` calls of call() (no arguments), in seconds."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def calls_per_loop(call, args, min_seconds, warmup):
    """After warm_up(call, args, warmup): the number of calls r (a power of 2) for which a
    loop of r calls lasts at least `min_seconds` (timing loops, not single fast calls)."""
    warm_up(call, args, warmup)
    r = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(r):
            call(*args)
        if time.perf_counter() - t0 >= min_seconds:
            return r
        r *= 2
