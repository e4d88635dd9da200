"""np.pad in every mode, as slices, concatenations and gathers (no primitive of its own).
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import Traced, aval_of
from ..primitives.base import broadcast_to as _broadcast_to, convert, export, full, has_traced
from ..primitives.contract import LETTERS, contract
from ..primitives.elementwise import floor, rint
from ..primitives.indexing import getitem, slice_axis
from ..primitives.reductions import max as max_, min as min_
from ..primitives.shape import _asarray, concatenate, flip
from ._arrange import _take
from ._reductions import mean, sort
from ._shape import _static


# ---- pad -------------------------------------------------------------------------------------

def _as_pairs(x, ndim, as_index=False):
    """NumPy's broadcasting of pad_width-like arguments to ((before, after),) * ndim."""
    if x is None:
        return ((None, None),) * ndim
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x[0] < 0:
                raise ValueError("index can't contain negative values")
            return ((x[0], x[0]),) * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return ((x[0], x[1]),) * ndim
    if as_index and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return tuple(tuple(p) for p in np.broadcast_to(x, (ndim, 2)).tolist())


def _pad_widths(pad_width, ndim):
    pad_width = _static(pad_width, "pad: `pad_width`")
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * ndim
        for ax, w in pad_width.items():
            w = (w, w) if np.ndim(w) == 0 else tuple(w)
            seq[ax] = (operator.index(w[0]), operator.index(w[1]))
        pad_width = seq
    pw = np.asarray(pad_width)
    if pw.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    return [(int(b), int(a)) for b, a in _as_pairs(pw, ndim, as_index=True)]


def _value_pairs(values, ndim):
    """constant_values / end_values -> function (axis, side) -> scalar (maybe traced)."""
    if has_traced(values):
        v = _asarray(values)
        v = _broadcast_to(v, (ndim, 2), force=True)
        return lambda ax, side: getitem(v, (ax, side))
    pairs = _as_pairs(values, ndim)
    return lambda ax, side: pairs[ax][side]


def _shape_with(shape, axis, n):
    return tuple(shape[:axis]) + (n,) + tuple(shape[axis + 1:])


def _fill(value, shape, dtype):
    """An array of `value` (a concrete or traced scalar) in `dtype`."""
    if isinstance(value, Traced):
        return _broadcast_to(convert(value, dtype), shape, force=True)
    return full(shape, np.asarray(value).astype(dtype), dtype)


