"""NumPy functions added for issue 32: compiled results against NumPy's (special values, signed
zeros), JAX's size=/length= forms for value-dependent shapes, and their errors. Derivatives:
tests/numpy_float_cases.py (every float argument, checked by test_regress_numpy.py)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads

SPECIAL = np.array([-2.5, -2.0, -0.0, 0.0, 1.5, np.inf, -np.inf, np.nan])
LABELS = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5])
R = np.random.default_rng(0).normal(size=100)


def same(got, want):
    """Equal values, NaN positions and signs of zeros, leaf by leaf."""
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g[~np.isnan(g)]) if g.dtype.kind == "f" else g,
                                      np.signbit(w[~np.isnan(w)]) if w.dtype.kind == "f" else w)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name,args", [
    ("heaviside", (SPECIAL, 0.5)), ("copysign", (SPECIAL, -1.0)),
    ("copysign", (np.abs(SPECIAL), SPECIAL[::-1])), ("float_power", (np.abs(SPECIAL), 3)),
    ("modf", (SPECIAL,)), ("divmod", (SPECIAL, 0.3)),
    ("ldexp", (np.full(7, 0.75), np.array([-1075, -3, 0, 5, 1023, 1024, 1100]))),
])
def test_elementwise_compositions_equal_numpy(name, args):
    same(fg.jit(getattr(fnp, name))(*args), getattr(np, name)(*args))


def test_vector_products():
    r = np.random.default_rng(1)
    a, v, w = r.normal(size=(2, 3, 4)), r.normal(size=4), r.normal(size=(2, 3))
    z = r.normal(size=3) + 1j * r.normal(size=3)
    np.testing.assert_allclose(fg.jit(fnp.matvec)(a, v), np.matvec(a, v), rtol=1e-14)
    np.testing.assert_allclose(fg.jit(fnp.vecmat)(w, a), np.vecmat(w, a), rtol=1e-14)
    np.testing.assert_allclose(fg.jit(lambda p, q: fnp.vecdot(p, q, axis=0))(a, a),
                               np.vecdot(a, a, axis=0), rtol=1e-14)
    np.testing.assert_allclose(fg.jit(fnp.vecdot)(z, z), np.vecdot(z, z), rtol=1e-14)


def test_bincount_length_and_weights():
    w = np.linspace(0, 1, 11)
    np.testing.assert_allclose(fg.jit(lambda l, w: fnp.bincount(l, w, length=10))(LABELS, w),
                               np.bincount(LABELS, w, minlength=10), rtol=1e-15)
    np.testing.assert_array_equal(fg.jit(lambda l: fnp.bincount(l, length=4))(LABELS),
                                  np.bincount(LABELS)[:4])            # past length: dropped
    np.testing.assert_array_equal(fnp.bincount(LABELS, minlength=12), np.bincount(LABELS, minlength=12))
    g = fg.grad(lambda w: fnp.sum(fnp.bincount(LABELS, w) ** 2))(w)    # eager: from the values
    np.testing.assert_allclose(g, 2 * np.bincount(LABELS, w)[LABELS])
    with pytest.raises(fg.ConcretizationError, match="pass length="):
        fg.make_ir(lambda l: fnp.bincount(l))(LABELS)      # (no values: the length is needed)


def test_digitize_isin_histogram():
    x = np.array([0.2, 6.4, 3.0, 1.6, -1.0, 10.0])
    bins = np.array([0.0, 1.0, 2.5, 4.0, 10.0])
    for b in (bins, bins[::-1]):
        for right in (False, True):
            np.testing.assert_array_equal(fg.jit(lambda x: fnp.digitize(x, b, right))(x),
                                          np.digitize(x, b, right))
    np.testing.assert_array_equal(fg.jit(lambda l: fnp.isin(l, np.array([1, 5]), invert=True))(
        LABELS), np.isin(LABELS, [1, 5], invert=True))
    for kw in [{"bins": 7}, {"bins": 5, "range": (-1.0, 1.0), "density": True},
               {"bins": np.array([-3.0, -1.0, 0.0, 0.5, 3.0]), "weights": R}]:
        got, want = fg.jit(lambda a: fnp.histogram(a, **kw))(R), np.histogram(R, **kw)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
    g = fg.grad(lambda lo: fnp.sum(fnp.histogram(R, 4, range=(lo, 3.0))[1]))(-3.0)
    np.testing.assert_allclose(g, 2.5)                     # edges lo + (3 - lo) k / 4, k = 0..4


def test_unique_with_size():
    got = fg.jit(lambda l: fnp.unique(l, return_index=True, return_inverse=True,
                                      return_counts=True, size=8, fill_value=-1))(LABELS)
    want = np.unique(LABELS, return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(got[0], np.append(want[0], -1))
    np.testing.assert_array_equal(got[1][:7], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], np.append(want[3], 0))
    np.testing.assert_array_equal(fg.jit(lambda l: fnp.unique(l, size=3))(LABELS), [1, 2, 3])
    x = np.array([2.0, np.nan, 1.0, np.nan])
    np.testing.assert_array_equal(fg.jit(lambda v: fnp.unique(v, size=3))(x), np.unique(x))
    with pytest.raises(fg.ConcretizationError, match="pass size="):
        fg.make_ir(fnp.unique)(LABELS)


def test_selection():
    m = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(fg.jit(lambda x: fnp.compress([True, False, True], x, axis=0))(m),
                                  np.compress([True, False, True], m, axis=0))
    mask = np.array([1, 0, 1, 1, 0, 1], bool).reshape(3, 2)
    np.testing.assert_array_equal(fg.jit(lambda x: fnp.extract(mask, x))(m), np.extract(mask, m))
    choices = [np.arange(3.0), -np.arange(3.0), np.full(3, 7.0)]
    for mode in ("raise", "wrap", "clip"):
        idx = np.array([0, 1, 2]) if mode == "raise" else np.array([0, 4, -1])
        np.testing.assert_array_equal(fg.jit(lambda i, a, b, c: fnp.choose(i, [a, b, c], mode=mode))(
            idx, *choices), np.choose(idx, choices, mode=mode))
    with pytest.raises(ValueError, match="invalid entry"):
        fnp.choose(np.array([3]), [np.ones(1)], mode="raise")
    f = lambda x: fnp.piecewise(x, [x < 0, x > 2], [lambda v: -v, 5.0, lambda v: v ** 2])  # noqa
    x = np.array([-2.0, 1.0, 3.0])
    np.testing.assert_array_equal(fg.jit(f)(x), np.piecewise(x, [x < 0, x > 2],
                                                              [lambda v: -v, 5.0, lambda v: v ** 2]))


def test_cumulative_and_ediff1d():
    x = np.arange(1.0, 7.0).reshape(2, 3)
    for fn in ("cumulative_sum", "cumulative_prod"):
        for kw in [{"axis": 1}, {"axis": 0, "include_initial": True}]:
            np.testing.assert_array_equal(fg.jit(lambda a: getattr(fnp, fn)(a, **kw))(x),
                                          getattr(np, fn)(x, **kw))
    with pytest.raises(ValueError, match="axis must be given"):
        fg.jit(fnp.cumulative_sum)(x)
    np.testing.assert_array_equal(
        fg.jit(lambda a: fnp.ediff1d(a, to_end=np.array([9.0]), to_begin=0.0))(x),
        np.ediff1d(x, to_end=[9.0], to_begin=0.0))


def test_dynamic_slices_with_a_traced_start():
    """x[i:i + k] and x[i - k:i] where i has no value (loop bodies, fg.vmap): k entries from
    clip(i, 0, n - k) (jax.lax.dynamic_slice's clamping); with values, NumPy's slice."""
    x = np.arange(10.0)
    got = fg.jit(lambda x: fg.fori_loop(0, 3, lambda i, c: c + x[i:i + 3], fnp.zeros(3)))(x)
    np.testing.assert_array_equal(got, x[0:3] + x[1:4] + x[2:5])
    xs = np.stack([x, 2 * x])
    np.testing.assert_array_equal(fg.vmap(lambda v, i: v[i - 2:i])(xs, np.array([3, 5])),
                                  [x[1:3], 2 * x[3:5]])
    np.testing.assert_array_equal(fg.vmap(lambda v, i: v[i:i + 3])(xs, np.array([1, 9])),
                                  [x[1:4], 2 * x[7:10]])               # clamped: 7, 8, 9
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(fg.vmap(lambda a, i: a[:, i:i + 2], in_axes=(None, 0))(
        m, np.array([0, 2])), [m[:, 0:2], m[:, 2:4]])
    g = fg.grad(lambda x: fg.fori_loop(0, 3, lambda i, c: c + fnp.sum(x[i:i + 2] ** 2), 0.0))(x)
    np.testing.assert_array_equal(g, 2 * x * np.array([1, 2, 2, 1, 0, 0, 0, 0, 0, 0]))
    with pytest.raises(IndexError, match="one such slice per index"):
        fg.vmap(lambda a, i: a[i:i + 2, i:i + 2])(np.stack([m, m]), np.array([0, 1]))
    with pytest.raises(fg.ConcretizationError, match=r"x\[i:i \+ k\]"):
        fg.vmap(lambda v, i, j: v[i:j])(xs, np.array([1, 2]), np.array([3, 4]))


def test_polynomials_equal_numpy():
    p, q = np.array([1.0, -2.0, 3.0, 4.0]), np.array([0.5, 2.0])
    for name, args in [("polyder", (p,)), ("polyder", (p, 2)), ("polyint", (p,)),
                       ("polyadd", (p, q)), ("polysub", (q, p)), ("polymul", (p, q))]:
        np.testing.assert_allclose(fg.jit(getattr(fnp, name), static_argnums=tuple(
            range(1, len(args))) if name == "polyder" else ())(*args),
            getattr(np, name)(*args), rtol=1e-14, err_msg=name)
    np.testing.assert_allclose(fnp.polyint(p, 2, [1.0, 2.0]), np.polyint(p, 2, [1.0, 2.0]))
    x = np.linspace(0.0, 1.0, 12)
    y = 3 * x ** 2 - x + 0.5 + 0.01 * np.sin(20 * x)
    w = np.linspace(1.0, 2.0, 12)
    fit = fg.jit(lambda x, y, w: fnp.polyfit(x, y, 3, w=w), same_bits=False)
    np.testing.assert_allclose(fit(x, y, w), np.polyfit(x, y, 3, w=w), rtol=1e-10, atol=1e-12)
    ys = np.stack([y, 2 * y], 1)
    np.testing.assert_allclose(fg.jit(lambda x, y: fnp.polyfit(x, y, 2))(x, ys),
                               np.polyfit(x, ys, 2), rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name,kw", [
    ("nanmedian", {}), ("nanmedian", {"axis": 0}), ("nanmedian", {"axis": 1, "keepdims": True}),
    ("nanquantile", {"q": [0.1, 0.9], "axis": 0}), ("nanpercentile", {"q": 37.0, "axis": 1}),
    ("nancumsum", {"axis": 0}), ("nancumprod", {"axis": 1}), ("nanargmax", {"axis": 1}),
    ("nanargmin", {"axis": 1})])
def test_nan_statistics_equal_numpy(name, kw):
    r = np.random.default_rng(0)
    x = r.normal(size=(5, 4))
    x[r.random((5, 4)) < 0.3] = np.nan
    if not name.startswith("nanarg"):
        x[:, 2] = np.nan                    # an all-NaN column: NaN, as NumPy
    kw = dict(kw)
    args = (x,) if "q" not in kw else (x, kw.pop("q"))
    got = fg.jit(lambda a: getattr(fnp, name)(a, *args[1:], **kw), same_bits=False)(x)
    want = getattr(np, name)(*args, **kw)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-14, equal_nan=True)


def test_nanargmax_of_an_all_nan_slice_is_minus_one_when_traced():
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    np.testing.assert_array_equal(fg.jit(lambda a: fnp.nanargmax(a, axis=1))(x), [-1, 0])
    with pytest.raises(ValueError):             # plain arrays: NumPy's own error
        fnp.nanargmax(x, axis=1)
    with pytest.raises(NotImplementedError, match="method='linear'"):
        fg.jit(lambda a: fnp.nanquantile(a, 0.5, method="nearest"))(x)


def test_windows_indices_resize_trim_and_apply():
    x = np.arange(12.0).reshape(3, 4)
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        np.testing.assert_array_equal(fg.jit(lambda a: a[0] * 0 + getattr(fnp, name)(4))(x),
                                      getattr(np, name)(4))
    np.testing.assert_array_equal(fnp.kaiser(8, 5.0), np.kaiser(8, 5.0))
    e = np.diag(np.arange(1.0, 4.0))
    np.testing.assert_array_equal(fg.jit(lambda a: a[fnp.diag_indices_from(a)])(e), [1, 2, 3])
    np.testing.assert_array_equal(fg.jit(lambda a: fnp.resize(a, (5, 3)))(x), np.resize(x, (5, 3)))
    z = np.array([0.0, 0.0, 1.0, 2.0, 0.0, 3.0, 0.0])
    for trim in ("fb", "f", "b"):
        np.testing.assert_array_equal(fg.jit(lambda a: fnp.trim_zeros(a, trim))(z),
                                      np.trim_zeros(z, trim))
    t = np.arange(24.0).reshape(2, 3, 4)
    for axis, f, nf in [(0, lambda v: fnp.sum(v ** 2), lambda v: np.sum(v ** 2)),
                        (1, lambda v: fnp.outer(v, v), lambda v: np.outer(v, v))]:
        np.testing.assert_allclose(fg.jit(lambda a: fnp.apply_along_axis(f, axis, a))(t),
                                   np.apply_along_axis(nf, axis, t))
    np.testing.assert_allclose(fg.jit(lambda a: fnp.apply_over_axes(fnp.sum, a, [0, 2]))(t),
                               np.apply_over_axes(np.sum, t, [0, 2]))


def test_unique_family_and_union1d():
    lab = np.array([[3, 1, 4], [1, 5, 9]])
    got, want = fg.jit(lambda a: fnp.unique_all(a, size=6))(lab), np.unique_all(lab)
    order = np.argsort(want.values)                 # (NumPy 2.3+ need not sort)
    np.testing.assert_array_equal(got.values[:5], want.values[order])
    np.testing.assert_array_equal(got.counts[:5], want.counts[order])
    np.testing.assert_array_equal(lab.ravel()[got.indices[:5]], got.values[:5])
    np.testing.assert_array_equal(got.values[got.inverse_indices], lab)
    counts = fg.jit(lambda a: fnp.unique_counts(a, size=5))(lab)
    assert type(counts).__name__ == "UniqueCountsResult" and counts.counts.tolist() == [2, 1, 1, 1, 1]
    np.testing.assert_array_equal(fg.jit(lambda a, b: fnp.union1d(a, b, size=6))(lab, np.array([2, 3])),
                                  np.union1d(lab, [2, 3]))


@pytest.mark.parametrize("name,call,advice", [
    ("fill_diagonal", lambda L, x: L.fill_diagonal(x, 1.0), r"x\.at\[|a\.at\[fnp\.diag_indices_from"),
    ("put", lambda L, x: L.put(x, [0], 1.0), r"\.at\[ind\]\.set"),
    ("putmask", lambda L, x: L.putmask(x, x > 0, 1.0), r"fnp\.where\(mask, values, a\)"),
    ("place", lambda L, x: L.place(x, x > 0, [1.0]), r"fnp\.where\(mask, vals, arr\)"),
    ("copyto", lambda L, x: L.copyto(x, 1.0), r"fnp\.where\(where, src, dst\)")])
def test_in_place_writers(name, call, advice):
    """NumPy's on plain arrays (they write); on traced ones a MutationError with the advice."""
    plain, mine = np.arange(4.0).reshape(2, 2), np.arange(4.0).reshape(2, 2)
    call(np, plain)
    call(fnp, mine)
    np.testing.assert_array_equal(mine, plain)
    for L in (fnp, np):
        with pytest.raises(fg.MutationError, match=rf"np\.{name} writes into .*{advice}"):
            fg.jit(lambda x: call(L, x))(np.arange(4.0).reshape(2, 2))


def test_bin_edges_fromfunction_einsum_path():
    r = np.random.default_rng(0).normal(size=50)
    np.testing.assert_allclose(fg.jit(lambda a: fnp.histogram_bin_edges(a, 4))(r),
                               np.histogram_bin_edges(r, 4), rtol=1e-14)
    x = np.arange(3.0)
    np.testing.assert_array_equal(fg.jit(lambda v: fnp.fromfunction(lambda i, j: v[i] * j, (3, 4),
                                                                    dtype=int))(x),
                                  np.fromfunction(lambda i, j: x[i] * j, (3, 4), dtype=int))
    a = np.ones((2, 3))
    assert fg.make_ir(lambda a: fnp.einsum_path("ij,jk->ik", a, a.T)[0] and a)(a) is not None
    assert fnp.einsum_path("ij,jk->ik", a, a.T)[0] == np.einsum_path("ij,jk->ik", a, a.T)[0]


def test_index_helpers_and_unwrap():
    a = np.arange(16.0).reshape(4, 4)
    for idx in (lambda x: fnp.tril_indices(4), lambda x: fnp.triu_indices_from(x, 1),
                lambda x: fnp.tril_indices_from(x, -1)):
        np.testing.assert_array_equal(fg.jit(lambda x: x[idx(x)])(a), a[idx(np.asarray(a))])
    np.testing.assert_array_equal(fg.jit(lambda x, i: x[fnp.ix_(i, np.array([1, 3]))])(
        a, np.array([0, 2])), a[np.ix_([0, 2], [1, 3])])
    i, j, flat = np.array([0, 1, 3]), np.array([2, 3, 0]), np.array([3, 7, 19])
    for order in ("C", "F"):
        np.testing.assert_array_equal(
            fg.jit(lambda i, j: fnp.ravel_multi_index((i, j), (4, 5), order=order))(i, j),
            np.ravel_multi_index((i, j), (4, 5), order=order))
        for got, want in zip(fg.jit(lambda f: fnp.unravel_index(f, (4, 5), order=order))(flat),
                             np.unravel_index(flat, (4, 5), order=order)):
            np.testing.assert_array_equal(got, want)
    ph = np.cumsum(np.random.default_rng(0).normal(size=20) * 2) % (2 * np.pi)
    np.testing.assert_allclose(fg.jit(fnp.unwrap)(ph), np.unwrap(ph), rtol=1e-14)
    np.testing.assert_allclose(fg.jit(lambda p: fnp.unwrap(p, period=6.0))(ph),
                               np.unwrap(ph, period=6.0), rtol=1e-14)
    with pytest.raises(fg.MutationError, match="put_along_axis"):
        fg.jit(lambda x: fnp.put_along_axis(x, np.array([[0]]), 1.0, 1))(a)


def test_frexp_and_the_metadata_questions():
    x = np.array([0.0, -0.0, 1.0, -8.0, 0.75, 3.0, 1e-310, -5e-324, 1.7976931348623157e308,
                  np.inf, -np.inf, np.nan, 2.0 ** -1022, 7e22, 0.1])
    r = np.random.default_rng(0)
    x = np.concatenate([x, r.normal(size=500) * 10.0 ** r.integers(-300, 300, 500)])
    m, e = fg.jit(fnp.frexp)(x)
    same((m, e), np.frexp(x))
    np.testing.assert_allclose(fg.grad(lambda v: fnp.sum(fnp.frexp(v)[0]))(np.array([3.0, -0.3])),
                               [0.25, 2.0])
    t = np.ones((2, 3), np.float32)
    answers = fg.jit(lambda a: (a * fnp.iterable(a), fnp.isfortran(a) + 0 * a[0, 0],
                                fnp.shares_memory(a, a) + 0 * a[0, 0]))(t)
    np.testing.assert_array_equal(answers[0], t)
    assert answers[1] == 0 and answers[2] == 0
    assert fnp.common_type(t, np.ones(1)) is np.common_type(t, np.ones(1))
    assert fnp.isdtype(np.float32, "real floating") and fnp.min_scalar_type(t) == np.float32
    assert fg.jit(lambda a: fnp.require(a, np.float64))(t).dtype == np.float64


def test_lexsort_sort_complex_poly():
    a, b = np.array([3, 1, 2, 1, 3]), np.array([0.5, 0.2, 0.1, 0.1, 0.4])
    np.testing.assert_array_equal(fg.jit(lambda a, b: fnp.lexsort((b, a)))(a, b), np.lexsort((b, a)))
    k = np.random.default_rng(0).integers(0, 3, (3, 4, 6))
    for axis in (-1, 0):
        np.testing.assert_array_equal(fg.jit(lambda k: fnp.lexsort(k, axis=axis))(k),
                                      np.lexsort(k, axis=axis))
    z = np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 0j, 2j])
    np.testing.assert_array_equal(fg.jit(fnp.sort_complex)(z), np.sort_complex(z))
    np.testing.assert_array_equal(fg.jit(fnp.sort_complex)(np.array([3.0, 1.0, 2.0])),
                                  np.sort_complex([3.0, 1.0, 2.0]))
    np.testing.assert_allclose(fg.jit(fnp.poly)(np.array([1.0, 2.0, -3.0])), np.poly([1, 2, -3.0]))
    m = np.array([[2.0, 1.0], [1.0, 3.0]])
    got = fg.jit(fnp.poly, same_bits=False)(m)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.poly(m), rtol=1e-13)


