"""Simplification passes over Programs, run before compilation.

- dce: drop equations whose outputs are unused (primitives are pure).
- cse: merge equations that apply the same primitive, with the same params, to the same inputs.
- prune_outputs: drop unused outputs of scans and conds from their sub-programs.
- fold_constants: evaluate equations whose inputs are all literals (small results only, so that
  a broadcast of a scalar stays lazy) and forward the identities that are exact in IEEE
  arithmetic, signed zeros, infinities and NaN included: x * 1 and x / 1 (real x), x + (-0.0),
  x - (+0.0), x ** 1 (real x), reshape/transpose/convert that change nothing, a loop carry its
  body passes through unchanged; a transpose of a transpose becomes one transpose. (x + 0.0
  is not one: -0.0 + 0.0 is +0.0; nor is 0 * x: NaN, inf, -0.0; nor complex z * 1: inf * 0
  is in it.)

The algebra is the primitives' own (their identity_input, merge, repeats and accumulates
rules, ir.Primitive). Every pass returns a new Program with the same inputs and outputs.
"""
from __future__ import annotations

import numpy as np

from ..ir import Eqn, Lit, Program, Var, needed, use_counts
from ..primitives.base import is_unit

__all__ = ["dce", "cse", "fold_constants", "absorb_scatter_adds", "prune_outputs", "simplify"]

FOLD_MAX_SIZE = 16   # fold literal-only equations whose results are at most this big


def dce(prog: Program) -> Program:
    """Drop equations whose outputs are never used (primitives are pure)."""
    return Program(prog.in_vars, needed(prog, [o.id for o in prog.outs if isinstance(o, Var)]),
                   prog.outs)


class _Renamer:
    """Substitution of variables by other atoms, applied to inputs and outputs."""

    def __init__(self):
        self.sub = {}

    def __call__(self, atom):
        while isinstance(atom, Var) and atom.id in self.sub:
            atom = self.sub[atom.id]
        return atom

    def eqn(self, e):
        ins = [self(v) for v in e.inputs]
        if all(a is b for a, b in zip(ins, e.inputs)):
            return e
        return type(e)(e.prim, ins, e.outputs, e.params, e.src)

    def program(self, prog, eqns):
        return Program(prog.in_vars, eqns, [self(o) for o in prog.outs])


def _lit_key(lit):
    v = np.asarray(lit.val)
    return ("lit", v.dtype.str, v.shape, v.tobytes()) if v.size <= FOLD_MAX_SIZE else ("lit", id(lit))


def _eqn_key(e):
    if e.prim.effect:            # two prints of the same value are two prints
        return None
    try:
        params = tuple(sorted(e.params.items()))
        hash(params)
    except TypeError:
        return None
    ins = tuple(_lit_key(v) if isinstance(v, Lit) else v.id for v in e.inputs)
    return (e.prim.name, ins, params)


def cse(prog: Program) -> Program:
    """Common-subexpression elimination."""
    ren, seen, eqns = _Renamer(), {}, []
    for e in prog.eqns:
        e = ren.eqn(e)
        key = _eqn_key(e)
        prev = seen.get(key) if key is not None else None
        if prev is not None:
            for old, new in zip(e.outputs, prev.outputs):
                ren.sub[old.id] = new
            continue
        if key is not None:
            seen[key] = e
        eqns.append(e)
    return ren.program(prog, eqns)


def _scalar_value(atom, defs):
    """The constant value of an atom that is a literal or a broadcast of a scalar literal, when
    every element has the same bits (0.0 and -0.0 are two values here)."""
    if isinstance(atom, Lit):
        v = np.ascontiguousarray(atom.val)     # a view of bytes needs contiguous memory
        if not v.size:
            return None
        first = v.reshape(-1)[:1]
        same = v.reshape(-1).view(np.uint8).reshape(v.size, -1) == first.view(np.uint8)
        return v.flat[0] if np.all(same) else None
    e = defs.get(atom.id)
    if e is not None and e.prim.repeats and isinstance(e.inputs[0], Lit):    # (a broadcast)
        return _scalar_value(e.inputs[0], defs)
    return None


def _identity_input(e, defs):
    """The input an equation passes through unchanged (its primitive's identity_input rule),
    or None."""
    if e.prim.identity_input is None or len(e.outputs) != 1:
        return None
    return e.prim.identity_input(e, lambda atom: _scalar_value(atom, defs))


def _merged(e, defs):
    """e and the equation making its first input as one (the primitive's merge rule: a
    transpose of a transpose), the inner one left to DCE when nothing else reads it."""
    inner = defs.get(getattr(e.inputs[0], "id", None)) if e.inputs else None
    return (e.prim.merge(e, inner) if e.prim.merge is not None and inner is not None else None) or e


def fold_constants(prog: Program) -> Program:
    """Evaluate small literal-only equations; forward exact identities (x * 1, x - 0.0,
    x + -0.0, no-op reshapes)."""
    ren, defs, eqns = _Renamer(), {}, []
    for e in prog.eqns:
        e = ren.eqn(e)
        if not e.prim.effect and all(isinstance(v, Lit) for v in e.inputs) and e.inputs and all(
                v.aval.size <= FOLD_MAX_SIZE for v in e.outputs) and not (
                e.prim.repeats and e.outputs[0].aval.ndim):    # a broadcast stays lazy
            out = e.prim.impl(*[v.val for v in e.inputs], **e.params)
            outs = out if e.prim.multiple_results else (out,)
            for v, o in zip(e.outputs, outs):
                ren.sub[v.id] = Lit(np.asarray(o, dtype=v.aval.dtype).reshape(v.aval.shape))
            continue
        e = _merged(e, defs)
        ident = _identity_input(e, defs)
        if ident is not None:
            ren.sub[e.outputs[0].id] = ident
            continue
        if e.prim.invariants is not None:      # loop carries passed through unchanged
            for out, init in e.prim.invariants(e):
                ren.sub[e.outputs[out].id] = e.inputs[init]
        for v in e.outputs:
            defs[v.id] = e
        eqns.append(e)
    return ren.program(prog, eqns)


