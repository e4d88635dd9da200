"""Evenly spaced values and coordinate grids whose endpoints or coordinates may be traced.

linspace, logspace and geomspace take traced start/stop (the number of points stays static: it
is the shape); meshgrid takes traced coordinate vectors. On plain arrays each is NumPy's own
function. They are compositions of other primitives, so their derivatives come for free:
d linspace(a, b)[i] / d b = i / (num - 1).
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import Traced, aval_of
from ..primitives.base import broadcast_to, convert, export, is_traced, reshape
from ..primitives.elementwise import absolute, log10, sign, where
from ..primitives.shape import _asarray, moveaxis
from ._shape import _static


def _float_of(*xs):
    """The float dtype NumPy computes the points in (float32 endpoints stay float32)."""
    return np.result_type(*[aval_of(x).dtype if isinstance(x, Traced) else np.asarray(x).dtype
                            for x in xs], 1.0)


def _shape(x):
    return aval_of(x).shape if isinstance(x, Traced) else np.shape(x)


def _count(num, what="num"):
    num = _static(num, what)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    return num


@export(numpy=np.linspace, traced=("start", "stop"), check=is_traced)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """np.linspace; start and stop may be traced (num may not: it is the shape).

        >>> fnp.linspace(0.0, t_end, 101)       # d/d t_end of each point is i / 100
    """
    num = _count(num)
    start, stop = _asarray(start), _asarray(stop)
    ft = _float_of(start, stop)
    start, stop = convert(start, ft), convert(stop, ft)
    div = (num - 1) if endpoint else num
    batch = np.broadcast_shapes(_shape(start), _shape(stop))
    shape = (num,) + batch
    idx = np.arange(num, dtype=ft).reshape((num,) + (1,) * len(batch))
    delta = stop - start
    # as NumPy computes it: start + i * (delta / div), the last point exactly stop
    step = delta / div if div > 0 else delta * np.nan
    y = broadcast_to(start, shape) + idx * step if div > 0 else broadcast_to(start, shape)
    if endpoint and num > 1:
        last = (np.arange(num) == num - 1).reshape(idx.shape)
        y = where(last, broadcast_to(stop, shape), y)
    if dtype is not None:
        dt = np.dtype(dtype)
        y = convert(np.floor(y) if dt.kind in "iu" else y, dt)
    y = moveaxis(y, 0, axis) if axis != 0 else y
    return (y, step) if retstep else y


@export(numpy=np.logspace, traced=("start", "stop", "base"), check=is_traced)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """np.logspace; start, stop and base may be traced.

        >>> fnp.logspace(0.0, k, 5)            # 10**0 ... 10**k
    """
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=0)
    if is_traced(base) or np.ndim(base):
        base = _asarray(base)
        b_shape = _shape(base)
        if b_shape:
            base = reshape(base, (1,) + b_shape) if isinstance(base, Traced) else base[None]
    y = base ** y
    if dtype is not None:
        y = convert(y, np.dtype(dtype))
    return moveaxis(y, 0, axis) if axis != 0 else y


@export(numpy=np.geomspace, traced=("start", "stop"), check=is_traced)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """np.geomspace; start and stop may be traced (they must be nonzero, as in NumPy). The
    first point is exactly start, the last exactly stop.

        >>> fnp.geomspace(r0, r1, 8)
    """
    num = _count(num)
    start, stop = _asarray(start), _asarray(stop)
    ft = _float_of(start, stop)
    start, stop = convert(start, ft), convert(stop, ft)
    # the sign of start; a change of sign between start and stop has no real geometric mean
    y = sign(start) * logspace(log10(absolute(start)), log10(absolute(stop)), num=num,
                               endpoint=endpoint)
    shape = aval_of(y).shape
    pos = np.arange(num).reshape((num,) + (1,) * (len(shape) - 1))
    if num > 0:
        y = where(pos == 0, broadcast_to(start, shape), y)
    if endpoint and num > 1:
        y = where(pos == num - 1, broadcast_to(stop, shape), y)
    if dtype is not None:
        y = convert(y, np.dtype(dtype))
    return moveaxis(y, 0, axis) if axis != 0 else y


@export(numpy=np.meshgrid, traced=("xi",), check=is_traced)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """np.meshgrid; the coordinate vectors may be traced (each is flattened, as in NumPy).

        >>> X, Y = fnp.meshgrid(x, y)              # X[i, j] = x[j], Y[i, j] = y[i]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    xs = [reshape(_asarray(x), (-1,)) if isinstance(x, Traced) else np.ravel(x) for x in xi]
    ndim = len(xs)
    sizes = [_shape(x)[0] for x in xs]
    out = []
    for i, x in enumerate(xs):
        shape = [1] * ndim
        shape[i] = sizes[i]
        if indexing == "xy" and ndim > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        out.append(reshape(x, tuple(shape)) if isinstance(x, Traced) else x.reshape(shape))
    if not sparse:
        full_shape = tuple(max(s) for s in zip(*map(_shape, out)))
        out = [broadcast_to(o, full_shape) for o in out]
    return tuple(out)
