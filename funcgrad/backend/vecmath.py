"""Branch-free exp/expm1/log/log1p/sin/cos/tanh that Numba loops auto-vectorise.

Numba lowers np.exp & co. to scalar libm calls (PyPI's llvmlite has no SVML), and a call stops
LLVM's loop vectoriser. The functions here are straight-line float and integer arithmetic --
polynomials, selects (`a if c else b` becomes a blend), exponent tricks on the bit pattern --
so a loop such as

    for i in range(n):
        out[i] = sin_f64(a[i]) * exp_f64(-a[i] * a[i])

compiles to <8 x double> (AVX-512) or <4 x double> (AVX2) code. They are `njit(inline="always",
error_model="numpy")`; FUNCTIONS maps (ufunc name, dtype name) to them.

Accuracy, measured against long-double references on tens of millions of points over every
magnitude and bit pattern (float32: against float64; tests/test_vecmath.py asserts <= 2 ulp):
max error 1.05 ulp (float64) / 1.17 ulp (float32) for exp, expm1, log, log1p, sin and cos,
1.31 ulp for tanh (Cephes' rational; NumPy's own tanh reaches 1.18 / 1.37). Special values
follow NumPy: NaN propagates; exp overflows to inf above 709.78 and rounds subnormal results
(down to -745.13) once; log(0) = -inf, log(x < 0) = NaN, subnormal arguments are exact to the
same bound; signed zeros are kept (expm1, log1p, sin and tanh of -0.0 are -0.0).

sin/cos reduce by pi/2 in four parts, each product exact without FMA, carrying the reduced
argument as a double-double: accurate for |x| <= TRIG_MAX = 1e8, including the arguments nearest
to multiples of pi/2. Larger |x| (and +-inf) take libm's sin/cos through a function that LLVM is
told has masked vector variants (the vector-function ABI), so the loop stays vectorised: each
vector of lanes pays an "any lane large?" test and a call (about 0.4 ns per element in float64,
0.1 ns in float32), and only lanes with |x| > 1e8 run libm. A plain `if abs(x) > T: y =
math.sin(x)` does not work: LLVM either stops vectorising or, as llvm.sin is speculatable,
calls libm for every lane. (Checked with llvmlite's LLVM 14, numba 0.59, and LLVM 22.) float32
sin/cos reduce in float64 and evaluate float32 polynomials.

Polynomial coefficients are minimax fits (Remez exchange with mpmath at 50 digits, relative
error weighted) on the reduced intervals; the tanh rational below 0.625 is Cephes'.
"""
import math
import types as _pytypes

import numba
import numpy as np
from llvmlite import ir
from llvmlite.binding import llvm_version_info
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_jit = numba.njit(inline="always", error_model="numpy")
_INT = {types.float64: types.int64, types.float32: types.int32}
_FLT = {v: k for k, v in _INT.items()}
TRIG_MAX = 1e8


def _bitcast(ctx, b, sig, args):
    return b.bitcast(args[0], ctx.get_value_type(sig.return_type))


@intrinsic
def _f2i(typingctx, x):
    """The bit pattern of a float as a signed integer of the same width."""
    if x in _INT:
        return _INT[x](x), _bitcast


@intrinsic
def _i2f(typingctx, i):
    """The float with bit pattern i."""
    if i in _FLT:
        return _FLT[i](i), _bitcast


@intrinsic
def _lshr(typingctx, i, n):
    """Logical shift right (AVX2 has no 64-bit arithmetic shift; `>>` on int64 is one)."""
    if i in _FLT and i == n:
        return i(i, n), lambda ctx, b, sig, args: b.lshr(*args)


def _fmuladd(b, ty):
    name = "llvm.fmuladd.f64" if ty == ir.DoubleType() else "llvm.fmuladd.f32"
    return cgutils.get_or_insert_function(b.module, ir.FunctionType(ty, [ty] * 3), name)


