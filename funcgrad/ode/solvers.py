"""The solve loops behind fg.odeint, written with funcgrad's own loops, so one solve is one
traced program: compiled whole by fg.jit, differentiated by reverse and forward mode like any
other loop, batched by vmap.

Adaptive methods: an outer scan over the output times, an inner while_loop taking steps until
the solution passes the next output time, and the continuous extension of the last step for
the value there (so output times do not shorten the steps). Step sizes come from the error
estimate through the standard controller; they are held constant for differentiation
(stop_gradient), so a derivative is the exact derivative of the discrete solution for the
steps the solver took. y is a flat float vector here; api.py handles pytrees.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from .. import numpy as fnp
from ..api.derivatives import jacfwd, jvp
from ..higher_order import fori_loop, scan, stop_gradient, while_loop

__all__ = ["adaptive", "explicit", "rosenbrock23", "fixed", "MESSAGES"]

MESSAGES = {0: "integration successful",
            1: "max_steps steps taken before the last output time",
            2: "step size underflow: the problem may be stiff, or have a singularity",
            3: "func returned NaN or inf, at the start or at every step size tried"}
_EPS = float(np.finfo(np.float64).eps)


def _rms(v):
    return fnp.sqrt(fnp.mean(v * v))


def _combine(weights, ks):
    """sum_j weights[j] ks[j] over the nonzero weights (none: None)."""
    terms = [w * k if w != 1.0 else k for w, k in zip(weights, ks) if w != 0.0]
    return functools.reduce(operator.add, terms) if terms else None


def _step(fy, tab, t, y, f0, h):
    """One step of size h from (t, y), with f0 = f(y, t): the new solution, its stages (the
    last of an FSAL pair is f at the new solution) and the local error estimate."""
    ks, y1 = [f0], None
    for i in range(1, len(tab.c)):
        incr = _combine(tab.a[i, :i], ks)
        yi = y if incr is None else y + h * incr
        if i == len(tab.c) - 1 and np.array_equal(tab.a[i, :i], tab.b[:i]):
            y1 = yi                              # first same as last: the new solution
        ks.append(fy(yi, t + tab.c[i] * h))
    if y1 is None:
        y1 = y + h * _combine(tab.b, ks)
    err = _combine(tab.e, ks)
    return y1, ks, (None if err is None else h * err)


def _initial_step(fy, t0, y0, f0, span, rtol, atol, order):
    """Hairer, Norsett & Wanner's starting step (Solving ODEs I, II.4): from the sizes of y0,
    f0 and a finite-difference estimate of f's rate of change."""
    scale = atol + rtol * fnp.abs(y0)
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h0 = fnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / fnp.maximum(d1, 1e-300))
    h0 = fnp.minimum(h0, span)
    f1 = fy(y0 + h0 * f0, t0 + h0)
    d2 = _rms((f1 - f0) / scale) / fnp.maximum(h0, 1e-300)
    big = fnp.maximum(d1, d2)
    h1 = fnp.where(big <= 1e-15, fnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / fnp.maximum(big, 1e-300)) ** (1.0 / order))
    return stop_gradient(fnp.minimum(fnp.minimum(100 * h0, h1), span))


def explicit(fy, tab):
    """The step of an explicit Runge-Kutta pair (a Tableau) for `adaptive`: (y1, f(y1), the
    local error estimate, the dense output's coefficients q_1..q_4), and its order."""
    p = np.asarray(tab.p, np.float64)           # (stages, 4)

    def step(t, y, f, h):
        y1, ks, err = _step(fy, tab, t, y, f, h)
        return y1, ks[-1], err, tuple(_combine(p[:, j], ks) for j in range(4))
    return step, tab.order


def rosenbrock23(fy, n):
    """The step of the L-stable Rosenbrock method of Shampine and Reichelt (MATLAB's ode23s,
    1997): order 2 with a third-order error estimate, each step solving three linear systems
    with W = I - h d J, J = df/dy (funcgrad's forward-mode Jacobian of func, exact), and
    using df/dt; continuous extension of order 2. For stiff problems."""
    d = 1.0 / (2.0 + np.sqrt(2.0))
    e32 = 6.0 + np.sqrt(2.0)
    eye = np.eye(n)

    def step(t, y, f0, h):
        jac = jacfwd(lambda v: fy(v, t))(y)
        dfdt = jvp(lambda s: fy(y, s), (t,), (1.0,))[1]
        w = eye - (h * d) * jac
        k1 = fnp.linalg.solve(w, f0 + (h * d) * dfdt)
        f1 = fy(y + (0.5 * h) * k1, t + 0.5 * h)
        k2 = fnp.linalg.solve(w, f1 - k1) + k1
        y1 = y + h * k2
        f2 = fy(y1, t + h)
        k3 = fnp.linalg.solve(w, f2 - e32 * (k2 - f1) - 2.0 * (k1 - f0) + (h * d) * dfdt)
        err = (h / 6.0) * (k1 - 2.0 * k2 + k3)
        zero = 0.0 * y
        return (y1, f2, err, ((k1 - (2.0 * d) * k2) / (1.0 - 2.0 * d),
                               (k2 - k1) / (1.0 - 2.0 * d), zero, zero))
    return step, 3


