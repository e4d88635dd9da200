"""fg.scipy.linalg and fg.scipy.stats: each function against SciPy (values), its derivatives
against finite differences at orders 1 and 2 in both modes, a few compiled (fg.jit) and
batched (fg.vmap) equal to interpreted; expm across norms, lu_factor's pivots, SciPy's
conventions; and the error that names the user's line and the fg.scipy equivalent when a
SciPy function is called on a traced value."""
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads
from funcgrad.scipy import _foreign
from funcgrad.tree_util import tree_leaves

sl = pytest.importorskip("scipy.linalg")
st = pytest.importorskip("scipy.stats")
L, S = fg.scipy.linalg, fg.scipy.stats

_rng = np.random.default_rng(0)
A = _rng.standard_normal((3, 3)) + 2.0 * np.eye(3)         # well conditioned, pivots clear
B = _rng.standard_normal((3, 2))
V = _rng.standard_normal(3)
SPD = A @ A.T + np.eye(3)
SPD2 = 0.5 * SPD + np.diag([1.0, 2.0, 3.0])
TALL = _rng.standard_normal((4, 3))

# name: (funcgrad function, SciPy function, arguments)
LINALG = {
    "solve_triangular": (lambda a, b: L.solve_triangular(a, b, lower=True),
                         lambda a, b: sl.solve_triangular(a, b, lower=True), (A, B)),
    "solve_triangular_T_unit": (lambda a, b: L.solve_triangular(a, b, "T", unit_diagonal=True),
                                lambda a, b: sl.solve_triangular(a, b, "T", unit_diagonal=True),
                                (A, V)),
    "cho_solve": (lambda a, b: L.cho_solve(L.cho_factor(a), b),
                  lambda a, b: sl.cho_solve(sl.cho_factor(a), b), (SPD, B)),
    "cho_solve_lower": (lambda a, b: L.cho_solve(L.cho_factor(a, lower=True), b),
                        lambda a, b: sl.cho_solve(sl.cho_factor(a, lower=True), b), (SPD, V)),
    "lu_factor": (lambda a: L.lu_factor(a)[0], lambda a: sl.lu_factor(a)[0], (TALL,)),
    "lu_solve": (lambda a, b: L.lu_solve(L.lu_factor(a), b),
                 lambda a, b: sl.lu_solve(sl.lu_factor(a), b), (A, B)),
    "lu_solve_T": (lambda a, b: L.lu_solve(L.lu_factor(a), b, trans=1),
                   lambda a, b: sl.lu_solve(sl.lu_factor(a), b, trans=1), (A, V)),
    "lu": (L.lu, sl.lu, (TALL.T,)),
    "expm": (L.expm, sl.expm, (0.5 * A,)),
    "solve_pos": (lambda a, b: L.solve(a, b, assume_a="pos"),
                  lambda a, b: sl.solve(a, b, assume_a="pos"), (SPD, B)),
    "solve_transposed": (lambda a, b: L.solve(a, b, transposed=True),
                         lambda a, b: sl.solve(a, b, transposed=True), (A, V)),
    "inv": (L.inv, sl.inv, (A,)),
    "det": (L.det, sl.det, (A,)),
    "cholesky": (L.cholesky, sl.cholesky, (SPD,)),
    "eigh_values": (lambda a: L.eigh(a, eigvals_only=True),
                    lambda a: sl.eigh(a, eigvals_only=True), (SPD,)),
    "eigh_general": (lambda a, b: (lambda w, v: (w, v @ v.T))(*L.eigh(a, b)),     # (sign-free)
                     lambda a, b: (lambda w, v: (w, v @ v.T))(*sl.eigh(a, b)), (SPD, SPD2)),
    "svd_values": (lambda a: L.svd(a, compute_uv=False),
                   lambda a: sl.svd(a, compute_uv=False), (TALL,)),
    "qr_economic": (lambda a: L.qr(a, mode="economic"),
                    lambda a: sl.qr(a, mode="economic"), (TALL,)),
    "lstsq": (lambda a, b: L.lstsq(a, b)[:2], lambda a, b: sl.lstsq(a, b)[:2],
              (TALL, _rng.standard_normal(4))),
}