@intrinsic
def _fma(typingctx, x, y, z):
    """x * y + z, fused where the target has FMA, else a multiply and an add (llvm.fmuladd)."""
    if x in _INT and x == y == z:
        return x(x, x, x), lambda ctx, b, sig, args: b.call(_fmuladd(b, args[0].type), args)


@intrinsic
def _horner(typingctx, x, coeffs):
    """c[0] + x * (c[1] + x * (c[2] + ...)) for a constant tuple c, with llvm.fmuladd."""
    def codegen(ctx, b, sig, args):
        fn = _fmuladd(b, args[0].type)
        cs = [ctx.cast(b, b.extract_value(args[1], i), t, x) for i, t in enumerate(coeffs)]
        acc = cs[-1]
        for c in reversed(cs[:-1]):
            acc = b.call(fn, [args[0], acc, c])
        return acc
    if x in _INT:
        return x(x, coeffs), codegen


# --- the libm fallback for sin/cos of large arguments -------------------------------------------
_FALLBACK_OPS = ("sin", "cos")
_VFS = (2, 4, 8, 16)            # vector widths given variants
_NO_MEMORY = "memory(none)" if llvm_version_info >= (16,) else "readnone"


def _fallback_fn(mod, op):
    """`double f(double x)`: libm's op(x) where |x| > TRIG_MAX, else x; defined once per LLVM
    module. It is noinline and not speculatable, and its "vector-function-abi-variant" attribute
    names vector versions (defined here too, for each width in _VFS) that test all lanes at once
    and call libm only for the large ones. So the loop vectoriser keeps a loop with
    `if abs(x) > TRIG_MAX: y = f(x)` vectorised (calling the variant for every vector and
    blending), instead of giving up or calling libm for every lane."""
    name = "funcgrad_vecmath_%s_f64"
    if name % op not in mod.globals:
        keep = []
        for o in _FALLBACK_OPS:
            keep += _define_fallback(mod, name % o, f"llvm.{o}.f64")
        # llvm.compiler.used keeps the not-yet-called variants alive until the vectoriser runs.
        ptr = ir.IntType(8).as_pointer()
        used = ir.GlobalVariable(mod, ir.ArrayType(ptr, len(keep)), "llvm.compiler.used")
        used.linkage, used.section = "appending", "llvm.metadata"
        used.initializer = ir.Constant(used.value_type, [v.bitcast(ptr) for v in keep])
    return mod.globals[name % op]


def _define_fallback(mod, name, intrinsic_name):
    d, i32 = ir.DoubleType(), ir.IntType(32)
    libm = cgutils.get_or_insert_function(mod, ir.FunctionType(d, [d]), intrinsic_name)
    fn = ir.Function(mod, ir.FunctionType(d, [d]), name)
    variants = [ir.Function(mod, ir.FunctionType(ir.VectorType(d, n), [ir.VectorType(d, n)]),
                            f"{name}_v{n}") for n in _VFS]
    for f in [fn] + variants:
        f.linkage = "internal"
        b = ir.IRBuilder(f.append_basic_block())
        x = f.args[0]
        n = getattr(x.type, "count", 0)
        hi, lo = ((ir.Constant(x.type, [t] * n if n else t)) for t in (TRIG_MAX, -TRIG_MAX))
        large = b.or_(b.fcmp_ordered(">", x, hi), b.fcmp_ordered("<", x, lo))
        acc = cgutils.alloca_once_value(b, x)
        if not n:
            with b.if_then(large, likely=False):
                b.store(b.call(libm, [x]), acc)
        else:       # one test for the whole vector, then a loop over the lanes
            any_large = b.icmp_unsigned("!=", b.bitcast(large, ir.IntType(n)),
                                        ir.Constant(ir.IntType(n), 0))
            with b.if_then(any_large, likely=False):
                with cgutils.for_range(b, i32(n)) as loop:
                    i = loop.index
                    with b.if_then(b.extract_element(large, i)):
                        y = b.call(libm, [b.extract_element(x, i)])
                        b.store(b.insert_element(b.load(acc), y, i), acc)
        b.ret(b.load(acc))
    abi = ",".join(f"_ZGV_LLVM_N{n}v_{name}({name}_v{n})" for n in _VFS)
    for attr in ("noinline", "nounwind", "willreturn", _NO_MEMORY,
                 f'"vector-function-abi-variant"="{abi}"'):
        set.add(fn.attributes, attr)        # bypasses llvmlite's list of known attributes
    return variants


