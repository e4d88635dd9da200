"""The reference interpreter: evaluate any Program equation by equation.

Each equation is applied with `bind`, so with concrete inputs this runs NumPy (the oracle for
the compiled backend, and a debugging mode), and under an active trace it re-records the
program, which is how one transform's output is fed to the next. Reads the IR only.
"""
from __future__ import annotations

from . import ir
from ._errors import add_location
from .ir import Lit, Program, bind_staged

__all__ = ["eval_program"]


def _last_uses(prog: Program):
    """eqn index -> ids of variables read for the last time there (so they can be freed)."""
    last = {}
    for i, e in enumerate(prog.eqns):
        for v in e.inputs:
            if not isinstance(v, Lit):
                last[v.id] = i
    keep = {o.id for o in prog.outs if not isinstance(o, Lit)}
    frees = [[] for _ in prog.eqns]
    for vid, i in last.items():
        if vid not in keep:
            frees[i].append(vid)
    return frees


def eval_program(prog: Program, *args):
    """Evaluate `prog` on `args` (arrays or tracers); returns the list of outputs."""
    if len(args) != len(prog.in_vars):
        raise TypeError(f"program takes {len(prog.in_vars)} inputs, got {len(args)}")
    env = {v.id: a for v, a in zip(prog.in_vars, args)}
    frees = _last_uses(prog)
    override = ir._state.override
    for e, free in zip(prog.eqns, frees):
        ins = [v.val if isinstance(v, Lit) else env[v.id] for v in e.inputs]
        prev, override[0] = override[0], e.src
        try:
            out = bind_staged(e.prim, *ins, **e.params)
        except Exception as exc:
            add_location(exc, e.src, f"{e.prim.name} failed on values computed")
            raise
        finally:
            override[0] = prev
        if e.prim.multiple_results:
            for v, o in zip(e.outputs, out):
                env[v.id] = o
        else:
            env[e.outputs[0].id] = out
        for vid in free:
            env.pop(vid, None)
    return [o.val if isinstance(o, Lit) else env[o.id] for o in prog.outs]
