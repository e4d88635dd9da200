"""The branch primitive, cond (one block with every rule), and its user API: fg.cond and
fg.switch.

Only the chosen branch runs: the interpreter calls it, the Numba backend writes an `if` chain
(backend/loop_emitters.py). Forward and reverse mode differentiate each branch (the chosen
branch's forward is recomputed in the backward pass); under vmap a batched predicate runs
every branch and selects per example.
"""
from __future__ import annotations

import numpy as np

from .._errors import ShapeError, user_frame, where
from ..interpreter import eval_program
from ..ir import Lit, Program, Traced, Var, aval_of, bind_staged
from ..primitives.base import NAMESPACE, convert, define
from ..transforms.jvp import jvp_program
from ..transforms.vjp import vjp_program
from ..tree_util import tree_unflatten
from .subprograms import (bind_loop, check_carry, fit_carry, is_float, kept_outputs, leaves_of,
                          run_sub, strong, trace_sub, vmap_to, zeros_for)

__all__ = ["cond", "switch", "cond_p"]


# ---- cond ------------------------------------------------------------------------------------

def _cond_impl(index, *ops, branches):
    k = int(np.clip(index, 0, len(branches) - 1))
    return tuple(np.asarray(o) for o in run_sub(branches[k], *ops))


def _cond_jvp(primals, tangents, *, branches):
    index, ops = primals[0], primals[1:]
    wrt = [t is not None for t in tangents[1:]]
    jbs = tuple(jvp_program(b, wrt) for b in branches)
    res = bind_staged(cond_p, index, *ops, *[t for t in tangents[1:] if t is not None],
                      branches=jbs)
    n = len(branches[0].outs)
    fo = [o.aval.is_float for o in branches[0].outs]
    touts = iter(res[n:])
    return tuple(res[:n]), [next(touts) if f else None for f in fo]

def _cond_split(ins, flags, *, branches):
    out = bind_staged(cond_p, *ins, branches=branches)

    def backward(cts):
        ops = ins[1:]
        act = [f and is_float(v) for f, v in zip(flags[1:], branches[0].in_vars)]
        fo = [o.aval.is_float for o in branches[0].outs]
        n = len(fo)
        joints = []
        for b in branches:
            j = vjp_program(b, act, fo)                  # (ops, cts) -> (outs, grads)
            joints.append(Program(j.in_vars, j.eqns, j.outs[n:]))
        filled = [ct if ct is not None else zeros_for(o) for ct, o, f in zip(cts, out, fo) if f]
        grads = iter(bind_staged(cond_p, ins[0], *ops, *filled, branches=tuple(joints)))
        return [None] + [next(grads) if a else None for a in act]
    return out, backward

def _cond_batch(ins, fl, size, *, branches):
    index, ops, f_ops = ins[0], ins[1:], fl[1:]
    n = len(branches[0].outs)
    bbs = tuple(vmap_to(b, f_ops, [True] * n, size) for b in branches)
    if not fl[0]:
        return list(bind_staged(cond_p, index, *ops, branches=bbs))
    where, reshape, clip = NAMESPACE["where"], NAMESPACE["reshape"], NAMESPACE["clip"]
    index = clip(index, 0, len(branches) - 1)
    outs = [eval_program(b, *ops) for b in bbs]         # every branch, then select per example
    res = list(outs[0])
    for k in range(1, len(bbs)):
        for j, o in enumerate(outs[k]):
            sel = reshape(index == k, (size,) + (1,) * (aval_of(o).ndim - 1))
            res[j] = where(sel, o, res[j])
    return res


def _cond_prune(eqn, used):
    """The cond without the outputs nothing reads, in every branch."""
    keep = [k for k, u in enumerate(used) if u]
    if len(keep) == len(used) or not keep:
        return None
    return kept_outputs(eqn, "branches", keep)


cond_p = define(
    "cond", impl=_cond_impl, multiple_results=True, exact=True,   # (as exact as its branches)
    abstract=lambda index, *avals, branches: tuple(branches[0].out_avals),
    jvp=_cond_jvp, vjp_split=_cond_split, batch=_cond_batch, prune=_cond_prune,
    doc="branches[index](*operands) with index clamped to the valid range; every branch "
        "takes all operands (the constants captured by any branch included).")