def _call_fallback(b, op, args):
    fn = _fallback_fn(b.module, op)
    call = b.call(fn, args)
    for attr in fn.attributes:              # LLVM 14 reads the variants from the call only
        if attr.startswith('"vector'):
            set.add(call.attributes, attr)
    return call


def _make_fallback(op):
    @intrinsic
    def fallback(typingctx, x):
        if x == types.float64:
            return x(x), lambda ctx, b, sig, args: _call_fallback(b, op, args)
    return fallback


_sin_libm, _cos_libm = _make_fallback("sin"), _make_fallback("cos")

# --- polynomials (ascending powers) ------------------------------------------------------------
# (e**r - 1 - r) / r**2 on |r| <= ln2/2; relative error 2**-58.4 (float64), 2**-22.9 (float32)
_EXPQ64 = (0.5, 0.1666666666666667, 0.041666666666666616, 0.008333333333326157,
           0.0013888888888918002, 0.0001984126987476098, 2.4801587245677587e-05,
           2.7557255463227105e-06, 2.755734964185685e-07, 2.510519486879459e-08,
           2.0889379572395896e-09)
_EXPQ32 = (0.5, 0.16666577756404877, 0.04166685417294502, 0.008363151922821999,
           0.0013901289785280824)
# (2 atanh(s) / s - 2) / s**2 in z = s**2 <= 0.0295; 2**-51.0 / 2**-21.8 (the result sees z/3 of it)
_LOGG64 = (0.666666666666667, 0.3999999999989893, 0.2857142862621769, 0.2222221109763847,
           0.18182891693501974, 0.15331640015411, 0.1461741911303508)
_LOGG32 = (0.6666668653488159, 0.3998875617980957, 0.295809268951416)
# (sin r - r) / r**3 and (cos r - 1 + r**2/2) / r**4 in z = r**2 <= (pi/4)**2; 2**-52.8 and
# 2**-54.8 (float64), 2**-23.0 and 2**-24.3 (float32), scaled by <= z/6 and z/24 in the result
_SINS64 = (-0.16666666666666666, 0.008333333333330922, -0.00019841269836724175,
           2.7557316086724815e-06, -2.505112887236228e-08, 1.5917933889190404e-10)
_COSC64 = (0.041666666666666664, -0.0013888888888887387, 2.480158729875096e-05,
           -2.7557317264905243e-07, 2.0876144977888223e-09, -1.138254703804591e-11)
_SINS32 = (-0.166666641831398, 0.008332745172083378, -0.00019587310089264065)
_COSC32 = (0.0416666641831398, -0.0013888300163671374, 2.4547556677134708e-05)
# Cephes tanh: tanh(x) = x + x z P(z) / Q(z), z = x**2, |x| < 0.625
_TANHP = (-1.61468768441708447952e3, -9.92877231001918586564e1, -9.64399179425052238628e-1)
_TANHQ = (4.84406305325125486048e3, 2.23548839060100448583e3, 1.12811678491632931402e2, 1.0)
# pi/2 = _P1 + _P2 + _P3 + _P4 + O(2**-141): _P1.._P3 have <= 27 bits, so k * _Pi is exact
# for |k| < 2**26, i.e. |x| <= 1e8
_P1, _P2, _P3, _P4 = (1.570796325802803, 9.920935739593517e-10, 5.721188709663575e-18,
                      1.6446256936324258e-26)