def _median(x, axis):
    n = aval_of(x).shape[axis]
    s = sort(x, axis=axis)
    if n % 2:
        return slice_axis(s, axis, n // 2, n // 2 + 1)
    lo, hi = slice_axis(s, axis, n // 2 - 1, n // 2), slice_axis(s, axis, n // 2, n // 2 + 1)
    return (lo + hi) / 2


def _stat(mode, chunk, axis, dtype):
    if mode == "mean":
        out = mean(chunk, axis=axis, keepdims=True)
    elif mode == "median":
        out = _median(chunk, axis)
    else:
        fn = max_ if mode == "maximum" else min_
        out = fn(chunk, axis=axis, keepdims=True)
    if np.dtype(dtype).kind in "iu" and aval_of(out).dtype.kind == "f":
        out = rint(out)
    return convert(out, dtype)


_PAD_KWARGS = {"constant": {"constant_values"}, "edge": set(), "wrap": set(), "empty": set(),
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "linear_ramp": {"end_values"}, "maximum": {"stat_length"},
               "mean": {"stat_length"}, "median": {"stat_length"}, "minimum": {"stat_length"}}


@export(numpy=np.pad, traced=("array", "kwargs"))
def pad(array, pad_width, mode="constant", **kwargs):
    """np.pad. Modes: constant (constant_values, which may be traced), empty (zeros), edge, wrap,
    reflect and symmetric (reflect_type 'even' or 'odd'), linear_ramp (end_values), maximum,
    minimum, mean and median (stat_length). pad_width takes every NumPy form, dicts included.

        >>> fnp.pad(x, ((1, 1), (0, 2)), mode="reflect")
    """
    if callable(mode):
        raise NotImplementedError("pad: a callable mode runs Python code that writes in place; "
                                  "it cannot be traced. Build the padding with fnp.concatenate.")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - _PAD_KWARGS[mode]
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    x = _asarray(array)
    av = aval_of(x)
    shape, nd, dt = av.shape, av.ndim, av.dtype
    widths = _pad_widths(pad_width, nd)
    if mode not in ("constant", "empty"):
        for ax, (b, a) in enumerate(widths):
            if shape[ax] == 0 and (b or a):
                raise ValueError(f"can't extend empty axis {ax} using modes other than "
                                 "'constant' or 'empty'")

    if mode in ("constant", "empty"):
        value = _value_pairs(kwargs.get("constant_values", 0) if mode == "constant" else 0, nd)
        for ax, (b, a) in enumerate(widths):
            if b or a:
                cur = aval_of(x).shape
                parts = ([_fill(value(ax, 0), _shape_with(cur, ax, b), dt)] if b else []) + [x] + \
                        ([_fill(value(ax, 1), _shape_with(cur, ax, a), dt)] if a else [])
                x = concatenate(parts, axis=ax)
        return x

    if mode in ("edge", "wrap") or (mode in ("reflect", "symmetric")
                                     and kwargs.get("reflect_type", "even") == "even"):
        # a pure re-indexing along each axis: NumPy's own pad of the positions 0..n-1 tells
        # which source element lands where (one gather per padded axis)
        for ax, (b, a) in enumerate(widths):
            if b or a:
                x = _take(x, np.pad(np.arange(shape[ax]), (b, a), mode=mode), ax)
        return x

    if mode in ("reflect", "symmetric"):
        if kwargs["reflect_type"] != "odd":
            raise ValueError("reflect_type must be 'even' or 'odd', got "
                             f"{kwargs['reflect_type']!r}")
        # linear in x: NumPy's pad of the identity gives the matrix W with padded = W @ x
        for ax, (b, a) in enumerate(widths):
            if b or a:
                n = aval_of(x).shape[ax]
                w = np.pad(np.eye(n, dtype=dt), ((b, a), (0, 0)), mode=mode, reflect_type="odd")
                letters = LETTERS[:nd]
                sx = letters.replace(letters[ax], "Z")
                x = contract(w, x, letters[ax] + "Z", sx, letters)
        return x

    if mode == "linear_ramp":
        ends = _value_pairs(kwargs.get("end_values", 0), nd)
        for ax, (b, a) in enumerate(widths):
            if not (b or a):
                continue
            n = aval_of(x).shape[ax]
            parts = []
            for side, w in ((0, b), (1, a)):
                if not w:
                    parts.append(None)
                    continue
                edge = slice_axis(x, ax, 0, 1) if side == 0 else slice_axis(x, ax, n - 1, n)
                if np.dtype(dt).kind not in "fc":
                    edge = convert(edge, np.float64)
                end = ends(ax, side)
                t = np.arange(w, dtype=np.float64).reshape(_shape_with((1,) * nd, ax, w))
                ramp = t * ((edge - end) / w) + end     # np.linspace(end, edge, w, endpoint=False)
                if side == 1:
                    ramp = flip(ramp, ax)
                if np.dtype(dt).kind in "iu":
                    ramp = floor(ramp)
                parts.append(convert(ramp, dt))
            x = concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis=ax)
        return x

    # statistic modes: maximum, minimum, mean, median
    lengths = _as_pairs(_static(kwargs.get("stat_length"), "pad: `stat_length`"), nd,
                        as_index=True)
    for ax, (b, a) in enumerate(widths):
        if not (b or a):
            continue
        n = aval_of(x).shape[ax]
        lb, la = (n if ln is None or ln > n else int(ln) for ln in lengths[ax])
        if lb == 0 or la == 0:
            raise ValueError("stat_length of 0 yields no value for padding")
        left = _stat(mode, slice_axis(x, ax, 0, lb), ax, dt)
        right = left if lb == la == n else _stat(mode, slice_axis(x, ax, n - la, n), ax, dt)
        cur = aval_of(x).shape
        parts = ([_broadcast_to(left, _shape_with(cur, ax, b), force=True)] if b else []) + [x] + \
                ([_broadcast_to(right, _shape_with(cur, ax, a), force=True)] if a else [])
        x = concatenate(parts, axis=ax)
    return x


__all__ = ["pad"]
