"""More of fg.scipy.special: the gamma family (gamma, gammasgn, rgamma, factorial, beta, poch,
multigammaln), betainc, zeta, the modified Bessel functions i0, i0e, i1, i1e, erfcx, exp1 and
expi; and, from _special_elementary, the elementary ones (entropies, Huber losses, softmax,
Box-Cox, exp10, ...). fg.scipy.special re-exports every name in __all__.

gamma, gammasgn, rgamma, factorial and multigammaln are compositions of gammaln (and
compile like it). The others call SciPy's ufunc back from traced and compiled code (as
fg.scipy.special's gammainc does) with closed-form derivatives, each itself differentiable:
beta, poch, betainc, zeta, i0, i0e, i1, i1e, erfcx, exp1, expi. betainc is differentiable in
x only and zeta in q only: asking for the other derivatives raises.

fg.scipy.special imports this module, so this module cannot import it: the functions of
fg.scipy.special that these are built from (gammaln, digamma, betaln, xlogy, xlog1py) are
looked up when called, in the table fg.scipy.special fills (FOREIGN_UFUNCS: _base).
"""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from ..higher_order import custom_vjp, stop_gradient
from ..ir import Traced
from ..primitives.base import FOREIGN_UFUNCS
from ._special_callbacks import callback, floats, no_derivative
from ._special_elementary import (boxcox, boxcox1p, cbrt, entr, exp2, exp10, expm1, huber,
                                  inv_boxcox, inv_boxcox1p, kl_div, log1p, log_expit,
                                  log_softmax, pseudo_huber, rel_entr, softmax)

__all__ = ["gamma", "gammasgn", "rgamma", "factorial", "beta", "poch", "multigammaln",
           "betainc", "zeta", "i0", "i0e", "i1", "i1e", "erfcx", "exp1", "expi",
           # (from _special_elementary)
           "entr", "rel_entr", "kl_div", "huber", "pseudo_huber", "log_expit", "softmax",
           "log_softmax", "boxcox", "boxcox1p", "inv_boxcox", "inv_boxcox1p", "exp10", "exp2",
           "cbrt", "expm1", "log1p"]

_SQRT_PI = math.sqrt(math.pi)


def _base(name):
    """fg.scipy.special.<name>, found where fg.scipy.special registers it for scipy.special's
    ufunc of that name (this module is imported by it: see the module docstring)."""
    return FOREIGN_UFUNCS[("scipy.special", name)]


# ---- the gamma family, from gammaln ----

def gammasgn(x):
    """scipy.special.gammasgn, the sign of Gamma(x): 1 for x > 0, -1 on (-1, 0), (-3, -2),
    ..., copysign(1, x) at zero, NaN at the negative integers, -inf and NaN. Derivative 0.

        >>> fg.scipy.special.gammasgn(np.array([2.5, -0.5, -1.5, -0.0]))
        array([ 1., -1.,  1., -1.])
    """
    x = stop_gradient(fnp.asarray(x) * 1.0)
    fl = fnp.floor(x)
    negative = fnp.where(fl == x, np.nan, 1.0 - 2.0 * fnp.remainder(fl, 2.0))
    return fnp.where(x > 0, 1.0, fnp.where(x == 0, fnp.copysign(1.0, x), negative))


def gamma(x):
    """scipy.special.gamma, Gamma(x) = gammasgn(x) exp(gammaln(x)) (relative error about
    1e-16 |gammaln(x)|); inf at 0 (-inf at -0.0), NaN at the negative integers, overflows to
    inf above 171.6. Derivative Gamma(x) digamma(x).

        >>> fg.scipy.special.gamma(np.array([5.0, 0.5, -0.5]))      # 24, sqrt(pi), -2 sqrt(pi)
        array([24.        ,  1.77245385, -3.5449077 ])
    """
    x = fnp.asarray(x) * 1.0
    return gammasgn(x) * fnp.exp(_base("gammaln")(x))