def _family(F):
    """{name: njit function} for float type F (np.float64 or np.float32)."""
    f64 = F is np.float64
    INT = np.int64 if f64 else np.int32
    MB, BIAS = (52, 1023) if f64 else (23, 127)
    ZERO, HALF, ONE, TWO = F(0), F(0.5), F(1), F(2)
    INF, NAN = F(np.inf), F(np.nan)
    SH = F(1.5 * 2.0 ** MB)                 # x + SH rounds x to an integer kept in SH's low bits
    ISH = INT(int(np.array(SH).view(INT)))
    SIGN = INT(-(1 << (63 if f64 else 31)))
    IMB, IBIAS, IZERO, IONE, I64 = INT(MB), INT(BIAS), INT(0), INT(1), INT(64)
    IK, IK2, IBIASED = INT(4096), INT(2048), INT(BIAS << MB)    # keep shifted values non-negative
    # (Numba widens int32 arithmetic to int64; INT(...) narrows it back, and LLVM then keeps
    # the operations 32-bit.)
    INVLN2 = F(1.4426950408889634)
    # ln2 = LN2HI + LN2LO with k * LN2HI exact for every k used
    LN2HI, LN2LO = ((0.6931471806019545, -4.2009150726810846e-11) if f64
                    else (0.693145751953125, 1.428606765330187e-06))
    LN2HI, LN2LO = F(LN2HI), F(LN2LO)
    EXPQ, LOGG = (_EXPQ64, _LOGG64) if f64 else (_EXPQ32, _LOGG32)
    EXP_MAX = F(1000 if f64 else 150)       # |k| / 2 stays a normal exponent
    EM1_LO, EM1_HI = F(-60 if f64 else -30), F(710 if f64 else 90)
    TINY, SUBSCALE, SUBK = F(np.finfo(F).tiny), F(2.0 ** (MB + 2)), F(MB + 2)
    ISQRTH = INT(0x3fe6a09e667f3bcd if f64 else 0x3f3504f3)     # bits of sqrt(1/2)
    TANH_SMALL, TANH_MAX = F(0.625), F(20 if f64 else 10)
    SINS, COSC = [tuple(map(F, c)) for c in ((_SINS64, _COSC64) if f64 else (_SINS32, _COSC32))]
    reduce = _reduce_f64 if f64 else _reduce_f32
    TRIG_MAX_F, ITWO, ISIGN2 = F(TRIG_MAX), INT(2), INT(62 if f64 else 30)

    @_jit
    def pow2(k):
        """2.0**k for an integer k in the normal exponent range."""
        return _i2f(INT((k + IBIAS) << IMB))

    @_jit
    def rint_mul(x, c):
        """x * c rounded to an integer, as (float, int), for |x * c| < 2**(MB - 1)."""
        t = _fma(x, c, SH)
        return t - SH, INT(_f2i(t) - ISH)

    @_jit
    def exp_core(x):
        """e**x for |x| <= EXP_MAX or NaN; results below/above the range round to 0/inf."""
        kf, k = rint_mul(x, INVLN2)
        r = _fma(-kf, LN2LO, _fma(-kf, LN2HI, x))
        p = ONE + _fma(r * r, _horner(r, EXPQ), r)
        k1 = INT(_lshr(INT(k + IK), IONE) - IK2)  # k // 2; two factors: subnormals round once
        return p * pow2(k1) * pow2(k - k1)

    # Clamps are written `C if x > C else x`, which keeps NaN (min/max need not).
    @_jit
    def exp(x):
        x = EXP_MAX if x > EXP_MAX else x
        return exp_core(-EXP_MAX if x < -EXP_MAX else x)

    @_jit
    def expm1(x):
        xc = EM1_HI if x > EM1_HI else x
        xc = EM1_LO if xc < EM1_LO else xc
        kf, k = rint_mul(xc, INVLN2)
        hi = _fma(-kf, LN2HI, xc)
        lo = kf * LN2LO
        r = hi - lo
        c = (hi - r) - lo                   # r + c = hi - lo
        tail = (r * r) * _horner(r, EXPQ) + _fma(c, r, c)     # expm1(r + c) = r + tail
        k1 = INT(_lshr(INT(k + IK), IONE) - IK2)
        s1, s2 = pow2(k1), pow2(k - k1)
        pos = k > IZERO
        # k > 0: (1 - 2**-k + r + tail) * 2**k;  k <= 0: 2**k - 1 + r 2**k + tail 2**k
        m = ONE if pos else s1 * s2
        a = (ONE - pow2(-(I64 if k > I64 else k))) if pos else m - ONE
        b = r * m
        s = a + b                           # Fast2Sum: |a| >= |b| or a == 0
        res = s + ((b - (s - a)) + tail * m)
        res = res * s1 * s2 if pos else res
        return x if x == ZERO else res

    @_jit
    def split(x):
        """x > 0 normal -> (f, k) with x = 2**k (1 + f), sqrt(1/2) <= 1 + f < sqrt(2)."""
        ix = _f2i(x)
        e = INT(_lshr(INT(ix - ISQRTH + IBIASED), IMB) - IBIAS)
        return _i2f(INT(ix - (e << IMB))) - ONE, _i2f(INT(e + ISH)) - SH

    @_jit
    def log_core(f, k, c):
        """log(2**k (1 + f)) + c for sqrt(1/2) <= 1 + f < sqrt(2) and a tiny c (fdlibm's form)."""
        s = f / (TWO + f)
        z = s * s
        hfsq = HALF * f * f
        r = z * _horner(z, LOGG)
        return _fma(k, LN2HI, f - (hfsq - (s * (hfsq + r) + _fma(k, LN2LO, c))))

    @_jit
    def log(x):
        sub = x < TINY
        f, k = split(x * SUBSCALE if sub else x)
        res = log_core(f, k - SUBK if sub else k, ZERO)
        special = -INF if x == ZERO else (x if x > ZERO else NAN)
        return res if (x > ZERO) & (x < INF) else special

    @_jit
    def log1p(x):
        u = ONE + x
        f, k = split(u)
        c = ((ONE - (u - x)) if u >= TWO else (x - (u - ONE))) / u   # log(1+x) - log(u)
        small = k == ZERO                   # then f = x exactly
        res = log_core(x if small else f, k, ZERO if small else c)
        special = -INF if x == -ONE else (x if x > ZERO else NAN)
        res = res if (x > -ONE) & (x < INF) else special
        return x if x == ZERO else res

    @_jit
    def tanh(x):
        ax = abs(x)
        z = x * x
        small = ax < TANH_SMALL
        e = exp_core(TWO * (TANH_MAX if ax > TANH_MAX else ax))
        # one division: x + x z P/Q below 0.625, else 1 - 2 / (e**2|x| + 1)
        q = (z * _horner(z, _TANHP) if small else TWO) / (_horner(z, _TANHQ) if small else e + ONE)
        res = _fma(ax, q, ax) if small else ONE - q
        return _i2f(INT(_f2i(res) | (_f2i(x) & SIGN)))

    @_jit
    def sincos_kernels(x):
        """(n, s, c): x = n pi/2 + r + lo, and fdlibm's sin and cos kernels on r + lo."""
        n, r, lo = reduce(x)
        z = r * r
        v = z * r
        s = r - ((z * (HALF * lo - v * _horner(z, SINS[1:])) - lo) - v * SINS[0])
        hz = HALF * z
        w = ONE - hz
        c = w + (((ONE - w) - hz) + (z * z * _horner(z, COSC) - r * lo))
        return n, s, c

    @_jit
    def quadrant_value(n, s, c):
        """sin(r + n pi/2) from the kernels: pick by n's parity, sign by its second bit."""
        n = INT(n)
        res = c if n & IONE else s
        return _i2f(INT(_f2i(res) ^ ((n & ITWO) << ISIGN2)))

    @_jit
    def sincos(x, quadrant):
        """sin(x + quadrant pi/2) for |x| <= TRIG_MAX."""
        n, s, c = sincos_kernels(x)
        return quadrant_value(n + quadrant, s, c)

    @_jit
    def sin(x):
        res = sincos(x, IZERO)
        if abs(x) > TRIG_MAX_F:
            res = F(_sin_libm(np.float64(x)))
        return x if x == ZERO else res

    @_jit
    def cos(x):
        res = sincos(x, IONE)
        if abs(x) > TRIG_MAX_F:
            res = F(_cos_libm(np.float64(x)))
        return res

    @_jit
    def sin_cos(x):
        """(sin(x), cos(x)) sharing one range reduction (when a loop needs both)."""
        n, s, c = sincos_kernels(x)
        rs = quadrant_value(n, s, c)
        rc = quadrant_value(n + IONE, s, c)
        if abs(x) > TRIG_MAX_F:
            rs = F(_sin_libm(np.float64(x)))
            rc = F(_cos_libm(np.float64(x)))
        return (x if x == ZERO else rs), rc

    LN2 = F(0.6931471805599453)

    @_jit
    def logaddexp(a, b):
        """log(exp(a) + exp(b)) = max + log1p(exp(-|a - b|)), as NumPy computes it (equal
        arguments, infinities included, give a + ln 2; a nan gives nan) but vectorisable:
        Numba's scalar np.logaddexp costs ~20 ns, this ~2 ns in a loop."""
        d = a - b
        m = a if d > ZERO else b
        r = m + log1p(exp(-abs(d)))
        return a + LN2 if a == b else r

    return {"exp": exp, "expm1": expm1, "log": log, "log1p": log1p, "sin": sin, "cos": cos,
            "tanh": tanh, "logaddexp": logaddexp, "sin_cos": sin_cos}