def absorb_scatter_adds(prog: Program) -> Program:
    """add(scatter_add(zeros, u, idx), y) -> scatter_add(y, u, idx): the adjoint of a slice
    adds into the other cotangent instead of a fresh buffer of zeros. Exact in IEEE arithmetic:
    with +0.0 zeros, a y that may hold -0.0 (which y + 0.0 turns into +0.0) gets the zeros added
    first, unless y is itself a scatter-add into +0.0 zeros (which cannot hold -0.0)."""
    uses = use_counts(prog)
    defs, eqns, unsigned = {}, [], set()      # unsigned: variables that cannot hold -0.0
    for e in prog.eqns:
        for k in ((0, 1) if len(e.inputs) == 2 else ()):
            s, y = e.inputs[k], e.inputs[1 - k]
            d = defs.get(s.id) if isinstance(s, Var) else None
            if (d is not None and d.prim.accumulates is not None
                    and d.prim.accumulates(d.params) is e.prim          # (scatter-add, add)
                    and uses.get(s.id) == 1 and y.aval == s.aval
                    and _scalar_value(d.inputs[0], defs) == 0):
                y = _unsigned(y, e.prim, d, defs, unsigned, eqns)
                e = type(e)(d.prim, [y] + d.inputs[1:], e.outputs, d.params, d.src)
                break
        if _keeps_unsigned(e, defs, unsigned):
            unsigned.add(e.outputs[0].id)
        for v in e.outputs:
            defs[v.id] = e
        eqns.append(e)
    return Program(prog.in_vars, eqns, prog.outs)


def _keeps_unsigned(e, defs, unsigned):
    """Whether e's output cannot hold -0.0: a broadcast of +0.0, or a scatter-add into such."""
    base = e.inputs[0] if e.inputs else None
    if e.prim.repeats and isinstance(base, Lit):
        zero = _scalar_value(base, defs)
        return zero is not None and zero == 0 and not (
            np.signbit(np.real(zero)) or np.signbit(np.imag(zero)))
    return (e.prim.accumulates is not None and e.prim.accumulates(e.params) is not None
            and isinstance(base, Var) and base.id in unsigned)


def _unsigned(y, add, scatter, defs, unsigned, eqns):
    """y as the base of scatter's adds in place of its zeros: y itself where the result is the
    same (integers, -0.0 zeros, a y that cannot hold -0.0), else y + zeros (appended to eqns)."""
    zeros = scatter.inputs[0]
    if np.dtype(y.aval.dtype).kind not in "fc" or (isinstance(y, Var) and y.id in unsigned) \
            or is_unit(_scalar_value(zeros, defs), y.aval.dtype, "-0.0"):
        return y
    out = Var(y.aval)
    eqns.append(Eqn(add, [y, zeros], [out], {}, scatter.src))
    unsigned.add(out.id)
    return out


def prune_outputs(prog: Program) -> Program:
    """Drop the unused outputs of loops and branches from their sub-programs (a scan in a
    forward pass may compute residuals only a backward pass that recomputes them would have
    read), and compute an output two of theirs repeat only once: the primitives' `prune` and
    `aliases` rules (ir.Primitive; scan's and cond's in higher_order/)."""
    ren = _Renamer()            # outputs of the same value (a scan's stacked ones) are one
    for e in prog.eqns:
        if e.prim.aliases is not None:
            for k, j in e.prim.aliases(e).items():
                ren.sub[e.outputs[k].id] = e.outputs[j]
    if ren.sub:
        prog = ren.program(prog, [ren.eqn(e) for e in prog.eqns])
    uses = use_counts(prog)
    eqns, changed = [], bool(ren.sub)
    for e in prog.eqns:
        if e.prim.prune is not None:            # the primitive's rule (scan, cond)
            cut = e.prim.prune(e, [bool(uses.get(v.id, 0)) for v in e.outputs])
            if cut is not None:
                e, changed = cut, True
        eqns.append(e)
    return Program(prog.in_vars, eqns, prog.outs) if changed else prog


def simplify(prog: Program, _memo=None) -> Program:
    """The standard pipeline: fold, CSE, DCE (twice, as folding exposes more sharing), also
    inside loop bodies and branches (a sub-program shared by two equations stays shared)."""
    memo = {} if _memo is None else _memo
    prog = _simplify_inner(dce(prune_outputs(dce(prog))), memo)
    for _ in range(2):
        prog = dce(absorb_scatter_adds(cse(fold_constants(prog))))
    return prog


def _simplify_inner(prog, memo):
    def sub(p):
        if id(p) not in memo:
            memo[id(p)] = (p, simplify(p, memo))    # keep p alive: ids stay unique
        return memo[id(p)][1]

    eqns, changed = [], False
    for e in prog.eqns:
        params = e.params
        if any(isinstance(v, Program) or (isinstance(v, tuple) and v and isinstance(v[0], Program))
               for v in params.values()):
            params = {k: sub(v) if isinstance(v, Program) else
                      tuple(sub(q) for q in v) if isinstance(v, tuple) and v and isinstance(v[0], Program)
                      else v for k, v in params.items()}
            e, changed = Eqn(e.prim, e.inputs, e.outputs, params, e.src), True
        eqns.append(e)
    return Program(prog.in_vars, eqns, prog.outs) if changed else prog
