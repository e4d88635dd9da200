"""What Ctrl-C support costs: compiled loops with and without the signal poll, side by side.

    python benchmarks/interrupt_cost.py

Compiled loops check Python's signal handlers at the top of their body (funcgrad/backend/
loop_emitters.py): every step when the body does array work, every POLL_EVERY steps when it is scalar
code. This compiles each workload twice in one process -- as shipped, and with the poll emitted
as nothing -- and prints the median time per call of each and their ratio. The kernel cache
points at a fresh directory, so no kernel of one variant is reused for the other.
"""
import os
import sys
import tempfile
import time

os.environ["FUNCGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="funcgrad-interrupt-bench-")

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
fg.config.update("jit_background", False)   # timings of kernels: compile on the first call
from funcgrad.backend import loop_emitters as control  # noqa: E402
from funcgrad.backend.codegen import Generator  # noqa: E402


def workloads():
    def rk4_scalar(x):         # scalar body: the poll runs every POLL_EVERY steps
        def step(i, c):
            return c + 1e-4 * fnp.sin(c) * c
        return fg.fori_loop(0, 200_000, step, x)

    def while_grad(x):         # reverse mode through a while loop (tape + backward sweep)
        def body(c):
            return (c[0] + 1e-4 * fnp.cos(c[0]), c[1] + 1)
        return fg.while_loop(lambda c: c[1] < 100_000, body, (x, 0))[0]

    def array_body(x):         # array work each step: the poll runs every step
        return fnp.sum(fg.fori_loop(0, 20_000, lambda i, c: c * 0.9999 + fnp.sin(c) * 1e-4, x))

    return {
        "fori_loop, scalar body, 200k steps": (fg.jit(rk4_scalar), (1.0,)),
        "grad of while_loop, 100k steps": (fg.jit(fg.grad(while_grad)), (1.0,)),
        "fori_loop, 64-vector body, 20k steps": (fg.jit(array_body), (np.ones(64),)),
    }


def median_time(f, args, repeat=15):
    f(*args)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def main():
    shipped = {name: median_time(f, a) for name, (f, a) in workloads().items()}
    control._poll = lambda gen, counter, *progs, step=None: (
        gen.src.emit(step) if step is not None else None)
    control._poll_now = lambda gen, first="": gen.src.emit("pass")
    Generator.heavy = staticmethod(lambda *progs: True)   # no chunked loops: the code before polling
    bare = {name: median_time(f, a) for name, (f, a) in workloads().items()}
    print(f"{'workload':40s} {'no poll':>10s} {'with poll':>10s} {'ratio':>7s}")
    for name in shipped:
        print(f"{name:40s} {bare[name] * 1e3:8.2f}ms {shipped[name] * 1e3:8.2f}ms "
              f"{shipped[name] / bare[name]:7.3f}")
    print(f"(medians of 15 calls; POLL_EVERY = {control.POLL_EVERY})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
