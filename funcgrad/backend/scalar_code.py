"""Scalar expressions of elementwise equations in generated code: which functions come from
funcgrad's vectorisable math library (vecmath.py) and which need NumPy's exact semantics where
Numba's scalar versions differ. Used by codegen.py's loop emitter and by split.py's size count.
"""
from __future__ import annotations

import numpy as np

from ..ir import sub_programs
from .lowerings import lowering

FAST_MATH = ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "logaddexp")
# funcgrad's own versions wherever they appear: Numba's scalar libm call is less accurate
ACCURATE = ("cbrt",)


# complex ufuncs with NumPy's algorithms in complexfuncs.py (c_<name>_<dtype>)
COMPLEX_FUNCS = ("sqrt", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos",
                 "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh",
                 "arccosh", "arctanh", "absolute")


# NumPy's semantics where Numba's scalar versions differ (infinities, integer division by 0
# and of MIN by -1, 0 ** -n, signed zeros)
EXACT = {("floor_divide", "f"): "_vm.floor_divide({0}, {1})",
         ("remainder", "f"): "_vm.remainder({0}, {1})",
         ("fmod", "i"): "_vm.fmod_int({0}, {1})", ("fmod", "u"): "_vm.fmod_int({0}, {1})",
         ("floor_divide", "i"): "_vm.floor_divide_int({0}, {1})",
         ("floor_divide", "u"): "_vm.floor_divide_int({0}, {1})",
         ("remainder", "i"): "_vm.remainder_int({0}, {1})",
         ("remainder", "u"): "_vm.remainder_int({0}, {1})",
         ("power", "f"): "_vm.power({0}, {1})",
         ("sign", "f"): "(np.sign({0}) + 0.0)",       # NumPy: sign(-0.0) is +0.0
         # NumPy's bool + and * are `or` and `and` (Numba's are int arithmetic: True + True
         # is 2, which a later cast or comparison in the same loop would see)
         ("add", "b"): "({0} or {1})", ("multiply", "b"): "({0} and {1})",
         # the lexicographic order of complex numbers (complexmath.py)
         **{(name, "c"): f"_vm.c_{name}({{0}}, {{1}})" for name in (
             "less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax",
             "fmin")},
         ("divide", "c"): "_vm.c_divide({0}, {1}, {one})",
         ("power", "c"): "_vm.c_power_{cdtype}({0}, {1})",
         ("reciprocal", "c"): "_vm.c_reciprocal({0}, {one})",
         # fused where NumPy's SIMD loops fuse (LLVM code, not a call)
         ("multiply", "c"): "_vm.c_multiply({0}, {1})", ("square", "c"): "_vm.c_multiply({0}, {0})",
         # NumPy's complex functions: glibc's algorithms in the operand's precision
         # (complexfuncs.py); Numba's differ on finite inputs
         **{(name, "c"): f"_vm.c_{name}_{{cdtype}}({{0}})" for name in COMPLEX_FUNCS}}
# functions called (and inlined) for any dtype, and for complex operands only
_INLINE = ("multiply", "square", "sign", "add")   # (expressions, not calls)
_EXACT = {name for name, _ in EXACT if name not in COMPLEX_FUNCS + _INLINE}
_COMPLEX_CALLS = set(COMPLEX_FUNCS)


def vecmath_calls(prog):
    """How many equations of prog (sub-programs included) may call a vecmath function: an
    upper bound (a sin and cos of the same value are one call)."""
    n = 0
    for e in prog.eqns:
        name = e.prim.name
        if (name in FAST_MATH and e.outputs[0].aval.ndim) or name in ACCURATE or name in _EXACT:
            n += 1
        elif name in _COMPLEX_CALLS and np.dtype(e.inputs[0].aval.dtype).kind == "c":
            n += 1
        n += sum(vecmath_calls(sub) for sub in sub_programs(e.params))
    return n


def scalar_template(e, in_loop):
    """The scalar expression for an elementwise equation in generated code."""
    name, dtype = e.prim.name, e.outputs[0].aval.dtype
    kind = np.dtype(e.inputs[0].aval.dtype).kind
    if name == "integer_pow" and e.params["y"] < 0 and dtype.kind == "f":
        return f"(1.0 / ({{0}} ** {-e.params['y']}))"     # Numba raises on 0.0 ** -n
    if name == "convert_element_type" and kind == "c" and dtype.kind in "fiu":
        return f"np.{dtype.name}({{0}}.real)"       # NumPy keeps the real part
    exact = EXACT.get((name, kind))
    if name == "integer_pow" and kind == "c":   # NumPy's power loop (Numba's z ** 3 is cpow)
        exact = f"_vm.c_power_{{cdtype}}({{0}}, complex({float(e.params['y'])!r}, 0.0))"
    if exact is not None:
        # (vecmath's float helpers compute in float64 where a literal meets a float32 value:
        # the result, exact in float64, is rounded once to float32, as NumPy's float32 loop)
        if kind == "c":
            exact = exact.replace("{one}", f"np.{dtype.name}(1.0)").replace(
                "{cdtype}", np.dtype(e.inputs[0].aval.dtype).name)
        return (f"np.float32({exact})" if dtype == np.float32
                else f"np.complex64({exact})" if dtype == np.complex64 else exact)
    if name in ACCURATE and dtype.name in ("float64", "float32"):
        return f"_vm.{name}_f{dtype.name[-2:]}({{0}})"
    return (fast_math_template(name, dtype) if in_loop else None) or lowering(e.prim).scalar


def fast_math_template(name, dtype):
    """Vectorisable polynomial implementations (vecmath.py) replace libm calls inside loops;
    they are accurate to ~1 ulp and handle every special value as NumPy does."""
    if name not in FAST_MATH or np.dtype(dtype).name not in ("float64", "float32"):
        return None
    import numba
    if numba.config.DISABLE_JIT:          # plain-Python debugging: the intrinsics cannot run
        return None
    args = "{0}, {1}" if name == "logaddexp" else "{0}"
    return f"_vm.{name}_f{np.dtype(dtype).name[-2:]}({args})"
