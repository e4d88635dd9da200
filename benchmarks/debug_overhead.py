"""What fg.debug_nans costs while it is on: compiled gradients with and without the checks,
side by side (medians). Off, kernels carry no checks at all (tests/test_debug.py).

    python benchmarks/debug_overhead.py [--quick]
    python benchmarks/debug_overhead.py --strong-zero     # about 2 minutes on 2 cores

G1  gradient of a small regression loss (256 x 64): per-call cost dominates.
G2  the same at 20,000 x 64: elementwise work, fused loops with a check per operation.
L1  gradient through 200 steps of an elementwise update of 100,000 values (fg.fori_loop).

--strong-zero instead times what the strong-zero rule costs (docs/conventions.md): W1, W2 and
W4's fg.jit(fg.grad) (workloads.py) with FUNCGRAD_STRONG_ZERO=1 (the default) and =0, each in
its own process (the option is read at import), three runs alternating; medians of 40 calls.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
fg.config.update("jit_background", False)   # timings of kernels: compile on the first call
from timing import median_seconds

QUICK = "--quick" in sys.argv


def loss(w, X, y):
    return fnp.mean((fnp.tanh(X @ w) - y) ** 2) + 1e-3 * fnp.sum(w * w)


def steps(x):
    return fnp.sum(fg.fori_loop(0, 200, lambda i, c: c + 0.01 * fnp.sin(c) * fnp.exp(-c * c), x))


def main():
    rng = np.random.default_rng(0)
    cases = []
    for name, n in (("G1", 256), ("G2", 20000)):
        X, y, w = rng.random((n, 64)), rng.random(n), rng.random(64)
        cases.append((name, fg.jit(fg.grad(loss)), (w, X, y), 200 if not QUICK else 40))
    cases.append(("L1", fg.jit(fg.grad(steps)), (rng.random(100000),), 15 if not QUICK else 4))
    print(f"{'case':5} {'off':>12} {'on':>12} {'on/off':>7}")
    for name, g, args, repeats in cases:
        g(*args)
        off = median_seconds(lambda: g(*args), repeats)
        with fg.debug_nans():
            g(*args)
            on = median_seconds(lambda: g(*args), repeats)
        unit, scale = ("us", 1e6) if off < 1e-3 else ("ms", 1e3)
        print(f"{name:5} {off * scale:9.1f} {unit} {on * scale:9.1f} {unit} {on / off:7.2f}")


STRONG_ZERO_CHILD = """
import sys
sys.path.insert(0, {bench!r})
import funcgrad as fg
fg.config.update("jit_background", False)
from timing import median_seconds
from workloads import BY_KEY, ops
for key in ("W1", "W2", "W4"):
    w = BY_KEY[key]
    g, args = fg.jit(fg.grad(w.loss(ops("funcgrad")))), w.make_args()
    g(*args)
    print(key, median_seconds(lambda: g(*args), 40))
"""


def strong_zero(runs=3):
    bench = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, FUNCGRAD_CACHE_DIR=tempfile.mkdtemp(prefix="funcgrad-sz-bench-"))
    times = {"1": {}, "0": {}}
    for _ in range(runs):
        for flag in ("1", "0"):
            out = subprocess.run([sys.executable, "-c", STRONG_ZERO_CHILD.format(bench=bench)],
                                 env=dict(env, FUNCGRAD_STRONG_ZERO=flag), check=True,
                                 capture_output=True, text=True).stdout
            for line in out.split("\n"):
                if line.strip():
                    key, t = line.split()
                    times[flag].setdefault(key, []).append(float(t))
    print(f"{'case':5} {'strong zero':>12} {'IEEE (=0)':>12} {'ratio':>7}   (median of {runs} runs)")
    for key in times["1"]:
        on, off = np.median(times["1"][key]), np.median(times["0"][key])
        print(f"{key:5} {on * 1e3:9.3f} ms {off * 1e3:9.3f} ms {on / off:7.2f}")


if __name__ == "__main__":
    strong_zero() if "--strong-zero" in sys.argv else main()