# ---- user API ---------------------------------------------------------------------------------

def switch(index, branches, *operands):
    """`branches[index](*operands)`, index clamped to [0, len(branches) - 1]; only the chosen
    branch runs. Every branch returns the same structure, shapes and dtypes (a Python number
    takes the dtype the other branches give that output).

        >>> fg.switch(1, [lambda x: x, lambda x: 2 * x, lambda x: 3 * x], 5.0)
        10.0
    """
    branches = list(branches)
    return _switch(index, branches, operands, [f"branch {k}" for k in range(len(branches))],
                   "fg.switch")

def _switch(index, branches, operands, names, what):
    if not branches:
        raise ValueError(f"{what}: branches is empty")
    if not isinstance(index, Traced):
        k = int(np.clip(int(index), 0, len(branches) - 1))
        return branches[k](*operands)
    ops, tree = leaves_of(list(operands))
    avals = [aval_of(v) for v in ops]
    why = ("it is traced inside a branch of fg.cond / fg.switch, which funcgrad records once "
           "for every value of the operands (each branch is traced, whichever is taken)")
    traced = [trace_sub(lambda *o, br=br: br(*tree_unflatten(tree, list(o))), avals, why)
              for br in branches]
    t0, paths0 = traced[0][2], traced[0][3]
    for (prog, _, t, _), name in zip(traced[1:], names[1:]):
        check_carry(what, name, t0, t, [], [], [], kind="output")
    # each output's dtype: that of the first branch returning it as a typed value (not a
    # Python number), so `lambda x: 0.0` fits a float32 branch
    firm = lambda o: not (o.aval.weak or isinstance(o, Lit))
    targets = [strong(next((p.outs[j].aval for p, *_ in traced if firm(p.outs[j])),
                            traced[0][0].outs[j].aval)) for j in range(len(traced[0][0].outs))]
    # every branch takes every branch's captured constants, then the operands
    all_consts = [c for _, consts, _, _ in traced for c in consts]
    progs, offset = [], 0
    for (prog, consts, _, _), name in zip(traced, names):
        nc = len(consts)
        const_vars, op_vars = prog.in_vars[:nc], prog.in_vars[nc:]
        ins = [Var(aval_of(c)) for c in all_consts]
        ins[offset:offset + nc] = const_vars
        fixed = fit_carry(Program(ins + op_vars, prog.eqns, prog.outs), targets)
        check_carry(what, name, t0, t0, paths0, targets, [strong(a) for a in fixed.out_avals],
                     kind="output")
        progs.append(fixed)
        offset += nc
    idx = convert(index, np.int64)
    out = bind_loop(cond_p, idx, *all_consts, *ops, branches=tuple(progs))
    return tree_unflatten(t0, list(out))

def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands) if pred else false_fun(*operands)` for a traced scalar `pred`; only
    the chosen branch runs (under fg.vmap with a batched pred both run and results are
    selected per example). For elementwise choices between arrays use fnp.where.

        >>> f = lambda x: fg.cond(x > 0, lambda x: fnp.log(x), lambda x: 0.0 * x, x)
        >>> fg.grad(f)(2.0), fg.grad(f)(-2.0)
        (0.5, 0.0)
    """
    a = aval_of(pred) if isinstance(pred, Traced) else None
    shape = a.shape if a is not None else np.shape(pred)
    if shape != ():
        what = a if a is not None else f"an array of shape {shape}"
        raise ShapeError(f"fg.cond: pred must be one truth value (a scalar), got {what}"
                         f"{where(user_frame())}; for an elementwise choice between arrays use "
                         f"fnp.where(pred, x, y), or reduce the condition first "
                         f"(fnp.all(pred), fnp.any(pred))")
    if a is None:
        return true_fun(*operands) if bool(np.asarray(pred)) else false_fun(*operands)
    return _switch(pred if a.dtype == np.bool_ else pred != 0, [false_fun, true_fun], operands,
                   ["false_fun", "true_fun"], "fg.cond")
