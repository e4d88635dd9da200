"""fg.optimize.minimize: L-BFGS, BFGS, Newton-CG and gradient descent, each one compiled
fg.while_loop around a strong-Wolfe line search, with SciPy's names, defaults and result fields.

    >>> res = fg.optimize.minimize(rosen, np.zeros(100), method="lbfgs")
    >>> res.x, res.fun, res.nit, res.success

The whole minimisation -- every iteration, line-search trial, gradient and quasi-Newton update
-- is one native kernel: no Python runs between steps. Newton-CG solves H d = -g by truncated
conjugate gradients with exact Hessian-vector products (forward mode over the gradient: the
Hessian is never formed), as SciPy's Newton-CG does with a user's `hessp`. Bounds (`bounds=[(lo, hi), ...]` or a
pair of arrays) are kept by projection: variables at a bound whose gradient points outward
are held there, and trial points are clipped into the box (an L-BFGS-B-like scheme, not
SciPy's Cauchy-point method, so iteration counts can differ from L-BFGS-B's on bounded
problems). `history=True` adds `res.history`: the value and gradient norm at every iterate.
Called under fg.grad / fg.jvp with traced `args`, the minimiser is differentiated implicitly
(through grad f(x*, args) = 0, fg.custom_root), never through the iterations; a variable held
at a bound has derivative 0 (the reduced system on the free ones), and the derivative of a run
that did not converge warns, or is NaN under fg.config.unconverged_derivative = "nan"
(convergence.py).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import OptimizeResult

from .. import numpy as fnp
from ..api.derivatives import jvp
from ..api.gradients import grad, value_and_grad
from ..api.jit import jit
from ..flatten_util import float_leaves, ravel_pytree
from ..higher_order.custom import stop_gradient
from ..higher_order.implicit import custom_linear_solve
from ..higher_order.loops import fori_loop, while_loop
from ..ir import Traced
from ..tree_util import tree_leaves
from .convergence import implicit_solution
from .failures import NOT_FINITE_ADVICE, first_bad, named, require_scalar, warn
from .line_search import strong_wolfe
from .runners import as_float64, cached_runner, tree_signature

__all__ = ["minimize"]

METHODS = ("lbfgs", "bfgs", "newtoncg", "gd")
_MESSAGES = {0: "Maximum number of iterations reached.",
             1: "Optimization terminated successfully: the projected gradient is below gtol.",
             2: "Optimization terminated successfully: the relative reduction of f is below ftol.",
             3: "The line search found no step that lowers f (ABNORMAL_TERMINATION_IN_LNSRCH).",
             4: "Optimization terminated successfully: the step is below xtol.",
             5: "fun or its gradient is not finite at x0 (NaN or inf): no step was taken."}
_EPS = float(np.finfo(np.float64).eps)
_VECTOR_ADVICE = ("For residuals whose squares should be small use "
                  "fg.optimize.least_squares(fun, x0) (it minimises 0.5 * sum(fun(x) ** 2)); "
                  "for equations fun(x) = 0, fg.optimize.root; for a sum, return fnp.sum(...).")


def _two_loop(g, S, Y, rho, count, head, m):
    """-H g for the L-BFGS inverse Hessian of the stored pairs (newest at head - 1)."""
    def newest_first(i, carry):
        q, alphas = carry
        k = (head - 1 - i) % m
        on = i < count
        a = fnp.where(on, rho[k] * fnp.sum(S[k] * q), 0.0)
        return q - a * Y[k], alphas.at[k].set(a)

    q, alphas = fori_loop(0, m, newest_first, (g, fnp.zeros_like(rho)))
    last = (head - 1) % m
    yy = fnp.sum(Y[last] * Y[last])
    gamma = fnp.where(count > 0, 1.0 / fnp.where(yy > 0, rho[last] * yy, 1.0), 1.0)

    def oldest_first(i, r):
        k = (head - count + i) % m
        on = i < count
        b = rho[k] * fnp.sum(Y[k] * r)
        return r + fnp.where(on, alphas[k] - b, 0.0) * S[k]
    return -fori_loop(0, m, oldest_first, gamma * q)


def _newton_cg(hvp, x, g, maxiter):
    """SciPy's truncated CG for H d = -g at x (H by products hvp(x, v)): stops at a relative
    residual (in the 1-norm) of min(0.5, sqrt(|g|_1)), at non-positive curvature (then the
    steepest-descent step scaled by the curvature if it is the first), or after maxiter
    products. Returns (d, products)."""
    mag = fnp.sum(fnp.abs(g))
    term = fnp.minimum(0.5, fnp.sqrt(mag)) * mag

    def body(c):
        z, r, p, rr, i, _ = c
        Ap = hvp(x, p)
        curv = fnp.sum(p * Ap)
        flat = (curv >= 0) & (curv <= 3 * _EPS)
        neg = curv < 0
        stop = flat | neg
        alpha = rr / fnp.where(stop, 1.0, curv)
        z1 = fnp.where(stop, fnp.where(neg & (i == 0), (rr / -curv) * -g, z), z + alpha * p)
        r1 = fnp.where(stop, r, r + alpha * Ap)
        rr1 = fnp.sum(r1 * r1)
        return z1, r1, fnp.where(stop, p, -r1 + (rr1 / rr) * p), rr1, i + 1, stop

    z, _, _, _, i, _ = while_loop(
        lambda c: ~c[5] & (c[4] < maxiter) & (fnp.sum(fnp.abs(c[1])) > term), body,
        (fnp.zeros_like(g), g, -g, fnp.sum(g * g), np.int64(0), np.bool_(False)))
    return z, i


def _loop(vg, x0, method, m, maxiter, gtol, ftol, maxls, lo, hi, history, hvp=None, xtol=0.0):
    n = x0.shape[0]
    project = None if lo is None else (lambda x: fnp.clip(x, lo, hi))

    def free(x, g):
        """1 where a variable may move (not at a bound with the gradient pointing out)."""
        if lo is None:
            return fnp.ones_like(x)
        return fnp.where(((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0)), 0.0, 1.0)

    def pg_norm(x, g):
        pg = g if lo is None else x - fnp.clip(x - g, lo, hi)
        return fnp.max(fnp.abs(pg))

    def direction(s):
        """The search direction and the Hessian-vector products it took."""
        g, keep = s["g"], free(s["x"], s["g"])
        products = np.int64(0)
        if method == "gd":
            d = -g
        elif method == "bfgs":
            d = -(s["H"] @ (g * keep))
        elif method == "newtoncg":
            d, products = _newton_cg(hvp, s["x"], g, 20 * n)
        else:
            d = _two_loop(g * keep, s["S"], s["Y"], s["rho"], s["count"], s["head"], m)
        d = d * keep
        return fnp.where(fnp.sum(g * d) < 0, d, -g * keep), products   # a descent direction

    def body(s):
        x, f, g = s["x"], s["f"], s["g"]
        d, products = direction(s)
        first = s["k"] == 0
        a0 = fnp.where(first & (method in ("lbfgs", "bfgs")), fnp.minimum(1.0, 1.0 / fnp.sqrt(fnp.sum(d * d))),
                       1.0)
        a, f1, g1, evals, found = strong_wolfe(vg, x, d, f, g, a0, maxls=maxls, project=project)
        x1 = x + a * d if project is None else project(x + a * d)
        step, y = x1 - x, g1 - g
        sy = fnp.sum(step * y)
        new = dict(s)
        new.update(k=s["k"] + 1, x=x1, f=f1, g=g1, nfev=s["nfev"] + evals,
                   nhev=s["nhev"] + products)
        good = sy > 1e-10 * fnp.sum(y * y)
        if method == "lbfgs":
            h = s["head"]
            new["S"] = s["S"].at[h].set(fnp.where(good, step, s["S"][h]))
            new["Y"] = s["Y"].at[h].set(fnp.where(good, y, s["Y"][h]))
            new["rho"] = s["rho"].at[h].set(fnp.where(good, 1.0 / fnp.where(good, sy, 1.0),
                                                      s["rho"][h]))
            new["head"] = fnp.where(good, (h + 1) % m, h)
            new["count"] = fnp.where(good, fnp.minimum(s["count"] + 1, m), s["count"])
        elif method == "bfgs":
            H, r = s["H"], 1.0 / fnp.where(good, sy, 1.0)
            H = fnp.where(first & good, H * (sy / fnp.where(good, fnp.sum(y * y), 1.0)), H)
            Hy = H @ y
            upd = (H - r * (fnp.outer(step, Hy) + fnp.outer(Hy, step))
                   + (r * r * fnp.sum(y * Hy) + r) * fnp.outer(step, step))
            new["H"] = fnp.where(good, upd, H)
        small_df = (f - f1) <= ftol * fnp.maximum(fnp.maximum(fnp.abs(f), fnp.abs(f1)), 1.0)
        small_dx = fnp.sum(fnp.abs(step)) <= xtol * n              # SciPy's Newton-CG test
        by_f = method in ("lbfgs", "bfgs")
        new["status"] = fnp.where(~found & (a == 0), 3, fnp.where(
            pg_norm(x1, g1) <= gtol, 1, fnp.where(found & small_df & by_f, 2,
                                                  fnp.where(small_dx, 4, 0))))
        if history:
            new["hist"] = s["hist"].at[s["k"] + 1].set(fnp.stack([f1, pg_norm(x1, g1)]))
        return new

    f0, g0 = vg(x0)
    s = {"k": np.int64(0), "x": x0, "f": f0, "g": g0, "nfev": np.int64(1), "nhev": np.int64(0),
         "status": fnp.where(~fnp.isfinite(f0) | ~fnp.all(fnp.isfinite(g0)), 5,
                             fnp.where(pg_norm(x0, g0) <= gtol, 1, 0)),
         "hist": fnp.concatenate([fnp.stack([f0, pg_norm(x0, g0)])[None],
                                  fnp.zeros((maxiter if history else 0, 2))])}
    if method == "lbfgs":
        s.update(S=fnp.zeros((m, n)), Y=fnp.zeros((m, n)), rho=fnp.zeros(m),
                 head=np.int64(0), count=np.int64(0))
    elif method == "bfgs":
        s["H"] = fnp.eye(n)
    s = while_loop(lambda s: (s["status"] == 0) & (s["k"] < maxiter), body, s)
    return s["x"], s["f"], s["g"], s["k"], s["nfev"], s["nhev"], s["status"], s["hist"]


def _cg_solve(matvec, b, maxiter=None):
    """Conjugate gradients for a symmetric positive definite matvec (the Hessian at a
    minimum), to a relative residual of 1e-12. (The divisions are guarded for a run that has
    converged: batched by vmap, as in jacrev, it keeps stepping while others have not.)"""
    tol2 = 1e-24 * fnp.sum(b * b)

    def body(c):
        x, r, p, rr, k = c
        ap = matvec(p)
        pap = fnp.sum(p * ap)
        alpha = rr / fnp.where(pap == 0, 1.0, pap)
        x, r = x + alpha * p, r - alpha * ap
        rr_new = fnp.sum(r * r)
        return x, r, r + (rr_new / fnp.where(rr == 0, 1.0, rr)) * p, rr_new, k + 1
    limit = 10 * b.shape[0] if maxiter is None else maxiter
    x, *_ = while_loop(lambda c: (c[3] > tol2) & (c[4] < limit), body,
                       (fnp.zeros_like(b), b, b, fnp.sum(b * b), np.int64(0)))
    return fnp.where(fnp.isfinite(tol2), x, np.nan)     # (a NaN b stops the loop at once)


def _hessian_solve(matvec, b):
    """The tangent solve of minimize's implicit derivative: conjugate gradients, itself
    differentiated as a linear solve (fg.custom_linear_solve), not through its iterations (a
    run that converges early at one right-hand side has the wrong derivative there)."""
    return custom_linear_solve(matvec, b, _cg_solve, symmetric=True)


def _optimality(f_flat, lo, hi):
    """The condition the minimiser x* satisfies, as F(x, *args) = 0 with a symmetric
    Jacobian: grad f = 0 for the free variables; x = its bound for those held at a bound with
    the gradient pointing outward (the active set, taken at x* and held fixed), whose
    derivative is then 0. The free rows see the active variables at their bounds, so dF/dx is
    the Hessian on the free set and the identity on the active one (the reduced system
    conjugate gradients solve)."""
    g = lambda x, *args: grad(f_flat)(x, *args)
    if lo is None:
        return g

    def F(x, *args):
        g0 = stop_gradient(g(x, *args))
        at_lo, at_hi = (x <= lo) & (g0 > 0), (x >= hi) & (g0 < 0)
        active = stop_gradient(at_lo | at_hi)
        bound = fnp.where(at_lo, lo, hi)
        return fnp.where(active, x - bound, g(fnp.where(active, bound, x), *args))
    return F


def _differentiable(f_flat, run, flat0, lo, hi, args, unravel):
    """minimize under a transform (args traced): the minimiser found by the compiled loop,
    differentiated implicitly through its optimality condition (_optimality: a variable at an
    active bound has derivative 0), not through the iterations; the derivative of a run that
    did not converge warns or is NaN (convergence.py)."""
    x, f, g, nit, nfev, nhev, status, hist = run(flat0, lo, hi, stop_gradient(args))
    ok = (status == 1) | (status == 2) | (status == 4)
    x = implicit_solution(_optimality(f_flat, lo, hi), args, x, ok, "fg.optimize.minimize",
                          _hessian_solve)
    f, g = value_and_grad(f_flat)(x, *args)
    return OptimizeResult(x=unravel(x), fun=f, jac=unravel(g), nit=nit, nfev=nfev, njev=nfev,
                          status=status, success=None, message="traced: see status")


def _bounds(bounds, n):
    if bounds is None:
        return None, None
    if isinstance(bounds, tuple) and len(bounds) == 2 and np.ndim(bounds[0]) == 1:
        lo, hi = (np.asarray(b, np.float64) for b in bounds)
    else:
        pairs = list(bounds)
        if len(pairs) != n:
            raise ValueError(f"minimize: bounds has {len(pairs)} pairs for {n} variables")
        lo = np.array([-np.inf if p[0] is None else p[0] for p in pairs], np.float64)
        hi = np.array([np.inf if p[1] is None else p[1] for p in pairs], np.float64)
    return np.broadcast_to(lo, (n,)).copy(), np.broadcast_to(hi, (n,)).copy()


def minimize(fun, x0, args=(), *, method="lbfgs", tol=None, maxiter=None, bounds=None,
             history=False, options=None):
    """Minimise fun(x, *args) from x0 (a pytree) in one compiled loop.

    method: "lbfgs" (memory `options["maxcor"]`, 10), "bfgs" (dense inverse Hessian),
    "newton-cg" (truncated Newton with Hessian-vector products) or "gd" (steepest descent
    with the same line search). Stops when the infinity norm of the (projected) gradient is
    at most gtol (`tol`, default 1e-5), when a step lowers f by less than ftol relative
    (`options["ftol"]`, SciPy's 2.2e-9; lbfgs and bfgs), after maxiter iterations (SciPy's
    defaults: 15000, 200 n for newton-cg), or when the line search fails. Newton-CG follows
    SciPy's test instead: it stops when the step's 1-norm is at most n * xtol (`tol`, default
    1e-5; gtol only if given in options). Returns a scipy.optimize.OptimizeResult with x
    (x0's structure), fun, jac, nit, nfev, njev, success, status, message (nhev for
    newton-cg; history with history=True). status: 0 maxiter reached, 1 gtol met, 2 ftol met,
    3 the line search failed, 4 xtol met (newton-cg), 5 fun or its gradient not finite at x0
    (also a RuntimeWarning at the calling line). A fun returning more than one value raises
    NonScalarOutputError (least_squares takes residuals, root equations).

        >>> rosen = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        >>> res = fg.optimize.minimize(rosen, np.zeros(2))
        >>> res.x, res.nit
        (array([0.99999959, 0.99999916]), 20)
    """
    method = method.lower().replace("-", "")
    if method not in METHODS:
        raise ValueError(f"minimize: method must be one of {METHODS}, got {method!r}")
    options = dict(options or {})
    x0 = float_leaves(x0)
    flat0, unravel = ravel_pytree(x0)
    flat0 = np.asarray(flat0, np.float64)
    n = flat0.size
    newton = method == "newtoncg"
    default = 1e-5 if tol is None else tol
    gtol = float(options.pop("gtol", 0.0 if newton else default))
    xtol = float(options.pop("xtol", default)) if newton else 0.0
    ftol = float(options.pop("ftol", 2.220446049250313e-09))
    m = int(options.pop("maxcor", 10))
    maxls = int(options.pop("maxls", 20))
    maxiter = int(maxiter if maxiter is not None else options.pop(
        "maxiter", 200 * n if newton else 15000))
    if options:
        raise TypeError(f"minimize: unknown options {sorted(options)}")
    if newton and bounds is not None:
        raise ValueError("minimize: method 'newton-cg' takes no bounds (as in SciPy); use "
                         "method='lbfgs' for a bounded problem")
    lo, hi = _bounds(bounds, n)
    if lo is not None:
        flat0 = np.clip(flat0, lo, hi)
    def f_flat(x, *a):
        out = fun(unravel(x), *a)
        require_scalar("fg.optimize.minimize", fun, out, _VECTOR_ADVICE)
        return as_float64(out)

    def make():
        @jit(same_bits=False)          # (a library loop never waits: jit_same_bits)
        def run(x0, lo, hi, args):
            vg = lambda x: value_and_grad(f_flat)(x, *args)
            hvp = lambda x, v: jvp(lambda y: grad(f_flat)(y, *args), (x,), (v,))[1]
            return _loop(vg, x0, method, m, maxiter, gtol, ftol, maxls, lo, hi, history,
                         hvp, xtol)
        return run
    run = cached_runner(fun, ("minimize", method, m, maxiter, gtol, xtol, ftol, maxls, history,
                              tree_signature(x0)), make)

    if any(isinstance(leaf, Traced) for leaf in tree_leaves(args)):
        return _differentiable(f_flat, run, flat0, lo, hi, tuple(args), unravel)
    x, f, g, nit, nfev, nhev, status, hist = run(flat0, lo, hi, tuple(args))
    status = int(status)
    res = OptimizeResult(x=unravel(x), fun=f, jac=unravel(g), nit=int(nit), nfev=int(nfev),
                         njev=int(nfev), status=status, success=status in (1, 2, 4),
                         message=_MESSAGES[status])
    if newton:
        res.nhev = int(nhev)
    if status == 5:
        bad = first_bad(np.append(f, g))
        warn("fg.optimize.minimize", f"{named(fun)} is not finite at x0: " + (
            f"its value is {float(f)!r}." if bad == 0 else
            f"its gradient's entry {bad - 1} is {float(np.ravel(g)[bad - 1])!r}."),
            NOT_FINITE_ADVICE)
    if history:
        res.history = {"fun": hist[:int(nit) + 1, 0], "gnorm": hist[:int(nit) + 1, 1]}
    return res
