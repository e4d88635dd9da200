"""misc.py and stats.py: each case runs with NumPy (the reference), with funcgrad.numpy under a
trace, and with plain `np.<name>` on traced values (dispatch); values, shapes and dtypes must
agree, and differentiable cases are checked to second order. Then the NaN and tie conventions."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from conftest import check_grads, rand

NAN, INF = np.nan, np.inf
X34, Y34 = rand((3, 4), seed=1), rand((3, 4), seed=2)
V6, V3 = rand((6,), seed=3), rand((3,), seed=4)
P5 = rand((5,), "positive", seed=5)
WITH_NAN = np.array([[1.0, NAN, 3.0, -2.0], [NAN, 0.5, 2.5, 1.5], [4.0, -1.0, NAN, 0.25]])
COORDS = np.array([0.0, 0.5, 1.5, 1.75])

SPECIAL = np.array([1.5, NAN, INF, -INF])
FX, FY = np.array([1.0, NAN, 3.0, -2.0]), np.array([2.0, 0.5, NAN, -3.0])
X3D = rand((2, 3, 4), seed=9)
SIGNS = np.array([INF, -INF, 1.0])

# (id, f(module, *args), args, argnums to differentiate or None)
CASES = [
    ("diff", lambda m, x: m.diff(x), (X34,), 0),
    ("diff_n2_axis0", lambda m, x: m.diff(x, n=2, axis=0), (X34,), 0),
    ("diff_prepend_append", lambda m, x, a: m.diff(x, axis=0, prepend=0.5, append=a),
     (X34, rand((1, 4), seed=15)), (0, 1)),
    ("diff_bool", lambda m, x: m.diff(x > 0), (X34,), None),
    ("gradient_1d", lambda m, x: m.gradient(x), (V6,), 0),
    ("gradient_2d_spacings", lambda m, x: m.gradient(x, 0.5, COORDS), (X34,), 0),
    ("gradient_edge2", lambda m, x: m.gradient(x, COORDS, axis=1, edge_order=2), (X34,), 0),
    ("gradient_edge2_uniform", lambda m, x: m.gradient(x, 2.0, edge_order=2), (V6,), 0),
    ("gradient_traced_coords", lambda m, x, c: m.gradient(x, c),
     (V6, np.cumsum(P5[[0, 1, 2, 3, 4, 0]])), (0, 1)),
    ("gradient_int", lambda m, x: m.gradient(np.arange(5) ** 2) + 0 * x[0], (V6,), None),
    ("sinc", lambda m, x: m.sinc(x), (np.array([0.0, 0.3, -1.2, 2.5]),), 0),
    ("nan_to_num", lambda m, x: m.nan_to_num(x), (SPECIAL,), None),
    ("nan_to_num_kw", lambda m, x: m.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0),
     (SPECIAL,), 0),
    ("nan_to_num_f32", lambda m, x: m.nan_to_num(x), (SPECIAL.astype(np.float32),), None),
    ("fmax", lambda m, x, y: m.fmax(x, y), (FX, FY), (0, 1)),
    ("fmin", lambda m, x, y: m.fmin(x, y), (FX, FY), (0, 1)),
    ("fmax_broadcast", lambda m, x, y: m.fmax(x, y), (X34, V3[:1]), (0, 1)),
    ("isclose", lambda m, x: m.isclose(x, x + np.array([0, 1e-9, 1e-3, NAN]), equal_nan=True),
     (rand((4,), seed=7),), None),
    ("isclose_inf", lambda m, x: m.isclose(x * SIGNS, np.array([INF, INF, 1.0])), (np.ones(3),),
     None),
    ("allclose", lambda m, x: m.allclose(x, x + 1e-9), (X34,), None),
    ("array_equal", lambda m, x, y: (m.array_equal(x, y), m.array_equal(x, x)), (X34, Y34), None),
    ("array_equal_nan", lambda m, x: m.array_equal(x * NAN, x * NAN, equal_nan=True), (V3,), None),
    ("array_equiv", lambda m, x: m.array_equiv(x, x[:1] * np.ones((3, 1))), (np.ones((3, 4)),),
     None),
    ("count_nonzero", lambda m, x: m.count_nonzero(x > 0, axis=0, keepdims=True), (X34,), None),
    ("count_nonzero_all", lambda m, x: m.count_nonzero(x > 0), (X34,), None),
    ("isposinf_isneginf", lambda m, x: (m.isposinf(x * SIGNS), m.isneginf(x * SIGNS)),
     (np.ones(3),), None),
    ("isreal_iscomplex", lambda m, x: (m.isreal(x), m.iscomplex(x), m.iscomplexobj(x),
                                       m.isrealobj(x)), (X34,), None),
    ("real_if_close_imag", lambda m, x: (m.real_if_close(x), m.imag(x)), (X34,), 0),
    ("angle", lambda m, x: (m.angle(x), m.angle(x, deg=True)),
     (np.array([-1.0, 0.0, -0.0, 2.0, NAN]),), None),
    ("angle_f32", lambda m, x: m.angle(x), (rand((4,), dtype=np.float32),), None),
    ("searchsorted", lambda m, a, v: (m.searchsorted(a, v), m.searchsorted(a, v, side="right")),
     (np.array([0.0, 1.0, 1.0, 3.0]), np.array([[1.0, -1.0], [5.0, 2.0]])), None),
    ("searchsorted_sorter", lambda m, a, v: m.searchsorted(a, v, sorter=np.array([2, 0, 1])),
     (np.array([3.0, 1.0, 2.0]), np.array([1.5, 2.0])), None),
    ("nansum", lambda m, x: m.nansum(x, axis=1), (WITH_NAN,), 0),
    ("nansum_keepdims", lambda m, x: m.nansum(x, axis=0, keepdims=True), (WITH_NAN,), 0),
    ("nanprod", lambda m, x: m.nanprod(x, axis=1), (WITH_NAN,), 0),
    ("nanmean", lambda m, x: (m.nanmean(x), m.nanmean(x, axis=0)), (WITH_NAN,), 0),
    ("nanmax", lambda m, x: (m.nanmax(x, axis=1), m.nanmax(x)), (WITH_NAN,), 0),
    ("nanmin", lambda m, x: m.nanmin(x, axis=0, keepdims=True), (WITH_NAN,), 0),
    ("nanvar", lambda m, x: (m.nanvar(x, axis=1), m.nanvar(x, axis=0, ddof=1)), (WITH_NAN,), 0),
    ("nanstd", lambda m, x: m.nanstd(x, axis=1, ddof=1, keepdims=True), (WITH_NAN,), 0),
    ("nan_f32", lambda m, x: (m.nanmean(x, axis=1), m.nanvar(x), m.nanmax(x)),
     (WITH_NAN.astype(np.float32),), None),
    ("nan_int", lambda m, x: (m.nansum(np.arange(4)), m.nanmean(np.arange(4)),
                              m.nanmax(np.arange(4)) + 0 * x[0]), (V3,), None),
    ("average", lambda m, x: m.average(x, axis=1), (X34,), 0),
    ("average_weights_1d", lambda m, x, w: m.average(x, axis=1, weights=w, returned=True),
     (X34, P5[:4]), (0, 1)),
    ("average_weights_full", lambda m, x, w: m.average(x, weights=w),
     (X34, rand((3, 4), "positive", 8)), (0, 1)),
    ("average_weights_tuple_axis",
     lambda m, x, w: m.average(x, axis=(2, 0), weights=w, keepdims=True),
     (X3D, rand((4, 2), "positive", 10)), (0, 1)),
    ("average_returned_noweights", lambda m, x: m.average(x, axis=0, returned=True), (X34,), 0),
    ("median_odd", lambda m, x: m.median(x, axis=0), (X34,), 0),
    ("median_even", lambda m, x: (m.median(x, axis=1), m.median(x)), (X34,), 0),
    ("median_axes_keepdims", lambda m, x: m.median(x, axis=(0, 2), keepdims=True), (X3D,), 0),
    ("median_int", lambda m, x: m.median(np.arange(6) % 4) + 0 * x[0], (V3,), None),
    ("quantile", lambda m, x: m.quantile(x, 0.3, axis=1), (X34,), 0),
    ("quantile_list", lambda m, x: m.quantile(x, [0.0, 0.25, 0.5, 1.0], axis=0, keepdims=True),
     (X34,), 0),
    ("percentile", lambda m, x: m.percentile(x, [10, 90]), (X34,), 0),
    ("percentile_scalar_f32", lambda m, x: m.percentile(x, 37.5, axis=0),
     (rand((5, 2), dtype=np.float32),), None),
    ("quantile_int", lambda m, x: (m.quantile(np.arange(7), 0.4), m.quantile(np.arange(7), 1),
                                   0 * x[0]), (V3,), None),
    ("ptp", lambda m, x: (m.ptp(x), m.ptp(x, axis=1, keepdims=True)), (X34,), 0),
    ("cov", lambda m, x: m.cov(x), (X34,), 0),
    ("cov_rowvar_ddof", lambda m, x: m.cov(x, rowvar=False, ddof=0), (X34,), 0),
    ("cov_y_bias", lambda m, x, y: m.cov(x, y, bias=True), (V6, rand((6,), seed=12)), (0, 1)),
    ("cov_weights", lambda m, x, a: m.cov(x, fweights=np.array([1, 2, 1, 3]), aweights=a),
     (X34, P5[:4]), (0, 1)),
    ("cov_1d_f32", lambda m, x: m.cov(x), (rand((5,), dtype=np.float32),), None),
    ("corrcoef", lambda m, x: m.corrcoef(x), (X34,), 0),
    ("corrcoef_y", lambda m, x, y: m.corrcoef(x, y, rowvar=False), (X34.T, Y34.T), (0, 1)),
    ("convolve_int", lambda m, x: m.convolve(np.arange(5), np.array([1, -2, 3])) + 0 * x[0],
     (V3,), None),
    ("interp", lambda m, x, fp: m.interp(x, COORDS, fp),
     (np.array([-0.5, 0.2, 0.7, 1.6, 2.0]), P5[:4]), (0, 1)),
    ("interp_at_knots", lambda m, x, fp: m.interp(x, COORDS, fp),
     (np.append(COORDS, [2.0, -1.0]), P5[:4]), None),
    ("interp_left_right", lambda m, x, fp: m.interp(x, COORDS, fp, left=-1.0, right=7.0),
     (np.array([-0.5, 0.2, 1.6, 2.0]), P5[:4]), (0, 1)),
    ("interp_traced_xp", lambda m, x, xp: m.interp(x, xp, np.array([1.0, -2.0, 0.5, 3.0])),
     (np.array([0.1, 0.7, 1.6, 1.7]), COORDS), (0, 1)),
    ("interp_period",
     lambda m, x, fp: m.interp(x, np.array([-170.0, -45.0, 60.0, 175.0]), fp, period=360),
     (np.array([-200.0, 0.0, 178.0, 370.0]), P5[:4]), (0, 1)),
    ("interp_scalar", lambda m, x: m.interp(x, [0.0, 1.0], [2.0, 4.0]), (np.float64(0.25),), 0),
    ("polyval", lambda m, p, x: m.polyval(p, x), (P5[:3], X34), (0, 1)),
    ("polyval_list", lambda m, x: m.polyval([3.0, 0.0, 1.0], x), (V3,), 0),
]
CASES += [   # arrays assembled from pieces (_assemble.py), ufunc.outer, einsum's other form
    ("select", lambda m, x: m.select([x > 0.5, x < -0.5], [x ** 2, -x], 0.25), (X34,), 0),
    ("vander", lambda m, x: m.vander(x, 4), (V3,), 0),
    ("vander_increasing", lambda m, x: m.vander(x, increasing=True), (V3,), 0),
    ("trapezoid", lambda m, y, x: m.trapezoid(y, x, axis=1), (X34, COORDS), (0, 1)),
    ("trapezoid_dx", lambda m, y: m.trapezoid(y, dx=0.3, axis=0), (X34,), 0),
    ("ufunc_outer", lambda m, a, b: np.multiply.outer(a, m.sin(b)), (V3, X34), (0, 1)),
    ("einsum_interleaved", lambda m, a, b: m.einsum(a, [0, 1], b, [1], [0]), (X34, P5[:4]),
     (0, 1)),
]
CASES += [(f"convolve_{n}_{k}_{mode}", lambda m, a, v, mode=mode: m.convolve(a, v, mode),
           (rand((n,), seed=n), rand((k,), seed=k + 20)), (0, 1))
          for n, k in [(6, 3), (3, 6), (5, 4), (4, 1)] for mode in ("full", "same", "valid")]
CASES += [(f"correlate_{n}_{k}_{mode}", lambda m, a, v, mode=mode: m.correlate(a, v, mode),
           (rand((n,), seed=n), rand((k,), seed=k + 20)), (0, 1))
          for n, k in [(6, 3), (3, 6), (4, 6)] for mode in ("full", "same", "valid")]
CASES += [(f"quantile_{meth}",
           lambda m, x, meth=meth: m.quantile(x, [0.1, 0.5, 0.62, 0.99], axis=1, method=meth),
           (rand((2, 7), seed=13),), 0)
          for meth in ("linear", "lower", "higher", "midpoint", "nearest", "hazen", "weibull",
                       "median_unbiased", "normal_unbiased", "interpolated_inverted_cdf",
                       "inverted_cdf", "averaged_inverted_cdf", "closest_observation")]


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _assert_same(got, want):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-12 if w.dtype == np.float64 else 1e-6, atol=1e-14)


@pytest.mark.parametrize("name,f,args,argnums", CASES, ids=[c[0] for c in CASES])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_values_dispatch_and_grads(name, f, args, argnums):
    want = f(np, *args)
    _assert_same(evaluate(lambda *a: f(fnp, *a), *args), want)
    _assert_same(evaluate(lambda *a: f(np, *a), *args), want)     # np.<name>(traced) dispatches
    if argnums is not None:
        check_grads(lambda *a: f(fnp, *a), args, order=2, argnums=argnums)


NEW = """diff gradient sinc nan_to_num fmax fmin isclose allclose array_equal array_equiv
count_nonzero isneginf isposinf isreal iscomplex iscomplexobj isrealobj real_if_close imag angle
searchsorted partition argpartition nansum nanmean nanmax nanmin nanprod nanvar nanstd average
median quantile percentile ptp cov corrcoef convolve correlate interp polyval select vander
trapezoid""".split()


def test_exported_with_examples_and_plain_numpy_unchanged():
    for name in NEW:
        fn = getattr(fnp, name)
        doc = fn.__doc__ or ""
        assert ">>> " in doc and "fnp." in doc.split(">>> ")[1], name
    a = np.array([3.0, 1.0, 2.0])
    assert fnp.partition(a, 1) is not a and np.array_equal(fnp.partition(a, 1), np.partition(a, 1))
    assert fnp.allclose(a, a) is True and type(fnp.median(a)) is type(np.median(a))


@pytest.mark.parametrize("kth,axis", [(1, -1), ((0, 3), 0), (2, None)])
def test_partition_is_a_valid_partition(kth, axis):
    x = rand((4, 5), seed=14)
    got = evaluate(lambda x: fnp.partition(x, kth, axis=axis), x)
    idx = evaluate(lambda x: fnp.argpartition(x, kth, axis=axis), x)
    ax = 0 if axis is None else axis
    ref = np.sort(x, axis=axis)
    for k in np.atleast_1d(kth):      # the k-th element is in place, smaller before, larger after
        np.testing.assert_array_equal(np.take(got, k, ax), np.take(ref, k, ax))
        np.testing.assert_array_equal(np.take(np.partition(x, kth, axis), k, ax),
                                      np.take(ref, k, ax))
    flat = x.ravel() if axis is None else x
    np.testing.assert_array_equal(np.take_along_axis(flat, idx, ax), got)
    check_grads(lambda x: fnp.partition(x, kth, axis=axis), (x,), order=2)
    with pytest.raises(ValueError):
        evaluate(lambda x: fnp.partition(x, 9), x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_reductions_gradient_is_zero_at_nan():
    x = WITH_NAN
    nan = np.isnan(x)
    g = fg.grad(lambda x: fnp.nansum(x))(x)
    np.testing.assert_array_equal(g, np.where(nan, 0.0, 1.0))
    g = fg.grad(lambda x: fnp.sum(fnp.nanmean(x, axis=1)))(x)
    np.testing.assert_allclose(g, np.where(nan, 0.0, 1.0 / 3.0))
    g = fg.grad(lambda x: fnp.nanmax(x))(x)
    np.testing.assert_array_equal(g, np.where(x == np.nanmax(x), 1.0, 0.0))
    for fn in (fnp.nanvar, fnp.nanstd, fnp.nanprod, fnp.nanmin):
        g = fg.grad(lambda x, fn=fn: fnp.sum(fn(x, axis=0)))(x)
        assert np.all(g[nan] == 0) and np.all(np.isfinite(g)), fn
    # all-NaN slices give NaN like NumPy (count - ddof <= 0 too)
    allnan = np.array([[NAN, NAN], [1.0, 2.0]])
    for fn in (fnp.nanmax, fnp.nanmin, fnp.nanmean, fnp.nanvar):
        want = getattr(np, fn.__name__)(allnan, axis=1)
        _assert_same(evaluate(lambda x, fn=fn: fn(x, axis=1), allnan), want)
    want = np.nanvar(allnan, axis=1, ddof=2)
    _assert_same(evaluate(lambda x: fnp.nanvar(x, axis=1, ddof=2), allnan), want)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_median_and_quantile_propagate_nan():
    x = np.array([[1.0, NAN, 3.0], [2.0, 0.0, 1.0]])
    for f in (lambda m, x: m.median(x, axis=1), lambda m, x: m.quantile(x, [0.2, 0.5], axis=1),
              lambda m, x: m.percentile(x, 50, axis=1, method="lower")):
        _assert_same(evaluate(lambda x, f=f: f(fnp, x), x), f(np, x))
    g = fg.grad(lambda x: fnp.median(x))(np.array([4.0, 1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0, 0, 0.5, 0.5])      # the two middle order statistics


def test_fmax_fmin_gradient_conventions():
    x = np.array([1.0, NAN, 3.0, 2.0, NAN])
    y = np.array([2.0, 0.5, NAN, 2.0, NAN])
    for fn, to_x in ((fnp.fmax, [0, 0, 1, 0.5, 0]), (fnp.fmin, [1, 0, 1, 0.5, 0])):
        loss = lambda x, y, fn=fn: fnp.sum(fnp.where(fnp.isnan(fn(x, y)), 0.0, fn(x, y)))
        gx, gy = fg.grad(loss, (0, 1))(x, y)
        np.testing.assert_array_equal(gx, to_x)             # the better operand, or
        np.testing.assert_array_equal(gy, [1 - to_x[0], 1, 0, 0.5, 0])  # the non-NaN one; ties: half
        assert np.all(np.isfinite(gx)) and np.all(np.isfinite(gy))
    gx, gy = fg.grad(lambda x, y: fnp.sum(np.fmax(x, y)), (0, 1))(x[:1], y[:1])   # np dispatch
    assert gx[0] == 0 and gy[0] == 1


def test_nan_to_num_angle_sinc_derivatives():
    x = np.array([1.5, NAN, INF, -INF])
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(fnp.nan_to_num(x)))(x), [1, 0, 0, 0])
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(fnp.angle(x)))(x), [0, 0, 0, 0])
    d1 = fg.grad(lambda x: fnp.sinc(x))
    d2 = fg.grad(d1)
    assert d1(0.0) == 0.0
    np.testing.assert_allclose(d2(0.0), -np.pi ** 2 / 3, rtol=1e-12)
    np.testing.assert_allclose(d2(1e-3), -np.pi ** 2 / 3, rtol=1e-5)


def test_interp_gradients_are_slopes_and_weights():
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 3.0])
    x = np.array([-1.0, 0.5, 2.0, 4.0])
    gx = fg.grad(lambda x: fnp.sum(fnp.interp(x, xp, fp)))(x)
    np.testing.assert_allclose(gx, [0.0, 2.0, 0.5, 0.0])
    gfp = fg.grad(lambda fp: fnp.interp(2.0, xp, fp))(fp)
    np.testing.assert_allclose(gfp, [0.0, 0.5, 0.5])


def test_errors_match_numpy():
    x = np.ones(3)
    for f, exc in [(lambda x: fnp.diff(x, n=-1), ValueError),
                   (lambda x: fnp.diff(x[0]), ValueError),
                   (lambda x: fnp.gradient(x[:1]), ValueError),
                   (lambda x: fnp.convolve(x, x[:0]), ValueError),
                   (lambda x: fnp.quantile(x, 1.5), ValueError),
                   (lambda x: fnp.percentile(x, -1), ValueError),
                   (lambda x: fnp.quantile(x, 0.5, method="bogus"), ValueError),
                   (lambda x: fnp.average(x, weights=np.zeros(3)), ZeroDivisionError),
                   (lambda x: fnp.average(x[None], weights=x), TypeError),
                   (lambda x: fnp.interp(x, [0.0, 1.0], [1.0]), ValueError),
                   (lambda x: fnp.searchsorted(x, x, side="middle"), ValueError)]:
        with pytest.raises(exc):
            f(x)
        with pytest.raises(exc):
            evaluate(f, x)


def test_dict_subclasses_are_pytrees():
    import collections
    from types import SimpleNamespace

    class Params(dict):
        pass
    x = np.array([1.0, 2.0])
    for make in (collections.OrderedDict, lambda kv: collections.defaultdict(list, kv), Params):
        params = make([("w", x), ("b", np.array(0.5))])
        loss = lambda p: fnp.sum(p["w"] ** 2) + p["b"]
        g = fg.grad(loss)(params)
        assert type(g) is type(params) and sorted(g) == sorted(params)
        if isinstance(params, collections.OrderedDict):
            assert list(g) == ["w", "b"]
        np.testing.assert_allclose(g["w"], 2 * x)
        np.testing.assert_allclose(g["b"], 1.0)
        if isinstance(params, collections.defaultdict):
            assert g.default_factory is list
        jitted = fg.jit(lambda p: p["w"] * p["b"])
        np.testing.assert_allclose(jitted(params), x * 0.5)
        params["b"] = np.array(3.0)             # a new entry value is seen, not a cached leaf
        np.testing.assert_allclose(jitted(params), x * 3.0)
    flat = fg.tree_util.tree_flatten_with_path(collections.OrderedDict([("z", 1.0), ("a", 2.0)]))
    assert [p for p, _ in flat[0]] == [(fg.tree_util.DictKey("z"),), (fg.tree_util.DictKey("a"),)]


def test_r_and_c_assemble_traced_pieces():
    """fnp.r_ / fnp.c_ (NumPy's index tricks do not dispatch: np.r_ on a traced value says to
    use them)."""
    x = V3
    got = evaluate(lambda x: (fnp.r_[x, 0.5, 1:3, 0:1:3j], fnp.c_[x, x ** 2]), x)
    want = (np.r_[x, 0.5, 1:3, 0:1:3j], np.c_[x, x ** 2])
    _assert_same(got, want)
    check_grads(lambda x: fnp.c_[fnp.r_[x, x[:1]], fnp.r_[2.0 * x, 1.0]], (x,), order=2)
    with pytest.raises(fg.ConcretizationError, match="fnp.r_"):
        fg.grad(lambda x: fnp.sum(np.r_[x, 1.0]))(x)
