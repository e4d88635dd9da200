"""Multi-core kernels: fg.jit(fg.grad(f)) with parallel=False vs parallel=True at 1 and 2 threads.

    python benchmarks/parallel.py [--quick] [--only W1,W2] [--threads 1,2] [--no-extra]
                                  [--blas-threads 1]

W1, W2 and W4 come from workloads.py (see README.md). Extra rows (X1-X3, leave out with
--no-extra) time the kinds of loops parallel=True now splits into chunks, alone: a max and
column sums (reductions over axis 0) and Rosenbrock's gradient at N = 10**6 (its scatter-adds).

For each row: the serial kernel, then the parallel kernel with numba.set_num_threads(t) for
each t. Every gradient is checked against the hand-written one (rtol 1e-9) and the parallel
result against the serial one; the timed calls are interleaved (serial, t=1, t=2, serial, ...)
so that load from other processes on the machine hits every column alike. Medians over the
repeats of (a loop of r calls) / r, r chosen so that a loop takes >= 50 ms.

speed-up = serial median / parallel median; efficiency = speed-up / threads. "parallel
loops" counts the loop nests of the parallel kernel that run with prange (plain, or split
into chunks with partial results: backend/loop_reductions.py) out of all its fused loops.

OpenBLAS runs single-threaded (--blas-threads 1, the default; set before NumPy is imported):
W4's matrix products are then the same serial work in every column, and OpenBLAS's threads do
not spin against Numba's on a 2-core machine. The last lines say how much CPU time other
processes took during the run: on a machine shared with other work the 2-thread column
measures the scheduler more than the kernels (a prange region waits for its slowest thread).
"""
import argparse
import os
import sys
import time

if __name__ == "__main__":          # before NumPy loads OpenBLAS
    _blas = sys.argv[sys.argv.index("--blas-threads") + 1] if "--blas-threads" in sys.argv else "1"
    os.environ.setdefault("OPENBLAS_NUM_THREADS", _blas)
    os.environ.setdefault("MKL_NUM_THREADS", _blas)

import numba                                # noqa: E402
import numpy as np                          # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import funcgrad as fg                       # noqa: E402
import funcgrad.numpy as fnp                # noqa: E402
fg.config.update("jit_background", False)   # timings of kernels: compile on the first call
from timing import calls_per_loop            # noqa: E402
from workloads import BY_KEY, ops           # noqa: E402

RTOL = 1e-9
MIN_REPEAT_S = 0.05
WARMUP_CALLS = 10


def leaves(tree):
    return [tree[k] for k in sorted(tree)] if isinstance(tree, dict) else list(tree) \
        if isinstance(tree, (tuple, list)) else [tree]


def close(got, want, rtol=RTOL):
    for g, r in zip(leaves(got), leaves(want)):
        g, r = np.asarray(g), np.asarray(r)
        scale = max(float(np.max(np.abs(r))), 1e-300)
        if g.shape != r.shape or not np.allclose(g, r, rtol=rtol, atol=rtol * 1e-3 * scale):
            return False
    return True


def extra_rows():
    """(key, title, function, args, reference) of loops that need chunks to run in parallel."""
    rng = np.random.default_rng(2)
    x, m = rng.standard_normal(10 ** 6), rng.standard_normal((1000, 1000))
    rosen = BY_KEY["W2"]
    big = (rng.uniform(-1.0, 1.0, 10 ** 6),)
    return [
        ("X1", "max(x), n=10**6 (forward only)", fnp.max, (x,), np.max(x)),
        ("X2", "sum(tanh(m), axis=0), 1000x1000 (forward only)",
         lambda m: fnp.sum(fnp.tanh(m), axis=0), (m,), np.sum(np.tanh(m), axis=0)),
        ("X3", "grad Rosenbrock, N=10**6", fg.grad(rosen.loss(ops("funcgrad"))), big,
         rosen.hand(*big)),
    ]


def rows(only, extra):
    xp = ops("funcgrad")
    for key in ("W1", "W2", "W4"):
        if only and key not in only:
            continue
        w = BY_KEY[key]
        args = w.make_args()
        yield key, w.title, fg.grad(w.loss(xp)), args, w.hand(*args)
    for row in extra_rows() if extra else ():
        if not only or row[0] in only:
            yield row


def calibrate(call, args):
    return calls_per_loop(call, args, MIN_REPEAT_S, WARMUP_CALLS)


