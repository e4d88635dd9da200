"""What fg.scipy.special's called-back functions share (special.py and _special_more.py):
the SciPy callback, the arguments made float arrays of one shape, and the marker of an
argument whose derivative funcgrad does not know."""
from __future__ import annotations

import functools

import numpy as np

from .. import numpy as fnp
from .._errors import UnsupportedFunctionError
from ..higher_order import custom_vjp, pure_callback


def callback(name, *xs):
    """scipy.special.<name>(*xs) called back from traced code, on the xs as float arrays (of
    one shape: see floats)."""
    import scipy.special
    xs = [fnp.asarray(x) * 1.0 for x in xs]   # (float, as SciPy computes)
    return pure_callback(getattr(scipy.special, name), xs[0], *xs)


def floats(*xs):
    """The arguments as float arrays of their common dtype, broadcast to one shape (so that a
    custom_vjp's cotangents have its arguments' shapes; broadcasting's own vjp sums)."""
    xs = [fnp.asarray(x) * 1.0 for x in xs]
    dtype = np.result_type(*[x.dtype for x in xs])
    return [x.astype(dtype) for x in fnp.broadcast_arrays(*xs)]


@functools.lru_cache(maxsize=None)
def no_derivative(fname, pname, missing="is not implemented"):
    """The identity on argument `pname` of fname whose derivative raises: only where that
    argument is differentiated (its rule is asked for a cotangent). `missing` completes
    "the derivative with respect to <pname> ..." in the error."""
    @custom_vjp
    def f(a):
        return a

    def bwd(a, ct):
        raise UnsupportedFunctionError(
            f"fg.scipy.special.{fname}: the derivative with respect to {pname} {missing}. "
            f"Apply fg.stop_gradient to {pname} if it should be held constant.")
    return f.defvjp(lambda a: (a, a), bwd)
