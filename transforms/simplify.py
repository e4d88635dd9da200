"""Simplification passes over Programs. Owns dead-code elimination. Imports funcgrad.ir only."""
from __future__ import annotations

from ..ir import Lit, Program


def dce(prog: Program) -> Program:
    """Drop equations whose outputs are never used (primitives are pure)."""
    live = {o.id for o in prog.outs if not isinstance(o, Lit)}
    kept = []
    for e in reversed(prog.eqns):
        if any(v.id in live for v in e.outputs):
            kept.append(e)
            live.update(v.id for v in e.inputs if not isinstance(v, Lit))
    kept.reverse()
    return Program(prog.in_vars, kept, prog.outs)