@_jit
def _two_diff(a, b):
    """(s, e) with s + e == a - b exactly."""
    s = a - b
    bb = s - a
    return s, (a - (s - bb)) - (b + bb)


@_jit
def _reduce_f64(x):
    """(n, r, lo) with x - n pi/2 = r + lo, |r| <= pi/4 (to ~2**-105 relative), |x| <= TRIG_MAX."""
    t = _fma(x, 0.6366197723675814, 6755399441055744.0)      # 2/pi, 1.5 * 2**52
    kf = t - 6755399441055744.0
    r1, e1 = _two_diff(_fma(-kf, _P1, x), kf * _P2)
    r2, e2 = _two_diff(r1, kf * _P3)
    lo = _fma(-kf, _P4, e1 + e2)
    r = r2 + lo
    return _f2i(t) - 0x4338000000000000, r, lo - (r - r2)


@_jit
def _reduce_f32(x):
    """_reduce_f64 for float32 x, computed in float64 (pi/2 in two parts suffices)."""
    xd = np.float64(x)
    t = _fma(xd, 0.6366197723675814, 6755399441055744.0)
    kf = t - 6755399441055744.0
    rd = _fma(-kf, 9.920935796805404e-10, _fma(-kf, _P1, xd))
    r = np.float32(rd)
    return np.int32(_f2i(t) - 0x4338000000000000), r, np.float32(rd - np.float64(r))


