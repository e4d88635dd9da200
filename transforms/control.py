"""Transform rules of the control-flow primitives (funcgrad/control.py): forward mode, reverse
mode and batching of while_loop, scan and cond, each by transforming the sub-programs.

Forward mode carries tangents alongside the carry (one loop, no storage). Reverse mode:
- scan records each step's residuals as extra stacked outputs of the forward scan, and a second
  scan, in the opposite direction, runs the body's backward half over them; constants'
  cotangents are summed in its carry. Residuals that are constants or scanned inputs are
  read from there instead of being stacked again.
- while_loop's trip count is known only at run time, so its reverse mode is one equation,
  while_grad, that re-runs the loop recording residuals on a tape that grows as needed, then
  sweeps it backwards. Its own derivative (second order) is built from forward mode of the
  body: see `_while_grad_vjp`.
- cond differentiates each branch (the chosen branch's forward is recomputed in backward).
Batching: carries become batched when the body makes them so (a fixed point); a while loop
whose predicate is batched runs until every example is done, finished examples frozen; a
cond with a batched predicate runs every branch and selects per example.
These rules live here, not beside the primitives, because they are transforms of programs.
"""
from __future__ import annotations

import numpy as np

from ..control import cond_p, scan_p, while_grad_p, while_p
from ..interpreter import eval_program
from ..ir import Aval, Program, Var, aval_of, bind_staged
from ..ir import split_list as _split
from ..primitives.base import NAMESPACE, broadcast_in_dim, zeros_like_aval
from ..tracer import trace_flat
from .jvp import jvp_program
from .vjp import active_vars, split_program, vjp_program
from .vmap import vmap_program

__all__ = []


def _trace(fn, avals):
    prog, consts = trace_flat(fn, avals)
    assert not consts, "internal error: a control-flow rule captured outer values"
    return prog


def _padded(prog, extra_avals):
    """prog with unused inputs of `extra_avals` appended."""
    return Program(list(prog.in_vars) + [Var(a) for a in extra_avals], prog.eqns, prog.outs)


def _zeros_for(x):
    return zeros_like_aval(aval_of(x))


def _is_float(v):
    return v.aval.is_float


def _active_carry(body, c_act, carry_act, x_act=()):
    """Fixed point: a carry is active if its initial value is, or the body makes it depend on
    an active input. Returns (active carries, active extra outputs)."""
    n = len(carry_act)
    act = [a and _is_float(v) for a, v in zip(carry_act, body.in_vars[len(c_act):])]
    while True:
        live = active_vars(body, list(c_act) + act + list(x_act))
        out = [isinstance(o, Var) and o.id in live for o in body.outs]
        new = [a or o for a, o in zip(act, out[:n])]
        if new == act:
            return act, out[n:]
        act = new


def _vmap_to(prog, in_flags, want, size):
    """vmap_program whose outputs are batched exactly where `want` says (broadcasting outputs
    that came out unbatched); every wanted-unbatched output must be unbatched."""
    bprog, got = vmap_program(prog, in_flags, size, with_flags=True)
    assert all(w or not g for w, g in zip(want, got)), "internal error: batched carry not allowed"
    if list(got) == list(want):
        return bprog

    def fix(*args):
        res = eval_program(bprog, *args)
        return [_batched(r, False, size) if w and not g else r for r, w, g in zip(res, want, got)]
    return _trace(fix, bprog.in_avals)


def _batched(x, flag, size):
    if flag:
        return x
    a = aval_of(x)
    return broadcast_in_dim(x, (size,) + a.shape, tuple(range(1, 1 + a.ndim)), force=True)


# ---- while_loop ------------------------------------------------------------------------------

