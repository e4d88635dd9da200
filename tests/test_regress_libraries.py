"""Regressions of issue 28 in the libraries on top of the engine (fg.optim, fg.optimize,
fg.scipy, fg.odeint, fg.dask): dtypes of gradients and optimizer states, implicit derivatives
that do not hold (no convergence, active bounds), integer starting points, ODE tolerances and
step limits, empty Dask chunks, trust-constr, lu_solve's pivots, Student's t at large df; and
the class test of every entry point against SciPy on integer, float32, 0-d and pytree inputs."""
import warnings

import numpy as np
import pytest
from conftest import check_grads

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.optimize.convergence import UnconvergedDerivativeWarning

OPTIMIZERS = ["sgd", "adam", "adamw", "rmsprop", "adagrad", "lion"]


# ---- 1. gradients keep their primal's dtype; optimizer states keep theirs -------------------

def test_gradients_have_the_dtype_of_their_primal():
    d = np.arange(3.0)                                    # float64 data
    f = lambda x: fnp.sum((x * d) ** 2)
    x = np.ones(3, np.float32)
    assert fg.grad(f)(x).dtype == np.float32
    assert fg.value_and_grad(f)(x)[1].dtype == np.float32
    assert fg.jit(fg.grad(f))(x).dtype == np.float32
    assert fg.vjp(lambda x: x * d, x)[1](np.ones(3))[0].dtype == np.float32
    assert fg.grad(lambda z: fnp.sum(fnp.abs(z * d) ** 2))(np.ones(3, np.complex64)).dtype \
        == np.complex64


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_updates_and_states_keep_float32(name):
    opt = getattr(fg.optim, name)(0.01)
    params = {"b": np.zeros(2, np.float32)}
    updates, state = opt.update({"b": np.ones(2, np.float32)}, opt.init(params), params)
    assert updates["b"].dtype == np.float32
    before = fg.tree_util.tree_leaves(opt.init(params))
    after = fg.tree_util.tree_leaves(state)
    assert [np.asarray(a).dtype for a in after] == [np.asarray(b).dtype for b in before]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_fit_with_float32_params_and_float64_data(name):
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = X @ np.array([2.0, -1.0])
    params = {"w": np.zeros(2, np.float32), "b": np.zeros(2, np.float32)}
    loss = lambda p, X, y: fnp.mean((X @ p["w"] + p["b"].sum() - y) ** 2)
    res = fg.optim.fit(loss, params, getattr(fg.optim, name)(0.01), steps=3, data=(X, y))
    assert {k: v.dtype for k, v in res.params.items()} == {"w": np.float32, "b": np.float32}
    # the same steps by hand, in NumPy
    opt, p = getattr(fg.optim, name)(0.01), params
    s = opt.init(p)
    for _ in range(3):
        u, s = opt.update(fg.grad(loss)(p, X, y), s, p)
        p = fg.optim.apply_updates(p, u)
    for k in p:
        np.testing.assert_allclose(res.params[k], p[k], rtol=1e-5, atol=1e-6)


# ---- 4. integer (and bool) starting points are made float, as in SciPy ----------------------

def _bowl(x):
    return fnp.sum((x - 2.7) ** 2)


def _shift(x):
    return x - 2.7


