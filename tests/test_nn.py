"""fg.nn: values against closed forms (SciPy), derivatives against finite differences (both
modes, second order) and closed forms, conventions at kinks, stability at extreme inputs."""
import numpy as np
import pytest
import scipy.special

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads

X = np.array([-3.0, -0.7, 0.2, 1.5, 4.0])
X2 = np.array([-2.5, -1.4, -0.7, 0.2, 1.5, 2.9, 7.0])     # away from every kink
E = scipy.special.expit
SELU_A, SELU_S = 1.6732632423543772, 1.0507009873554805
SP = lambda x: np.logaddexp(x, 0.0)              # noqa: E731  (softplus)


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


# jax.nn's other activations: (name, value, derivative), written out with NumPy and SciPy
MORE = [
    ("relu6", lambda x: np.clip(x, 0, 6), lambda x: ((x > 0) & (x < 6)) * 1.0),
    ("leaky_relu", lambda x: np.where(x >= 0, x, 0.01 * x), lambda x: np.where(x >= 0, 1, 0.01)),
    ("elu", lambda x: np.where(x > 0, x, np.expm1(x)), lambda x: np.where(x > 0, 1, np.exp(x))),
    ("celu", lambda x: np.where(x > 0, x, np.expm1(x)), lambda x: np.where(x > 0, 1, np.exp(x))),
    ("selu", lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x)),
     lambda x: SELU_S * np.where(x > 0, 1, SELU_A * np.exp(x))),
    ("log_sigmoid", lambda x: -np.logaddexp(0.0, -x), lambda x: E(-x)),
    ("mish", lambda x: x * np.tanh(SP(x)),
     lambda x: np.tanh(SP(x)) + x * (1 - np.tanh(SP(x)) ** 2) * E(x)),
    ("tanh", np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    ("hard_tanh", lambda x: np.clip(x, -1, 1), lambda x: (np.abs(x) < 1) * 1.0),
    ("hard_sigmoid", lambda x: np.clip(x + 3, 0, 6) / 6, lambda x: (np.abs(x) < 3) / 6),
    ("hard_silu", lambda x: x * np.clip(x + 3, 0, 6) / 6,
     lambda x: np.clip(x + 3, 0, 6) / 6 + x * (np.abs(x) < 3) / 6),
    ("soft_sign", lambda x: x / (np.abs(x) + 1), lambda x: 1 / (np.abs(x) + 1) ** 2),
    ("squareplus", lambda x: (x + np.sqrt(x * x + 4)) / 2, lambda x: (1 + x / np.sqrt(x * x + 4)) / 2),
    ("sparse_plus", lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
     lambda x: np.where(x <= -1, 0, np.where(x >= 1, 1, (x + 1) / 2))),
    ("sparse_sigmoid", lambda x: np.clip((x + 1) / 2, 0, 1), lambda x: (np.abs(x) < 1) / 2),
    ("identity", lambda x: x, lambda x: np.ones_like(x)),
]


@pytest.mark.parametrize("name,ref,dref", MORE, ids=[m[0] for m in MORE])
def test_more_activations(name, ref, dref):
    f = getattr(fg.nn, name)
    np.testing.assert_allclose(fg.jit(f)(X2), ref(X2), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(f(x)))(X2), dref(X2), rtol=1e-13)
    check_grads(f, (X2,), order=2)
    np.testing.assert_allclose(fg.vmap(f)(X2[:, None]), ref(X2)[:, None], rtol=1e-14)


def test_activation_kinks_take_the_left_pieces_derivative():
    d = lambda f, x: float(fg.grad(f)(x))                # noqa: E731
    assert d(fg.nn.relu6, 0.0) == 0.0 and d(fg.nn.relu6, 6.0) == 0.0
    assert d(fg.nn.hard_tanh, 1.0) == 0.0 and d(fg.nn.hard_tanh, -1.0) == 0.0
    assert d(fg.nn.leaky_relu, 0.0) == 1.0 and d(fg.nn.elu, 0.0) == 1.0
    assert np.all(np.isfinite(fg.nn.elu(np.array([800.0, -800.0]))))
    np.testing.assert_allclose(fg.nn.celu(np.array([-1.0]), alpha=2.0), 2 * np.expm1(-0.5))


def test_glu_and_standardize():
    x = np.array([[0.3, -1.2, 0.5, 2.0], [1.0, 0.1, -0.4, 0.7]])
    np.testing.assert_allclose(fg.nn.glu(x), x[:, :2] * E(x[:, 2:]), rtol=1e-15)
    np.testing.assert_allclose(fg.nn.glu(x, axis=0), x[:1] * E(x[1:]), rtol=1e-15)
    check_grads(fg.nn.glu, (x,), order=2)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(fg.jit(fg.nn.standardize)(x), want, rtol=1e-13)
    np.testing.assert_allclose(fg.nn.standardize(x, axis=0, epsilon=0.0),
                               (x - x.mean(0)) / x.std(0), rtol=1e-13)
    check_grads(fg.nn.standardize, (x,), order=2)


