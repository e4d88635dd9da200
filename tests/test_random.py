"""fg.random: the Threefry generator (known answers; kernels and vmap give the interpreter's
bits), keys (split, fold_in), each distribution against SciPy's (Kolmogorov-Smirnov, moments,
frequencies), and reparameterised derivatives."""
import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.backend.runtime import threefry_bits
from funcgrad.primitives.threefry import _bits_impl, threefry2x32
from conftest import check_grads

R = fg.random
KEY = R.key(2026)
N = 20000
M32 = 0xFFFFFFFF


def test_threefry_known_answers():
    """Random123's known-answer vectors for Threefry-2x32, 20 rounds."""
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((M32, M32), (M32, M32), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for (k0, k1), (x0, x1), want in cases:
        assert tuple(int(v) for v in threefry2x32(k0, k1, x0, x1)) == want


words = st.integers(0, M32)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(words, words, words, words), min_size=1, max_size=4),
       st.integers(0, 9))
def test_compiled_bits_are_the_interpreters(rows, n):
    """The kernels' helper and the NumPy implementation: the same words for any keys, first
    counters (a carry into the high word included) and lengths, odd ones too."""
    keys = np.array([r[:2] for r in rows], np.uint32)
    starts = np.array([r[2:] for r in rows], np.uint32)
    np.testing.assert_array_equal(threefry_bits(keys, starts, n),
                                  _bits_impl(keys, starts, shape=(n,)))


def test_keys_split_and_fold_in():
    assert R.key(5).tolist() == [0, 5] and R.key(2 ** 40 + 3).tolist() == [256, 3]
    assert R.PRNGKey(-1).tolist() == [M32, M32]
    np.testing.assert_array_equal(fg.jit(R.key)(np.int64(2 ** 40 + 3)), R.key(2 ** 40 + 3))
    keys = R.split(KEY, 100)
    folded = np.stack([R.fold_in(KEY, i) for i in range(100)])
    assert keys.shape == folded.shape == (100, 2) and keys.dtype == np.uint32
    all_keys = {tuple(k) for k in np.concatenate([keys, folded])}
    assert len(all_keys) == 200                 # distinct, and fold_in's never split's
    np.testing.assert_array_equal(fg.jit(R.fold_in)(KEY, np.int64(7)), R.fold_in(KEY, 7))
    np.testing.assert_array_equal(R.split(KEY), R.split(KEY))       # a key is a value
    with pytest.raises(TypeError, match=r"fg.random.normal: expected a key.*fg.random.key"):
        R.normal(np.array([1.0, 2.0]), (3,))


# (name, draw(key), reference continuous distribution or None)
CONTINUOUS = [
    ("uniform", lambda k: R.uniform(k, (N,)), ss.uniform()),
    ("uniform [-2, 3)", lambda k: R.uniform(k, (N,), minval=-2.0, maxval=3.0), ss.uniform(-2, 5)),
    ("normal", lambda k: R.normal(k, (N,)), ss.norm()),
    ("gumbel", lambda k: R.gumbel(k, (N,)), ss.gumbel_r()),
    ("exponential", lambda k: R.exponential(k, (N,)), ss.expon()),
    ("logistic", lambda k: R.logistic(k, (N,)), ss.logistic()),
    ("laplace", lambda k: R.laplace(k, (N,)), ss.laplace()),
    ("cauchy", lambda k: R.cauchy(k, (N,)), ss.cauchy()),
    ("truncated_normal", lambda k: R.truncated_normal(k, -0.5, 2.0, (N,)), ss.truncnorm(-0.5, 2.0)),
    ("weibull_min", lambda k: R.weibull_min(k, 2.0, 1.5, (N,)), ss.weibull_min(1.5, scale=2.0)),
    ("pareto", lambda k: R.pareto(k, 3.0, (N,)), ss.pareto(3.0)),
    ("rayleigh", lambda k: R.rayleigh(k, 2.0, (N,)), ss.rayleigh(scale=2.0)),
    ("maxwell", lambda k: R.maxwell(k, (N,)), ss.maxwell()),
]


