"""Reverse mode as an IR -> IR transform.

`vjp_program(prog, wrt, ct_mask)` derives the joint program
    (*inputs, *output_cotangents) -> (*outputs, *input_cotangents)
by re-recording the forward equations and then each primitive's vjp rule in reverse order.
A primitive whose backward pass needs values computed inside it (a loop's per-iteration
residuals) has a `vjp_split(inputs, active_flags, **params) -> (outputs, backward)` rule
instead: it records a forward that also returns those residuals, and `backward(output_cts)`
returns the input cotangents.
The rules are written with funcgrad operations, so the result is an ordinary Program: it can be
printed, evaluated, split into forward and backward halves (`split_program`), and
differentiated again. Cotangents that are known to be zero are `None` and never materialised
until an input's gradient must be returned.
"""
from __future__ import annotations

from .. import ir
from .._config import config
from ..ir import Lit, Program, Var, aval_of
from ..primitives.base import convert, zeros_like_aval
from ..primitives.elementwise import logical_and, where
from ..tracer import trace_flat
from .simplify import dce

__all__ = ["vjp_program", "split_program", "active_vars", "forward_pass", "backward_pass"]


def active_vars(prog: Program, wrt):
    """Ids of the variables that depend differentiably on the inputs marked in `wrt`."""
    active = {v.id for v, w in zip(prog.in_vars, wrt) if w}
    for e in prog.eqns:
        if (e.prim.differentiable or e.prim.opaque) and any(
                isinstance(v, Var) and v.id in active for v in e.inputs):
            active.update(v.id for v in e.outputs if v.aval.is_float)
    return active


class _Cotangents:
    """Accumulates cotangents per variable; None is a symbolic zero."""

    def __init__(self):
        self.cts = {}

    def add(self, var, ct, prim_name):
        if ct is None:
            return
        got = aval_of(ct)
        if got.shape != var.aval.shape:
            raise AssertionError(f"internal error: vjp rule of {prim_name} returned a cotangent "
                                 f"of {got} for an input of {var.aval}")
        if got.dtype != var.aval.dtype:
            ct = convert(ct, var.aval.dtype)
        prev = self.cts.get(var.id)
        self.cts[var.id] = ct if prev is None else prev + ct

    def pop(self, var):
        return self.cts.pop(var.id, None)


def forward_pass(prog, ins, active, known=None):
    """Evaluate prog under the current trace, skipping equations whose outputs are all in
    `known` (var id -> value, e.g. values saved by a checkpoint policy). Returns the value of
    every variable and the backward functions of the vjp_split equations."""
    env = {v.id: a for v, a in zip(prog.in_vars, ins)}
    env.update(known or {})
    splits = {}
    for e in prog.eqns:
        if known and all(v.id in known for v in e.outputs):
            continue
        vals = [v.val if isinstance(v, Lit) else env[v.id] for v in e.inputs]
        flags = [isinstance(v, Var) and v.id in active for v in e.inputs]
        with ir.use_source(e.src):
            if e.prim.vjp_split is not None and any(flags):
                out, splits[id(e)] = e.prim.vjp_split(vals, flags, **e.params)
            else:
                out = ir.bind_staged(e.prim, *vals, **e.params)
        for v, o in zip(e.outputs, out if e.prim.multiple_results else (out,)):
            env[v.id] = o
    return env, splits


def _strong_zero(e, ct, in_cts):
    """A cotangent that is exactly zero contributes zero, even where the local derivative is
    inf or NaN (d/dx sqrt at 0 under a where that discards it): for an elementwise equation
    whose derivative can be singular at finite inputs (Primitive.singular: sqrt, log, divide,
    power, exp's overflow, ...), an input cotangent that is NaN where the output cotangent is 0
    becomes 0 (0 times or over anything is 0 or NaN). Only NaN is replaced, so wherever the
    gradient is a number this is the identity, with the identity's derivative: second
    derivatives through cotangents that pass through 0 stay exact. See docs/conventions.md."""
    singular = e.prim.singular
    if callable(singular):
        singular = singular(e.params)
    if not (config.strong_zero and singular):
        return in_cts
    zero = ct == 0
    return [c if c is None else where(logical_and(zero, c != c), 0.0, c) for c in in_cts]


def _backward_of(e, masked=False):
    """The source of the equations e's vjp rule stages: e's line, in the role of its backward
    pass (named in errors such as fg.debug_nans's). masked: the strong-zero rule may replace
    their NaNs."""
    if e.src is None:
        return None
    what = e.prim.name if e.src.role is None else f"({e.src.role})"
    return e.src.in_role(f"the backward pass of {what}", masked)


def _singular(e):
    singular = e.prim.singular
    return singular(e.params) if callable(singular) else singular


