"""What the loop and branch primitives share: tracing a user's body into a sub-program (with
checks that name the carry leaf that changed type), and the helpers their transform rules use.

Primitive inputs are always laid out as (constants captured by the sub-programs, carries,
scanned arrays) and recorded in params; `ir.split_list` cuts them apart.
"""
from __future__ import annotations

import time

import numpy as np

from .. import ir, tiering
from .._config import config
from .._errors import CarryTypeError, user_frame, where
from ..interpreter import eval_program
from ..ir import Aval, Lit, Program, Traced, Var, aval_of
from ..primitives.base import batched, convert, zeros_like_aval
from ..tracer import trace_flat
from ..transforms.batching import vmap_program
from ..transforms.simplify import dce
from ..transforms.vjp import active_vars
from ..tree_util import named_path, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["LoopBudget", "run_sub", "count_eqns", "strong", "as_array", "trace_sub", "check_carry", "conform",
           "fit_carry", "leaves_of", "bind_loop", "checkpoint_every", "trace_closed", "padded",
           "zeros_for", "is_float", "active_carry", "vmap_to", "batched"]


# ---- tracing a body ------------------------------------------------------------------------

def strong(a: Aval):
    return Aval(a.shape, a.dtype)

def as_array(x):
    if isinstance(x, Traced):
        return x
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"loop carries and operands must be arrays or numbers, got {type(x).__name__}")
    return arr

def trace_sub(fn, avals, why=None):
    """Trace fn on tracers of `avals` -> (program with captured constants first, consts,
    output tree, output leaf paths). why: what the trace stands for (tracer.trace_flat)."""
    box = {}

    def flat(*tracers):
        with_paths, box["tree"] = tree_flatten_with_path(fn(*tracers))
        box["paths"] = [p for p, _ in with_paths]
        return [as_array(v) for _, v in with_paths]

    prog, consts = trace_flat(flat, avals, why=why)
    return prog, consts, box["tree"], box["paths"]

def check_carry(what, name, init_tree, out_tree, paths, in_avals, out_avals, kind="carry"):
    """Raise CarryTypeError naming the first leaf whose structure, shape or dtype differs.
    kind="carry": a loop body against its init; kind="output": a branch against the others."""
    if out_tree != init_tree:
        ref = "init" if kind == "carry" else "the other branches"
        raise CarryTypeError(
            f"{what}: {name} must return {'a carry' if kind == 'carry' else 'outputs'} with the "
            f"structure of {ref}: it returned {out_tree!r}, {ref}: {init_tree!r}"
            f"{where(user_frame())}")
    for p, a, b in zip(paths, in_avals, out_avals):
        if a.shape == b.shape and a.dtype == b.dtype:
            continue
        if kind == "carry":
            msg = (f"{name} changes the carry leaf {named_path('carry', p)} from {a} to {b}"
                   f"{where(user_frame())}. A loop carry keeps its shape and dtype; convert "
                   "explicitly (e.g. x.astype(...)) or give init the type the body produces.")
        else:
            msg = (f"{name} returns the output leaf {named_path('output', p)} as {b}, the other "
                   f"branches as {a}{where(user_frame())}. Every branch returns the same shapes "
                   "and dtypes; convert explicitly (e.g. x.astype(...)).")
        raise CarryTypeError(f"{what}: {msg}")

def conform(what, name, out, like):
    """A loop body's result checked against the carry it replaces (pytrees of tracers/values);
    weakly typed leaves (Python numbers) take the carry's dtype."""
    with_paths, out_tree = tree_flatten_with_path(out)
    like_leaves, like_tree = tree_flatten(like)
    paths = [p for p, _ in with_paths]
    outs = [as_array(v) for _, v in with_paths]
    if out_tree == like_tree:
        outs = [convert(o, aval_of(c).dtype) if aval_of(o).shape == aval_of(c).shape
                and aval_of(o).dtype != aval_of(c).dtype and (aval_of(o).weak or not isinstance(o, Traced))
                else o for o, c in zip(outs, like_leaves)]
    check_carry(what, name, like_tree, out_tree, paths, [strong(aval_of(c)) for c in like_leaves],
                 [strong(aval_of(o)) for o in outs])
    return tree_unflatten(out_tree, outs)

def fit_carry(prog, avals):
    """Convert weakly typed (Python number) outputs of a body to the carry dtypes."""
    need = [k for k, (o, a) in enumerate(zip(prog.outs[:len(avals)], avals))
            if o.aval.dtype != a.dtype and o.aval.shape == a.shape
            and (o.aval.weak or isinstance(o, Lit))]
    if not need:
        return prog

    def fixed(*args):
        res = eval_program(prog, *args)
        return [convert(r, avals[k].dtype) if k in need else r for k, r in enumerate(res)]
    new, consts = trace_flat(fixed, prog.in_avals)
    assert not consts
    return new