@pytest.mark.parametrize("name,draw,dist", CONTINUOUS, ids=[c[0] for c in CONTINUOUS])
def test_continuous_draws_follow_their_distribution(name, draw, dist):
    x = draw(KEY)
    assert x.shape == (N,) and x.dtype == np.float64 and np.all(np.isfinite(x))
    assert ss.kstest(x, dist.cdf).pvalue > 1e-3
    assert ss.kstest(draw(R.fold_in(KEY, 1)), dist.cdf).pvalue > 1e-3
    lo, hi = dist.support()
    assert np.all((x >= lo) & (x <= hi))


def test_uniform_is_half_open_and_float32_has_24_bits():
    u = R.uniform(KEY, (N,))
    assert u.min() >= 0.0 and u.max() < 1.0
    f = R.uniform(KEY, (N,), np.float32)
    assert f.dtype == np.float32 and f.max() < 1.0
    assert np.all(f * np.float32(2 ** 24) == np.floor(f * np.float32(2 ** 24)))
    assert R.normal(KEY, (2, 3), np.float32).dtype == np.float32


def test_discrete_draws():
    b = R.bernoulli(KEY, 0.3, (N,))
    assert b.dtype == bool and abs(b.mean() - 0.3) < 4 * np.sqrt(0.21 / N)
    r = R.randint(KEY, (N,), 3, 10)
    assert r.dtype == np.int64 and r.min() == 3 and r.max() == 9
    assert ss.chisquare(np.bincount(r - 3)).pvalue > 1e-3
    p = np.array([0.1, 0.2, 0.3, 0.4])
    c = R.categorical(KEY, np.log(p), shape=(N,))
    assert ss.chisquare(np.bincount(c, minlength=4), N * p).pvalue > 1e-3
    rows = R.categorical(KEY, np.log(np.array([[0.999, 0.001], [0.001, 0.999]])))
    assert rows.tolist() == [0, 1]
    s = R.rademacher(KEY, (N,))
    assert set(np.unique(s)) == {-1, 1} and abs(s.mean()) < 4 / np.sqrt(N)
    assert R.bits(KEY, (3,), np.uint64).dtype == np.uint64
    assert R.bits(KEY, (N,), np.uint8).max() == 255


def test_permutation_and_choice():
    perm = R.permutation(KEY, 50)
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))
    x = np.arange(12.0).reshape(4, 3)
    px = R.permutation(KEY, x, axis=1)
    assert sorted(px[0].tolist()) == [0.0, 1.0, 2.0] and np.all(px - px[:, :1] == px[0] - px[0, 0])
    pick = R.choice(KEY, 10, (2, 3), replace=False)
    assert pick.shape == (2, 3) and len(set(pick.ravel().tolist())) == 6
    w = np.array([0.5, 0.0, 0.5])
    assert set(np.unique(R.choice(KEY, np.array([1.0, 2.0, 3.0]), (200,), p=w))) == {1.0, 3.0}
    assert set(R.choice(KEY, 3, (2,), replace=False, p=w).tolist()) == {0, 2}
    freq = np.bincount(R.choice(KEY, 4, (N,)), minlength=4)
    assert ss.chisquare(freq).pvalue > 1e-3
    with pytest.raises(ValueError, match="without replacement"):
        R.choice(KEY, 3, (4,), replace=False)


