"""Batch rules (vmap) for the primitive families, by kind: elementwise primitives broadcast their
unbatched operands; axis-carrying primitives shift their axis parameters by one; contractions
gain a batch letter; linear algebra already works on stacks of matrices. Primitives without a
rule here are batched by the fallback in transforms/vmap.py (one application per example).

Each rule: rule(inputs, batched_flags, size, **params) -> outputs batched on axis 0, or
NotImplemented for cases it does not handle (the fallback takes them).
"""
from __future__ import annotations

from ..ir import aval_of
from .base import REGISTRY, broadcast_in_dim


def batched(x, flag, size):
    """x with a leading batch axis (broadcast when it has none)."""
    if flag:
        return x
    a = aval_of(x)
    return broadcast_in_dim(x, (size,) + a.shape, tuple(range(1, 1 + a.ndim)), force=True)


def _all_batched(ins, fl, size):
    return [batched(x, f, size) for x, f in zip(ins, fl)]


def _elementwise(prim):
    return lambda ins, fl, size, **p: prim.bind(*_all_batched(ins, fl, size), **p)


def _shift(prim, key, fn):
    """Batch rule for a one-operand primitive whose parameter `key` is rewritten by fn."""
    def rule(ins, fl, size, **p):
        p = dict(p)
        p[key] = fn(p[key], size)
        return prim.bind(*_all_batched(ins, fl, size), **p)
    return rule


def _plus1(axes, size):
    return tuple(a + 1 for a in axes)


def _axis(prim):
    def rule(ins, fl, size, axis):
        (x,) = _all_batched(ins, fl, size)
        if axis is None:                       # argmax over the flattened example
            from .base import reshape
            x, axis = reshape(x, (size, -1)), 0
        return prim.bind(x, axis=axis + 1)
    return rule


def _contract(ins, fl, size, spec):
    sa, sb, so = spec
    z = next(c for c in "ZYXWVUTSRQ" if c not in sa + sb + so)
    a, b = ins
    return REGISTRY["contract"].bind(a, b, spec=(z + sa if fl[0] else sa, z + sb if fl[1] else sb,
                                                 z + so))


def _leading_index_ok(spec):
    """A leading full slice keeps the batch axis first: advanced (array or integer) entries
    must be adjacent, or NumPy moves their result axes to the front."""
    adv = [k for k, s in enumerate(spec) if s[0] in ("arr", "int")]
    return not adv or adv[-1] - adv[0] + 1 == len(adv)


def _gather(ins, fl, size, spec):
    if any(fl[1:]) or not _leading_index_ok(spec):
        return NotImplemented                  # batched indices: the fallback handles them
    return REGISTRY["gather"].bind(ins[0], *ins[1:], spec=(("slice", None, None, None),) + spec)


def _scatter(ins, fl, size, spec, mode):
    if any(fl[2:]) or not _leading_index_ok(spec):
        return NotImplemented
    x, u = batched(ins[0], fl[0], size), batched(ins[1], fl[1], size)
    return REGISTRY["scatter"].bind(x, u, *ins[2:], spec=(("slice", None, None, None),) + spec,
                                    mode=mode)


def _stacked(prim):
    """Linear algebra that already maps over leading dimensions."""
    return lambda ins, fl, size, **p: prim.bind(*_all_batched(ins, fl, size), **p)


def _solve(ins, fl, size):
    from .base import reshape
    a, b = _all_batched(ins, fl, size)
    if aval_of(b).ndim == 2:                   # a vector per example: solve as a 1-column matrix
        x = REGISTRY["solve"].bind(a, reshape(b, aval_of(b).shape + (1,)))
        return reshape(x, aval_of(x).shape[:-1])
    return REGISTRY["solve"].bind(a, b)


def _install():
    for name, prim in REGISTRY.items():
        if isinstance(prim.numba, str):       # elementwise (incl. select, convert, stop_gradient)
            prim.batch = _elementwise(prim)
    rules = {
        "broadcast_in_dim": lambda p: _shift_bcast,
        "reshape": lambda p: _shift(p, "shape", lambda s, n: (n,) + tuple(s)),
        "transpose": lambda p: _shift(p, "perm", lambda perm, n: (0,) + tuple(q + 1 for q in perm)),
        "rev": lambda p: _shift(p, "axes", _plus1),
        "concatenate": lambda p: _shift(p, "axis", lambda a, n: a + 1),
        "contract": lambda p: _contract,
        "gather": lambda p: _gather,
        "scatter": lambda p: _scatter,
        "solve": lambda p: _solve,
    }
    for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        rules[name] = lambda p: _shift(p, "axes", _plus1)
    for name in ("argmax", "argmin"):
        rules[name] = _axis
    for name in ("cumsum", "cumprod", "argsort"):
        rules[name] = lambda p: _shift(p, "axis", lambda a, n: a + 1)
    for name in ("inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "svd", "svdvals", "pinv"):
        rules[name] = _stacked
    for name, make in rules.items():
        if name in REGISTRY:
            REGISTRY[name].batch = make(REGISTRY[name])


def _shift_bcast(ins, fl, size, shape, dims):
    (x,) = ins
    return REGISTRY["broadcast_in_dim"].bind(x, shape=(size,) + tuple(shape),
                                             dims=(0,) + tuple(d + 1 for d in dims))


_install()