def _while_jvp(primals, tangents, *, cond, body, n_cc, n_bc, checkpoint=None):
    cc, bc, init = _split(primals, n_cc, n_bc)
    _, tbc, tinit = _split(tangents, n_cc, n_bc)
    n = len(init)
    wrt_bc = [t is not None for t in tbc]
    float_carry = [_is_float(v) for v in body.in_vars[n_bc:]]
    jb = jvp_program(body, wrt_bc + float_carry)      # (bc, carry, tbc, tcarry) -> (carry', tcarry')
    k = sum(wrt_bc)
    ins = jb.in_vars
    jb = Program(ins[:n_bc] + ins[n_bc + n:n_bc + n + k] + ins[n_bc:n_bc + n] + ins[n_bc + n + k:],
                 jb.eqns, jb.outs)
    t_avals = [v.aval for v, f in zip(body.in_vars[n_bc:], float_carry) if f]
    t0 = [t if t is not None else _zeros_for(x)
          for x, t, f in zip(init, tinit, float_carry) if f]
    out = bind_staged(while_p, *cc, *bc, *[t for t in tbc if t is not None], *init, *t0,
                      cond=_padded(cond, t_avals), body=jb, n_cc=n_cc, n_bc=n_bc + k,
                      checkpoint=checkpoint)
    touts = iter(out[n:])
    return tuple(out[:n]), [next(touts) if f else None for f in float_carry]


def _while_split(ins, flags, *, cond, body, n_cc, n_bc, checkpoint=None):
    out = bind_staged(while_p, *ins, cond=cond, body=body, n_cc=n_cc, n_bc=n_bc,
                      checkpoint=checkpoint)

    def backward(cts):
        cc, bc, init = _split(ins, n_cc, n_bc)
        _, f_bc, f_init = _split(flags, n_cc, n_bc)
        c_act = [f and _is_float(v) for f, v in zip(f_bc, body.in_vars[:n_bc])]
        carry_act, _ = _active_carry(body, c_act, f_init)
        ct_final = [c if c is not None else _zeros_for(o)
                    for c, o, a in zip(cts, out, carry_act) if a]
        grads = while_grad(cond, body, cc, bc, init, ct_final, c_act, carry_act, checkpoint)
        it = iter(grads)
        return ([None] * n_cc + [next(it) if a else None for a in c_act]
                + [next(it) if a else None for a in carry_act])
    return out, backward


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
    w = iter([c if c is not None else _zeros_for(o) for c, o in zip(cts, out)])
    t_bc = [next(w) if a else None for a in act_bc]
    t_init = [next(w) if a else None for a in act_carry]
    float_carry = [_is_float(v) for v in body.in_vars[n_bc:]]
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
    wrt = ([False] * (n_k + n_cc) + [_is_float(v) for v in body.in_vars[:n_bc]]
           + float_carry + [True] * len(ctf))
    joint = vjp_program(prog, wrt, [True])
    seed = np.ones((), prog.out_avals[0].dtype)
    grads = iter(eval_program(joint, *consts, *ins, seed)[1:])
    return [None] * n_cc + [next(grads) if w_ else None for w_ in wrt[n_k + n_cc:]]




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
    bbody = _vmap_to(body, f_bc + carry_b, carry_b, size)
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
    return (_trace(cond2, [aval_of(x) for x in cc] + c_avals),
            _trace(body2, [aval_of(x) for x in cc + bc] + c_avals), list(cc) + list(bc))


def _while_batch(ins, fl, size, *, cond, body, n_cc, n_bc, checkpoint=None):
    cc, bc, init = _split(ins, n_cc, n_bc)
    f_cc, f_bc, f_init = _split(fl, n_cc, n_bc)
    carry_b = _carry_flags(cond, body, f_cc, f_bc, f_init, size)
    init = [_batched(x, f, size) if b else x for x, f, b in zip(init, f_init, carry_b)]
    cond2, body2, consts = _batched_loop(cond, body, cc, bc, f_cc, f_bc, carry_b, size)
    out = bind_staged(while_p, *cc, *consts, *init, cond=cond2, body=body2, n_cc=n_cc,
                      n_bc=len(consts), checkpoint=checkpoint)
    return [_batched(o, b, size) for o, b in zip(out, carry_b)]


