"""Structured control flow: fg.fori_loop, fg.scan, fg.while_loop, fg.cond, fg.switch.

Python `if`/`while` on a traced value cannot be recorded (the tracer sees one path), and a Python
`for` loop over a static range unrolls into the program. These functions record the body once
as a sub-program of one equation, so the loop stays a loop: the interpreter runs it with NumPy,
the Numba backend writes a real `while`/`for`/`if` around the body's code, and the transforms
differentiate and batch it through the rules in transforms/control.py.

    >>> def newton_sqrt(a):
    ...     return fg.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12 * a,
    ...                          lambda x: 0.5 * (x + a / x), a)
    >>> fg.grad(newton_sqrt)(2.0)        # 1 / (2 sqrt 2), through a dynamic trip count

Carries and outputs are pytrees; their structure, shapes and dtypes are checked when the body is
traced, and a mismatch names the leaf. Primitive inputs are always laid out as
(constants captured by the sub-programs, carries, scanned arrays) and recorded in params.
"""
from __future__ import annotations

import os
import time

import numpy as np

from . import ir
from ._errors import CarryTypeError, loop_memory_error, user_frame, where
from .interpreter import eval_program
from .ir import Aval, Lit, Program, Traced, Var, aval_of
from .ir import split_list as _split
from .primitives.base import convert, define
from .tracer import trace_flat
from .tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["fori_loop", "scan", "while_loop", "cond", "switch",
           "while_p", "scan_p", "cond_p", "while_grad_p"]



# ---- primitives ------------------------------------------------------------------------------

def _run(prog, *args):
    with ir.no_trace():
        return eval_program(prog, *args)


# The interpreter spends about 2 us per equation per step of a loop; compiling a loop takes a
# fraction of a second. A loop whose interpreted work would pass LOOP_COMPILE_SECONDS is
# compiled and run native instead, even from an un-jitted fg.grad (the rest of the program stays
# interpreted). FUNCGRAD_LOOP_COMPILE_SECONDS=0 turns this off; fg.disable_jit() does too.
LOOP_COMPILE_SECONDS = float(os.environ.get("FUNCGRAD_LOOP_COMPILE_SECONDS", "0.5"))
EQN_SECONDS = 2e-6


def _count_eqns(prog):
    return sum(1 + sum(_count_eqns(p) for p in ir.sub_programs(e.params)) for e in prog.eqns)


def _compiled(prim, args, params):
    """Evaluate one loop equation with a compiled kernel; None when that is not possible."""
    from .jit import _disabled, prepare
    if _disabled or LOOP_COMPILE_SECONDS <= 0:
        return None
    try:
        from .backend.compile import compile_program
        arrays = [np.asarray(a) for a in args]
        prog, _ = trace_flat(lambda *a: list(prim.bind(*a, **params)),
                             [aval_of(a) for a in arrays])
        kernel = compile_program(prepare(prog))
        outs = kernel(*[a[()] if a.ndim == 0 else a for a in arrays])
    except Exception:        # compiling is only an optimisation here: keep interpreting
        return None
    return tuple(np.asarray(o) for o in outs)


class _Budget:
    """Time spent interpreting a loop, checked every few steps."""

    def __init__(self):
        self.start, self.steps = time.perf_counter(), 0

    def spent(self):
        self.steps += 1
        return (self.steps % 8 == 0 and LOOP_COMPILE_SECONDS > 0
                and time.perf_counter() - self.start > LOOP_COMPILE_SECONDS)


def _while_impl(*args, cond, body, n_cc, n_bc, checkpoint=None):
    cc, bc, carry = _split(args, n_cc, n_bc)
    budget = _Budget()
    while bool(_run(cond, *cc, *carry)[0]):
        carry = _run(body, *bc, *carry)
        if budget.spent():       # a long loop: run the remaining steps compiled
            rest = _compiled(while_p, cc + bc + list(carry),
                             dict(cond=cond, body=body, n_cc=n_cc, n_bc=n_bc, checkpoint=checkpoint))
            if rest is not None:
                return rest
            budget.start = float("inf")
    return tuple(np.asarray(c) for c in carry)


while_p = define(
    "while_loop", impl=_while_impl, multiple_results=True,
    abstract=lambda *avals, cond, body, n_cc, n_bc, checkpoint=None: tuple(body.out_avals),
    doc="carry = body(body_consts, carry) while cond(cond_consts, carry); inputs "
        "(cond_consts, body_consts, init); outputs the final carry.")


