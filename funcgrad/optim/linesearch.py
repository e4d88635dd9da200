"""Line searches as gradient transformations (optax's names, arguments and semantics): each
scales the incoming direction by a step size it finds by evaluating the objective along it.
scale_by_zoom_linesearch meets the strong Wolfe conditions (Nocedal & Wright, Numerical
Optimization, Algorithms 3.5 and 3.6, with Hager & Zhang's approximate Wolfe condition for
flat objectives); scale_by_backtracking_linesearch meets Armijo's sufficient decrease;
scale_by_polyak (polyak_sgd) takes Polyak's step from the value alone.

Their update takes value= and grad= (the objective and its gradient at params) and value_fn=
(the objective) as keywords: they are GradientTransformationExtraArgs, and chain passes the
keywords on. They loop with fg.while_loop and choose with fnp.where, so a loop of updates
compiles to one kernel. value_and_grad_from_state reuses the value and gradient a search
computed at the point it stepped to.
"""
from __future__ import annotations

import inspect
from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..api.gradients import value_and_grad
from ..debug import callback
from ..higher_order import cond, while_loop
from ..tracer import Traced
from ..tree_util import tree_leaves, tree_map
from .updates import (EmptyState, GradientTransformationExtraArgs, _cast_like, _zeros_like, chain,
                      sgd)

__all__ = ["ZoomLinesearchInfo", "ScaleByZoomLinesearchState", "BacktrackingLinesearchInfo",
           "ScaleByBacktrackingLinesearchState", "scale_by_zoom_linesearch",
           "scale_by_backtracking_linesearch", "value_and_grad_from_state", "scale_by_polyak",
           "polyak_sgd"]


class ZoomLinesearchInfo(NamedTuple):
    """How the last zoom line search went: its evaluations of the objective and the errors
    left in the decrease and curvature conditions (0 where met).

        >>> fg.optim.scale_by_zoom_linesearch(5).init(np.zeros(2)).info.num_linesearch_steps
        array(0, dtype=int32)
    """
    num_linesearch_steps: Any
    decrease_error: Any
    curvature_error: Any


class ScaleByZoomLinesearchState(NamedTuple):
    """The step size the last search chose, and the objective's value and gradient at the
    point it stepped to (read by value_and_grad_from_state).

        >>> fg.optim.scale_by_zoom_linesearch(5).init(np.zeros(2)).learning_rate
        array(1.)
    """
    learning_rate: Any
    value: Any
    grad: Any
    info: Any


class BacktrackingLinesearchInfo(NamedTuple):
    """How the last backtracking search went: its evaluations and the error left in the
    decrease condition (0 where met).

        >>> fg.optim.scale_by_backtracking_linesearch(5).init(np.zeros(2)).info.decrease_error
        array(inf)
    """
    num_linesearch_steps: Any
    decrease_error: Any


class ScaleByBacktrackingLinesearchState(NamedTuple):
    """The step size chosen, the value there, and the gradient there with store_grad=True
    (else None).

        >>> fg.optim.scale_by_backtracking_linesearch(5).init(np.zeros(2)).grad is None
        True
    """
    learning_rate: Any
    value: Any
    grad: Any
    info: Any


class _Search(NamedTuple):
    """The zoom search's loop carry: the last trial (stepsize, value, grad, slope, errors), the
    bracket [lo, hi] once found, the point before (ref) for cubic interpolation, and the best
    step meeting the decrease condition so far (safe)."""
    count: Any
    stepsize: Any
    value: Any
    grad: Any
    slope: Any
    decrease_error: Any
    curvature_error: Any
    bracketed: Any
    done: Any
    failed: Any
    lo: Any
    f_lo: Any
    d_lo: Any
    hi: Any
    f_hi: Any
    d_hi: Any
    ref: Any
    f_ref: Any
    safe: Any
    f_safe: Any
    g_safe: Any


