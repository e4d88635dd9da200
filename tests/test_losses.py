"""fg.optim.losses: values against closed forms written out in NumPy and, at extreme logits,
against a 50-digit reference (decimal); derivatives against finite differences to second
order; compiled; optax's values where optax is installed."""
import decimal

import numpy as np
import pytest
import scipy.special

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads

L = fg.optim.losses
r = np.random.default_rng(5)
LOGITS = r.normal(size=(4, 3)) * 2
PROBS = scipy.special.softmax(r.normal(size=(4, 3)), axis=-1)
INT = np.array([0, 2, 1, 2])
PRED, TARG = r.normal(size=(4, 3)), r.normal(size=(4, 3))
SIGNS = np.sign(r.normal(size=(4, 3)))
BINARY = (r.random((4, 3)) < 0.5).astype(float)

decimal.getcontext().prec = 50
D = decimal.Decimal


def _lse(row):
    return max(row) + sum((D(v) - max(row)).exp() for v in map(D, row)).ln()


def ref_int_ce(logits, labels):
    return np.array([float(_lse(list(map(D, row))) - D(row[k])) for row, k in zip(logits, labels)])


def ref_prob_ce(logits, labels):
    return np.array([float(sum(D(p) * (_lse(list(map(D, row))) - D(v)) for v, p in zip(row, ps)))
                     for row, ps in zip(logits, labels)])


def ref_bce(logits, labels):
    def one(z, y):
        z = D(z)
        log_p = -(D(1) + (-z).exp()).ln()          # log sigmoid(z)
        log_q = -(D(1) + z.exp()).ln()             # log sigmoid(-z)
        return float(-D(y) * log_p - (1 - D(y)) * log_q)
    return np.vectorize(one)(logits, labels)


