"""The loop primitives, while_loop (with while_grad, its reverse mode) and scan, each in one
block with every rule, and their user API: fg.while_loop, fg.scan, fg.fori_loop.

Python `while` on a traced value cannot be recorded (the tracer sees one path), and a Python
`for` loop over a static range unrolls into the program. These functions record the body once
as a sub-program of one equation, so the loop stays a loop: the interpreter runs it with NumPy,
the Numba backend writes a real `while`/`for` around the body's code (backend/loop_emitters.py),
and each rule below transforms the body.

    >>> def newton_sqrt(a):
    ...     return fg.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12 * a,
    ...                          lambda x: 0.5 * (x + a / x), a)
    >>> fg.grad(newton_sqrt)(2.0)        # 1 / (2 sqrt 2), through a dynamic trip count

Forward mode carries tangents alongside the carry (one loop, no storage). Reverse mode:
- scan records each step's residuals as extra stacked outputs of the forward scan, and a second
  scan, in the opposite direction, runs the body's backward half over them; constants'
  cotangents are summed in its carry. Residuals that are constants or scanned inputs are
  read from there instead of being stacked again.
- while_loop's trip count is known only at run time, so its reverse mode is one equation,
  while_grad, that re-runs the loop recording residuals on a tape that grows as needed, then
  sweeps it backwards. Its own derivative (second order) is built from forward mode of the
  body: see `_while_grad_vjp`.
Batching: carries become batched when the body makes them so (a fixed point); a while loop
whose predicate is batched runs until every example is done, finished examples frozen.
A loop that would take long to interpret is handed to the compiler (tiering.compile_loop).
"""
from __future__ import annotations

import numpy as np

from .. import _debug_nans as nan_checks
from .._errors import CarryTypeError, loop_memory_error, user_frame, where
from ..interpreter import eval_program
from ..ir import Aval, Program, Traced, Var, aval_of, bind_staged
from ..ir import split_list as _split
from ..primitives.base import NAMESPACE, batched, convert, define
from ..tiering import compile_loop, loop_is_long
from ..tracer import trace_flat
from ..transforms.batching import vmap_program
from ..transforms.jvp import jvp_program
from ..transforms.vjp import split_program, vjp_program
from ..tree_util import tree_flatten, tree_flatten_with_path, tree_unflatten
from .custom import checkpoint as remat
from .progress import plan as progress_plan, report
from .subprograms import (LoopBudget, active_carry, as_array, bind_loop, check_carry,
                          checkpoint_every, conform, count_eqns, fit_carry, is_float, kept_outputs,
                          leaves_of, padded, run_sub, strong, trace_closed, trace_sub, vmap_to,
                          zeros_for)

__all__ = ["while_loop", "scan", "fori_loop", "while_p", "while_grad_p", "scan_p"]

# what a loop body's trace stands for (the reason ConcretizationError gives)
_SCAN_WHY = ("it is traced inside the body of fg.fori_loop / fg.scan, which funcgrad records "
             "once for all the steps")
_WHILE_WHY = ("it is traced inside fg.while_loop's cond_fun or body_fun (fg.fori_loop with "
              "traced bounds is one), which funcgrad records once for all the steps")


# ---- while_loop ------------------------------------------------------------------------------

def _while_impl(*args, cond, body, n_cc, n_bc, checkpoint=None):
    cc, bc, carry = _split(args, n_cc, n_bc)
    budget = LoopBudget()
    with nan_checks.loop_step("while_loop"):        # (fg.debug_nans reports the step)
        while bool(run_sub(cond, *cc, *carry)[0]):
            nan_checks.next_step()
            carry = run_sub(body, *bc, *carry)
            if budget.spent():       # a long loop: run the remaining steps compiled
                rest = budget.settle(compile_loop(
                    while_p, cc + bc + list(carry),
                    dict(cond=cond, body=body, n_cc=n_cc, n_bc=n_bc, checkpoint=checkpoint)))
                if rest is not None:
                    return rest
    return tuple(np.asarray(c) for c in carry)


