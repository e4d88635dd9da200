"""Indexing: `gather` (x[idx]) and its adjoint `scatter` (x.at[idx].add/set/multiply).

An index is parsed once into a static, hashable `spec` (slices, integers, newaxis, 0-d booleans,
and placeholders for index arrays); the index arrays themselves (constants or traced integers)
are operands, so NumPy's full indexing semantics apply, with traced indices too. Boolean masks
must be concrete (they become integer index arrays); constant indices are bounds-checked while
tracing, so an out-of-range index is an IndexError at the user's line.
Gradient convention: x.at[idx].set(v) with repeated indices gives the cotangent to the write
that won (the last, as NumPy's assignment; the others get 0), in every mode;
x.at[idx].multiply(v) assumes each index appears once.

shape.py builds on this module (concatenate's rule slices): a list index holding traced values
is stacked by fnp.array, reached through base.as_array; take and take_along_axis, which flatten
with ravel, are in shape.py.
"""
from __future__ import annotations

import operator

import numpy as np

from .._errors import ConcretizationError, MutationError, user_frame, where
from ..ir import Aval, Traced, aval_of
from ..tree_util import tree_leaves
from .base import (REGISTRY, as_array, batched, broadcast_to, convert, define, export, full,
                   is_traced)
from .elementwise import clip, where as select

_NEW, _ARR = ("new",), ("arr",)