def _attention_reference(q, k, v, bias=None, keep=None):
    logits = np.einsum("...tnh,...snh->...nts", q, k) / np.sqrt(q.shape[-1])
    logits = logits + (0 if bias is None else bias)
    if keep is not None:
        logits = np.where(keep, logits, -np.inf)
    with np.errstate(invalid="ignore"):       # (a row with nothing kept: NaN, not compared)
        w = scipy.special.softmax(logits, axis=-1)
    return np.einsum("...nts,...snh->...tnh", w, v)


def test_dot_product_attention():
    r = np.random.default_rng(3)
    q, k, v = r.normal(size=(2, 4, 2, 3)), r.normal(size=(2, 5, 2, 3)), r.normal(size=(2, 5, 2, 3))
    bias = r.normal(size=(2, 4, 5))
    att = fg.nn.dot_product_attention
    np.testing.assert_allclose(fg.jit(att)(q, k, v), _attention_reference(q, k, v), rtol=1e-13)
    np.testing.assert_allclose(att(q, k, v, bias), _attention_reference(q, k, v, bias), rtol=1e-13)
    causal = np.tril(np.ones((4, 5), bool), k=1)
    np.testing.assert_allclose(att(q, k, v, is_causal=True),
                               _attention_reference(q, k, v, keep=causal), rtol=1e-13)
    mask = r.random((2, 4, 5)) < 0.7
    mask[:, 0] = False                          # a query that sees nothing: zeros, not NaN
    got = att(q, k, v, mask=mask)
    np.testing.assert_array_equal(got[:, 0], 0.0)
    np.testing.assert_allclose(got[:, 1:], _attention_reference(q, k, v, keep=mask)[:, 1:],
                               rtol=1e-13)
    kv1 = k[..., :1, :]                         # grouped-query attention: one kv head for two
    np.testing.assert_allclose(att(q, kv1, kv1), _attention_reference(
        q, np.repeat(kv1, 2, axis=-2), np.repeat(kv1, 2, axis=-2)), rtol=1e-13)
    check_grads(lambda q, k, v, b: att(q, k, v, b), (q[0], k[0], v[0], bias), order=2)


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


# ---- fg.nn.initializers -------------------------------------------------------------------

INIT = fg.nn.initializers
KEY = fg.random.key(11)


@pytest.mark.parametrize("name,shape,std", [
    ("glorot_uniform", (400, 200), np.sqrt(2 / 600)), ("glorot_normal", (400, 200), np.sqrt(2 / 600)),
    ("he_uniform", (300, 100), np.sqrt(2 / 300)), ("he_normal", (300, 100), np.sqrt(2 / 300)),
    ("lecun_uniform", (3, 3, 20, 30), np.sqrt(1 / 180)), ("lecun_normal", (3, 3, 20, 30), np.sqrt(1 / 180)),
    ("xavier_uniform", (50, 60, 2), np.sqrt(2 / (60 * 50 + 2 * 50)))])
def test_variance_scaling_initializers(name, shape, std):
    """The standard deviation each promises (fans as JAX reads the shape: in_axis -2, out_axis
    -1, the rest a receptive field), the bounds of the uniform ones, one key one array."""
    w = getattr(INIT, name)()(KEY, shape)
    assert w.shape == shape and w.dtype == np.float64
    np.testing.assert_allclose(w.std(), std, rtol=0.03)
    assert abs(w.mean()) < 4 * std / np.sqrt(w.size)
    if "uniform" in name:
        assert np.abs(w).max() <= np.sqrt(3) * std
    else:                                       # truncated at two standard deviations
        assert np.abs(w).max() <= 2 * std / 0.87962566103423978 + 1e-12
    np.testing.assert_array_equal(w, getattr(INIT, name)()(KEY, shape))
    assert getattr(INIT, name)()(KEY, (4, 3), np.float32).dtype == np.float32


def test_simple_and_orthogonal_initializers():
    assert np.all(INIT.zeros(KEY, (2, 3)) == 0) and np.all(INIT.ones(KEY, (3,)) == 1)
    np.testing.assert_array_equal(INIT.constant(0.5)(KEY, (2,)), [0.5, 0.5])
    np.testing.assert_allclose(INIT.normal(0.1)(KEY, (20000,)).std(), 0.1, rtol=0.03)
    u = INIT.uniform(0.5)(KEY, (20000,))
    assert u.min() >= 0 and u.max() < 0.5
    t = INIT.truncated_normal(1.0)(KEY, (20000,))
    assert np.abs(t).max() <= 2.0 and abs(t.std() - 0.87962566103423978) < 0.02
    for shape in [(5, 3), (3, 5), (2, 3, 4)]:
        w = INIT.orthogonal(scale=2.0)(KEY, shape)
        m = w.reshape(-1, shape[-1])
        small = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
        np.testing.assert_allclose(small, 4.0 * np.eye(min(m.shape)), atol=1e-12)
    np.testing.assert_allclose(INIT.orthogonal(column_axis=0)(KEY, (3, 5)) @
                               INIT.orthogonal(column_axis=0)(KEY, (3, 5)).T, np.eye(3), atol=1e-12)
    with pytest.raises(ValueError, match="mode"):
        INIT.variance_scaling(1.0, "fan_out_avg", "normal")
