"""NumPy functions that assemble arrays from pieces, as compositions: select, vander,
trapezoid (and its old name trapz), and the index tricks r_ and c_ (`fnp.r_[x, 0.0, 1:3]`).

Derivatives of every order come from the rules of what they are made of. On plain arrays each
returns what NumPy does. Shapes and counts (N of vander, slices in r_) must be concrete.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import aval_of
from ..primitives import NAMESPACE
from ..primitives.base import export, has_traced
from ..primitives.elementwise import where
from ..primitives.reductions import sum as _sum
from ..primitives.shape import _asarray, _axis, concatenate, reshape, stack
from ._misc import diff
from ._shape import _static


@export(numpy=np.select, traced=("condlist", "choicelist", "default"))
def select(condlist, choicelist, default=0):
    """np.select: elementwise, the choice of the first condition that holds, else `default`
    (the gradient goes to the chosen value).

        >>> x = np.linspace(-2.0, 2.0, 5); fnp.select([x < -1, x > 1], [-x, x ** 2], 0.0)
        array([2., 0., 0., 0., 4.])
    """
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    out = _asarray(default)
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        cond = _asarray(cond)
        if aval_of(cond).dtype != np.bool_:
            raise TypeError(f"invalid entry in condlist: should be boolean ndarray, got "
                            f"{aval_of(cond).dtype}")
        out = where(cond, choice, out)
    return out


@export(numpy=np.vander, traced=("x",))
def vander(x, N=None, increasing=False):
    """np.vander: the columns x**(N-1), ..., x, 1 (or increasing powers).

        >>> fnp.vander(np.array([1.0, 2.0, 3.0]), 3)
        array([[1., 1., 1.],
               [4., 2., 1.],
               [9., 3., 1.]])
    """
    x = _asarray(x)
    if aval_of(x).ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = aval_of(x).shape[0] if N is None else operator.index(_static(N, "vander: `N`"))
    powers = range(n) if increasing else range(n - 1, -1, -1)
    columns = [x ** k if k else x * 0 + 1 for k in powers]
    return stack(columns, axis=1) if columns else reshape(x[:0], (aval_of(x).shape[0], 0))


@export("trapezoid", "trapz", numpy=np.trapezoid if hasattr(np, "trapezoid") else np.trapz,
        traced=("y", "x", "dx"))
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """np.trapezoid: the integral of y along `axis` by the trapezoidal rule, at the points x
    (a 1-D x applies along `axis`) or spaced dx.

        >>> t = np.linspace(0.0, np.pi, 101); fnp.trapezoid(np.sin(t), t)   # about 2
        >>> fg.grad(lambda w: fnp.trapezoid(fnp.sin(w * t), t))(1.0)    # d/dw of the integral
    """
    y = _asarray(y)
    nd = aval_of(y).ndim
    axis = _axis(axis, nd)
    n = aval_of(y).shape[axis]
    if x is None:
        d = dx
    else:
        x = _asarray(x)
        d = diff(x, axis=axis if aval_of(x).ndim == nd else -1)
        if aval_of(x).ndim == 1 and nd > 1:
            d = reshape(d, tuple(n - 1 if k == axis else 1 for k in range(nd)))
    lo = tuple(slice(0, n - 1) if k == axis else slice(None) for k in range(nd))
    hi = tuple(slice(1, n) if k == axis else slice(None) for k in range(nd))
    return _sum(d * (y[hi] + y[lo]) / 2.0, axis=axis)


class _Concatenator:
    """np.r_ (rows: join along the first axis) and np.c_ (columns: 1-D pieces become columns,
    joined along the last axis) for pieces that may be traced: arrays, numbers and slices
    `start:stop:step` (a complex step `start:stop:5j` means 5 points, as linspace). NumPy's
    string directives ('r', '0,2,1', ...) are not supported with traced pieces."""

    def __init__(self, name, columns):
        self.name, self.columns = name, columns

    def __getitem__(self, key):
        pieces = key if isinstance(key, tuple) else (key,)
        if not has_traced(*pieces):             # (an object's [], not a call: no export)
            return getattr(np, self.name)[key]
        parts = []
        for p in pieces:
            if isinstance(p, str):
                raise NotImplementedError(f"fnp.{self.name}: string directives are not "
                                          f"supported with traced values")
            if isinstance(p, slice):
                p = _slice_range(p)
            p = _asarray(p)
            shape = aval_of(p).shape
            if self.columns:
                p = reshape(p, (shape[0] if shape else 1, 1)) if len(shape) < 2 else p
            elif not shape:
                p = reshape(p, (1,))
            parts.append(p)
        return concatenate(parts, axis=-1 if self.columns else 0)

    def __repr__(self):
        return f"fnp.{self.name}"


def _slice_range(s):
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex):
        return np.linspace(start, s.stop, int(abs(step)))
    return np.arange(start, s.stop, step)


NAMESPACE["r_"] = _Concatenator("r_", columns=False)
NAMESPACE["c_"] = _Concatenator("c_", columns=True)
