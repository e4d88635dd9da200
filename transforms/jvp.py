"""Forward mode as an IR -> IR transform.

`jvp_program(prog, wrt)` builds

    (*inputs, *tangents of the wrt inputs) -> (*outputs, *output tangents)

by walking the equations once, carrying a tangent (or a symbolic zero, None) per variable.
A primitive with a forward rule (`prim.jvp(primals, tangents, **params) -> (outs, tangents)`,
used by the control-flow primitives, whose rule is forward mode of their sub-programs) applies
it. Every other primitive gets its forward rule derived from its vjp rule ("double vjp"): the
vjp of one equation, x, ct -> J^T ct, is linear in ct, so differentiating it with respect to
ct along a tangent t gives J t. Derived rules are built once per (primitive, types, params).
The result is an ordinary Program: printable, differentiable, compilable.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..interpreter import eval_program
from .._errors import SourceInfo
from ..ir import Eqn, Lit, Program
from ..primitives.base import full, zeros_like_aval
from ..tracer import trace_flat
from .simplify import dce, simplify
from .vjp import vjp_program

__all__ = ["jvp_program", "derived_jvp"]


def _double_vjp(prog: Program, wrt) -> Program:
    """(*inputs, *tangents of wrt inputs) -> (*outputs, *output tangents of float outputs)."""
    n_in, n_out = len(prog.in_vars), len(prog.outs)
    float_outs = [o.aval.is_float for o in prog.outs]
    joint = vjp_program(prog, wrt, float_outs, strong_zero=False)    # (x, ct) -> (y, x_bar)
    n_ct, n_bar = sum(float_outs), sum(bool(w) for w in wrt)
    # differentiate x_bar with respect to ct, along the input tangents
    second = vjp_program(joint, [False] * n_in + [True] * n_ct,
                         [False] * n_out + [True] * n_bar,
                         strong_zero=False)                 # (x, ct, t) -> (y, x_bar, ct_bar)
    ct_avals = [o.aval for o, f in zip(prog.outs, float_outs) if f]
    tan_avals = [v.aval for v, w in zip(prog.in_vars, wrt) if w]

    def forward(*args):
        xs, ts = args[:n_in], args[n_in:]
        # x_bar is linear in ct, so any ct gives the same derivative; ones rather than zeros,
        # because custom rules inside (checkpoint's backward pass) apply the strong-zero rule,
        # which is not linear at ct = 0
        ones = [full(a.shape, 1, a.dtype) for a in ct_avals]
        res = eval_program(second, *xs, *ones, *ts)
        return res[:n_out] + res[n_out + n_bar:]

    out, consts = trace_flat(forward, prog.in_avals + tan_avals)
    assert not consts, "internal error: jvp program captured outer values"
    return simplify(dce(out))


_derived: dict = {}


def _plain(v):
    """A parameter value that is equal exactly when it means the same (numbers, strings,
    dtypes and tuples of them), unlike objects made per call (a custom_vjp spec, a Program)."""
    if isinstance(v, tuple):
        return all(_plain(x) for x in v)
    return v is None or isinstance(v, (bool, int, float, str, np.dtype, np.generic))


def _params_key(params):
    """A cache key for params, or None when they hold per-call objects (never reused)."""
    if not all(_plain(v) for v in params.values()):
        return None
    return tuple(sorted(params.items()))


def _moved(prog, src):
    """prog with its equations' sources at `src` (the equation being differentiated now): a
    cached derived rule was traced at the first equation that needed it. Each keeps its
    role ("the backward pass of sqrt"), which the cache key makes the same for both."""
    def at(old):
        if src is None or old is None:
            return src
        return SourceInfo(src.filename, src.lineno, src.function, old.role, old.masked)
    return Program(prog.in_vars, [Eqn(e.prim, e.inputs, e.outputs, e.params, at(e.src))
                                  for e in prog.eqns], prog.outs)


def derived_jvp(prim, primals, tangents, params):
    """Forward rule of one application of `prim`, derived from its vjp rule (cached per
    primitive, types, params and the role of the equation; its sources are the current
    equation's, so warnings and errors name the line being differentiated)."""
    avals = [ir.aval_of(p) for p in primals]
    wrt = tuple(t is not None for t in tangents)
    pkey = _params_key(params)
    src = ir._state.override[0]
    role = None if src is None else (src.role, src.masked)
    key = None if pkey is None else (prim.name, tuple(avals), wrt, pkey, role)
    jp = _derived.get(key) if key is not None else None
    if jp is not None:
        jp = _moved(jp, src)
    else:
        def one_eqn(*a):
            out = prim.bind(*a, **params)
            return list(out) if prim.multiple_results else [out]
        one, consts = trace_flat(one_eqn, avals)
        assert not consts
        jp = _double_vjp(one, wrt)
        if key is not None:
            if len(_derived) >= 4096:
                _derived.clear()
            _derived[key] = jp
    res = eval_program(jp, *primals, *[t for t in tangents if t is not None])
    out_avals = prim.abstract(*avals, **params)
    out_avals = list(out_avals) if prim.multiple_results else [out_avals]
    outs, rest = res[:len(out_avals)], iter(res[len(out_avals):])
    touts = [next(rest) if a.is_float else None for a in out_avals]
    if prim.multiple_results:
        return tuple(outs), touts
    return outs[0], touts[0]


def _check_unknown(e, atoms, unknown):
    """An opaque equation's tangent is unknown: using it (in a differentiable equation, or as
    an output) is an error, raised by that equation's vjp rule. An equation whose derivative
    is the user's rule (custom_vjp) does not use its inputs' tangents (the rule replaces them)."""
    if not unknown or (e is not None and (not e.prim.differentiable or e.prim.user_rule)):
        return
    for v in atoms:
        hit = unknown.get(getattr(v, "id", None))
        if hit is not None:
            op, ins = hit
            with ir.use_source(op.src):
                op.prim.vjp(None, *ins, out=None, **op.params)


def jvp_program(prog: Program, wrt) -> Program:
    """Program (*inputs, *tangents for inputs with wrt True) -> (*outputs, *output tangents).
    Outputs that are not floating point get no tangent (they are not in the result)."""
    n_in = len(prog.in_vars)
    tan_avals = [v.aval for v, w in zip(prog.in_vars, wrt) if w]

    def forward(*args):
        xs, ts = args[:n_in], iter(args[n_in:])
        env = {v.id: x for v, x in zip(prog.in_vars, xs)}
        tan = {v.id: next(ts) for v, w in zip(prog.in_vars, wrt) if w}
        unknown = {}        # var id -> the opaque equation whose unknown tangent it carries
        for e in prog.eqns:
            ins = [v.val if isinstance(v, Lit) else env[v.id] for v in e.inputs]
            tins = [None if isinstance(v, Lit) or not v.aval.is_float else tan.get(v.id)
                    for v in e.inputs]
            _check_unknown(e, e.inputs, unknown)
            with ir.use_source(e.src):
                if e.prim.opaque and any(t is not None for t in tins):
                    out, touts = ir.bind_staged(e.prim, *ins, **e.params), None
                    unknown.update((v.id, (e, ins)) for v in e.outputs if v.aval.is_float)
                elif not e.prim.differentiable or all(t is None for t in tins):
                    out, touts = ir.bind_staged(e.prim, *ins, **e.params), None
                elif e.prim.jvp is not None:
                    out, touts = e.prim.jvp(ins, tins, **e.params)
                else:
                    out, touts = derived_jvp(e.prim, ins, tins, e.params)
            outs = out if e.prim.multiple_results else (out,)
            touts = (touts if e.prim.multiple_results else (touts,)) if touts is not None \
                else (None,) * len(e.outputs)
            for v, o, t in zip(e.outputs, outs, touts):
                env[v.id] = o
                if t is not None and v.aval.is_float:
                    tan[v.id] = t
        res = [o.val if isinstance(o, Lit) else env[o.id] for o in prog.outs]
        _check_unknown(None, prog.outs, unknown)
        for o in prog.outs:
            if o.aval.is_float:
                t = None if isinstance(o, Lit) else tan.get(o.id)
                res.append(zeros_like_aval(o.aval) if t is None else t)
        return res

    out, consts = trace_flat(forward, prog.in_avals + tan_avals)
    assert not consts, "internal error: jvp program captured outer values"
    return simplify(dce(out))
