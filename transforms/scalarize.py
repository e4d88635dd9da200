"""Scalar replacement of small arrays in loops: a pass run before compilation.

A loop body written NumPy-style on a small vector (`s + dt * f(s)` with `f` returning
`fnp.stack([...])`, an RK4 step of a 3-variable ODE) would allocate a tiny array per operation
per step. This pass rewrites every scan and while loop so that each carry that is a small
static array (at most SMALL elements) becomes one scalar carry per element, and inside loop
bodies:
- elementwise operations on small arrays become one scalar operation per element;
- data movement (broadcast, reshape, transpose, concatenate, reverse, static indexing and
  static scatters) becomes a renaming of those scalars, found by applying the primitive's own
  NumPy implementation to arrays of element numbers;
- reductions become chains of scalar operations.
A small array is rebuilt (packed) only where another operation needs it whole (a matrix
product, say). A scan's stacked output of small arrays becomes one stacked array per element,
which a later scan (the backward pass reading its residuals) reads element by element.
Values and rounding are unchanged: the same scalar operations run in the same order.

A program transform that jit runs before code generation (api/jit.py). Each operation it
rewrites has its rule in one of the tables below, keyed by primitive name: LOOP_RULES (the loop
primitives, whose bodies it re-records), SMALL_RULES (data movement and scatters on small
arrays), REDUCE (reductions, by their binary operation); elementwise primitives need none
(Primitive.elementwise). Everything else is re-bound unchanged.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ir import Aval, Lit, Program
from ..primitives import NAMESPACE, REGISTRY
from ..tracer import trace_flat

__all__ = ["scalarize", "SMALL"]

SMALL = 8                   # arrays with at most this many elements are replaced by scalars
# reductions: (the binary operation they chain, whether a float sum starts at +0.0 as NumPy's do)
REDUCE = {"reduce_sum": ("add", True), "reduce_max": ("maximum", False),
          "reduce_min": ("minimum", False), "reduce_prod": ("multiply", False)}


def _small(aval):
    return aval.ndim >= 1 and 0 < aval.size <= SMALL


class Parts:
    """A small array held as one scalar per element (row-major order)."""

    def __init__(self, aval, scalars):
        self.aval, self.scalars = aval, list(scalars)


class Stacked:
    """A (T, *small) array held as one (T,) array per element of the small part."""

    def __init__(self, aval, columns):
        self.aval, self.columns = aval, list(columns)


def _loops_with_small_values(prog):
    for e in prog.eqns:
        if LOOP_RULES.get(e.prim.name) is not None:
            body = e.params["body"]
            if any(_small(v.aval) for v in body.in_vars) or any(_small(o.aval) for o in body.outs):
                return True
            if _loops_with_small_values(body):
                return True
    return False


def scalarize(prog: Program) -> Program:
    """prog with small arrays in its loops replaced by scalars (prog itself when it has none)."""
    if not _loops_with_small_values(prog):
        return prog
    out, consts = trace_flat(lambda *args: _Rewriter(False).run(prog, args), prog.in_avals)
    assert not consts, "internal error: scalarize captured outer values"
    return out


class _Rewriter:
    """Re-records a program; values are tracers, Parts or Stacked. Small arrays are split into
    Parts only inside loop bodies (`in_loop`); outside, only loops are rewritten."""

    def __init__(self, in_loop):
        self.in_loop = in_loop
        self.env, self.cache = {}, {}

    # -- values ---------------------------------------------------------------------------------
    def value(self, atom):
        return atom.val if isinstance(atom, Lit) else self.env[atom.id]

    def arr(self, atom):
        """The value as an array (packing Parts / Stacked once)."""
        val = self.value(atom)
        if not isinstance(val, (Parts, Stacked)):
            return val
        key = ("packed", atom.id)
        if key not in self.cache:
            stack, reshape = NAMESPACE["stack"], NAMESPACE["reshape"]
            if isinstance(val, Parts):
                packed = reshape(stack(val.scalars), val.aval.shape)
            else:
                packed = reshape(stack(val.columns, axis=-1), val.aval.shape)
            self.cache[key] = packed
        return self.cache[key]

    def splittable(self, atom):
        if atom.aval.ndim == 0 or not _small(atom.aval):
            return atom.aval.ndim == 0
        return isinstance(atom, Lit) or isinstance(self.env[atom.id], Parts) or self.in_loop

    def parts(self, atom):
        """The elements of a small array as scalars (unpacking an array once, by indexing)."""
        if isinstance(atom, Lit):
            flat = np.asarray(atom.val).reshape(-1)
            return [np.asarray(flat[k]) for k in range(flat.size)]
        val = self.env[atom.id]
        if isinstance(val, Parts):
            return val.scalars
        key = ("parts", atom.id)
        if key not in self.cache:
            whole = self.arr(atom)
            self.cache[key] = [REGISTRY["gather"].bind(whole, spec=tuple(("int", int(i)) for i in ix))
                               for ix in np.ndindex(*atom.aval.shape)]
        return self.cache[key]

    def scalar_sources(self, atoms):
        """All elements of `atoms` in one list, and per atom an array of their positions in it."""
        sources, index = [], []
        for v in atoms:
            if v.aval.ndim == 0:
                index.append(np.array(len(sources)))
                sources.append(self.value(v))
            else:
                base = len(sources)
                sources += self.parts(v)
                index.append(np.arange(base, base + v.aval.size).reshape(v.aval.shape))
        return sources, index

    # -- programs -------------------------------------------------------------------------------
    def run(self, prog, args):
        self.bind_inputs(prog, args)
        return [self.arr(o) for o in prog.outs]

    def eqn(self, e):
        name, out = e.prim.name, e.outputs[0]
        loop = LOOP_RULES.get(name)
        if loop is not None:
            return loop(self, e)
        if self.in_loop and not e.prim.multiple_results:
            ok = all(self.splittable(v) for v in e.inputs)
            small_out = _small(out.aval)
            picks = out.aval.ndim == 0 and any(_small(v.aval) for v in e.inputs)   # x[0]
            if ok and (small_out or picks):
                if small_out and e.prim.elementwise and all(
                        v.aval.shape == out.aval.shape for v in e.inputs):
                    return [self.elementwise(e)]
                rule = SMALL_RULES.get(name)
                res = rule(self, e) if rule is not None else None
                if res is not None:
                    return [res]
            if name in REDUCE and ok and _small(e.inputs[0].aval):
                return [self.reduce(e)]
        return self.opaque(e)

    # -- rules ----------------------------------------------------------------------------------
    def elementwise(self, e):
        cols = [self.parts(v) for v in e.inputs]
        return Parts(e.outputs[0].aval, [ir.bind_staged(e.prim, *xs, **e.params)
                                         for xs in zip(*cols)])

    def moves(self, e):
        """Data movement: the primitive's NumPy implementation applied to element numbers."""
        sources, index = self.scalar_sources(e.inputs)
        picked = [sources[int(i)] for i in np.asarray(e.prim.impl(*index, **e.params)).reshape(-1)]
        out = e.outputs[0].aval
        return picked[0] if out.ndim == 0 else Parts(out, picked)

    def static_gather(self, e):
        """x[static index] moves data; a gather with computed indices stays whole (None)."""
        return self.moves(e) if len(e.inputs) == 1 else None

    def scatter(self, e):
        """x.at[static index].set/add/multiply(u) into a small x; other scatters stay whole."""
        if not (_small(e.outputs[0].aval) and len(e.inputs) == 2
                and e.params["mode"] in ("set", "add", "mul")):
            return None
        x, u = e.inputs
        sources, (ix, iu) = self.scalar_sources([x, u])
        where = np.asarray(e.prim.impl(ix, iu, spec=e.params["spec"], mode="set")).reshape(-1)
        op = {"add": REGISTRY["add"], "mul": REGISTRY["multiply"]}.get(e.params["mode"])
        n_x, out = x.aval.size, []
        for k, s in enumerate(int(i) for i in where):
            if s < n_x or op is None:
                out.append(sources[s])
            else:
                out.append(ir.bind_staged(op, sources[k], sources[s]))
        return Parts(e.outputs[0].aval, out)

    def reduce(self, e):
        x, axes = e.inputs[0], e.params["axes"]
        (op, plus_zero), shape = REDUCE[e.prim.name], x.aval.shape
        op = REGISTRY[op]
        out_aval = e.outputs[0].aval
        acc: dict = {}
        for k, ix in enumerate(np.ndindex(*shape)):
            key = tuple(i for d, i in enumerate(ix) if d not in axes)
            v = self.parts(x)[k]
            acc[key] = v if key not in acc else ir.bind_staged(op, acc[key], v)
        if plus_zero and out_aval.dtype.kind in "fc":
            zero = np.zeros((), out_aval.dtype)     # NumPy's sums start at +0.0: never -0.0
            acc = {key: ir.bind_staged(op, v, zero) for key, v in acc.items()}
        scalars = [acc[ix] for ix in np.ndindex(*out_aval.shape)]
        return scalars[0] if out_aval.ndim == 0 else Parts(out_aval, scalars)

    # -- loops ----------------------------------------------------------------------------------
    def _split_carries(self, atoms, avals):
        """Flat inputs for small carries (their scalars) and the others (arrays)."""
        flat, widths = [], []
        for a, av in zip(atoms, avals):
            if _small(av):
                ps = self.parts(a)
                flat += ps
                widths.append(len(ps))
            else:
                flat.append(self.arr(a))
                widths.append(None)
        return flat, widths

    def _loop_consts(self, prog, consts, n_rest):
        """prog (a rewritten loop body, its first inputs those of _const_avals) without the
        constant inputs it does not read, and the outer values of those it does."""
        uses = ir.use_counts(prog)
        it = iter(prog.in_vars)
        kept, values = [], []
        for c in consts:
            whole = next(it)
            if uses.get(whole.id):
                kept.append(whole)
                values.append(self.arr(c))
            for k in range(c.aval.size if _small(c.aval) else 0):
                v = next(it)
                if uses.get(v.id):
                    kept.append(v)
                    values.append(self.parts(c)[k])
        rest = prog.in_vars[len(prog.in_vars) - n_rest:]
        return Program(kept + rest, prog.eqns, prog.outs), values

    def scan(self, e):
        p = e.params
        body, n_c, n = p["body"], p["n_c"], p["n_carry"]
        consts, init, xs = e.inputs[:n_c], e.inputs[n_c:n_c + n], e.inputs[n_c + n:]
        c_avals = [v.aval for v in body.in_vars[n_c:n_c + n]]
        init_flat, widths = self._split_carries(init, c_avals)
        x_vals, x_cols = [], []
        for x in xs:
            val = self.value(x)
            if isinstance(val, Stacked):
                x_vals += val.columns
                x_cols.append(len(val.columns))
            else:
                x_vals.append(self.arr(x))
                x_cols.append(None)
        y_outs = body.outs[n:]
        y_small = [_small(o.aval) for o in y_outs]

        def new_body(*args):
            r = _Rewriter(True)
            it = iter(args)
            ins = _bind_consts(r, it, body.in_vars[:n_c], consts)
            ins += [_take(it, w, v.aval) for v, w in zip(body.in_vars[n_c:n_c + n], widths)]
            ins += [_take(it, w, v.aval) for v, w in zip(body.in_vars[n_c + n:], x_cols)]
            r.bind_inputs(body, ins)
            outs = [r.flat(o, w is not None) for o, w in zip(body.outs[:n], widths)]
            outs += [r.flat(o, s) for o, s in zip(y_outs, y_small)]
            return [x for group in outs for x in group]

        avals = ([ir.aval_of(v) for v in init_flat]
                 + [Aval(ir.aval_of(x).shape[1:], ir.aval_of(x).dtype) for x in x_vals])
        prog, captured = trace_flat(new_body, _const_avals(consts) + avals)
        assert not captured
        prog, c_vals = self._loop_consts(prog, consts, len(avals))
        n_flat = len(init_flat)
        res = ir.bind_staged(REGISTRY["scan"], *c_vals, *init_flat, *x_vals, body=prog, length=p["length"],
                             reverse=p["reverse"], n_c=len(c_vals), n_carry=n_flat)
        it = iter(res)
        outs = [_take(it, w, o.aval) for o, w in zip(e.outputs[:n], widths)]
        for o, s in zip(e.outputs[n:], y_small):
            if s:
                outs.append(Stacked(o.aval, [next(it) for _ in range(int(np.prod(o.aval.shape[1:])))]))
            else:
                outs.append(next(it))
        return outs

    def while_loop(self, e):
        p = e.params
        cond, body, n_cc, n_bc = p["cond"], p["body"], p["n_cc"], p["n_bc"]
        init = e.inputs[n_cc + n_bc:]
        c_avals = [v.aval for v in body.in_vars[n_bc:]]
        init_flat, widths = self._split_carries(init, c_avals)

        def rewrite(prog, consts, outs_split):
            def fn(*args):
                r = _Rewriter(True)
                it = iter(args)
                ins = _bind_consts(r, it, prog.in_vars[:len(consts)], consts)
                ins += [_take(it, w, av) for w, av in zip(widths, c_avals)]
                r.bind_inputs(prog, ins)
                if not outs_split:
                    return [r.arr(o) for o in prog.outs]
                return [x for o, w in zip(prog.outs, widths) for x in r.flat(o, w is not None)]
            avals = [ir.aval_of(v) for v in init_flat]
            out, captured = trace_flat(fn, _const_avals(consts) + avals)
            assert not captured
            return self._loop_consts(out, consts, len(avals))

        cond, cc = rewrite(cond, e.inputs[:n_cc], False)
        body, bc = rewrite(body, e.inputs[n_cc:n_cc + n_bc], True)
        res = ir.bind_staged(REGISTRY["while_loop"], *cc, *bc, *init_flat, cond=cond, body=body, n_cc=len(cc),
                             n_bc=len(bc), checkpoint=p.get("checkpoint"))
        it = iter(res)
        return [_take(it, w, av) for w, av in zip(widths, c_avals)]

    def while_grad(self, e):
        """Reverse mode of a while loop (higher_order/loops.py): its small carries, their
        cotangents and the small residuals its forward half tapes become scalars (one tape per
        element), in the forward half, the backward half, the condition and the body alike.
        The body constants stay whole (their positions are what res_src and act_bc refer to),
        as do the accumulated constant cotangents."""
        p = e.params
        n_cc, n_bc, n = p["n_cc"], p["n_bc"], p["n_carry"]
        fwd, bwd = p["fwd"], p["bwd"]
        cc, bc, init, ct = ir.split_list(e.inputs, n_cc, n_bc, n)
        c_avals = [v.aval for v in fwd.in_vars[n_bc:]]
        init_flat, widths = self._split_carries(init, c_avals)
        if all(w is None for w in widths):
            return self.opaque(e)
        act = p["act_carry"]
        ct_widths = [w for w, a in zip(widths, act) if a]
        ct_flat, _ = self._split_carries(ct, [av for av, a in zip(c_avals, act) if a])
        residuals = fwd.outs[n:]
        res_widths = [r.aval.size if s < 0 and _small(r.aval) else None
                      for r, s in zip(residuals, p["res_src"])]
        n_acc = sum(p["act_bc"])

        def rewrite(prog, n_const, in_widths, in_avals, out_widths):
            def fn(*args):
                r = _Rewriter(True)
                it = iter(args)
                ins = [next(it) for _ in range(n_const)]
                ins += [_take(it, w, av) for w, av in zip(in_widths, in_avals)]
                r.bind_inputs(prog, ins)
                return [x for o, w in zip(prog.outs, out_widths) for x in r.flat(o, w is not None)]
            avals = [v.aval for v in prog.in_vars[:n_const]]
            for w, av in zip(in_widths, in_avals):
                avals += [Aval((), av.dtype)] * w if w is not None else [av]
            out, captured = trace_flat(fn, avals)
            assert not captured
            return out

        res_avals = [v.aval for v in bwd.in_vars[:len(residuals)]]
        ct_avals = [v.aval for v in bwd.in_vars[len(residuals):]]
        new = dict(
            cond=rewrite(p["cond"], n_cc, widths, c_avals, [None]),
            body=rewrite(p["body"], n_bc, widths, c_avals, widths),
            fwd=rewrite(fwd, n_bc, widths, c_avals, widths + res_widths),
            bwd=rewrite(bwd, 0, res_widths + ct_widths, res_avals + ct_avals,
                        [None] * n_acc + ct_widths),
            n_cc=n_cc, n_bc=n_bc, n_carry=len(init_flat), act_bc=p["act_bc"],
            res_src=tuple(x for s, w in zip(p["res_src"], res_widths)
                          for x in ([-1] * w if w is not None else [s])),
            act_carry=tuple(x for a, w in zip(act, widths) for x in [a] * (w or 1)),
            checkpoint=p.get("checkpoint"))
        res = ir.bind_staged(REGISTRY["while_grad"], *[self.arr(v) for v in cc],
                             *[self.arr(v) for v in bc], *init_flat, *ct_flat, **new)
        it = iter(res)
        outs = [next(it) for _ in range(n_acc)]
        return outs + [_take(it, w, v.aval) for v, w in zip(e.outputs[n_acc:], ct_widths)]

    def opaque(self, e):
        res = ir.bind_staged(e.prim, *[self.arr(v) for v in e.inputs], **e.params)
        return list(res) if e.prim.multiple_results else [res]

    def bind_inputs(self, prog, ins):
        """Evaluate prog's equations with its inputs bound to `ins`."""
        for v, a in zip(prog.in_vars, ins):
            self.env[v.id] = a
        for e in prog.eqns:
            with ir.use_source(e.src):
                outs = self.eqn(e)
            for v, o in zip(e.outputs, outs):
                self.env[v.id] = o

    def flat(self, atom, split):
        """An output as a list: its scalars when `split`, else [array]."""
        return list(self.parts(atom)) if split else [self.arr(atom)]


