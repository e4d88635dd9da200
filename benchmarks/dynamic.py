"""Dynamic Python: what a guarded compiled call costs, and what a new path costs.

    python benchmarks/dynamic.py [--quick]

D1  Per-call time of small functions whose Python `if` reads a traced value, against the same
    function written without the decision (unguarded), for fg.jit(f), fg.jit(fg.grad(f)) and
    the hot tiered fg.grad(f): the cost of checking a guard on every call.
D2  A `while` whose trip count depends on the value (Newton's square root): per-call time once
    its paths are compiled, the path count, and the cost of a call that takes a new path
    (trace + compile of that path, and trace + a kernel already in the cache) against a call
    of a compiled path.
D3  Calls that alternate between two compiled paths (an `if` before matrix products): each
    call first tries the other path's kernel, which returns as soon as its decision fails;
    the pair against the two paths called alone.
D4  The state check of a hot tiered function (tiering.py, guards.py; no compiling): the walk of
    everything f reads from outside its arguments (state_key) on every call, and the
    straight-line check generated from it once f is hot (compile_guard), for a
    module-level function, W3's closure over a namespace of five functions, and a function
    that closes over a 20 MB array (digested on every call).

    python benchmarks/dynamic.py --only D4      # seconds; --only takes a comma-separated list

Times are medians; the guarded and unguarded kernels do the same arithmetic, so the difference
is the guard check (the kernel checks the decision where it computes it, returns early when
it fails, and returns it; Python compares it).
"""
import os
import sys
import tempfile
import time

os.environ.setdefault("FUNCGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="funcgrad-dynamic-bench-"))

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
fg.config.update("jit_background", False)   # timings of kernels: compile on the first call

QUICK = "--quick" in sys.argv
ONLY = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
FAILURES = []


def median_us(fn, arg, n, repeats):
    for _ in range(30):
        fn(arg)
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn(arg)
        ts.append((time.perf_counter() - t) / n * 1e6)
    return float(np.median(ts))


def guarded(x):
    if fnp.sum(x) > 0:                       # a decision on a traced value
        return fnp.sum(x ** 3)
    return fnp.sum(fnp.sin(x))


def unguarded(x):
    return fnp.sum(x ** 3)


def d1(n, repeats):
    print("D1  guard check per call (x of 3 elements, the `if` branch always taken)")
    print(f"{'transform':28s} {'guarded':>10s} {'unguarded':>10s} {'difference':>11s}")
    x = np.array([0.5, 1.5, 0.2])
    for name, make in (("fg.jit(f)", fg.jit), ("fg.jit(fg.grad(f))", lambda f: fg.jit(fg.grad(f))),
                       ("fg.grad(f) (hot, tiered)", fg.grad)):
        g, u = median_us(make(guarded), x, n, repeats), median_us(make(unguarded), x, n, repeats)
        print(f"{name:28s} {g:8.2f}us {u:8.2f}us {g - u:+9.2f}us")


def newton_sqrt(a):
    x = a
    while fnp.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def d2(n, repeats):
    print("\nD2  a `while` with a value-dependent trip count: fg.jit(fg.grad(newton_sqrt))")
    values = [2.0, 3.0, 5.0, 7.0]                # 5-6 Newton steps each: a few distinct paths
    jg = fg.jit(fg.grad(newton_sqrt))
    firsts = []
    for a in values:
        t = time.perf_counter()
        got = jg(a)
        firsts.append(time.perf_counter() - t)
        if not np.isclose(got, 0.5 / np.sqrt(a), rtol=1e-9):
            print(f"!!!!!!!! D2 wrong derivative at {a}: {got}")
            FAILURES.append(a)
    paths = sum(len(e.paths) for e in jg._entries.values())
    per_call = median_us(lambda a: jg(a), values[0], n, repeats)
    again = fg.jit(fg.grad(newton_sqrt))         # a new function object: kernels from cache
    t = time.perf_counter()
    for a in values:
        again(a)
    cached = (time.perf_counter() - t) / len(values)
    print(f"paths compiled for {len(values)} values: {paths}")
    print(f"call of a compiled path (median):          {per_call:10.2f}us")
    print(f"call taking a new path, trace + compile:   {np.median(firsts) * 1e3:10.1f}ms "
          "(median over the values; the first includes Numba's start-up)")
    print(f"call taking a new path, kernel in cache:   {cached * 1e3:10.1f}ms")


def products(A, x):
    B = A @ A @ A if fnp.sum(x) > 0 else A.T @ A
    return B @ x


def d3(repeats):
    print("\nD3  calls alternating between two compiled paths (fg.jit(products), A 300x300)")
    A, x = np.random.default_rng(0).random((300, 300)), np.ones(300)
    jf = fg.jit(products)
    jf(A, x), jf(A, -x)
    n = 10 if QUICK else 40

    def pair(_):
        jf(A, x)
        jf(A, -x)
    alone = sum(median_us(lambda s: jf(A, s), s, n, repeats) for s in (x, -x))
    both = median_us(pair, None, n, repeats)
    print(f"the two paths called alone, summed:  {alone / 1e3:8.3f}ms")
    print(f"the two called alternately (a pair): {both / 1e3:8.3f}ms "
          f"(each call first tries the other path: {(both - alone) / 2:+.1f}us per call)")


BIG = np.random.default_rng(1).random(2_500_000)     # 20 MB


def reads_big(x):
    return fnp.sum(x * BIG[:3])


def d4(n, repeats):
    from funcgrad.guards import compile_guard, state_key
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from workloads import ops, rosenbrock_loss
    print("\nD4  state check of a hot tiered function: the walk, and the generated check")
    print(f"{'function':34s} {'walk':>10s} {'check':>10s}")
    for name, f, calls in (("module-level (unguarded above)", unguarded, n),
                           ("W3's closure (workloads.py)", rosenbrock_loss(ops("funcgrad")), n),
                           ("closes over a 20 MB array", reads_big, 30)):
        guard = compile_guard(f, state_key(f))
        walk = median_us(state_key, f, calls, repeats)
        check = median_us(guard, f, calls, repeats) if guard is not None else float("nan")
        print(f"{name:34s} {walk:8.2f}us {check:8.2f}us")


if __name__ == "__main__":
    n, repeats = (2000, 3) if QUICK else (20000, 7)
    for key, run in (("D1", lambda: d1(n, repeats)), ("D2", lambda: d2(n, repeats)),
                     ("D3", lambda: d3(repeats)), ("D4", lambda: d4(n, repeats))):
        if ONLY is None or key in ONLY:
            run()
    if FAILURES:
        sys.exit(1)