def _scan_impl(*args, body, length, reverse, n_c, n_carry):
    too_big = loop_memory_error(length, body.out_avals[n_carry:])
    if too_big is not None:
        raise too_big
    if length * _count_eqns(body) * EQN_SECONDS > LOOP_COMPILE_SECONDS:
        out = _compiled(scan_p, args, dict(body=body, length=length, reverse=reverse, n_c=n_c,
                                           n_carry=n_carry))
        if out is not None:
            return out
    consts, carry, xs = _split(args, n_c, n_carry)
    ys = [None] * length
    for k in (range(length - 1, -1, -1) if reverse else range(length)):
        out = _run(body, *consts, *carry, *[x[k] for x in xs])
        carry, ys[k] = out[:n_carry], out[n_carry:]
    n_y = len(body.outs) - n_carry
    stacked = [np.stack([np.asarray(y[j]) for y in ys]) if length else
               np.zeros((0,) + a.shape, a.dtype) for j, a in enumerate(body.out_avals[n_carry:])]
    assert len(stacked) == n_y
    return tuple(np.asarray(c) for c in carry) + tuple(stacked)


def _scan_abstract(*avals, body, length, reverse, n_c, n_carry):
    outs = body.out_avals
    return tuple(outs[:n_carry]) + tuple(Aval((length,) + a.shape, a.dtype) for a in outs[n_carry:])


scan_p = define(
    "scan", impl=_scan_impl, abstract=_scan_abstract, multiple_results=True,
    doc="carry, y_k = body(consts, carry, x_k) for k in range(length) (reversed if reverse); "
        "inputs (consts, init, xs); outputs the final carry and the stacked ys.")


def _cond_impl(index, *ops, branches):
    k = int(np.clip(index, 0, len(branches) - 1))
    return tuple(np.asarray(o) for o in _run(branches[k], *ops))


cond_p = define(
    "cond", impl=_cond_impl, multiple_results=True,
    abstract=lambda index, *avals, branches: tuple(branches[0].out_avals),
    doc="branches[index](*operands) with index clamped to the valid range; every branch "
        "takes all operands (the constants captured by any branch included).")


def _while_grad_impl(*args, cond, body, fwd, bwd, n_cc, n_bc, n_carry, res_src, act_bc, act_carry,
                     checkpoint=None):
    """Reverse mode of a while loop: run it again recording residuals on a tape, then sweep
    the tape backwards accumulating cotangents of the body constants."""
    cc, bc, carry, ct = _split(args, n_cc, n_bc, n_carry)
    act_b = [b for b, a in zip(bc, act_bc) if a]
    acc = [np.zeros(np.shape(b), np.asarray(b).dtype) for b in act_b]

    def sweep(tape, acc, ct):
        for res in reversed(tape):
            res = [r if s < 0 else bc[s] for r, s in zip(res, res_src)]
            out = _run(bwd, *res, *ct)
            acc, ct = [a + g for a, g in zip(acc, out[:len(acc)])], out[len(acc):]
        return acc, ct

    def steps(carry, count, tape):
        for _ in range(count):
            out = _run(fwd, *bc, *carry)
            carry = out[:n_carry]
            tape.append(out[n_carry:])
        return carry

    k = checkpoint or 1 << 62
    snapshots, n, tape = [], 0, []      # the carry every k steps (none without checkpoint)
    budget = _Budget()
    while bool(_run(cond, *cc, *carry)[0]):
        if checkpoint and n % k == 0:
            snapshots.append(carry)
        carry = steps(carry, 1, tape if not checkpoint else [])
        n += 1
        if budget.spent():              # a long loop: compile and run the whole thing
            out = _compiled(while_grad_p, args, dict(
                cond=cond, body=body, fwd=fwd, bwd=bwd, n_cc=n_cc, n_bc=n_bc, n_carry=n_carry,
                res_src=res_src, act_bc=act_bc, act_carry=act_carry, checkpoint=checkpoint))
            if out is not None:
                return out
            budget.start = float("inf")
    if not checkpoint:
        acc, ct = sweep(tape, acc, ct)
    for seg in range(len(snapshots) - 1, -1, -1):      # recompute each segment, then sweep it
        tape = []
        steps(snapshots[seg], min(k, n - seg * k), tape)
        acc, ct = sweep(tape, acc, ct)
    return tuple(np.asarray(a) for a in acc) + tuple(np.asarray(c) for c in ct)


def _while_grad_abstract(*avals, cond, body, fwd, bwd, n_cc, n_bc, n_carry, res_src, act_bc,
                         act_carry, checkpoint=None):
    _, bc, carry, _ = _split(avals, n_cc, n_bc, n_carry)
    return (tuple(a for a, f in zip(bc, act_bc) if f)
            + tuple(a for a, f in zip(carry, act_carry) if f))


