"""Regressions of issue 28 in the funcgrad.numpy namespace and its primitives: quantile in q,
fnp.where(condition), NumPy scalar types of traced values, longdouble and __version__, einsum
broadcasting, .at on constructors, logsumexp's sign, hypot/cumprod at zeros, repeated-index
.at[].set, complex exponents."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads, rand
from funcgrad.api import evaluate

QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "hazen", "weibull",
                    "median_unbiased", "normal_unbiased", "interpolated_inverted_cdf",
                    "inverted_cdf", "averaged_inverted_cdf", "closest_observation")


# ---- 1. quantile / percentile differentiate q -------------------------------------------------

def test_quantile_derivative_in_q_is_the_slope_between_order_statistics():
    x, q = np.array([0.3, 0.5, 0.7]), np.array([0.2, 0.4, 0.9])
    jac = fg.jacrev(lambda q: fnp.quantile(x, q))(q)
    np.testing.assert_allclose(jac, np.diag([0.4, 0.4, 0.4]), atol=1e-12)
    g = fg.grad(lambda p: fnp.sum(fnp.percentile(x, p)))(100 * q)
    np.testing.assert_allclose(g, [0.004] * 3, atol=1e-12)
    g0 = fg.grad(lambda q: fnp.quantile(x, q))(0.2)        # a Python float q
    np.testing.assert_allclose(g0, 0.4)


@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_quantile_in_q_every_method(method):
    x = rand((2, 7), seed=13)
    q = np.array([0.13, 0.52, 0.64, 0.93])      # away from every method's jumps
    want = np.quantile(x, q, axis=1, method=method)
    for f in (lambda q: fnp.quantile(x, q, axis=1, method=method),
              lambda q: fnp.percentile(x, 100 * q, axis=1, method=method)):
        np.testing.assert_allclose(evaluate(f, q), want, rtol=1e-13)
        np.testing.assert_allclose(fg.jit(f)(q), want, rtol=1e-13)
        check_grads(f, (q,), order=2)
    check_grads(lambda x, q: fnp.quantile(x, q, axis=0, method=method, keepdims=True),
                (x.T, q), order=1)


def test_quantile_q_range_checked_when_traced():
    x = np.array([0.3, 0.5, 0.7])
    with pytest.raises(ValueError, match=r"range \[0, 1\]"):
        fg.grad(lambda q: fnp.quantile(x, q))(1.5)
    with pytest.raises(ValueError, match=r"range \[0, 100\]"):
        fg.grad(lambda q: fnp.percentile(x, q))(-3.0)
    # under vmap the check cannot be a Python decision: out of range gives NaN
    got = fg.vmap(lambda q: fnp.quantile(x, q))(np.array([0.25, 1.5]))
    np.testing.assert_allclose(got[0], np.quantile(x, 0.25))
    assert np.isnan(got[1])