def leaves_of(tree):
    leaves, td = tree_flatten(tree)
    return [as_array(v) for v in leaves], td

def bind_loop(prim, *args, **params):
    if ir.current_trace() is None:          # eager: NumPy scalars for 0-d results
        return tuple(np.asarray(o)[()] for o in prim.impl(*args, **params))
    return ir.bind_staged(prim, *args, **params)

def checkpoint_every(checkpoint, what, length=None):
    """The checkpoint interval k (None: store every step)."""
    if checkpoint is None:
        return None
    if checkpoint == "sqrt" and length is not None:
        return max(1, int(np.ceil(np.sqrt(length))))
    if isinstance(checkpoint, (int, np.integer)) and not isinstance(checkpoint, bool) and checkpoint >= 1:
        return int(checkpoint)
    raise ValueError(f"{what}: checkpoint must be None, a positive int k (keep every k-th carry)"
                     + (' or "sqrt"' if length is not None else
                        ' (the trip count is unknown when tracing, so "sqrt" is not available)')
                     + f", got {checkpoint!r}")


# ---- running and transforming sub-programs ---------------------------------------------------

class LoopBudget:
    """Time spent interpreting a loop whose trip count is unknown, checked every few steps
    against tiering's budget (past it, the rest of the loop runs compiled)."""

    def __init__(self):
        self.start, self.steps = time.perf_counter(), 0

    def spent(self):
        self.steps += 1
        budget = config.loop_compile_seconds
        return (self.steps % 8 == 0 and budget > 0
                and time.perf_counter() - self.start > budget)

    def settle(self, out):
        """The loop's outputs from tiering.compile_loop's answer, or None to keep interpreting:
        asking again after another budget (tiering.LATER) or never (None: not possible)."""
        if out is tiering.LATER:
            self.start = time.perf_counter()
            return None
        if out is None:
            self.start = float("inf")
        return out


def kept_outputs(eqn, key, keep):
    """eqn with only the outputs numbered in keep, its sub-program(s) params[key] cut to the
    matching outputs and what they need (the prune rules of scan and cond)."""
    cut = lambda p: dce(Program(p.in_vars, p.eqns, [p.outs[k] for k in keep]))
    sub = eqn.params[key]
    params = dict(eqn.params, **{key: cut(sub) if isinstance(sub, Program)
                                 else tuple(cut(b) for b in sub)})
    return ir.Eqn(eqn.prim, eqn.inputs, [eqn.outputs[k] for k in keep], params, eqn.src)


def run_sub(prog, *args):
    with ir.no_trace():
        return eval_program(prog, *args)

def count_eqns(prog):
    """The equations one run of prog evaluates: a scan's body once per step (a checkpointed
    scan is a scan of scans), other sub-programs (while bodies: trip count unknown) once."""
    return sum(1 + sum(count_eqns(p) for p in ir.sub_programs(e.params))
               * (e.params["length"] if e.prim.name == "scan" else 1) for e in prog.eqns)


def trace_closed(fn, avals):
    prog, consts = trace_flat(fn, avals)
    assert not consts, "internal error: a control-flow rule captured outer values"
    return prog

def padded(prog, extra_avals):
    """prog with unused inputs of `extra_avals` appended."""
    return Program(list(prog.in_vars) + [Var(a) for a in extra_avals], prog.eqns, prog.outs)

def zeros_for(x):
    return zeros_like_aval(aval_of(x))

def is_float(v):
    return v.aval.is_float

def active_carry(body, c_act, carry_act, x_act=()):
    """Fixed point: a carry is active if its initial value is, or the body makes it depend on
    an active input. Returns (active carries, active extra outputs)."""
    n = len(carry_act)
    act = [a and is_float(v) for a, v in zip(carry_act, body.in_vars[len(c_act):])]
    while True:
        live = active_vars(body, list(c_act) + act + list(x_act))
        out = [isinstance(o, Var) and o.id in live for o in body.outs]
        new = [a or o for a, o in zip(act, out[:n])]
        if new == act:
            return act, out[n:]
        act = new

def vmap_to(prog, in_flags, want, size):
    """vmap_program whose outputs are batched exactly where `want` says (broadcasting outputs
    that came out unbatched); every wanted-unbatched output must be unbatched."""
    bprog, got = vmap_program(prog, in_flags, size, with_flags=True)
    assert all(w or not g for w, g in zip(want, got)), "internal error: batched carry not allowed"
    if list(got) == list(want):
        return bprog

    def fix(*args):
        res = eval_program(bprog, *args)
        return [batched(r, False, size) if w and not g else r for r, w, g in zip(res, want, got)]
    return trace_closed(fix, bprog.in_avals)
