"""ODE solves side by side: fg.odeint against SciPy (solve_ivp's RK45, the same Dormand-Prince
pair and controller, and odeint's LSODA) and JAX's odeint when installed, at equal tolerances,
with each result's error against a DOP853 reference at rtol = atol = 1e-13.

    .venv/bin/python benchmarks/ode.py          # about half a minute on 2 cores

Times are medians of repeated solves after warm-up (fg.odeint: its compiled solve; the first
call, which compiles, is reported separately).
"""
from __future__ import annotations

import time

import numpy as np
from scipy.integrate import odeint as scipy_odeint
from scipy.integrate import solve_ivp

import funcgrad as fg
import funcgrad.numpy as fnp
fg.config.update("jit_background", False)   # timings of kernels: compile on the first call


def lotka_volterra(xp):
    def f(y, t, a, b, c, d):
        return xp.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])
    return f


def lorenz(xp):
    def f(y, t, s, r, b):
        return xp.stack([s * (y[1] - y[0]), y[0] * (r - y[2]) - y[1], y[0] * y[1] - b * y[2]])
    return f


def pendulum(xp):
    def f(y, t, g):
        return xp.stack([y[1], -g * xp.sin(y[0])])
    return f


PROBLEMS = [
    ("Lotka-Volterra, t in [0, 10]", lotka_volterra, np.array([10.0, 5.0]),
     (1.5, 1.0, 3.0, 1.0), 10.0),
    ("Lorenz-63, t in [0, 2]", lorenz, np.array([1.0, 1.0, 1.0]), (10.0, 28.0, 8 / 3), 2.0),
    ("pendulum, t in [0, 10]", pendulum, np.array([2.5, 0.0]), (9.81,), 10.0),
]


def median_time(fn, min_total=0.3):
    fn()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < min_total or len(times) < 5:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def robertson(xp):
    def f(y, t, k1, k2, k3):
        return xp.stack([-k1 * y[0] + k3 * y[1] * y[2],
                         k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2, k2 * y[1] ** 2])
    return f


def stiff():
    """Robertson's kinetics on [0, 40] at rtol 1e-6, atol 1e-10: the stiff method against
    SciPy's implicit ones (error: max relative, against Radau at 1e-12)."""
    f_np, f_fg = robertson(np), robertson(fnp)
    args, y0 = (0.04, 3e7, 1e4), np.array([1.0, 0.0, 0.0])
    ts = np.array([0.0, 1e-3, 0.1, 1.0, 10.0, 40.0])
    rhs = lambda t, y: f_np(y, t, *args)
    ref = solve_ivp(rhs, (0, 40), y0, t_eval=ts, method="Radau", rtol=1e-12, atol=1e-14).y.T
    rel = lambda ys: np.max(np.abs(np.asarray(ys) - ref) / (np.abs(ref) + 1e-10))
    t0 = time.perf_counter()
    run = lambda: fg.odeint(f_fg, y0, ts, *args, method="rosenbrock23", rtol=1e-6, atol=1e-10)
    run(), run()
    first = time.perf_counter() - t0
    rows = [("fg.odeint rosenbrock23", median_time(run), run())]
    for method in ("BDF", "Radau", "LSODA"):
        run = lambda: solve_ivp(rhs, (0, 40), y0, t_eval=ts, method=method, rtol=1e-6,
                                atol=1e-10).y.T
        rows.append((f"scipy solve_ivp {method}", median_time(run), run()))
    base = rows[1][1]
    print(f"Robertson (stiff), t in [0, 40], rtol 1e-6, atol 1e-10  (fg.odeint first calls, "
          f"compile included: {first:.1f} s)")
    for name, t, ys in rows:
        print(f"  {name:44s} {t * 1e3:8.3f} ms {t / base:7.3f}x {rel(ys):9.1e} (relative)")


