"""funcgrad benchmarks: every workload x every available implementation, in one run.

    python benchmarks/run.py [--quick] [--only W1,W3]

Prints one table of medians with ratios against the hand-written Numba adjoint and against one
NumPy evaluation of the loss, then (for the compiled implementations) the cost of the first call
in a fresh process, cold and with a warm persistent cache. Every gradient is checked against the
hand-written one before it is timed; a mismatch or an error is printed loudly and makes the exit
status 1. See benchmarks/README.md.
"""
import argparse
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np

import funcgrad as fg
from timing import settle, warm_up
from workloads import BY_KEY, WORKLOADS, ops

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-9
MIN_REPEAT_S = 0.05          # each timed repeat loops over enough calls to take this long
WARMUP_CALLS = 25            # before timing, and at least timing.WARMUP_SECONDS of calls
MICRO = "µs" if (sys.stdout.encoding or "").lower().startswith("utf") else "us"


class Unavailable(Exception):
    """This implementation cannot run here (framework not installed, backend not written yet)."""


@dataclass
class Runner:
    call: Callable           # what is timed: call(*args)
    args: tuple
    to_numpy: Callable       # call's result -> NumPy gradient for the check; None: not a gradient


# ---- small pytree helpers (dicts, tuples, arrays: all the workloads use) ----------------

def tree_map(fn, tree):
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(tree_map(fn, v) for v in tree)
    return fn(tree)


def leaves(tree):
    return [tree[k] for k in sorted(tree)] if isinstance(tree, dict) else [tree]


def identity(x):
    return x


# ---- the implementations ----------------------------------------------------------------

def numpy_loss(w, args):
    return Runner(w.loss(ops("numpy")), args, None)


def hand_numba(w, args):
    return Runner(w.hand, args, identity)


def hand_numba_parallel(w, args):
    if w.hand_parallel is None:
        return None
    return Runner(w.hand_parallel, args, identity)


def funcgrad_grad(w, args):
    return Runner(fg.grad(w.loss(ops("funcgrad"))), args, identity)


def funcgrad_jit_grad(w, args):
    if not hasattr(fg, "jit"):
        raise Unavailable("fg.jit not in this funcgrad yet")
    return Runner(fg.jit(fg.grad(w.loss(ops("funcgrad")))), args, identity)


def funcgrad_jit_parallel(w, args):
    if w.hand_parallel is None:                      # only where a prange baseline exists
        return None
    if "parallel" not in inspect.signature(getattr(fg, "jit", identity)).parameters:
        raise Unavailable("no fg.jit(parallel=True) in this funcgrad yet")
    return Runner(fg.jit(fg.grad(w.loss(ops("funcgrad"))), parallel=True), args, identity)


def autograd_grad(w, args):
    import autograd
    return Runner(autograd.grad(w.loss(ops("autograd"))), args, identity)


def jax_jit_x64(w, args):
    import jax
    jax.config.update("jax_enable_x64", True)
    grad = jax.jit(jax.grad(w.loss(ops("jax"))))
    return Runner(lambda *a: jax.block_until_ready(grad(*a)), tree_map(jax.numpy.asarray, args),
                  lambda out: tree_map(np.asarray, out))


def torch_eager(w, args):
    import torch
    targs = tree_map(torch.from_numpy, args)
    wrt = [t.requires_grad_() for t in leaves(targs[0])]
    loss = w.loss(ops("torch"))

    def grad(*a):
        return torch.autograd.grad(loss(*a), wrt)

    def to_numpy(out):
        arrays = [g.numpy() for g in out]
        return dict(zip(sorted(args[0]), arrays)) if isinstance(args[0], dict) else arrays[0]
    return Runner(grad, targs, to_numpy)


IMPLS = {
    "numpy loss": numpy_loss,
    "hand-written numba": hand_numba,
    f"hand-written numba prange ({numba.config.NUMBA_NUM_THREADS} thr)": hand_numba_parallel,
    "funcgrad grad": funcgrad_grad,
    "funcgrad jit(grad)": funcgrad_jit_grad,
    "funcgrad jit(grad, parallel=True)": funcgrad_jit_parallel,
    "autograd": autograd_grad,
    "jax jit x64": jax_jit_x64,
    "torch eager": torch_eager,
}
REFERENCE, BASELINE = "hand-written numba", "numpy loss"
COMPILED = ["hand-written numba", "funcgrad jit(grad)"]   # also timed in fresh processes


def build(name, w, args):
    """Implementation `name`'s Runner; None if it does not apply to w. May raise Unavailable."""
    try:
        return IMPLS[name](w, args)
    except ImportError as e:
        raise Unavailable(f"{e.name or e} not installed") from None