def _vdot(a, b):
    """The real part of the inner product <a, b> of two pytrees of the same structure."""
    return sum(fnp.sum(fnp.real(fnp.conj(x) * y)) for x, y in zip(tree_leaves(a), tree_leaves(b)))


def _add_scaled(params, step, direction):
    """params + step * direction, as apply_updates adds the scaled direction."""
    return tree_map(lambda p, u: fnp.asarray(p + step * u).astype(fnp.asarray(p).dtype),
                    params, direction)


def _f64(x):
    return fnp.asarray(fnp.real(x)).astype(np.float64)


def _safe_div(num, den):
    return num / fnp.where(den == 0.0, 1.0, den)


def _objective(value_fn, extra_args, who):
    """value_fn with the keywords of extra_args that it takes; a TypeError for the rest."""
    try:
        names = inspect.signature(value_fn).parameters
        takes_all = any(p.kind == p.VAR_KEYWORD for p in names.values())
    except (TypeError, ValueError):
        names, takes_all = {}, True
    unused = sorted(k for k in extra_args if k not in names and not takes_all)
    if unused:
        raise TypeError(f"{who}.update: keyword arguments {unused} are not arguments of "
                        "value_fn (extra keywords go to value_fn)")
    return lambda params: value_fn(params, **extra_args)


def _needs(value, grad, value_fn, who):
    if value is None or grad is None or value_fn is None:
        raise TypeError(f"{who}.update needs the objective: update(updates, state, params, "
                        "value=f(params), grad=grad f(params), value_fn=f)")


def _report(who, failed, **values):
    """verbose=True: a line when the search ends without a step meeting its conditions (at
    run time, inside compiled loops too)."""
    names = list(values)

    def show(failed, *numbers):
        if failed:
            print(f"{who}: no step size met the conditions; took " + ", ".join(
                f"{k.replace('_', ' ')} {float(x):.6g}" for k, x in zip(names, numbers)))
    callback(show, failed, *values.values())


def _cubic_min(a, fa, da, b, fb, c, fc):
    """The local minimum of the cubic through (a, fa) with slope da there, (b, fb) and
    (c, fc), and whether it exists."""
    db, dc = b - a, c - a
    rb, rc = fb - fa - da * db, fc - fa - da * dc
    det = (db * dc) ** 2 * (db - dc)
    cube = _safe_div(dc ** 2 * rb - db ** 2 * rc, det)
    square = _safe_div(db ** 3 * rc - dc ** 3 * rb, det)
    disc = square * square - 3.0 * cube * da
    ok = (det != 0.0) & (cube != 0.0) & (disc >= 0.0)
    return a + _safe_div(-square + fnp.sqrt(fnp.maximum(disc, 0.0)), 3.0 * cube), ok


def _quad_min(a, fa, da, b, fb):
    """The stationary point of the quadratic through (a, fa) with slope da there and (b, fb),
    and whether it exists."""
    db = b - a
    curv = _safe_div(fb - fa - da * db, db * db)
    return a - _safe_div(da, 2.0 * curv), (db != 0.0) & (curv != 0.0)


def _zoom_trial(c):
    """The next trial inside the bracket (Algorithm 3.6's interpolation step): the cubic's
    minimum unless within 20% of the bracket's ends, else the quadratic's unless within 10%,
    else the midpoint."""
    delta = fnp.abs(c.hi - c.lo)
    left, right = fnp.minimum(c.lo, c.hi), fnp.maximum(c.lo, c.hi)
    cubic, ok_c = _cubic_min(c.lo, c.f_lo, c.d_lo, c.hi, c.f_hi, c.ref, c.f_ref)
    ok_c = ok_c & (cubic > left + 0.2 * delta) & (cubic < right - 0.2 * delta)
    quad, ok_q = _quad_min(c.lo, c.f_lo, c.d_lo, c.hi, c.f_hi)
    ok_q = ok_q & (quad > left + 0.1 * delta) & (quad < right - 0.1 * delta)
    return fnp.where(ok_c, cubic, fnp.where(ok_q, quad, (c.lo + c.hi) / 2.0))