def _while_jvp(primals, tangents, *, cond, body, n_cc, n_bc, checkpoint=None):
    cc, bc, init = _split(primals, n_cc, n_bc)
    _, tbc, tinit = _split(tangents, n_cc, n_bc)
    n = len(init)
    wrt_bc = [t is not None for t in tbc]
    float_carry = [is_float(v) for v in body.in_vars[n_bc:]]
    jb = jvp_program(body, wrt_bc + float_carry)      # (bc, carry, tbc, tcarry) -> (carry', tcarry')
    k = sum(wrt_bc)
    ins = jb.in_vars
    jb = Program(ins[:n_bc] + ins[n_bc + n:n_bc + n + k] + ins[n_bc:n_bc + n] + ins[n_bc + n + k:],
                 jb.eqns, jb.outs)
    t_avals = [v.aval for v, f in zip(body.in_vars[n_bc:], float_carry) if f]
    t0 = [t if t is not None else zeros_for(x)
          for x, t, f in zip(init, tinit, float_carry) if f]
    out = bind_staged(while_p, *cc, *bc, *[t for t in tbc if t is not None], *init, *t0,
                      cond=padded(cond, t_avals), body=jb, n_cc=n_cc, n_bc=n_bc + k,
                      checkpoint=checkpoint)
    touts = iter(out[n:])
    return tuple(out[:n]), [next(touts) if f else None for f in float_carry]

def _while_split(ins, flags, *, cond, body, n_cc, n_bc, checkpoint=None):
    out = bind_staged(while_p, *ins, cond=cond, body=body, n_cc=n_cc, n_bc=n_bc,
                      checkpoint=checkpoint)

    def backward(cts):
        cc, bc, init = _split(ins, n_cc, n_bc)
        _, f_bc, f_init = _split(flags, n_cc, n_bc)
        c_act = [f and is_float(v) for f, v in zip(f_bc, body.in_vars[:n_bc])]
        carry_act, _ = active_carry(body, c_act, f_init)
        ct_final = [c if c is not None else zeros_for(o)
                    for c, o, a in zip(cts, out, carry_act) if a]
        grads = while_grad(cond, body, cc, bc, init, ct_final, c_act, carry_act, checkpoint)
        it = iter(grads)
        return ([None] * n_cc + [next(it) if a else None for a in c_act]
                + [next(it) if a else None for a in carry_act])
    return out, backward

def _carry_flags(cond, body, f_cc, f_bc, f_init, size):
    """Which carries a batched loop must batch (a fixed point); all of them when the
    predicate is batched."""
    carry_b = list(f_init)
    while True:
        _, pf = vmap_program(cond, f_cc + carry_b, size, with_flags=True)
        if pf[0]:
            return [True] * len(carry_b)
        _, of = vmap_program(body, f_bc + carry_b, size, with_flags=True)
        new = [a or b for a, b in zip(carry_b, of)]
        if new == carry_b:
            return carry_b
        carry_b = new

def _batched_loop(cond, body, cc, bc, f_cc, f_bc, carry_b, size):
    """(cond, body, body constants) of the batched loop. When the predicate is batched, the
    loop runs while any example is still going and finished examples are frozen: the body
    keeps their carry (a select on the example's own predicate), so the cond constants
    become body constants too."""
    n_cc = len(cc)
    bcond, pf = vmap_program(cond, f_cc + carry_b, size, with_flags=True)
    bbody = vmap_to(body, f_bc + carry_b, carry_b, size)
    if not pf[0]:
        return bcond, bbody, list(bc)
    where, reshape, any_ = NAMESPACE["where"], NAMESPACE["reshape"], NAMESPACE["any"]

    def cond2(*args):
        return [any_(eval_program(bcond, *args)[0])]

    def body2(*args):
        c_cc, c_bc, carry = _split(args, n_cc, len(bc))
        pred = eval_program(bcond, *c_cc, *carry)[0]
        new = eval_program(bbody, *c_bc, *carry)
        return [where(reshape(pred, (size,) + (1,) * (aval_of(c).ndim - 1)), nw, c)
                for nw, c in zip(new, carry)]
    c_avals = bbody.in_avals[len(bc):]
    return (trace_closed(cond2, [aval_of(x) for x in cc] + c_avals),
            trace_closed(body2, [aval_of(x) for x in cc + bc] + c_avals), list(cc) + list(bc))