ENTRY_POINTS = {
    **{f"minimize-{m}": (lambda x0, m=m: fg.optimize.minimize(_bowl, x0, method=m))
       for m in ("lbfgs", "bfgs", "newton-cg", "gd")},
    "root": lambda x0: fg.optimize.root(_shift, x0),
    "least_squares": lambda x0: fg.optimize.least_squares(_shift, x0),
    "scipy.minimize": lambda x0: fg.scipy.minimize(_bowl, x0),
    "scipy.least_squares": lambda x0: fg.scipy.least_squares(_shift, x0),
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("x0", [np.array([0, 0]), np.array([True, False]), 0],
                         ids=["int", "bool", "python-int"])
def test_integer_x0_is_made_float(name, x0):
    res = ENTRY_POINTS[name](x0)
    assert res.success
    assert np.asarray(res.x).dtype == np.float64
    np.testing.assert_allclose(res.x, np.full(np.shape(x0), 2.7), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_float32_x0_stays_float32_after_an_integer_one(name):
    """the compiled runner is kept per function: a float32 x0 after an integer one must not
    reuse the integer one's conversion back (the runner's key includes the leaves' dtypes)."""
    ENTRY_POINTS[name](np.array([0, 0]))
    res = ENTRY_POINTS[name](np.zeros(2, np.float32))
    assert res.success and res.x.dtype == np.float32
    np.testing.assert_allclose(res.x, [2.7, 2.7], rtol=1e-6)


# ---- 5. odeint: an integer y0 is made float (one conversion, traced or not) -----------------

T3 = np.linspace(0.0, 2.0, 3)


@pytest.mark.parametrize("y0", [np.array([3, 7]), np.array([3.0, 7.0], np.float32), [3, 7]],
                         ids=["int", "float32", "list-of-ints"])
def test_odeint_state_is_float64_whatever_y0(y0):
    ys = fg.odeint(lambda y, t: fg.tree_util.tree_map(lambda v: -1.3 * v, y), y0, T3)
    if isinstance(ys, list):                       # (a list is a pytree of two scalars)
        ys = np.stack(ys, axis=-1)
    assert ys.dtype == np.float64
    np.testing.assert_allclose(ys[-1], np.array([3.0, 7.0]) * np.exp(-2.6), rtol=1e-7)


def test_odeint_integer_y0_under_grad():
    def loss(k):
        return fnp.sum(fg.odeint(lambda y, t, k: -k * y, np.array([3]), T3, k)[-1])
    value, g = fg.value_and_grad(loss)(1.3)
    np.testing.assert_allclose(value, 3 * np.exp(-2.6), rtol=1e-7)
    np.testing.assert_allclose(g, -2.0 * 3 * np.exp(-2.6), rtol=1e-6)
    g0 = fg.grad(lambda y0: fnp.sum(fg.odeint(lambda y, t: -1.3 * y, y0, T3)[-1]))(
        np.float32(3.0))
    assert g0.dtype == np.float32
    np.testing.assert_allclose(g0, np.exp(-2.6), rtol=1e-6)


def test_odeint_refuses_a_complex_state():
    with pytest.raises(TypeError, match="y0 must be real"):
        fg.odeint(lambda y, t: -1j * y, np.array([1.0 + 0j]), T3)


# ---- 2. the implicit derivative of a run that did not converge warns, or is NaN ------------

def _rosen(x, a):
    return (a - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _cube(x, a):
    return x ** 3 - a


_T5 = np.linspace(0.0, 1.0, 5)


def _decay(p, y):
    return p[0] * fnp.exp(-p[1] * _T5) - y


SOLVES = {   # name: (loss of the solution's x as a function of the parameter, its value, limit;
            # the limit 100 lets each converge)
    "minimize": (lambda a, n: fnp.sum(fg.optimize.minimize(_rosen, np.zeros(2), args=(a,),
                                                           maxiter=n).x), 1.0, 2),
    "root": (lambda a, n: fnp.sum(fg.optimize.root(_cube, np.ones(2), args=(a,), maxiter=n).x),
             np.array([2.0, 3.0]), 2),
    "least_squares": (lambda y, n: fnp.sum(fg.optimize.least_squares(
        _decay, np.ones(2), args=(y,), max_nfev=n).x), 2.0 * np.exp(-1.5 * _T5), 2),
}


@pytest.mark.parametrize("name", sorted(SOLVES))
def test_unconverged_implicit_derivative_warns_at_the_user_line(name):
    loss, a, limit = SOLVES[name]
    with pytest.warns(UnconvergedDerivativeWarning, match="did not converge") as got:
        fg.grad(lambda a: loss(a, limit))(a)
    assert got[0].filename == __file__ and got[0].lineno == loss.__code__.co_firstlineno
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnconvergedDerivativeWarning)
        fg.grad(lambda a: loss(a, 100))(a)                         # converged: silent


@pytest.mark.parametrize("name", sorted(SOLVES))
def test_unconverged_implicit_derivative_is_nan_under_the_option(name):
    loss, a, limit = SOLVES[name]
    with fg.config.override(unconverged_derivative="nan"):
        assert np.all(np.isnan(fg.grad(lambda a: loss(a, limit))(a)))
        assert np.all(np.isnan(fg.jit(fg.grad(lambda a: loss(a, limit)))(a)))
        assert np.all(np.isnan(fg.jvp(lambda a: loss(a, limit), (a,), (np.ones_like(a),))[1]))
        assert np.all(np.isfinite(fg.grad(lambda a: loss(a, 100))(a)))       # converged


def test_unconverged_implicit_derivative_warns_when_compiled():
    loss, a, limit = SOLVES["minimize"]
    with pytest.warns(UnconvergedDerivativeWarning):
        fg.jit(fg.grad(lambda a: loss(a, limit)))(a)


# ---- 3. minimize(bounds=...): variables held at a bound have derivative 0 -------------------

def _bounded_argmin(a):
    f = lambda x, a: fnp.sum((x - a) ** 2) + 0.3 * x[0] * x[2]
    return fg.optimize.minimize(f, np.zeros(3), args=(a,),
                                bounds=[(0.0, 1.0), (0.0, 5.0), (-1.0, 0.5)]).x


def test_bounded_minimizer_derivative_is_zero_at_active_bounds():
    a = np.array([2.0, 3.0, -2.0])          # x0 held at 1, x2 at -1, x1 free
    x = _bounded_argmin(a)
    np.testing.assert_allclose(x, [1.0, 3.0, -1.0], atol=1e-8)
    J = fg.jacrev(_bounded_argmin)(a)
    eps = 1e-6
    fd = np.stack([(_bounded_argmin(a + eps * e) - _bounded_argmin(a - eps * e)) / (2 * eps)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(J, fd, atol=1e-6)
    np.testing.assert_allclose(J, np.diag([0.0, 1.0, 0.0]), atol=1e-12)
    np.testing.assert_allclose(fg.jacfwd(_bounded_argmin)(a), J, atol=1e-12)


def test_bounded_minimizer_with_a_free_coupled_block_checks_against_fd():
    def argmin(a):        # x0 at its upper bound 1; x1, x2 free and coupled to x0
        f = lambda x, a: (fnp.sum((x - a) ** 2) + 0.4 * x[0] * x[1] + 0.2 * x[1] * x[2])
        return fg.optimize.minimize(f, np.zeros(3), args=(a,), tol=1e-10,
                                    bounds=[(-1.0, 1.0), (-9.0, 9.0), (-9.0, 9.0)]).x
    check_grads(argmin, (np.array([2.0, 0.5, -0.3]),), order=1, atol=1e-5)


# ---- 6. odeint: outputs not reached have NaN derivatives; tolerances validated -------------

T_FAR = np.array([0.0, 0.5, 10.0, 20.0])


def _decay_loss(k, upto):
    """the sum of the solution at T_FAR[:upto] (12 steps reach t = 0.5, not 10)"""
    return fnp.sum(fg.odeint(lambda y, t, k: -k * y, np.array([1.0]), T_FAR, k,
                             max_steps=12)[:upto])


@pytest.mark.parametrize("transform", ["grad", "jit", "jvp"])
def test_odeint_max_steps_gives_nan_derivative_not_zero(transform):
    if transform == "jvp":
        value, g = fg.jvp(lambda k: _decay_loss(k, 4), (1.0,), (1.0,))
    else:
        vg = fg.value_and_grad(lambda k: _decay_loss(k, 4))
        value, g = (fg.jit(vg) if transform == "jit" else vg)(1.0)
    assert np.isnan(value) and np.isnan(g)


def test_odeint_max_steps_keeps_the_derivative_of_the_outputs_reached():
    value, g = fg.value_and_grad(lambda k: _decay_loss(k, 2))(1.0)
    np.testing.assert_allclose(value, 1 + np.exp(-0.5), rtol=1e-7)
    np.testing.assert_allclose(g, -0.5 * np.exp(-0.5), rtol=1e-6)


@pytest.mark.parametrize("kw,match", [({"rtol": -1.0}, "rtol must be non-negative"),
                                      ({"atol": -1e-9}, "atol must be non-negative"),
                                      ({"rtol": np.nan}, "rtol must be non-negative"),
                                      ({"atol": np.ones(1)}, "atol must be a number"),
                                      ({"max_steps": 0}, "max_steps must be at least 1")])
def test_odeint_refuses_bad_tolerances(kw, match):
    with pytest.raises(ValueError, match=match):
        fg.odeint(lambda y, t: -y, np.array([1.0]), T3, **kw)


def test_odeint_raises_a_tiny_rtol_as_scipy_does():
    with pytest.warns(UserWarning, match="rtol=0.0 is too small") as got:
        ys = fg.odeint(lambda y, t: -y, np.array([1.0]), T3, rtol=0.0, atol=1e-12)
    assert got[0].filename == __file__
    np.testing.assert_allclose(ys[-1], np.exp(-2.0), rtol=1e-10)


# ---- 7. fg.dask: an empty chunk contributes nothing ----------------------------------------

def _dask_data(chunks):
    da = pytest.importorskip("dask.array")
    R = np.random.default_rng(0)
    X, y = R.standard_normal((sum(chunks), 3)), R.standard_normal(sum(chunks))
    return X, y, da.from_array(X, chunks=(chunks, (3,))), da.from_array(y, chunks=(chunks,))


def _mean_squares(w, X, y):
    return fnp.mean((X @ w - y) ** 2)


def _sum_squares(w, X, y):
    return fnp.sum((X @ w - y) ** 2)


@pytest.mark.parametrize("chunks", [(500, 0, 503), (0, 1003), (1003, 0)])
@pytest.mark.parametrize("loss,reduction", [(_mean_squares, "mean"), (_sum_squares, "sum")])
def test_dask_empty_chunks_contribute_nothing(chunks, loss, reduction):
    X, y, dX, dy = _dask_data(chunks)
    vg = fg.dask.value_and_grad(loss, reduction=reduction)
    value, g = vg.delayed(np.ones(3), dX, dy).compute(scheduler="sync")
    want_value, want_g = fg.value_and_grad(loss)(np.ones(3), X, y)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(g, want_g, rtol=1e-12)
    assert [a[1].shape[0] for a in vg.chunk_examples((np.ones(3), dX, dy))] == \
        sorted(set(n for n in chunks if n))         # warmup compiles no empty shape


# ---- 8. fg.scipy.minimize: every SciPy method, trust-constr included --------------------------

def _rosen_n(x):
    return fnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@pytest.mark.parametrize("method", ["trust-constr", "trust-exact", "dogleg", "trust-ncg",
                                    "Newton-CG", "BFGS", "L-BFGS-B"])
def test_scipy_minimize_methods_with_a_pytree(method):
    x0 = {"a": np.array([-1.0, 0.5]), "b": np.float64(0.3)}
    f = lambda p: _rosen_n(fnp.concatenate([p["a"], fnp.reshape(p["b"], (1,))]))
    res = fg.scipy.minimize(f, x0, method=method)
    assert res.success, res.message
    np.testing.assert_allclose(res.x["a"], [1.0, 1.0], atol=1e-4)
    np.testing.assert_allclose(res.x["b"], 1.0, atol=1e-4)
    gradient = res.grad if method == "trust-constr" else res.jac
    assert set(gradient) == {"a", "b"} and np.shape(gradient["b"]) == ()


# ---- 9. lu_solve(lu_factor(M), b) differentiates in M (the pivots: integers, no derivative) -

_M3 = np.array([[1.0, 2.0, 0.5], [3.0, 4.0, 1.0], [0.2, -1.0, 2.0]])
_B3 = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("trans", [0, 1])
def test_lu_solve_differentiates_in_the_matrix(trans):
    sl = fg.scipy.linalg
    f = lambda M: fnp.sum(sl.lu_solve(sl.lu_factor(M), _B3, trans=trans) ** 2)
    Mt = _M3.T if trans else _M3
    x = np.linalg.solve(Mt, _B3)
    want = -np.outer(np.linalg.solve(Mt.T, 2 * x), x)          # d |M^-1 b|^2 / dM
    want = want.T if trans else want
    for got in (fg.grad(f)(_M3), fg.jit(fg.grad(f))(_M3), fg.jacfwd(f)(_M3), fg.jacrev(f)(_M3),
                fg.vmap(fg.grad(f))(np.stack([_M3, _M3]))[1]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    check_grads(f, (_M3,), order=2)
    lu, piv = sl.lu_factor(_M3)
    assert np.asarray(piv).dtype.kind == "i"


# ---- 10. Student's t at large df: values and the derivative in df stay accurate --------------

_DFS = np.logspace(np.log10(0.5), 15, 40)
_XS = np.array([0.0, 0.5, 1.0, 3.0, 30.0])


def test_student_t_logpdf_matches_scipy_for_every_df():
    st = pytest.importorskip("scipy.stats")
    df, x = np.meshgrid(_DFS, _XS)
    np.testing.assert_allclose(fg.scipy.stats.t.logpdf(x, df), st.t.logpdf(x, df), rtol=1e-11)
    np.testing.assert_allclose(fg.scipy.stats.t.logpdf(_XS, np.inf), st.norm.logpdf(_XS),
                               rtol=1e-15)


def test_student_t_logpdf_derivative_in_df_at_large_df():
    """d/d(df) logpdf = (1 + 2 x^2 - x^4) / (4 df^2) (1 + O(1/df)): the asymptotic expansion
    (from Stirling's series and log1p's), independent of the implementation."""
    d_df = fg.grad(fg.scipy.stats.t.logpdf, argnums=1)
    for df in _DFS[_DFS >= 1e6]:
        for x in _XS[_XS < 10]:
            want = (1 + 2 * x ** 2 - x ** 4) / (4 * df ** 2)
            np.testing.assert_allclose(d_df(x, df), want, rtol=1e-5, err_msg=f"df={df}, x={x}")


def test_student_t_logpdf_derivatives_at_moderate_df():
    """d/d(df) by the textbook formula with SciPy's digamma: its cancellation costs a relative
    error of about eps * df, small here."""
    sp = pytest.importorskip("scipy.special")
    d_df = fg.grad(fg.scipy.stats.t.logpdf, argnums=1)
    for df in _DFS[_DFS <= 1e4]:
        for x in _XS:
            want = (0.5 * (sp.digamma((df + 1) / 2) - sp.digamma(df / 2)) - 0.5 / df
                    - 0.5 * np.log1p(x * x / df) + (df + 1) * x * x / (2 * df * (df + x * x)))
            np.testing.assert_allclose(d_df(x, df), want, rtol=1e-8, err_msg=f"df={df}, x={x}")
    for df in (0.7, 3.0, 19.0, 21.0, 300.0):         # both sides of each series' threshold
        check_grads(lambda x, df: fg.scipy.stats.t.logpdf(x, df, 0.3, 1.7),
                    (np.array([0.1, -2.0, 6.0]), np.float64(df)), order=2)


# ---- 11. class test: every entry point on integer, bool, float32, 0-d and pytree inputs ------
# Each returns SciPy's (or optax's, or the in-memory) answer, in x0's structure, integer leaves
# as float64 and float32 ones as float32 (odeint's state: float64, as SciPy's), or raises a
# clear error; success=True is never reported with a wrong answer.

# (int and bool starts, like the 0-d and Python-int ones, become the same float64 shape: one
# compiled solver loop serves both, as it would a user)
STARTS = {"int": np.array([0, 2]), "bool": np.array([True, False]),
          "float32": np.array([0.5, 1.5], np.float32), "0-d": np.array(0.3), "python-int": 1,
          "pytree": {"w": np.array([0.1, 0.2]), "b": 1, "c": (np.float32(0.5),)}}


def _leaves(x):
    return fg.tree_util.tree_leaves(x)


def _flat(x):
    """x's leaves as one vector (funcgrad or NumPy values)."""
    return fnp.concatenate([fnp.ravel(fnp.asarray(v) * 1.0) for v in _leaves(x)])


def _np_flat(x):
    return np.concatenate([np.ravel(np.asarray(v, np.float64)) for v in _leaves(x)])


def _target(n):
    return np.linspace(1.0, 2.0, n)


def _check_result(x0, x, want, f32_rtol=2e-4, state_dtype=None, rtol=1e-6):
    """x has x0's structure and the dtype rule's dtypes, and equals want (flat)."""
    assert fg.tree_util.tree_structure(x) == fg.tree_util.tree_structure(x0)
    for v0, v in zip(_leaves(x0), _leaves(x)):
        kind = np.result_type(v0).kind
        expect = state_dtype or (np.float32 if np.result_type(v0) == np.float32 else np.float64)
        assert np.result_type(v) == expect, (v0, v)
        assert np.shape(v) == np.shape(v0)
        assert kind in "biuf"
    f32 = any(np.result_type(v) == np.float32 for v in _leaves(x))
    np.testing.assert_allclose(_np_flat(x), want, rtol=f32_rtol if f32 else rtol, atol=1e-7)


def _bowl_tree(x):
    z = _flat(x)
    t = _target(z.shape[0])
    return fnp.sum((z - t) ** 2) + 0.1 * fnp.sum(z) ** 2


def _bowl_ref(n):
    t = _target(n)
    return np.linalg.solve(2 * np.eye(n) + 0.2 * np.ones((n, n)), 2 * t)


def _cubic_tree(x):
    """x^3 + x - t, in x's structure (a root's F maps x to its own shape)."""
    flat, unravel = fg.flatten_util.ravel_pytree(fg.tree_util.tree_map(lambda v: v * 1.0, x))
    z = _flat(x)
    return unravel(z ** 3 + z - _target(z.shape[0]))


def _cubic_ref(n):
    so = pytest.importorskip("scipy.optimize")
    return so.root(lambda z: z ** 3 + z - _target(n), np.zeros(n), tol=1e-14).x


def _residuals_tree(x):
    z = _flat(x)
    return fnp.concatenate([z - _target(z.shape[0]), 0.3 * fnp.sum(z)[None]])


def _residuals_ref(n):
    so = pytest.importorskip("scipy.optimize")
    return so.least_squares(lambda z: np.concatenate([z - _target(n), [0.3 * z.sum()]]),
                            np.zeros(n), xtol=1e-15, ftol=1e-15, gtol=1e-15).x


SOLVERS = {
    **{f"minimize-{m}": (lambda x0, m=m: fg.optimize.minimize(_bowl_tree, x0, method=m),
                         _bowl_ref) for m in ("lbfgs", "bfgs", "newton-cg", "gd")},
    **{f"root-{m}": (lambda x0, m=m: fg.optimize.root(_cubic_tree, x0, method=m), _cubic_ref)
       for m in ("newton", "broyden")},
    **{f"least_squares-{m}": (lambda x0, m=m: fg.optimize.least_squares(
        _residuals_tree, x0, method=m), _residuals_ref) for m in ("lm", "gauss-newton")},
    **{f"scipy.minimize-{m}": (lambda x0, m=m: fg.scipy.minimize(_bowl_tree, x0, method=m),
                               _bowl_ref) for m in ("L-BFGS-B", "BFGS", "trust-constr")},
    "scipy.least_squares": (lambda x0: fg.scipy.least_squares(_residuals_tree, x0),
                            _residuals_ref),
}


@pytest.mark.parametrize("kind", sorted(STARTS))
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_solvers_on_every_kind_of_start(solver, kind):
    x0 = STARTS[kind]
    solve, ref = SOLVERS[solver]
    res = solve(x0)
    want = ref(_np_flat(x0).size)
    f32 = any(np.result_type(v) == np.float32 for v in _leaves(x0))
    if not res.success:                 # allowed only where float32 cannot resolve gtol
        assert f32, res.message
        return
    # (a minimizer stops at |grad| <= 1e-5: x within about 1e-5 / 2 of the minimum)
    _check_result(x0, res.x, want, rtol=2e-5 if "minimize" in solver else 1e-6)


def _linear_rhs(y, t):
    return fg.tree_util.tree_map(lambda v: -0.7 * v + 0.1, y)


@pytest.mark.parametrize("kind", sorted(STARTS))
def test_odeint_on_every_kind_of_start(kind):
    si = pytest.importorskip("scipy.integrate")
    y0 = STARTS[kind]
    ys = fg.odeint(_linear_rhs, y0, T3, rtol=1e-10, atol=1e-12)
    ref = si.solve_ivp(lambda t, z: -0.7 * z + 0.1, (0.0, 2.0), _np_flat(y0), t_eval=T3,
                       rtol=1e-12, atol=1e-12).y.T
    last = fg.tree_util.tree_map(lambda v: v[-1], ys)
    _check_result(y0, last, ref[-1], state_dtype=np.float64)


@pytest.mark.parametrize("kind", sorted(STARTS))
def test_fit_on_every_kind_of_params(kind):
    params = STARTS[kind]
    loss = lambda p: fnp.sum((_flat(p) - _target(_np_flat(params).size)) ** 2)
    if any(np.result_type(v).kind in "biu" for v in _leaves(params)):
        with pytest.raises(TypeError, match="only floating-point inputs have gradients"):
            fg.optim.fit(loss, params, fg.optim.sgd(0.1), steps=20)
        return
    res = fg.optim.fit(loss, params, fg.optim.sgd(0.1), steps=20)
    t = _target(_np_flat(params).size)
    want = t + (_np_flat(params) - t) * 0.8 ** 20             # z <- z - 0.1 * 2 (z - t)
    _check_result(params, res.params, want)


@pytest.mark.parametrize("kind", sorted(STARTS))
@pytest.mark.parametrize("chunks", [(3, 0, 4), (0, 7)])
def test_dask_on_every_kind_of_params(kind, chunks):
    da = pytest.importorskip("dask.array")
    w = STARTS[kind]
    n = _np_flat(w).size
    R = np.random.default_rng(1)
    X, y = R.standard_normal((7, n)), R.standard_normal(7)
    dX, dy = da.from_array(X, chunks=(chunks, (n,))), da.from_array(y, chunks=(chunks,))
    loss = lambda w, X, y: fnp.mean((X @ _flat(w) - y) ** 2)
    vg = fg.dask.value_and_grad(loss, reduction="mean")
    if any(np.result_type(v).kind in "biu" for v in _leaves(w)):
        with pytest.raises(TypeError, match="only floating-point inputs have gradients"):
            vg.delayed(w, dX, dy).compute(scheduler="sync")
        return
    value, g = vg.delayed(w, dX, dy).compute(scheduler="sync")
    want_value, want_g = fg.value_and_grad(loss)(w, X, y)
    np.testing.assert_allclose(value, want_value, rtol=1e-6)
    assert fg.tree_util.tree_structure(g) == fg.tree_util.tree_structure(w)
    for a, b in zip(_leaves(g), _leaves(want_g)):
        assert np.result_type(a) == np.result_type(b)
        np.testing.assert_allclose(a, b, rtol=1e-5)