def _sum_of_squares(f):
    def scalar(*args):
        return sum(fnp.sum(out * out) for out in tree_leaves(f(*args)))
    scalar.__name__ = getattr(f, "__name__", "f")
    return scalar


def _assert_close(got, want, rtol=1e-12, atol=1e-13):
    got, want = tree_leaves(got), tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_values_and_derivatives(name):
    f, ref, args = LINALG[name]
    _assert_close(f(*args), ref(*args), rtol=1e-11)
    check_grads(_sum_of_squares(f), args, order=2, rtol=1e-5, atol=1e-8)


# (a few compiled: Numba's compile time is the budget)
@pytest.mark.parametrize("name", ["lu_solve", "cho_solve_lower"])
def test_linalg_jit_and_vmap_equal_interpreted(name):
    f, ref, args = LINALG[name]
    _assert_close(fg.jit(f)(*args), f(*args))
    batched = fg.vmap(f)(*[np.stack([a, 1.5 * a]) for a in args])
    _assert_close(batched[1], ref(*[1.5 * a for a in args]), rtol=1e-11)


def test_expm_matches_scipy_across_norms_and_batches():
    m = _rng.standard_normal((4, 4))
    for norm in (1e-3, 0.3, 2.0, 20.0, 150.0):
        a = m * (norm / np.abs(m).sum(axis=0).max())
        want = sl.expm(a)
        assert np.abs(L.expm(a) - want).max() <= 1e-12 * np.abs(want).max(), norm
    nilpotent = np.triu(np.ones((3, 3)), 1)
    np.testing.assert_allclose(L.expm(nilpotent), sl.expm(nilpotent), rtol=1e-14)
    np.testing.assert_array_equal(L.expm(np.zeros((2, 2))), np.eye(2))
    stack = np.stack([0.1 * m, 5.0 * m])
    np.testing.assert_allclose(L.expm(stack)[1], sl.expm(5.0 * m), rtol=1e-11)
    np.testing.assert_allclose(fg.vmap(L.expm)(stack), L.expm(stack), rtol=1e-14)
    assert np.isnan(L.expm(50.0 * m, max_squarings=2)).all()      # more squarings needed


@pytest.mark.filterwarnings("ignore:Diagonal number")        # (SciPy, on the zero matrix)
def test_lu_factor_pivots_match_scipy():
    for a in (A, TALL, TALL.T, np.array([[0.0, 1.0], [2.0, 3.0]]), np.zeros((2, 2))):
        lu, piv = L.lu_factor(a)
        want_lu, want_piv = sl.lu_factor(a)
        np.testing.assert_array_equal(piv, want_piv)
        np.testing.assert_allclose(lu, want_lu, rtol=1e-13, atol=1e-15)
    traced_piv = fg.vmap(lambda a: L.lu_factor(a)[1])(np.stack([A, A[::-1]]))
    np.testing.assert_array_equal(traced_piv[1], sl.lu_factor(A[::-1])[1])
    order, low, up = L.lu(TALL, p_indices=True)
    np.testing.assert_allclose(low[order] @ up, TALL, rtol=1e-13, atol=1e-14)