def _while_batch(ins, fl, size, *, cond, body, n_cc, n_bc, checkpoint=None):
    cc, bc, init = _split(ins, n_cc, n_bc)
    f_cc, f_bc, f_init = _split(fl, n_cc, n_bc)
    carry_b = _carry_flags(cond, body, f_cc, f_bc, f_init, size)
    init = [batched(x, f, size) if b else x for x, f, b in zip(init, f_init, carry_b)]
    cond2, body2, consts = _batched_loop(cond, body, cc, bc, f_cc, f_bc, carry_b, size)
    out = bind_staged(while_p, *cc, *consts, *init, cond=cond2, body=body2, n_cc=n_cc,
                      n_bc=len(consts), checkpoint=checkpoint)
    return [batched(o, b, size) for o, b in zip(out, carry_b)]


while_p = define(
    "while_loop", impl=_while_impl, multiple_results=True, exact=True,   # (as its body)
    abstract=lambda *avals, cond, body, n_cc, n_bc, checkpoint=None: tuple(body.out_avals),
    invariants=lambda eqn: _loop_invariants(eqn),
    jvp=_while_jvp, vjp_split=_while_split, batch=_while_batch,
    doc="carry = body(body_consts, carry) while cond(cond_consts, carry); inputs "
        "(cond_consts, body_consts, init); outputs the final carry.")


# ---- while_grad: reverse mode of while_loop ------------------------------------------------

def _while_grad_impl(*args, cond, body, fwd, bwd, n_cc, n_bc, n_carry, res_src, act_bc, act_carry,
                     checkpoint=None):
    """Reverse mode of a while loop: run it again recording residuals on a tape, then sweep
    the tape backwards accumulating cotangents of the body constants."""
    cc, bc, carry, ct = _split(args, n_cc, n_bc, n_carry)
    act_b = [b for b, a in zip(bc, act_bc) if a]
    acc = [np.zeros(np.shape(b), np.asarray(b).dtype) for b in act_b]

    def sweep(tape, acc, ct, first):
        for j in range(len(tape) - 1, -1, -1):
            nan_checks.next_step(first + j)
            res = [r if s < 0 else bc[s] for r, s in zip(tape[j], res_src)]
            out = run_sub(bwd, *res, *ct)
            acc, ct = [a + g for a, g in zip(acc, out[:len(acc)])], out[len(acc):]
        return acc, ct

    def steps(carry, first, count, tape):
        for j in range(count):
            nan_checks.next_step(first + j)
            out = run_sub(fwd, *bc, *carry)
            carry = out[:n_carry]
            tape.append(out[n_carry:])
        return carry

    k = checkpoint or 1 << 62
    snapshots, n, tape = [], 0, []      # the carry every k steps (none without checkpoint)
    budget = LoopBudget()
    with nan_checks.loop_step("while_loop"):        # (fg.debug_nans reports the step)
        while bool(run_sub(cond, *cc, *carry)[0]):
            if checkpoint and n % k == 0:
                snapshots.append(carry)
            carry = steps(carry, n, 1, tape if not checkpoint else [])
            n += 1
            if budget.spent():              # a long loop: compile and run the whole thing
                out = budget.settle(compile_loop(while_grad_p, args, dict(
                    cond=cond, body=body, fwd=fwd, bwd=bwd, n_cc=n_cc, n_bc=n_bc, n_carry=n_carry,
                    res_src=res_src, act_bc=act_bc, act_carry=act_carry, checkpoint=checkpoint)))
                if out is not None:
                    return out
        if not checkpoint:
            acc, ct = sweep(tape, acc, ct, 0)
        for seg in range(len(snapshots) - 1, -1, -1):      # recompute each segment, then sweep it
            tape = []
            steps(snapshots[seg], seg * k, min(k, n - seg * k), tape)
            acc, ct = sweep(tape, acc, ct, seg * k)
    return tuple(np.asarray(a) for a in acc) + tuple(np.asarray(c) for c in ct)

def _while_grad_abstract(*avals, cond, body, fwd, bwd, n_cc, n_bc, n_carry, res_src, act_bc,
                         act_carry, checkpoint=None):
    _, bc, carry, _ = _split(avals, n_cc, n_bc, n_carry)
    return (tuple(a for a, f in zip(bc, act_bc) if f)
            + tuple(a for a, f in zip(carry, act_carry) if f))


