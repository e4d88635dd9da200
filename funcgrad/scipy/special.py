"""fg.scipy.special: SciPy's special functions on traced values, with their derivatives to any
order, named as in scipy.special (and jax.scipy.special).

The ones that are compositions of funcgrad operations (expit, logit, xlogy, xlog1py, ndtr,
logsumexp) compile like any other code. erf, erfc, erfinv, ndtri, gammaln, digamma and
polygamma are primitives with native code in compiled kernels (funcgrad/primitives/
special_functions.py; the interpreter runs SciPy's ufunc, kernels the backend's versions in
funcgrad/backend/specialmath.py, which agree to about 1e-15 relative), for real arguments.
The others (log_ndtr, betaln, gammainc, gammaincc) call SciPy's ufunc back from traced and
compiled code (a Python round trip per call in a kernel: correct, not fast). All have their
derivatives in closed form, each itself differentiable: gammaln' = digamma = polygamma(0),
polygamma(n)' = polygamma(n + 1). gammainc and gammaincc are differentiable in x only: asking
for the derivative with respect to the shape parameter a raises.
Calling the scipy.special ufunc itself on a traced value (`scipy.special.erf(x)` inside
fg.grad) reaches these.

    >>> fg.grad(lambda x: fg.scipy.special.gammaln(x))(3.0)      # digamma(3) = 1.5 - euler_gamma
"""
from __future__ import annotations

import math

from .. import numpy as fnp
from .._errors import UnsupportedFunctionError
from ..higher_order import custom_vjp
from ..higher_order.custom import host_holomorphic
from ..nn import erf as _nn_erf
from ..nn import sigmoid as expit
from ..primitives import special_functions as _native
from ..primitives.base import FOREIGN_UFUNCS
from ._special_callbacks import callback, floats, no_derivative

_SHAPE = "(the shape parameter) is not implemented, only the one with respect to x"

__all__ = ["erf", "erfc", "erfinv", "expit", "logit", "xlogy", "xlog1py", "ndtr", "log_ndtr",
           "ndtri", "gammaln", "digamma", "polygamma", "betaln", "gammainc", "gammaincc",
           "logsumexp",
           # (from _special_more and _special_elementary)
           "gamma", "gammasgn", "rgamma", "factorial", "beta", "poch", "multigammaln",
           "betainc", "zeta", "i0", "i0e", "i1", "i1e", "erfcx", "exp1", "expi", "entr",
           "rel_entr", "kl_div", "huber", "pseudo_huber", "log_expit", "softmax", "log_softmax",
           "boxcox", "boxcox1p", "inv_boxcox", "inv_boxcox1p", "exp10", "exp2", "cbrt", "expm1",
           "log1p"]

_SQRT_PI = math.sqrt(math.pi)


def erf(x):
    """scipy.special.erf, the error function; derivative 2/sqrt(pi) exp(-x^2), to any order
    (the same function as fg.nn.erf). Complex arguments are SciPy's, called back.

        >>> fg.scipy.special.erf(np.array([0.0, 0.5]))
        array([0.        , 0.52049988])
    """
    return _nn_erf(x)


def erfc(x):
    """scipy.special.erfc, 1 - erf(x) without cancellation; derivative -2/sqrt(pi) exp(-x^2).

        >>> fg.scipy.special.erfc(np.array([0.0, 5.0]))
        array([1.00000000e+00, 1.53745979e-12])
    """
    if _native.traced_complex(x):
        return _complex_erfc(x)
    return _native.erfc(x)


_complex_erfc = host_holomorphic(lambda z: _native.scipy_function("erfc")(z),
                                 lambda z: (-2.0 / _SQRT_PI) * fnp.exp(-(z * z)))


def erfinv(x):
    """scipy.special.erfinv; derivative sqrt(pi)/2 exp(erfinv(x)^2).

        >>> fg.grad(lambda x: fg.scipy.special.erfinv(x))(0.0)     # sqrt(pi) / 2
    """
    return _native.erfinv(x)


def ndtri(p):
    """scipy.special.ndtri, the inverse of ndtr (the standard normal quantile function);
    derivative sqrt(2 pi) exp(ndtri(p)^2 / 2).

        >>> fg.scipy.special.ndtri(np.array([0.5, 0.975]))
        array([0.       , 1.95996398])
    """
    return _native.ndtri(p)


@custom_vjp
def log_ndtr(x):
    """scipy.special.log_ndtr, log of the standard normal CDF, accurate far into the left tail;
    derivative pdf(x) / cdf(x), computed as exp(log pdf - log cdf).

        >>> fg.grad(lambda x: fg.scipy.special.log_ndtr(x))(-30.0)   # about 30
    """
    return callback("log_ndtr", x)


log_ndtr.defvjp(lambda x: (log_ndtr(x), x),
                lambda x, ct: (ct * fnp.exp(-0.5 * x * x - 0.5 * math.log(2 * math.pi)
                                            - log_ndtr(x)),))


def polygamma(n, x):
    """scipy.special.polygamma(n, x) for an integer n >= 0 (the n-th derivative of digamma);
    differentiable in x to any order.

        >>> fg.scipy.special.polygamma(1, np.array([1.0]))          # pi^2 / 6
        array([1.64493407])
    """
    return _native.polygamma(n, x)


def digamma(x):
    """scipy.special.digamma (psi), the derivative of gammaln.

        >>> fg.scipy.special.digamma(1.0)                            # -euler_gamma
    """
    if _native.traced_complex(x):
        return _complex_digamma(x)
    return _native.digamma(x)


def _no_complex_trigamma(z):
    raise UnsupportedFunctionError(
        "fg.scipy.special.digamma: its derivative at complex arguments, polygamma(1, z), is "
        "not available (scipy.special.polygamma takes real arguments only). Apply "
        "fg.stop_gradient to the argument if it should be held constant.")


