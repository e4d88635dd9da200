"""fg.nn: values against closed forms (SciPy), derivatives against finite differences (both
modes, second order) and closed forms, conventions at kinks, stability at extreme inputs."""
import numpy as np
import pytest
import scipy.special

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads

X = np.array([-3.0, -0.7, 0.2, 1.5, 4.0])


@pytest.mark.parametrize("name,ref,dref", [
    ("relu", lambda x: np.maximum(x, 0), lambda x: (x > 0).astype(float)),
    ("sigmoid", scipy.special.expit, lambda x: scipy.special.expit(x) * scipy.special.expit(-x)),
    ("softplus", lambda x: np.logaddexp(x, 0), scipy.special.expit),
    ("silu", lambda x: x * scipy.special.expit(x),
     lambda x: scipy.special.expit(x) * (1 + x * scipy.special.expit(-x))),
    ("erf", scipy.special.erf, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x ** 2)),
])
def test_activations(name, ref, dref):
    f = getattr(fg.nn, name)
    np.testing.assert_allclose(fg.jit(f)(X), ref(X), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(f(x)))(X), dref(X), rtol=1e-13)
    check_grads(f, (X,), order=2)


def test_gelu_exact_and_tanh_forms():
    exact = X * scipy.special.ndtr(X)
    np.testing.assert_allclose(fg.nn.gelu(X, approximate=False), exact, rtol=1e-14)
    np.testing.assert_allclose(fg.nn.gelu(X), exact, atol=1e-3)
    d_exact = scipy.special.ndtr(X) + X * np.exp(-X ** 2 / 2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(fg.nn.gelu(x, False)))(X), d_exact,
                               rtol=1e-13)
    check_grads(lambda x: fg.nn.gelu(x, approximate=False), (X,), order=2)
    check_grads(fg.nn.gelu, (X,), order=2)


def test_softmax_family():
    z = np.array([[1.0, 2.0, -1.0], [1000.0, 1000.0, -1000.0]])
    np.testing.assert_allclose(fg.nn.softmax(z), scipy.special.softmax(z, axis=-1), rtol=1e-14)
    np.testing.assert_allclose(fg.jit(fg.nn.log_softmax)(z),
                               scipy.special.log_softmax(z, axis=-1), rtol=1e-14)
    np.testing.assert_allclose(fg.nn.softmax(z, axis=0), scipy.special.softmax(z, axis=0))
    np.testing.assert_allclose(fg.nn.logsumexp(z, axis=1), scipy.special.logsumexp(z, axis=1))
    v = np.array([0.3, -0.2, 0.9])                    # softmax Jacobian: diag(p) - p p^T
    p = scipy.special.softmax(v)
    np.testing.assert_allclose(fg.jacrev(fg.nn.softmax)(v), np.diag(p) - np.outer(p, p),
                               atol=1e-15)
    check_grads(fg.nn.softmax, (z[:1],), order=2)
    check_grads(fg.nn.log_softmax, (z[:1],), order=2)
    with np.errstate(invalid="ignore"):              # nothing left: 0/0, as JAX gives
        assert np.all(np.isnan(fg.nn.softmax(np.array([-np.inf, -np.inf]))))
    assert np.isfinite(fg.nn.log_softmax(np.array([0.0, -np.inf]))[0])


def test_one_hot():
    labels = np.array([0, 2, 1, 5])
    want = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 0]], float)
    np.testing.assert_array_equal(fg.nn.one_hot(labels, 3), want)
    np.testing.assert_array_equal(fg.nn.one_hot(labels, 3, axis=0), want.T)
    np.testing.assert_array_equal(fg.jit(lambda l: fg.nn.one_hot(l, 3))(labels), want)
    assert fg.nn.one_hot(labels, 3, dtype=np.float32).dtype == np.float32


def test_extreme_inputs_stay_finite():
    big = np.array([-800.0, 800.0])
    assert np.all(np.isfinite(fg.grad(lambda x: fnp.sum(fg.nn.softplus(x)))(big)))
    np.testing.assert_allclose(fg.nn.sigmoid(np.array([-40.0])), scipy.special.expit(-40.0),
                               rtol=1e-14)
    assert np.all(np.isfinite(fg.grad(lambda x: fnp.sum(fg.nn.sigmoid(x)))(big)))
    assert np.isnan(fg.nn.relu(np.array([np.nan]))[0])
