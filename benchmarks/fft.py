"""FFT benchmarks: spectral losses and their gradients side by side, and what rocket-fft inside
Numba costs against NumPy's pocketfft for a bare transform.

    python benchmarks/fft.py [--quick]

S1  1-D spectral smoothing misfit, n = 4096: sum((irfft(H * rfft(x)) - d)^2), H a real
    Gaussian low-pass.
S2  2-D phase hologram, 128 x 128: sum((|fft2(A exp(i phi))|^2 / N^2 - T)^2) of a real phase
    phi (complex values inside, a real parameter, so every framework's gradient is the same).
S3  S1 at n = 64: per-call overhead.

Forward: plain NumPy (the unit), fg.jit (rocket-fft in the kernel), jax.jit (x64) when
installed. Gradient: the adjoint written by hand in NumPy (the reference every gradient is
checked against, rtol 1e-9), fg.jit(fg.grad), fg.grad kept in the interpreter, jax.jit(jax.grad)
and autograd when installed. Then the bare transforms: np.fft.* called from Python against a
@numba.njit function calling the same np.fft.* (rocket-fft), called from Python and called in a
loop inside Numba (no dispatch).

Medians over repeats (11, or 3 with --quick) of loops of calls lasting >= 50 ms (20 ms with
--quick), after warm-up. `first` is build + two calls (fg.jit: the first call may be answered
by the interpreter while the kernel compiles, the second waits for it), with funcgrad's kernel
cache pointed at a fresh directory. A mismatch or an error is printed loudly and makes the exit
status 1.
"""
import atexit
import os
import shutil
import sys
import tempfile
import time