# ---- checking and timing ----------------------------------------------------------------

def mismatch(got, want):
    """None if `got` matches `want` (same structure, allclose at RTOL), else what differs."""
    if isinstance(want, dict) and (not isinstance(got, dict) or sorted(got) != sorted(want)):
        keys = sorted(got) if isinstance(got, dict) else ""
        return f"structure differs: got {type(got).__name__} {keys}, want {sorted(want)}"
    for g, r in zip(leaves(got), leaves(want)):
        g, r = np.asarray(g), np.asarray(r)
        if g.shape != r.shape:
            return f"shape {g.shape} != {r.shape}"
        scale = max(float(np.max(np.abs(r))), 1e-300)
        if not np.allclose(g, r, rtol=RTOL, atol=RTOL * 1e-3 * scale):
            return f"max |error| / max |reference| = {np.max(np.abs(g - r)) / scale:.2e}"
    return None


def median_seconds(call, args, repeats):
    """Median over `repeats` of (a loop of r calls) / r, with r chosen so a loop takes >= 50 ms,
    after timing.warm_up (code that compiles once hot reaches its steady state)."""
    warm_up(call, args, WARMUP_CALLS)
    r = 1
    while True:                                      # calibrate (and warm up) like timeit
        t0 = time.perf_counter()
        for _ in range(r):
            call(*args)
        if time.perf_counter() - t0 >= MIN_REPEAT_S:
            break
        r *= 2
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(r):
            call(*args)
        times.append((time.perf_counter() - t0) / r)
    return float(np.median(times))


def loud(msg):
    print(f"\n!!!!!!!! {msg}\n", flush=True)


def check(runner, ref):
    """Call once; None if the gradient matches `ref` (or it is the forward loss), else why not."""
    out = runner.call(*runner.args)
    return runner.to_numpy and mismatch(runner.to_numpy(out), ref)


def bench_one(name, w, args, ref, repeats):
    """(seconds or None, note) for one implementation on one workload; None if not applicable.
    The gradient is checked on the first call and again after the timed loops (a function that
    is compiled once hot then answers from different code)."""
    runner = build(name, w, args)
    if runner is None:
        return None
    try:
        bad = check(runner, ref)
        seconds = median_seconds(runner.call, runner.args, repeats)
        bad = bad or check(runner, ref)
    except Exception as e:                           # noqa: BLE001 - reported, not hidden
        loud(f"{w.key} {name}: ERROR {type(e).__name__}: {e}")
        return None, "ERROR"
    if bad:
        loud(f"{w.key} {name}: GRADIENT MISMATCH vs hand-written numba: {bad}")
    return seconds, "MISMATCH" if bad else "ok" if runner.to_numpy else "(forward)"


def bench_workload(w, repeats, skipped):
    args = w.make_args()
    ref = w.hand(*args)
    results = {}
    for name in IMPLS:
        try:
            res = bench_one(name, w, args, ref, repeats)
        except Unavailable as e:
            skipped[name] = str(e)
            continue
        if res is not None:
            results[name] = res
    return results


# ---- first call in a fresh process --------------------------------------------------------

FIRST_CALL = """
import sys, time
sys.path.insert(0, {bench!r})
import numba, run
print(*run.first_call_seconds({key!r}, {impl!r}))
"""


def first_call_seconds(key, impl):
    """Build implementation `impl` for workload `key` and call it once (trace + compile + run:
    `first`), then once more (`native`: until the second call returns, which runs the compiled
    kernel; fg.jit's first call answers from the interpreter while the kernel compiles in
    the worker process: waited for here)."""
    w = BY_KEY[key]
    args = w.make_args()
    t0 = time.perf_counter()
    runner = build(impl, w, args)
    runner.call(*runner.args)
    first = time.perf_counter() - t0
    settle()
    runner.call(*runner.args)
    return first, time.perf_counter() - t0


def fresh_process(key, impl, cache_dir):
    """(first call s, native s, process wall s) in a new interpreter whose persistent caches (Numba's
    and funcgrad's kernel cache) live in `cache_dir`."""
    env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(cache_dir, "numba"),
               FUNCGRAD_CACHE_DIR=os.path.join(cache_dir, "funcgrad"))
    code = FIRST_CALL.format(bench=BENCH_DIR, key=key, impl=impl)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=900)
    wall = time.perf_counter() - t0
    if proc.returncode:
        lines = proc.stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"exit status {proc.returncode}")
    first, native = proc.stdout.split()[-2:]
    return float(first), float(native), wall