def _set_ops(a, b):
    """intersect1d (with indices), setdiff1d (both forms) and setxor1d, padded to fixed sizes
    with -1: one kernel for every draw below."""
    return (fnp.intersect1d(a, b, return_indices=True, size=6, fill_value=-1.0),
            fnp.setdiff1d(a, b, size=6, fill_value=-1.0),
            fnp.setdiff1d(a, b, assume_unique=True, size=6, fill_value=-1.0),
            fnp.setxor1d(a, b, size=10, fill_value=-1.0))


_SET_OPS = fg.jit(_set_ops)


@given(st.lists(st.integers(0, 6), min_size=6, max_size=6),
       st.lists(st.integers(0, 6), min_size=4, max_size=4), st.booleans())
@settings(max_examples=40, deadline=None)
def test_set_operations_equal_numpy_compiled_and_padded(a, b, with_nan):
    a, b = np.array(a, float), np.array(b, float)
    if with_nan:
        a[0] = np.nan
    u = np.unique(a)           # (assume_unique wants distinct values: ar1's, in its order)
    ua = np.concatenate([u, np.full(6 - u.size, 100.0)])[::-1]
    want_i = np.intersect1d(a, b, return_indices=True)
    want = [want_i, np.setdiff1d(a, b), np.setdiff1d(ua, b, assume_unique=True),
            np.setxor1d(a, b)]
    for got in (_SET_OPS(a, b), _set_ops(a, b)):            # compiled; plain arrays, size=
        (values, in_a, in_b), diff, diff_unique, xor = got
        k = want_i[0].size
        np.testing.assert_array_equal(values, np.append(want_i[0], [-1.0] * (6 - k)))
        np.testing.assert_array_equal(in_a[:k], want_i[1])
        np.testing.assert_array_equal(in_b[:k], want_i[2])
        assert not in_a[k:].any() and not in_b[k:].any()
        for g, w in zip((diff, xor), (want[1], want[3])):
            np.testing.assert_array_equal(g, np.append(w, [-1.0] * (g.size - w.size)))
    got = _SET_OPS(ua, b)[2]
    np.testing.assert_array_equal(got, np.append(want[2], [-1.0] * (6 - want[2].size)))


