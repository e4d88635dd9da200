"""NumPy's tensor products built on the `contract` primitive (and on matmul, which rules use, in
funcgrad/primitives/contract.py): dot, vdot, inner, outer, tensordot, einsum, kron, trace,
diagonal, cross. Their derivatives come from contract's rule (a contraction again) and from
those of reshape, transpose, reduce_sum and gather.
"""
from __future__ import annotations

import operator
from functools import lru_cache

import numpy as np

from ..ir import Traced, aval_of
from ..primitives.base import (broadcast_shapes, broadcast_to, export, normalize_axes,
                               reduce_sum, reshape, shape_error, transpose)
from ..primitives.contract import LETTERS, contract
from ..primitives.reductions import sum as _sum
from ..primitives.indexing import getitem
from ..primitives.shape import moveaxis, stack
from ._complex import conj


@export(numpy=np.dot)
def dot(a, b, out=None):
    """np.dot.

        >>> fnp.dot(W, x)
    """
    na, nb = aval_of(a).ndim, aval_of(b).ndim
    if na == 0 or nb == 0:
        return a * b
    la, lb = LETTERS[:na], LETTERS[na:na + nb]
    lb = lb[:-2] + la[-1] + lb[-1] if nb >= 2 else la[-1]
    out = "".join(ch for ch in la + lb if (la + lb).count(ch) == 1)
    return contract(a, b, la, lb, out)


@export()
def vdot(a, b):
    """np.vdot: dot of the flattened arrays, the first conjugated (complex a).

        >>> fnp.vdot(a, b)
    """
    if aval_of(a).dtype.kind == "c":
        a = conj(a)
    return contract(reshape(a, (-1,)), reshape(b, (-1,)), "i", "i", "")


@export()
def inner(a, b):
    """np.inner: sum over the last axes."""
    na, nb = aval_of(a).ndim, aval_of(b).ndim
    if na == 0 or nb == 0:
        return a * b
    la, lb = LETTERS[:na - 1] + "z", LETTERS[na:na + nb - 1] + "z"
    return contract(a, b, la, lb, la[:-1] + lb[:-1])


@export(numpy=np.outer)
def outer(a, b, out=None):
    """np.outer of the flattened inputs."""
    return contract(reshape(a, (-1,)), reshape(b, (-1,)), "i", "j", "ij")


@export()
def tensordot(a, b, axes=2):
    """np.tensordot.

        >>> fnp.tensordot(A, B, axes=([1], [0]))
    """
    na, nb = aval_of(a).ndim, aval_of(b).ndim
    if np.ndim(axes) == 0:
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = [list(np.atleast_1d(x)) for x in axes]
    ax_a = [int(x) % na for x in ax_a]
    ax_b = [int(x) % nb for x in ax_b]
    la = list(LETTERS[:na])
    lb = list(LETTERS[na:na + nb])
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    out = [c for c in la if c not in [la[i] for i in ax_a]]
    out += [c for k, c in enumerate(lb) if k not in ax_b]
    return contract(a, b, "".join(la), "".join(lb), "".join(out))


@export()
def diagonal(a, offset=0, axis1=0, axis2=1):
    """np.diagonal (the diagonal becomes the last axis).

        >>> fnp.diagonal(A)
    """
    shape = aval_of(a).shape
    nd = len(shape)
    axis1, axis2 = normalize_axes(axis1, nd)[0], normalize_axes(axis2, nd)[0]
    n = max(0, min(shape[axis1] - max(0, -offset), shape[axis2] - max(0, offset)))
    rows = np.arange(n) + max(0, -offset)
    cols = np.arange(n) + max(0, offset)
    rest = [d for d in range(nd) if d not in (axis1, axis2)]
    a = transpose(a, rest + [axis1, axis2])
    return getitem(a, (Ellipsis, rows, cols))