def _while_grad_batch(ins, fl, size, *, cond, body, fwd, bwd, n_cc, n_bc, n_carry, res_src,
                      act_bc, act_carry, checkpoint=None):
    """Per-example cotangents: the active body constants, every carry and the output
    cotangents get the batch axis (a constant shared by all examples still has one cotangent
    per example), then the reverse pass of the batched loop, frozen lanes included."""
    cc, bc, init, ct = _split(ins, n_cc, n_bc, n_carry)
    f_cc, f_bc, f_init, f_ct = _split(fl, n_cc, n_bc, n_carry)
    f_bc2 = [f or a for f, a in zip(f_bc, act_bc)]
    bc = [_batched(x, f, size) if g else x for x, f, g in zip(bc, f_bc, f_bc2)]
    init = [_batched(x, f, size) for x, f in zip(init, f_init)]
    ct = [_batched(x, f, size) for x, f in zip(ct, f_ct)]
    carry_b = [True] * n_carry
    cond2, body2, consts = _batched_loop(cond, body, cc, bc, f_cc, f_bc2, carry_b, size)
    c_act = [False] * (len(consts) - n_bc) + list(act_bc)
    return list(while_grad(cond2, body2, cc, consts, init, ct, c_act, act_carry, checkpoint))


while_p.jvp, while_p.vjp_split, while_p.batch = _while_jvp, _while_split, _while_batch
while_grad_p.vjp, while_grad_p.batch = _while_grad_vjp, _while_grad_batch


# ---- scan ------------------------------------------------------------------------------------

def _scan_jvp(primals, tangents, *, body, length, reverse, n_c, n_carry):
    c, init, xs = _split(primals, n_c, n_carry)
    tc, tinit, txs = _split(tangents, n_c, n_carry)
    n, n_x = n_carry, len(xs)
    n_y = len(body.outs) - n
    wc = [t is not None for t in tc]
    fc = [_is_float(v) for v in body.in_vars[n_c:n_c + n]]
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
    t0 = [t if t is not None else _zeros_for(x) for x, t, f in zip(init, tinit, fc) if f]
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
    c_act = [f and _is_float(v) for f, v in zip(f_c, body.in_vars[:n_c])]
    x_act = [f and _is_float(v) for f, v in zip(f_xs, body.in_vars[n_c + n:])]
    carry_act, y_act = _active_carry(body, c_act, f_init, x_act)
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
        ct_carry = [ct if ct is not None else _zeros_for(o)
                    for ct, o, a in zip(cts[:n], primal[:n], carry_act) if a]
        ct_ys = [ct if ct is not None else _zeros_for(o)
                 for ct, o, a in zip(cts[n:], primal[n:], y_act) if a]
        acc0 = [_zeros_for(x) for x, a in zip(c, c_act) if a]
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
                           body=_trace(step, avals), length=length, reverse=not reverse,
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
    init = [_batched(x, f, size) if b else x for x, f, b in zip(init, f_init, carry_b)]
    xs = [moveaxis(x, 0, 1) if f else x for x, f in zip(xs, f_xs)]   # scan axis first
    bbody = _vmap_to(body, f_c + carry_b + f_xs, carry_b + [True] * n_y, size)
    out = bind_staged(scan_p, *c, *init, *xs, body=bbody, length=length, reverse=reverse,
                      n_c=n_c, n_carry=n)
    return ([_batched(o, b, size) for o, b in zip(out[:n], carry_b)]
            + [moveaxis(y, 1, 0) for y in out[n:]])


scan_p.jvp, scan_p.vjp_split, scan_p.batch = _scan_jvp, _scan_split, _scan_batch


# ---- cond ------------------------------------------------------------------------------------

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
        act = [f and _is_float(v) for f, v in zip(flags[1:], branches[0].in_vars)]
        fo = [o.aval.is_float for o in branches[0].outs]
        n = len(fo)
        joints = []
        for b in branches:
            j = vjp_program(b, act, fo)                  # (ops, cts) -> (outs, grads)
            joints.append(Program(j.in_vars, j.eqns, j.outs[n:]))
        filled = [ct if ct is not None else _zeros_for(o) for ct, o, f in zip(cts, out, fo) if f]
        grads = iter(bind_staged(cond_p, ins[0], *ops, *filled, branches=tuple(joints)))
        return [None] + [next(grads) if a else None for a in act]
    return out, backward


def _cond_batch(ins, fl, size, *, branches):
    index, ops, f_ops = ins[0], ins[1:], fl[1:]
    n = len(branches[0].outs)
    bbs = tuple(_vmap_to(b, f_ops, [True] * n, size) for b in branches)
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


cond_p.jvp, cond_p.vjp_split, cond_p.batch = _cond_jvp, _cond_split, _cond_batch