def loop_counts(source):
    """(fused loop nests, run with plain prange, run as chunks) in a kernel's source."""
    lines = [ln.strip() for ln in source.splitlines()]
    fused = plain = chunked = 0
    for k, ln in enumerate(lines):
        if not ln.startswith("# fused loop over (") or ln.startswith("# fused loop over ()"):
            continue
        fused += 1
        first = next((x for x in lines[k + 1:] if x.startswith("for ") or x.startswith("#")), "")
        chunked += " in numba.prange(pn" in first
        plain += first.startswith("for i0 in numba.prange(")
    return fused, plain, chunked


def bench(key, title, f, args, ref, threads, repeats):
    serial = fg.jit(f, background=False)
    par = fg.jit(f, parallel=True, background=False)
    ok = close(serial(*args), ref) and close(par(*args), ref)
    same = close(par(*args), serial(*args), rtol=1e-13)
    source = par.lower(*args).compile(parallel=True).source
    fused, plain, chunked = loop_counts(source)
    columns = [("serial", None)] + [(f"t={t}", t) for t in threads]
    loops = {}
    for name, t in columns:
        if t is not None:
            numba.set_num_threads(t)
        fn = serial if t is None else par
        loops[name] = (fn, calibrate(fn, args), t)
    times = {name: [] for name, _ in columns}
    for _ in range(repeats):                   # interleaved: load hits every column alike
        for name, (fn, r, t) in loops.items():
            if t is not None:
                numba.set_num_threads(t)
            t0 = time.perf_counter()
            for _ in range(r):
                fn(*args)
            times[name].append((time.perf_counter() - t0) / r)
    numba.set_num_threads(max(threads))
    med = {name: float(np.median(v)) for name, v in times.items()}
    return dict(key=key, title=title, ok=ok, same=same, med=med, loops=(fused, plain, chunked))


def busy_seconds():
    """(CPU seconds all processes have used, those this process has used) so far."""
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    busy = sum(fields) - fields[3] - fields[4]          # all but idle and iowait
    own = os.times()
    return busy / os.sysconf("SC_CLK_TCK"), own.user + own.system


def fmt(seconds):
    return f"{seconds * 1e3:8.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:8.1f} us"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 repeats instead of 15")
    ap.add_argument("--only", default="", help="comma-separated keys, e.g. W2,X3")
    ap.add_argument("--threads", default="1,2", help="thread counts of the parallel columns")
    ap.add_argument("--no-extra", action="store_true", help="only W1, W2, W4")
    ap.add_argument("--blas-threads", default="1", help="OpenBLAS threads (read before import)")
    a = ap.parse_args(argv)
    threads = [int(t) for t in a.threads.split(",")]
    top = numba.config.NUMBA_NUM_THREADS
    if max(threads) > top:
        sys.exit(f"numba has {top} threads here (NUMBA_NUM_THREADS); asked for {max(threads)}")
    repeats = 5 if a.quick else 15
    only = {k.strip() for k in a.only.split(",") if k.strip()}
    results, bad = [], False
    start, wall = busy_seconds(), time.perf_counter()
    for row in rows(only, not a.no_extra):
        res = bench(*row, threads, repeats)
        results.append(res)
        if not (res["ok"] and res["same"]):
            bad = True
            print(f"\n!!!!!!!! {res['key']}: gradient check failed (vs hand-written: {res['ok']}, "
                  f"parallel vs serial: {res['same']})\n", flush=True)
    (all_end, own_end), wall = busy_seconds(), time.perf_counter() - wall
    foreign = max(0.0, (all_end - start[0]) - (own_end - start[1]))
    print(f"# {os.cpu_count()} CPUs, numba {numba.__version__} ({numba.threading_layer()} threading "
          f"layer), NUMBA_NUM_THREADS={top}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}, {repeats} repeats, medians")
    head = f"{'':4} {'serial':>11}" + "".join(f" {'par t=' + str(t):>11} {'speed-up':>8} {'eff.':>5}"
                                              for t in threads)
    print(head + "  parallel loops  check  workload")
    for res in results:
        s = res["med"]["serial"]
        line = f"{res['key']:4} {fmt(s):>11}"
        for t in threads:
            p = res["med"][f"t={t}"]
            line += f" {fmt(p):>11} {s / p:7.2f}x {s / p / t:5.2f}"
        fused, plain, chunked = res["loops"]
        loops = f"{plain + chunked}/{fused} ({chunked} chunked)"
        line += f"  {loops:>14}  {'ok' if res['ok'] and res['same'] else 'FAIL':5}  {res['title']}"
        print(line)
    print(f"# other processes used {foreign:.1f} CPU-s during the {wall:.1f} s run "
          f"({100 * foreign / wall:.0f}% of one core; load average now {os.getloadavg()[0]:.2f})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
