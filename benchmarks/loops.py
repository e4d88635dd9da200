"""funcgrad loop benchmarks: reverse mode through fg.fori_loop / fg.while_loop / fg.scan.

    python benchmarks/loops.py

Three workloads, one table each (see benchmarks/README.md, "Loop benchmarks"):

  L1  Lorenz-63, RK4, 5,000 steps: gradient w.r.t. (sigma, rho, beta). Hand-written Numba
      forward + adjoint vs fg.jit(fg.grad(.)) with the state as three scalars and as a length-3
      array, vs jax.jit(jax.grad(.)) with lax.fori_loop (if JAX is installed).
  L2  Newton's iteration for sqrt(a) with a tolerance stop (fg.while_loop): per-call time in
      microseconds, dispatch included; JAX's reverse mode of while_loop is tried (it refuses).
  L3  Peak memory and time of the gradient of a 100,000-step loop on a 100-float carry, without
      and with checkpointing (scan / fori_loop(..., checkpoint=k)), each in a fresh process.

Every gradient is checked against a reference (hand-written adjoint, closed form, or the
un-checkpointed gradient); a mismatch or an error is printed loudly and makes the exit status 1.
funcgrad's persistent kernel cache is pointed at a fresh, empty directory for the run, so the
first-call times are cold trace + compile. JAX is optional and never required.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

# A fresh, empty kernel cache for this run (and its subprocesses), before funcgrad is imported:
# the "first call" columns then measure trace + compile, not a load from an earlier run's cache.
if "FUNCGRAD_LOOPS_CHILD" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="funcgrad-loops-cache-")
    os.environ["FUNCGRAD_CACHE_DIR"] = _CACHE
else:
    _CACHE = None
    if hasattr(os, "sched_setaffinity"):
        # one CPU: the kernel's per-CPU RSS counters then sum exactly, so the peak-RSS reading
        # resolves single arrays (a process that migrates between CPUs can miss ~1 MiB)
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import numba
import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
fg.config.update("jit_background", False)   # timings of kernels: compile on the first call

MICRO = "µs" if (sys.stdout.encoding or "").lower().startswith("utf") else "us"
RTOL = 1e-6
FAILURES = []


def loud(msg):
    print(f"!!!!!!!! {msg}", flush=True)
    FAILURES.append(msg)


def rel_diff(got, ref):
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    return float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)))


def median_call(fn, args, min_repeats=20, budget_s=0.6, warmup=3):
    """Median wall time of one call (time.perf_counter around each call), after `warmup` calls;
    at least `min_repeats` calls, more while the budget lasts."""
    for _ in range(warmup):
        fn(*args)
    times, start = [], time.perf_counter()
    while len(times) < min_repeats or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
        if len(times) >= 100_000:
            break
    return float(np.median(times)), len(times)


def first_call(make, args):
    """(function, result, seconds of its first call): build it, then time the first call."""
    fn = make()
    t0 = time.perf_counter()
    out = fn(*args)
    return fn, out, time.perf_counter() - t0


def try_jax():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def fmt_s(t):
    return f"{t:8.2f} s" if t is not None else f"{'-':>10}"


def fmt_ms(t):
    return f"{t * 1e3:9.3f} ms"


def fmt_us(t):
    return f"{t * 1e6:9.2f} {MICRO}"


# =============================================================================================
# L1: Lorenz-63, RK4
# =============================================================================================

DT, STEPS = 0.01, 5000
P0 = np.array([10.0, 20.0, 8.0 / 3.0])          # sigma, rho, beta


@numba.njit(cache=False, fastmath=False, error_model="numpy")
def _lorenz_rhs(x, y, z, s, r, b):
    return s * (y - x), x * (r - z) - y, x * y - b * z


@numba.njit(cache=False, fastmath=False, error_model="numpy")
def _lorenz_rhs_vjp(x, y, z, s, r, b, wx, wy, wz):
    """(J_u^T w, J_p^T w) of the Lorenz right-hand side at (x, y, z) for a cotangent w."""
    return (-s * wx + (r - z) * wy + y * wz, s * wx - wy + x * wz, -x * wy - b * wz,
            (y - x) * wx, x * wy, -z * wz)


@numba.njit(cache=False, fastmath=False, error_model="numpy")
def lorenz_hand_grad(p):
    """d/dp |u_N|^2: the forward RK4 sweep stores the states, the backward sweep recomputes the
    four stages of each step from its stored state and applies their adjoints by hand."""
    s, r, b = p[0], p[1], p[2]
    h = DT
    u = np.empty((STEPS + 1, 3))
    x, y, z = 1.0, 1.0, 1.0
    for n in range(STEPS):
        u[n, 0], u[n, 1], u[n, 2] = x, y, z
        k1x, k1y, k1z = _lorenz_rhs(x, y, z, s, r, b)
        k2x, k2y, k2z = _lorenz_rhs(x + 0.5 * h * k1x, y + 0.5 * h * k1y, z + 0.5 * h * k1z, s, r, b)
        k3x, k3y, k3z = _lorenz_rhs(x + 0.5 * h * k2x, y + 0.5 * h * k2y, z + 0.5 * h * k2z, s, r, b)
        k4x, k4y, k4z = _lorenz_rhs(x + h * k3x, y + h * k3y, z + h * k3z, s, r, b)
        x += h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y += h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z += h / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
    lx, ly, lz = 2.0 * x, 2.0 * y, 2.0 * z           # cotangent of the final state
    gs = gr = gb = 0.0
    for n in range(STEPS - 1, -1, -1):
        x, y, z = u[n, 0], u[n, 1], u[n, 2]
        k1x, k1y, k1z = _lorenz_rhs(x, y, z, s, r, b)
        x2, y2, z2 = x + 0.5 * h * k1x, y + 0.5 * h * k1y, z + 0.5 * h * k1z
        k2x, k2y, k2z = _lorenz_rhs(x2, y2, z2, s, r, b)
        x3, y3, z3 = x + 0.5 * h * k2x, y + 0.5 * h * k2y, z + 0.5 * h * k2z
        k3x, k3y, k3z = _lorenz_rhs(x3, y3, z3, s, r, b)
        x4, y4, z4 = x + h * k3x, y + h * k3y, z + h * k3z
        # u' = u + h/6 (k1 + 2 k2 + 2 k3 + k4)
        c6, c3 = h / 6.0, h / 3.0
        # k4 = f(u4), u4 = u + h k3
        ax, ay, az, ds, dr, db = _lorenz_rhs_vjp(x4, y4, z4, s, r, b, c6 * lx, c6 * ly, c6 * lz)
        gs += ds
        gr += dr
        gb += db
        ux, uy, uz = lx + ax, ly + ay, lz + az
        k3bx, k3by, k3bz = c3 * lx + h * ax, c3 * ly + h * ay, c3 * lz + h * az
        # k3 = f(u3), u3 = u + h/2 k2
        ax, ay, az, ds, dr, db = _lorenz_rhs_vjp(x3, y3, z3, s, r, b, k3bx, k3by, k3bz)
        gs += ds
        gr += dr
        gb += db
        ux, uy, uz = ux + ax, uy + ay, uz + az
        k2bx, k2by, k2bz = c3 * lx + 0.5 * h * ax, c3 * ly + 0.5 * h * ay, c3 * lz + 0.5 * h * az
        # k2 = f(u2), u2 = u + h/2 k1
        ax, ay, az, ds, dr, db = _lorenz_rhs_vjp(x2, y2, z2, s, r, b, k2bx, k2by, k2bz)
        gs += ds
        gr += dr
        gb += db
        ux, uy, uz = ux + ax, uy + ay, uz + az
        k1bx, k1by, k1bz = c6 * lx + 0.5 * h * ax, c6 * ly + 0.5 * h * ay, c6 * lz + 0.5 * h * az
        # k1 = f(u)
        ax, ay, az, ds, dr, db = _lorenz_rhs_vjp(x, y, z, s, r, b, k1bx, k1by, k1bz)
        gs += ds
        gr += dr
        gb += db
        lx, ly, lz = ux + ax, uy + ay, uz + az
    out = np.empty(3)
    out[0], out[1], out[2] = gs, gr, gb
    return out


def lorenz_tuple_loss(fori_loop):
    """|u_N|^2 with the state carried as a tuple of three scalars (x, y, z)."""
    def rhs(x, y, z, s, r, b):
        return s * (y - x), x * (r - z) - y, x * y - b * z

    def loss(p):
        s, r, b = p[0], p[1], p[2]

        def step(i, st):
            x, y, z = st
            k1 = rhs(x, y, z, s, r, b)
            k2 = rhs(x + 0.5 * DT * k1[0], y + 0.5 * DT * k1[1], z + 0.5 * DT * k1[2], s, r, b)
            k3 = rhs(x + 0.5 * DT * k2[0], y + 0.5 * DT * k2[1], z + 0.5 * DT * k2[2], s, r, b)
            k4 = rhs(x + DT * k3[0], y + DT * k3[1], z + DT * k3[2], s, r, b)
            return tuple(u + DT / 6.0 * (a + 2.0 * bb + 2.0 * c + d)
                         for u, a, bb, c, d in zip(st, k1, k2, k3, k4))

        x, y, z = fori_loop(0, STEPS, step, (1.0, 1.0, 1.0))
        return x * x + y * y + z * z
    return loss


def lorenz_array_loss(xp, fori_loop):
    """|u_N|^2 with the state a length-3 array, the right-hand side built with xp.stack."""
    def loss(p):
        def rhs(u):
            return xp.stack([p[0] * (u[1] - u[0]), u[0] * (p[1] - u[2]) - u[1],
                             u[0] * u[1] - p[2] * u[2]])

        def step(i, u):
            k1 = rhs(u)
            k2 = rhs(u + 0.5 * DT * k1)
            k3 = rhs(u + 0.5 * DT * k2)
            k4 = rhs(u + DT * k3)
            return u + DT / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

        u = fori_loop(0, STEPS, step, xp.array([1.0, 1.0, 1.0]))
        return xp.sum(u * u)
    return loss


def bench_lorenz():
    print(f"\nL1  Lorenz-63, RK4, dt={DT}, {STEPS} steps, u0=(1,1,1); grad of |u_N|^2 w.r.t. "
          f"(sigma, rho, beta) at (10, 20, 8/3)", flush=True)
    rows = []                  # (name, median, n, first, grad or None, note)
    p = P0.copy()
    _, ref, t_first = first_call(lambda: lorenz_hand_grad, (p,))
    t, n = median_call(lorenz_hand_grad, (p,))
    rows.append(("hand-written numba (fwd + adjoint)", t, n, t_first, ref, "reference"))

    impls = [("funcgrad jit(grad), tuple (x, y, z) carry",
              lambda: fg.jit(fg.grad(lorenz_tuple_loss(fg.fori_loop))), (p,), np.asarray),
             ("funcgrad jit(grad), length-3 array carry",
              lambda: fg.jit(fg.grad(lorenz_array_loss(fnp, fg.fori_loop))), (p,), np.asarray)]
    jax, jnp = try_jax()
    if jax is not None:
        def jax_impl(loss):
            g = jax.jit(jax.grad(loss))
            return lambda q: jax.block_until_ready(g(q))
        pj = jnp.asarray(p)
        impls += [("jax jit(grad) x64, tuple carry, lax.fori_loop",
                   lambda: jax_impl(lorenz_tuple_loss(jax.lax.fori_loop)), (pj,), np.asarray),
                  ("jax jit(grad) x64, array carry, lax.fori_loop",
                   lambda: jax_impl(lorenz_array_loss(jnp, jax.lax.fori_loop)), (pj,), np.asarray)]
    retrace = {}
    for name, make, args, to_np in impls:
        print(f"  running {name} ...", flush=True)
        try:
            fn, out, t_first = first_call(make, args)
            g = to_np(out)
            t, n = median_call(fn, args)
            g_after = to_np(fn(*args))
        except Exception as e:  # noqa: BLE001  (any failure is reported, the rest still runs)
            first_line = str(e).splitlines()[0] if str(e) else ""
            loud(f"L1 {name}: {type(e).__name__}: {first_line}")
            rows.append((name, None, 0, None, None, "ERROR"))
            continue
        d = max(rel_diff(g, ref), rel_diff(g_after, ref))
        ok = np.allclose(g, ref, rtol=RTOL, atol=0) and np.allclose(g_after, ref, rtol=RTOL, atol=0)
        if not ok:
            loud(f"L1 {name}: gradient {g} differs from the hand-written {ref} (max rel {d:.1e})")
        rows.append((name, t, n, t_first, g, "ok" if ok else "MISMATCH"))
        if name.startswith("funcgrad"):
            _, _, retrace[name] = first_call(make, args)   # new jit object: kernel is cached

    base = rows[0][1]
    print(f"\n  {'implementation':46s} {'median':>12s} {'calls':>6s} {'vs hand nb':>10s} "
          f"{'first call':>10s} {'max rel diff':>12s}  check")
    for name, t, n, t_first, g, note in rows:
        med = fmt_ms(t) if t is not None else f"{'-':>12}"
        ratio = f"{t / base:9.2f}x" if t is not None else f"{'-':>10}"
        diff = f"{rel_diff(g, ref):12.1e}" if g is not None and note != "reference" else f"{'-':>12}"
        print(f"  {name:46s} {med} {n:6d} {ratio} {fmt_s(t_first)} {diff}  {note}")
    print(f"  gradient (hand-written): {np.array2string(ref, precision=10)}")
    print("  first call = build/trace + compile + one call: Numba's compile for the hand-written"
          "\n  kernel, trace + simplify + Numba compile (empty kernel cache) for funcgrad, XLA for jax.")
    for name, t in retrace.items():
        print(f"  {name}: a new fg.jit object's first call with the kernel already in the "
              f"persistent cache: {t:.2f} s")


# =============================================================================================
# L2: Newton's iteration for sqrt(a), fg.while_loop
# =============================================================================================

def newton(a):
    return fg.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12 * a,
                         lambda x: 0.5 * (x + a / x), a)


@numba.njit(cache=False, fastmath=False, error_model="numpy")
def newton_hand_grad(a):
    """The forward loop records the iterates (a growing buffer), the reverse sweep applies
    d x_{k+1} = 0.5 (1 - a / x_k^2) d x_k + 0.5 / x_k d a; x_0 = a."""
    xs = np.empty(16)
    n = 0
    x = a
    while abs(x * x - a) > 1e-12 * a:
        if n == xs.shape[0]:
            grown = np.empty(2 * n)
            grown[:n] = xs
            xs = grown
        xs[n] = x
        n += 1
        x = 0.5 * (x + a / x)
    ga, gx = 0.0, 1.0
    for k in range(n - 1, -1, -1):
        xk = xs[k]
        ga += gx * 0.5 / xk
        gx = gx * 0.5 * (1.0 - a / (xk * xk))
    return ga + gx


def per_call_us(fn, arg, calls=3000, warmup=200):
    for _ in range(warmup):
        fn(arg)
    times = np.empty(calls)
    for k in range(calls):
        t0 = time.perf_counter()
        fn(arg)
        times[k] = time.perf_counter() - t0
    return float(np.median(times)), calls


def bench_newton():
    a = 2.0
    exact = 1.0 / (2.0 * math.sqrt(a))
    print(f"\nL2  Newton's iteration for sqrt(a), stop when |x^2 - a| <= 1e-12 a, x0 = a; "
          f"d/da at a = {a} (exact 1/(2 sqrt a) = {exact:.15f})", flush=True)
    timer = []
    for _ in range(1000):
        t0 = time.perf_counter()
        timer.append(time.perf_counter() - t0)
    rows = []
    _, g_hand, t_first = first_call(lambda: newton_hand_grad, (a,))
    t, n = per_call_us(newton_hand_grad, a)
    rows.append(("hand-written numba (tape + reverse sweep)", t, n, t_first, g_hand))
    try:
        fn, g_fg, t_first = first_call(lambda: fg.jit(fg.grad(newton)), (a,))
        t, n = per_call_us(fn, a)
        rows.append(("funcgrad jit(grad(newton)), Python float", t, n, t_first, g_fg))
        g_after = fn(a)
        if g_after != g_fg:
            loud(f"L2 funcgrad: first call {g_fg!r} and later call {g_after!r} differ")
    except Exception as e:  # noqa: BLE001  (reported loudly)
        loud(f"L2 funcgrad jit(grad(newton)): {type(e).__name__}: {str(e).splitlines()[0]}")
    base = rows[0][1]
    print(f"\n  {'implementation':46s} {'median':>12s} {'calls':>6s} {'vs hand nb':>10s} "
          f"{'first call':>10s} {'gradient':>20s} {'rel err':>8s}")
    for name, t, n, t_first, g in rows:
        err = abs(g - exact) / exact
        ok = err < RTOL
        if not ok:
            loud(f"L2 {name}: gradient {g!r} vs exact {exact!r} (rel err {err:.1e})")
        print(f"  {name:46s} {fmt_us(t)} {n:6d} {t / base:9.2f}x {fmt_s(t_first)} "
              f"{float(g)!r:>20s} {err:8.1e}{'' if ok else '  MISMATCH'}")
    print(f"  median of per-call time.perf_counter() intervals, dispatch included (an empty "
          f"interval reads {np.median(timer) * 1e6:.2f} {MICRO}).")
    jax, jnp = try_jax()
    if jax is None:
        print("  jax: not installed")
        return

    def newton_jax(a):
        return jax.lax.while_loop(lambda x: jnp.abs(x * x - a) > 1e-12 * a,
                                  lambda x: 0.5 * (x + a / x), a)
    try:
        g = jax.grad(newton_jax)(a)
        print(f"  jax.grad(lax.while_loop): unexpectedly worked: {float(g)!r}")
    except Exception as e:  # noqa: BLE001  (whatever JAX raises is the result)
        print(f"  jax.grad(lax.while_loop) raises {type(e).__name__}: {str(e).splitlines()[0]}")


# =============================================================================================
# L3: memory of a long loop's gradient, with and without checkpointing
# =============================================================================================

MEM_STEPS, MEM_DIM = 100_000, 100
MEM_VARIANTS = [("fg.scan, no checkpoint", "scan:none"), ("fg.scan, checkpoint=316", "scan:316"),
                ('fg.scan, checkpoint="sqrt" (k = 317)', "scan:sqrt"),
                ("fg.fori_loop, checkpoint=316", "fori:316"),
                ("fg.checkpoint(inner fori_loop), 250 x 400", "nested")]
NOT_AVAILABLE = "checkpoint option not available"


def _mem_step(x, th):
    """A small nonlinear map on a 100-float carry (elementwise, plus a mean coupling)."""
    return x + 1e-3 * fnp.sin(th * x) - 1e-4 * x * fnp.mean(x * x)


def mem_loss(variant):
    """The loss of one L3 variant: "scan:K" / "fori:K" (K = none, an int, or sqrt), "nested"."""
    if variant == "nested":                      # the same steps, checkpointed by hand
        inner = fg.checkpoint(lambda x, th: fg.fori_loop(0, 400, lambda i, x: _mem_step(x, th), x))

        def loss(th, x0):
            return fnp.sum(fg.fori_loop(0, 250, lambda i, x: inner(x, th), x0) ** 2)
        return loss
    loop, k = variant.split(":")
    kw = {} if k == "none" else {"checkpoint": k if k == "sqrt" else int(k)}
    if loop == "scan":
        def loss(th, x0):
            x, _ = fg.scan(lambda x, _: (_mem_step(x, th), None), x0, None, length=MEM_STEPS, **kw)
            return fnp.sum(x ** 2)
    else:
        def loss(th, x0):
            return fnp.sum(fg.fori_loop(0, MEM_STEPS, lambda i, x: _mem_step(x, th), x0, **kw) ** 2)
    return loss


def _checkpoint_available(variant):
    import inspect
    if variant == "nested" or variant.endswith(":none"):
        return True
    fn = fg.scan if variant.startswith("scan") else fg.fori_loop
    return "checkpoint" in inspect.signature(fn).parameters


def _proc_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def _malloc_trim():
    """Give glibc's free heap memory back to the system, so that a block the next call takes from
    the heap (compilation leaves plenty there) faults its pages in again and shows in RSS."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        return True
    except (OSError, AttributeError):
        return False