def while_grad(cond, body, cc, bc, init, ct_final, c_act, carry_act, checkpoint=None):
    """Bind while_grad: cotangents of the active body constants and initial carries."""
    n_bc, n = len(bc), len(init)
    joint = vjp_program(body, list(c_act) + list(carry_act), list(carry_act))
    fwd, bwd, _ = split_program(joint, n_bc + n, n)
    const_ids = {v.id: k for k, v in enumerate(fwd.in_vars[:n_bc])}
    res_src = tuple(const_ids.get(r.id, -1) for r in fwd.outs[n:])
    return bind_staged(while_grad_p, *cc, *bc, *init, *ct_final, cond=cond, body=body, fwd=fwd, bwd=bwd,
                       n_cc=len(cc), n_bc=n_bc, n_carry=n, res_src=res_src,
                       act_bc=tuple(c_act), act_carry=tuple(carry_act), checkpoint=checkpoint)

def _while_grad_vjp(cts, *ins, out, cond, body, fwd, bwd, n_cc, n_bc, n_carry, res_src,
                    act_bc, act_carry, checkpoint=None):
    """while_grad(x, ct) = J(x)^T ct, with J the Jacobian of the loop. For cotangents w of its
    outputs: the cotangent of ct is J w (forward mode through the loop), and that of x is the
    gradient of <ct, J(x) w>, reverse mode through the forward-mode loop. Both are loops again,
    so every order of derivative stays a loop."""
    ctf = _split(ins, n_cc, n_bc, n_carry)[3]
    w = iter([c if c is not None else zeros_for(o) for c, o in zip(cts, out)])
    t_bc = [next(w) if a else None for a in act_bc]
    t_init = [next(w) if a else None for a in act_carry]
    float_carry = [is_float(v) for v in body.in_vars[n_bc:]]
    mul, total = NAMESPACE["multiply"], NAMESPACE["sum"]

    def inner(*args):
        a_cc, a_bc, a_init, a_ct = _split(args, n_cc, n_bc, n_carry)
        _, touts = _while_jvp(a_cc + a_bc + a_init, [None] * n_cc + t_bc + t_init,
                              cond=cond, body=body, n_cc=n_cc, n_bc=n_bc)
        act_t = [t for t, a in zip(touts, act_carry) if a]
        return [sum(total(mul(c, t)) for c, t in zip(a_ct, act_t))]

    prog, consts = trace_flat(inner, [aval_of(x) for x in ins])
    n_k = len(consts)
    # every float input matters here, also those that were inactive when while_grad was built
    wrt = ([False] * (n_k + n_cc) + [is_float(v) for v in body.in_vars[:n_bc]]
           + float_carry + [True] * len(ctf))
    joint = vjp_program(prog, wrt, [True])
    seed = np.ones((), prog.out_avals[0].dtype)
    grads = iter(eval_program(joint, *consts, *ins, seed)[1:])
    return [None] * n_cc + [next(grads) if w_ else None for w_ in wrt[n_k + n_cc:]]

def _while_grad_batch(ins, fl, size, *, cond, body, fwd, bwd, n_cc, n_bc, n_carry, res_src,
                      act_bc, act_carry, checkpoint=None):
    """Per-example cotangents: the active body constants, every carry and the output
    cotangents get the batch axis (a constant shared by all examples still has one cotangent
    per example), then the reverse pass of the batched loop, frozen lanes included."""
    cc, bc, init, ct = _split(ins, n_cc, n_bc, n_carry)
    f_cc, f_bc, f_init, f_ct = _split(fl, n_cc, n_bc, n_carry)
    f_bc2 = [f or a for f, a in zip(f_bc, act_bc)]
    bc = [batched(x, f, size) if g else x for x, f, g in zip(bc, f_bc, f_bc2)]
    init = [batched(x, f, size) for x, f in zip(init, f_init)]
    ct = [batched(x, f, size) for x, f in zip(ct, f_ct)]
    carry_b = [True] * n_carry
    cond2, body2, consts = _batched_loop(cond, body, cc, bc, f_cc, f_bc2, carry_b, size)
    c_act = [False] * (len(consts) - n_bc) + list(act_bc)
    return list(while_grad(cond2, body2, cc, consts, init, ct, c_act, act_carry, checkpoint))