def _sinpi(x):
    """sin(pi x), exactly 0 at the integers: reduced by k = round(x) first, (-1)^k sin(pi (x - k))
    (x - k is exact), so no multiple of pi is rounded."""
    k = stop_gradient(fnp.round(x))
    return (1.0 - 2.0 * fnp.remainder(k, 2.0)) * fnp.sin(math.pi * (x - k))


def rgamma(x):
    """scipy.special.rgamma, 1 / Gamma(x): exp(-gammaln(x)) for x >= 1/2, and by reflection
    sin(pi x) Gamma(1 - x) / pi below, an entire function: 0 at the poles 0, -1, -2, ... of
    Gamma (and at +-inf) with its derivatives there too ((-1)^n n! at -n).

        >>> fg.scipy.special.rgamma(np.array([4.0, -1.0, 0.5]))     # 1/6, 0, 1/sqrt(pi)
        array([0.16666667, 0.        , 0.56418958])
        >>> fg.grad(lambda x: fg.scipy.special.rgamma(x))(-2.0)   # 2!
    """
    if not isinstance(x, Traced):           # (SciPy warns of nothing: the overflow and the
        with np.errstate(over="ignore", invalid="ignore"):  # 0 * inf of unused branches are quiet)
            return _rgamma(x)
    return _rgamma(x)


def _rgamma(x):
    x = fnp.asarray(x) * 1.0
    gammaln = _base("gammaln")
    small = x < 0.5
    low = fnp.where(small & (x > -np.inf), x, 0.0)     # (-inf: 0 as at the pole 0)
    reflected = _sinpi(low) * fnp.exp(gammaln(1.0 - low)) * (1.0 / math.pi)
    # at the poles the value is exactly 0 (sin's is ~1e-16), its derivatives those of reflected
    pole = fnp.floor(low) == low
    # (from -171 down Gamma(1 - x) overflows: 0 * inf there; the value is 0 still)
    finite = fnp.where(fnp.isfinite(reflected), reflected, 0.0)         # (no inf - inf)
    at_pole = finite - stop_gradient(finite)
    reflected = fnp.where(pole, at_pole, reflected)
    return fnp.where(small, reflected, fnp.exp(-gammaln(fnp.where(small, 1.0, x))))


def factorial(n, exact=False):
    """scipy.special.factorial(n, exact=False): Gamma(n + 1) in floating point, 0 for n < 0
    (also for non-integer n, as SciPy); differentiable (Gamma(n + 1) digamma(n + 1)).
    exact=True (integer arithmetic) is refused.

        >>> fg.scipy.special.factorial(np.array([0, 3, 5, -1]))
        array([  1.,   6., 120.,   0.])
    """
    if exact:
        raise ValueError("fg.scipy.special.factorial: exact=True (integer arithmetic) is not "
                         "supported; exact=False gives Gamma(n + 1) in floating point")
    n = fnp.asarray(n).astype(np.float64)             # (float64 also for float32, as SciPy)
    negative = n < 0
    return fnp.where(negative, 0.0, gamma(fnp.where(negative, 0.0, n) + 1.0))


def multigammaln(a, d):
    """scipy.special.multigammaln, the log of the multivariate gamma function of dimension d:
    d (d - 1) / 4 log(pi) + sum over j < d of gammaln(a - j / 2). SciPy's check that
    a > (d - 1) / 2 is made on concrete a (ValueError); a traced a is not checked.

        >>> fg.grad(lambda a: fg.scipy.special.multigammaln(a, 2))(3.0)  # psi(3) + psi(2.5)
    """
    if int(d) != d or d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d}")
    d = int(d)
    if not isinstance(a, Traced) and np.any(np.asarray(a) <= 0.5 * (d - 1)):
        raise ValueError(f"multigammaln: condition a > (d - 1) / 2 = {0.5 * (d - 1)} not met")
    a = fnp.asarray(a).astype(np.float64)             # (as SciPy)
    gammaln = _base("gammaln")
    out = d * (d - 1) / 4.0 * math.log(math.pi)
    for j in range(d):
        out = out + gammaln(a - 0.5 * j)
    return out


