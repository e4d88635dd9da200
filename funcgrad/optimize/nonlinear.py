"""fg.optimize.root and fg.optimize.least_squares: Newton / Broyden and Levenberg-Marquardt /
Gauss-Newton, each one compiled fg.while_loop, with SciPy's result fields.

    >>> sol = fg.optimize.root(lambda x: x ** 3 - a, np.ones(3), method="newton")
    >>> fit = fg.optimize.least_squares(lambda p, t, y: p[0] * fnp.exp(-p[1] * t) - y,
    ...                                 np.array([1.0, 0.5]), args=(t, y), method="lm")

Jacobians are formed by forward mode (dense: these are for problems of modest size). Under a
transform with traced `args`, the solution is differentiated implicitly (fg.custom_root on
F(x, args) = 0, or on J^T r = 0 for least squares), not through the iterations.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import OptimizeResult

from .. import numpy as fnp
from ..api.derivatives import jacfwd
from ..api.gradients import grad
from ..api.jit import jit
from .._errors import user_frame, where
from ..flatten_util import float_leaves, ravel_pytree
from ..higher_order.custom import stop_gradient
from ..higher_order.loops import while_loop
from ..ir import Traced
from ..tree_util import tree_leaves
from .convergence import implicit_solution
from .failures import NOT_FINITE_ADVICE, first_bad, named, warn
from .runners import as_float64, cached_runner, tree_signature

__all__ = ["root", "least_squares"]

_ROOT_MESSAGES = {0: "Maximum number of iterations reached.",
                  1: "The solution converged: max |F(x)| <= tol.",
                  2: "The iteration is not making progress (the step is below xtol).",
                  3: "fun or its Jacobian is not finite (NaN or inf) at x, the last point "
                     "where they were.",
                  4: "The iteration stopped where the Jacobian is singular and |F| cannot "
                     "decrease: a local minimum of |F|^2 that is not a root."}
_LSQ_MESSAGES = {0: "Maximum number of iterations reached.",
                 1: "`gtol` termination condition is satisfied.",
                 2: "`ftol` termination condition is satisfied.",
                 3: "`xtol` termination condition is satisfied."}


def _dense_solve(g, y):
    """Solve g(x) = y for a linear function g by materialising its matrix (small systems); a
    y with NaN gives NaN (a compiled solve would refuse it)."""
    n = y.shape[0]
    finite = fnp.all(fnp.isfinite(y))
    x = fnp.linalg.solve(fnp.stack([g(e) for e in np.eye(n)], axis=1), fnp.where(finite, y, 0.0))
    return fnp.where(finite, x, np.nan)


def _flat(fun, x0, args):
    """(x0 as a float64 vector, unravel, fun on vectors returning a float64 vector: its
    output may be a pytree too), for x0 with its integer leaves made float (fun still sees
    float32 leaves as float32)."""
    flat0, unravel = ravel_pytree(float_leaves(x0))
    return (np.asarray(flat0, np.float64), unravel,
            lambda x, *a: as_float64(ravel_pytree(fun(unravel(x), *a))[0]))


def _structure(x0):
    return tree_signature(float_leaves(x0))


def _traced(args):
    return any(isinstance(leaf, Traced) for leaf in tree_leaves(args))


def _history(enabled, length, first):
    """The carry that records one row per iteration (none when disabled)."""
    rows = length if enabled else 0
    return fnp.concatenate([fnp.stack(first)[None], fnp.zeros((rows, len(first)))])


def root(fun, x0, args=(), *, method="newton", tol=1e-10, maxiter=100, xtol=1e-14,
         history=False):
    """A zero of fun(x, *args) (a vector function of as many outputs as inputs) from x0.

    method "newton": x -= J(x)^-1 F(x) with a backtracking line search on |F|^2; "broyden":
    Broyden's good method (the Jacobian formed once at x0, then rank-one updates). Where the
    Jacobian is singular the step is Levenberg-Marquardt's, -(J^T J + |J^T F| I)^-1 J^T F.
    Stops when max |F(x)| <= tol, when a step is below xtol relative, or after maxiter.
    Returns an OptimizeResult with x, fun, nit, nfev, njev, success, status, message; with
    history=True also history["fnorm"], max |F| at x0 and after every iteration. status: 0
    maxiter reached, 1 converged, 2 no progress (step below xtol), 3 fun or its Jacobian not
    finite (x is the last point where they were), 4 stuck where J is singular at a point that
    is not a root; 3 and 4 also warn at the calling line.

        >>> F = lambda x: fnp.stack([x[0] ** 2 + x[1] ** 2 - 4.0, x[0] - x[1]])
        >>> fg.optimize.root(F, np.ones(2)).x          # [sqrt 2, sqrt 2]
        array([1.41421356, 1.41421356])
    """
    if method not in ("newton", "broyden"):
        raise ValueError(f"root: method must be 'newton' or 'broyden', got {method!r}")
    flat0, unravel, F = _flat(fun, x0, args)
    def make():
        @jit(same_bits=False)          # (a library loop never waits: jit_same_bits)
        def run(x0, args):
            return _root_loop(F, method, tol, maxiter, xtol, x0, args, history, fun)
        return run
    run = cached_runner(fun, ("root", method, tol, maxiter, xtol, history, _structure(x0)),
                        make)

    if _traced(args):
        x, *_, status, _ = run(flat0, stop_gradient(args))
        x = implicit_solution(F, args, x, status == 1, "fg.optimize.root", _dense_solve)
        return OptimizeResult(x=unravel(x), fun=F(x, *args), status=status, success=None,
                              message="traced: the solution is differentiated implicitly")
    x, f, nit, nfev, njev, status, hist = run(flat0, tuple(args))
    status = int(status)
    res = OptimizeResult(x=unravel(x), fun=f, nit=int(nit), nfev=int(nfev), njev=int(njev),
                         status=status, success=status == 1, message=_ROOT_MESSAGES[status])
    if status == 3:
        warn("fg.optimize.root", f"{named(fun)} or its Jacobian is not finite " + (
            "at x0." if int(nit) == 0 else f"after iteration {int(nit) - 1}: the result holds "
            "the last point where they were."), NOT_FINITE_ADVICE)
    elif status == 4:
        warn("fg.optimize.root", f"{named(fun)}: {_ROOT_MESSAGES[4]}", "Start from another "
             "x0, or check that the equations are independent (a rank-deficient system has "
             "a root only where it is consistent); least_squares finds the best x anyway.")
    if history:
        res.history = {"fnorm": hist[:int(nit) + 1, 0]}
    return res


def _root_loop(F, method, tol, maxiter, xtol, x0, args, history, fun):
    """The compiled body of root: Newton or Broyden iterations in one while_loop."""
    f = lambda x: F(x, *args)
    f0 = f(x0)
    if f0.shape != x0.shape:
        raise ValueError(f"fg.optimize.root{where(user_frame())}: {named(fun)} returned "
                         f"{f0.shape[0]} values for {x0.shape[0]} unknowns; a root needs as "
                         "many equations as unknowns (fg.optimize.least_squares takes more, "
                         "or fewer)")
    J0 = jacfwd(f)(x0)

    def body(s):
        x, fx, J = s["x"], s["f"], s["J"]
        if method == "newton":
            J = jacfwd(f)(x)
        finite = fnp.all(fnp.isfinite(J)) & fnp.all(fnp.isfinite(fx))
        d, singular = _newton_or_lm_step(fnp.where(finite, J, fnp.eye(n)),
                                         fnp.where(finite, fx, 0.0))
        norm2 = fnp.sum(fx * fx)

        def backtrack(c):             # halve until |F|^2 decreases enough (Armijo)
            t, _, _, k = c
            t = t * 0.5
            fy = f(x + t * d)
            return t, fy, fnp.sum(fy * fy), k + 1
        f1 = f(x + d)
        t, k = 1.0, 0
        if method == "newton":
            t, f1, _, k = while_loop(     # (a NaN |F|^2 is not a decrease: halve again)
                lambda c: ~(c[2] <= (1 - 1e-4 * c[0]) * norm2) & (c[3] < 30),
                backtrack, (1.0, f1, fnp.sum(f1 * f1), np.int64(0)))
        bad = ~finite | ~fnp.all(fnp.isfinite(f1))
        step = fnp.where(bad, 0.0, t * d)
        x1, f1 = x + step, fnp.where(bad, fx, f1)      # (kept at the last finite point)
        if method == "broyden":
            J = J + fnp.outer(f1 - fx - J @ step, step) / fnp.maximum(fnp.sum(step * step),
                                                                      1e-300)
        small = fnp.max(fnp.abs(step)) <= xtol * (1 + fnp.max(fnp.abs(x1)))
        norm1 = fnp.max(fnp.abs(f1))
        hist = s["hist"].at[s["k"] + 1, 0].set(norm1) if history else s["hist"]
        return {"x": x1, "f": f1, "J": J, "k": s["k"] + 1, "hist": hist,
                "nfev": s["nfev"] + 1 + k, "njev": s["njev"] + (method == "newton"),
                "status": fnp.where(bad, 3, fnp.where(norm1 <= tol, 1, fnp.where(
                    small, fnp.where(singular, 4, 2), 0)))}
    n = x0.shape[0]
    norm0 = fnp.max(fnp.abs(f0))
    start_bad = ~fnp.all(fnp.isfinite(f0)) | ~fnp.all(fnp.isfinite(J0))
    s = {"x": x0, "f": f0, "J": J0, "k": np.int64(0), "nfev": np.int64(1),
         "njev": np.int64(1), "status": fnp.where(start_bad, 3, fnp.where(norm0 <= tol, 1, 0)),
         "hist": _history(history, maxiter, [norm0])}
    s = while_loop(lambda s: (s["status"] == 0) & (s["k"] < maxiter), body, s)
    return s["x"], s["f"], s["k"], s["nfev"], s["njev"], s["status"], s["hist"]


def _newton_or_lm_step(J, fx):
    """Newton's step -J^-1 F(x), and whether J is singular (a zero pivot in its LU
    factorisation, or a step that is not finite): then the Levenberg-Marquardt step
    -(J^T J + mu I)^-1 J^T F with mu = |J^T F| (of J^T J's scale, so the step does not depend
    on how F is scaled), defined for any J and a descent direction for |F|^2 wherever J^T F
    is not 0 -- SciPy's methods also step on where Newton's step is undefined. An
    ill-conditioned but regular J keeps Newton's step (the line search guards it)."""
    n = J.shape[0]
    eye = np.eye(n)
    singular = fnp.linalg.slogdet(J)[0] == 0
    newton = -fnp.linalg.solve(fnp.where(singular, eye, J), fx)
    singular = singular | ~fnp.all(fnp.isfinite(newton))
    g = J.T @ fx
    mu = fnp.maximum(fnp.sqrt(fnp.sum(g * g)), 1e-300)
    lm = -fnp.linalg.solve(fnp.where(singular, J.T @ J + mu * eye, eye), g)
    return fnp.where(singular, lm, newton), singular


