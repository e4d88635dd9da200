"""ufunc.reduce and ufunc.accumulate for any binary ufunc of funcgrad.numpy on traced values
(np.logaddexp.reduce(x), np.maximum.accumulate(x), np.subtract.reduce(x), ...), as
compositions of the ufunc itself, so derivatives come from its rule. The reductions NumPy has
names for (np.add.reduce is sum, np.multiply.accumulate cumprod, ...) go to those instead
(funcgrad/tracer.py). An associative ufunc combines halves pairwise (log2(n) levels of
equations); any other folds from the left as NumPy does, one equation per element, which is
refused beyond MAX_FOLD elements (write the loop with fg.scan).
"""
from __future__ import annotations

import operator

import numpy as np

from .._errors import UnsupportedFunctionError, user_frame, where as at_line
from ..ir import aval_of
from ..primitives.base import NAMESPACE, convert, export, full, normalize_axes
from ..primitives.indexing import slice_axis
from ..primitives.shape import _asarray, concatenate, expand_dims
from ._shape import squeeze

ASSOCIATIVE = {"add", "multiply", "maximum", "minimum", "fmax", "fmin", "logaddexp",
               "logaddexp2", "logical_and", "logical_or", "logical_xor", "bitwise_and",
               "bitwise_or", "bitwise_xor", "hypot"}
MAX_FOLD = 256
_NO_VALUE = np._NoValue


def _op(ufunc):
    return NAMESPACE[ufunc.__name__]


def _prepare(ufunc, a, axis, dtype, method):
    if ufunc.nin != 2 or ufunc.nout != 1:
        raise ValueError(f"{method} only supported for binary functions")
    a = _asarray(a)
    if dtype is not None:
        a = convert(a, dtype)
    if aval_of(a).ndim == 0:
        raise TypeError(f"cannot {method} a 0-d array (np.{ufunc.__name__}.{method})")
    axis = normalize_axes(operator.index(axis), aval_of(a).ndim)[0]
    n = aval_of(a).shape[axis]
    if ufunc.__name__ not in ASSOCIATIVE and n > MAX_FOLD:
        raise UnsupportedFunctionError(
            f"np.{ufunc.__name__}.{method} over {n} elements{at_line(user_frame())}: a "
            f"non-associative ufunc folds one element at a time, which would unroll {n} "
            f"steps; write the loop with fg.scan (or fg.fori_loop) instead.")
    return a, axis, n


@export("_ufunc_reduce")
def ufunc_reduce(ufunc, a, axis=0, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
                 where=True):
    """np.<ufunc>.reduce(a, axis) on a traced value (one axis; where= must be True)."""
    if where is not True:
        raise UnsupportedFunctionError(f"np.{ufunc.__name__}.reduce with where= on traced "
                                       "values: use fnp.where to fill the masked entries")
    a, axis, n = _prepare(ufunc, a, axis, dtype, "reduce")
    op = _op(ufunc)
    if n == 0:
        fill = initial if initial is not _NO_VALUE else ufunc.identity
        if fill is None:
            raise ValueError(f"zero-size array to reduction operation {ufunc.__name__} which "
                             "has no identity")
        shape = tuple(d for i, d in enumerate(aval_of(a).shape) if i != axis)
        res = full(shape, fill, aval_of(a).dtype)
    elif ufunc.__name__ in ASSOCIATIVE:
        while n > 1:                                      # pairwise: n -> ceil(n / 2)
            pairs = op(slice_axis(a, axis, 0, n - n % 2, 2), slice_axis(a, axis, 1, n, 2))
            a = pairs if n % 2 == 0 else concatenate([pairs, slice_axis(a, axis, n - 1, n)], axis)
            n = aval_of(a).shape[axis]
        res = squeeze(a, axis)
        if initial is not _NO_VALUE:
            res = op(initial, res)
    else:
        res = squeeze(slice_axis(a, axis, 0, 1), axis)
        if initial is not _NO_VALUE:
            res = op(initial, res)
        for k in range(1, n):
            res = op(res, squeeze(slice_axis(a, axis, k, k + 1), axis))
    return expand_dims(res, axis) if keepdims else res


@export("_ufunc_accumulate")
def ufunc_accumulate(ufunc, a, axis=0, dtype=None, out=None):
    """np.<ufunc>.accumulate(a, axis) on a traced value: running results along one axis."""
    a, axis, n = _prepare(ufunc, a, axis, dtype, "accumulate")
    op = _op(ufunc)
    if ufunc.__name__ in ASSOCIATIVE:
        shift = 1
        while shift < n:                                  # Hillis-Steele doubling
            a = concatenate([slice_axis(a, axis, 0, shift),
                             op(slice_axis(a, axis, 0, n - shift), slice_axis(a, axis, shift, n))],
                            axis)
            shift *= 2
        return a
    parts = [slice_axis(a, axis, 0, 1)]
    for k in range(1, n):
        parts.append(op(parts[-1], slice_axis(a, axis, k, k + 1)))
    return concatenate(parts, axis) if n else a
