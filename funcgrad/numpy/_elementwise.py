"""NumPy's elementwise functions that are compositions (or the identity on real arrays):
positive, real/conj/conjugate, round/around. The ufunc primitives, where and clip are in
funcgrad/primitives/elementwise.py.
"""
from __future__ import annotations

import numpy as np

from .._errors import UnsupportedDtypeError
from ..ir import Traced
from ..primitives.base import export
from ..primitives.elementwise import rint


@export()
def positive(x):
    """np.positive: the identity (unary +)."""
    return x


@export("conj", "conjugate", "real")
def real(x):
    """Real part (and complex conjugate): traced values are real, so this is the identity
    there; concrete complex arrays get NumPy's answer."""
    if not isinstance(x, Traced) and np.iscomplexobj(x):
        raise UnsupportedDtypeError("fnp.real/fnp.conj of a complex array: complex numbers are "
                                    "not supported yet; call np.real / np.conj on it")
    return x


@export("round", "around", "round_")
def round_(a, decimals=0):
    """np.round (half to even); derivative 0.

        >>> fnp.round(x, 2)
    """
    if decimals == 0:
        return rint(a)
    scale = 10.0 ** decimals
    return rint(a * scale) / scale
