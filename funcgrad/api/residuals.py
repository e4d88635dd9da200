"""fg.saved_residuals: what the backward pass of a function keeps from its forward pass.

Reverse mode splits the joint program (transforms/vjp.py) into a forward program that returns
f's outputs plus residuals, and a backward program that reads them (split_program, as fg.vjp
does). Each residual is traced back to what made it: an argument, a value captured from an
enclosing transform, or an equation (its primitive and user line; inside a loop body, the
body's equation and the loop's line). NumPy arrays f closes over are literals of the program,
not residuals. A while loop's reverse mode keeps its per-step values on a tape that grows in
the backward pass itself; those are listed apart, per iteration.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._errors import SourceInfo
from ..ir import Aval, Program, Var, sub_programs
from ..transforms.vjp import split_program, vjp_program
from .calls import Args, argnums_tuple, fn_name, split_out_aux, trace_call

__all__ = ["saved_residuals", "SavedResiduals", "Residual"]


class Residual(NamedTuple):
    """One value kept for the backward pass. kind: 'argument' (label: its name, such as
    `params['w']`), 'constant' (a traced value f closes over, when called inside another
    transform; NumPy arrays f closes over are part of the program, never residuals),
    'computed' (by `primitive` at user line `src`), or 'tape' (kept per iteration of a while
    loop's reverse mode). loop and loop_src: the loop or branch equation it comes out of (its
    stacked output for scan and fori_loop), else None."""
    shape: tuple
    dtype: np.dtype
    nbytes: int
    kind: str
    primitive: str | None = None
    src: SourceInfo | None = None
    label: str | None = None
    loop: str | None = None
    loop_src: SourceInfo | None = None

    @property
    def description(self):
        if self.kind == "argument":
            return f"argument {self.label}"
        if self.kind == "constant":
            return "value captured from an enclosing transform"
        text = f"{self.primitive} at {self.src}" if self.src else str(self.primitive)
        if self.loop is not None and self.loop_src is not None:
            text += f", out of {self.loop} at {self.loop_src}"
        return text


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _short(shape, dtype):
    return repr(Aval(shape, dtype))


class SavedResiduals(list):
    """The residuals of one call (a list of Residual) with their total size; prints as a
    table. `tapes`: values a while loop's reverse mode keeps per iteration (not in the total:
    the trip count is known only when it runs)."""

    def __init__(self, name, entries, tapes):
        super().__init__(entries)
        self.name, self.tapes = name, list(tapes)

    @property
    def total_bytes(self):
        return sum(r.nbytes for r in self)

    def __str__(self):
        lines = [f"saved for the backward pass of {self.name}: {len(self)} "
                 f"residual{'' if len(self) == 1 else 's'}"]
        rows = [(_short(r.shape, r.dtype), _human(r.nbytes), r.description) for r in self]
        if self.tapes:
            rows.append(None)
            rows += [(_short(r.shape, r.dtype), _human(r.nbytes), r.description)
                     for r in self.tapes]
        width = [max([len(row[k]) for row in rows if row] + [0]) for k in range(2)]
        for row in rows:
            if row is None:
                lines.append("per iteration, on the tape of a while loop's backward pass:")
                continue
            lines.append(f"  {row[0]:<{width[0]}}  {row[1]:>{width[1]}}  {row[2]}")
        n = self.total_bytes
        lines.append(f"total: {n} bytes" + (f" ({_human(n)})" if n >= 1024 else ""))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(str(self))


def saved_residuals(f, *args, argnums=None, has_aux=False):
    """What reverse mode keeps from the forward pass of f at args for its backward pass
    (PyTorch: the tensors autograd saves, seen with torch.autograd.graph.saved_tensors_hooks;
    JAX: jax.ad_checkpoint.print_saved_residuals). Returns a list of Residual (shape, dtype,
    nbytes, and where each comes from: an argument by name, or the primitive and user line
    that computed it, inside loops with the loop's line and the stacked shape) with
    `.total_bytes`; it prints as a table. f is traced at args; no backward pass runs.

    argnums: the positional arguments differentiated (default: all, as fg.vjp); has_aux: f
    returns (output, aux), as for fg.grad. Use it to see what fg.checkpoint and its
    residual_dtype option save.

        >>> print(fg.saved_residuals(lambda x: fnp.sum(fnp.sin(x) * fnp.exp(x)), np.ones(3)))
        >>> fg.saved_residuals(lambda w, x: fnp.sum(fnp.tanh(x @ w)), np.eye(2), np.ones(2),
        ...                    argnums=0).total_bytes
        32
    """
    nargs = len(args)
    nums = tuple(range(nargs)) if argnums is None else argnums_tuple(argnums, nargs, f)[0]
    a = Args(f, args, {}, diff_argnums=nums)
    prog, consts, out_tree = trace_call(f, a)
    main, aux, _, _ = split_out_aux(f, prog.outs, out_tree, has_aux)
    ct_mask = [o.aval.is_float for o in main] + [False] * len(aux)
    joint = vjp_program(prog, [False] * len(consts) + a.diff_mask, ct_mask)
    fwd, bwd, _ = split_program(joint, len(prog.in_vars), len(prog.outs))
    inputs = {v.id: k for k, v in enumerate(fwd.in_vars)}
    made_by = {v.id: e for e in fwd.eqns for v in e.outputs}
    labels = a.labels
    entries = []
    for var in fwd.outs[len(prog.outs):]:
        k = inputs.get(var.id)
        if k is None:
            entries.append(_computed(var, made_by[var.id]))
        elif k < len(consts):
            entries.append(_entry(var.aval, "constant"))
        else:
            entries.append(_entry(var.aval, "argument", label=labels[k - len(consts)]))
    return SavedResiduals(fn_name(f), entries, _tapes(bwd))


def _entry(av, kind, **info):
    return Residual(av.shape, av.dtype, av.size * av.dtype.itemsize, kind, **info)


def _computed(var, eqn, kind="computed"):
    """The residual `var`, output of `eqn`: for a loop or branch, what its sub-program computes
    that output with (when the sub-program's outputs match the equation's one to one)."""
    aval, loop, loop_src = var.aval, None, None
    while True:
        subs = [p for p in sub_programs(eqn.params) if len(p.outs) == len(eqn.outputs)]
        inner = subs[0].outs[[v.id for v in eqn.outputs].index(var.id)] if subs else None
        origin = ({v.id: e for e in subs[0].eqns for v in e.outputs}.get(inner.id)
                  if isinstance(inner, Var) else None)
        if origin is None:
            break
        if loop is None:
            loop, loop_src = eqn.prim.name, eqn.src
        var, eqn = inner, origin
    return _entry(aval, kind, primitive=_name(eqn), src=eqn.src, loop=loop, loop_src=loop_src)


def _name(eqn):
    """The primitive's name; 'checkpoint' for the outputs of an fg.checkpoint block."""
    identity = getattr(eqn.params.get("spec"), "identity", None)
    if isinstance(identity, tuple) and identity[:1] == ("checkpoint",):
        return "checkpoint"
    return eqn.prim.name


def _tapes(prog: Program):
    """Per-iteration tape entries of the while_grad equations in prog (and its sub-programs)."""
    out = []
    for e in prog.eqns:
        trips, body, kept = e.prim.stored(e.params) if e.prim.stored else (0, None, ())
        if trips is None:                    # (kept per iteration, as many as it runs: a tape)
            for r in kept:
                if isinstance(r, Var):
                    made = {v.id: q for q in body.eqns for v in q.outputs}.get(r.id)
                    entry = (_computed(r, made, "tape") if made is not None
                             else _entry(r.aval, "tape", primitive="carry", src=e.src))
                    out.append(entry._replace(loop="while_loop", loop_src=e.src))
        for sub in sub_programs(e.params):
            out += _tapes(sub)
    return out