while_grad_p = define(
    "while_grad", impl=_while_grad_impl, abstract=_while_grad_abstract, multiple_results=True,
    vjp=_while_grad_vjp, batch=_while_grad_batch,
    stored=lambda p: (None, p["fwd"], [r for r, s in zip(p["fwd"].outs[p["n_carry"]:], p["res_src"])
                                        if s < 0]),
    doc="Cotangents of a while loop's active body constants and initial carry, given the "
        "cotangent of its final carry: the loop runs forward again recording the residuals of "
        "`fwd` on a tape that grows as needed, then `bwd` sweeps it backwards. res_src[j] is "
        "the body constant a residual is (>= 0) or -1 when it is taped; `body` (the loop's own "
        "body) is kept for the derivative of while_grad itself.")


# ---- scan -------------------------------------------------------------------------------------

def _scan_impl(*args, body, length, reverse, n_c, n_carry):
    too_big = loop_memory_error(length, body.out_avals[n_carry:])
    if too_big is not None:
        raise too_big
    if loop_is_long(length, count_eqns(body)):
        out = compile_loop(scan_p, args, dict(body=body, length=length, reverse=reverse, n_c=n_c,
                                              n_carry=n_carry))
        if out is not None:
            return out
    consts, carry, xs = _split(args, n_c, n_carry)
    ys = [None] * length
    with nan_checks.loop_step("scan"):
        for k in (range(length - 1, -1, -1) if reverse else range(length)):
            nan_checks.next_step(k)
            out = run_sub(body, *consts, *carry, *[x[k] for x in xs])
            carry, ys[k] = out[:n_carry], out[n_carry:]
    n_y = len(body.outs) - n_carry
    stacked = [np.stack([np.asarray(y[j]) for y in ys]) if length else
               np.zeros((0,) + a.shape, a.dtype) for j, a in enumerate(body.out_avals[n_carry:])]
    assert len(stacked) == n_y
    return tuple(np.asarray(c) for c in carry) + tuple(stacked)

def _scan_abstract(*avals, body, length, reverse, n_c, n_carry):
    outs = body.out_avals
    return tuple(outs[:n_carry]) + tuple(Aval((length,) + a.shape, a.dtype) for a in outs[n_carry:])


def _scan_jvp(primals, tangents, *, body, length, reverse, n_c, n_carry):
    c, init, xs = _split(primals, n_c, n_carry)
    tc, tinit, txs = _split(tangents, n_c, n_carry)
    n, n_x = n_carry, len(xs)
    n_y = len(body.outs) - n
    wc = [t is not None for t in tc]
    fc = [is_float(v) for v in body.in_vars[n_c:n_c + n]]
    wx = [t is not None for t in txs]
    jb = jvp_program(body, wc + fc + wx)
    k, m = sum(wc), sum(fc)
    ins, base = jb.in_vars, n_c + n + n_x
    ins = (ins[:n_c] + ins[base:base + k] + ins[n_c:n_c + n] + ins[base + k:base + k + m]
           + ins[n_c + n:base] + ins[base + k + m:])
    outs = jb.outs
    fy = [o.aval.is_float for o in body.outs[n:]]
    my = sum(fy)
    outs = outs[:n] + outs[n + n_y:n + n_y + m] + outs[n:n + n_y] + outs[n + n_y + m:]
    jb = Program(ins, jb.eqns, outs)
    t0 = [t if t is not None else zeros_for(x) for x, t, f in zip(init, tinit, fc) if f]
    res = bind_staged(scan_p, *c, *[t for t in tc if t is not None], *init, *t0, *xs,
                      *[t for t in txs if t is not None], body=jb, length=length,
                      reverse=reverse, n_c=n_c + k, n_carry=n + m)
    carry, tcarry = res[:n], iter(res[n:n + m])
    ys, tys = res[n + m:n + m + n_y], iter(res[n + m + n_y:])
    assert len(res) == n + m + n_y + my
    return (tuple(carry) + tuple(ys),
            [next(tcarry) if f else None for f in fc] + [next(tys) if f else None for f in fy])