while_grad_p = define(
    "while_grad", impl=_while_grad_impl, abstract=_while_grad_abstract, multiple_results=True,
    doc="Cotangents of a while loop's active body constants and initial carry, given the "
        "cotangent of its final carry: the loop runs forward again recording the residuals of "
        "`fwd` on a tape that grows as needed, then `bwd` sweeps it backwards. res_src[j] is "
        "the body constant a residual is (>= 0) or -1 when it is taped; `body` (the loop's own "
        "body) is kept for the derivative of while_grad itself.")


# ---- tracing sub-programs ------------------------------------------------------------------

def _strong(a: Aval):
    return Aval(a.shape, a.dtype)


def _as_array(x):
    if isinstance(x, Traced):
        return x
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"loop carries and operands must be arrays or numbers, got {type(x).__name__}")
    return arr


def _trace_sub(fn, avals):
    """Trace fn on tracers of `avals` -> (program with captured constants first, consts,
    output tree, output leaf paths)."""
    box = {}

    def flat(*tracers):
        with_paths, box["tree"] = tree_flatten_with_path(fn(*tracers))
        box["paths"] = [p for p, _ in with_paths]
        return [_as_array(v) for _, v in with_paths]

    prog, consts = trace_flat(flat, avals)
    return prog, consts, box["tree"], box["paths"]


def _check_carry(what, name, init_tree, out_tree, paths, in_avals, out_avals, kind="carry"):
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
            msg = (f"{name} changes the carry leaf {keystr('carry', p)} from {a} to {b}"
                   f"{where(user_frame())}. A loop carry keeps its shape and dtype; convert "
                   "explicitly (e.g. x.astype(...)) or give init the type the body produces.")
        else:
            msg = (f"{name} returns the output leaf {keystr('output', p)} as {b}, the other "
                   f"branches as {a}{where(user_frame())}. Every branch returns the same shapes "
                   "and dtypes; convert explicitly (e.g. x.astype(...)).")
        raise CarryTypeError(f"{what}: {msg}")


def _conform(what, name, out, like):
    """A loop body's result checked against the carry it replaces (pytrees of tracers/values);
    weakly typed leaves (Python numbers) take the carry's dtype."""
    with_paths, out_tree = tree_flatten_with_path(out)
    like_leaves, like_tree = tree_flatten(like)
    paths = [p for p, _ in with_paths]
    outs = [_as_array(v) for _, v in with_paths]
    if out_tree == like_tree:
        outs = [convert(o, aval_of(c).dtype) if aval_of(o).shape == aval_of(c).shape
                and aval_of(o).dtype != aval_of(c).dtype and (aval_of(o).weak or not isinstance(o, Traced))
                else o for o, c in zip(outs, like_leaves)]
    _check_carry(what, name, like_tree, out_tree, paths, [_strong(aval_of(c)) for c in like_leaves],
                 [_strong(aval_of(o)) for o in outs])
    return tree_unflatten(out_tree, outs)


def _fit_carry(prog, avals):
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


def _leaves(tree):
    leaves, td = tree_flatten(tree)
    return [_as_array(v) for v in leaves], td


def _bind(prim, *args, **params):
    if ir.current_trace() is None:          # eager: NumPy scalars for 0-d results
        return tuple(np.asarray(o)[()] for o in prim.impl(*args, **params))
    return ir.bind_staged(prim, *args, **params)


# ---- user API --------------------------------------------------------------------------------

def _every(checkpoint, what, length=None):
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


def while_loop(cond_fun, body_fun, init_val, checkpoint=None):
    """`while cond_fun(val): val = body_fun(val)`, recorded as one loop (Python `while` on a
    traced value cannot be). `val` is any pytree of arrays; its shapes and dtypes stay fixed.
    Differentiable in both modes, with the trip count known only at run time: reverse mode runs
    the loop again recording each step's residuals, or, with `checkpoint=k`, only every k-th
    carry, recomputing each k-step segment in the backward pass (memory O(T/k + k)).

        >>> fg.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0))
        (10, 1024.0)
    """
    init, tree = _leaves(init_val)
    avals = [_strong(aval_of(v)) for v in init]
    unflat = lambda *c: tree_unflatten(tree, list(c))
    cond_prog, cond_consts, _, _ = _trace_sub(lambda *c: cond_fun(unflat(*c)), avals)
    pa = cond_prog.out_avals
    if len(pa) != 1 or pa[0].shape != () or pa[0].dtype != np.bool_:
        got = pa[0] if len(pa) == 1 else f"{len(pa)} values"
        raise CarryTypeError(f"fg.while_loop: cond_fun must return a boolean scalar, it returned "
                             f"{got}{where(user_frame())}")
    body_prog, body_consts, btree, paths = _trace_sub(lambda *c: body_fun(unflat(*c)), avals)
    body_prog = _fit_carry(body_prog, avals)
    _check_carry("fg.while_loop", "body_fun", tree, btree, paths, avals, body_prog.out_avals)
    out = _bind(while_p, *cond_consts, *body_consts, *init, cond=cond_prog, body=body_prog,
                n_cc=len(cond_consts), n_bc=len(body_consts),
                checkpoint=_every(checkpoint, "fg.while_loop"))
    return tree_unflatten(tree, list(out))