_F64, _F32 = _family(np.float64), _family(np.float32)


(exp_f64, expm1_f64, log_f64, log1p_f64, sin_f64, cos_f64, tanh_f64, logaddexp_f64,
 sin_cos_f64) = _F64.values()
(exp_f32, expm1_f32, log_f32, log1p_f32, sin_f32, cos_f32, tanh_f32, logaddexp_f32,
 sin_cos_f32) = _F32.values()

FUNCTIONS = {(name, dt): globals()[f"{name}_f{dt[-2:]}"]
             for name in ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "logaddexp")
             for dt in ("float64", "float32")}


# ---- compensated summation (the code generator writes the loop itself) ------------------------

@_jit
def add_compensated(acc, comp, v):
    """acc + v with Knuth's TwoSum: the rounding error of the addition, exact in binary
    floating point, is added to the running compensation comp. Returns (acc, comp)."""
    t = acc + v
    b = t - acc
    return t, comp + ((acc - (t - b)) + (v - b))


@_jit
def compensated(acc, comp):
    """A compensated sum's value: acc + comp, or acc itself once it is inf or nan (the
    compensation of an infinite sum is nan: inf - inf)."""
    return acc + comp if np.isfinite(acc) else acc


@numba.njit(error_model="numpy")
def compensated_into(accs, comps, out):
    """out[...] = compensated(accs[...], comps[...]), elementwise (out may be accs)."""
    a, c, o = accs.reshape(-1), comps.reshape(-1), out.reshape(-1)
    for k in range(a.size):
        o[k] = compensated(a[k], c[k])