def _reset_peak():
    """Reset the kernel's peak-RSS counter (VmHWM) of this process; False if not possible."""
    _malloc_trim()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _proc_kib("VmHWM") is not None
    except OSError:
        return False


def _tape_kib(grad, th, x0):
    """The stacked per-step arrays the generated kernel allocates, from its source: every
    `np.empty((N, ...))` with a literal leading N >= 2 (here all are N copies of a 100-float
    vector). A cross-check of the measured peak; None if the source cannot be read."""
    import re
    try:
        src = grad.lower(th, x0).source
    except Exception:  # noqa: BLE001  (only a cross-check)
        return None
    lead = [int(n) for n in re.findall(r"np\.empty\(\(\s*(\d+)\s*,", src)]
    return sum(n * MEM_DIM * 8 for n in lead if n >= 2) / 1024


def mem_child(variant_key):
    """One L3 variant in this (fresh) process; prints a JSON line."""
    variant = variant_key
    if not _checkpoint_available(variant):
        print(json.dumps({"unavailable": NOT_AVAILABLE}))
        return
    rng = np.random.default_rng(0)
    th, x0 = rng.uniform(0.5, 1.5, MEM_DIM), rng.uniform(-1.0, 1.0, MEM_DIM)
    grad = fg.jit(fg.grad(mem_loss(variant), argnums=(0, 1)))
    try:
        t0 = time.perf_counter()
        g = grad(th, x0)                               # trace + compile + first call
        t_first = time.perf_counter() - t0
        hwm_first = _proc_kib("VmHWM")                 # imports + compile + first call
    except TypeError as e:
        if "checkpoint" in str(e) and "unexpected keyword" in str(e):
            print(json.dumps({"unavailable": NOT_AVAILABLE}))
            return
        raise
    peaks, times = [], []
    for _ in range(2):                       # memory: trimmed heap, peak counter reset
        resettable = _reset_peak()
        before = _proc_kib("VmRSS")
        g2 = grad(th, x0)
        if resettable:
            peaks.append(_proc_kib("VmHWM") - before)
        if any(not np.array_equal(a, b) for a, b in zip(g, g2)):
            print(json.dumps({"error": "gradient changed between calls"}))
            return
    for _ in range(3):                       # time: plain repeated calls
        t0 = time.perf_counter()
        grad(th, x0)
        times.append(time.perf_counter() - t0)
    out = {"first": t_first, "tape_kib": _tape_kib(grad, th, x0), "time": float(np.median(times)),
           "peak_kib": max(peaks) if peaks else None, "rss_kib": _proc_kib("VmRSS"),
           "hwm_first_kib": hwm_first,
           "grad": [list(map(float, a)) for a in g]}
    print(json.dumps(out))


