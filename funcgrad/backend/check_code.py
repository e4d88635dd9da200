"""Generated code of fg.debug_nans's checks (funcgrad/_debug_nans.py, primitives/checks.py).

A check raises FloatingPointError(site, step, kind, ...): the check's site number and the
step and kind ("scan", "while_loop") of each compiled loop around it (outermost first;
Generator.steps), which the caller turns into the message (backend/compile.py). Inside a
fused loop nest a check counts the elements that went bad (a reduction that keeps the loop
vectorisable, and that prange accepts) and raises after the loop; a check of a scalar raises
where it stands.
"""
from __future__ import annotations

import math


def _bad(name, scalar, infs):
    if not scalar:
        return f"_vm.{'has_nonfinite' if infs else 'has_nan'}({name})"
    return f"(not np.isfinite({name}))" if infs else f"({name} != {name})"


def _raise(site, steps):
    return f"raise FloatingPointError({int(site)}{''.join(f', {k}, {kind!r}' for k, kind in steps)})"


def statement(outs, ins, e, steps):
    """A check of whole values (after a non-elementwise equation, or outside loops)."""
    infs, avals = e.params["infs"], [v.aval for v in e.inputs]
    (o,), (y, *xs) = outs, ins
    cond = _bad(y, avals[0].ndim == 0, infs)
    if xs:
        cond += " and not (" + " or ".join(_bad(x, a.ndim == 0, infs)
                                          for x, a in zip(xs, avals[1:])) + ")"
    return [f"if {cond}:", "    " + _raise(e.params["site"], steps), f"{o} = {y}"]


def _pointwise_bad(emitter, e):
    """(y, its check): y bad and no input bad, without branches (`>` of booleans, `|`), so
    that a fused loop stays vectorisable."""
    y, *xs = [emitter.read(v) for v in e.inputs]
    infs = e.params["infs"]
    xs = [x for x in xs if not _is_literal(x)]
    return y, _bad(y, True, infs) + (" > (" + " | ".join(_bad(x, True, infs) for x in xs)
                                     + ")" if xs else "")


def _is_literal(text):
    """A finite number written in the code (never bad)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def fused(emitter, e, oname, pre, post):
    """A check inside a loop nest (codegen.LoopEmitter): the count per element, the raise
    after the nest; later equations read the checked value itself."""
    y, cond = _pointwise_bad(emitter, e)
    pre.append(f"{oname}_bad = 0")
    emitter.body.append(f"{oname}_bad += {cond}")
    post += [f"if {oname}_bad:", "    " + _raise(e.params["site"], emitter.gen.steps)]
    emitter.local[e.outputs[0].id] = y
    if e.outputs[0].id in emitter.need:
        emitter.store(e.outputs[0], oname, y, pre, new=True)


def scalar(emitter, e, oname):
    """A check of a scalar value (a loop-free group of scalar code): raises where it stands."""
    y, cond = _pointwise_bad(emitter, e)
    emitter.body += [f"if {cond}:", "    " + _raise(e.params["site"], emitter.gen.steps),
                     f"{oname} = {y}"]
    emitter.local[e.outputs[0].id] = oname