def test_set_operations_size_errors_and_gradients():
    a, b = np.array([3.0, 2.0, 1.0, 3.0]), np.array([2.0])
    with pytest.raises(fg.ConcretizationError, match=r"fnp.setdiff1d.*pass size="):
        fg.make_ir(lambda x: fnp.setdiff1d(x, b))(a)
    # the default fill value is the smallest value kept (1.0 = a[2]): its gradient goes there
    g = fg.grad(lambda x: fnp.sum(fnp.setdiff1d(x, b, size=3) ** 2))(a)
    np.testing.assert_array_equal(g, [6.0, 0.0, 4.0, 0.0])
    g = fg.grad(lambda x, y: fnp.sum(fnp.intersect1d(x, y, size=2, fill_value=0.0) * [1, 5]),
                argnums=(0, 1))(a, np.array([3.0, 4.0, 2.0]))
    np.testing.assert_array_equal(g[0], [5.0, 1.0, 0.0, 0.0])   # 2.0 (a[1]), 3.0 (a[0], first)
    np.testing.assert_array_equal(g[1], [0.0, 0.0, 0.0])        # ... come from x
    g = fg.grad(lambda x: fnp.sum(fnp.intersect1d(x, a, size=2) * [1, 5]))(a + 0.0)
    np.testing.assert_array_equal(g, [0.0, 5.0, 1.0, 0.0])     # [1.0, 2.0]: a[2], a[1]
    np.testing.assert_array_equal(fnp.setxor1d(a, b), np.setxor1d(a, b))   # NumPy's own
    np.testing.assert_array_equal(fnp.unique(a, size=4), [1.0, 2.0, 3.0, 1.0])
    np.testing.assert_array_equal(fg.vmap(lambda x: fnp.intersect1d(x, b, size=2))(
        np.array([[2.0, 5.0], [1.0, 1.0]])), [[2.0, 2.0], [0.0, 0.0]])