def backward_pass(prog, env, cts, active, splits=None, strong_zero=True):
    """Cotangents of every active variable (a _Cotangents; `.pop(var)` -> value or None) given
    those of prog's outputs, applying each equation's vjp rule to the values in `env`.
    strong_zero: zero cotangents stay zero through elementwise rules (see _strong_zero)."""
    acc = _Cotangents()
    for o, ct in zip(prog.outs, cts):
        if ct is not None and isinstance(o, Var) and o.id in active:
            acc.add(o, ct, "output")
    read = lambda v: v.val if isinstance(v, Lit) else env[v.id]
    for e in reversed(prog.eqns):
        if not any(v.id in active for v in e.outputs):
            continue
        out_cts = [acc.pop(v) for v in e.outputs]
        if all(c is None for c in out_cts):
            continue
        ins, outs = [read(v) for v in e.inputs], [read(v) for v in e.outputs]
        masked = config.strong_zero and strong_zero and not e.prim.multiple_results and _singular(e)
        with ir.use_source(_backward_of(e, masked)):
            back = splits.get(id(e)) if splits else None
            if back is not None:
                in_cts = back(out_cts)
            elif e.prim.multiple_results:
                in_cts = e.prim.vjp(out_cts, *ins, out=tuple(outs), **e.params)
            else:
                in_cts = e.prim.vjp(out_cts[0], *ins, out=outs[0], **e.params)
        if masked and back is None:
            with ir.use_source(_backward_of(e)):
                in_cts = _strong_zero(e, out_cts[0], in_cts)
        with ir.use_source(_backward_of(e)):
            for v, ct in zip(e.inputs, in_cts):
                if isinstance(v, Var) and v.id in active:
                    acc.add(v, ct, e.prim.name)
    return acc


def vjp_program(prog: Program, wrt, ct_mask, strong_zero=True) -> Program:
    """Joint forward+backward program. `wrt[i]`: differentiate input i; `ct_mask[j]`: output j
    receives a cotangent input (the others, e.g. auxiliary outputs, do not). strong_zero=False
    keeps 0 * inf = nan in elementwise rules (forward rules derived from these programs need
    them linear in the cotangent)."""
    active = active_vars(prog, wrt)
    ct_outs = [o for o, m in zip(prog.outs, ct_mask) if m]
    n_in = len(prog.in_vars)

    def joint(*args):
        primals, ct_args = args[:n_in], iter(args[n_in:])
        env, splits = forward_pass(prog, primals, active)
        cts = [next(ct_args) if m else None for m in ct_mask]
        acc = backward_pass(prog, env, cts, active, splits, strong_zero)
        grads = []
        for v, w in zip(prog.in_vars, wrt):
            if w:
                ct = acc.pop(v)
                grads.append(zeros_like_aval(v.aval) if ct is None else ct)
        outs = [o.val if isinstance(o, Lit) else env[o.id] for o in prog.outs]
        return outs + grads

    joint_prog, consts = trace_flat(joint, prog.in_avals + [o.aval for o in ct_outs])
    assert not consts, "internal error: vjp program captured outer values"
    return dce(joint_prog)


def split_program(joint: Program, n_primals: int, n_outs: int):
    """Split a joint program into forward (primals -> outputs + residuals) and backward
    (residuals + cotangents -> input cotangents) by dependence on the cotangent inputs.
    Returns (fwd, bwd, n_residuals)."""
    dep = {v.id for v in joint.in_vars[n_primals:]}
    const = set()             # values computed from literals only (zeros, say): recomputed in
    fwd_eqns, bwd_eqns = [], []   # backward instead of being stored as residuals
    for e in joint.eqns:
        if any(isinstance(v, Var) and v.id in dep for v in e.inputs):
            bwd_eqns.append(e)
            dep.update(v.id for v in e.outputs)
        elif all(isinstance(v, Lit) or v.id in const for v in e.inputs) and not e.prim.effect:
            fwd_eqns.append(e)
            bwd_eqns.append(e)
            const.update(v.id for v in e.outputs)
        else:
            fwd_eqns.append(e)
    ct_in, grads = joint.in_vars[n_primals:], joint.outs[n_outs:]
    bwd = dce(Program([], bwd_eqns, grads))
    defined = {v.id for e in bwd.eqns for v in e.outputs} | {v.id for v in ct_in}
    residuals, seen = [], set()
    for atom in [v for e in bwd.eqns for v in e.inputs] + list(grads):
        if isinstance(atom, Var) and atom.id not in defined and atom.id not in seen:
            seen.add(atom.id)
            residuals.append(atom)
    bwd = Program(residuals + list(ct_in), bwd.eqns, bwd.outs)
    fwd = dce(Program(joint.in_vars[:n_primals], fwd_eqns, joint.outs[:n_outs] + residuals))
    return fwd, bwd, len(residuals)