def _scan_split(ins, flags, *, body, length, reverse, n_c, n_carry):
    c, _, xs = _split(ins, n_c, n_carry)
    f_c, f_init, f_xs = _split(flags, n_c, n_carry)
    n, n_x, n_y = n_carry, len(xs), len(body.outs) - n_carry
    c_act = [f and is_float(v) for f, v in zip(f_c, body.in_vars[:n_c])]
    x_act = [f and is_float(v) for f, v in zip(f_xs, body.in_vars[n_c + n:])]
    carry_act, y_act = active_carry(body, c_act, f_init, x_act)
    joint = vjp_program(body, c_act + carry_act + x_act, carry_act + y_act)
    fwd, bwd, _ = split_program(joint, n_c + n + n_x, n + n_y)
    where_c = {v.id: k for k, v in enumerate(fwd.in_vars[:n_c])}
    where_x = {v.id: k for k, v in enumerate(fwd.in_vars[n_c + n:])}
    residuals = fwd.outs[n + n_y:]
    taped = [r for r in residuals if r.id not in where_c and r.id not in where_x]
    body_f = Program(fwd.in_vars, fwd.eqns, fwd.outs[:n + n_y] + taped)
    out = bind_staged(scan_p, *ins, body=body_f, length=length, reverse=reverse,
                      n_c=n_c, n_carry=n)
    primal, stacks = out[:n + n_y], out[n + n_y:]

    def backward(cts):
        ct_carry = [ct if ct is not None else zeros_for(o)
                    for ct, o, a in zip(cts[:n], primal[:n], carry_act) if a]
        ct_ys = [ct if ct is not None else zeros_for(o)
                 for ct, o, a in zip(cts[n:], primal[n:], y_act) if a]
        acc0 = [zeros_for(x) for x, a in zip(c, c_act) if a]
        n_ct, n_acc, n_t = len(ct_carry), len(acc0), len(taped)

        def step(*args):
            rc, ctc, acc, tr, xr, cty = _split(args, n_c, n_ct, n_acc, n_t, n_x)
            it = iter(tr)
            res = [rc[where_c[r.id]] if r.id in where_c else
                   xr[where_x[r.id]] if r.id in where_x else next(it) for r in residuals]
            g = eval_program(bwd, *res, *ctc, *cty)    # (ct consts, ct carry, ct xs)
            g_c, g_carry, g_x = _split(g, n_acc, n_ct)
            return list(g_carry) + [a + b for a, b in zip(acc, g_c)] + list(g_x)

        slice_avals = lambda arrs: [Aval(aval_of(a).shape[1:], aval_of(a).dtype) for a in arrs]
        avals = ([aval_of(x) for x in c] + [aval_of(x) for x in ct_carry + acc0]
                 + slice_avals(stacks) + slice_avals(xs) + slice_avals(ct_ys))
        back = bind_staged(scan_p, *c, *ct_carry, *acc0, *stacks, *xs, *ct_ys,
                           body=trace_closed(step, avals), length=length, reverse=not reverse,
                           n_c=n_c, n_carry=n_ct + n_acc)
        g_carry, g_c, g_x = _split(back, n_ct, n_acc)
        ic, igc, igx = iter(g_c), iter(g_carry), iter(g_x)
        return ([next(ic) if a else None for a in c_act] + [next(igc) if a else None for a in carry_act]
                + [next(igx) if a else None for a in x_act])
    return tuple(primal), backward

def _scan_batch(ins, fl, size, *, body, length, reverse, n_c, n_carry):
    c, init, xs = _split(ins, n_c, n_carry)
    f_c, f_init, f_xs = _split(fl, n_c, n_carry)
    n, n_y = n_carry, len(body.outs) - n_carry
    carry_b = list(f_init)
    while True:
        _, of = vmap_program(body, f_c + carry_b + f_xs, size, with_flags=True)
        new = [a or b for a, b in zip(carry_b, of[:n])]
        if new == carry_b:
            break
        carry_b = new
    moveaxis = NAMESPACE["moveaxis"]
    init = [batched(x, f, size) if b else x for x, f, b in zip(init, f_init, carry_b)]
    xs = [moveaxis(x, 0, 1) if f else x for x, f in zip(xs, f_xs)]   # scan axis first
    bbody = vmap_to(body, f_c + carry_b + f_xs, carry_b + [True] * n_y, size)
    out = bind_staged(scan_p, *c, *init, *xs, body=bbody, length=length, reverse=reverse,
                      n_c=n_c, n_carry=n)
    return ([batched(o, b, size) for o, b in zip(out[:n], carry_b)]
            + [moveaxis(y, 1, 0) for y in out[n:]])