def run_mem_variant(key):
    env = dict(os.environ, FUNCGRAD_LOOPS_CHILD="1")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--mem-child", key],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    wall = time.perf_counter() - t0
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        err = proc.stderr.strip().splitlines()
        return {"error": err[-1] if err else f"exit status {proc.returncode}"}, wall
    return json.loads(lines[-1]), wall


def bench_memory():
    carry_mib = MEM_STEPS * MEM_DIM * 8 / 2**20
    print(f"\nL3  Peak memory of the gradient of a {MEM_STEPS:,}-step loop on a "
          f"{MEM_DIM}-float carry\n    (x <- x + 1e-3 sin(th x) - 1e-4 x mean(x^2); grad of "
          f"sum(x_T^2) w.r.t. (th, x0)); one {MEM_STEPS:,} x {MEM_DIM} float64 array "
          f"= {carry_mib:.1f} MiB", flush=True)
    results = []
    for name, k in MEM_VARIANTS:
        print(f"  running {name} (fresh process) ...", flush=True)
        r, wall = run_mem_variant(k)
        results.append((name, r, wall))
    ref = results[0][1].get("grad")
    print(f"\n  {'variant':42s} {'peak delta':>11s} {'tape':>11s} {'proc peak':>11s} {'median':>10s} "
          f"{'first call':>10s} {'process':>8s} {'max rel diff':>12s}  check")
    for name, r, wall in results:
        if "unavailable" in r:
            print(f"  {name:42s} {r['unavailable']}")
            continue
        if "error" in r:
            loud(f"L3 {name}: {r['error']}")
            print(f"  {name:42s} ERROR: {r['error']}")
            continue
        peak = f"{r['peak_kib'] / 1024:7.1f} MiB" if r["peak_kib"] is not None else f"{'n/a':>11}"
        if ref is None or r is results[0][1]:
            diff, note = f"{'-':>12}", "reference"
        else:
            d = max(rel_diff(a, b) for a, b in zip(r["grad"], ref))
            equal = all(np.array_equal(a, b) for a, b in zip(r["grad"], ref))
            ok = all(np.allclose(a, b, rtol=1e-12, atol=0) for a, b in zip(r["grad"], ref))
            note = "ok (bitwise equal)" if equal else "ok" if ok else "MISMATCH"
            if not ok:
                loud(f"L3 {name}: gradient differs from the un-checkpointed one (max rel {d:.1e})")
            diff = f"{d:12.1e}"
        tape = f"{r['tape_kib'] / 1024:7.1f} MiB" if r.get("tape_kib") is not None else f"{'-':>11}"
        pmax = (f"{r['hwm_first_kib'] / 1024:7.1f} MiB" if r.get("hwm_first_kib") is not None
                else f"{'-':>11}")
        print(f"  {name:42s} {peak} {tape} {pmax} {r['time'] * 1e3:7.1f} ms {fmt_s(r['first'])} "
              f"{wall:6.1f} s {diff}  {note}")
    print("  Method: each variant runs in a fresh interpreter (loops.py --mem-child K) pinned to"
          "\n  one CPU. After the first call (trace + compile + run), glibc's free heap is handed back"
          "\n  (malloc_trim(0): compilation leaves a large, resident free heap that would absorb the"
          "\n  call's arrays unseen), the kernel's peak-RSS counter is reset (write 5 to"
          "\n  /proc/self/clear_refs), VmRSS is read, the compiled gradient runs, and 'peak delta' ="
          "\n  VmHWM - VmRSS: what the call allocated and touched, Numba's allocations included"
          "\n  (tracemalloc does not see those); max of 2 calls, resolution ~0.1 MiB. 'tape': the"
          "\n  stacked per-step arrays in the generated kernel (np.empty((N, ...)) in"
          "\n  fg.jit(...).lower().source, N x 100 float64 each; not all alive at once, an upper"
          "\n  bound). 'proc peak': VmHWM of the process through its first call (imports, compile"
          "\n  and one gradient; ru_maxrss would report the parent's size at fork instead)."
          "\n  'median': 3 more calls. 'process': the subprocess's wall time. 'n/a': clear_refs is"
          "\n  not writable here; then only 'proc peak' means anything.")


# =============================================================================================

def main():
    jax, _ = try_jax()
    print(f"funcgrad loop benchmarks: funcgrad {fg.__version__}, numba {numba.__version__}, "
          f"numpy {np.__version__}, jax {jax.__version__ if jax else 'not installed'}, "
          f"{os.cpu_count()} cpus")
    print(f"kernel cache for this run: {_CACHE} (fresh, removed at exit)")
    t0 = time.perf_counter()
    try:
        bench_lorenz()
        bench_newton()
        bench_memory()
    finally:
        if _CACHE:
            shutil.rmtree(_CACHE, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if FAILURES:
        print(f"!!!!!!!! {len(FAILURES)} failed check(s):")
        for f in FAILURES:
            print(f"!!!!!!!!   {f}")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--mem-child":
        mem_child(sys.argv[2])
        sys.exit(0)
    sys.exit(main())
