"""fg.scipy.special: each function against SciPy (values), its derivatives against finite
differences at orders 1 and 2 in both modes, the scipy.special ufunc itself on traced values
(dispatched here), compiled (fg.jit) and batched (fg.vmap) equal to interpreted."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads

sp = pytest.importorskip("scipy.special")
S = fg.scipy.special

# name: (funcgrad function, SciPy function, arguments)
X = np.array([0.3, 1.7, 4.2])
P = np.array([0.1, 0.5, 0.8])
CASES = {
    "erf": (S.erf, sp.erf, (X - 2.0,)),
    "erfc": (S.erfc, sp.erfc, (X - 1.0,)),
    "erfinv": (S.erfinv, sp.erfinv, (P - 0.3,)),
    "expit": (S.expit, sp.expit, (X - 2.0,)),
    "logit": (S.logit, sp.logit, (P,)),
    "xlogy": (S.xlogy, sp.xlogy, (X, P)),
    "xlog1py": (S.xlog1py, sp.xlog1py, (X, P)),
    "ndtr": (S.ndtr, sp.ndtr, (X - 2.0,)),
    "log_ndtr": (S.log_ndtr, sp.log_ndtr, (np.array([-30.0, -2.0, 1.5]),)),
    "gammaln": (S.gammaln, sp.gammaln, (X,)),
    "digamma": (S.digamma, sp.digamma, (X,)),
    "polygamma2": (lambda x: S.polygamma(2, x), lambda x: sp.polygamma(2, x), (X,)),
    "ndtri": (S.ndtri, sp.ndtri, (P,)),
    "betaln": (S.betaln, sp.betaln, (X, X[::-1])),
    "gammainc": (lambda x: S.gammainc(2.5, x), lambda x: sp.gammainc(2.5, x), (X,)),
    "gammaincc": (lambda x: S.gammaincc(X, x), lambda x: sp.gammaincc(X, x), (X[::-1],)),
}


def assert_values_derivatives_dispatch(f, ref, args):
    """f against SciPy's ref on args, its derivatives to order 2 in both modes, and SciPy's
    ufunc called on traced values reaching f (also used by test_scipy_special_more.py)."""
    np.testing.assert_allclose(f(*args), ref(*args), rtol=1e-13)
    check_grads(lambda *a: fnp.sum(f(*a)), args, order=2, rtol=1e-5, atol=1e-8)
    if isinstance(ref, np.ufunc):                     # sp.<name>(traced) reaches S.<name>
        np.testing.assert_allclose(fg.grad(lambda *a: fnp.sum(ref(*a)))(*args),
                                   fg.grad(lambda *a: fnp.sum(f(*a)))(*args), rtol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_derivatives_dispatch_jit_vmap(name):
    f, ref, args = CASES[name]
    assert_values_derivatives_dispatch(f, ref, args)
    np.testing.assert_allclose(fg.jit(f)(*args), ref(*args), rtol=1e-13)
    batched = fg.vmap(f)(*[np.stack([a, a[::-1]]) for a in args])
    np.testing.assert_allclose(batched[1], ref(*[a[::-1] for a in args]), rtol=1e-13)


def test_closed_forms_and_conventions():
    assert fg.grad(S.gammaln)(3.0) == pytest.approx(1.5 - np.euler_gamma, rel=1e-14)
    assert fg.grad(S.erfinv)(0.0) == pytest.approx(np.sqrt(np.pi) / 2, rel=1e-14)
    assert fg.grad(S.log_ndtr)(-30.0) == pytest.approx(30.0, rel=2e-3)     # ~ -x far left
    assert fg.grad(lambda x: S.xlogy(x, 0.0))(0.0) == 0.0                # 0 log 0 = 0
    with pytest.raises(ValueError, match="non-negative"):
        S.polygamma(-1, 1.0)
    assert fg.grad(lambda x: S.gammainc(2.0, x))(1.0) == pytest.approx(np.exp(-1.0), rel=1e-14)
    assert fg.grad(S.ndtri)(0.5) == pytest.approx(np.sqrt(2 * np.pi), rel=1e-14)
    # the derivative in the shape parameter a is refused where a is differentiated only
    with pytest.raises(fg.UnsupportedFunctionError, match="with respect to a"):
        fg.grad(lambda a: S.gammaincc(a, 1.0))(2.0)
    assert fg.grad(lambda a: S.gammainc(fg.stop_gradient(a), 1.0) * a)(2.0) == pytest.approx(
        sp.gammainc(2.0, 1.0), rel=1e-14)
    x = np.array([1.0, 2.0])
    assert fg.grad(lambda x: fnp.sum(sp.gammainc(X[:2], x)))(x) == pytest.approx(
        fg.grad(lambda x: fnp.sum(S.gammainc(X[:2], x)))(x), rel=1e-14)    # dispatched
    np.testing.assert_allclose(S.logsumexp(X, b=P), sp.logsumexp(X, b=P), rtol=1e-14)
