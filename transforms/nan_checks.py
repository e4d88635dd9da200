"""Insert fg.debug_nans's checks into a program about to be compiled (funcgrad/_debug_nans.py).

After every equation with a floating-point output comes `debug_check(y, *inputs)`, whose
message names the equation's primitive, user line and role; later uses of y read the
check's output instead; checks are effects, never removed as dead code (fg.jit inserts them
before simplifying, so values nothing reads are checked too, as interpreted). Loop bodies
and branches get their own (the loop's or branch's outputs are not checked again: their
values come from checked code).
Equations whose NaNs the strong-zero rule may replace (SourceInfo.masked) are not checked,
and their values do not count as bad inputs: the replacement is checked instead.
"""
from __future__ import annotations

from .. import _debug_nans
from ..ir import Eqn, Program, Var, sub_programs
from ..primitives.checks import debug_check_p, debug_check_pointwise_p

__all__ = ["insert_checks"]


def insert_checks(prog: Program, infs: bool, _memo=None, _sites=None) -> Program:
    """prog with a check after each floating-point equation; each check gets its own site
    number (in sub-programs too), which a compiled kernel raises."""
    memo = {} if _memo is None else _memo
    sites = [0] if _sites is None else _sites
    sub = {}
    read = lambda a: sub.get(a.id, a) if isinstance(a, Var) else a

    def inner(p):
        if id(p) not in memo:
            memo[id(p)] = (p, insert_checks(p, infs, memo, sites))
        return memo[id(p)][1]

    eqns, masked = [], set()
    for e in prog.eqns:
        params = {k: inner(v) if isinstance(v, Program) else
                  tuple(inner(q) if isinstance(q, Program) else q for q in v)
                  if isinstance(v, tuple) else v for k, v in e.params.items()}
        e = Eqn(e.prim, [read(a) for a in e.inputs], e.outputs, params, e.src)
        eqns.append(e)
        if e.src is not None and e.src.masked:      # the strong-zero rule checks its NaNs
            masked.update(y.id for y in e.outputs)
            continue
        if e.prim.moves and not any(getattr(a, "id", None) in masked for a in e.inputs):
            continue       # no value of its own (checking it would only keep it out of fused
                           # loops); the strong-zero rule's select is checked
        if next(sub_programs(params), None) is not None:
            continue        # loops, branches: their outputs come from checked sub-programs
        xs = [a for a in e.inputs if isinstance(a, Var) and a.aval.is_float
              and a.id not in masked]
        check = debug_check_pointwise_p if e.prim.elementwise else debug_check_p
        for y in e.outputs:
            if not y.aval.is_float:
                continue
            checked = Var(y.aval)
            message = _debug_nans.message(e.prim.name, e.src, infs, where_steps=_debug_nans.STEPS)
            sites[0] += 1
            eqns.append(Eqn(check, [y] + xs, [checked],
                            dict(site=sites[0], message=message, infs=infs), e.src))
            sub[y.id] = checked
    return Program(prog.in_vars, eqns, [read(o) for o in prog.outs])
