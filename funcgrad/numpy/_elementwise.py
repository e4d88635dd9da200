"""NumPy's elementwise functions that are compositions (or the identity on real arrays):
positive, round/around, heaviside, copysign, float_power, ldexp, modf, divmod (real, imag,
conj: _complex.py). The ufunc primitives, where and clip are in
funcgrad/primitives/elementwise.py.
"""
from __future__ import annotations

import numpy as np

from ..primitives.base import convert, dtype_or_pytype, export
from ..primitives.elementwise import (absolute, floor_divide, isinf, power, remainder, rint,
                                      signbit, trunc, where)


@export()
def positive(x):
    """np.positive: the identity (unary +)."""
    return x


@export("round", "around", "round_", numpy=np.round)
def round_(a, decimals=0, out=None):
    """np.round (half to even); derivative 0.

        >>> fnp.round(x, 2)
    """
    if decimals == 0:
        return rint(a)
    scale = 10.0 ** decimals
    return rint(a * scale) / scale


@export(numpy=np.heaviside)
def heaviside(x1, x2):
    """np.heaviside: 0 below 0, 1 above, x2 at 0 (NaN stays NaN); derivative 0 in x1, the
    indicator of x1 == 0 in x2.

        >>> fnp.heaviside(x, 0.5)
    """
    return where(x1 < 0, 0.0, where(x1 > 0, 1.0, where(x1 == 0, x2, x1)))


@export(numpy=np.copysign)
def copysign(x1, x2):
    """np.copysign: |x1| with the sign of x2 (signed zeros and NaN signs included).

        >>> fnp.copysign(x, -1.0)
    """
    return where(signbit(x2), -absolute(x1), absolute(x1))


@export(numpy=np.float_power)
def float_power(x1, x2):
    """np.float_power: x1 ** x2 computed in float64 (complex128 for complex operands).

        >>> fnp.float_power(x, 3)
    """
    dt = np.complex128 if np.result_type(dtype_or_pytype(x1), dtype_or_pytype(x2)).kind == "c" \
        else np.float64
    return power(convert(x1, dt), convert(x2, dt))


@export(numpy=np.ldexp)
def ldexp(x1, x2):
    """np.ldexp: x1 * 2 ** x2 for integer x2 (in two exact halves, so 2 ** x2 itself never
    overflows where the product does not).

        >>> fnp.ldexp(x, 3)
    """
    if dtype_or_pytype(x2).kind not in "iub":
        raise TypeError("ldexp: the exponent x2 must be an integer array")
    half = floor_divide(x2, 2)
    dt = np.result_type(dtype_or_pytype(x1), np.float16)
    two = np.asarray(2.0, dt)
    return x1 * power(two, convert(half, dt)) * power(two, convert(x2 - half, dt))


@export(numpy=np.modf)
def modf(x):
    """np.modf: (fractional part, integral part), both with x's sign; the fractional part of
    an infinity is 0.

        >>> frac, whole = fnp.modf(x)
    """
    whole = trunc(x)
    return where(isinf(x), copysign(0.0, x), copysign(x - whole, x)), whole


@export(numpy=np.divmod)
def divmod_(x1, x2):
    """np.divmod: (floor_divide, remainder), as NumPy computes each.

        >>> q, r = fnp.divmod(x, 0.3)
    """
    return floor_divide(x1, x2), remainder(x1, x2)