@export(numpy=np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """np.trace: sum of a diagonal (ints sum in the platform integer, as NumPy's)."""
    d = diagonal(a, offset, axis1, axis2)
    return _sum(d, axis=-1, dtype=dtype)


@lru_cache(maxsize=512)
def _parse_einsum(subscripts, ndims):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins, out = subscripts, None
    ins = ins.split(",")
    if len(ins) != len(ndims):
        raise ValueError(f"einsum: {len(ins)} operand subscripts for {len(ndims)} operands")
    used = set("".join(ins) + (out or "")) - {".", ","}
    free = [c for c in LETTERS if c not in used]
    ell_nd = 0
    for s, nd in zip(ins, ndims):
        if "..." in s:
            ell_nd = max(ell_nd, nd - (len(s) - 3))
    ell = "".join(free[:ell_nd])
    res = []
    for s, nd in zip(ins, ndims):
        if "..." in s:
            k = nd - (len(s) - 3)
            s = s.replace("...", ell[ell_nd - k:])
        if len(s) != nd:
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand with {nd} dims")
        res.append(s)
    if out is None:
        counts = "".join(res)
        out = ell + "".join(sorted(c for c in set(counts) if counts.count(c) == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return tuple(res), out


def _prepare_operand(x, s, keep):
    """Take diagonals of repeated letters and sum letters not in `keep`; returns (x, subs)."""
    while True:
        rep = next((c for c in s if s.count(c) > 1), None)
        if rep is None:
            break
        i = s.index(rep)
        j = s.index(rep, i + 1)
        x = diagonal(x, 0, i, j)
        s = s[:i] + s[i + 1:j] + s[j + 1:] + rep
    drop = tuple(k for k, c in enumerate(s) if c not in keep)
    if drop:
        x = reduce_sum(x, drop)
        s = "".join(c for c in s if c in keep)
    return x, s


def _squeeze_broadcast(ops, subs):
    """NumPy's broadcasting of size-1 dimensions: an operand's axis of size 1 whose letter has
    size n > 1 in another operand is dropped from that operand (reshape), so the letter's
    values come from the others (summed over with them if it is contracted, repeated along it
    in the output); its gradient then sums over the letter, as a broadcast's does. A letter
    repeated within one operand keeps its axes (their sizes must agree, as in NumPy)."""
    sizes = {}
    for x, sub in zip(ops, subs):
        for c, d in zip(sub, aval_of(x).shape):
            first = aval_of(x).shape[sub.index(c)]
            if d != first:
                raise ValueError(f"dimensions in single operand for collapsing index {c!r} "
                                 f"don't match ({first} != {d})")
            if d != 1:
                sizes.setdefault(c, set()).add(d)
    for c, ds in sizes.items():
        if len(ds) > 1:
            shapes = ", ".join(str(tuple(aval_of(x).shape)) for x in ops)
            raise shape_error(f"einsum: size mismatch for dimension {c!r}: {sorted(ds)} in the "
                              f"operands of shapes {shapes} (only sizes of 1 broadcast)")
    for k, (x, sub) in enumerate(zip(ops, subs)):
        shape = aval_of(x).shape
        drop = [i for i, (c, d) in enumerate(zip(sub, shape))
                if d == 1 and c in sizes and sub.count(c) == 1]
        if drop:
            ops[k] = reshape(x, tuple(d for i, d in enumerate(shape) if i not in drop))
            subs[k] = "".join(c for i, c in enumerate(sub) if i not in drop)
    return ops, subs


def _interleaved(*args):
    """np.einsum's other form, einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) with
    sublists of integers (Ellipsis allowed), as (subscripts string, operands)."""
    args = list(args)
    out = args.pop() if len(args) % 2 else None

    def word(sub):
        return "".join("..." if k is Ellipsis else LETTERS[operator.index(k)] for k in sub)
    subs = ",".join(word(sub) for sub in args[1::2])
    return (subs if out is None else f"{subs}->{word(out)}"), args[0::2]


@export(numpy=np.einsum)
def einsum(subscripts, *operands, out=None, optimize=None):
    """np.einsum (explicit or implicit output, ellipsis, repeated letters, size-1 dimensions
    broadcast as in NumPy; the subscripts string or the interleaved form
    `einsum(A, [0, 1], B, [1, 2], [0, 2])`), contracted pairwise.

        >>> fnp.einsum("bij,bjk->bik", A, B)
    """
    if not isinstance(subscripts, str):          # interleaved: (op, [0, 1], op, [1], [0])
        subscripts, operands = _interleaved(subscripts, *operands)
    ops = [x if isinstance(x, Traced) else np.asarray(x) for x in operands]
    subs, out_subs = _parse_einsum(subscripts, tuple(aval_of(x).ndim for x in ops))
    ops, subs = _squeeze_broadcast(ops, list(subs))
    for k in range(len(ops)):
        others = out_subs + "".join(s for m, s in enumerate(subs) if m != k)
        ops[k], subs[k] = _prepare_operand(ops[k], subs[k], others)
    x, s = ops[0], subs[0]
    for k in range(1, len(ops)):
        later = out_subs + "".join(subs[k + 1:])
        keep = "".join(dict.fromkeys(c for c in s + subs[k] if c in later))
        x, s = contract(x, ops[k], s, subs[k], keep), keep
    x, s = _prepare_operand(x, s, out_subs)
    if sorted(s) != sorted(out_subs):
        # letters of the output that no operand has cannot occur; anything else is a bug
        raise ValueError(f"einsum: cannot produce output {out_subs!r} from {s!r}")
    return transpose(x, tuple(s.index(c) for c in out_subs))


@export()
def kron(a, b):
    """np.kron."""
    na, nb = aval_of(a).ndim, aval_of(b).ndim
    nd = max(na, nb)
    a = reshape(a, (1,) * (nd - na) + tuple(aval_of(a).shape))
    b = reshape(b, (1,) * (nd - nb) + tuple(aval_of(b).shape))
    la, lb = LETTERS[:nd], LETTERS[nd:2 * nd]
    out = contract(a, b, la, lb, "".join(x + y for x, y in zip(la, lb)))
    return reshape(out, tuple(p * q for p, q in zip(aval_of(a).shape, aval_of(b).shape)))


@export()
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """np.cross for 3-vectors (and 2-vectors, giving the z component)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    na, nb = aval_of(a).shape[-1], aval_of(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product (dimension must be 2 or 3)")
    c = lambda x, i: getitem(x, (Ellipsis, i)) if i < aval_of(x).shape[-1] else 0.0
    if na == 2 and nb == 2:
        return c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)
    x = c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1)
    y = c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2)
    z = c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)
    comps = [x, y, z]
    shape = broadcast_shapes(*[aval_of(t).shape for t in comps])
    res = stack([broadcast_to(t, shape, force=True) for t in comps], axis=-1)
    return moveaxis(res, -1, axisc)


# ---- NumPy 2's vector functions (their NumPy versions answer plain arrays where NumPy has them)

@export(numpy=getattr(np, "vecdot", None))
def vecdot(x1, x2, /, *, axis=-1):
    """np.vecdot: sum(conj(x1) * x2) along axis, broadcasting the others.

        >>> fnp.vecdot(x, y)
    """
    a, b = moveaxis(_arr(x1), axis, -1), moveaxis(_arr(x2), axis, -1)
    return einsum("...i,...i->...", conj(a), b)


@export(numpy=getattr(np, "matvec", None))
def matvec(x1, x2, /):
    """np.matvec: the matrix-vector product over the last axes, (..., m, n) and (..., n).

        >>> fnp.matvec(A, x)
    """
    return einsum("...ij,...j->...i", x1, x2)


@export(numpy=getattr(np, "vecmat", None))
def vecmat(x1, x2, /):
    """np.vecmat: conj(x1) (..., n) times the matrix x2 (..., n, m).

        >>> fnp.vecmat(x, A)
    """
    return einsum("...j,...ji->...i", conj(_arr(x1)), x2)


def _arr(x):
    return x if isinstance(x, Traced) else np.asarray(x)