def test_double_sided_maxwell_ball_and_orthogonal():
    x = R.double_sided_maxwell(KEY, 1.0, 2.0, (N,))
    assert ss.kstest(np.abs(x - 1.0) / 2.0, ss.maxwell().cdf).pvalue > 1e-3
    assert abs(np.mean(x > 1.0) - 0.5) < 4 * np.sqrt(0.25 / N)
    b = R.ball(KEY, 3, 1.5, (N,))                  # uniform in the ball: |x|_p^d ~ U(0, 1)
    r = np.sum(np.abs(b) ** 1.5, axis=-1) ** (1 / 1.5)
    assert b.shape == (N, 3) and ss.kstest(r ** 3, ss.uniform().cdf).pvalue > 1e-3
    q = R.orthogonal(KEY, 4, (N // 4,))
    np.testing.assert_allclose(np.einsum("nji,njk->nik", q, q), np.broadcast_to(np.eye(4), q.shape),
                               atol=1e-14)
    for i, j in [(0, 0), (2, 1)]:                 # Haar: (q_ij + 1) / 2 ~ Beta((n-1)/2, (n-1)/2)
        assert ss.kstest((q[:, i, j] + 1) / 2, ss.beta(1.5, 1.5).cdf).pvalue > 1e-3


def test_multivariate_normal_covariance():
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    x = R.multivariate_normal(KEY, np.array([1.0, -1.0]), cov, (N,))
    assert x.shape == (N, 2)
    np.testing.assert_allclose(x.mean(axis=0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)


SAME = [("bits", lambda k: R.bits(k, (5,)), True), ("uniform", lambda k: R.uniform(k, (5,)), True),
        ("bernoulli", lambda k: R.bernoulli(k, 0.5, (6,)), True),
        ("randint", lambda k: R.randint(k, (4,), -3, 9), True),
        ("permutation", lambda k: R.permutation(k, 7), True),
        ("split", lambda k: R.split(k, 3), True), ("fold_in", lambda k: R.fold_in(k, 11), True),
        ("normal", lambda k: R.normal(k, (2, 3)), False),
        ("categorical", lambda k: R.categorical(k, np.log(np.full(5, 0.2)), shape=(4,)), True),
        ("truncated_normal", lambda k: R.truncated_normal(k, -1.0, 1.0, (3,)), False),
        ("multivariate_normal", lambda k: R.multivariate_normal(k, np.ones(2), np.eye(2)), False)]


@pytest.mark.parametrize("name,draw,exact", SAME, ids=[c[0] for c in SAME])
def test_interpreted_compiled_and_batched_draws_agree(name, draw, exact):
    """The same numbers from the interpreter, a kernel and vmap over keys (bit for bit where
    every operation is exact; transcendental functions within a few ulps); the kernel is
    native code throughout (docs/random.md)."""
    same = np.testing.assert_array_equal if exact else \
        (lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15))
    keys = R.split(KEY, 4)
    assert "objmode" not in fg.jit(draw).lower(keys[0]).source
    with fg.disable_jit():
        want = [draw(k) for k in keys]
    same(fg.jit(draw, same_bits=False)(keys[0]), want[0])
    batched = fg.jit(fg.vmap(draw))(keys)
    for got, w in zip(batched, want):
        same(got, w)


def test_reparameterised_draws_differentiate():
    k = R.fold_in(KEY, 3)
    check_grads(lambda lo, hi: R.uniform(k, (4,), minval=lo, maxval=hi), (-1.0, 2.0), order=2)
    check_grads(lambda mu, sigma: mu + sigma * R.normal(k, (3,)), (0.5, 1.5), order=2)
    check_grads(lambda lo, hi: R.truncated_normal(k, lo, hi, (3,)), (-1.0, 0.5), order=1)
    check_grads(lambda s, c: R.weibull_min(k, s, c, (3,)), (2.0, 1.5), order=2)
    check_grads(lambda b, s: R.pareto(k, b, (3,)) + R.rayleigh(k, s, (3,)), (3.0, 2.0), order=2)
    check_grads(lambda m, s: R.double_sided_maxwell(k, m, s, (3,)), (0.5, 2.0), order=2)
    mean = np.array([0.3, -0.2])
    cov = np.array([[1.5, 0.2], [0.2, 0.8]])
    check_grads(lambda m, c: R.multivariate_normal(k, m, (c + c.T) / 2, (3,)), (mean, cov), order=2)
    z = R.normal(k, (3,))
    np.testing.assert_allclose(fg.grad(lambda s: fnp.sum(s * R.normal(k, (3,))))(2.0), z.sum())


def test_the_documentation_examples_run():
    """docs/random.md's code blocks, run as written."""
    import pathlib
    import re
    text = (pathlib.Path(__file__).parent.parent / "docs" / "random.md").read_text()
    scope = {}
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        exec(compile(block, "docs/random.md", "exec"), scope)
    assert abs(scope["g"] - 2.0) < 0.1 and scope["per_example"].shape == (4, 2)
    assert np.all(np.abs(scope["params"]) < 0.02)         # 0.9 ** 100 and the noise
    assert abs(scope["dz"] - 7.0) < 0.3                   # about 12 standard errors
