"""NumPy's elementwise functions that are compositions (or the identity on real arrays):
positive, round/around (real, imag, conj: _complex.py). The ufunc primitives, where and clip are in
funcgrad/primitives/elementwise.py.
"""
from __future__ import annotations

import numpy as np

from ..primitives.base import export
from ..primitives.elementwise import rint


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
