"""Tensor contractions: one primitive, `contract` (a two-operand einsum without repeated
letters), and NumPy's products built on it: matmul/@, dot, vdot, inner, outer, tensordot,
einsum, kron, trace, diagonal, cross.

The vjp of a contraction is again a contraction (swap the output with the operand being
differentiated), followed by a broadcast over letters that only that operand had.
"""
from __future__ import annotations

import string
from functools import lru_cache

import numpy as np

from ..ir import Aval, Traced, aval_of
from .base import (broadcast_in_dim, broadcast_shapes, broadcast_to, convert, define,
                   dtype_or_pytype, export, normalize_axes, reduce_sum, reshape,
                   shape_error, transpose)
from .indexing import getitem

LETTERS = string.ascii_letters


def _contract_abstract(a, b, *, spec):
    sa, sb, so = spec
    sizes = {}
    for sub, av in ((sa, a), (sb, b)):
        if len(sub) != av.ndim:
            raise ValueError(f"contract: subscripts {sub!r} do not match {av}")
        for ch, d in zip(sub, av.shape):
            if sizes.setdefault(ch, d) != d:
                raise ValueError(f"contract: size mismatch for dimension {ch!r}: {sizes[ch]} vs {d} "
                                 f"(operands {a} and {b})")
    return Aval(tuple(sizes[ch] for ch in so), np.result_type(a.dtype, b.dtype))


def _contract_impl(a, b, *, spec):
    sa, sb, so = spec
    return np.asarray(np.einsum(f"{sa},{sb}->{so}", a, b, optimize=len(sa) + len(sb) > 3))


def _operand_ct(ct, other, x, so, s_other, sx):
    kept = "".join(ch for ch in sx if ch in so or ch in s_other)
    g = contract_p.bind(ct, other, spec=(so, s_other, kept))
    if kept != sx:
        g = broadcast_in_dim(g, aval_of(x).shape, tuple(sx.index(ch) for ch in kept))
    return g


def _contract_vjp(ct, a, b, *, out, spec):
    sa, sb, so = spec
    return (_operand_ct(ct, b, a, so, sb, sa), _operand_ct(ct, a, b, so, sa, sb))


def _contract_batch(ins, fl, size, spec):
    """A new batch letter on the batched operands and the output."""
    sa, sb, so = spec
    z = next(c for c in "ZYXWVUTSRQ" if c not in sa + sb + so)
    a, b = ins
    return contract_p.bind(a, b, spec=(z + sa if fl[0] else sa, z + sb if fl[1] else sb, z + so))


contract_p = define("contract", impl=_contract_impl, abstract=_contract_abstract,
                    vjp=_contract_vjp, batch=_contract_batch)


def _common(a, b):
    dt = np.result_type(dtype_or_pytype(a), dtype_or_pytype(b))
    conv = lambda x: convert(x if isinstance(x, Traced) else np.asarray(x), dt)
    return conv(a), conv(b)


def contract(a, b, sa, sb, so):
    """einsum(f"{sa},{sb}->{so}", a, b) for subscripts without repeated letters."""
    a, b = _common(a, b)
    try:
        _contract_abstract(aval_of(a), aval_of(b), spec=(sa, sb, so))
    except ValueError as e:
        raise shape_error(str(e)) from None
    if not isinstance(a, Traced) and not isinstance(b, Traced):
        return _contract_impl(a, b, spec=(sa, sb, so))
    return contract_p.bind(a, b, spec=(sa, sb, so))


@export()
def matmul(x1, x2):
    """np.matmul / the @ operator, with NumPy's 1-D and batch-broadcasting rules.

        >>> fnp.matmul(A, x)       # or A @ x
    """
    a, b = _common(x1, x2)
    sa, sb = aval_of(a).shape, aval_of(b).shape
    if not sa or not sb:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    va, vb = len(sa) == 1, len(sb) == 1
    if va:
        a, sa = reshape(a, (1,) + sa), (1,) + sa
    if vb:
        b, sb = reshape(b, sb + (1,)), sb + (1,)
    if sa[-1] != sb[-2]:
        raise shape_error(f"matmul: dimension mismatch: {tuple(aval_of(x1).shape)} @ "
                          f"{tuple(aval_of(x2).shape)} (core dimensions {sa[-1]} and {sb[-2]})")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    a, b = broadcast_to(a, batch + sa[-2:]), broadcast_to(b, batch + sb[-2:])
    bl = LETTERS[3:3 + len(batch)]
    out = contract(a, b, bl + "ij", bl + "jk", bl + "ik")
    if va or vb:
        shape = aval_of(out).shape
        out = reshape(out, shape[:-2] + (() if va else shape[-2:-1]) + (() if vb else shape[-1:]))
    return out


@export()
def dot(a, b):
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
    """np.vdot: dot of the flattened arrays."""
    return contract(reshape(a, (-1,)), reshape(b, (-1,)), "i", "i", "")


@export()
def inner(a, b):
    """np.inner: sum over the last axes."""
    na, nb = aval_of(a).ndim, aval_of(b).ndim
    if na == 0 or nb == 0:
        return a * b
    la, lb = LETTERS[:na - 1] + "z", LETTERS[na:na + nb - 1] + "z"
    return contract(a, b, la, lb, la[:-1] + lb[:-1])


@export()
def outer(a, b):
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


@export()
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """np.trace: sum of a diagonal."""
    d = diagonal(a, offset, axis1, axis2)
    return reduce_sum(d if dtype is None else convert(d, dtype), (aval_of(d).ndim - 1,))


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


@export()
def einsum(subscripts, *operands, optimize=None):
    """np.einsum (explicit or implicit output, ellipsis, repeated letters), contracted pairwise.

        >>> fnp.einsum("bij,bjk->bik", A, B)
    """
    if not isinstance(subscripts, str):
        raise NotImplementedError("einsum: only the subscripts-string form is supported")
    ops = [x if isinstance(x, Traced) else np.asarray(x) for x in operands]
    subs, out = _parse_einsum(subscripts, tuple(aval_of(x).ndim for x in ops))
    subs = list(subs)
    for k in range(len(ops)):
        others = out + "".join(s for m, s in enumerate(subs) if m != k)
        ops[k], subs[k] = _prepare_operand(ops[k], subs[k], others)
    x, s = ops[0], subs[0]
    for k in range(1, len(ops)):
        later = out + "".join(subs[k + 1:])
        keep = "".join(dict.fromkeys(c for c in s + subs[k] if c in later))
        x, s = contract(x, ops[k], s, subs[k], keep), keep
    x, s = _prepare_operand(x, s, out)
    if sorted(s) != sorted(out):
        # letters of the output that no operand has cannot occur; anything else is a bug
        raise ValueError(f"einsum: cannot produce output {out!r} from {s!r}")
    return transpose(x, tuple(s.index(c) for c in out))


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
    from .shape import moveaxis, stack
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