_complex_digamma = host_holomorphic(lambda z: _native.scipy_function("digamma")(z),
                                   _no_complex_trigamma)


def gammaln(x):
    """scipy.special.gammaln, log |Gamma(x)|; derivative digamma(x).

        >>> fg.scipy.special.gammaln(np.array([1.0, 5.0]))           # 0, log 24
        array([0.        , 3.17805383])
    """
    return _native.gammaln(x)


@custom_vjp
def _betaln(a, b):
    return callback("betaln", a, b)


def _betaln_bwd(res, ct):
    a, b = res
    both = digamma(a + b)
    return ct * (digamma(a) - both), ct * (digamma(b) - both)


_betaln.defvjp(lambda a, b: (_betaln(a, b), (a, b)), _betaln_bwd)


def betaln(a, b):
    """scipy.special.betaln, log |B(a, b)| (SciPy's, accurate where gammaln(a) + gammaln(b) -
    gammaln(a + b) cancels); derivatives digamma(a) - digamma(a + b) and digamma(b) -
    digamma(a + b).

        >>> fg.scipy.special.betaln(np.array([1.0, 2.0]), 3.0)     # log 1/3, log 1/12
        array([-1.09861229, -2.48490665])
    """
    return _betaln(*floats(a, b))


def _gammainc_dx(a, x):
    """d/dx gammainc(a, x) = x^(a-1) exp(-x) / Gamma(a)."""
    return fnp.exp(xlogy(a - 1.0, x) - x - gammaln(a))


@custom_vjp
def _gammainc(a, x):
    return callback("gammainc", a, x)


@custom_vjp
def _gammaincc(a, x):
    return callback("gammaincc", a, x)


# (the cotangent 0 * ct of a reaches _no_derivative's rule, which raises if a is differentiated)
_gammainc.defvjp(lambda a, x: (_gammainc(a, x), (a, x)),
                 lambda res, ct: (0.0 * ct, ct * _gammainc_dx(*res)))
_gammaincc.defvjp(lambda a, x: (_gammaincc(a, x), (a, x)),
                  lambda res, ct: (0.0 * ct, -ct * _gammainc_dx(*res)))


def gammainc(a, x):
    """scipy.special.gammainc, the regularized lower incomplete gamma function P(a, x);
    differentiable in x (x^(a-1) e^-x / Gamma(a)) to any order. The derivative with respect
    to a is not implemented: it raises where a is differentiated.

        >>> fg.grad(lambda x: fg.scipy.special.gammainc(2.0, x))(1.0)     # 1 / e
    """
    a, x = floats(a, x)
    return _gammainc(no_derivative("gammainc", "a", _SHAPE)(a), x)


def gammaincc(a, x):
    """scipy.special.gammaincc, the regularized upper incomplete gamma function
    Q(a, x) = 1 - P(a, x); differentiable in x only, as gammainc.

        >>> fg.scipy.special.gammaincc(np.array([1.0, 3.0]), 2.0)     # e^-2, 5 e^-2
        array([0.13533528, 0.67667642])
    """
    a, x = floats(a, x)
    return _gammaincc(no_derivative("gammaincc", "a", _SHAPE)(a), x)


logsumexp = fnp.logsumexp


def logit(p):
    """scipy.special.logit, log(p / (1 - p)), the inverse of expit.

        >>> fg.grad(lambda p: fg.scipy.special.logit(p))(0.25)        # 1 / (p (1 - p))
    """
    return fnp.log(p) - fnp.log1p(-p)


def xlogy(x, y):
    """scipy.special.xlogy: x log(y), and 0 where x == 0 (also for y == 0); the gradient at
    x == 0 is that of 0.

        >>> fg.scipy.special.xlogy(np.array([0.0, 2.0]), np.array([0.0, np.e]))
        array([0., 2.])
    """
    zero = fnp.asarray(x) == 0
    return fnp.where(zero, 0.0, x * fnp.log(fnp.where(zero, 1.0, y)))


def xlog1py(x, y):
    """scipy.special.xlog1py: x log1p(y), and 0 where x == 0.

        >>> fg.scipy.special.xlog1py(np.array([0.0, 1.0]), np.array([-1.0, 0.5]))
        array([0.        , 0.40546511])
    """
    zero = fnp.asarray(x) == 0
    return fnp.where(zero, 0.0, x * fnp.log1p(fnp.where(zero, 0.0, y)))


def ndtr(x):
    """scipy.special.ndtr, the standard normal CDF, through erfc (accurate in both tails).

        >>> fg.grad(lambda x: fg.scipy.special.ndtr(x))(0.0)         # 1 / sqrt(2 pi)
    """
    return 0.5 * erfc(-fnp.asarray(x) * (1.0 / math.sqrt(2.0)))


from ._special_more import (  # noqa: E402  (more names: _special_more.py)
    beta, betainc, boxcox, boxcox1p, cbrt, entr, erfcx, exp1, exp2, exp10, expi, expm1, factorial,
    gamma, gammasgn, huber, i0, i0e, i1, i1e, inv_boxcox, inv_boxcox1p, kl_div, log1p, log_expit,
    log_softmax, multigammaln, poch, pseudo_huber, rel_entr, rgamma, softmax, zeta)

# scipy.special's ufuncs called on traced values come here (tracer.Tracer.__array_ufunc__)
FOREIGN_UFUNCS.update({("scipy.special", name): globals()[name] for name in __all__
                       if name not in ("polygamma", "logsumexp")})
FOREIGN_UFUNCS[("scipy.special", "polygamma")] = polygamma
FOREIGN_UFUNCS[("scipy.special", "psi")] = digamma