def adaptive(fy, y0, ts, rtol, atol, stepper, max_steps, first_step=None, max_step=np.inf,
             checkpoint=None):
    """(ys at the times ts, status, steps taken, steps rejected) with the adaptive method
    `stepper` (explicit(...) or rosenbrock23(...)). ts[0] is the start; an output the solver
    did not reach (status 1 or 2) is NaN."""
    step, order = stepper
    t0, t_end = ts[0], ts[-1]
    f0 = fy(y0, t0)
    h0 = (_initial_step(fy, t0, y0, f0, t_end - t0, rtol, atol, order)
          if first_step is None else t0 * 0.0 + first_step)
    h0 = fnp.minimum(h0, max_step)
    n = y0.shape[0]
    zero = t0 * 0.0
    # carry: t, y, f, next step size, and the last accepted step (start, y, size, dense
    # coefficients q_j: y(start + theta size) = y + size sum_j theta^j q_j), counts, status.
    # (Vectors only, no matrix products: a small state becomes scalars, transforms/scalarize.py)
    init = (t0, y0, f0, h0, t0, y0, zero, (fnp.zeros(n),) * 4, np.int64(0), np.int64(0),
            fnp.where(fnp.all(fnp.isfinite(f0)), 0, 3))

    def attempt(c):
        t, y, f, h, tp, yp, hp, q, steps, rejected, status = c
        hs = fnp.minimum(h, t_end - t)            # (the last step ends on the last time)
        y1, f1, err, q1 = step(t, y, f, hs)
        scale = atol + rtol * fnp.maximum(fnp.abs(y), fnp.abs(y1))
        ratio = stop_gradient(_rms(err / scale))
        finite = fnp.isfinite(ratio)      # (NaN or inf in a trial step: reject it, shrink h)
        ratio = fnp.where(finite, ratio, np.inf)
        ok = ratio <= 1.0
        grow = fnp.clip(0.9 * fnp.maximum(ratio, 1e-10) ** (-1.0 / order), 0.2, 10.0)
        h_next = stop_gradient(hs * fnp.where(ok, grow, fnp.minimum(grow, 1.0)))
        h_next = fnp.minimum(h_next, max_step)
        t1 = fnp.where(hs == t_end - t, t_end, t + hs)
        keep = lambda new, old: fnp.where(ok, new, old)
        q = tuple(keep(new, old) for new, old in zip(q1, q))
        t, y, f, tp, yp, hp = (keep(t1, t), keep(y1, y), keep(f1, f), keep(t, tp),
                               keep(y, yp), keep(hs, hp))
        steps = steps + 1
        rejected = rejected + fnp.where(ok, 0, 1)
        going = t < t_end          # (a last step clipped to end on t_end may be tiny)
        status = fnp.where((steps >= max_steps) & going, 1, fnp.where(
            (h_next <= 10 * _EPS * fnp.abs(t)) & going, fnp.where(finite, 2, 3), 0))
        return t, y, f, h_next, tp, yp, hp, q, steps, rejected, status

    def interval(c, target):
        c = while_loop(lambda c: (c[0] < target) & (c[10] == 0), attempt, c,
                       checkpoint=checkpoint)
        t, _, _, _, tp, yp, hp, q, *_ = c
        theta = (target - tp) / fnp.where(hp > 0, hp, 1.0)
        y_out = yp + hp * (theta * (q[0] + theta * (q[1] + theta * (q[2] + theta * q[3]))))
        # not reached: NaN, and so is its derivative (a quotient by NaN, not a where that
        # would give it derivative 0); a zero cotangent still contributes 0 (strong zero)
        return c, y_out / fnp.where(t >= target, 1.0, np.nan)

    c, ys = scan(interval, init, ts[1:])
    return fnp.concatenate([y0[None], ys]), c[10], c[8], c[9]


def fixed(fy, y0, ts, tab, dt=None):
    """ys at the times ts with fixed steps: each interval in ceil(length / dt) equal steps
    (one without dt)."""
    def interval(c, target):
        t, y = c
        span = target - t
        m = 1 if dt is None else fnp.maximum(fnp.ceil(span / dt), 1.0).astype(np.int64)
        h = span / m

        def step(i, y):
            s = t + i * h
            return _step(fy, tab, s, y, fy(y, s), h)[0]
        y = fori_loop(0, m, step, y)
        return (target, y), y

    _, ys = scan(interval, (ts[0], y0), ts[1:])
    return fnp.concatenate([y0[None], ys])
