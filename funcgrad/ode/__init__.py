"""fg.odeint: differentiable ODE solves compiled into one native loop.

    >>> def decay(y, t, k):
    ...     return -k * y
    >>> fg.odeint(decay, 1.0, np.linspace(0.0, 1.0, 3), 2.0)       # exp(-2 t)
    array([1.        , 0.36787944, 0.13533529])

The argument order is scipy.integrate.odeint's (and JAX's): `func(y, t, *args)`.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import numpy as fnp
from .._errors import FuncgradError, user_frame, warn_at, where
from ..api.jit import jit
from ..flatten_util import float_leaves, ravel_pytree
from ..ir import Traced
from ..optimize.runners import cached_runner, tree_signature
from ..tree_util import tree_flatten, tree_leaves, tree_unflatten
from . import adjoint as adjoints
from . import solvers
from .tableaus import RK4, TABLEAUS

__all__ = ["odeint", "ODEError", "METHODS"]

METHODS = ("dopri5", "tsit5", "rosenbrock23", "rk4")


class ODEError(FuncgradError, RuntimeError):
    """The solver stopped before the last output time (too many steps, or a step size too
    small to make progress)."""


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, method="dopri5", max_steps=100_000,
           first_step=None, max_step=None, dt=None, checkpoint=None, adjoint="steps",
           full_output=False, tfirst=False):
    """Solve dy/dt = func(y, t, *args) from y(t[0]) = y0 and return y at the times `t`;
    with tfirst=True func is func(t, y, *args), the order of scipy.integrate.solve_ivp (and
    of SciPy's odeint with tfirst=True).

    y0 may be a pytree of arrays (the result then has its structure, each leaf with a leading
    time axis); `args` may be pytrees too. The state is real and float64 whatever y0's dtype
    (integers and float32 included; SciPy's rule), and so is the result. `t` must increase. Methods: "dopri5" (default) and
    "tsit5", adaptive 5(4) pairs whose steps are chosen so that the local error estimate
    stays below atol + rtol |y| (root mean square over the components), with a dense output
    of order 4 for the times in between; "rk4", the classical method with fixed steps (each
    interval of `t` in ceil(length / dt) equal steps, one step without `dt`); and for stiff
    problems "rosenbrock23", the L-stable Rosenbrock method of MATLAB's ode23s (order 2, each
    step solving linear systems with funcgrad's exact Jacobian of func).

    The whole solve is one loop: under fg.jit (or called directly: it then compiles once per
    function and method, in the background on the first call) it runs native, and rtol/atol
    are run-time values (changing them does not recompile), as are first_step and max_step. Gradients (fg.grad, fg.vjp, and
    forward mode) with respect to y0, args and t differentiate the solver's own steps (the
    step sizes held fixed: the exact derivative of the discrete solution); with
    adjoint="backsolve", reverse mode solves the adjoint equations backwards in time instead
    (memory of the outputs only; the gradient of the exact solution to the solver's
    tolerance; args then must be floats; ode/adjoint.py); `checkpoint=k`
    keeps every k-th step of each interval for the backward pass instead of all of them.

    `first_step` sets the first step size (else it is estimated from func, as SciPy does) and
    `max_step` bounds every step (SciPy's max_step; hmax of scipy.integrate.odeint).

    Failure is never silent: the solver stops after `max_steps` steps in all, or when the
    step size falls below 10 eps |t| (a stiff problem for an explicit method), or when func
    gives NaN or inf at the start or at every step size tried (a trial step into a region
    where func is not finite is rejected and the step shrunk, as for a large error); called
    directly, odeint raises ODEError, and under a transform the outputs it did not reach are
    NaN, and so are their derivatives. rtol and atol must be non-negative numbers (else
    ValueError); an rtol below 100 eps is raised to that with a warning (solve_ivp's rule).
    `full_output=True` returns (ys, info) instead, with info["status"] (0: success),
    info["message"], info["nsteps"] (attempted steps), info["nrejected"], info["nfev"].

        >>> decay = lambda y, t, k: -k * y
        >>> fg.odeint(decay, np.array([1.0]), np.linspace(0.0, 1.0, 3), 2.0)[:, 0]
        array([1.        , 0.36787944, 0.13533529])
    """
    method = str(method).lower()
    if method not in METHODS:
        raise ValueError(f"odeint: method must be one of {METHODS}, got {method!r}")
    if adjoint not in ("steps", "backsolve"):
        raise ValueError(f"odeint: adjoint must be 'steps' (differentiate the solver's steps) "
                         f"or 'backsolve' (the continuous adjoint), got {adjoint!r}")
    if adjoint == "backsolve" and method == "rk4":
        raise ValueError("odeint: adjoint='backsolve' needs an adaptive method")
    if not callable(func):
        raise TypeError(f"odeint: func must be callable as func(y, t, *args), got {func!r}")
    user_func = func
    if tfirst:
        @functools.wraps(user_func)
        def func(y, t, *args):
            return user_func(t, y, *args)
    # the state is float64 whatever y0's dtype (SciPy's rule: integers would be truncated in
    # func, float32 would not hold the tolerances); traced or not, one conversion
    y0 = float_leaves(y0, np.float64)
    flat0, unravel = ravel_pytree(y0)
    if np.dtype(flat0.dtype).kind != "f":
        raise TypeError(f"odeint: y0 must be real (its values are {np.dtype(flat0.dtype).name}); "
                        "solve a complex system as a real one of twice the size, its real and "
                        "imaginary parts stacked")
    rtol, atol = _tolerances(rtol, atol)
    if int(max_steps) < 1:
        raise ValueError(f"odeint: max_steps must be at least 1, got {max_steps!r}")
    leaves = tree_leaves((y0, t, args, rtol, atol))
    traced = any(isinstance(x, Traced) for x in leaves)
    if not traced:
        t = np.asarray(t, np.float64)
        if t.ndim != 1 or t.size == 0:
            raise ValueError(f"odeint: t must be a non-empty 1-D array of times, got shape "
                             f"{t.shape}")
        if np.any(np.diff(t) < 0):
            raise ValueError("odeint: the times t must increase (sort them, or integrate "
                             "backwards with func negated and the times reversed)")
    # (step sizes and tolerances are run-time values: only whether a first step is given,
    # and the loops' structure, shape the compiled solve)
    config = (method, int(max_steps), first_step is None, dt, checkpoint, adjoint, bool(tfirst))
    first = 0.0 if first_step is None else first_step
    hmax = np.inf if max_step is None else max_step

    def solve(y, ts, fargs, rtol, atol, first, hmax):
        fy = _flat_rhs(func, unravel, fargs, y.shape[0])
        if method == "rk4":
            return solvers.fixed(fy, y, ts, RK4, dt), np.int64(0), np.int64(0), np.int64(0)
        def run(fy, y, ts, first_step=first_step):
            stepper = (solvers.rosenbrock23(fy, y.shape[0]) if method == "rosenbrock23" else
                       solvers.explicit(fy, TABLEAUS[method]))
            return solvers.adaptive(fy, y, ts, rtol, atol, stepper, int(max_steps),
                                    None if first_step is None else first, hmax, checkpoint)
        if adjoint == "steps":
            return run(fy, y, ts)
        p, unravel_p = ravel_pytree(fargs)
        p = p * 1.0 if np.dtype(getattr(p, "dtype", np.float64)).kind in "biu" else p
        rhs = lambda y, t, p: _flat_rhs(func, unravel, unravel_p(p), y.shape[0])(y, t)
        return adjoints.backsolve(rhs, y, ts, p, run,
                                  lambda f, z, span: run(f, z, span, None)[0][-1])

    if traced:
        ys, status, steps, rejected = solve(flat0, t, args, rtol, atol, first, hmax)
    else:
        run = cached_runner(user_func, ("odeint", config, tree_signature(y0)), lambda: jit(solve, same_bits=False))
        ys, status, steps, rejected = run(flat0, t, args, float(rtol), float(atol),
                                          float(first), float(hmax))
        status = int(status)
        if status and not full_output:
            raise ODEError(f"odeint{where(user_frame())}: {solvers.MESSAGES[status]} (t reached "
                           f"{_reached(t, ys)}, of {t[-1]!r}; {int(steps)} steps). "
                           f"{_advice(status, method)}")
    out = _unravel_rows(ys, y0, unravel)
    if not full_output:
        return out
    if method == "rk4":
        spans = np.diff(np.asarray(t)) if not traced else None
        steps = (None if spans is None else int(spans.size if dt is None else
                                                 np.maximum(np.ceil(spans / dt), 1).sum()))
    per_step = {"rk4": 4, "rosenbrock23": 2}.get(method, 6)      # (rosenbrock23: + Jacobian)
    evals = None if steps is None else per_step * steps + (method != "rk4") * 2
    info = {"status": status, "nsteps": steps, "nrejected": rejected, "nfev": evals,
            "message": solvers.MESSAGES[status] if isinstance(status, int) else None}
    return out, info


_MIN_RTOL = 100 * float(np.finfo(np.float64).eps)


def _tolerances(rtol, atol):
    """SciPy's solve_ivp rules: atol and rtol non-negative numbers (a ValueError; solve_ivp
    raises for atol and clamps a negative rtol), an rtol below 100 eps raised to that with a
    warning (solve_ivp's). Traced tolerances are only clamped."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, Traced):
            continue
        if np.ndim(value) != 0:
            raise ValueError(f"odeint: {name} must be a number, got an array of shape "
                             f"{np.shape(value)} (per-component tolerances are not supported)")
        if not float(value) >= 0:
            raise ValueError(f"odeint: {name} must be non-negative, got {value!r}: the local "
                             "error of each step is kept below atol + rtol |y|")
    if isinstance(rtol, Traced):
        return fnp.maximum(rtol, _MIN_RTOL), atol
    if float(rtol) < _MIN_RTOL:
        warn_at(user_frame(), f"odeint: rtol={rtol!r} is too small for float64 arithmetic: "
                f"using rtol = {_MIN_RTOL:.3g} (100 eps, as scipy.integrate.solve_ivp does)",
                UserWarning)
        rtol = _MIN_RTOL
    return rtol, atol


def _flat_rhs(func, unravel, args, n):
    """func on flat vectors: f(y, t) -> dy/dt raveled, checked against y's size."""
    def fy(y, t):
        out, _ = ravel_pytree(func(unravel(y), t, *args))
        if out.shape != (n,):
            raise ValueError(f"odeint: func(y, t, *args) returned {out.shape[0]} values in all "
                             f"for a state of {n}: it must return dy/dt with y's structure "
                             f"and shapes")
        return out
    return fy


def _unravel_rows(ys, y0, unravel):
    """The (times, n) solution as y0's structure with a leading time axis on each leaf."""
    leaves, tree = tree_flatten(y0)
    if tree.node_type is None and len(leaves) == 1 and np.ndim(leaves[0]) == 1:
        return ys                                   # (the common case: y0 a vector)
    parts, start = [], 0
    for leaf in leaves:
        shape = np.shape(leaf)
        size = int(np.prod(shape, dtype=np.int64))
        parts.append(ys[:, start:start + size].reshape((ys.shape[0],) + shape))
        start += size
    return tree_unflatten(tree, parts)


def _reached(t, ys):
    ok = ~np.isnan(np.asarray(ys)).any(axis=1)
    return t[np.flatnonzero(ok)[-1]] if ok.any() else t[0]


def _advice(status, method):
    stiff = ("" if method == "rosenbrock23" else "; if the problem is stiff (time scales far "
             "apart, as in chemical kinetics), use method='rosenbrock23'")
    if status == 1:
        return f"Raise max_steps, loosen rtol/atol, or check func for a blow-up{stiff}."
    if status == 3:
        return ("fg.debug_nans(func)(y, t, *args) names the operation that makes the first "
                "NaN or inf; a domain error (sqrt or log of a negative value, a division by "
                "zero) is the usual cause: check y0 and args, or rewrite func so that it is "
                "finite where trial steps may go (fnp.maximum(y, 0.0) under a sqrt).")
    return f"Check func for a singularity near there{stiff}."
