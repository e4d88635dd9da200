"""NumPy's complex semantics where Numba's scalar code has none or differs: the lexicographic
order of complex numbers (less, ..., maximum, minimum, fmax, fmin; Numba refuses `<` on
complex) with NumPy's treatment of NaN parts; division, reciprocal and power as NumPy's loops;
products (multiply, square) fused as NumPy's SIMD loops. Called from generated code as
`_vm.<name>` (vecmath re-exports them). A NaN in either part of an operand: comparisons are
False, maximum and minimum propagate that operand, fmax and fmin prefer the other. The complex
functions (sqrt, log, sin, ...) are in complexfuncs.py.
"""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_jit = numba.njit(inline="always", error_model="numpy")


@_jit
def _nan_part(z):
    return np.isnan(z.real) or np.isnan(z.imag)


@_jit
def c_less(a, b):
    return ((a.real < b.real and not np.isnan(a.imag) and not np.isnan(b.imag))
            or (a.real == b.real and a.imag < b.imag))


@_jit
def c_less_equal(a, b):
    return ((a.real < b.real and not np.isnan(a.imag) and not np.isnan(b.imag))
            or (a.real == b.real and a.imag <= b.imag))


@_jit
def c_greater(a, b):
    return c_less(b, a)


@_jit
def c_greater_equal(a, b):
    return c_less_equal(b, a)


@_jit
def c_maximum(a, b):
    return a if _nan_part(a) or c_greater_equal(a, b) else b


@_jit
def c_minimum(a, b):
    return a if _nan_part(a) or c_less_equal(a, b) else b


@_jit
def c_fmax(a, b):
    return a if _nan_part(b) or c_greater_equal(a, b) else b


@_jit
def c_fmin(a, b):
    return a if _nan_part(b) or c_less_equal(a, b) else b


@_jit
def c_divide(a, b, one):
    """a / b as NumPy's loop computes it (Smith's method; Numba raises on b == 0, NumPy gives
    inf or NaN parts). `one` is 1 in the operands' complex type: complex64 divides in float32,
    as NumPy's loop does (1 / subnormal overflows there)."""
    br, bi, one = b.real, b.imag, one.real
    if abs(br) >= abs(bi):
        if br == 0 and bi == 0:
            return complex(a.real / abs(br), a.imag / abs(br))
        rat = bi / br
        scl = one / (br + bi * rat)
        return complex((a.real + a.imag * rat) * scl, (a.imag - a.real * rat) * scl)
    rat = br / bi
    scl = one / (bi + br * rat)
    return complex((a.real * rat + a.imag) * scl, (a.imag * rat - a.real) * scl)


@_jit
def c_reciprocal(z, one):
    """1 / z as NumPy's reciprocal loop computes it (`one`: see c_divide)."""
    one = one.real
    if abs(z.imag) <= abs(z.real):
        r = z.imag / z.real
        d = z.real + z.imag * r
        return complex(one / d, -r / d)
    r = z.real / z.imag
    d = z.real * r + z.imag
    return complex(r / d, -one / d)


@_jit
def c_power(a, b, one, cpow):
    """a ** b as NumPy's complex power loop: 1 for b == 0; at a == 0, 0 where b has a positive
    real part and NaN otherwise; repeated multiplication for integral b with |b| < 100; else
    cpow(a, b), C's cpow (glibc's exp(b log a): complexfuncs.py's c_power_<dtype> pass it)."""
    if b.real == 0.0 and b.imag == 0.0:
        return complex(1.0, 0.0)
    if a.real == 0.0 and a.imag == 0.0:
        if b.real > 0.0:
            return complex(0.0, 0.0)
        return complex(np.nan, np.nan)
    if b.imag == 0.0 and -100.0 < b.real < 100.0 and b.real == int(b.real):
        n = int(b.real)
        if n == 1:
            return a
        if n == 2:
            return a * a
        if n == 3:
            return a * a * a
        m = -n if n < 0 else n
        acc, p, mask = one, a, 1
        while True:
            if m & mask:
                acc = acc * p
            mask <<= 1
            if m < mask:
                break
            p = p * p
        return c_divide(one, acc, one) if n < 0 else acc
    return cpow(a, b)


# ---- products: NumPy's SIMD loops fuse them ---------------------------------------------------

@intrinsic
def _fma_intrinsic(typingctx, a, b, c):
    """a * b + c rounded once (llvm.fma)."""
    if a in (types.float64, types.float32) and a == b == c:
        def codegen(ctx, builder, sig, args):
            ty = ctx.get_value_type(a)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ty, [ty] * 3), f"llvm.fma.f{a.bitwidth}")
            return builder.call(fn, args)
        return a(a, b, c), codegen


if numba.config.DISABLE_JIT:        # plain-Python debugging: intrinsics cannot run (not fused)
    def _fma(a, b, c):
        return a * b + c
else:
    _fma = _fma_intrinsic


def _numpy_fuses():
    """Whether NumPy's SIMD loops for complex multiply, square and absolute use fused
    multiply-adds on this machine (x86-64 with FMA3, AArch64): (1 + 2^-30)^2 - 1 is then exact."""
    z = np.array([complex(1.0 + 2.0 ** -30, 1.0)])
    return bool((z * z).real[0] != 2.0 ** -29)


_FUSED = _numpy_fuses()
if _FUSED:
    _muladd = _fma
else:
    @_jit
    def _muladd(a, b, c):
        return a * b + c


@intrinsic
def _c_multiply(typingctx, a, b):
    """a * b as NumPy's complex multiply and square loops: real ar br - ai bi, imaginary
    ar bi + ai br, with the first product of each exact (a fused multiply-add) where NumPy's SIMD
    loop fuses, so z * w may differ from w * z there. LLVM code, as Numba's own z * w: no
    function to inline at each of the many products of a kernel."""
    if not (isinstance(a, types.Complex) and isinstance(b, types.Complex)):
        return None
    ty = a if a.bitwidth >= b.bitwidth else b

    def codegen(ctx, builder, sig, args):
        za, zb = (ctx.make_complex(builder, ty, ctx.cast(builder, v, t, ty))
                  for v, t in zip(args, sig.args))
        ar, ai, br, bi = za.real, za.imag, zb.real, zb.imag
        out = ctx.make_complex(builder, ty)
        if _FUSED:
            fty = ctx.get_value_type(ty.underlying_float)
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(fty, [fty] * 3),
                                                 f"llvm.fma.f{ty.underlying_float.bitwidth}")
            out.real = builder.call(fma, [ar, br, builder.fneg(builder.fmul(ai, bi))])
            out.imag = builder.call(fma, [ar, bi, builder.fmul(ai, br)])
        else:
            out.real = builder.fsub(builder.fmul(ar, br), builder.fmul(ai, bi))
            out.imag = builder.fadd(builder.fmul(ar, bi), builder.fmul(ai, br))
        return out._getvalue()
    return ty(a, b), codegen


if numba.config.DISABLE_JIT:        # plain Python (not fused)
    def c_multiply(a, b):
        return a * b
else:
    c_multiply = _c_multiply