def scan(f, init, xs=None, length=None, reverse=False, checkpoint=None):
    """`carry, y = f(carry, x)` for each x in xs (leading axis), returning the final carry and
    the ys stacked: a loop with outputs, recorded once (like jax.lax.scan). `xs` may be None
    with `length` given. Reverse mode stores each step's residuals; `checkpoint=k` keeps only
    every k-th carry and recomputes the steps in between during the backward pass
    (`checkpoint="sqrt"`: k = ceil(sqrt(length)), memory O(sqrt(length)) carries).

        >>> fg.scan(lambda c, x: (c + x, c * x), 0.0, np.arange(4.0))
        (6.0, array([0., 0., 2., 9.]))
    """
    carry, tree = _leaves(init)
    xs_leaves, xtree = tree_flatten(xs)
    xs_leaves = [_as_array(x) for x in xs_leaves]
    lengths = {aval_of(x).shape[0] for x in xs_leaves if aval_of(x).ndim}
    if any(aval_of(x).ndim == 0 for x in xs_leaves):
        raise CarryTypeError("fg.scan: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise CarryTypeError(f"fg.scan: xs leaves and length disagree on the number of steps: "
                             f"{sorted(lengths)}" if lengths else
                             "fg.scan: give xs or length (the number of steps)")
    length = lengths.pop()
    k = _every(checkpoint, "fg.scan", length)
    if k is not None and 1 < k < length:
        return _scan_checkpointed(f, init, xs, length, reverse, k)
    avals = [_strong(aval_of(v)) for v in carry]
    x_avals = [Aval(aval_of(x).shape[1:], aval_of(x).dtype) for x in xs_leaves]
    n = len(avals)
    box = {}

    def body(*args):
        out = f(tree_unflatten(tree, list(args[:n])), tree_unflatten(xtree, list(args[n:])))
        if not (isinstance(out, tuple) and len(out) == 2):
            raise CarryTypeError(f"fg.scan: f must return a pair (carry, y), it returned "
                                 f"{type(out).__name__}{where(user_frame())}")
        with_paths, box["ctree"] = tree_flatten_with_path(out[0])
        ys, box["ytree"] = tree_flatten(out[1])
        box["paths"] = [p for p, _ in with_paths]
        if box["ctree"] != tree:
            _check_carry("fg.scan", "f", tree, box["ctree"], [], [], [])
        return [_as_array(v) for _, v in with_paths] + [_as_array(y) for y in ys]

    prog, consts = trace_flat(body, avals + x_avals)
    prog = _fit_carry(prog, avals)
    _check_carry("fg.scan", "f", tree, box["ctree"], box["paths"], avals, prog.out_avals[:n])
    out = _bind(scan_p, *consts, *carry, *xs_leaves, body=prog, length=length,
                reverse=bool(reverse), n_c=len(consts), n_carry=n)
    return tree_unflatten(tree, list(out[:n])), tree_unflatten(box["ytree"], list(out[n:]))


def _scan_checkpointed(f, init, xs, length, reverse, k):
    """scan in segments of k steps: an outer scan over segments whose body, a k-step scan, is
    rematerialised (fg.checkpoint), so reverse mode stores one carry per segment and the
    residuals of one segment at a time. A remainder of length % k steps runs as its own scan."""
    from .custom import checkpoint as remat
    from .primitives.base import NAMESPACE
    reshape, concat = NAMESPACE["reshape"], NAMESPACE["concatenate"]
    n_seg, rem = divmod(length, k)
    head = lambda x: reshape(x[:n_seg * k], (n_seg, k) + tuple(aval_of(x).shape[1:]))
    xs_head = None if xs is None else _tree_map(head, xs)
    xs_tail = None if xs is None else _tree_map(lambda x: x[n_seg * k:], xs)
    segment = remat(lambda c, xk: scan(f, c, xk, length=k, reverse=reverse))

    def run_head(c):
        c, ys = scan(segment, c, xs_head, length=n_seg, reverse=reverse)
        return c, _tree_map(lambda y: reshape(y, (n_seg * k,) + tuple(aval_of(y).shape[2:])), ys)

    def run_tail(c):
        return scan(f, c, xs_tail, length=rem, reverse=reverse)

    if not rem:
        return run_head(init)
    if reverse:
        c, ys_tail = run_tail(init)
        c, ys_head = run_head(c)
    else:
        c, ys_head = run_head(init)
        c, ys_tail = run_tail(c)
    return c, _tree_map(lambda a, b: concat([a, b]), ys_head, ys_tail)