def cold_and_warm(key, impl):
    """Two fresh processes sharing an initially empty persistent cache: cold, then warm."""
    cache_dir = tempfile.mkdtemp(prefix="funcgrad-bench-cache-")
    for sub in ("numba", "funcgrad"):
        os.mkdir(os.path.join(cache_dir, sub), 0o700)
    try:
        return fresh_process(key, impl, cache_dir), fresh_process(key, impl, cache_dir)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


# ---- reporting ----------------------------------------------------------------------------

def fmt_time(seconds, unit):
    return f"{seconds * 1e6:10.2f} {MICRO}" if unit == "us" else f"{seconds * 1e3:10.3f} ms"


def fmt_ratio(t, base):
    return f"{t / base:9.2f}x" if t is not None and base else f"{'-':>10}"


def print_table(workloads, all_results):
    print(f"\n{'implementation':38s} {'median':>13s} {'vs hand nb':>10s} {'vs np loss':>10s}"
          "  check")
    for w in workloads:
        results = all_results[w.key]
        print(f"{w.key}: {w.title}")
        ref, base = (results.get(k, (None,))[0] for k in (REFERENCE, BASELINE))
        for name, (t, note) in results.items():
            shown = fmt_time(t, w.unit) if t is not None else f"{'-':>13}"
            print(f"  {name:36s} {shown} {fmt_ratio(t, ref)} {fmt_ratio(t, base)}  {note}")


def print_first_calls(workloads):
    impls = [i for i in COMPILED if i != "funcgrad jit(grad)" or hasattr(fg, "jit")]
    print("\nFirst call in a fresh process: `first` = build + trace + compile + call (fg.jit: the"
          "\ncall waits for its kernel, which gives the kernel's bits from the first call), `native`"
          "\n= until a second call has run the compiled kernel; the process wall time adds interpreter"
          "\nstart and imports. Cold: empty cache; warm: persistent cache filled by the cold run"
          "\n(NUMBA_CACHE_DIR, FUNCGRAD_CACHE_DIR).")
    print(f"{'':4s}{'implementation':24s} {'cold first':>11s} {'native':>8s} {'warm first':>11s}"
          f" {'native':>8s} {'cold proc':>10s} {'warm proc':>10s}")
    failed = False
    for w in workloads:
        for impl in impls:
            try:
                (cold, cold_native, cold_wall), (warm, warm_native, warm_wall) = \
                    cold_and_warm(w.key, impl)
            except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
                loud(f"{w.key} {impl}: fresh-process first call FAILED: {e}")
                failed = True
                continue
            print(f"{w.key:4s}{impl:24s} {cold:10.3f}s {cold_native:7.3f}s {warm:10.3f}s "
                  f"{warm_native:7.3f}s {cold_wall:9.2f}s {warm_wall:9.2f}s")
    return failed


def print_header(repeats):
    print(f"funcgrad {fg.__version__} | numpy {np.__version__} | numba {numba.__version__} "
          f"({numba.config.NUMBA_NUM_THREADS} threads) | python {sys.version.split()[0]} | "
          f"{os.cpu_count()} cores | median of {repeats} repeats, "
          f"each >= {MIN_REPEAT_S * 1e3:.0f} ms")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        if var in os.environ:
            print(f"note: {var}={os.environ[var]} is set (see benchmarks/README.md)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5:
        print(f"note: load average {load:.2f}: other processes are running, medians (threaded "
              "BLAS and prange above all) will be noisy")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="3 repeats instead of 11 (CI smoke run)")
    p.add_argument("--only", default="", help="comma-separated workload keys, e.g. W1,W3")
    opts = p.parse_args(argv)
    keys = [k.strip().upper() for k in opts.only.split(",") if k.strip()]
    unknown = [k for k in keys if k not in BY_KEY]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; choose from {list(BY_KEY)}")
    workloads = [BY_KEY[k] for k in keys] if keys else WORKLOADS
    repeats = 3 if opts.quick else 11
    print_header(repeats)
    skipped, results = {}, {}
    for w in workloads:
        print(f"running {w.key}: {w.title} ...", flush=True)
        results[w.key] = bench_workload(w, repeats, skipped)
    print_table(workloads, results)
    if skipped:
        print("not run: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    failed = print_first_calls(workloads)
    bad = [f"{k} {n}" for k, r in results.items() for n, (_, note) in r.items()
           if note in ("ERROR", "MISMATCH")]
    if bad:
        loud("FAILED CHECKS: " + ", ".join(bad))
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
