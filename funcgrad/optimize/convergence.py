"""The implicit derivative of a solver's answer, and what it does when the solver did not
converge.

fg.optimize differentiates minimize, root and least_squares through the condition their
answer satisfies (grad f = 0, F = 0, J^T r = 0; fg.custom_root), never through the
iterations. A run stopped by maxiter or a failed line search returns a point where that
condition does not hold, and the derivative computed there is not the derivative of anything
the caller has: then it warns at the user's line (UnconvergedDerivativeWarning) or, with
fg.config.unconverged_derivative = "nan", is NaN ("ignore": as computed, silently). The check
runs when the derivative does (interpreted or compiled: a debug callback), on the solver's own
success flag.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from .._config import config
from .._errors import user_frame, warn_at
from ..debug import callback
from ..higher_order.custom import custom_vjp
from ..higher_order.implicit import custom_root
from ..ir import Traced
from ..tree_util import tree_flatten, tree_unflatten

__all__ = ["UnconvergedDerivativeWarning", "implicit_solution"]


class UnconvergedDerivativeWarning(RuntimeWarning):
    """The derivative of a solver's answer was asked for, but the solver did not converge:
    the implicit derivative assumes a solution and can be far from the truth."""


def _message(what):
    return (f"the derivative of {what}'s result is taken by implicit differentiation, which "
            "assumes the result solves its optimality condition, but the solver did not "
            "converge (its result has success=False): the derivative can be far from that of "
            "the returned x. Let it converge (raise maxiter, check the message and status), "
            "or set fg.config.unconverged_derivative = 'nan' for NaN derivatives instead "
            "('ignore' keeps them silently).")


def implicit_solution(condition, args, x, ok, what, tangent_solve):
    """x, a solver's answer for the traced `args` computed without derivatives, differentiated
    implicitly through condition(x, *args) = 0 (fg.custom_root; tangent_solve solves its
    linear systems). Where the traced flag `ok` (the solver's success) is false, the
    derivative follows fg.config.unconverged_derivative; `what` names the solver."""
    checked = _checked(args, ok, what)
    return custom_root(lambda y: condition(y, *checked), x, lambda F, start: start,
                       tangent_solve)


def _checked(args, ok, what):
    """args, whose cotangents (what the implicit derivative gives them) warn or become NaN
    where ok is false. Marking the parameters, not the answer, keeps NaN out of the linear
    solves (a compiled solve refuses NaN)."""
    mode = config.unconverged_derivative
    leaves, tree = tree_flatten(args)
    slots = [i for i, v in enumerate(leaves)
             if isinstance(v, Traced) and np.dtype(v.dtype).kind in "fc"]
    if mode == "ignore" or not slots:
        return args
    src = user_frame()

    def warn(converged, *cts):
        if not bool(converged):
            warn_at(src, _message(what), UnconvergedDerivativeWarning)

    def bwd(converged, cts):
        if mode == "nan":    # (a product: linear in the cotangent, so forward mode gets NaN too)
            scale = fnp.where(converged, 1.0, np.nan)
            return tuple(None if c is None else c * scale for c in cts) + (None,)
        # (given the cotangents, the callback runs in the backward pass)
        callback(warn, converged, *[c for c in cts if c is not None])
        return tuple(cts) + (None,)

    marked = custom_vjp(lambda *vals: vals[:-1]).defvjp(lambda *vals: (vals[:-1], vals[-1]), bwd)
    marked.trace_identity = ("unconverged", what, mode, src)
    new = list(leaves)
    for i, v in zip(slots, marked(*[leaves[i] for i in slots], ok)):
        new[i] = v
    return tree_unflatten(tree, new)
