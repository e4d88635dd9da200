"""Batching (vmap) as an IR -> IR transform.

`vmap_program(prog, batched, size)` rewrites a per-example program into one that takes the
inputs marked `batched` with a leading batch axis of length `size` and returns every output
batched on axis 0. Each primitive's `batch` rule receives its inputs and a flag per input
(batched on axis 0 or not) and returns outputs batched on axis 0; rules are written with
funcgrad operations, so the result can be differentiated, compiled and batched again.

A primitive without a batch rule is batched by the fallback: one application per example,
stacked — always correct, but it unrolls the batch, so common primitives have real rules.
"""
from __future__ import annotations

from ..ir import Aval, Lit, Program, bind_staged, use_source
from ..primitives.base import broadcast_in_dim
from ..primitives.indexing import getitem
from ..primitives.shape import moveaxis, stack
from ..tracer import trace_flat

__all__ = ["vmap_program", "batch_fallback", "move_to_front"]


def batch_fallback(prim, args, batched, size, params):
    """Apply `prim` example by example and stack the results along a new axis 0."""
    rows = []
    for b in range(size):
        ins = [getitem(a, b) if f else a for a, f in zip(args, batched)]
        rows.append(bind_staged(prim, *ins, **params))
    if prim.multiple_results:
        return [stack([r[k] for r in rows]) for k in range(len(rows[0]))]
    return stack(rows)


def move_to_front(x, axis):
    """Transpose so that `axis` becomes axis 0."""
    return x if axis == 0 else moveaxis(x, axis, 0)


def vmap_program(prog: Program, batched, size, with_flags=False):
    """Batched program: inputs marked in `batched` get a leading axis of length `size`; every
    output is batched. With `with_flags`, outputs that do not depend on a batched input stay
    unbatched and the result is (program, flag per output)."""

    def body(*args):
        env, flags = {}, {}
        for v, a, f in zip(prog.in_vars, args, batched):
            env[v.id], flags[v.id] = a, bool(f)
        for e in prog.eqns:
            ins = [v.val if isinstance(v, Lit) else env[v.id] for v in e.inputs]
            fl = [False if isinstance(v, Lit) else flags[v.id] for v in e.inputs]
            with use_source(e.src):
                if not any(fl):
                    out = bind_staged(e.prim, *ins, **e.params)
                else:
                    out = NotImplemented
                    if e.prim.batch is not None:
                        out = e.prim.batch(ins, fl, size, **e.params)
                    if out is NotImplemented:
                        out = batch_fallback(e.prim, ins, fl, size, e.params)
            outs = out if e.prim.multiple_results else (out,)
            for v, o in zip(e.outputs, outs):
                env[v.id], flags[v.id] = o, any(fl)
        res = []
        out_flags[:] = [not isinstance(o, Lit) and flags[o.id] for o in prog.outs]
        for o in prog.outs:
            val = o.val if isinstance(o, Lit) else env[o.id]
            if with_flags:
                res.append(val)
            elif isinstance(o, Lit) or not flags[o.id]:
                val = broadcast_in_dim(val, (size,) + tuple(o.aval.shape),
                                       tuple(range(1, 1 + o.aval.ndim)), force=True)
                res.append(val)
            else:
                res.append(val)
        return res

    out_flags = []
    avals = [Aval((size,) + tuple(v.aval.shape), v.aval.dtype) if f else v.aval
             for v, f in zip(prog.in_vars, batched)]
    out, consts = trace_flat(body, avals)
    assert not consts, "internal error: vmap program captured outer values"
    return (out, out_flags) if with_flags else out