def test_cross_entropies_at_extreme_logits_match_50_digits():
    logits = np.array([[1e4, 0.0, -1e4], [-800.0, 800.0, 799.0], [0.1, 0.2, 0.3]])
    labels = np.array([2, 1, 0])
    np.testing.assert_allclose(L.softmax_cross_entropy_with_integer_labels(logits, labels),
                               ref_int_ce(logits, labels), rtol=1e-15)
    probs = np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(fg.jit(L.softmax_cross_entropy)(logits, probs),
                               ref_prob_ce(logits, probs), rtol=1e-15)
    z = np.array([-1e4, -40.0, -1.0, 0.0, 3.0, 50.0, 1e4])
    y = np.array([1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(L.sigmoid_binary_cross_entropy(z, y), ref_bce(z, y), rtol=1e-14)
    g = fg.grad(lambda z: fnp.sum(L.sigmoid_binary_cross_entropy(z, y)))(z)
    np.testing.assert_allclose(g, scipy.special.expit(z) - y, rtol=1e-14, atol=1e-300)
    g = fg.grad(lambda x: fnp.sum(L.softmax_cross_entropy_with_integer_labels(x, labels)))(logits)
    np.testing.assert_allclose(g, scipy.special.softmax(logits, -1) - np.eye(3)[labels], atol=1e-15)
    np.testing.assert_allclose(L.log_cosh(np.array([1e4, -1e4])), 1e4 - np.log(2.0), rtol=1e-15)


SP = lambda z: np.logaddexp(0.0, z)              # noqa: E731  softplus
SOFT = lambda z: scipy.special.softmax(z, axis=-1)  # noqa: E731

# (name, loss(*args), args, its closed form written out with NumPy and SciPy)
CASES = [
    ("squared_error", L.squared_error, (PRED, TARG), lambda p, t: (p - t) ** 2),
    ("l2_loss", L.l2_loss, (PRED, TARG), lambda p, t: 0.5 * (p - t) ** 2),
    ("huber_loss", lambda p, t: L.huber_loss(p, t, delta=0.7), (PRED, TARG),
     lambda p, t: np.where(np.abs(p - t) <= 0.7, 0.5 * (p - t) ** 2, 0.7 * (np.abs(p - t) - 0.35))),
    ("log_cosh", L.log_cosh, (PRED, TARG), lambda p, t: np.log(np.cosh(p - t))),
    ("cosine_similarity", L.cosine_similarity, (PRED, TARG),
     lambda p, t: np.sum(p * t, -1) / np.linalg.norm(p, axis=-1) / np.linalg.norm(t, axis=-1)),
    ("cosine_distance", L.cosine_distance, (PRED, TARG),
     lambda p, t: 1 - np.sum(p * t, -1) / np.linalg.norm(p, axis=-1) / np.linalg.norm(t, axis=-1)),
    ("softmax_cross_entropy", L.softmax_cross_entropy, (LOGITS, PROBS),
     lambda z, p: -np.sum(p * np.log(SOFT(z)), -1)),
    ("softmax_cross_entropy_with_integer_labels",
     lambda z: L.softmax_cross_entropy_with_integer_labels(z, INT), (LOGITS,),
     lambda z: -np.log(SOFT(z)[np.arange(4), INT])),
    ("safe_softmax_cross_entropy", L.safe_softmax_cross_entropy, (LOGITS, PROBS),
     lambda z, p: -np.sum(p * np.log(SOFT(z)), -1)),
    ("poly_loss_cross_entropy", L.poly_loss_cross_entropy, (LOGITS, PROBS),
     lambda z, p: -np.sum(p * np.log(SOFT(z)), -1) + 2.0 * np.sum(p * (1 - SOFT(z)), -1)),
    ("sigmoid_binary_cross_entropy", L.sigmoid_binary_cross_entropy, (LOGITS, BINARY),
     lambda z, y: y * SP(-z) + (1 - y) * SP(z)),
    ("sigmoid_focal_loss", lambda z: L.sigmoid_focal_loss(z, BINARY, alpha=0.25), (LOGITS,),
     lambda z: (0.25 * BINARY + 0.75 * (1 - BINARY)) * (BINARY * SP(-z) + (1 - BINARY) * SP(z))
     * (1 - np.where(BINARY == 1, scipy.special.expit(z), scipy.special.expit(-z))) ** 2),
    ("kl_divergence", L.kl_divergence, (np.log(PROBS[::-1]), PROBS),
     lambda lq, p: np.sum(p * (np.log(p) - lq), -1)),
    ("kl_divergence_with_log_targets", L.kl_divergence_with_log_targets,
     (np.log(PROBS[::-1]), np.log(PROBS)), lambda lq, lp: np.sum(np.exp(lp) * (lp - lq), -1)),
    ("convex_kl_divergence", L.convex_kl_divergence, (np.log(PROBS[::-1]), PROBS),
     lambda lq, p: np.sum(p * (np.log(p) - lq) + np.exp(lq) - p, -1)),
    ("hinge_loss", L.hinge_loss, (PRED, SIGNS), lambda o, t: np.maximum(0, 1 - o * t)),
    ("perceptron_loss", L.perceptron_loss, (PRED, SIGNS), lambda o, t: np.maximum(0, -o * t)),
    ("multiclass_hinge_loss", lambda s: L.multiclass_hinge_loss(s, INT), (PRED,),
     lambda s: np.max(s + 1 - np.eye(3)[INT], -1) - s[np.arange(4), INT]),
    ("multiclass_perceptron_loss", lambda s: L.multiclass_perceptron_loss(s, INT), (PRED,),
     lambda s: np.max(s, -1) - s[np.arange(4), INT]),
    ("smooth_labels", lambda y: L.smooth_labels(y, 0.1), (PROBS,), lambda y: 0.9 * y + 0.1 / 3),
    ("triplet_margin_loss", L.triplet_margin_loss, (PRED, TARG, PRED[::-1]),
     lambda a, p, n: np.maximum(np.sqrt(np.sum((a - p) ** 2, -1) + 1e-6)
                                - np.sqrt(np.sum((a - n) ** 2, -1) + 1e-6) + 1.0, 0.0)),
]


@pytest.mark.parametrize("name,loss,args,ref", CASES, ids=[c[0] for c in CASES])
def test_loss_values_and_derivatives(name, loss, args, ref):
    np.testing.assert_allclose(fg.jit(loss)(*args), ref(*args), rtol=1e-13, atol=1e-15)
    check_grads(loss, args, order=2, argnums=0)


def test_every_optax_loss_name_listed_has_a_case():
    assert sorted(c[0] for c in CASES) == sorted(L.__all__)


@pytest.mark.parametrize("name,loss,args,ref", CASES, ids=[c[0] for c in CASES])
def test_against_optax(name, loss, args, ref):
    optax = pytest.importorskip("optax")
    import jax
    jax.config.update("jax_enable_x64", True)
    fn = getattr(optax.losses, name, None) or getattr(optax, name)
    ours = getattr(L, name)
    extra = {"huber_loss": {"delta": 0.7}, "sigmoid_focal_loss": {"alpha": 0.25},
             "smooth_labels": {"alpha": 0.1}}.get(name, {})
    call = ((args[0], INT) if name.startswith(("softmax_cross_entropy_with", "multiclass"))
            else (args[0], BINARY) if name == "sigmoid_focal_loss" else args)
    np.testing.assert_allclose(ours(*call, **extra), np.asarray(fn(*call, **extra)), rtol=1e-12)
