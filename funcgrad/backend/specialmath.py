"""Native scalar versions of scipy.special's gammaln, digamma, polygamma, ndtri and erfinv for
generated kernels (erf and erfc are libm's, through Numba's math.erf and math.erfc); vecmath
re-exports them, so kernels call `_vm.gammaln(x)` and a change here changes every kernel's
cache key.

They are ordinary Numba functions with Numba's on-disk cache (as runtime.py's): compiled once
per machine, called from kernels. Each takes and returns float64; a float32 result is computed
in float64 and rounded once, as SciPy's float32 loops do. Special values follow SciPy:

- gammaln(x) = log |Gamma(x)|: libm's lgamma, except near its roots 1 and 2, where a Taylor
  series keeps the relative error small (libm's is only small in absolute terms there);
  +inf at the poles (0 and the negative integers) and where 1/x overflows, -inf at -inf.
- digamma(x) (psi): the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the
  asymptotic series of log(x) - 1/(2x) - sum B_2k / (2k x^2k) to its eighth term; below 0
  the reflection psi(x) = psi(1 - x) - pi / tan(pi x) (the tangent of the exact reduced
  argument x - round(x)). Near the positive root 1.4616... and the root -0.5040... a
  Taylor series in x - root keeps the relative error small where the value goes through 0.
  -inf at +0.0, +inf at -0.0, NaN at the negative integers and -inf, +inf at +inf.
- ndtri(p), the standard normal quantile: Wichura's algorithm AS 241 (PPND16, Applied
  Statistics 37, 1988), rational approximations with a relative error of about 1e-16, in
  p - 1/2 for |p - 1/2| <= 0.425 and in sqrt(-log(min(p, 1 - p))) beyond; -inf at 0, +inf
  at 1, NaN outside [0, 1].
- erfinv(x) = ndtri((1 + x) / 2) / sqrt(2), computed without forming (1 + x) / 2: the
  central approximation in q = x / 2 (exact), the tails in (1 - |x|) / 2 (exact for
  |x| >= 1/2), so small |x| and |x| near 1 keep full relative accuracy; +-inf at +-1.
- polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta summed up to x + k >= 15 +
  n and completed by Euler-Maclaurin; below 0 from arguments above 0 only (no loop over the
  |x| terms); (-1)^(n+1) inf at the poles and at -inf.

The Taylor coefficients, (-1)^(n+1) zeta(n + 1, r) at a root r of digamma and (-1)^n zeta(n)
/ n at 1 for gammaln, were computed with mpmath at 50 digits.
"""
import math

import numba
import numpy as np

_cached = numba.njit(cache=True, error_model="numpy", nogil=True)

# ---- ndtri and erfinv: AS 241 (PPND16) ----------------------------------------------------------
# numerators and denominators, highest power first (Horner), as published
_A = (2.5090809287301226727e3, 3.3430575583588128105e4, 6.7265770927008700853e4,
      4.5921953931549871457e4, 1.3731693765509461125e4, 1.9715909503065514427e3,
      1.3314166789178437745e2, 3.3871328727963666080e0)
_B = (5.2264952788528545610e3, 2.8729085735721942674e4, 3.9307895800092710610e4,
      2.1213794301586595867e4, 5.3941960214247511077e3, 6.8718700749205790830e2,
      4.2313330701600911252e1, 1.0)
_C = (7.74545014278341407640e-4, 2.27238449892691845833e-2, 2.41780725177450611770e-1,
      1.27045825245236838258e0, 3.64784832476320460504e0, 5.76949722146069140550e0,
      4.63033784615654529590e0, 1.42343711074968357734e0)
_D = (1.05075007164441684324e-9, 5.47593808499534494600e-4, 1.51986665636164571966e-2,
      1.48103976427480074590e-1, 6.89767334985100004550e-1, 1.67638483018380384940e0,
      2.05319162663775882187e0, 1.0)
_E = (2.01033439929228813265e-7, 2.71155556874348757815e-5, 1.24266094738807843860e-3,
      2.65321895265761230930e-2, 2.96560571828504891230e-1, 1.78482653991729133580e0,
      5.46378491116411436990e0, 6.65790464350110377720e0)
_F = (2.04426310338993978564e-15, 1.42151175831644588870e-7, 1.84631831751005468180e-5,
      7.86869131145613259100e-4, 1.48753612908506148525e-2, 1.36929880922735805310e-1,
      5.99832206555887937690e-1, 1.0)


@_cached
def _poly(c, x):
    y = c[0]
    for k in range(1, len(c)):
        y = y * x + c[k]
    return y


