"""fg.random's gamma family (funcgrad/random_gamma.py): each draw against SciPy's distribution
(Kolmogorov-Smirnov), compiled and batched draws against the interpreter's, and the implicit
reparameterisation derivatives: against central differences of scipy.special.gammainc in a,
in expectation (Monte Carlo means of the pathwise derivatives against d E[f] / da), at second
order, under fg.jit and fg.vmap."""
import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as ss

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import random_gamma
from conftest import check_grads

R = fg.random
KEY = R.key(2032)
N = 20000
SHAPES = np.array([0.003, 0.3, 1.0, 2.5, 40.0])


def draws(key):
    """One of every draw (N each; gamma and loggamma from one key), in a single kernel."""
    k = R.split(key, 9)
    return (R.gamma(k[0], SHAPES[:, None], (5, N)), R.loggamma(k[0], SHAPES[:, None], (5, N)),
            R.beta(k[2], 0.3, 2.5, (N,)), R.dirichlet(k[3], np.array([0.4, 1.0, 3.0]), (N,)),
            R.chisquare(k[4], 3.0, (N,)), R.f(k[5], 4.0, 7.0, (N,)), R.t(k[6], 2.5, (N,)),
            R.generalized_normal(k[7], 1.5, (N,)), R.beta(k[8], 1e-3, 2e-3, (N,)))


def loggamma_cdf(a):
    """The CDF of log Z, Z ~ Gamma(a), where Z underflows too (P(a, z) ~ z^a / Gamma(a + 1))."""
    return lambda x: np.where(x < -50, np.exp(a * x - sc.gammaln(a + 1)),
                              sc.gammainc(a, np.exp(np.maximum(x, -50))))


def test_draws_follow_their_distributions_and_compiled_gives_the_interpreters():
    got = fg.jit(draws)(KEY)
    with fg.disable_jit():
        want = draws(KEY)
    for i, (g, w) in enumerate(zip(got, want)):     # the same draws (exp, log: a few ulps)
        assert g.shape == w.shape and g.dtype == np.float64
        if i == 0:                       # (z = exp(log z), log z ~ -700: compare the logs)
            assert np.array_equal(g == 0, w == 0)
            g, w = np.log(g[g > 0]), np.log(w[w > 0])
        # (Beta(1e-3, 2e-3) = exp(lx - logaddexp(lx, ly)) with log gammas ~ -1000, whose last
        # place is 1e-13: the draws' relative rounding)
        np.testing.assert_allclose(g, w, rtol=1e-11 if i == 8 else 1e-13, atol=1e-15)
    z, logz, b, d, chi2, fv, tv, gn, b_small = got
    for a, zi, li in zip(SHAPES, z, logz):
        assert ss.kstest(li, loggamma_cdf(a)).pvalue > 1e-3
        if a > 0.1:                      # (a = 0.003: 13% of draws underflow to 0)
            assert ss.kstest(zi, ss.gamma(a).cdf).pvalue > 1e-3
            np.testing.assert_allclose(np.log(zi), li, rtol=1e-14, atol=1e-15)
    assert np.all(logz[0] > -1e6) and np.mean(z[0] == 0) > 0.05        # log kept, z underflowed
    assert ss.kstest(b, ss.beta(0.3, 2.5).cdf).pvalue > 1e-3
    for i, a in enumerate([0.4, 1.0, 3.0]):          # the Dirichlet's marginals are Betas
        assert ss.kstest(d[:, i], ss.beta(a, 4.4 - a).cdf).pvalue > 1e-3
    np.testing.assert_allclose(d.sum(axis=1), 1.0, rtol=1e-14)
    for x, dist in [(chi2, ss.chi2(3)), (fv, ss.f(4, 7)), (tv, ss.t(2.5)), (gn, ss.gennorm(1.5))]:
        assert ss.kstest(x, dist.cdf).pvalue > 1e-3
    # Beta(1e-3, 2e-3): almost every draw is 0 or 1 (in log space no 0/0), 1 with p = 1/3
    assert np.all(np.isfinite(b_small)) and abs(np.mean(b_small > 0.5) - 1 / 3) < 4 * np.sqrt(2 / 9 / N)