def _pick(flag, a, b):
    return tree_map(lambda x, y: fnp.where(flag, x, y), a, b)


def scale_by_zoom_linesearch(max_linesearch_steps, max_learning_rate=None, tol=0.0,
                             increase_factor=2.0, slope_rtol=1e-4, curv_rtol=0.9,
                             approx_dec_rtol=1e-6, stepsize_precision=1e-5,
                             initial_guess_strategy="keep", verbose=False):
    """The direction u times a step size eta meeting the strong Wolfe conditions along it:
    f(w + eta u) <= f(w) + slope_rtol eta <grad f(w), u> + tol (sufficient decrease) and
    |<grad f(w + eta u), u>| <= curv_rtol |<grad f(w), u>| + tol (small curvature).
    Nocedal & Wright's Algorithm 3.5 grows eta by increase_factor from the first guess (1 with
    initial_guess_strategy="one", the last step size with "keep") until it brackets such a
    step; Algorithm 3.6 then zooms in by cubic, quadratic or bisection steps. Where f is
    within approx_dec_rtol |f(w)| of f(w) the decrease condition may be met by Hager & Zhang's
    approximate one instead, <grad f(w + eta u), u> <= (2 slope_rtol - 1) <grad f(w), u>
    (None: never). After max_linesearch_steps evaluations, or once the bracket is narrower than
    stepsize_precision, it takes the best step meeting the decrease condition found (if any);
    verbose=True prints a line then. update(updates, state, params, *, value, grad,
    value_fn, **extra_args): value and grad at params, value_fn the objective (extra keywords
    are passed to it).

        >>> f = lambda w: fnp.sum((w - 3.0) ** 2)
        >>> ls, w = fg.optim.scale_by_zoom_linesearch(10), np.zeros(2)
        >>> ls.update(-fg.grad(f)(w), ls.init(w), w, value=f(w), grad=fg.grad(f)(w),
        ...           value_fn=f)[0]                      # the exact step: eta = 1/2
        array([3., 3.])
    """
    if initial_guess_strategy not in ("one", "keep"):
        raise ValueError(f"scale_by_zoom_linesearch: initial_guess_strategy must be 'one' or "
                         f"'keep', got {initial_guess_strategy!r}")
    c1, c2, c3 = slope_rtol, curv_rtol, approx_dec_rtol

    def errors(eta, f, d, f0, d0):
        dec = f - f0 - c1 * eta * d0
        if c3 is not None:
            approx = fnp.maximum(d - (2 * c1 - 1.0) * d0, f - f0 - c3 * fnp.abs(f0))
            dec = fnp.minimum(approx, dec)
        dec, curv = fnp.maximum(dec, 0.0), fnp.maximum(fnp.abs(d) - c2 * fnp.abs(d0), 0.0)
        return (fnp.where(fnp.isnan(dec), np.inf, dec), fnp.where(fnp.isnan(curv), np.inf, curv))

    def init(params):
        return ScaleByZoomLinesearchState(
            np.array(1.0), np.array(np.inf), _zeros_like(params),
            ZoomLinesearchInfo(np.array(0, np.int32), np.array(np.inf), np.array(np.inf)))

    def update(updates, state, params=None, *, value=None, grad=None, value_fn=None,
               **extra_args):
        _needs(value, grad, value_fn, "scale_by_zoom_linesearch")
        objective = value_and_grad(_objective(value_fn, extra_args, "scale_by_zoom_linesearch"))
        f0, d0 = _f64(value), _f64(_vdot(updates, grad))
        guess = 1.0 if initial_guess_strategy == "one" else _f64(state.learning_rate)
        zero = fnp.zeros((), np.float64)
        start = _Search(fnp.zeros((), np.int32), zero, f0, grad, d0, zero + np.inf,
                        zero + np.inf, np.array(False), np.array(False), np.array(False),
                        zero, f0, d0, zero, f0, d0, zero, f0, zero, f0, grad)

        def step(c):
            grow = fnp.where(c.count == 0, guess, increase_factor * c.stepsize)
            capped = False
            if max_learning_rate is not None:
                capped, grow = grow >= max_learning_rate, fnp.minimum(grow, max_learning_rate)
            eta = fnp.where(c.bracketed, _zoom_trial(c), grow)
            f, g = objective(_add_scaled(params, eta, updates))
            f, d = _f64(f), _f64(_vdot(updates, g))
            dec, curv = errors(eta, f, d, f0, d0)
            met = fnp.maximum(dec, curv) <= tol
            # Algorithm 3.5: the bracket is [previous trial, eta] once eta breaks the decrease
            # condition or rises, [eta, previous] once the slope turns nonnegative
            s_hi = (dec > 0.0) | ((f >= c.value) & (c.count > 0))
            s_lo = (d >= 0.0) & ~s_hi
            # Algorithm 3.6: eta replaces hi if it breaks the decrease condition or is no
            # lower than lo, else lo (and the old lo becomes hi where the slope says so)
            z_hi = (dec > 0.0) | (f >= c.f_lo)
            z_flip = (d * (c.hi - c.lo) >= 0.0) & ~z_hi
            trial, prev = (eta, f, d), (c.stepsize, c.value, c.slope)
            zoom_lo = _pick(z_hi, (c.lo, c.f_lo, c.d_lo), trial)
            zoom_hi = _pick(z_hi, trial, _pick(z_flip, (c.lo, c.f_lo, c.d_lo),
                                               (c.hi, c.f_hi, c.d_hi)))
            lo = _pick(c.bracketed, zoom_lo, _pick(s_lo, trial, prev))
            hi = _pick(c.bracketed, zoom_hi, _pick(s_lo, prev, trial))
            ref = _pick(c.bracketed & ~(z_hi | z_flip), (c.lo, c.f_lo), (c.hi, c.f_hi))
            ref = _pick(c.bracketed, ref, lo[:2])
            keep = (dec <= tol) & (~c.bracketed | (f < c.f_safe))
            safe, f_safe, g_safe = _pick(keep, (eta, f, g), (c.safe, c.f_safe, c.g_safe))
            bracketed = c.bracketed | s_hi | s_lo | met
            done = met | (~c.bracketed & capped & ~bracketed)
            narrow = c.bracketed & (fnp.abs(c.hi - c.lo) <= stepsize_precision) & (safe > 0.0)
            failed = ((c.count + 1 >= max_linesearch_steps) | narrow) & ~done
            # out of steps: the best step with sufficient decrease, or none if f blew up
            fallback = failed & ((safe > 0.0) | fnp.isinf(dec))
            eta, f, g = _pick(fallback, (safe, f_safe, g_safe), (eta, f, g))
            return _Search(c.count + 1, eta, f, g, d, dec, curv, bracketed, done, failed, *lo,
                           *hi, *ref, safe, f_safe, g_safe)
        end = while_loop(lambda c: ~(c.done | c.failed), step, start)
        if verbose:
            _report("scale_by_zoom_linesearch", end.failed, step_size=end.stepsize,
                    decrease_error=end.decrease_error, curvature_error=end.curvature_error,
                    slope=d0)
        new = ScaleByZoomLinesearchState(end.stepsize, end.value, end.grad, ZoomLinesearchInfo(
            end.count, end.decrease_error, end.curvature_error))
        return _cast_like(tree_map(lambda u: end.stepsize * u, updates), updates), \
            _cast_like(new, state)
    return GradientTransformationExtraArgs(init, update)


