"""The reference interpreter: evaluate any Program equation by equation.

Each equation is applied with `bind`, so with concrete inputs this runs NumPy (the oracle for
the compiled backend, and a debugging mode), and under an active trace it re-records the
program, which is how one transform's output is fed to the next. Reads the IR only.
"""
from __future__ import annotations

import threading

import numpy as np

from . import _debug_nans as nan_checks, ir
from ._errors import add_location, warn_at
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
    """Evaluate `prog` on `args` (arrays or tracers); returns the list of outputs.

    NumPy's floating-point warnings (divide by zero, overflow, invalid value) are reported at
    the user's line that made the failing equation, once per line as NumPy does, instead of
    at this file; np.seterr/np.errstate settings other than "warn" are kept as they are."""
    if len(args) != len(prog.in_vars):
        raise TypeError(f"program takes {len(prog.in_vars)} inputs, got {len(args)}")
    if _local.redirecting or ir._state.stack:     # (under a trace nothing is computed)
        return _eval(prog, args)
    modes = np.geterr()
    if "warn" not in modes.values():
        return _eval(prog, args)
    _local.redirecting = True
    try:
        with np.errstate(call=_fp_warning, **{k: "call" if m == "warn" else m
                                              for k, m in modes.items()}):
            return _eval(prog, args)
    finally:
        _local.redirecting = False


class _Local(threading.local):
    redirecting = False     # inside eval_program's errstate (sub-programs of loops are too)
    eqn = None              # the equation being evaluated


_local = _Local()


def _fp_warning(errtype, flag):
    """np.seterrcall handler: the warning NumPy would give, at the equation's user line."""
    e = _local.eqn
    warn_at(None if e is None else e.src, f"{errtype} encountered in "
            f"{e.prim.name if e is not None else 'a computation'}", RuntimeWarning)


def _eval(prog, args):
    env = {v.id: a for v, a in zip(prog.in_vars, args)}
    frees = _last_uses(prog)
    override = ir._state.override
    local = _local
    masked = set() if nan_checks.active() else None     # (fg.debug_nans: _debug_nans.check_eqn)
    outer = local.eqn       # (restored after: an equation left here would keep its constants alive)
    try:
        for e, free in zip(prog.eqns, frees):
            ins = [v.val if isinstance(v, Lit) else env[v.id] for v in e.inputs]
            prev, override[0] = override[0], e.src
            local.eqn = e
            try:
                out = bind_staged(e.prim, *ins, **e.params)
            except Exception as exc:
                add_location(exc, e.src, f"{e.prim.name} failed on values computed")
                raise
            finally:
                override[0] = prev
            if masked is not None:              # fg.debug_nans / fg.debug_infs (on at the start)
                nan_checks.check_eqn(e, ins, out, masked)
            if e.prim.multiple_results:
                for v, o in zip(e.outputs, out):
                    env[v.id] = o
            else:
                env[e.outputs[0].id] = out
            for vid in free:
                env.pop(vid, None)
    finally:
        local.eqn = outer
    return [o.val if isinstance(o, Lit) else env[o.id] for o in prog.outs]