@_cached
def _central(q):
    """The quantile at probability 1/2 + q, for |q| <= 0.425."""
    r = 0.180625 - q * q
    return q * _poly(_A, r) / _poly(_B, r)


@_cached
def _tail(t):
    """The quantile at probability t (the smaller tail, 0 < t < 0.075): negative."""
    r = math.sqrt(-math.log(t))
    if r <= 5.0:
        r -= 1.6
        return -_poly(_C, r) / _poly(_D, r)
    r -= 5.0
    return -_poly(_E, r) / _poly(_F, r)


@_cached
def ndtri(p):
    """The standard normal quantile (scipy.special.ndtri)."""
    if not (0.0 <= p <= 1.0):
        return math.nan
    q = p - 0.5
    if abs(q) <= 0.425:
        return _central(q)
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    return _tail(p) if q < 0.0 else -_tail(1.0 - p)     # (1 - p is exact for p >= 1/2)


_SQRT1_2 = 0.7071067811865476
_SQRT_PI_2 = 0.8862269254527579                  # sqrt(pi) / 2


@_cached
def erfinv(x):
    """The inverse error function (scipy.special.erfinv)."""
    a = abs(x)
    if not (a <= 1.0):
        return math.nan
    if a == 1.0:
        return math.copysign(math.inf, x)
    if a < 1e-300:                                          # (0.5 * x would lose subnormal bits)
        return x * _SQRT_PI_2 + 0.0                         # erfinv(x) = sqrt(pi)/2 x (1 + O(x^2))
    if a <= 0.85:
        return _central(0.5 * x) * _SQRT1_2 + 0.0          # (+0.0 at -0.0, as SciPy)
    y = -_tail(0.5 * (1.0 - a)) * _SQRT1_2                 # (1 - a: exact)
    return y if x > 0.0 else -y


# ---- digamma ----------------------------------------------------------------------------------
_ROOT_HI, _ROOT_LO = 1.4616321449683622, 9.549995429965697e-17        # positive root
_NROOT_HI, _NROOT_LO = -0.5040830082644554, -8.15428206243813e-18     # largest negative root
# Taylor coefficients of digamma at each root, highest power first; the constant term is 0
_ROOT_SERIES = (
    -0.00016170622091974803, 0.00023635601564027053, -0.0003454680251063077,
    0.000504953265834602, -0.0007380709389960052, 0.0010788252019162967, -0.0015769367714301972,
    0.002305126326734928, -0.003369801655439328, 0.004926781395729853, -0.007204534386356869,
    0.010538791616612175, -0.01542476590494896, 0.022597648232218104, -0.03316112647484736,
    0.04880428816414311, -0.07219956125645471, 0.10782405069126237, -0.16394270544240652,
    0.258499760955651, -0.4427631689835921, 0.9676722454476212)
_NROOT_SERIES = (
    -163451.79342700253, 530280.3912420176, -36529.94596948565, 132262.95480834588,
    -8051.818155363498, 32997.785655255044, -1743.364608867363, 8234.667099203069,
    -368.5783503832191, 2055.5357119463315, -75.37700066344631, 513.2704629562862,
    -14.70672173553036, 128.27342343090902, -2.761011648790828, 32.258572064915505,
    -0.8093454625306507, 8.939798558792134)
# B_2k / (2k) for k = 8, 7, ..., 1 (the asymptotic series in 1 / x^2)
_ASYMPTOTIC = (3617.0 / 8160.0, -1.0 / 12.0, 691.0 / 32760.0, -1.0 / 132.0, 1.0 / 240.0,
               -1.0 / 252.0, 1.0 / 120.0, -1.0 / 12.0)


@_cached
def _digamma_positive(x):
    """psi(x) for x > 0, not near the positive root."""
    s = 0.0
    while x < 10.0:
        s += 1.0 / x
        x += 1.0
    w = 1.0 / (x * x)
    return math.log(x) - 0.5 / x + w * _poly(_ASYMPTOTIC, w) - s


@_cached
def _digamma_reflected(x):
    """psi(x) for x > 0, with the Taylor series at the positive root within 1/4 of it."""
    if abs(x - _ROOT_HI) < 0.25:
        d = (x - _ROOT_HI) - _ROOT_LO
        return d * _poly(_ROOT_SERIES, d)
    return _digamma_positive(x)


