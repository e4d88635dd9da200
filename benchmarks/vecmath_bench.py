"""Vectorised elementary functions (funcgrad/backend/vecmath.py) against libm and NumPy.

    python benchmarks/vecmath_bench.py [--quick] [--accuracy]

For each function and dtype, ns per element over 10**6 elements of
  (a) a Numba loop calling np.<f> (Numba lowers it to a scalar libm call),
  (b) the same loop calling vecmath's function,
  (c) NumPy's ufunc on the whole array (SIMD where NumPy has a kernel for this CPU),
whether loop (b) vectorised (LLVM IR with <N x double|float> operations), and b's speedups.
Then two fused kernels as funcgrad's backend generates them: sin(x)*exp(-x*x) + log1p(x*x)
over 10**6 elements and tanh over 256x128. --accuracy adds the max ulp error of (b) and of
NumPy against long-double references on 2 * 10**6 points per function spread over all
magnitudes (float32: against float64).
"""
import argparse
import os
import re
import sys
import time

import llvmlite.binding as llvm
import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from funcgrad.backend.vecmath import FUNCTIONS, TRIG_MAX

NAMES = ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh")
DOMAIN = {"exp": (-5, 5), "expm1": (-5, 5), "log": (0.01, 100), "log1p": (-0.9, 10),
          "sin": (-10, 10), "cos": (-10, 10), "tanh": (-5, 5)}
N = 10 ** 6
# scalar float calls, or vector math intrinsics (without a vector math library LLVM expands
# them into one libm call per lane)
LIBM_CALLS = (r"call [^<]*(double|float) @"
              r"|@llvm\.(exp|exp2|exp10|log|log2|log10|sin|cos|tan|tanh|pow)\.v")


def timed(fn, args, repeats):
    """Median seconds of one call fn(*args), after a warm-up call."""
    fn(*args)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def ufunc_into(name):
    ufunc = getattr(np, name)
    return lambda a, out: ufunc(a, out=out)


def loop_over(f):
    @numba.njit(error_model="numpy")
    def loop(a, out):
        for i in range(a.size):
            out[i] = f(a[i])
    return loop


def vectorised(dispatcher):
    """True if LLVM vectorised the loop with SIMD arithmetic: a vector.body block with vector
    float operations and no scalar float calls (a loop of libm calls gets vectorised too, but
    calls libm once per lane)."""
    llvm = "".join(dispatcher.inspect_llvm().values())
    body = llvm[llvm.find("vector.body:"):llvm.find("middle.block:")]
    return ("vector.body:" in llvm and bool(re.search(r"<\d+ x (double|float)>", body))
            and not re.search(LIBM_CALLS, body))


def function_table(dtype, repeats):
    rng = np.random.default_rng(0)
    print(f"\n{dtype}: ns per element, {N} elements (median of {repeats})")
    print(f"{'function':9} {'(a) libm':>9} {'(b) ours':>9} {'(c) numpy':>9} "
          f"{'vectorised':>10} {'a/b':>6} {'c/b':>6}")
    for name in NAMES:
        x = rng.uniform(*DOMAIN[name], N).astype(dtype)
        out = np.empty_like(x)
        libm, ours = loop_over(getattr(np, name)), loop_over(FUNCTIONS[name, dtype])
        ta, tb, tc = (timed(f, (x, out), repeats) for f in (libm, ours, ufunc_into(name)))
        ns = [t / N * 1e9 for t in (ta, tb, tc)]
        print(f"{name:9} {ns[0]:9.2f} {ns[1]:9.2f} {ns[2]:9.2f} {vectorised(ours)!s:>10} "
              f"{ta / tb:6.1f} {tc / tb:6.1f}")


