"""Tensor contractions: one primitive, `contract` (a two-operand einsum without repeated
letters), and matmul/@ built on it (the linear algebra rules use matmul). NumPy's other products
(dot, vdot, inner, outer, tensordot, einsum, kron, trace, diagonal, cross) are compositions, in
funcgrad/numpy/_contract.py.

The vjp of a contraction is again a contraction (swap the output with the operand being
differentiated), followed by a broadcast over letters that only that operand had.
"""
from __future__ import annotations

import string

import numpy as np

from ..ir import Aval, Traced, aval_of
from .base import (broadcast_in_dim, broadcast_shapes, broadcast_to, convert, define,
                   dtype_or_pytype, export, reshape, shape_error)

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