if "FUNCGRAD_CACHE_DIR" not in os.environ:                # cold compiles, cleaned up at exit
    _CACHE = tempfile.mkdtemp(prefix="funcgrad-fft-bench-")
    os.environ["FUNCGRAD_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

import numba  # noqa: E402
import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
fg.config.update("jit_background", False)   # timings of kernels: compile on the first call
from funcgrad.tiering import policy  # noqa: E402
from timing import calls_per_loop  # noqa: E402

QUICK = "--quick" in sys.argv
REPEATS = 3 if QUICK else 11
MIN_LOOP_S = 0.02 if QUICK else 0.05
RTOL = 1e-9
FAILURES = []


def loud(msg):
    print(f"\n!!!!!!!! {msg}\n", flush=True)
    FAILURES.append(msg)


# ---- the problems, each written once against a namespace xp (xp.fft: its FFT module) -------

def smoothing(n):
    freqs = np.fft.rfftfreq(n)
    H = np.exp(-0.5 * (freqs / 0.05) ** 2)
    rng = np.random.default_rng(0)
    d = np.cumsum(rng.standard_normal(n)) / np.sqrt(n)

    def make(xp):
        def loss(x):
            return xp.sum((xp.fft.irfft(H * xp.fft.rfft(x), n) - d) ** 2)
        return loss

    def by_hand(x):
        # S = irfft(H rfft(.)) is a circulant convolution with an even kernel (H is real), so
        # S is symmetric and the gradient is 2 S (S x - d)
        S = lambda v: np.fft.irfft(H * np.fft.rfft(v), n)
        return 2.0 * S(S(x) - d)
    return make, by_hand, (rng.standard_normal(n),)


def hologram(N):
    yy, xx = np.mgrid[-1:1:N * 1j, -1:1:N * 1j]
    A = np.exp(-(xx ** 2 + yy ** 2) / 0.3)
    T = np.zeros((N, N))
    T[N // 8:N // 4, N // 8:3 * N // 8] = 1.0                 # a bright bar off axis
    T *= np.sum(A ** 2) / np.sum(T)                              # the energy that arrives
    M = N * N

    def make(xp):
        def loss(phi):
            far = xp.fft.fft2(A * xp.exp(1j * phi))
            return xp.sum((xp.abs(far) ** 2 / M - T) ** 2)
        return loss

    def by_hand(phi):
        u = A * np.exp(1j * phi)
        far = np.fft.fft2(u)
        w = 4.0 / M * (np.abs(far) ** 2 / M - T) * far           # dL = Re sum conj(w) dfar
        v = M * np.fft.ifft2(w)                                  # the adjoint of fft2
        return -np.imag(u * np.conj(v))                          # du = i u dphi
    return make, by_hand, (np.random.default_rng(1).uniform(-np.pi, np.pi, (N, N)),)


PROBLEMS = [
    ("S1", "1-D smoothing misfit via rfft/irfft, n = 4096", smoothing(4096), "ms"),
    ("S2", "2-D phase hologram via fft2, 128 x 128", hologram(128), "ms"),
    ("S3", "1-D smoothing misfit via rfft/irfft, n = 64", smoothing(64), "us"),
]


def namespace(name):
    """(xp, to_array) for one framework; ImportError when it is not installed."""
    if name == "numpy":
        return np, np.asarray
    if name == "funcgrad":
        return fnp, np.asarray
    if name == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
        return jax.numpy, jax.numpy.asarray
    if name == "autograd":
        import autograd.numpy as anp
        return anp, np.asarray
    raise ValueError(name)


# ---- the implementations: each returns (call, args, is_gradient) -----------------------------

def interpreted(fn):
    def call(*args):
        saved, policy.threshold = policy.threshold, 0
        try:
            return fn(*args)
        finally:
            policy.threshold = saved
    return call


def jax_call(transform):
    def build(make, by_hand, args):
        import jax
        xp, to_array = namespace("jax")
        fn = jax.jit(transform(jax)(make(xp)))
        return (lambda *a: jax.block_until_ready(fn(*a))), tuple(map(to_array, args))
    return build


FORWARD = {
    "numpy": lambda make, by_hand, args: (make(np), args),
    "fg.jit": lambda make, by_hand, args: (fg.jit(make(fnp)), args),
    "jax.jit (x64)": jax_call(lambda jax: lambda f: f),
}
def autograd_grad(make, by_hand, args):
    import autograd
    return autograd.grad(make(namespace("autograd")[0])), args


GRADIENT = {
    "numpy adjoint by hand": lambda make, by_hand, args: (by_hand, args),
    "fg.jit(fg.grad)": lambda make, by_hand, args: (fg.jit(fg.grad(make(fnp))), args),
    "fg.grad, interpreted": lambda make, by_hand, args: (interpreted(fg.grad(make(fnp))), args),
    "jax.jit(jax.grad) (x64)": jax_call(lambda jax: jax.grad),
    "autograd.grad": autograd_grad,
}
COMPILED = ("fg.jit", "jax.jit (x64)", "fg.jit(fg.grad)", "jax.jit(jax.grad) (x64)")


# ---- timing ---------------------------------------------------------------------------------

def median_seconds(call, args):
    """Median over REPEATS of (a loop of r calls) / r, r chosen so a loop lasts MIN_LOOP_S."""
    r = calls_per_loop(call, args, MIN_LOOP_S, 15)      # (15: past funcgrad's tiering threshold)
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(r):
            call(*args)
        times.append((time.perf_counter() - t0) / r)
    return float(np.median(times))


def close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    scale = max(float(np.max(np.abs(want))), 1e-300)
    return got.shape == want.shape and np.allclose(got, want, rtol=RTOL, atol=RTOL * scale)


def run_one(key, name, build, problem, want):
    """(median s, first s or None, note) for one implementation; None if not installed."""
    make, by_hand, args = problem
    t0 = time.perf_counter()
    try:
        call, call_args = build(make, by_hand, args)
    except ImportError:
        return None
    try:
        call(*call_args)
        out = call(*call_args)
    except Exception as e:                         # noqa: BLE001 - reported, not hidden
        loud(f"{key} {name}: ERROR {type(e).__name__}: {e}")
        return None, None, "ERROR"
    first = time.perf_counter() - t0 if name in COMPILED else None
    seconds = median_seconds(call, call_args)
    if not (close(out, want) and close(call(*call_args), want)):
        against = "the hand-written adjoint" if np.ndim(want) else "NumPy's value"
        loud(f"{key} {name}: MISMATCH against {against}")
        return seconds, first, "MISMATCH"
    return seconds, first, "ok"


def fmt(seconds, unit):
    if seconds is None:
        return f"{'-':>12s}"
    return f"{seconds * 1e6:9.2f} us" if unit == "us" else f"{seconds * 1e3:9.3f} ms"


def spectral_tables():
    print(f"{'implementation':30s} {'median':>12s} {'vs np fwd':>10s} {'vs np grad':>11s} "
          f"{'first':>8s}  check")
    for key, title, problem, unit in PROBLEMS:
        make, by_hand, args = problem
        print(f"{key}: {title}", flush=True)
        want_value, want_grad = make(np)(*args), by_hand(*args)
        eps = 1e-6 * np.random.default_rng(2).standard_normal(args[0].shape)
        fd = (make(np)(args[0] + eps) - make(np)(args[0] - eps)) / 2
        if not np.isclose(fd, np.sum(want_grad * eps), rtol=1e-6):
            loud(f"{key}: the hand-written adjoint disagrees with a central difference")
        base = {}
        for table, want in ((FORWARD, want_value), (GRADIENT, want_grad)):
            for name, build in table.items():
                res = run_one(key, name, build, problem, want)
                if res is None:
                    print(f"  {name:28s} (not installed)")
                    continue
                seconds, first, note = res
                base.setdefault(table is GRADIENT, seconds)
                ratios = [f"{seconds / b:9.2f}x" if seconds and b else f"{'-':>10s}"
                          for b in (base[False], base.get(True))]
                shown_first = f"{first:7.2f}s" if first is not None else f"{'':8s}"
                print(f"  {name:28s} {fmt(seconds, unit)} {ratios[0]} {ratios[1]:>11s} "
                      f"{shown_first}  {note}", flush=True)


# ---- bare transforms: NumPy's pocketfft against rocket-fft in Numba -------------------------

@numba.njit(cache=False)
def nb_fft(a):
    return np.fft.fft(a)


@numba.njit(cache=False)
def nb_rfft(a):
    return np.fft.rfft(a)


@numba.njit(cache=False)
def nb_fft2(a):
    return np.fft.fft2(a)


def in_numba_loop(fn):
    @numba.njit(cache=False)
    def loop(a, reps):
        acc = 0.0
        for _ in range(reps):
            acc += fn(a).ravel()[0].real
        return acc
    return loop


def bare_transforms():
    rng = np.random.default_rng(3)
    cplx = lambda *s: rng.standard_normal(s) + 1j * rng.standard_normal(s)
    cases = [("fft, complex 64", np.fft.fft, nb_fft, cplx(64)),
             ("fft, complex 4096", np.fft.fft, nb_fft, cplx(4096)),
             ("rfft, real 64", np.fft.rfft, nb_rfft, rng.standard_normal(64)),
             ("rfft, real 4096", np.fft.rfft, nb_rfft, rng.standard_normal(4096)),
             ("fft2, complex 128 x 128", np.fft.fft2, nb_fft2, cplx(128, 128))]
    print("\nBare transforms: np.fft.* (pocketfft) vs @numba.njit calling it (rocket-fft)")
    print(f"  {'transform':26s} {'numpy':>12s} {'njit':>12s} {'njit/np':>8s} "
          f"{'in njit loop':>13s} {'loop/np':>8s}")
    for title, np_fn, nb_fn, a in cases:
        if not np.allclose(nb_fn(a), np_fn(a), rtol=1e-12, atol=1e-12 * np.abs(a).max()):
            loud(f"bare {title}: rocket-fft and NumPy disagree")
        reps = 64
        loop = in_numba_loop(nb_fn)
        t_np, t_nb = median_seconds(np_fn, (a,)), median_seconds(nb_fn, (a,))
        t_loop = median_seconds(loop, (a, reps)) / reps
        print(f"  {title:26s} {t_np * 1e6:9.2f} us {t_nb * 1e6:9.2f} us {t_nb / t_np:7.2f}x "
              f"{t_loop * 1e6:10.2f} us {t_loop / t_np:7.2f}x", flush=True)


def header():
    import importlib.metadata as meta
    versions = []
    for pkg in ("numpy", "numba", "rocket-fft", "jax", "autograd"):
        try:
            versions.append(f"{pkg} {meta.version(pkg)}")
        except meta.PackageNotFoundError:
            versions.append(f"{pkg} not installed")
    print(f"funcgrad {fg.__version__} | {' | '.join(versions)} | {os.cpu_count()} cores | "
          f"median of {REPEATS} repeats, each >= {MIN_LOOP_S * 1e3:.0f} ms")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5:
        print(f"note: load average {load:.2f}: other processes are running; medians are noisy")


def main():
    header()
    spectral_tables()
    bare_transforms()
    if FAILURES:
        print(f"\n{len(FAILURES)} check(s) failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