def _scan_prune(eqn, used):
    """The scan without the stacked outputs nothing reads (the carries all stay)."""
    n = eqn.params["n_carry"]
    keep = [k for k, u in enumerate(used) if k < n or u]
    if len(keep) == len(used) or not keep:
        return None
    return kept_outputs(eqn, "body", keep)


def _scan_aliases(eqn):
    """Stacked outputs of the same body value: each is the first of them."""
    n, first, same = eqn.params["n_carry"], {}, {}
    for k, b in enumerate(eqn.params["body"].outs[n:], n):
        if isinstance(b, Var):
            same[k] = first.setdefault(b.id, k)
    return {k: j for k, j in same.items() if k != j}


def _loop_invariants(eqn):
    """(output, input) of the carries whose body passes them through unchanged."""
    p = eqn.params
    if eqn.prim is scan_p:
        first, n, skip = p["n_c"], p["n_carry"], p["n_c"]
    else:
        first, n = p["n_cc"] + p["n_bc"], len(eqn.outputs)
        skip = p["n_bc"]                     # (the body's inputs: its consts, then the carry)
    body = p["body"]
    return [(j, first + j) for j in range(n) if body.outs[j] is body.in_vars[skip + j]]


scan_p = define(
    "scan", impl=_scan_impl, abstract=_scan_abstract, multiple_results=True, exact=True,
    jvp=_scan_jvp, vjp_split=_scan_split, batch=_scan_batch, prune=_scan_prune,
    aliases=_scan_aliases, invariants=_loop_invariants,
    stored=lambda p: (p["length"], p["body"], p["body"].outs[p["n_carry"]:]),
    doc="carry, y_k = body(consts, carry, x_k) for k in range(length) (reversed if reverse); "
        "inputs (consts, init, xs); outputs the final carry and the stacked ys.")


# ---- user API ---------------------------------------------------------------------------------

def while_loop(cond_fun, body_fun, init_val, checkpoint=None, progress=None):
    """`while cond_fun(val): val = body_fun(val)`, recorded as one loop (Python `while` on a
    traced value cannot be). `val` is any pytree of arrays; its shapes and dtypes stay fixed.
    Differentiable in both modes, with the trip count known only at run time: reverse mode runs
    the loop again recording each step's residuals, or, with `checkpoint=k`, only every k-th
    carry, recomputing each k-step segment in the backward pass (memory O(T/k + k)).

    `progress` (True: every 1,000 steps; a step interval; or fn(step, None)): progress
    reports, also from compiled code (funcgrad/higher_order/progress.py).

        >>> fg.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0))
        (10, 1024.0)
    """
    if progress is not None and progress is not False:
        every, reporter = progress_plan(progress, None, "fg.while_loop")

        def counted(c):
            new = body_fun(c[1])
            report(c[0] + 1, every, None, reporter)
            return c[0] + 1, new
        return while_loop(lambda c: cond_fun(c[1]), counted, (np.int64(0), init_val),
                          checkpoint)[1]
    init, tree = leaves_of(init_val)
    avals = [strong(aval_of(v)) for v in init]
    unflat = lambda *c: tree_unflatten(tree, list(c))
    cond_prog, cond_consts, _, _ = trace_sub(lambda *c: cond_fun(unflat(*c)), avals, _WHILE_WHY)
    pa = cond_prog.out_avals
    if len(pa) != 1 or pa[0].shape != () or pa[0].dtype != np.bool_:
        got = pa[0] if len(pa) == 1 else f"{len(pa)} values"
        raise CarryTypeError(f"fg.while_loop: cond_fun must return a boolean scalar, it returned "
                             f"{got}{where(user_frame())}")
    body_prog, body_consts, btree, paths = trace_sub(lambda *c: body_fun(unflat(*c)), avals,
                                                     _WHILE_WHY)
    body_prog = fit_carry(body_prog, avals)
    check_carry("fg.while_loop", "body_fun", tree, btree, paths, avals, body_prog.out_avals)
    out = bind_loop(while_p, *cond_consts, *body_consts, *init, cond=cond_prog, body=body_prog,
                n_cc=len(cond_consts), n_bc=len(body_consts),
                checkpoint=checkpoint_every(checkpoint, "fg.while_loop"))
    return tree_unflatten(tree, list(out))