def least_squares(fun, x0, args=(), *, method="lm", ftol=1e-8, xtol=1e-8, gtol=1e-8,
                  max_nfev=None, history=False):
    """Minimise 0.5 * sum(fun(x, *args) ** 2) over x (a pytree) from x0.

    method "lm": Levenberg-Marquardt with Marquardt's diagonal scaling and a gain-ratio update
    of the damping; "gauss-newton": undamped Gauss-Newton steps with backtracking. SciPy's
    stopping tests (ftol on the cost reduction, xtol on the step, gtol on max |J^T r|); where
    J is rank-deficient, Gauss-Newton takes LM's damped step. Residuals that are not finite
    at x0 raise ValueError (as SciPy's), at the calling line.
    Returns an OptimizeResult with x, cost, fun (residuals), jac, grad, nfev, njev, status,
    success, message; with history=True also history["cost"] and history["gnorm"] (max
    |J^T r|) at x0 and after every evaluation (a rejected LM step repeats the last row).

        >>> t = np.linspace(0.0, 1.0, 5); y = 2.0 * np.exp(-1.5 * t)
        >>> res = fg.optimize.least_squares(lambda p: p[0] * fnp.exp(-p[1] * t) - y, np.ones(2))
        >>> res.x
        array([2. , 1.5])
    """
    if method not in ("lm", "gauss-newton"):
        raise ValueError(f"least_squares: method must be 'lm' or 'gauss-newton', got {method!r}")
    flat0, unravel, r_of = _flat(fun, x0, args)
    n = flat0.size
    max_nfev = int(max_nfev if max_nfev is not None else 100 * n)

    def make():
        @jit(same_bits=False)          # (a library loop never waits: jit_same_bits)
        def run(x0, args):
            return _lsq_loop(r_of, method, ftol, xtol, gtol, max_nfev, x0, args, history)
        return run
    run = cached_runner(fun, ("least_squares", method, ftol, xtol, gtol, max_nfev, history,
                              _structure(x0)), make)

    if _traced(args):
        x, *_, status, _ = run(flat0, stop_gradient(args))
        cost = lambda x, *a: 0.5 * fnp.sum(r_of(x, *a) ** 2)
        x = implicit_solution(grad(cost), args, x, status > 0, "fg.optimize.least_squares",
                              _dense_solve)
        return OptimizeResult(x=unravel(x), cost=cost(x, *args), fun=r_of(x, *args),
                              status=status, success=None,
                              message="traced: the solution is differentiated implicitly")
    x, rx, J, g, cost, nfev, status, hist = run(flat0, tuple(args))
    status = int(status)
    if status == -1:
        bad = first_bad(rx)
        raise ValueError(
            f"fg.optimize.least_squares{where(user_frame())}: the residuals of {named(fun)} "
            "are not finite at x0 (" + (f"entry {bad} is {float(np.ravel(rx)[bad])!r}" if bad
                                        is not None else "its Jacobian has NaN or inf")
            + f"), as SciPy's least_squares also refuses. {NOT_FINITE_ADVICE}")
    res = OptimizeResult(x=unravel(x), cost=float(cost), fun=rx, jac=J, grad=g, nfev=int(nfev),
                         njev=int(nfev), status=status, success=status > 0,
                         message=_LSQ_MESSAGES[status])
    if history:
        res.history = {"cost": hist[:int(nfev), 0], "gnorm": hist[:int(nfev), 1]}
    return res