# ---- called back: beta, poch, betainc, zeta ----

@custom_vjp
def _beta(a, b):
    return callback("beta", a, b)


def _beta_bwd(res, ct):
    a, b = res
    digamma = _base("digamma")
    both = ct * _beta(a, b)
    return both * (digamma(a) - digamma(a + b)), both * (digamma(b) - digamma(a + b))


_beta.defvjp(lambda a, b: (_beta(a, b), (a, b)), _beta_bwd)


def beta(a, b):
    """scipy.special.beta, B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b) (called back, with
    SciPy's values at the poles); derivatives B(a, b) (digamma(a) - digamma(a + b)) and
    B(a, b) (digamma(b) - digamma(a + b)).

        >>> fg.scipy.special.beta(np.array([1.0, 2.0]), 3.0)          # 1/3, 1/12
        array([0.33333333, 0.08333333])
    """
    return _beta(*floats(a, b))


@custom_vjp
def _poch(z, m):
    return callback("poch", z, m)


def _poch_bwd(res, ct):
    z, m = res
    digamma = _base("digamma")
    top = ct * _poch(z, m)
    return top * (digamma(z + m) - digamma(z)), top * digamma(z + m)


_poch.defvjp(lambda z, m: (_poch(z, m), (z, m)), _poch_bwd)


def poch(z, m):
    """scipy.special.poch, the rising factorial Gamma(z + m) / Gamma(z) (called back: SciPy's
    is accurate where the gammaln difference would cancel); derivatives poch(z, m) times
    digamma(z + m) - digamma(z) (in z) and digamma(z + m) (in m).

        >>> fg.scipy.special.poch(np.array([1.0, 3.0]), 2.0)          # 1 * 2, 3 * 4
        array([ 2., 12.])
    """
    return _poch(*floats(z, m))


@custom_vjp
def _betainc(a, b, x):
    return callback("betainc", a, b, x)


def _betainc_dx(a, b, x):
    """d/dx betainc(a, b, x) = x^(a-1) (1-x)^(b-1) / B(a, b)."""
    return fnp.exp(_base("xlogy")(a - 1.0, x) + _base("xlog1py")(b - 1.0, -x)
                   - _base("betaln")(a, b))


# (the cotangents 0 * ct of a and b reach _held's rule, which raises if they are differentiated)
_betainc.defvjp(lambda a, b, x: (_betainc(a, b, x), (a, b, x)),
                lambda res, ct: (0.0 * ct, 0.0 * ct, ct * _betainc_dx(*res)))


def betainc(a, b, x):
    """scipy.special.betainc, the regularized incomplete beta function I_x(a, b) (called back);
    differentiable in x (x^(a-1) (1-x)^(b-1) / B(a, b)) to any order. The derivatives with
    respect to a and b are not implemented: they raise where a or b is differentiated.

        >>> fg.grad(lambda x: fg.scipy.special.betainc(2.0, 3.0, x))(0.5)   # 12 x (1-x)^2
    """
    a, b, x = floats(a, b, x)
    return _betainc(no_derivative("betainc", "a")(a), no_derivative("betainc", "b")(b), x)


@custom_vjp
def _hurwitz(x, q):
    return callback("zeta", x, q)


_hurwitz.defvjp(lambda x, q: (_hurwitz(x, q), (x, q)),
                lambda res, ct: (0.0 * ct, -ct * res[0] * _hurwitz(res[0] + 1.0, res[1])))


@custom_vjp
def _riemann(x):
    return callback("zeta", x)


_riemann.defvjp(lambda x: (_riemann(x), None), lambda res, ct: (0.0 * ct,))