@numba.njit(error_model="numpy")
def compensated_total(parts, comps):
    """sum(parts) + sum(comps), accumulated with TwoSum compensation: the total of per-thread
    partial sums and their compensations."""
    acc = 0.0
    comp = 0.0
    for k in range(parts.size):
        acc, comp = add_compensated(acc, comp + comps[k], parts[k])
    return compensated(acc, comp)


# ---- cube root: libm's, refined by one Newton step with an exact residual ----------------------

_P300, _M300, _P100, _M100 = 2.0 ** 300, 2.0 ** -300, 2.0 ** 100, 2.0 ** -100   # cbrt(2**300) = 2**100


@_jit
def cbrt_f64(x):
    """cbrt within ~0.5 ulp (libm's cbrt, as Numba calls it, is off by up to 3 ulp): one Newton
    step y - (y**3 - x) / (3 y**2) whose residual is computed exactly with FMAs. Tiny and huge
    inputs are scaled by 2**+-300 (exactly) so the residual stays out of the subnormal range
    and y**3 cannot overflow; 0, inf and NaN are returned as libm gives them."""
    a = abs(x)
    if a == 0.0 or not (a <= 1.7976931348623157e308):      # 0, inf, nan
        return np.cbrt(x)
    scale = 1.0
    if a < 1e-290:
        x, scale = x * _P300, _M100
    elif a > 1e290:
        x, scale = x * _M300, _P100
    y = np.cbrt(x)
    y2 = y * y
    e2 = _fma(y, y, -y2)                          # y * y == y2 + e2 exactly
    r = _fma(y2, y, -x) + e2 * y                  # y**3 - x
    return (y - r / (3.0 * y2)) * scale


@_jit
def cbrt_f32(x):
    """float32 cbrt, computed in float64 and rounded once."""
    return np.float32(cbrt_f64(np.float64(x)))


# ---- NumPy's semantics for scalar operations whose Numba versions differ ------------------------

@numba.njit(inline="always", error_model="numpy")
def floor_divide(a, b):
    """NumPy's float floor_divide (npy_floor_divide): exact at infinities and signed zeros."""
    if b == 0:
        return a / b
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0:
        if (b < 0) != (mod < 0):
            div -= 1.0
    if div != 0:
        floordiv = np.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
        return floordiv
    return math.copysign(0.0, a / b)


@numba.njit(inline="always", error_model="numpy")
def remainder(a, b):
    """NumPy's float remainder (npy_remainder): the sign of the divisor, exact at infinities."""
    mod = np.fmod(a, b)
    if b == 0:
        return mod
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
        return mod
    return math.copysign(0.0, b)


@numba.njit(inline="always", error_model="numpy")
def floor_divide_int(a, b):
    """NumPy's integer floor_divide: 0 where b == 0, and MIN // -1 wraps to MIN (the machine's
    division traps there: the process would die of SIGFPE)."""
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b


@numba.njit(inline="always", error_model="numpy")
def remainder_int(a, b):
    """NumPy's integer remainder (the sign of the divisor): 0 where b is 0 or -1."""
    if b == 0 or b == -1:
        return a - a
    return a % b


@numba.njit(inline="always", error_model="numpy")
def fmod_int(a, b):
    """C's truncated remainder for integers, as np.fmod (0 where b is 0 or -1)."""
    if b == 0 or b == -1:
        return a - a
    r = abs(a) % abs(b)
    return -r if a < 0 else r