def parse_index(shape, idx):
    """-> (spec, arrays): spec entries are ('slice', start, stop, step) | ('int', i) | _NEW |
    ('bool', b) (a 0-d boolean: a new axis of length 1 or 0) | _ARR (consumes the next array).
    Concrete index arrays and boolean masks are checked against `shape` here, so an
    out-of-bounds index is an IndexError at the user's line while tracing."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    idx = tuple(_as_index_array(i) if isinstance(i, list) else i for i in idx)
    consumed = sum(1 for i in idx if i is not None and i is not Ellipsis and not _is_bool_arr(i))
    consumed += sum(aval_of(i).ndim for i in idx if _is_bool_arr(i))
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {consumed} were indexed")
    spec, arrays, dim = [], [], 0
    dynamic = [_dynamic_slice(i) if isinstance(i, slice) else None for i in idx]
    for item, dyn in zip(idx, dynamic):
        if item is Ellipsis:
            n = len(shape) - consumed
            spec += [("slice", None, None, None)] * n
            dim += n
        elif item is None:
            spec.append(_NEW)
        elif dyn is not None:
            start, k = dyn                  # x[i:i + k], i without a value: k entries
            if k > shape[dim] or sum(d is not None for d in dynamic) > 1 or any(
                    isinstance(i, (np.ndarray, Traced)) for i in idx):
                raise IndexError(
                    f"x[i:i + k] with a traced i{where(user_frame())}: one such slice per index, "
                    f"with no index arrays beside it and k <= the axis length ({shape[dim]}); "
                    "index in two steps for more")
            spec.append(_ARR)               # the positions clip(i, 0, n - k) + 0, 1, ..., k - 1
            arrays.append(clip(convert(start, np.int64), 0, shape[dim] - k) + np.arange(k))
            dim += 1
        elif isinstance(item, slice):
            spec.append(("slice", _int_or_none(item.start), _int_or_none(item.stop),
                         _int_or_none(item.step)))
            dim += 1
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            if not -shape[dim] <= item < shape[dim]:
                raise IndexError(f"index {item} is out of bounds for axis {dim} with size "
                                 f"{shape[dim]}{where(user_frame())}")
            spec.append(("int", int(item)))
            dim += 1
        elif _is_bool_arr(item):
            if isinstance(item, Traced):       # its value in this call (dynamic Python)
                known = item.known_value()
                if known is None:
                    raise ConcretizationError(
                        f"boolean mask indexing x[mask] with a traced mask{where(user_frame())}: "
                        "the result's size depends on the values, and here (fg.vmap, a loop "
                        "body, an fg.cond branch) one traced mask stands for many. Use "
                        "fnp.where(mask, x, 0) (or a masked sum) instead.")
                item = known
            mask = np.asarray(item)
            if mask.ndim == 0:
                spec.append(("bool", bool(mask)))
                continue
            for k, n in enumerate(mask.shape):
                if n != shape[dim + k]:
                    raise IndexError(f"boolean index did not match indexed array along axis "
                                     f"{dim + k}; size of axis is {shape[dim + k]} but size of "
                                     f"corresponding boolean axis is {n}{where(user_frame())}")
            for nz in np.nonzero(mask):
                spec.append(_ARR)
                arrays.append(nz)
            dim += mask.ndim
        else:
            arr = item if isinstance(item, Traced) else np.asarray(item)
            if aval_of(arr).dtype.kind not in "iu":
                raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                                 "(`None`) and integer or boolean arrays are valid indices")
            if not isinstance(arr, Traced) and arr.size:
                bad = arr[(arr < -shape[dim]) | (arr >= shape[dim])]
                if bad.size:
                    raise IndexError(f"index {bad.flat[0]} is out of bounds for axis {dim} with "
                                     f"size {shape[dim]}{where(user_frame())}")
            spec.append(_ARR)
            arrays.append(arr)
            dim += 1
    return tuple(spec), arrays


def _as_index_array(lst):
    """A list used as an index: traced entries are stacked; [] is an empty integer array."""
    if any(isinstance(v, Traced) for v in tree_leaves(lst)):
        return as_array(lst)
    arr = np.asarray(lst)
    return arr.astype(np.intp) if arr.size == 0 else arr


def _is_bool_arr(i):
    if isinstance(i, (bool, np.bool_)):
        return True
    if isinstance(i, (np.ndarray, Traced)):
        return aval_of(i).dtype == np.bool_
    return False


def _dynamic_slice(item):
    """(start, k) for a slice i:i + k whose start has no value in this trace (a loop body,
    fg.vmap) and whose stop was recorded as start + k, k a constant; else None."""
    start, stop = item.start, item.stop
    if not isinstance(start, Traced) or not isinstance(stop, Traced) or item.step not in (None, 1):
        return None
    k = stop.offset_from(start)
    if k is None and start.offset_from(stop) is not None:       # x[i - k:i]
        k = -start.offset_from(stop)
    if k is None or k < 0 or start.known_value() is not None:
        return None
    return start, k


def _int_or_none(v):
    if v is None:
        return None
    if isinstance(v, Traced):
        value = v.known_value()         # its value in the call being traced (dynamic Python)
        if value is None:
            raise ConcretizationError(
                f"a slice bound is a traced value{where(user_frame())}; slice sizes must be "
                "known when tracing (inside fg.vmap, a loop body or an fg.cond branch it "
                "stands for many values). Use a Python int; for a traced start i and a fixed "
                "length k write the stop as the start plus k, x[i:i + k] (a slice of k entries "
                "from clip(i, 0, n - k), as jax.lax.dynamic_slice), or index with an integer "
                "array: x[i + fnp.arange(k)].")
        return operator.index(value[()] if value.ndim == 0 else value)
    return int(v)


def _build(spec, arrays):
    it = iter(arrays)
    out = []
    for s in spec:
        if s[0] == "slice":
            out.append(slice(s[1], s[2], s[3]))
        elif s[0] in ("int", "bool"):
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


def _leading_index_ok(spec):
    """A leading full slice keeps the batch axis first: advanced (array or integer) entries
    must be adjacent, or NumPy moves their result axes to the front."""
    adv = [k for k, s in enumerate(spec) if s[0] in ("arr", "int")]
    return not adv or adv[-1] - adv[0] + 1 == len(adv)


def _gather_batch(ins, fl, size, spec):
    if any(fl[1:]) or not _leading_index_ok(spec):
        return NotImplemented                  # batched indices: the fallback handles them
    return gather_p.bind(ins[0], *ins[1:], spec=(("slice", None, None, None),) + spec)


gather_p = define("gather", exact=True, moves=True,
                  impl=lambda x, *idx, spec: np.asarray(x)[_build(spec, idx)],
                  abstract=_gather_abstract, vjp=_gather_vjp, batch=_gather_batch)


def _scatter_impl(x, u, *idx, spec, mode):
    out = np.array(x, copy=True)
    index = _build(spec, idx)
    if mode == "set":
        out[index] = u
    elif not idx:                    # slices and integers only: no repeated positions
        if mode == "add":
            out[index] += u
        else:
            out[index] *= u
    elif mode == "add":
        np.add.at(out, index, u)
    else:
        np.multiply.at(out, index, u)
    return out


def _scatter_abstract(x, u, *idx, spec, mode):
    want = _gather_abstract(x, *idx, spec=spec)
    if u.shape != want.shape or u.dtype != x.dtype:
        raise ValueError(f"scatter: updates {u} do not match the indexed region {want}")
    return x


def _winning_writes(x, u, idx, spec):
    """Where u's writes survive in x.at[idx].set(u) (a boolean array of u's shape), or None
    when every one does. With repeated positions the last write wins (NumPy's assignment, and
    the compiled loops in the same order); which one that is comes from scattering the writes'
    numbers with this same primitive, so it follows the forward pass in every mode: with
    constant indices in NumPy while tracing (no repeats: nothing added to the program), with
    traced indices as two more equations."""
    if not idx:                        # slices and integers address each element once
        return None
    ua, xa = aval_of(u), aval_of(x)
    ids = np.arange(ua.size, dtype=np.intp).reshape(ua.shape)
    if not any(isinstance(i, Traced) for i in idx):
        last = _scatter_impl(np.full(xa.shape, -1, np.intp), ids, *idx, spec=spec, mode="set")
        won = np.asarray(last[_build(spec, idx)] == ids)
        return None if won.all() else won
    last = scatter_p.bind(full(xa.shape, -1, np.intp), ids, *idx, spec=spec, mode="set")
    return gather_p.bind(last, *idx, spec=spec) == ids


def _scatter_vjp(ct, x, u, *idx, out, spec, mode):
    nones = (None,) * len(idx)
    if mode == "add":
        return (ct, gather_p.bind(ct, *idx, spec=spec)) + nones
    if mode == "set":
        cleared = scatter_p.bind(ct, full(aval_of(u).shape, 0, aval_of(ct).dtype), *idx,
                                 spec=spec, mode="set")
        won = _winning_writes(x, u, idx, spec)
        ct_u = gather_p.bind(ct, *idx, spec=spec)
        return (cleared, ct_u if won is None else select(won, ct_u, 0.0)) + nones
    factor = scatter_p.bind(full(aval_of(x).shape, 1, aval_of(ct).dtype), u, *idx, spec=spec,
                            mode="mul")
    return (ct * factor, gather_p.bind(ct * x, *idx, spec=spec)) + nones


def _scatter_batch(ins, fl, size, spec, mode):
    if any(fl[2:]) or not _leading_index_ok(spec):
        return NotImplemented
    x, u = batched(ins[0], fl[0], size), batched(ins[1], fl[1], size)
    return scatter_p.bind(x, u, *ins[2:], spec=(("slice", None, None, None),) + spec, mode=mode)


scatter_p = define("scatter", impl=_scatter_impl, abstract=_scatter_abstract, vjp=_scatter_vjp,
                   batch=_scatter_batch,   # (set: moving data; add and mul round per write)
                   exact=lambda eqn: eqn.params["mode"] == "set",
                   accumulates=lambda params: REGISTRY["add"] if params["mode"] == "add" else None)


@export("_getitem")
def getitem(x, idx):
    """x[idx] with NumPy semantics (basic and advanced indexing; traced integer indices too)."""
    spec, arrays = parse_index(aval_of(x).shape, idx)
    if not is_traced(x, *arrays):       # (by hand: after parse_index, its errors and arrays)
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
        """A copy of x with values subtracted at idx (repeated indices accumulate)."""
        return self.add(-(values if isinstance(values, Traced) else np.asarray(values)))

    def divide(self, values):
        """A copy of x with x[idx] divided by values."""
        return self.multiply(1.0 / (values if isinstance(values, Traced) else np.asarray(values)))


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
    """x.at: functional updates of x (what the Tracer's `.at` property returns).

        >>> y = x.at[0, ::2].set(1.0)     # x is unchanged
    """
    return _IndexUpdateHelper(x)


def slice_axis(x, axis, start, stop, step=None):
    """x[..., start:stop:step, ...] along one axis (used by rules)."""
    nd = aval_of(x).ndim
    idx = tuple(slice(start, stop, step) if i == axis else slice(None) for i in range(nd))
    return getitem(x, idx)
