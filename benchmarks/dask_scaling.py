"""fg.dask scaling: time per gradient step against data size, one process against a
distributed.LocalCluster of 2 worker processes, side by side; the first step's cost with and
without fg.dask.warmup and a shared kernel cache; the break-even data size. Medians; these
machines have 2 cores, so the cluster can at best halve the compute and adds its scheduling.

    python benchmarks/dask_scaling.py [--quick]

Loss: logistic regression, sum over rows of log(1 + exp(x.w)) - y x.w, D = 16 features, the
data generated on the workers (dask.array.random) and persisted there, 4 chunks of rows.
One process: fg.jit(fg.value_and_grad(loss)) on the same data in memory.
"""
import os
import sys
import tempfile
import time

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
fg.config.update("jit_background", False)   # timings of kernels: compile on the first call
from timing import median_seconds

QUICK = "--quick" in sys.argv
D = 16
SIZES = [10_000, 100_000, 1_000_000] if QUICK else [10_000, 100_000, 300_000, 1_000_000, 3_000_000]


def loss(w, X, y):
    z = X @ w
    return fnp.sum(fnp.logaddexp(0.0, z) - y * z)


def data(n, da):
    rng = da.random.default_rng(n)
    X = rng.standard_normal((n, D), chunks=(-(-n // 4), D))
    y = (rng.random(n, chunks=-(-n // 4)) < 0.5).astype(np.float64)
    return X, y


def wait(futures):
    from distributed import wait as wait_for
    wait_for(futures)


def cluster():
    from distributed import Client, LocalCluster
    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    return c, Client(c)


def first_step(cache_dir, warm):
    """(warmup seconds or None, first step seconds) on a fresh cluster using cache_dir."""
    import dask.array as da
    os.environ["FUNCGRAD_CACHE_DIR"] = cache_dir          # (workers inherit the environment)
    c, client = cluster()
    try:
        X, y = data(100_000, da)
        X, y = client.persist([X, y])
        wait([X, y])
        w = np.zeros(D)
        vg = fg.dask.value_and_grad(loss)
        t_warm = None
        if warm:
            t = time.perf_counter()
            fg.dask.warmup(client, vg, w, X, y)
            t_warm = time.perf_counter() - t
        t = time.perf_counter()
        vg(w, X, y)
        return t_warm, time.perf_counter() - t
    finally:
        client.close()
        c.close()


def main():
    import dask.array as da
    root = tempfile.mkdtemp(prefix="funcgrad-dask-bench-")
    os.environ["FUNCGRAD_CACHE_DIR"] = os.path.join(root, "steps")
    w = 0.01 * np.ones(D)
    local = fg.jit(fg.value_and_grad(loss), background=False)
    c, client = cluster()
    rows = []
    try:
        vg = fg.dask.value_and_grad(loss)
        for n in SIZES:
            X, y = client.persist(list(data(n, da)))
            wait([X, y])
            Xn, yn = X.compute(), y.compute()
            fg.dask.warmup(client, vg, w, X, y)
            local(w, Xn, yn)
            repeats = 30 if n <= 100_000 else 10
            t1 = median_seconds(lambda: local(w, Xn, yn), repeats)
            t2 = median_seconds(lambda: vg(w, X, y), repeats)
            v1, v2 = local(w, Xn, yn)[0], vg(w, X, y)[0]
            assert abs(v1 - v2) <= 1e-12 * abs(v1), (v1, v2)
            rows.append((n, t1, t2))
            del X, y, Xn, yn
    finally:
        client.close()
        c.close()
    print(f"per gradient step (median), D = {D}, 4 chunks; 2 cores")
    print(f"{'rows':>10} {'one process':>13} {'2 workers':>11} {'ratio':>7}")
    for n, t1, t2 in rows:
        print(f"{n:>10,} {t1 * 1e3:10.2f} ms {t2 * 1e3:8.2f} ms {t1 / t2:7.2f}")
    even = next((n for n, t1, t2 in rows if t2 < t1), None)
    print("break-even: " + (f"about {even:,} rows (the first size where 2 workers win)"
                            if even else f"not reached up to {SIZES[-1]:,} rows"))
    cold = first_step(os.path.join(root, "cold"), warm=False)
    warm = first_step(os.path.join(root, "warm"), warm=True)
    shared = first_step(os.path.join(root, "cold"), warm=False)     # the cache cold filled
    print("first step on a fresh cluster (100,000 rows):")
    print(f"  no warmup, empty cache:   {cold[1]:.2f} s")
    print(f"  warmup {warm[0]:.2f} s, then the step: {warm[1] * 1e3:.1f} ms")
    print(f"  no warmup, shared cache:  {shared[1]:.2f} s (kernels loaded, not compiled)")


if __name__ == "__main__":
    main()