def gradients():
    """One gradient of sum(y(t_k)^2) over 21 output times with respect to the four
    Lotka-Volterra rates, at rtol = atol = 1e-8: funcgrad through the solver's steps and by
    the continuous adjoint, JAX's odeint (continuous adjoint) when installed, and SciPy by
    central differences (8 solve_ivp solves)."""
    _, make, y0, args, t_end = PROBLEMS[0]
    f_fg, f_np = make(fnp), make(np)
    ts, tol, p0 = np.linspace(0.0, t_end, 21), 1e-8, np.array(args)
    rows = []
    for adjoint in ("steps", "backsolve"):
        loss = lambda p, adjoint=adjoint: fnp.sum(fg.odeint(
            f_fg, y0, ts, *p, rtol=tol, atol=tol, adjoint=adjoint) ** 2)
        g = fg.jit(fg.grad(loss))
        t0 = time.perf_counter()
        g(p0), g(p0)
        first = time.perf_counter() - t0
        rows.append((f"fg.jit(fg.grad), adjoint={adjoint!r}", median_time(lambda: g(p0)),
                     g(p0), first))

    def fd():
        def value(p):
            sol = solve_ivp(lambda t, y: f_np(y, t, *p), (0, t_end), y0, t_eval=ts, rtol=tol,
                            atol=tol)
            return np.sum(sol.y ** 2)
        return np.array([(value(p0 + 1e-5 * e) - value(p0 - 1e-5 * e)) / 2e-5
                         for e in np.eye(4)])
    rows.append(("scipy solve_ivp RK45, central differences", median_time(fd), fd(), 0.0))
    try:
        import jax
        import jax.numpy as jnp
        from jax.experimental.ode import odeint as jax_odeint
        jax.config.update("jax_enable_x64", True)
        f_jax = make(jnp)
        jloss = lambda p: jnp.sum(jax_odeint(f_jax, jnp.asarray(y0), jnp.asarray(ts), *p,
                                             rtol=tol, atol=tol) ** 2)
        jg = jax.jit(jax.grad(jloss))
        pj = jnp.asarray(p0)
        t0 = time.perf_counter()
        jg(pj).block_until_ready()
        first = time.perf_counter() - t0
        rows.append(("jax jit(grad(odeint))", median_time(lambda: jg(pj).block_until_ready()),
                     np.asarray(jg(pj)), first))
    except ImportError:
        pass
    ref = rows[0][2]
    print("\nGradient of sum(y^2) over 21 times with respect to the 4 Lotka-Volterra rates "
          "(rtol = atol = 1e-8)")
    for name, t, g, first in rows:
        print(f"  {name:44s} {t * 1e3:8.3f} ms   max rel diff to the first "
              f"{np.max(np.abs(g - ref) / np.abs(ref)):8.1e}"
              + (f"   (first calls {first:.1f} s)" if first else ""))


def main():
    tol = 1e-8
    print(f"rtol = atol = {tol:g}; error = max |y - y_ref| over 21 output times\n")
    print(f"  {'problem / implementation':44s} {'median':>10s} {'vs RK45':>8s} {'error':>9s}")
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.experimental.ode import odeint as jax_odeint
    except ImportError:
        jax = None
    for title, make, y0, args, t_end in PROBLEMS:
        ts = np.linspace(0.0, t_end, 21)
        f_np, f_fg = make(np), make(fnp)
        rhs = lambda t, y: f_np(y, t, *args)
        ref = solve_ivp(rhs, (0, t_end), y0, t_eval=ts, rtol=1e-13, atol=1e-13,
                        method="DOP853").y.T
        rows = []
        t0 = time.perf_counter()
        fg.odeint(f_fg, y0, ts, *args, rtol=tol, atol=tol)
        fg.odeint(f_fg, y0, ts, *args, rtol=tol, atol=tol)       # (waits for the kernel)
        first = time.perf_counter() - t0
        for method in ("dopri5", "tsit5"):
            run = lambda: fg.odeint(f_fg, y0, ts, *args, rtol=tol, atol=tol, method=method)
            rows.append((f"fg.odeint {method}", median_time(run), run()))
        run = lambda: solve_ivp(rhs, (0, t_end), y0, t_eval=ts, rtol=tol, atol=tol).y.T
        rows.append(("scipy solve_ivp RK45", median_time(run), run()))
        run = lambda: scipy_odeint(lambda y, t: f_np(y, t, *args), y0, ts, rtol=tol, atol=tol)
        rows.append(("scipy odeint (LSODA, Fortran)", median_time(run), run()))
        if jax is not None:
            f_jax = make(jnp)
            solve = jax.jit(lambda y0: jax_odeint(f_jax, y0, jnp.asarray(ts), *args,
                                                  rtol=tol, atol=tol))
            run = lambda: np.asarray(solve(jnp.asarray(y0)).block_until_ready())
            rows.append(("jax odeint (jit)", median_time(run), run()))
        base = next(t for name, t, _ in rows if "RK45" in name)
        print(f"{title}  (fg.odeint first calls, compile included: {first:.1f} s)")
        for name, t, ys in rows:
            print(f"  {name:44s} {t * 1e3:8.3f} ms {t / base:7.3f}x "
                  f"{np.abs(np.asarray(ys) - ref).max():9.1e}")
    stiff()
    gradients()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
