"""NumPy's complex elementwise functions for compiled code: sqrt, exp, exp2, expm1, log, log1p,
log2, log10, the trigonometric and hyperbolic functions and their inverses, absolute, and the
general case of power.

NumPy computes these with C99's csqrt, cexp, clog, csin, ..., casinh, catanh, cpow (on Linux
glibc's; for complex64 csqrtf & co., in float32), except expm1, log1p, exp2, log2 and log10,
its own formulas around them (numpy/_core/src/umath/funcs.inc.src), and absolute, a SIMD loop.
Numba's versions (ports of CPython's cmath and of NumPy 1.x's npymath) differ on finite inputs:
sqrt and log lose accuracy for subnormal and huge parts (|z| under- or overflows), log near
|z| = 1 and expm1 for tiny z; sin, cos, sinh, cosh and exp give NaN where the result overflows
beside a zero part (NumPy's exp(800+0j) is inf+0j); tanh is NaN for real parts past 355;
arcsin, arccos and arccosh raise ZeroDivisionError at some inputs; complex64 is computed in
float64. The functions here follow glibc's algorithms (math/s_c*_template.c and
k_casinh_template.c: C99 Annex G's special values and signed zeros, scaling by powers of two
for tiny and huge parts, log1p of x^2 + y^2 - 1 with exact products near |z| = 1) and call
the libm functions glibc calls (sin, cos, exp, expm1, log, log1p, sinh, cosh, hypot, atan2;
sinf & co. in float32), so compiled results equal NumPy's to the bit where NumPy uses glibc
(checked on hundreds of thousands of values over the whole range, both dtypes, infinite and
NaN parts included). With another libm (macOS, Windows) they are glibc's values, within a few
ulps of NumPy's.

_build(F) writes one set for the parts' float type F (np.float64 for complex128, np.float32 for
complex64): every constant is an F, so complex64 is computed in float32 as NumPy does. The
internal functions take and return the parts (x, y); c_<name>_<complex dtype>(z) are the
exported ones (scalar_code.py maps each complex ufunc to them; vecmath re-exports them).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from .complexmath import _muladd, c_power

_jit = numba.njit(inline="always", error_model="numpy")
_call = numba.njit(error_model="numpy")          # the large ones: called, not inlined


@_jit
def _swap_up(a, b):
    """(a, b) ordered by absolute value."""
    return (a, b) if abs(a) <= abs(b) else (b, a)


@_jit
def _two_prod(a, b):
    """a * b = hi + lo exactly (Dekker's product; |a|, |b| < 1)."""
    hi = a * b
    c = 134217729.0 * a
    ah = c - (c - a)
    al = a - ah
    c = 134217729.0 * b
    bh = c - (c - b)
    bl = b - bh
    return hi, ((ah * bh - hi) + ah * bl + al * bh) + al * bl


@_call
def _x2y2m1_f64(x, y):
    """x^2 + y^2 - 1 for 1 > x >= y >= eps / 2 and x^2 + y^2 >= 0.5, as glibc's __x2y2m1: the
    exact squares' parts and -1, sorted by magnitude, added pairwise exactly, re-sorted."""
    v1, v0 = _two_prod(x, x)
    v3, v2 = _two_prod(y, y)
    v4 = -1.0
    v0, v1 = _swap_up(v0, v1)
    v1, v2 = _swap_up(v1, v2)
    v0, v1 = _swap_up(v0, v1)
    v2, v3 = _swap_up(v2, v3)
    v1, v2 = _swap_up(v1, v2)
    v0, v1 = _swap_up(v0, v1)
    v3, v4 = _swap_up(v3, v4)
    v2, v3 = _swap_up(v2, v3)
    v1, v2 = _swap_up(v1, v2)
    v0, v1 = _swap_up(v0, v1)
    hi = v1 + v0                                   # each sum split exactly (Dekker), re-sorted
    v0, v1 = (v1 - hi) + v0, hi
    v1, v2 = _swap_up(v1, v2)
    v2, v3 = _swap_up(v2, v3)
    v3, v4 = _swap_up(v3, v4)
    hi = v2 + v1
    v1, v2 = (v2 - hi) + v1, hi
    v2, v3 = _swap_up(v2, v3)
    v3, v4 = _swap_up(v3, v4)
    hi = v3 + v2
    v2, v3 = (v3 - hi) + v2, hi
    v3, v4 = _swap_up(v3, v4)
    hi = v4 + v3
    v3, v4 = (v4 - hi) + v3, hi
    return v4 + v3 + v2 + v1 + v0


@_jit
def _x2y2m1_f32(x, y):
    """glibc's __x2y2m1f: in float64, rounded once to float32."""
    dx, dy = np.float64(x), np.float64(y)
    return np.float32((dx - 1.0) * (dx + 1.0) + dy * dy)


def _build(F):
    """The functions for parts of float type F (module docstring)."""
    fi = np.finfo(F)
    ZERO, HALF, ONE, TWO, FOUR = F(0.0), F(0.5), F(1.0), F(2.0), F(4.0)
    INF, NAN, MAX, MIN, EPS = F(np.inf), F(np.nan), F(fi.max), F(fi.tiny), F(fi.eps)
    PI, PI_2, PI_4, LN2 = F(math.pi), F(math.pi / 2), F(math.pi / 4), F(math.log(2.0))
    LOG2E, LOG10E = F(1.0 / math.log(2.0)), F(math.log10(math.e))
    mant = fi.nmant + 1
    T = F(int((fi.maxexp - 1) * math.log(2.0)))       # exp(T) is finite (709, 88)
    T2 = F(int((fi.maxexp - 1) * math.log(2.0) / 2))  # ctanh's and ctan's (354, 44)
    SQRT_UP, SQRT_DOWN = F(2.0 ** (2 * ((mant + 1) // 2))), F(2.0 ** -((mant + 1) // 2))
    LOG_UP, LOG_SCALE = F(2.0 ** mant), F(mant)
    x2y2m1 = _x2y2m1_f64 if F is np.float64 else _x2y2m1_f32

    @_jit
    def signbit(x):
        return math.copysign(ONE, x) < ZERO

    @_jit
    def sincos(x):
        return (math.sin(x), math.cos(x)) if abs(x) > MIN else (x, ONE)

    @_call
    def csqrt(x, y):
        """glibc's csqrt: sqrt((|z| +- x) / 2) for the larger part, y / (2 that) for the
        other (no cancellation); parts scaled by 4 near overflow, by 2^(2k) when subnormal."""
        if not (math.isfinite(x) and math.isfinite(y)):
            if math.isinf(y):
                return INF, y
            if math.isinf(x):
                if x < ZERO:
                    return (NAN if math.isnan(y) else ZERO), math.copysign(INF, y)
                return x, (NAN if math.isnan(y) else math.copysign(ZERO, y))
            return NAN, NAN
        if y == ZERO:
            if x < ZERO:
                return ZERO, math.copysign(math.sqrt(-x), y)
            return abs(math.sqrt(x)), math.copysign(ZERO, y)
        if x == ZERO:
            ay = abs(y)
            r = math.sqrt(HALF * ay) if ay >= TWO * MIN else HALF * math.sqrt(TWO * ay)
            return r, math.copysign(r, y)
        scale = ONE                 # scale the parts into range; the result by its square root
        if abs(x) > MAX / FOUR:
            x, y, scale = x / FOUR, y / FOUR, TWO
        elif abs(y) > MAX / FOUR:
            x = x / FOUR if abs(x) >= FOUR * MIN else ZERO
            y, scale = y / FOUR, TWO
        elif abs(x) < TWO * MIN and abs(y) < TWO * MIN:
            x, y, scale = x * SQRT_UP, y * SQRT_UP, SQRT_DOWN
        d = math.hypot(x, y)
        if x > ZERO:        # 2 Re(res) Im(res) = y: no cancellation in d +- x
            r = math.sqrt(HALF * (d + x))
            if scale == TWO and abs(y) < ONE:       # (no intermediate underflow)
                s, r, scale = y / r, r * TWO, ONE
            else:
                s = HALF * (y / r)
        else:
            s = math.sqrt(HALF * (d - x))
            if scale == TWO and abs(y) < ONE:
                r, s, scale = abs(y / s), s * TWO, ONE
            else:
                r = abs(HALF * (y / s))
        return r * scale, math.copysign(s * scale, y)

    @_call
    def clog(x, y):
        """glibc's clog: log|z| as log1p(x^2 + y^2 - 1) / 2 near |z| = 1, else log(hypot) of
        the parts scaled out of overflow and underflow; arg by atan2."""
        if x == ZERO and y == ZERO:
            return -ONE / abs(x), math.copysign(PI if signbit(x) else ZERO, y)
        if math.isnan(x) or math.isnan(y):
            return (INF if math.isinf(x) or math.isinf(y) else NAN), NAN
        ax, ay = abs(x), abs(y)
        if ax < ay:
            ax, ay = ay, ax
        if ax > MAX / TWO:
            scale, ax = -ONE, ax / TWO
            ay = ay / TWO if ay >= MIN * TWO else ZERO
        elif ax < MIN and ay < MIN:
            scale, ax, ay = LOG_SCALE, ax * LOG_UP, ay * LOG_UP
        else:
            scale = ZERO
        if ax == ONE and scale == ZERO:
            re = math.log1p(ay * ay) / TWO
        elif ONE < ax < TWO and ay < ONE and scale == ZERO:
            d2m1 = (ax - ONE) * (ax + ONE)
            if ay >= EPS:
                d2m1 += ay * ay
            re = math.log1p(d2m1) / TWO
        elif HALF <= ax < ONE and ay < EPS / TWO and scale == ZERO:
            re = math.log1p((ax - ONE) * (ax + ONE)) / TWO
        elif HALF <= ax < ONE and scale == ZERO and ax * ax + ay * ay >= HALF:
            re = math.log1p(x2y2m1(ax, ay)) / TWO
        else:
            re = math.log(math.hypot(ax, ay)) - scale * LN2
        return re, math.atan2(y, x)

    @_jit
    def cexp(x, y):
        """glibc's cexp: exp(x) (cos y, sin y), exp(x) split in up to three factors so that
        products with finite values do not overflow (and 0 * exp(x) is 0, not NaN)."""
        if math.isfinite(x):
            if not math.isfinite(y):
                return NAN, NAN
            s, c = sincos(y)
            if x > T:                           # exp(x) = exp(T)^k exp(x - kT), k <= 2
                et = math.exp(T)
                x, s, c = x - T, s * et, c * et
                if x > T:
                    x, s, c = x - T, s * et, c * et
            if x > T:
                return MAX * c, MAX * s
            e = math.exp(x)
            return e * c, e * s
        if math.isinf(x):
            if math.isfinite(y):
                v = ZERO if x < ZERO else INF
                if y == ZERO:
                    return v, y
                s, c = sincos(y)
                return math.copysign(v, c), math.copysign(v, s)
            return (INF, y - y) if x > ZERO else (ZERO, math.copysign(ZERO, y))
        return NAN, (y if y == ZERO else NAN)

    @_jit
    def big_exp(ax, s, c):
        """exp(ax) / 2 times (s, c) for ax > T, without overflow where the products are finite."""
        et = math.exp(T)
        ax, s, c = ax - T, s * (et / TWO), c * (et / TWO)
        if ax > T:
            ax, s, c = ax - T, s * et, c * et
        if ax > T:
            return MAX * s, MAX * c
        e = math.exp(ax)
        return e * s, e * c

    @_call
    def csinh(x, y):
        """glibc's csinh: (sinh x cos y, cosh x sin y), exp split as in cexp past T."""
        neg = signbit(x)
        ax = abs(x)
        if math.isfinite(x):
            if not math.isfinite(y):
                return ((math.copysign(ZERO, -ONE if neg else ONE), y - y) if x == ZERO
                        else (NAN, NAN))
            s, c = sincos(y)
            if neg:
                c = -c
            if ax > T:
                s, c = big_exp(ax, s, c)
                return c, s
            return math.sinh(ax) * c, math.cosh(ax) * s
        if math.isinf(x):
            if math.isfinite(y) and y != ZERO:
                s, c = sincos(y)
                re = math.copysign(INF, c)
                return (-re if neg else re), math.copysign(INF, s)
            if y == ZERO:
                return (-INF if neg else INF), y
            return INF, y - y
        return NAN, (y if y == ZERO else NAN)

    @_call
    def ccosh(x, y):
        """glibc's ccosh: (cosh x cos y, sinh x sin y), exp split as in cexp past T."""
        if math.isfinite(x):
            if not math.isfinite(y):
                return y - y, (ZERO if x == ZERO else NAN)
            s, c = sincos(y)
            ax = abs(x)
            if ax > T:
                s, c = big_exp(ax, -s if signbit(x) else s, c)
                return c, s
            return math.cosh(x) * c, math.sinh(x) * s
        if math.isinf(x):
            if math.isfinite(y) and y != ZERO:
                s, c = sincos(y)
                return math.copysign(INF, c), math.copysign(INF, s) * math.copysign(ONE, x)
            if y == ZERO:
                return INF, y * math.copysign(ONE, x)
            return INF, y - y
        return NAN, (y if y == ZERO else NAN)

    @_call
    def ctanh(x, y):
        """glibc's ctanh: (sinh x cosh x, sin y cos y) / (sinh^2 x + cos^2 y); +-1 and a
        scaled imaginary part past T2 (Numba's formula is inf / inf there)."""
        if not (math.isfinite(x) and math.isfinite(y)):
            if math.isinf(x):
                im = math.copysign(ZERO, y)
                if math.isfinite(y) and abs(y) > ONE:
                    im = math.copysign(ZERO, math.sin(y) * math.cos(y))
                return math.copysign(ONE, x), im
            if y == ZERO:
                return x, y
            return (x if x == ZERO else NAN), NAN
        s, c = sincos(y)
        if abs(x) > T2:     # Re = +-1, Im = 4 sin(y) cos(y) / exp(2|x|), scaled to not overflow
            e2t = math.exp(TWO * T2)
            ax = abs(x) - T2
            im = FOUR * s * c / e2t
            im = im / e2t if ax > T2 else im / math.exp(TWO * ax)
            return math.copysign(ONE, x), im
        sh, ch = (math.sinh(x), math.cosh(x)) if abs(x) > MIN else (x, ONE)
        den = sh * sh + c * c if abs(sh) > abs(c) * EPS else c * c
        return sh * ch / den, s * c / den

    @_call
    def kernel_casinh(x, y, acos):
        """glibc's __kernel_casinh: asinh(x + iy), or with acos = 1 the parts of acos's result
        (a float, not a bool: one compiled version serves both)."""
        adj = acos != ZERO
        rx, ix = abs(x), abs(y)
        if rx >= ONE / EPS or ix >= ONE / EPS:      # x + sqrt(1 + x^2) ~ 2x: log(2x)
            if adj:
                re, im = clog(math.copysign(ix, y), rx)
            else:
                re, im = clog(rx, ix)
            re += LN2
        elif rx >= HALF and ix < EPS / F(8.0):
            s = math.hypot(ONE, rx)
            re = math.log(rx + s)
            im = math.atan2(s, y) if adj else math.atan2(ix, s)
        elif rx < EPS / F(8.0) and ix >= F(1.5):
            s = math.sqrt((ix + ONE) * (ix - ONE))
            re = math.log(ix + s)
            im = math.atan2(rx, math.copysign(s, y)) if adj else math.atan2(s, rx)
        elif ONE < ix < F(1.5) and rx < HALF:
            ix2m1 = (ix + ONE) * (ix - ONE)
            if rx < EPS * EPS:
                s = math.sqrt(ix2m1)
                re = math.log1p(TWO * (ix2m1 + ix * s)) / TWO
                im = math.atan2(rx, math.copysign(s, y)) if adj else math.atan2(s, rx)
            else:
                rx2 = rx * rx
                f = rx2 * (TWO + rx2 + TWO * ix * ix)
                d = math.sqrt(ix2m1 * ix2m1 + f)
                dp = d + ix2m1
                dm = f / dp
                r1 = math.sqrt((dm + rx2) / TWO)
                r2 = rx * ix / r1
                re = math.log1p(rx2 + dp + TWO * (rx * r1 + ix * r2)) / TWO
                im = (math.atan2(rx + r1, math.copysign(ix + r2, y)) if adj
                      else math.atan2(ix + r2, rx + r1))
        elif ix == ONE and rx < HALF:
            if rx < EPS / F(8.0):
                sr = math.sqrt(rx)
                re = math.log1p(TWO * (rx + sr)) / TWO
                im = math.atan2(sr, math.copysign(ONE, y)) if adj else math.atan2(ONE, sr)
            else:
                d = rx * math.sqrt(FOUR + rx * rx)
                s1 = math.sqrt((d + rx * rx) / TWO)
                s2 = math.sqrt((d - rx * rx) / TWO)
                re = math.log1p(rx * rx + d + TWO * (rx * s1 + s2)) / TWO
                im = (math.atan2(rx + s1, math.copysign(ONE + s2, y)) if adj
                      else math.atan2(ONE + s2, rx + s1))
        elif ix < ONE and rx < HALF:
            if ix >= EPS:
                onemix2 = (ONE + ix) * (ONE - ix)
                if rx < EPS * EPS:
                    s = math.sqrt(onemix2)
                    re = math.log1p(TWO * rx / s) / TWO
                    im = math.atan2(s, y) if adj else math.atan2(ix, s)
                else:
                    rx2 = rx * rx
                    f = rx2 * (TWO + rx2 + TWO * ix * ix)
                    d = math.sqrt(onemix2 * onemix2 + f)
                    dp = d + onemix2
                    dm = f / dp
                    r1 = math.sqrt((dp + rx2) / TWO)
                    r2 = rx * ix / r1
                    re = math.log1p(rx2 + dm + TWO * (rx * r1 + ix * r2)) / TWO
                    im = (math.atan2(rx + r1, math.copysign(ix + r2, y)) if adj
                          else math.atan2(ix + r2, rx + r1))
            else:
                s = math.hypot(ONE, rx)
                re = math.log1p(TWO * rx * (rx + s)) / TWO
                im = math.atan2(s, y) if adj else math.atan2(ix, s)
        else:                                   # log(z + sqrt(z^2 + 1)) in the first quadrant
            sr, si = csqrt((rx - ix) * (rx + ix) + ONE, TWO * rx * ix)
            sr, si = sr + rx, si + ix
            re, im = clog(math.copysign(si, y), sr) if adj else clog(sr, si)
        return math.copysign(re, x), math.copysign(im, ONE if adj else y)

    @_jit
    def casinh(x, y):
        """glibc's casinh: Annex G's special values, else kernel_casinh."""
        if not (math.isfinite(x) and math.isfinite(y)):
            if math.isinf(y):
                return math.copysign(INF, x), (NAN if math.isnan(x) else math.copysign(
                    PI_2 if math.isfinite(x) else PI_4, y))
            if not math.isfinite(x):
                keep = (math.isinf(x) and not math.isnan(y)) or (math.isnan(x) and y == ZERO)
                return x, (math.copysign(ZERO, y) if keep else NAN)
            return NAN, NAN
        if x == ZERO and y == ZERO:
            return x, y
        return kernel_casinh(x, y, ZERO)

    @_jit
    def casin(x, y):
        """glibc's casin: -i asinh(iz)."""
        if math.isnan(x) or math.isnan(y):
            if x == ZERO:
                return x, y
            if math.isinf(x) or math.isinf(y):
                return NAN, math.copysign(INF, y)
            return NAN, NAN
        re, im = casinh(-y, x)
        return im, -re

    @_jit
    def cacos(x, y):
        """glibc's cacos: kernel_casinh's acos form, casin at zeros and non-finite parts."""
        if not (math.isfinite(x) and math.isfinite(y)) or (x == ZERO and y == ZERO):
            re, im = casin(x, y)
            re = PI_2 - re
            return (ZERO if re == ZERO else re), -im
        re, im = kernel_casinh(-y, x, ONE)
        return im, re

    @_jit
    def cacosh(x, y):
        """glibc's cacosh: kernel_casinh's acos form with the parts' signs rearranged."""
        if not (math.isfinite(x) and math.isfinite(y)):
            if math.isinf(y):
                im = PI_2 if math.isfinite(x) else (PI - PI_4 if x < ZERO else PI_4)
                return INF, (NAN if math.isnan(x) else math.copysign(im, y))
            if math.isinf(x):
                return INF, (NAN if math.isnan(y) else math.copysign(
                    PI if signbit(x) else ZERO, y))
            return NAN, (PI_2 if x == ZERO else NAN)
        if x == ZERO and y == ZERO:
            return ZERO, math.copysign(PI_2, y)
        re, im = kernel_casinh(-y, x, ONE)
        return (re, -im) if signbit(y) else (-re, im)

    @_call
    def catanh(x, y):
        """glibc's catanh: Re = log(((1+x)^2 + y^2) / ((1-x)^2 + y^2)) / 4 (log1p near 1),
        Im = atan2(2y, 1 - x^2 - y^2) / 2 with x2y2m1 where that cancels; asymptotes past
        16 / eps."""
        if not (math.isfinite(x) and math.isfinite(y)):
            if math.isinf(y):
                return math.copysign(ZERO, x), math.copysign(PI_2, y)
            if math.isinf(x) or x == ZERO:
                return math.copysign(ZERO, x), (NAN if math.isnan(y) else math.copysign(PI_2, y))
            return NAN, NAN
        if x == ZERO and y == ZERO:
            return x, y
        if abs(x) >= F(16.0) / EPS or abs(y) >= F(16.0) / EPS:
            if abs(y) <= ONE:
                re = ONE / x
            elif abs(x) <= ONE:
                re = x / y / y
            else:
                h = math.hypot(x / TWO, y / TWO)
                re = x / h / h / FOUR
            return re, math.copysign(PI_2, y)
        if abs(x) == ONE and abs(y) < EPS * EPS:
            re = math.copysign(HALF, x) * (LN2 - math.log(abs(y)))
        else:
            i2 = y * y if abs(y) >= EPS * EPS else ZERO
            num = ONE + x
            num = i2 + num * num
            den = ONE - x
            den = i2 + den * den
            f = num / den
            re = F(0.25) * (math.log(f) if f < HALF else math.log1p(FOUR * x / den))
        ax, ay = abs(x), abs(y)
        if ax < ay:
            ax, ay = ay, ax
        if ay < EPS / TWO:
            den = (ONE - ax) * (ONE + ax)
            den = ZERO if den == ZERO else den
        elif ax >= ONE or not (ax >= F(0.75) or ay >= HALF):
            den = (ONE - ax) * (ONE + ax) - ay * ay
        else:
            den = -x2y2m1(ax, ay)
        return re, HALF * math.atan2(TWO * y, den)

    # sin, tan and atan are glibc's sinh, tanh and atanh with the parts swapped (csin's, ctan's
    # and catan's own code computes the same operations), cos is cosh at (-y, x)
    @_jit
    def csin(x, y):
        im, re = csinh(y, x)
        return re, im

    @_jit
    def ctan(x, y):
        im, re = ctanh(y, x)
        return re, im

    @_jit
    def catan(x, y):
        im, re = catanh(y, x)
        return re, im

    @_jit
    def ccos(x, y):
        return ccosh(-y, x)

    @_jit
    def cexp2(x, y):        # NumPy's nc_exp2: exp((x + iy) log 2)
        return cexp(x * LN2, y * LN2)

    @_jit
    def cexpm1(x, y):       # NumPy's nc_expm1
        a = math.sin(y / TWO)
        return math.expm1(x) * math.cos(y) - TWO * a * a, math.exp(x) * math.sin(y)

    @_jit
    def clog1p(x, y):       # NumPy's nc_log1p
        return math.log(math.hypot(x + ONE, y)), math.atan2(y, x + ONE)

    @_jit
    def clog2(x, y):        # NumPy's nc_log2 and nc_log10: clog, each part times 1 / log(base)
        re, im = clog(x, y)
        return re * LOG2E, im * LOG2E

    @_jit
    def clog10(x, y):
        re, im = clog(x, y)
        return re * LOG10E, im * LOG10E

    @_jit
    def cabs(z):
        """|z| as NumPy's SIMD absolute loop: max * sqrt(1 + (min / max)^2), the inner sum fused
        as c_multiply's; an infinite part makes it inf, else a NaN part NaN. Not hypot (Numba's, and
        NumPy's own np.hypot and sign): they differ in the last bit."""
        x, y = abs(z.real), abs(z.imag)
        x, y = (INF if y == INF else x), (INF if x == INF else y)
        x, y = (NAN if math.isnan(y) else x), (NAN if math.isnan(x) else y)
        big, small = max(x, y), min(x, y)
        ratio = ZERO if big == ZERO or small == INF else small / big
        return math.sqrt(_muladd(ratio, ratio, ONE)) * big

    impls = dict(sqrt=csqrt, exp=cexp, exp2=cexp2, expm1=cexpm1, log=clog, log1p=clog1p,
                 log2=clog2, log10=clog10, sin=csin, cos=ccos, tan=ctan, sinh=csinh,
                 cosh=ccosh, tanh=ctanh, arcsin=casin, arccos=cacos, arctan=catan,
                 arcsinh=casinh, arccosh=cacosh, arctanh=catanh)
    funcs = {name: _complex_valued(f) for name, f in impls.items()}
    funcs["absolute"] = cabs
    one = np.complex64(1.0) if F is np.float32 else np.complex128(1.0)

    @_jit
    def cpow(a, b):         # glibc's cpow: cexp(b clog(a)), the product as C's (no fused ops)
        lr, li = clog(a.real, a.imag)
        br, bi = F(b.real), F(b.imag)
        re, im = cexp(br * lr - bi * li, br * li + bi * lr)
        return complex(re, im)

    @_jit
    def power(a, b):
        return c_power(a, b, one, cpow)
    funcs["power"] = power
    return funcs


def _complex_valued(f):
    @_jit
    def g(z):
        re, im = f(z.real, z.imag)
        return complex(re, im)
    return g


__all__ = []
for _F, _suffix in ((np.float64, "complex128"), (np.float32, "complex64")):
    for _name, _f in _build(_F).items():
        globals()[f"c_{_name}_{_suffix}"] = _f
        __all__.append(f"c_{_name}_{_suffix}")
