"""Elementwise primitives of scipy.special's most used functions: erf, erfc, gammaln, digamma,
polygamma (n >= 1), ndtri and erfinv, so that fg.scipy.special and fg.nn.erf compile to native
code (backend/specialmath.py: no SciPy called back from a kernel).

The interpreter runs SciPy's own ufunc (scipy.special is imported when first needed); a kernel
runs the backend's versions, which agree with it to about 1e-15 relative (more closely than
that to the true value near the roots of gammaln and digamma and the poles of digamma, where
SciPy's lose digits) and give NaN and the infinities where SciPy does: exact=False, the last
bits may differ. Dtypes are SciPy's loops' (float32 stays float32, integers become float64;
polygamma is float64, as scipy.special.polygamma); a traced complex argument is refused here
(the library functions call SciPy back for erf, erfc and digamma, which SciPy computes on
complex numbers: traced_complex).

Derivatives in closed form, each differentiable again: erf' = 2/sqrt(pi) exp(-x^2),
gammaln' = digamma, digamma' = polygamma(1, .), polygamma(n, .)' = polygamma(n + 1, .),
ndtri' = sqrt(2 pi) exp(ndtri^2 / 2), erfinv' = sqrt(pi)/2 exp(erfinv^2) (from the output).
`SPECIAL` maps each name to (primitive, input domain) for the tests; the public functions are
fg.scipy.special's.
"""
from __future__ import annotations

import math

import numpy as np

from .._errors import UnsupportedFunctionError
from ..ir import Aval, aval_of
from .base import apply_elementwise, convert, define, is_traced
from .elementwise import exp

SPECIAL = {}    # name -> (primitive, domain: "real", "positive", "unit" or "probability")


def scipy_function(name):
    """scipy.special.<name>, imported when first needed."""
    import scipy.special
    return getattr(scipy.special, name)


def traced_complex(x):
    """x is a traced complex value: SciPy's complex functions run there, called back
    (fg.scipy.special's erf, erfc and digamma, fg.nn.erf: funcgrad.higher_order.custom's
    host_holomorphic), since kernels have no native code for them."""
    return is_traced(x) and aval_of(x).dtype.kind == "c"


def _refuse_complex(name, a):
    if a.dtype.kind == "c":
        raise UnsupportedFunctionError(
            f"fg.scipy.special.{name}: complex arguments are not supported: "
            f"scipy.special.{name} takes real arguments only"
            + (" (scipy.special.loggamma is log Gamma of a complex argument)"
               if name == "gammaln" else ""))


def _abstract(name):
    def abstract(a):
        _refuse_complex(name, a)
        return Aval(a.shape, scipy_function(name).resolve_dtypes((a.dtype, None))[1])
    return abstract


def _unary(name, vjp, domain, singular=True):
    """The primitive of scipy.special.<name> and the function that binds it with SciPy's
    dtype promotion (plain arrays get SciPy's own answer)."""
    prim = define(name, impl=lambda x: scipy_function(name)(x), abstract=_abstract(name), vjp=vjp,
                  elementwise=True, singular=singular, exact=False,
                  doc=f"scipy.special.{name}, elementwise; native in kernels (specialmath.py)")

    def fn(x):
        if is_traced(x):
            _refuse_complex(name, aval_of(x))
        return apply_elementwise(prim, scipy_function(name), x)

    fn.__name__ = fn.__qualname__ = name
    SPECIAL[name] = (prim, domain)
    return prim, fn


_2_SQRT_PI, _SQRT_PI_2 = 2.0 / math.sqrt(math.pi), math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)

erf_p, erf = _unary("erf", lambda ct, x, *, out: (ct * _2_SQRT_PI * exp(-(x * x)),), "real",
                    singular=False)
erfc_p, erfc = _unary("erfc", lambda ct, x, *, out: (-ct * _2_SQRT_PI * exp(-(x * x)),), "real",
                      singular=False)
gammaln_p, gammaln = _unary("gammaln", lambda ct, x, *, out: (ct * digamma(x),), "positive")
digamma_p, digamma = _unary("digamma", lambda ct, x, *, out: (ct * polygamma(1, x),), "positive")
ndtri_p, ndtri = _unary("ndtri", lambda ct, p, *, out: (ct * _SQRT_2PI * exp(0.5 * (out * out)),),
                        "probability")
erfinv_p, erfinv = _unary("erfinv", lambda ct, x, *, out: (ct * _SQRT_PI_2 * exp(out * out),),
                          "unit")


def _polygamma_impl(x, *, n):
    return np.asarray(scipy_function("polygamma")(n, x), np.float64)[()]


polygamma_p = define(
    "polygamma", impl=_polygamma_impl, abstract=lambda a, *, n: Aval(a.shape, np.dtype(np.float64)),
    vjp=lambda ct, x, *, out, n: (ct * polygamma_p.bind(x, n=n + 1),), elementwise=True,
    singular=True, exact=False,
    doc="scipy.special.polygamma(n, x) for n >= 1 (a param), float64; native in kernels")
SPECIAL["polygamma"] = (polygamma_p, "positive")


def polygamma(n, x):
    """scipy.special.polygamma(n, x) for an integer n >= 0: digamma for n = 0."""
    if int(n) != n or n < 0:
        raise ValueError(f"polygamma: n must be a non-negative integer, got {n}")
    if n == 0:
        return digamma(x)
    if not is_traced(x):
        return scipy_function("polygamma")(int(n), x)
    _refuse_complex("polygamma", aval_of(x))
    return polygamma_p.bind(convert(x, np.float64), n=int(n))


__all__ = ["SPECIAL", "scipy_function", "traced_complex", "erf", "erfc", "gammaln", "digamma", "polygamma", "ndtri", "erfinv",
           "erf_p", "erfc_p", "gammaln_p", "digamma_p", "polygamma_p", "ndtri_p", "erfinv_p"]