def test_integer_ufuncs_and_nextafter_equal_numpy():
    k, j = np.array([12, -18, 7, 0, 1 << 20]), np.array([8, 27, -21, 5, 3])
    f = fg.jit(lambda k, j, x: (fnp.gcd(k, j), fnp.lcm(k, j), fnp.left_shift(k, j % 5),
                                fnp.bitwise_right_shift(k, j % 5), fnp.nextafter(x, -x)))
    x = np.array([1.0, -0.0, np.inf, 5e-324, -2.5])
    same(f(k, j, x), (np.gcd(k, j), np.lcm(k, j), np.left_shift(k, j % 5),
                      np.right_shift(k, j % 5), np.nextafter(x, -x)))


def test_polydiv_roots_and_histogramdd_equal_numpy():
    u, v = np.array([2.0, -3.0, 0.5, 4.0, 1.0]), np.array([1.5, -1.0, 0.25])
    f = fg.jit(lambda u, v: (fnp.polydiv(u, v), fnp.polydiv(u, v[:1]), fnp.polydiv(v, u),
                             fnp.roots(u)))
    (q, r), const, short, z = f(u, v)
    for got, want in zip((q, r, *const, *short), (*np.polydiv(u, v), *np.polydiv(u, v[:1]),
                                                  *np.polydiv(v, u))):
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(np.sort_complex(z), np.sort_complex(np.roots(u)), rtol=1e-13)
    check_grads(lambda u, v: fnp.polydiv(u, v)[1], (u, v))      # (quotient: numpy_float_cases)
    s, w = np.random.default_rng(1).normal(size=(50, 3)), np.linspace(0.1, 1.0, 50)
    kws = [dict(bins=3), dict(bins=(2, 3, 4), range=[(-1, 1), (-2, 2), (-3, 3)]),
           dict(bins=[np.array([-1.0, 0.0, 1.0]), 3, np.array([-2.0, 0.0, 0.5, 2.0])],
                weights=w, density=True)]
    got = fg.jit(lambda s: [fnp.histogramdd(s, **kw) for kw in kws])(s)
    for (counts, edges), kw in zip(got, kws):
        want = np.histogramdd(s, **kw)
        np.testing.assert_allclose(counts, want[0], rtol=1e-13)
        for a, b in zip(edges, want[1]):
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
    for got, want in zip(fnp.histogram2d(s[:, 0], s[:, 1], bins=(3, 4), weights=w),
                         np.histogram2d(s[:, 0], s[:, 1], bins=(3, 4), weights=w)):
        np.testing.assert_array_equal(got, want)                 # (NumPy's own)
