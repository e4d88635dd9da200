"""Forward mode as an IR -> IR transform, derived from reverse mode ("double vjp").

The joint vjp program x, ct -> (y, x_bar = J^T ct) is linear in ct, so differentiating x_bar
with respect to ct along a tangent t gives (J^T)^T t = J t. `jvp_program(prog, wrt)` builds

    (*inputs, *tangents of the wrt inputs) -> (*outputs, *output tangents)

from the existing vjp rules: every primitive has a forward derivative as soon as it has a
reverse one, and the result is an ordinary Program (printable, differentiable, compilable).
Per-primitive forward rules, cheaper than this construction, can replace it rule by rule later.
"""
from __future__ import annotations

from ..interpreter import eval_program
from ..ir import Program
from ..primitives.base import zeros_like_aval
from ..tracer import trace_flat
from .simplify import dce, simplify
from .vjp import vjp_program

__all__ = ["jvp_program"]


def jvp_program(prog: Program, wrt) -> Program:
    """Program (*inputs, *tangents for inputs with wrt True) -> (*outputs, *output tangents).
    Outputs that are not floating point get no tangent (they are not in the result)."""
    n_in, n_out = len(prog.in_vars), len(prog.outs)
    float_outs = [o.aval.is_float for o in prog.outs]
    joint = vjp_program(prog, wrt, float_outs)            # (x, ct) -> (y, x_bar)
    n_ct, n_bar = sum(float_outs), sum(bool(w) for w in wrt)
    # differentiate x_bar with respect to ct, along the input tangents
    second = vjp_program(joint, [False] * n_in + [True] * n_ct,
                         [False] * n_out + [True] * n_bar)  # (x, ct, t) -> (y, x_bar, ct_bar)
    ct_avals = [o.aval for o, f in zip(prog.outs, float_outs) if f]
    tan_avals = [v.aval for v, w in zip(prog.in_vars, wrt) if w]

    def forward(*args):
        xs, ts = args[:n_in], args[n_in:]
        zeros = [zeros_like_aval(a) for a in ct_avals]
        res = eval_program(second, *xs, *zeros, *ts)
        return res[:n_out] + res[n_out + n_bar:]

    out, consts = trace_flat(forward, prog.in_avals + tan_avals)
    assert not consts, "internal error: jvp program captured outer values"
    return simplify(dce(out))