def _tree_map(fn, *trees):
    leaves = [tree_flatten(t)[0] for t in trees]
    return tree_unflatten(tree_flatten(trees[0])[1], [fn(*ls) for ls in zip(*leaves)])


def fori_loop(lower, upper, body_fun, init_val, checkpoint=None):
    """`for i in range(lower, upper): val = body_fun(i, val)` as one loop. With Python-number
    bounds it is a scan (reverse mode stores per-step residuals); with traced bounds a
    while_loop (reverse mode re-runs the loop once to record them). `checkpoint`: see scan
    and while_loop.

        >>> fg.fori_loop(0, 5, lambda i, x: x * 2.0, 1.0)
        32.0
    """
    def step(c):    # the counter promotes like a Python int: `c + i` keeps an int32 carry int32
        i = convert(c[0], np.int64, weak=True)
        return c[0] + 1, _conform("fg.fori_loop", "body_fun", body_fun(i, c[1]), c[1])
    if not isinstance(lower, Traced) and not isinstance(upper, Traced):
        lo, hi = int(lower), int(upper)
        (_, val), _ = scan(lambda c, _: (step(c), None), (np.int64(lo), init_val), None,
                           length=max(hi - lo, 0), checkpoint=checkpoint)
        return val
    lo = _as_array(lower)
    _, val = while_loop(lambda c: c[0] < upper, step, (lo, init_val), checkpoint=checkpoint)
    return val


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
    ops, tree = _leaves(list(operands))
    avals = [aval_of(v) for v in ops]
    traced = [_trace_sub(lambda *o, br=br: br(*tree_unflatten(tree, list(o))), avals)
              for br in branches]
    t0, paths0 = traced[0][2], traced[0][3]
    for (prog, _, t, _), name in zip(traced[1:], names[1:]):
        _check_carry(what, name, t0, t, [], [], [], kind="output")
    # each output's dtype: that of the first branch returning it as a typed value (not a
    # Python number), so `lambda x: 0.0` fits a float32 branch
    firm = lambda o: not (o.aval.weak or isinstance(o, Lit))
    targets = [_strong(next((p.outs[j].aval for p, *_ in traced if firm(p.outs[j])),
                            traced[0][0].outs[j].aval)) for j in range(len(traced[0][0].outs))]
    # every branch takes every branch's captured constants, then the operands
    all_consts = [c for _, consts, _, _ in traced for c in consts]
    progs, offset = [], 0
    for (prog, consts, _, _), name in zip(traced, names):
        nc = len(consts)
        const_vars, op_vars = prog.in_vars[:nc], prog.in_vars[nc:]
        ins = [Var(aval_of(c)) for c in all_consts]
        ins[offset:offset + nc] = const_vars
        fixed = _fit_carry(Program(ins + op_vars, prog.eqns, prog.outs), targets)
        _check_carry(what, name, t0, t0, paths0, targets, [_strong(a) for a in fixed.out_avals],
                     kind="output")
        progs.append(fixed)
        offset += nc
    idx = convert(index, np.int64)
    out = _bind(cond_p, idx, *all_consts, *ops, branches=tuple(progs))
    return tree_unflatten(t0, list(out))


def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands) if pred else false_fun(*operands)` for a traced scalar `pred`; only
    the chosen branch runs (under fg.vmap with a batched pred both run and results are
    selected per example). For elementwise choices between arrays use fnp.where.

        >>> fg.cond(x > 0, lambda x: fnp.log(x), lambda x: 0.0 * x, x)
    """
    if not isinstance(pred, Traced):
        return true_fun(*operands) if bool(np.asarray(pred)) else false_fun(*operands)
    a = aval_of(pred)
    if a.shape != ():
        raise CarryTypeError(f"fg.cond: pred must be a scalar, got {a}{where(user_frame())}; "
                             "use fnp.where for elementwise selection")
    return _switch(pred if a.dtype == np.bool_ else pred != 0, [false_fun, true_fun], operands,
                   ["false_fun", "true_fun"], "fg.cond")