def _lsq_loop(r_of, method, ftol, xtol, gtol, max_nfev, x0, args, history):
    """The compiled body of least_squares: LM or Gauss-Newton steps in one while_loop."""
    r = lambda x: r_of(x, *args)

    def model(x):
        rx, J = r(x), jacfwd(r)(x)
        return rx, J, J.T @ rx, 0.5 * fnp.sum(rx * rx)

    def body(s):
        x, rx, J, g, cost, mu = s["x"], s["r"], s["J"], s["g"], s["cost"], s["mu"]
        A = J.T @ J
        if method == "lm":
            damp = mu * fnp.maximum(fnp.diag(A), 1e-12)
        else:                     # Gauss-Newton; where J^T J is singular, an LM step
            singular = fnp.linalg.slogdet(A)[0] == 0
            damp = fnp.where(singular, mu * fnp.maximum(fnp.diag(A), 1e-12), 0.0)
        step = -fnp.linalg.solve(A + fnp.diag(damp), g)
        if method == "gauss-newton":
            def halve(c):
                t, _ = c
                y = r(x + 0.5 * t * step)
                return 0.5 * t, 0.5 * fnp.sum(y * y)
            r1 = r(x + step)
            t, c1 = while_loop(lambda c: (c[1] > cost) & (c[0] > 1e-10), halve,
                               (1.0, 0.5 * fnp.sum(r1 * r1)))
            step = t * step
        x1 = x + step
        r1, J1, g1, c1 = model(x1)
        predicted = -(fnp.sum(g * step) + 0.5 * fnp.sum(step * (A @ step)))
        rho = (cost - c1) / fnp.where(predicted > 0, predicted, 1.0)
        accept = c1 < cost
        mu1 = fnp.where(rho > 0.75, mu / 3.0, fnp.where(rho < 0.25, mu * 2.0, mu))
        keep = lambda new, old: fnp.where(accept, new, old)
        ftol_ok = accept & ((cost - c1) <= ftol * cost)
        xtol_ok = fnp.sqrt(fnp.sum(step * step)) <= xtol * (xtol + fnp.sqrt(fnp.sum(x * x)))
        gnorm = fnp.max(fnp.abs(keep(g1, g)))
        hist = s["hist"]
        if history:
            hist = hist.at[s["nfev"]].set(fnp.stack([keep(c1, cost), gnorm]))
        return {"x": keep(x1, x), "r": keep(r1, rx), "J": keep(J1, J), "g": keep(g1, g),
                "cost": keep(c1, cost), "mu": fnp.where(accept, mu1, mu * 4.0),
                "nfev": s["nfev"] + 1, "hist": hist, "status": fnp.where(
                    gnorm <= gtol, 1, fnp.where(ftol_ok, 2, fnp.where(xtol_ok, 3, 0)))}
    r0, J0, g0, c0 = model(x0)
    g0norm = fnp.max(fnp.abs(g0))
    start_bad = ~fnp.isfinite(c0) | ~fnp.all(fnp.isfinite(J0))
    s = {"x": x0, "r": r0, "J": J0, "g": g0, "cost": c0, "mu": 1e-3 + 0 * c0,
         "nfev": np.int64(1), "status": fnp.where(start_bad, -1, fnp.where(g0norm <= gtol, 1, 0)),
         "hist": _history(history, max_nfev, [c0, g0norm])}
    s = while_loop(lambda s: (s["status"] == 0) & (s["nfev"] < max_nfev), body, s)
    return s["x"], s["r"], s["J"], s["g"], s["cost"], s["nfev"], s["status"], s["hist"]