def zeta(x, q=None):
    """scipy.special.zeta: the Hurwitz zeta function sum over k >= 0 of (k + q)^-x, or
    Riemann's (its analytic continuation, x != 1) when q is None; called back.
    Differentiable in q (-x zeta(x + 1, q)) to any order; the derivative with respect to x
    is not implemented: it raises where x is differentiated.

        >>> fg.scipy.special.zeta(np.array([2.0, 4.0]))                # pi^2/6, pi^4/90
        array([1.64493407, 1.08232323])
        >>> fg.grad(lambda q: fg.scipy.special.zeta(2.0, q))(1.0)      # -2 zeta(3)
    """
    if q is None:
        (x,) = floats(x)
        return _riemann(no_derivative("zeta", "x")(x))
    x, q = floats(x, q)
    return _hurwitz(no_derivative("zeta", "x")(x), q)


# ---- called back: modified Bessel functions, erfcx, exponential integrals ----

def _unary(name, derivative, doc):
    """scipy.special.<name> called back, with derivative(x) (funcgrad operations)."""
    @custom_vjp
    def f(x):
        return callback(name, fnp.asarray(x) * 1.0)
    f.defvjp(lambda x: (f(x), x), lambda x, ct: (ct * derivative(x),))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


def _nonzero(x):
    return fnp.where(x == 0, 1.0, x)


i0 = _unary("i0", lambda x: i1(x), """scipy.special.i0, the modified Bessel function of the
    first kind of order 0 (called back); derivative i1(x).

        >>> fg.grad(lambda x: fg.scipy.special.i0(x))(1.0)               # i1(1)
    """)
i1 = _unary("i1", lambda x: fnp.where(x == 0, 0.5, i0(x) - i1(_nonzero(x)) / _nonzero(x)),
            """scipy.special.i1, the modified Bessel function of the first kind of order 1
    (called back); derivative i0(x) - i1(x) / x (1/2 at x = 0).

        >>> fg.scipy.special.i1(np.array([0.0, 1.0]))
        array([0.       , 0.5651591])
    """)
i0e = _unary("i0e", lambda x: i1e(x) - fnp.sign(x) * i0e(x), """scipy.special.i0e,
    exp(-|x|) i0(x), finite for large |x| (called back); derivative i1e(x) - sign(x) i0e(x).

        >>> fg.scipy.special.i0e(np.array([0.0, 800.0]))
        array([1.        , 0.01410695])
    """)
i1e = _unary("i1e", lambda x: fnp.where(
    x == 0, 0.5, i0e(x) - i1e(_nonzero(x)) * (fnp.sign(x) + 1.0 / _nonzero(x))),
    """scipy.special.i1e, exp(-|x|) i1(x) (called back); derivative
    i0e(x) - i1e(x) (sign(x) + 1/x) (1/2 at x = 0).

        >>> fg.scipy.special.i1e(np.array([-1.0, 800.0]))
        array([-0.20791042,  0.01409813])
    """)
erfcx = _unary("erfcx", lambda x: 2.0 * x * erfcx(x) - 2.0 / _SQRT_PI, """scipy.special.erfcx,
    the scaled complementary error function exp(x^2) erfc(x), without overflow for large x
    (called back); derivative 2 x erfcx(x) - 2 / sqrt(pi).

        >>> fg.scipy.special.erfcx(np.array([0.0, 1e4]))              # 1, about 1/(x sqrt(pi))
        array([1.00000000e+00, 5.64189581e-05])
    """)
exp1 = _unary("exp1", lambda x: -fnp.exp(-x) / x, """scipy.special.exp1, the exponential
    integral E1(x) = integral from x to inf of exp(-t) / t dt (called back; NaN for x < 0);
    derivative -exp(-x) / x.

        >>> fg.grad(lambda x: fg.scipy.special.exp1(x))(1.0)              # -1/e
    """)
expi = _unary("expi", lambda x: fnp.exp(x) / x, """scipy.special.expi, the exponential
    integral Ei(x) (principal value; called back); derivative exp(x) / x.

        >>> fg.scipy.special.expi(np.array([-1.0, 1.0]))
        array([-0.21938393,  1.89511782])
    """)
