"""Scalar expressions of elementwise equations in generated code, as their lowering entries
say (lowerings.py): the template, NumPy's semantics where Numba's scalar versions differ, and
which functions come from funcgrad's vectorisable math library (vecmath.py). Used by
codegen.py's loop emitter and by split.py's size count.
"""
from __future__ import annotations

import numpy as np

from ..ir import sub_programs
from .lowerings import lowering
from .source_text import numpy_call


def vecmath_calls(prog):
    """How many equations of prog (sub-programs included) may call a vecmath function: an
    upper bound (a sin and cos of the same value are one call)."""
    n = 0
    for e in prog.eqns:
        low = lowering(e.prim)
        if ((low.vecmath == "fast" and e.outputs[0].aval.ndim) or low.vecmath == "accurate"
                or (low.by_kind and not low.inline and not low.complex_func)):
            n += 1
        elif low.complex_func and np.dtype(e.inputs[0].aval.dtype).kind == "c":
            n += 1
        n += sum(vecmath_calls(sub) for sub in sub_programs(e.params))
    return n


def scalar_template(e, in_loop):
    """The scalar expression for an elementwise equation in generated code."""
    low, dtype = lowering(e.prim), e.outputs[0].aval.dtype
    special = low.special(e) if low.special is not None else None
    if special is not None:
        return special
    exact = low.by_kind.get(np.dtype(e.inputs[0].aval.dtype).kind)
    if exact is not None:
        return numpy_call(exact, e)
    if low.vecmath == "accurate" and dtype.name in ("float64", "float32"):
        return f"_vm.{e.prim.name}_f{dtype.name[-2:]}({{0}})"
    return (fast_math_template(e) if in_loop else None) or low.scalar


def fast_math_template(e, function=None):
    """Vectorisable polynomial implementations (vecmath.py) replace libm calls inside loops;
    they are accurate to ~1 ulp and handle every special value as NumPy does. `function`: the
    vecmath function to call instead of the primitive's own (its twin's, lowerings.py)."""
    dtype = np.dtype(e.outputs[0].aval.dtype)
    if lowering(e.prim).vecmath != "fast" or dtype.name not in ("float64", "float32"):
        return None
    import numba
    if numba.config.DISABLE_JIT:          # plain-Python debugging: the intrinsics cannot run
        return None
    args = ", ".join("{%d}" % k for k in range(len(e.inputs)))
    return f"_vm.{function or e.prim.name}_f{dtype.name[-2:]}({args})"