@_cached
def digamma(x):
    """The digamma function psi(x) (scipy.special.digamma)."""
    if x > 0.0:
        return _digamma_reflected(x)
    if x == 0.0:
        return -math.copysign(math.inf, x)
    if not (x > -math.inf) or x == np.floor(x):         # NaN, -inf, the poles
        return math.nan
    if abs(x - _NROOT_HI) < 0.05:
        d = (x - _NROOT_HI) - _NROOT_LO
        return d * _poly(_NROOT_SERIES, d)
    r = x - np.floor(x + 0.5)                           # (exact: tan(pi x) = tan(pi r))
    return _digamma_reflected(1.0 - x) - math.pi / math.tan(math.pi * r)


# ---- gammaln ----------------------------------------------------------------------------------
# log Gamma(1 + z) = -euler_gamma z + sum_k>=2 (-1)^k zeta(k) / k z^k, highest power first
_LGAMMA1_SERIES = (
    0.04166666915034121, -0.04347826605304026, 0.04545455629320467, -0.047619070330142226,
    0.05000004769810169, -0.05263167937961666, 0.055555767627403614, -0.058823978658684585,
    0.06250095514121304, -0.06666870588242046, 0.07143294629536133, -0.0769325164113522,
    0.083353840546109, -0.09095401714582904, 0.1000994575127818, -0.11133426586956469,
    0.12550966952474304, -0.1440498967688461, 0.1695571769974082, -0.20738555102867398,
    0.27058080842778454, -0.40068563438653143, 0.8224670334241132, -0.5772156649015329, 0.0)


@_cached
def gammaln(x):
    """log |Gamma(x)| (scipy.special.gammaln)."""
    if x == -math.inf:
        return -math.inf
    if math.isinf(1.0 / x):                               # 0 and tiny x, as SciPy
        return math.inf
    z = x - 1.0
    if abs(z) < 0.2:
        return _poly(_LGAMMA1_SERIES, z)
    if abs(z - 1.0) < 0.2:
        z -= 1.0
        return _poly(_LGAMMA1_SERIES, z) + math.log1p(z)
    return math.lgamma(x)


# ---- polygamma ---------------------------------------------------------------------------------
# B_2j / (2j)! for j = 1, ..., 8 (Euler-Maclaurin)
_EULER_MACLAURIN = (1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0, -1.0 / 1209600.0, 1.0 / 47900160.0,
                    -691.0 / 1307674368000.0, 1.0 / 74724249600.0, -3617.0 / 10670622842880000.0)


@_cached
def _hurwitz_zeta(s, a):
    """zeta(s, a) = sum_k>=0 (a + k)^-s for an integer s >= 2 and a > 0: the terms up to
    a + k >= 15 + s summed, the rest by Euler-Maclaurin (eight terms)."""
    total = 0.0
    while a < 15.0 + s:
        total += 1.0 / a ** s
        a += 1.0
    u = 1.0 / a
    u2, r, p, acc = u * u, float(s), u * u, 1.0 / (s - 1) + 0.5 * u
    for j in range(len(_EULER_MACLAURIN)):
        acc += _EULER_MACLAURIN[j] * r * p          # B_2j / (2j)! s (s+1) ... (s+2j-2) u^2j
        r *= (s + 2 * j + 1) * (s + 2 * j + 2)
        p *= u2
    return total + math.pow(a, 1.0 - s) * acc


@_cached
def polygamma(n, x):
    """The n-th derivative of digamma, n >= 1 (scipy.special.polygamma):
    (-1)^(n+1) n! zeta(n + 1, x); (-1)^(n+1) inf at the poles and at -inf, as SciPy."""
    sign = 1.0 if n % 2 == 1 else -1.0
    if x != x:
        return x
    if x == math.inf:
        return sign * 0.0
    if x <= 0.0 and x == np.floor(x):                 # the poles, -inf
        return sign * math.inf
    s = n + 1
    zeta = _hurwitz_zeta(s, x) if x > 0.0 else _hurwitz_zeta_negative(s, x)
    return sign * math.gamma(n + 1.0) * zeta


@_cached
def _hurwitz_zeta_negative(s, x):
    """zeta(s, x) for x < 0 not an integer, from arguments > 0 only (no loop over the terms
    up to x + k > 0, however large |x| is): with f = x - floor(x), the terms at x + k < 0 are
    (-1)^s (zeta(s, 1 - f) - zeta(s, 1 - x)), the others zeta(s, f)."""
    if x > -1.0:                                        # (where f = x + 1 would round)
        return 1.0 / x ** s + _hurwitz_zeta(s, x + 1.0)
    f = x - np.floor(x)                               # (exact for x <= -1)
    below = _hurwitz_zeta(s, 1.0 - f) - _hurwitz_zeta(s, 1.0 - x)
    return _hurwitz_zeta(s, f) + (below if s % 2 == 0 else -below)


__all__ = ["gammaln", "digamma", "ndtri", "erfinv", "polygamma"]