def scale_by_backtracking_linesearch(max_backtracking_steps, slope_rtol=1e-4,
                                     decrease_factor=0.8, increase_factor=1.5,
                                     max_learning_rate=1.0, atol=0.0, rtol=0.0,
                                     store_grad=False, verbose=False):
    """The direction u times a step size eta meeting Armijo's sufficient decrease condition,
    f(w + eta u) <= (1 + rtol) f(w) + slope_rtol eta <grad f(w), u> + atol: from
    min(increase_factor * the last step size, max_learning_rate), eta shrinks by
    decrease_factor until it holds, for at most max_backtracking_steps shrinks (eta = 0 if
    f is then still infinite or NaN). store_grad=True keeps the gradient at the new point in
    the state too (for value_and_grad_from_state; one more gradient evaluation).
    verbose=True prints a line when no step met the condition. update(updates, state, params,
    *, value, grad, value_fn, **extra_args), as scale_by_zoom_linesearch's.

        >>> f = lambda w: fnp.sum((w - 3.0) ** 2)
        >>> ls, w = fg.optim.scale_by_backtracking_linesearch(20), np.zeros(2)
        >>> ls.update(-fg.grad(f)(w), ls.init(w), w, value=f(w), grad=fg.grad(f)(w),
        ...           value_fn=f)[0]                      # eta = 0.8: f(w + u) = f(w)
        array([4.8, 4.8])
    """
    def init(params):
        return ScaleByBacktrackingLinesearchState(
            np.array(1.0), np.array(np.inf), _zeros_like(params) if store_grad else None,
            BacktrackingLinesearchInfo(np.array(0, np.int32), np.array(np.inf)))

    def update(updates, state, params=None, *, value=None, grad=None, value_fn=None,
               **extra_args):
        who = "scale_by_backtracking_linesearch"
        _needs(value, grad, value_fn, who)
        objective = _objective(value_fn, extra_args, who)
        f0, d0 = _f64(value), _f64(_vdot(updates, grad))

        def error(eta, f):
            err = fnp.maximum(f - (1.0 + rtol) * f0 - eta * slope_rtol * d0, 0.0)
            return fnp.where(fnp.isnan(err), np.inf, err)

        def step(c):
            count, eta, _, _ = c
            eta = fnp.where(count > 0, decrease_factor * eta, eta)
            f = _f64(objective(_add_scaled(params, eta, updates)))
            return count + 1, eta, f, error(eta, f)
        first = fnp.minimum(increase_factor * _f64(state.learning_rate), max_learning_rate)
        count, eta, f, err = while_loop(
            lambda c: ~(c[3] <= atol) & (c[0] <= max_backtracking_steps), step,
            (fnp.zeros((), np.int32), _f64(first), f0, fnp.asarray(np.inf)))
        g = value_and_grad(objective)(_add_scaled(params, eta, updates))[1] if store_grad \
            else None
        eta = fnp.where(fnp.isinf(err), 0.0, eta)
        if verbose:
            _report("scale_by_backtracking_linesearch", err > atol, step_size=eta,
                    decrease_error=err, slope=d0)
        new = ScaleByBacktrackingLinesearchState(eta, f, g, BacktrackingLinesearchInfo(count, err))
        return _cast_like(tree_map(lambda u: eta * u, updates), updates), _cast_like(new, state)
    return GradientTransformationExtraArgs(init, update)


