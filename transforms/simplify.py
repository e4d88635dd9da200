"""Simplification passes over Programs, run before compilation.

- dce: drop equations whose outputs are unused (primitives are pure).
- cse: merge equations that apply the same primitive, with the same params, to the same inputs.
- prune_outputs: drop unused outputs of scans and conds from their sub-programs.
- fold_constants: evaluate equations whose inputs are all literals (small results only, so that
  a broadcast of a scalar stays lazy) and forward trivial identities of the adjoint: x * 1,
  x + 0, x - 0, reshape/transpose/convert that change nothing.

Every pass returns a new Program with the same inputs and outputs. Imports funcgrad.ir only.
"""
from __future__ import annotations

import numpy as np

from ..ir import Eqn, Lit, Program, Var, needed, use_counts

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
    """The constant value of an atom that is a literal or a broadcast of a scalar literal."""
    if isinstance(atom, Lit):
        v = np.asarray(atom.val)
        return v.flat[0] if v.size and np.all(v == v.flat[0]) else None
    e = defs.get(atom.id)
    if e is not None and e.prim.name == "broadcast_in_dim" and isinstance(e.inputs[0], Lit):
        return _scalar_value(e.inputs[0], defs)
    return None


def _identity_input(e, defs):
    """The input an equation passes through unchanged, if it is an identity."""
    name, ins, out = e.prim.name, e.inputs, e.outputs[0] if e.outputs else None
    if out is None or len(e.outputs) != 1:
        return None
    same = lambda a: a.aval == out.aval
    if name in ("multiply", "add", "subtract", "divide"):
        unit = 1 if name in ("multiply", "divide") else 0
        for k in ((0, 1) if name in ("multiply", "add") else (0,)):
            other = ins[1 - k]
            if same(ins[k]) and _scalar_value(other, defs) == unit and not isinstance(
                    _scalar_value(other, defs), (bool, np.bool_)):
                return ins[k]
    if name in ("reshape", "convert_element_type", "broadcast_in_dim") and same(ins[0]):
        return ins[0]
    if name == "transpose" and tuple(e.params["perm"]) == tuple(range(len(e.params["perm"]))):
        return ins[0]
    if name == "integer_pow" and e.params["y"] == 1:
        return ins[0]
    return None


def fold_constants(prog: Program) -> Program:
    """Evaluate small literal-only equations; forward identities (x*1, x+0, no-op reshapes)."""
    ren, defs, eqns = _Renamer(), {}, []
    for e in prog.eqns:
        e = ren.eqn(e)
        if not e.prim.effect and all(isinstance(v, Lit) for v in e.inputs) and e.inputs and all(
                v.aval.size <= FOLD_MAX_SIZE for v in e.outputs) and not (
                e.prim.name == "broadcast_in_dim" and e.outputs[0].aval.ndim):   # stays lazy
            out = e.prim.impl(*[v.val for v in e.inputs], **e.params)
            outs = out if e.prim.multiple_results else (out,)
            for v, o in zip(e.outputs, outs):
                ren.sub[v.id] = Lit(np.asarray(o, dtype=v.aval.dtype).reshape(v.aval.shape))
            continue
        ident = _identity_input(e, defs)
        if ident is not None:
            ren.sub[e.outputs[0].id] = ident
            continue
        for v in e.outputs:
            defs[v.id] = e
        eqns.append(e)
    return ren.program(prog, eqns)


def absorb_scatter_adds(prog: Program) -> Program:
    """add(scatter_add(zeros, u, idx), y) -> scatter_add(y, u, idx): the adjoint of a slice
    adds into the other cotangent instead of a fresh buffer of zeros."""
    uses = use_counts(prog)
    defs, eqns = {}, []
    for e in prog.eqns:
        if e.prim.name == "add":
            for k in (0, 1):
                s, y = e.inputs[k], e.inputs[1 - k]
                d = defs.get(s.id) if isinstance(s, Var) else None
                if (d is not None and d.prim.name == "scatter" and d.params["mode"] == "add"
                        and uses.get(s.id) == 1 and y.aval == s.aval
                        and _scalar_value(d.inputs[0], defs) == 0):
                    e = type(e)(d.prim, [y] + d.inputs[1:], e.outputs, d.params, d.src)
                    break
        for v in e.outputs:
            defs[v.id] = e
        eqns.append(e)
    return Program(prog.in_vars, eqns, prog.outs)


def prune_outputs(prog: Program) -> Program:
    """Drop the unused stacked outputs of scans and the unused outputs of conds from their
    sub-programs (a scan in a forward pass may compute residuals only a backward pass that
    recomputes them would have read), and stack a value a scan outputs twice only once."""
    ren = _Renamer()            # a scan's stacked outputs of the same body value are one
    for e in prog.eqns:
        if e.prim.name == "scan":
            first = {}
            for o, b in zip(e.outputs[e.params["n_carry"]:], e.params["body"].outs[e.params["n_carry"]:]):
                if isinstance(b, Var):
                    if b.id in first:
                        ren.sub[o.id] = first[b.id]
                    else:
                        first[b.id] = o
    if ren.sub:
        prog = ren.program(prog, [ren.eqn(e) for e in prog.eqns])
    uses = use_counts(prog)
    eqns, changed = [], bool(ren.sub)
    for e in prog.eqns:
        name = e.prim.name
        first = e.params.get("n_carry", 0) if name == "scan" else 0
        keep = [k for k, v in enumerate(e.outputs) if k < first or uses.get(v.id, 0)]
        if name in ("scan", "cond") and len(keep) < len(e.outputs) and keep:
            cut = lambda p: dce(Program(p.in_vars, p.eqns, [p.outs[k] for k in keep]))
            params = dict(e.params)
            if name == "scan":
                params["body"] = cut(params["body"])
            else:
                params["branches"] = tuple(cut(b) for b in params["branches"])
            e, changed = Eqn(e.prim, e.inputs, [e.outputs[k] for k in keep], params, e.src), True
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