# The rules, by primitive name. Loops: their bodies re-recorded with small carries as scalars.
LOOP_RULES = {"scan": _Rewriter.scan, "while_loop": _Rewriter.while_loop,
              "while_grad": _Rewriter.while_grad}
# Inside loop bodies, on small arrays: an operation's result as a value (Parts or a scalar), or
# None where the rule does not apply to this equation (it is then re-bound whole).
SMALL_RULES = {**dict.fromkeys(("broadcast_in_dim", "reshape", "transpose", "concatenate", "rev"),
                               _Rewriter.moves),
               "gather": _Rewriter.static_gather, "scatter": _Rewriter.scatter}


def _const_avals(consts):
    """The inputs a rewritten loop body takes for the loop's constants: each whole and, when
    small, also as its scalars, which the loop then receives once, before its first step
    (rather than the body reading them out of the array at every step)."""
    avals = []
    for c in consts:
        avals.append(c.aval)
        avals += [Aval((), c.aval.dtype)] * (c.aval.size if _small(c.aval) else 0)
    return avals


def _bind_consts(r, it, in_vars, consts):
    """The body's values of the inputs of _const_avals: a small constant is Parts (its
    scalars) that stand for the whole array input where an operation needs it whole."""
    ins = []
    for v, c in zip(in_vars, consts):
        whole = next(it)
        if _small(c.aval):
            r.cache[("packed", v.id)] = whole
            ins.append(Parts(v.aval, [next(it) for _ in range(c.aval.size)]))
        else:
            ins.append(whole)
    return ins


def _take(it, width, aval):
    """The next input: Parts of `width` scalars, or one value when width is None."""
    if width is None:
        return next(it)
    return Parts(aval, [next(it) for _ in range(width)])