def _field(state, name):
    """The values of the fields called name in a state (NamedTuples nested in tuples, lists
    and dicts)."""
    found = []
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        if name in state._fields:
            found.append(getattr(state, name))
        parts = [getattr(state, k) for k in state._fields if k != name]
    elif isinstance(state, (tuple, list)):
        parts = list(state)
    elif isinstance(state, dict):
        parts = list(state.values())
    else:
        parts = []
    for part in parts:
        found.extend(_field(part, name))
    return found


def value_and_grad_from_state(value_fn):
    """fg.value_and_grad(value_fn), except that it returns the value and gradient a line
    search stored in the optimizer state (at the point it stepped to, which is params now)
    when there is one: f(params, *args, state=state, **kwargs) -> (value, grad). The state
    must hold exactly one `value` and one `grad` (a line search's); where the value is not
    finite (before the first step), they are computed.

        >>> f = lambda w: fnp.sum(w ** 2)
        >>> opt, w = fg.optim.lbfgs(), np.array([1.0, 2.0])
        >>> vg = fg.optim.value_and_grad_from_state(f)
        >>> state = opt.init(w)
        >>> value, grad = vg(w, state=state)                   # computed
        >>> updates, state = opt.update(grad, state, w, value=value, grad=grad, value_fn=f)
        >>> w = fg.optim.apply_updates(w, updates)
        >>> bool(vg(w, state=state)[0] == f(w))                # read from the state
        True
    """
    def fn(params, *args, state, **kwargs):
        values, grads = _field(state, "value"), _field(state, "grad")
        if len(values) != 1 or len(grads) != 1 or grads[0] is None:
            raise ValueError(f"value_and_grad_from_state: the state holds {len(values)} `value` "
                             f"and {len(grads)} `grad` fields; it needs one of each (a line "
                             "search's, with store_grad=True for the backtracking one)")
        value, grad = values[0], grads[0]
        compute = value_and_grad(lambda p: value_fn(p, *args, **kwargs))
        if not isinstance(value, Traced) and not any(isinstance(g, Traced)
                                                     for g in tree_leaves(grad)):
            return (value, grad) if np.isfinite(value) else compute(params)

        def fresh(p):
            v, g = compute(p)
            return _cast_like((v, g), (value, grad))
        return cond(fnp.isfinite(value), lambda p: (value, grad), fresh, params)
    return fn