@numba.njit(inline="always", error_model="numpy")
def left_shift_int(a, b, bits):
    """NumPy's integer left_shift: 0 where the count is negative or not below the width in
    bits (C leaves those shifts undefined; the machine's shift takes the count mod the width)."""
    if b < 0 or b >= bits:
        return a - a
    return a << b


@numba.njit(inline="always", error_model="numpy")
def right_shift_int(a, b, bits):
    """NumPy's integer right_shift: arithmetic; -1 or 0 (by a's sign) where the count is
    negative or not below the width in bits."""
    if b < 0 or b >= bits:
        return (a - a) - 1 if a < 0 else a - a
    return a >> b


@numba.njit(inline="always", error_model="numpy")
def power(a, b):
    """a ** b as NumPy's ufunc computes it elementwise: C pow; never raises (0.0 ** -1.0 is
    inf). NumPy's scalar-exponent shortcut (0.5 -> sqrt) is taken while tracing."""
    return np.power(a, b)


from .debugmath import has_nan, has_nonfinite  # noqa: E402,F401
from .complexmath import (c_divide, c_fmax, c_fmin, c_greater, c_greater_equal,  # noqa: E402,F401
                          c_less, c_less_equal, c_maximum, c_minimum, c_multiply, c_power,
                          c_reciprocal)
from .complexfuncs import *  # noqa: E402,F401,F403  (c_sqrt_complex128, c_sqrt_complex64, ...)
from .runtime import argsort_rows, dot, dot_into, searchsorted, threefry_bits  # noqa: E402,F401  (disk-cached, called)
from .lapack import (  # noqa: E402,F401  (the same)
    lapack_cholesky, lapack_cofactor, lapack_det, lapack_eig, lapack_eigh, lapack_inv, lapack_lu,
    lapack_pinv, lapack_slogdet, lapack_solve, lapack_svd)
from .specialmath import digamma, erfinv, gammaln, ndtri, polygamma  # noqa: E402,F401  (the same)


# ---- compiled-once versions, for very large kernels ----------------------------------------------

def _outline():
    """A module of the functions above compiled as ordinary (called, not inlined) functions.

    Numba inlines an `inline="always"` function's IR at every call site, before type inference;
    each of sin, exp, ... brings dozens of blocks, and the inlining and SSA passes then take
    time quadratic in the number of blocks of the caller (0.1 s per call site in a loop of a few
    hundred statements, 36 s for 60 unrolled steps of `x + 1e-3 * sin(x) * x`). The code
    generator calls these instead in kernels it splits (codegen.Generator.large): each is
    compiled once per signature. Same arithmetic, same results; the calls are not vectorised.
    """
    module = _pytypes.ModuleType(__name__ + ".outlined", _outline.__doc__)
    for name, fn in list(globals().items()):
        if not name.startswith("_") and isinstance(fn, numba.core.registry.CPUDispatcher):
            inlined = fn.targetoptions.get("inline") == "always"      # (others: already called)
            setattr(module, name, numba.njit(error_model="numpy")(fn.py_func) if inlined else fn)
    module.c_multiply = c_multiply      # (an intrinsic, LLVM code: nothing to outline)
    return module


outlined = _outline()


# ---- Ctrl-C in compiled loops ---------------------------------------------------------------
# Kernels hold the GIL and run no bytecode, so Python's SIGINT handler would wait for the whole
# kernel. Loops call `interrupted()`: Python's own PyErr_CheckSignals (an atomic load when no
# signal arrived, about 5 ns), which runs the handlers of signals that did arrive; when one
# raised (KeyboardInterrupt), the kernel raises Interrupted, which the caller turns into
# KeyboardInterrupt. Only the main thread handles signals; elsewhere this is always False.

from .._errors import KernelInterrupted as Interrupted  # noqa: E402

_check_signals = numba.types.ExternalFunction("PyErr_CheckSignals", numba.types.intc())


@numba.njit(error_model="numpy")
def interrupted():
    return _check_signals() != 0
