"""What the library loops (fg.optimize's minimize, root, least_squares, fg.optim.fit) say when
the user's function does not fit them or the iteration fails: the function named with the line
that defines it, the user's line that called the loop, and what to try.

Loops that return a result (SciPy's convention: success=False and a message) keep returning
it; a failure the user would otherwise meet only as NaN or as a misleading message (values
that are not finite, a Jacobian that is singular everywhere) also warns at the user's line.
"""
from __future__ import annotations

import numpy as np

from .._errors import NonScalarOutputError, user_frame, warn_at, where
from ..api.calls import fn_name, fn_where


def named(fun):
    """'cost (defined at /path/script.py:12 (in cost))' for the user's function."""
    return f"{fn_name(fun)}{fn_where(fun)}"


def require_scalar(what, fun, out, instead):
    """Raise unless `out`, fun's value (traced or not), has one element: `what` (the loop,
    'fg.optimize.minimize') needs a scalar objective; `instead` says what to use for a vector
    of values."""
    shape = tuple(getattr(getattr(out, "aval", None), "shape", np.shape(out)))
    if int(np.prod(shape)) != 1:
        raise NonScalarOutputError(
            f"{what}{where(user_frame())}: {named(fun)} returns an array of shape {shape}, but "
            f"{what} minimises a scalar objective. {instead}")


def warn(what, message, advice):
    """A RuntimeWarning at the user's line that called the loop."""
    warn_at(user_frame(), f"{what}: {message} {advice}", RuntimeWarning)


def first_bad(values):
    """The index of the first non-finite entry of a 1-d array, or None."""
    bad = np.flatnonzero(~np.isfinite(np.asarray(values, np.float64)))
    return int(bad[0]) if bad.size else None


NOT_FINITE_ADVICE = ("fg.debug_nans(fun)(x) names the operation that makes the first NaN or "
                     "inf; a domain error (log or sqrt of a negative number, a division by "
                     "zero) is the usual cause: start elsewhere, bound the variables, or "
                     "rewrite the function so that it is finite there (fnp.logaddexp, "
                     "fnp.log1p, a softplus for a positive parameter).")