def fused_kernels(repeats):
    f = {n: FUNCTIONS[n, "float64"] for n in NAMES}
    sin, exp, log1p, tanh = f["sin"], f["exp"], f["log1p"], f["tanh"]

    @numba.njit(error_model="numpy")
    def w1_libm(a, out):
        for i in range(a.size):
            x = a[i]
            out[i] = np.sin(x) * np.exp(-x * x) + np.log1p(x * x)

    @numba.njit(error_model="numpy")
    def w1_ours(a, out):
        for i in range(a.size):
            x = a[i]
            out[i] = sin(x) * exp(-x * x) + log1p(x * x)

    @numba.njit(error_model="numpy")
    def tanh_libm(a, out):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[i, j] = np.tanh(a[i, j])

    @numba.njit(error_model="numpy")
    def tanh_ours(a, out):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[i, j] = tanh(a[i, j])

    rng = np.random.default_rng(1)
    x1 = rng.standard_normal(N)
    x2 = rng.standard_normal((256, 128)) * 2
    # (label, input, libm loop, our loop, NumPy expression, size of the terms for the error)
    cases = [("sin(x)*exp(-x*x)+log1p(x*x)", x1, w1_libm, w1_ours,
              lambda x, o: np.add(np.sin(x) * np.exp(-x * x), np.log1p(x * x), out=o),
              np.abs(np.sin(x1) * np.exp(-x1 * x1)) + np.abs(np.log1p(x1 * x1))),
             ("tanh(x), 256x128", x2, tanh_libm, tanh_ours, lambda x, o: np.tanh(x, out=o),
              np.abs(np.tanh(x2)))]
    print(f"\nfused float64 kernels: ns per element (median of {repeats})")
    print(f"{'kernel':30} {'(a) libm':>9} {'(b) ours':>9} {'(c) numpy':>9} "
          f"{'vectorised':>10} {'a/b':>6} {'c/b':>6} {'max |b-c|/size':>14}")
    for label, x, libm, ours, npy, size in cases:
        out, ref = np.empty_like(x), np.empty_like(x)
        reps = repeats * (10 if x.size < N else 1)
        ta, tb = timed(libm, (x, out), reps), timed(ours, (x, out), reps)
        tc = timed(npy, (x, ref), reps)
        ns = [t / x.size * 1e9 for t in (ta, tb, tc)]
        diff = np.max(np.abs(out - ref) / size)
        print(f"{label:30} {ns[0]:9.2f} {ns[1]:9.2f} {ns[2]:9.2f} {vectorised(ours)!s:>10} "
              f"{ta / tb:6.1f} {tc / tb:6.1f} {diff:14.2e}")


def accuracy_table(n):
    """Max ulp error over log-uniform magnitudes of both signs (and the domain edges)."""
    rng = np.random.default_rng(2)

    def points(name, dtype):
        fi = np.finfo(dtype)
        hi = {"exp": np.log(fi.max) * 1.01, "expm1": np.log(fi.max) * 1.01, "tanh": 30.0}
        m = np.exp(rng.uniform(np.log(fi.smallest_subnormal if name == "log" else 1e-20),
                               np.log(hi.get(name, float(fi.max))), n))
        x = m if name == "log" else m * rng.choice([-1.0, 1.0], n)
        if name == "log1p":
            x = np.where(x < -1, -x, x)
        if name == "exp":               # subnormal results
            x[: n // 10] = rng.uniform(np.log(fi.smallest_subnormal), np.log(fi.tiny), n // 10)
        with np.errstate(over="ignore"):
            return x.astype(dtype)

    from funcgrad.testing import ulp_errors as ulps

    print(f"\nmax ulp error on {n} points per function (all magnitudes; sin/cos to 1e300,"
          f" libm beyond |x| = {TRIG_MAX:g})")
    print(f"{'function':9} {'f64 ours':>9} {'f64 numpy':>9} {'f32 ours':>9} {'f32 numpy':>9}")
    extended = np.finfo(np.longdouble).nmant >= 63
    for name in NAMES:
        row = []
        for dtype, wide in (("float64", np.longdouble), ("float32", np.float64)):
            if dtype == "float64" and not extended:
                row += [float("nan")] * 2
                continue
            x = points(name, dtype)
            got = np.empty_like(x)
            loop_over(FUNCTIONS[name, dtype])(x, got)
            with np.errstate(all="ignore"):
                ref = getattr(np, name)(x.astype(wide))
                row += [ulps(got, ref).max(), ulps(getattr(np, name)(x), ref).max()]
        print(f"{name:9} " + " ".join(f"{v:9.3f}" for v in row))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 repeats instead of 15")
    ap.add_argument("--accuracy", action="store_true", help="also measure max ulp errors")
    args = ap.parse_args()
    repeats = 3 if args.quick else 15
    print(f"numba {numba.__version__}, numpy {np.__version__}, "
          f"CPU {numba.config.CPU_NAME or llvm.get_host_cpu_name()}")
    for dtype in ("float64", "float32"):
        function_table(dtype, repeats)
    fused_kernels(repeats)
    if args.accuracy:
        accuracy_table(2 * 10 ** 6)


if __name__ == "__main__":
    main()
