"""Compile time and peak memory against program size (issue 10, item 4).

    .venv/bin/python benchmarks/compile_size.py                 # about 5 minutes on 2 cores
    .venv/bin/python benchmarks/compile_size.py --steps 9,91 --repeat 1 --whole
    .venv/bin/python benchmarks/compile_size.py --steps 1000 --fori

The program is a Python loop unrolled while tracing, the case that used to explode:

    def f(x):                       # x: float64[3]
        for _ in range(steps):
            x = x + 0.001 * fnp.sin(x) * x
        return fnp.sum(x)

compiled as fg.jit(fg.grad(f)). Each unrolled step adds 11 equations to the simplified program
(4 forward: sin, two multiplies, an add; 7 backward: a cos and the multiplies and adds of
the adjoint), 11 * steps - 2 in all: 9, 91 and 909 steps are 97, 999 and 9,997 equations, and
1,000 steps (the issue's target: under 30 s and 1 GB) are 10,998.

Every measurement runs in a fresh interpreter (`--child STEPS`) with a fresh, empty kernel
cache (a cold compile) and an address-space limit (--mem-limit, default 6 GiB, so an explosion
ends in MemoryError instead of taking the machine). The child reports:
- trace: fg.jit(...).lower(x): tracing, grad, simplification (no code generation);
- first call: g(x) on a new jitted function: trace again + code generation + Numba + one run,
  i.e. what a user waits for;
- peak RSS: the child's VmHWM from /proc/self/status (ru_maxrss elsewhere), imports included
  (about 150 MiB of it is NumPy, SciPy, Numba and LLVM before anything is compiled);
- parts: the number of part functions in the generated source (backend/split.py).
The gradient is checked against the interpreter's (rtol 1e-12). Times are medians over
--repeat runs, peak RSS the largest. `--whole` adds rows for the code as it was before
splitting (one function, vecmath inlined), for comparison; only small sizes finish. `--fori`
adds rows for the same steps written as `fg.fori_loop(0, steps, body, x)`, which records the
body once (what the README suggests instead of unrolling).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

EQNS_PER_STEP = 11
DEFAULT_STEPS = (9, 91, 909, 1000)


def child(steps, whole, mem_limit, chunk, fori=False):
    import resource
    if mem_limit:
        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))
    import numpy as np
    import funcgrad as fg
    import funcgrad.numpy as fnp
    fg.config.update("jit_background", False)   # timings of kernels: compile on the first call
    from funcgrad.backend import split
    if whole:
        split.SPLIT_SIZE = split.INLINE_CALLS = split.CHUNK_SIZE = 10 ** 9
    elif chunk:
        split.CHUNK_SIZE = chunk

    def f(x):
        if fori:
            return fnp.sum(fg.fori_loop(0, steps, lambda i, x: x + 0.001 * fnp.sin(x) * x, x))
        for _ in range(steps):
            x = x + 0.001 * fnp.sin(x) * x
        return fnp.sum(x)

    import warnings
    warnings.simplefilter("ignore")          # the long-trace warning, expected here
    x = np.array([1.0, -0.5, 2.0])
    t0 = time.perf_counter()
    lowered = fg.jit(fg.grad(f)).lower(x)
    trace = time.perf_counter() - t0
    g = fg.jit(fg.grad(f))
    t0 = time.perf_counter()
    got = g(x)
    first = time.perf_counter() - t0
    (entry,) = g._entries.values()
    with fg.disable_jit():
        ref = g(x)
    ok = bool(np.allclose(got, ref, rtol=1e-12, atol=0))
    print(json.dumps({"eqns": len(lowered.program.eqns), "trace": trace, "first": first,
                      "rss": _peak_rss(), "parts": entry.compiled.source.count("def _part"),
                      "ok": ok}))


def _peak_rss():
    """Peak resident memory of this process in MiB."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(steps, whole, mem_limit, timeout, chunk, fori=False):
    """One fresh process; its report, or {"error": why}."""
    cache = tempfile.mkdtemp(prefix="funcgrad-compile-size-")
    env = dict(os.environ, FUNCGRAD_CACHE_DIR=cache)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", str(steps),
           "--mem-limit", str(mem_limit), "--chunk", str(chunk)] + (["--whole"] if whole else [])
    cmd += ["--fori"] if fori else []
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"exit {proc.returncode}: {last[:80]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def row(steps, whole, args, fori=False):
    runs = []
    kind = "one function" if whole else "fg.fori_loop" if fori else "default"
    for _ in range(args.repeat):
        r = measure(steps, whole, args.mem_limit, args.timeout, args.chunk, fori)
        if "error" in r:
            return f"{steps:6d}  {kind:12s}  {r['error']}", False
        runs.append(r)
    med = lambda k: statistics.median(r[k] for r in runs)
    ok = all(r["ok"] for r in runs)
    text = (f"{steps:6d}  {kind:12s}  {runs[0]['eqns']:7d}  "
            f"{runs[0]['parts']:5d}  {med('trace'):7.2f}  {med('first'):9.2f}  "
            f"{max(r['rss'] for r in runs):8.0f}  {'ok' if ok else 'MISMATCH'}")
    return text, ok


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", default=",".join(map(str, DEFAULT_STEPS)),
                   help="comma-separated unrolled step counts")
    p.add_argument("--repeat", type=int, default=3, help="runs per size (median time)")
    p.add_argument("--whole", action="store_true",
                   help="also time the unsplit kernel (one function, vecmath inlined)")
    p.add_argument("--mem-limit", type=int, default=6 << 30, help="bytes of address space")
    p.add_argument("--timeout", type=int, default=600, help="seconds per run")
    p.add_argument("--fori", action="store_true",
                   help="also time the same steps as one fg.fori_loop (the body recorded once)")
    p.add_argument("--chunk", type=int, default=0,
                   help="equations per part (split.CHUNK_SIZE; 0: funcgrad's default)")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child is not None:
        return child(args.child, args.whole, args.mem_limit, args.chunk, args.fori)
    steps = [int(s) for s in args.steps.split(",")]
    print(f"fg.jit(fg.grad(f)), f = {EQNS_PER_STEP}-equation step unrolled; x: float64[3]; "
          f"{args.repeat} fresh process(es) per row, cold cache; times in s, median; "
          f"peak RSS in MiB, max; {os.cpu_count()} CPUs")
    print(f"{'steps':>6s}  {'kernel':12s}  {'eqns':>7s}  {'parts':>5s}  {'trace':>7s}  "
          f"{'1st call':>9s}  {'peak RSS':>8s}  check")
    failed = False
    for s in steps:
        kinds = [(False, False)] + [(True, False)] * args.whole + [(False, True)] * args.fori
        for whole, fori in kinds:
            text, ok = row(s, whole, args, fori)
            failed |= not ok and not whole
            print(text, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