def dzda_reference(a, z):
    """dz/da = -(dP(a, z)/da) / p(z; a): central differences of SciPy's gammainc in a (of
    gammaincc in the upper half, where P's rounding would swamp the difference), two rounds of
    Richardson extrapolation (error O(h^6)); within about 2e-11 of mpmath's."""
    upper = sc.gammainc(a, z) > 0.5
    fn = lambda aa: np.where(upper, -sc.gammaincc(aa, z), sc.gammainc(aa, z))
    h = 0.02 * np.minimum(a, np.sqrt(a)) / np.maximum(1.0, np.abs(np.log(z)))
    d = lambda h: (fn(a + h) - fn(a - h)) / (2 * h)
    r1 = lambda h: (4 * d(h / 2) - d(h)) / 3
    return -(16 * r1(h / 2) - r1(h)) / 15 / ss.gamma(a).pdf(z)


def test_implicit_derivative_against_the_incomplete_gamma_function():
    """The rule the draws carry, at a in [1e-3, 1e3] and z at the quantiles 1e-6..1 - 1e-6
    (those z that are normal doubles), against the reference: 1e-10 relative."""
    a = np.logspace(-3, 3, 13)[:, None]
    q = np.array([1e-6, 1e-4, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1 - 1e-4, 1 - 1e-6])
    a, z = np.broadcast_arrays(a, ss.gamma(a).ppf(q))
    keep = z > 1e-300
    a, z = a[keep], z[keep]
    assert a.size > 100
    rule = fg.jit(fg.grad(lambda a, z: fnp.sum(random_gamma._implicit(a, z))))
    np.testing.assert_allclose(rule(a, z), dzda_reference(a, z), rtol=1e-10)
    with fg.disable_jit():              # the rule on log z: where z itself underflows too
        lz = np.array([-800.0, -5000.0, -1e5])
        ta = np.array([0.01, 2e-3, 1e-3])
        got = fg.grad(lambda a: fnp.sum(random_gamma._implicit_log(a, lz)))(ta)
    np.testing.assert_allclose(got, -(lz - sc.digamma(ta + 1)) / ta, rtol=1e-13)


def test_derivatives_in_expectation_and_pathwise():
    """Monte Carlo means of the pathwise derivatives against d E[f] / da, within 4 standard
    errors: f(z) = z (1) and z^2 (2a + 1) for gamma, a / (a + b) for beta, the Dirichlet's
    means, df for chisquare; and the draws' own derivatives against the reference.
    Interpreted (test_batched_draws_and_derivatives_are_the_loops compiles derivatives)."""
    a = np.array([0.05, 0.7, 3.0, 40.0])[:, None] * np.ones(N)

    def grads(a, key):
        k = R.split(key, 4)
        one = fg.grad(lambda a: fnp.sum(R.gamma(k[0], a)))(a)
        two = fg.grad(lambda a: fnp.sum(R.gamma(k[0], a) ** 2))(a)
        ab = fg.grad(lambda a, b: fnp.sum(R.beta(k[1], a, b)), argnums=(0, 1))(a[1:3], a[2:4])
        alpha = np.array([0.5, 2.0, 4.0]) + 0.0 * a[0][:, None]
        dx = fg.grad(lambda al: fnp.sum(R.dirichlet(k[2], al)[:, 0]))(alpha)
        chi = fg.grad(lambda df: fnp.sum(R.chisquare(k[3], df)))(a[1])
        return R.gamma(k[0], a), one, two, ab, dx, chi
    with fg.disable_jit():
        z, one, two, (da, db), dx, chi = grads(a, KEY)

    def near(samples, want):
        se = samples.std(axis=-1) / np.sqrt(samples.shape[-1])
        assert np.all(np.abs(samples.mean(axis=-1) - want) < 4 * se + 1e-12), (samples.mean(-1), want)
    near(one, 1.0)
    near(two, 2 * a[:, 0] + 1)
    pa, pb = a[1:3, 0], a[2:4, 0]
    near(da, pb / (pa + pb) ** 2)
    near(db, -pa / (pa + pb) ** 2)
    s = 6.5                                                  # d E[x_0] / d alpha = (s - a_0, -a_0, -a_0) / s^2
    near(dx.T, np.array([s - 0.5, -0.5, -0.5]) / s ** 2)
    near(chi, 1.0)
    pick = np.s_[:, :50]                                     # pathwise = the implicit formula
    np.testing.assert_allclose(one[pick], dzda_reference(a[pick], z[pick]), rtol=1e-10)