def scale_by_polyak(f_min=0.0, max_learning_rate=1.0, eps=0.0, variant="sps"):
    """The updates times Polyak's step size min((f(w) - f_min) / (||g||^2 + eps),
    max_learning_rate) (Loizou et al. 2021's stochastic Polyak step; variant "sps+" takes
    max(f(w) - f_min, 0)); 0 where ||g||^2 + eps is below float64's epsilon. Its update
    takes value= (f at params).

        >>> opt = fg.optim.scale_by_polyak(max_learning_rate=10.0)
        >>> opt.update(np.array([2.0, 0.0]), opt.init(np.zeros(2)), value=2.0)[0]   # 2 / 4
        array([1., 0.])
    """
    if variant not in ("sps", "sps+"):
        raise ValueError(f"scale_by_polyak: variant must be 'sps' or 'sps+', got {variant!r}")

    def update(updates, state, params=None, *, value=None, **extra_args):
        if value is None:
            raise TypeError("scale_by_polyak.update needs value= (the objective at params)")
        squares = _f64(_vdot(updates, updates))
        gap = _f64(value) - f_min
        if variant == "sps+":
            gap = fnp.maximum(gap, 0.0)
        tiny = squares + eps <= np.finfo(np.float64).eps
        step = fnp.where(tiny, 0.0, fnp.minimum(_safe_div(gap, squares + eps), max_learning_rate))
        return _cast_like(tree_map(lambda u: step * u, updates), updates), state
    return GradientTransformationExtraArgs(lambda params: EmptyState(), update)


def polyak_sgd(max_learning_rate=1.0, scaling=1.0, f_min=0.0, eps=0.0, variant="sps"):
    """SGD with Polyak's step size (Loizou et al. 2021): w -= eta * scaling * g with
    eta = min((f(w) - f_min) / ||scaling * g||^2, max_learning_rate) (optax's composition:
    scale_by_polyak after sgd(scaling)), for objectives whose minimum f_min is known (0 for
    interpolating models). Its update takes value=; fg.optim.fit supplies it.

        >>> f = lambda w: fnp.sum(w ** 2)
        >>> opt, w = fg.optim.polyak_sgd(), np.array([1.0, 2.0])
        >>> updates, state = opt.update(fg.grad(f)(w), opt.init(w), w, value=f(w))
        >>> fg.optim.apply_updates(w, updates)                    # step 5 / 20 = 0.25
        array([0.5, 1. ])
    """
    return chain(sgd(learning_rate=scaling),
                 scale_by_polyak(f_min, max_learning_rate, eps, variant))