def test_linalg_scipy_conventions():
    upper = L.cholesky(SPD)                                  # SciPy's default: upper
    np.testing.assert_allclose(upper.T @ upper, SPD, rtol=1e-13)
    assert L.cho_factor(SPD, lower=True)[1] is True
    (r,) = L.qr(TALL, mode="r")
    np.testing.assert_allclose(r, sl.qr(TALL, mode="r")[0], rtol=1e-12, atol=1e-14)
    assert np.shape(L.lstsq(TALL, np.ones(4))[1]) == ()             # residues: a scalar
    assert L.lstsq(TALL, np.ones(4))[2] == 3
    w, v = L.eigh(SPD, SPD2, lower=False)
    np.testing.assert_allclose(v.T @ SPD2 @ v, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(w, sl.eigh(SPD, SPD2, lower=False)[0], rtol=1e-12)
    np.testing.assert_allclose(L.eigh(SPD, subset_by_index=(1, 2))[0],
                               sl.eigh(SPD, subset_by_index=(1, 2))[0], rtol=1e-12)
    for kind in ("lower triangular", "upper triangular", "diagonal", "sym"):
        np.testing.assert_allclose(L.solve(A, B, assume_a=kind), sl.solve(A, B, assume_a=kind),
                                   rtol=1e-12)
    # the triangle not read gets no gradient
    g = fg.grad(lambda a: fnp.sum(L.solve_triangular(a, V)))(A)
    assert (np.tril(g, -1) == 0).all()
    with pytest.raises(ValueError, match="trans"):
        L.solve_triangular(A, V, trans=3)
    with pytest.raises(NotImplementedError, match="pivoting"):
        L.qr(A, pivoting=True)


# ---- stats ----------------------------------------------------------------------------------

X = np.array([-1.2, 0.4, 2.5])
Q = np.array([0.05, 0.4, 0.9])
XP = np.array([0.7, 1.5, 4.0])                 # inside the gamma support (loc 0.2)
XU = np.array([0.1, 0.45, 0.8])                # inside (0, 1)
K = np.array([0.0, 2.0, 5.0])
MEAN = np.array([0.1, -0.3, 0.5])
XM = _rng.standard_normal((2, 3))

# name: (arguments, argnums differentiated); funcgrad and SciPy functions from the name
STATS = {
    **{f"norm.{f}": ((X, 0.3, 1.7), None) for f in ("logpdf", "pdf", "cdf", "logcdf", "sf",
                                                    "logsf")},
    "norm.ppf": ((Q, 0.3, 1.7), None),
    "norm.isf": ((Q, 0.3, 1.7), None),
    "t.logpdf": ((X, 3.5, 0.3, 1.7), None),
    "t.pdf": ((X, 3.5, 0.3, 1.7), None),
    "gamma.logpdf": ((XP, 2.5, 0.2, 1.3), None),
    "gamma.pdf": ((XP, 2.5, 0.2, 1.3), None),
    "gamma.cdf": ((XP, 2.5, 0.2, 1.3), (0, 2, 3)),         # not in the shape a
    "gamma.sf": ((XP, 2.5, 0.2, 1.3), (0, 2, 3)),
    "beta.logpdf": ((XU, 2.5, 1.5), None),
    "beta.pdf": ((XU, 2.5, 1.5, -0.1, 1.2), None),
    "poisson.logpmf": ((K, 2.3), 1),                       # k is an integer
    "poisson.pmf": ((K, 2.3), 1),
    "poisson.cdf": ((K + 0.5, 2.3), 1),
    "multivariate_normal.logpdf": ((XM, MEAN, SPD), None),
    "multivariate_normal.pdf": ((XM[0], MEAN, SPD), None),
    # issue 32's distributions: every function against SciPy, derivatives in x and parameters
    **{f"expon.{f}": ((XP, 0.2, 1.3), None) for f in ("logpdf", "pdf", "cdf", "sf", "logsf")},
    "expon.ppf": ((Q, 0.2, 1.3), None),
    **{f"laplace.{f}": ((X, 0.3, 1.7), None) for f in ("logpdf", "pdf", "cdf", "sf")},
    "laplace.ppf": ((Q, 0.3, 1.7), None),
    **{f"logistic.{f}": ((X, 0.3, 1.7), None) for f in ("logpdf", "pdf", "cdf", "logcdf", "sf",
                                                        "logsf")},
    "logistic.ppf": ((Q, 0.3, 1.7), None),
    **{f"cauchy.{f}": ((X, 0.3, 1.7), None) for f in ("logpdf", "pdf", "cdf", "sf")},
    "cauchy.ppf": ((Q, 0.3, 1.7), None),
    **{f"uniform.{f}": ((XU, -0.1, 1.2), None) for f in ("logpdf", "pdf", "cdf", "sf")},
    "uniform.ppf": ((Q, -0.1, 1.2), None),
    "chi2.logpdf": ((XP, 3.5, 0.2, 1.3), None), "chi2.pdf": ((XP, 3.5, 0.2, 1.3), None),
    "chi2.cdf": ((XP, 3.5, 0.2, 1.3), (0, 2, 3)), "chi2.sf": ((XP, 3.5, 0.2, 1.3), (0, 2, 3)),
    **{f"lognorm.{f}": ((XP, 0.6, 0.2, 1.3), None) for f in ("logpdf", "pdf", "cdf", "sf")},
    "lognorm.ppf": ((Q, 0.6, 0.2, 1.3), None),
    **{f"pareto.{f}": ((XP + 1.0, 2.5, 0.2, 1.1), None) for f in ("logpdf", "pdf", "cdf", "sf")},
    "pareto.ppf": ((Q, 2.5, 0.2, 1.1), None),
    **{f"truncnorm.{f}": ((np.array([-0.7, 0.4, 1.1]), -0.9, 1.6, 0.1, 1.2), None)
       for f in ("logpdf", "pdf", "cdf", "sf")},
    "truncnorm.ppf": ((Q, -0.9, 1.6, 0.1, 1.2), None),
    **{f"bernoulli.{f}": ((np.array([0.0, 1.0, 0.5, 2.0]), 0.3), 1) for f in ("pmf", "cdf", "sf")},
    "bernoulli.logpmf": ((np.array([0.0, 1.0, 1.0]), 0.3), 1),     # (-inf off the support)
    **{f"geom.{f}": ((np.array([1.0, 2.0, 3.5, 7.0]), 0.3), 1) for f in ("pmf", "cdf", "sf")},
    "geom.logpmf": ((np.array([1.0, 2.0, 7.0]), 0.3), 1),
    **{f"binom.{f}": ((np.array([0.0, 3.0, 10.0]), 10.0, 0.35), 2) for f in ("logpmf", "pmf")},
}


def _pair(name):
    dist, fn = name.split(".")
    return getattr(getattr(S, dist), fn), getattr(getattr(st, dist), fn)


@pytest.mark.parametrize("name", sorted(STATS))
def test_stats_values_and_derivatives(name):
    (f, ref), (args, argnums) = _pair(name), STATS[name]
    np.testing.assert_allclose(f(*args), ref(*args), rtol=1e-12)
    check_grads(lambda *a: fnp.sum(f(*a)), args, order=2, rtol=1e-5, atol=1e-8,
                argnums=argnums)


@pytest.mark.parametrize("name", ["multivariate_normal.logpdf", "gamma.cdf"])
def test_stats_jit_and_vmap_equal_interpreted(name):
    (f, ref), (args, _) = _pair(name), STATS[name]
    np.testing.assert_allclose(fg.jit(f)(*args), ref(*args), rtol=1e-12)
    batched = fg.vmap(f, in_axes=(0,) + (None,) * (len(args) - 1))(np.stack([args[0]] * 2),
                                                                    *args[1:])
    np.testing.assert_allclose(batched[1], ref(*args), rtol=1e-12)


def test_stats_supports_broadcasting_and_refused_derivatives():
    x = np.array([-1.0, 0.0, 0.5, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):          # (log 0 at x = 0)
        for f, ref, args in [(S.gamma.logpdf, st.gamma.logpdf, (x, 0.5)),
                             (S.beta.logpdf, st.beta.logpdf, (x, 2.0, 0.5)),
                             (S.poisson.logpmf, st.poisson.logpmf, (x, 1.5)),
                             (S.poisson.cdf, st.poisson.cdf, (x, 1.5))]:
            np.testing.assert_allclose(f(*args), ref(*args), rtol=1e-12)
        # outside the support: value 0, gradient 0, not NaN from the branch not taken
        g = fg.grad(lambda x: fnp.sum(S.gamma.pdf(x, 2.0) + S.beta.pdf(x, 2.0, 2.0)))(x)
    assert np.isfinite(g).all() and g[0] == 0.0
    locs = np.array([[0.0], [1.0]])
    np.testing.assert_allclose(S.norm.cdf(x, locs, 2.0), st.norm.cdf(x, locs, 2.0), rtol=1e-12)
    for cov in (2.0, np.array([1.0, 2.0, 3.0])):
        np.testing.assert_allclose(S.multivariate_normal.logpdf(XM, MEAN, cov),
                                   st.multivariate_normal.logpdf(XM, MEAN, cov), rtol=1e-12)
    np.testing.assert_allclose(S.multivariate_normal.logpdf(x, 0.5, 2.0),
                               st.multivariate_normal.logpdf(x, 0.5, 2.0), rtol=1e-12)
    assert fg.grad(lambda mu: S.poisson.cdf(2.0, mu))(1.5) == pytest.approx(
        -st.poisson.pmf(2, 1.5), rel=1e-12)
    with pytest.raises(fg.UnsupportedFunctionError, match="with respect to a"):
        fg.grad(lambda a: S.gamma.cdf(1.0, a))(2.0)


# ---- SciPy functions called on traced values -------------------------------------------------

class _Seen(Exception):
    pass


class _Probe:
    """Converting it to an array raises what fg.scipy's explainer says of the stack then."""

    def __array__(self, dtype=None, copy=None):
        raise _Seen(_foreign.explain(sys._getframe(1)))


def test_scipy_call_is_named_with_the_user_line_and_the_equivalent():
    here = sys._getframe().f_lineno
    with pytest.raises(_Seen) as seen:
        sl.solve(_Probe(), V)                              # here + 2
    message = seen.value.args[0]
    assert f"test_scipy_linalg_stats.py:{here + 2} " in message
    assert "scipy.linalg.solve" in message and "Use fg.scipy.linalg.solve" in message
    with pytest.raises(_Seen) as seen:
        st.norm.logpdf(_Probe())
    assert "Use fg.scipy.stats.norm.logpdf" in seen.value.args[0]
    with pytest.raises(_Seen) as seen:
        st.gamma(2.0).cdf(_Probe())                        # a frozen distribution
    assert "scipy.stats.gamma(...).cdf" in seen.value.args[0]
    with pytest.raises(_Seen) as seen:
        sl.funm(_Probe(), np.exp)
    assert "funcgrad has no version of it" in seen.value.args[0]
    with pytest.raises(_Seen) as seen:
        np.asarray(_Probe())                               # no SciPy function on the way
    assert seen.value.args[0] is None


# NEEDS THE TRACER HOOK: the two lines at the top of Tracer.__array__ in funcgrad/tracer.py
#     message = foreign_call_message(sys._getframe(1))
#     if message is not None: raise ConcretizationError(message)
# (see funcgrad/scipy/_foreign.py); fails until they are in.
def test_scipy_call_on_traced_value_raises_the_named_error():
    for transform in (fg.grad, fg.vmap):
        with pytest.raises(fg.ConcretizationError, match=r"scipy\.linalg\.solve .*"
                           r"test_scipy_linalg_stats\.py.*Use fg\.scipy\.linalg\.solve"):
            transform(lambda a: fnp.sum(sl.solve(a, V)))(A if transform is fg.grad else SPD[None])
    with pytest.raises(fg.ConcretizationError, match=r"Use fg\.scipy\.stats\.norm\.logpdf"):
        fg.jit(lambda x: st.norm.logpdf(x))(X)


@pytest.mark.parametrize("dist,params", [
    ("expon", ()), ("laplace", ()), ("logistic", ()), ("cauchy", ()), ("uniform", ()),
    ("chi2", (3.0,)), ("lognorm", (0.5,)), ("pareto", (2.0,)), ("truncnorm", (-1.0, 2.0))])
def test_stats_across_the_support_boundaries(dist, params):
    """Below, on and above the support: SciPy's values (-inf, 0, 1), compiled too."""
    x = np.array([-5.0, -1.0, 0.0, 1.0, 2.0, 5.0])
    for fn in ("logpdf", "pdf", "cdf", "sf"):
        with np.errstate(all="ignore"):
            want = getattr(getattr(st, dist), fn)(x, *params)
        got = fg.jit(getattr(getattr(S, dist), fn))(x, *params)
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{dist}.{fn}")