def test_batched_draws_and_derivatives_are_the_loops():
    """fg.vmap over per-example keys and shapes: each example's draws and derivatives as drawn
    alone (the rejection loop runs until every example's entries are accepted)."""
    keys, shapes = R.split(KEY, 3), np.array([0.2, 1.5, 9.0])

    def one(k, a):
        return (R.gamma(k, a, (4,)), fg.grad(lambda a: fnp.sum(R.beta(k, a, 2.0, (4,))))(a),
                R.poisson(k, np.array([0.5, 9.0, 12.0, 300.0]) * a))
    got = fg.jit(fg.vmap(one))(keys, shapes)
    with fg.disable_jit():
        want = [one(k, a) for k, a in zip(keys, shapes)]
    for i, (z, g, n) in enumerate(want):
        np.testing.assert_allclose(got[0][i], z, rtol=1e-13)
        np.testing.assert_allclose(got[1][i], g, rtol=1e-12)
        np.testing.assert_array_equal(got[2][i], n)


@pytest.mark.parametrize("lam", [0.3, 4.0, 9.99, 10.0, 37.0, 1000.0])
def test_poisson_frequencies(lam):
    """Knuth's method below 10, Hormann's transformed rejection from 10: chi-square against
    SciPy's probabilities (the tails beyond the 1e-4 quantiles pooled)."""
    with fg.disable_jit():
        x = R.poisson(R.fold_in(KEY, int(lam * 100)), lam, (N,))
    assert x.dtype == np.int64
    lo, hi = ss.poisson(lam).ppf([1e-4, 1 - 1e-4]).astype(int)
    inner = np.arange(lo + 1, hi)
    seen = np.array([np.sum(x <= lo), *np.bincount(x, minlength=hi + 1)[inner], np.sum(x >= hi)])
    p = np.diff(np.concatenate([[0.0], ss.poisson(lam).cdf(np.arange(lo, hi)), [1.0]]))
    assert ss.chisquare(seen, N * p).pvalue > 1e-3


def test_second_derivatives_follow_the_quantile():
    """d^2 z / da^2 of a draw held at its quantile u = P(a, z): against differences of SciPy's
    gammaincinv(a, u); the rule's own derivatives (in a and log z) against differences."""
    a0 = np.array([0.7, 2.0, 15.0])
    with fg.disable_jit():
        z0 = R.gamma(KEY, a0)
        d2 = [fg.grad(fg.grad(lambda a: R.gamma(KEY, a, (3,))[i]))(a0[i]) for i in range(3)]
        check_grads(random_gamma._dlogz_da, (a0, np.log(z0)), order=1)
    h, zq = 1e-3, lambda a: sc.gammaincinv(a, sc.gammainc(a0, z0))
    np.testing.assert_allclose(d2, (zq(a0 + h) - 2 * zq(a0) + zq(a0 - h)) / h ** 2, rtol=1e-4)


def test_dtypes_and_errors():
    with fg.disable_jit():
        assert R.gamma(KEY, 2.0, (3,), np.float32).dtype == np.float32
        assert R.dirichlet(KEY, np.ones((2, 3)), (4, 2)).shape == (4, 2, 3)
        assert R.beta(KEY, np.ones(3), 2.0).shape == (3,)
        with pytest.raises(TypeError, match="fg.random.gamma: expected a key"):
            R.gamma(np.zeros(2), 1.0)
        with pytest.raises(TypeError, match="float64 or float32"):
            R.beta(KEY, 1.0, 1.0, dtype=np.int32)


def test_invalid_parameters_give_nan_and_do_not_hang():
    """A rejection loop that never accepts would never end: shapes that are not positive give
    NaN draws (loops skip them), counts -1; the derivative's loops skip them too."""
    bad = np.array([-1.0, 0.0, np.nan, 0.5, 2.0])
    with fg.disable_jit(), np.errstate(all="ignore"):
        z = R.gamma(KEY, bad)
        dz = fg.grad(lambda a: fnp.sum(R.loggamma(KEY, a)))(bad)
        n = R.poisson(KEY, np.array([-1.0, np.nan, np.inf, 0.0, 20.0]))
        assert R.gamma(KEY, np.inf) == np.inf
    assert np.all(np.isnan(z[:3])) and np.all(z[3:] > 0) and np.all(np.isnan(dz[:3]))
    assert n[:3].tolist() == [-1, -1, -1] and n[3] == 0 and n[4] > 0
