"""Indexing: `gather` (x[idx]) and its adjoint `scatter` (x.at[idx].add/set/multiply).

An index is parsed once into a static, hashable `spec` (slices, integers, newaxis, and
placeholders for index arrays); the index arrays themselves (constants or traced integers)
are operands, so NumPy's full indexing semantics apply, with traced indices too.
Gradient convention: x.at[idx].set(v) with repeated indices gives every repeat the cotangent;
x.at[idx].multiply(v) assumes each index appears once.
"""
from __future__ import annotations

import numpy as np

from .._errors import ConcretizationError, MutationError, user_frame, where
from ..ir import Aval, Traced, aval_of
from .base import broadcast_to, convert, define, export, full, normalize_axes, shape_error

_NEW, _ARR = ("new",), ("arr",)


def parse_index(shape, idx):
    """-> (spec, arrays): spec entries are ('slice', start, stop, step) | ('int', i) | _NEW |
    _ARR (consumes the next array)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    consumed = sum(1 for i in idx if i is not None and i is not Ellipsis and not _is_bool_arr(i))
    consumed += sum(aval_of(i).ndim - 1 for i in idx if _is_bool_arr(i))
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    spec, arrays, dim = [], [], 0
    for item in idx:
        if item is Ellipsis:
            n = len(shape) - consumed
            spec += [("slice", None, None, None)] * n
            dim += n
        elif item is None:
            spec.append(_NEW)
        elif isinstance(item, slice):
            spec.append(("slice", _int_or_none(item.start), _int_or_none(item.stop),
                         _int_or_none(item.step)))
            dim += 1
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            if dim >= len(shape) or not -shape[dim] <= item < shape[dim]:
                raise IndexError(f"index {item} is out of bounds for axis {dim} with size "
                                 f"{shape[dim] if dim < len(shape) else 0}")
            spec.append(("int", int(item)))
            dim += 1
        elif _is_bool_arr(item):
            if isinstance(item, Traced):
                raise ConcretizationError(
                    f"boolean mask indexing x[mask] with a traced mask{where(user_frame())}: the "
                    "result's size would depend on the values. Use fnp.where(mask, x, 0) (or a "
                    "masked sum) instead.")
            for nz in np.nonzero(np.asarray(item)):
                spec.append(_ARR)
                arrays.append(nz)
            dim += np.ndim(item)
        else:
            arr = item if isinstance(item, Traced) else np.asarray(item)
            if aval_of(arr).dtype.kind not in "iu":
                raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                                 "(`None`) and integer or boolean arrays are valid indices")
            spec.append(_ARR)
            arrays.append(arr)
            dim += 1
    if dim > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {dim} were indexed")
    return tuple(spec), arrays


def _is_bool_arr(i):
    if isinstance(i, (bool, np.bool_)):
        return True
    if isinstance(i, (list, np.ndarray, Traced)):
        return aval_of(i if not isinstance(i, list) else np.asarray(i)).dtype == np.bool_
    return False


def _int_or_none(v):
    if v is None:
        return None
    if isinstance(v, Traced):
        raise ConcretizationError(f"a slice bound is a traced value{where(user_frame())}; slice "
                                  "sizes must be known when tracing. Use a Python int.")
    return int(v)


def _build(spec, arrays):
    it = iter(arrays)
    out = []
    for s in spec:
        if s[0] == "slice":
            out.append(slice(s[1], s[2], s[3]))
        elif s[0] == "int":
            out.append(s[1])
        elif s is _NEW or s == _NEW:
            out.append(None)
        else:
            out.append(np.asarray(next(it)))
    return tuple(out)


def _gather_abstract(x, *idx, spec):
    dummy = np.lib.stride_tricks.as_strided(np.zeros((), x.dtype), x.shape, (0,) * x.ndim)
    probe = _build(spec, [np.zeros(i.shape, np.intp) for i in idx])
    return Aval(dummy[probe].shape, x.dtype)


def _gather_vjp(ct, x, *idx, out, spec):
    zeros = full(aval_of(x).shape, 0, aval_of(ct).dtype)
    return (scatter_p.bind(zeros, ct, *idx, spec=spec, mode="add"),) + (None,) * len(idx)


gather_p = define("gather", impl=lambda x, *idx, spec: np.asarray(x)[_build(spec, idx)],
                  abstract=_gather_abstract, vjp=_gather_vjp)


def _scatter_impl(x, u, *idx, spec, mode):
    out = np.array(x, copy=True)
    index = _build(spec, idx)
    if mode == "add":
        np.add.at(out, index, u)
    elif mode == "mul":
        np.multiply.at(out, index, u)
    else:
        out[index] = u
    return out


def _scatter_abstract(x, u, *idx, spec, mode):
    want = _gather_abstract(x, *idx, spec=spec)
    if u.shape != want.shape or u.dtype != x.dtype:
        raise ValueError(f"scatter: updates {u} do not match the indexed region {want}")
    return x


def _scatter_vjp(ct, x, u, *idx, out, spec, mode):
    nones = (None,) * len(idx)
    if mode == "add":
        return (ct, gather_p.bind(ct, *idx, spec=spec)) + nones
    if mode == "set":
        cleared = scatter_p.bind(ct, full(aval_of(u).shape, 0, aval_of(ct).dtype), *idx,
                                 spec=spec, mode="set")
        return (cleared, gather_p.bind(ct, *idx, spec=spec)) + nones
    factor = scatter_p.bind(full(aval_of(x).shape, 1, aval_of(ct).dtype), u, *idx, spec=spec,
                            mode="mul")
    return (ct * factor, gather_p.bind(ct * x, *idx, spec=spec)) + nones


scatter_p = define("scatter", impl=_scatter_impl, abstract=_scatter_abstract, vjp=_scatter_vjp)


@export("_getitem")
def getitem(x, idx):
    """x[idx] with NumPy semantics (basic and advanced indexing; traced integer indices too)."""
    spec, arrays = parse_index(aval_of(x).shape, idx)
    if not isinstance(x, Traced) and not any(isinstance(a, Traced) for a in arrays):
        return np.asarray(x)[_build(spec, arrays)]
    if all(s == ("slice", None, None, None) for s in spec) and not arrays:
        return x
    return gather_p.bind(x, *arrays, spec=spec)


def _scatter(x, idx, values, mode):
    spec, arrays = parse_index(aval_of(x).shape, idx)
    region = _gather_abstract(aval_of(x), *[aval_of(a) for a in arrays], spec=spec)
    values = broadcast_to(convert(values, aval_of(x).dtype), region.shape, force=True)
    if not isinstance(x, Traced):
        x = full(aval_of(x).shape, 0, aval_of(x).dtype) + x   # stage the constant operand
    return scatter_p.bind(x, values, *arrays, spec=spec, mode=mode)


class _IndexUpdateRef:
    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def get(self):
        """x.at[idx].get() is x[idx]."""
        return getitem(self.x, self.idx)

    def set(self, values):
        """A copy of x with x[idx] replaced by values (PyTorch: x[idx] = values)."""
        return _scatter(self.x, self.idx, values, "set")

    def add(self, values):
        """A copy of x with values added at idx; repeated indices accumulate (np.add.at)."""
        return _scatter(self.x, self.idx, values, "add")

    def multiply(self, values):
        """A copy of x with x[idx] multiplied by values (np.multiply.at)."""
        return _scatter(self.x, self.idx, values, "mul")

    def subtract(self, values):
        return self.add(-values)

    def divide(self, values):
        return self.multiply(1.0 / values)


class _IndexUpdateHelper:
    """`x.at[idx].set(v)`: functional in-place updates (x itself never changes)."""

    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _IndexUpdateRef(self.x, idx)

    def __setitem__(self, idx, v):
        raise MutationError("x.at[idx] = v is not an update; write x = x.at[idx].set(v)")


@export("_at")
def at(x):
    return _IndexUpdateHelper(x)


def slice_axis(x, axis, start, stop, step=None):
    """x[..., start:stop:step, ...] along one axis (used by rules)."""
    nd = aval_of(x).ndim
    idx = tuple(slice(start, stop, step) if i == axis else slice(None) for i in range(nd))
    return getitem(x, idx)


@export()
def take(a, indices, axis=None, mode=None):
    """np.take (mode 'raise' semantics: out-of-range indices are an error).

        >>> fnp.take(x, [0, 2], axis=1)
    """
    if axis is None:
        from .shape import ravel
        a, axis = ravel(a), 0
    nd = aval_of(a).ndim
    axis = normalize_axes(axis, nd)[0]
    idx = indices if isinstance(indices, Traced) else np.asarray(indices)
    return getitem(a, (slice(None),) * axis + (idx,))


@export()
def take_along_axis(arr, indices, axis):
    """np.take_along_axis (sorting indices, argmax with keepdims, ...).

        >>> fnp.take_along_axis(x, fnp.argsort(x, axis=1), axis=1)
    """
    shape = aval_of(arr).shape
    if axis is None:
        from .shape import ravel
        arr, axis, shape = ravel(arr), 0, (aval_of(arr).size,)
    nd = len(shape)
    axis = normalize_axes(axis, nd)[0]
    ishape = aval_of(indices).shape
    if len(ishape) != nd:
        raise shape_error("take_along_axis: `indices` and `arr` must have the same number of "
                          "dimensions")
    idx = []
    for d in range(nd):
        if d == axis:
            idx.append(indices)
        else:
            r = np.arange(shape[d]).reshape([-1 if k == d else 1 for k in range(nd)])
            idx.append(r)
    return getitem(arr, tuple(idx))