def scan(f, init, xs=None, length=None, reverse=False, checkpoint=None, progress=None):
    """`carry, y = f(carry, x)` for each x in xs (leading axis), returning the final carry and
    the ys stacked: a loop with outputs, recorded once (like jax.lax.scan). `xs` may be None
    with `length` given. Reverse mode stores each step's residuals; `checkpoint=k` keeps only
    every k-th carry and recomputes the steps in between during the backward pass
    (`checkpoint="sqrt"`: k = ceil(sqrt(length)), memory O(sqrt(length)) carries).
    `progress` (True, a step interval, or fn(step, total)): progress reports, also from
    compiled code (funcgrad/higher_order/progress.py).

        >>> fg.scan(lambda c, x: (c + x, c * x), 0.0, np.arange(4.0))
        (6.0, array([0., 0., 2., 9.]))
    """
    if progress is not None and progress is not False:
        n = length if length is not None else len(tree_flatten(xs)[0][0])
        reports = progress_plan(progress, n, "fg.scan")

        def counted(c, x):
            carry, y = f(c[1], x)
            report(c[0] + 1, reports[0], n, reports[1])
            return (c[0] + 1, carry), y
        (_, final), ys = scan(counted, (np.int64(0), init), xs, length, reverse, checkpoint)
        return final, ys
    carry, tree = leaves_of(init)
    xs_leaves, xtree = tree_flatten(xs)
    xs_leaves = [as_array(x) for x in xs_leaves]
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
    k = checkpoint_every(checkpoint, "fg.scan", length)
    if k is not None and 1 < k < length:
        return _scan_checkpointed(f, init, xs, length, reverse, k)
    avals = [strong(aval_of(v)) for v in carry]
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
            check_carry("fg.scan", "f", tree, box["ctree"], [], [], [])
        return [as_array(v) for _, v in with_paths] + [as_array(y) for y in ys]

    prog, consts = trace_flat(body, avals + x_avals, why=_SCAN_WHY)
    prog = fit_carry(prog, avals)
    check_carry("fg.scan", "f", tree, box["ctree"], box["paths"], avals, prog.out_avals[:n])
    out = bind_loop(scan_p, *consts, *carry, *xs_leaves, body=prog, length=length,
                reverse=bool(reverse), n_c=len(consts), n_carry=n)
    return tree_unflatten(tree, list(out[:n])), tree_unflatten(box["ytree"], list(out[n:]))


def _scan_checkpointed(f, init, xs, length, reverse, k):
    """scan in segments of k steps: an outer scan over segments whose body, a k-step scan, is
    rematerialised (fg.checkpoint), so reverse mode stores one carry per segment and the
    residuals of one segment at a time. A remainder of length % k steps runs as its own scan."""
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

def fori_loop(lower, upper, body_fun, init_val, checkpoint=None, progress=None):
    """`for i in range(lower, upper): val = body_fun(i, val)` as one loop. With Python-number
    bounds it is a scan (reverse mode stores per-step residuals); with traced bounds a
    while_loop (reverse mode re-runs the loop once to record them). `checkpoint`: see scan
    and while_loop. `progress` (True, a step interval, or fn(step, total)) reports progress
    from compiled code too (funcgrad/higher_order/progress.py).

        >>> fg.fori_loop(0, 5, lambda i, x: x * 2.0, 1.0)
        32.0
    """
    static = not isinstance(lower, Traced) and not isinstance(upper, Traced)
    total = max(int(upper) - int(lower), 0) if static else None
    reports = progress_plan(progress, total, "fg.fori_loop")

    def step(c):    # the counter promotes like a Python int: `c + i` keeps an int32 carry int32
        i = convert(c[0], np.int64, weak=True)
        new = conform("fg.fori_loop", "body_fun", body_fun(i, c[1]), c[1])
        if reports is not None:
            report(c[0] + 1 - lower, reports[0], total, reports[1])
        return c[0] + 1, new
    if static:
        lo = int(lower)
        (_, val), _ = scan(lambda c, _: (step(c), None), (np.int64(lo), init_val), None,
                           length=total, checkpoint=checkpoint)
        return val
    lo = as_array(lower)
    _, val = while_loop(lambda c: c[0] < upper, step, (lo, init_val), checkpoint=checkpoint)
    return val
