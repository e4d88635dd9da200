"""Reductions, cumulative ops and sorting: values vs NumPy, derivatives vs finite differences,
axis/keepdims/ddof/dtype handling, and the tie convention for max/min."""
import numpy as np
import pytest
import scipy.special

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from conftest import check_grads, rand

REDUCTIONS = ["sum", "mean", "prod", "max", "min", "var", "std", "amax", "amin"]
AXES = [None, 0, 1, -1, (0, 2), (0, 1, 2)]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_values_and_grads(name, axis, keepdims):
    x = rand((2, 3, 4), "positive" if name == "prod" else "real", seed=1)
    f = lambda x: getattr(fnp, name)(x, axis=axis, keepdims=keepdims)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    got = evaluate(f, x)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    check_grads(f, (x,), order=2)


@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std_ddof(ddof):
    x = rand((5, 3), seed=2)
    for name in ("var", "std"):
        f = lambda x: getattr(fnp, name)(x, axis=0, ddof=ddof)
        np.testing.assert_allclose(evaluate(f, x), getattr(np, name)(x, axis=0, ddof=ddof))
        check_grads(f, (x,), order=2)


def test_prod_gradient_exact_with_zeros():
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 4.0, 2.0]])
    g = fg.grad(lambda x: fnp.sum(fnp.prod(x, axis=1)))(x)
    np.testing.assert_array_equal(g, [[0, 6, 0], [0, 0, 0], [8, 2, 4]])


def test_max_ties_share_gradient_equally():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    g = fg.grad(lambda x: fnp.sum(fnp.max(x, axis=1)))(x)
    np.testing.assert_allclose(g, [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    g = fg.grad(lambda x: fnp.min(x))(x)
    np.testing.assert_allclose(g, [[1, 0, 0], [0, 0, 0]])


def test_integer_and_bool_sums_follow_numpy_dtypes():
    n = np.arange(6, dtype=np.int32).reshape(2, 3)
    for f in (lambda x: fnp.sum(n, axis=0) + 0 * x[0], lambda x: fnp.mean(n) + 0 * x[0],
              lambda x: fnp.sum(n > 2) + 0 * x[0], lambda x: fnp.prod(n + 1, axis=1) + 0 * x[0]):
        got = np.asarray(evaluate(f, np.ones(1)))
        want = np.asarray(f(np.ones(1)))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    x32 = rand((4,), dtype=np.float32)
    assert fg.grad(lambda x: fnp.mean(x))(x32).dtype == np.float32
    assert np.asarray(evaluate(lambda x: fnp.sum(x, dtype=np.float64), x32)).dtype == np.float64


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp(axis, keepdims):
    x = rand((3, 4), seed=3) * 10
    f = lambda x: fnp.logsumexp(x, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(evaluate(f, x), scipy.special.logsumexp(x, axis=axis, keepdims=keepdims))
    check_grads(f, (x,), order=2)
    big = np.array([1000.0, 1000.0])
    np.testing.assert_allclose(fg.grad(fnp.logsumexp)(big), [0.5, 0.5])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_arg_reductions(name, axis):
    x = rand((3, 4), seed=4)
    got = evaluate(lambda x: getattr(fnp, name)(x, axis=axis, keepdims=True), x)
    np.testing.assert_array_equal(got, getattr(np, name)(x, axis=axis, keepdims=True))
    g = fg.grad(lambda x: fnp.sum(x * getattr(fnp, name)(x, axis=axis, keepdims=True)))(x)
    assert g.shape == x.shape


def test_all_any():
    x = np.array([[1.0, -1.0], [2.0, 3.0]])
    for name in ("all", "any"):
        for axis in (None, 0, 1):
            got = evaluate(lambda x: getattr(fnp, name)(x > 0, axis=axis), x)
            np.testing.assert_array_equal(got, getattr(np, name)(x > 0, axis=axis))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_cumulative(name, axis):
    x = rand((3, 4), "positive", seed=5)
    f = lambda x: getattr(fnp, name)(x, axis=axis)
    np.testing.assert_allclose(evaluate(f, x), getattr(np, name)(x, axis=axis), rtol=1e-13)
    check_grads(f, (x,), order=2)


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_and_argsort(axis):
    x = rand((3, 4), seed=6)
    np.testing.assert_array_equal(evaluate(lambda x: fnp.sort(x, axis=axis), x), np.sort(x, axis=axis))
    np.testing.assert_array_equal(evaluate(lambda x: fnp.argsort(x, axis=axis), x),
                                  np.argsort(x, axis=axis, kind="stable"))
    check_grads(lambda x: fnp.sort(x, axis=axis), (x,), order=2)
    # the gradient goes back to each element's original position
    w = np.arange(x.size, dtype=float).reshape(np.sort(x, axis=axis).shape)
    g = fg.grad(lambda x: fnp.sum(fnp.sort(x, axis=axis) * w))(x)
    if axis is None:
        g, x, ax = g.ravel(), x.ravel(), 0
    else:
        ax = axis
    np.testing.assert_array_equal(np.take_along_axis(g, np.argsort(x, axis=ax), ax), w)


def test_methods_and_plain_numpy_dispatch():
    x = rand((3, 4), seed=7)
    f_methods = lambda x: x.sum(axis=0).max() + x.mean() * x.std() + x.prod(axis=1).min() + x.var()
    f_numpy = lambda x: np.max(np.sum(x, axis=0)) + np.mean(x) * np.std(x) + np.min(np.prod(x, axis=1)) + np.var(x)
    np.testing.assert_allclose(evaluate(f_methods, x), f_numpy(x))
    np.testing.assert_array_equal(fg.grad(f_methods)(x), fg.grad(f_numpy)(x))
    np.testing.assert_allclose(evaluate(lambda x: np.add.reduce(x, axis=1), x), x.sum(1))
    np.testing.assert_allclose(evaluate(lambda x: np.maximum.reduce(x), x), x.max(0))


def test_empty_reduction_errors_like_numpy():
    with pytest.raises(ValueError, match="zero-size"):
        evaluate(lambda x: fnp.max(x), np.ones((0,)))
    assert evaluate(lambda x: fnp.sum(x), np.ones((0,))) == 0.0


@pytest.mark.parametrize("x", [np.array([2.0, 0.0, 3.0]), np.array([0.0, 0.0, 3.0, 5.0, 7.0]),
                               np.array([1.5, -2.0, 0.5, 4.0, 3.0, 0.0, 2.0])])
def test_prod_hessian_is_exact_with_zeros(x):
    n = len(x)
    want = np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(n)]
                     for i in range(n)])
    for h in (fg.hessian(fnp.prod), fg.jit(fg.hessian(fnp.prod)), fg.jacfwd(fg.grad(fnp.prod))):
        np.testing.assert_allclose(h(x), want, rtol=1e-14, atol=0)
    check_grads(lambda x: fnp.prod(x.reshape(1, -1), axis=1), (x,), order=2)


WHERE_CASES = [
    ("sum", {}), ("prod", {}), ("mean", {}), ("var", {}), ("var", {"ddof": 1}), ("std", {}),
    ("max", {"initial": -5.0}), ("min", {"initial": 5.0}), ("sum", {"initial": 2.5}),
]


@pytest.mark.parametrize("name,kw", WHERE_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 1), False)])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")        # empty slices, as in NumPy
def test_where_and_initial_follow_numpy(name, kw, axis, keepdims):
    x = rand((3, 4), seed=21)
    mask = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])
    ref = getattr(np, name)(x, axis=axis, keepdims=keepdims, where=mask, **kw)
    f = lambda x, m: getattr(fnp, name)(x, axis=axis, keepdims=keepdims, where=m, **kw)
    np.testing.assert_allclose(evaluate(f, x, mask), ref, rtol=1e-13)
    np.testing.assert_allclose(fg.jit(f)(x, mask), ref, rtol=1e-13)
    np.testing.assert_allclose(fg.jit(lambda x: f(x, x > 0.3))(x), getattr(np, name)(
        x, axis=axis, keepdims=keepdims, where=x > 0.3, **kw), rtol=1e-13)   # a traced mask
    g = fg.grad(lambda x: fnp.sum(f(x, mask)))(x)
    assert np.all(g[~mask] == 0)                        # masked-out entries get no gradient
    check_grads(lambda x: f(x, mask), (x,), order=2)


def test_mean_where_gradient_closed_form():
    x = rand((5,), seed=22)
    mask = np.array([True, False, True, True, False])
    np.testing.assert_allclose(fg.grad(lambda x: fnp.mean(x, where=mask))(x), mask / 3.0)
    with pytest.raises(ValueError, match="initial"):
        fg.grad(lambda x: fnp.max(x, where=mask))(x)


# ---- ufunc.reduce / ufunc.accumulate of any binary ufunc -----------------------------------------

UFUNC_METHOD_CASES = {
    "maximum.accumulate": lambda x: np.maximum.accumulate(x, axis=1),
    "logaddexp.reduce": lambda x: np.logaddexp.reduce(x),
    "logaddexp.accumulate": lambda x: np.logaddexp.accumulate(x, axis=-1),
    "hypot.reduce(keepdims)": lambda x: np.hypot.reduce(x, axis=1, keepdims=True),
    "maximum.reduce(initial)": lambda x: np.maximum.reduce(x, axis=0, initial=0.5),
    "subtract.reduce": lambda x: np.subtract.reduce(x, axis=1),
    "subtract.accumulate": lambda x: np.subtract.accumulate(x),
    "divide.reduce": lambda x: np.divide.reduce(x + 3.0, axis=1),
    "power.accumulate": lambda x: np.power.accumulate(np.abs(x) + 0.5, axis=1),
}


@pytest.mark.parametrize("name", sorted(UFUNC_METHOD_CASES))
def test_ufunc_reduce_and_accumulate_on_traced_values(name):
    """Associative ufuncs combine pairwise, the others fold from the left as NumPy does;
    values and shapes as NumPy's, derivatives to second order, compiled equal to interpreted."""
    f = UFUNC_METHOD_CASES[name]
    x = rand((3, 5), seed=4)
    want = f(x)
    got = evaluate(f, x)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    check_grads(f, (x,), order=2)
    np.testing.assert_allclose(fg.jit(f)(x), got, rtol=1e-13)



@pytest.mark.parametrize("name", ["sum", "prod", "max", "mean", "std", "any", "nansum", "nanmax",
                                  "nanmean", "nanvar"])
def test_keepdims_none_is_a_type_error_as_in_numpy(name):
    """keepdims=None: NumPy raises TypeError; so do funcgrad's plain and traced paths (they
    read it as False before)."""
    x = np.ones((2, 3))
    with pytest.raises(TypeError):
        getattr(np, name)(x, keepdims=None)
    with pytest.raises(TypeError):
        getattr(fnp, name)(x, keepdims=None)
    with pytest.raises(TypeError, match="keepdims"):
        fg.make_ir(lambda x: getattr(fnp, name)(x, keepdims=None))(x)

def test_ufunc_methods_edge_cases():
    empty = np.zeros((0, 2))
    np.testing.assert_array_equal(fg.jit(lambda x: np.add.reduce(x * 1.0, axis=0))(empty), [0.0, 0.0])
    with pytest.raises(ValueError, match="has no identity"):
        fg.jit(lambda x: np.subtract.reduce(x, axis=0))(empty)
    with pytest.raises(fg.UnsupportedFunctionError, match="fg.scan"):
        fg.jit(lambda x: np.subtract.reduce(x))(np.ones(300))
    with pytest.raises(fg.MutationError, match=r"a.at\[indices\].add"):
        fg.jit(lambda x: np.add.at(x, [0], 1.0))(np.ones(3))


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=6, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       dtype=st.sampled_from(["float64", "float32", "int64", "int32"]),
       seed=st.integers(0, 2 ** 16), nans=st.booleans())
def test_compiled_argmax_argmin_are_numpys(shape, dtype, seed, nans):
    """argmax/argmin compile to loops (no objmode) and give NumPy's index along every axis
    and of the flattened array: the first extreme among ties, the first NaN where there is one."""
    r = np.random.default_rng(seed)
    x = r.integers(-2, 3, shape).astype(dtype)          # few values: many ties
    if nans and x.dtype.kind == "f":
        x[r.random(shape) < 0.3] = np.nan
    axes = [None, *range(len(shape))]
    f = lambda x: [g(x, axis=ax) for g in (fnp.argmax, fnp.argmin) for ax in axes]
    jf = fg.jit(f)
    assert "objmode" not in jf.lower(x).source
    want = [g(x, axis=ax) for g in (np.argmax, np.argmin) for ax in axes]
    for got, w in zip(jf(x), want):
        np.testing.assert_array_equal(got, w)



@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3),
       dtype=st.sampled_from(["float64", "float32", "int64", "uint64", "int8", "complex128"]),
       seed=st.integers(0, 2 ** 16), specials=st.booleans())
def test_compiled_prod_is_numpys_bit_for_bit(shape, dtype, seed, specials):
    """prod compiles to a loop for floats and 64-bit integers (no objmode) and multiplies in
    NumPy's order, so every axis, and the whole array, gives NumPy's bits: signed zeros, NaN,
    infinities, integer wraparound, empty axes (1). Other dtypes run NumPy's own."""
    r = np.random.default_rng(seed)
    x = (r.integers(-3, 4, shape) + (r.random(shape) if dtype[0] in "fc" else 0)).astype(dtype)
    if specials and x.dtype.kind == "f" and x.size:
        x.flat[r.integers(0, x.size, 3)] = r.choice([np.nan, np.inf, -np.inf, -0.0], 3)
    axes = [None, *range(len(shape)), tuple(range(len(shape)))]
    kw = {"dtype": dtype} if dtype == "int8" else {}     # (NumPy widens small ints otherwise)
    f = lambda x: [fnp.prod(x, axis=ax, **kw) for ax in axes]
    jf = fg.jit(f)
    assert ("objmode" in jf.lower(x).source) == (dtype in ("int8", "complex128"))
    with np.errstate(all="ignore"):
        want = [np.prod(x, axis=ax, **kw) for ax in axes]
        got = jf(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
        if w.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


@pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")    # (no prange: intended)
def test_parallel_prod_keeps_numpys_order():
    """parallel=True leaves a product over the outer axis serial: partial products per chunk
    would round differently from NumPy's."""
    x = 1.0 + 1e-3 * np.random.default_rng(5).standard_normal((20000, 3))
    f = fg.jit(lambda x: [fnp.prod(x), fnp.prod(x, axis=0), fnp.prod(x, axis=1)], parallel=True)
    for got, want in zip(f(x), (np.prod(x), np.prod(x, axis=0), np.prod(x, axis=1))):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(0, 9), vshape=st.lists(st.integers(0, 3), max_size=2),
       dtype=st.sampled_from(["float64", "float32", "int64", "uint8", "bool"]),
       in_order=st.booleans(), mixed=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_compiled_searchsorted_is_numpys(n, vshape, dtype, in_order, mixed, seed):
    """searchsorted compiles to NumPy's binary search (no objmode) when the sorted array and
    the keys share a dtype, and gives NumPy's indices on both sides: ties, NaN (sorted last),
    keys out of range, an unsorted array (NumPy's search is followed step for step), 0-d and
    empty keys. Keys of another dtype run NumPy's own (it casts both)."""
    r = np.random.default_rng(seed)
    a = r.integers(0, 4, n).astype(dtype)
    v = r.integers(-1, 5, vshape).astype(dtype)
    if dtype.startswith("float"):
        a[r.random(n) < 0.2], v[r.random(vshape) < 0.2] = np.nan, np.nan
    if in_order:
        a = np.sort(a)
    if mixed:
        v = v.astype(np.float64) + 0.5
    jf = fg.jit(lambda a, v: [fnp.searchsorted(a, v), fnp.searchsorted(a, v, side="right")])
    assert ("objmode" in jf.lower(a, v).source) == (a.dtype != v.dtype)
    for got, side in zip(jf(a, v), ("left", "right")):
        want = np.searchsorted(a, v, side=side)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_searchsorted_on_an_unsorted_array_is_numpys():
    """NumPy starts each search from the last one's bounds: on an unsorted array its answer
    is not a fresh binary search's ([5, 5] here), and the kernel's is NumPy's."""
    a, v = np.array([0, 1, 3, 1, 1, 3, 1]), np.array([2, 2])
    got = fg.jit(lambda a, v: fnp.searchsorted(a, v, side="right"))(a, v)
    np.testing.assert_array_equal(got, np.searchsorted(a, v, side="right"))       # [5, 7]


@settings(max_examples=6, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       dtype=st.sampled_from(["float64", "float32", "int64"]), seed=st.integers(0, 2 ** 16))
def test_compiled_sort_and_argsort_along_every_axis_are_numpys(shape, dtype, seed):
    """argsort (and sort, through it) compiles to Numba's mergesort along any axis (no
    objmode) and gives NumPy's stable order: ties in their original order, NaN last."""
    r = np.random.default_rng(seed)
    x = r.integers(0, 3, shape).astype(dtype)                 # few values: many ties
    if x.dtype.kind == "f":
        x[r.random(shape) < 0.2] = np.nan
    axes = range(-1, len(shape))
    jf = fg.jit(lambda x: [(fnp.argsort(x, axis=ax), fnp.sort(x, axis=ax)) for ax in axes])
    assert "objmode" not in jf.lower(x).source
    for (i, v), ax in zip(jf(x), axes):
        np.testing.assert_array_equal(i, np.argsort(x, axis=ax, kind="stable"))
        np.testing.assert_array_equal(v, np.sort(x, axis=ax))

def test_a_new_primitive_with_a_fast_path_is_its_define_block_and_its_lowering_entry():
    """docs/architecture.md's walkthrough, done: logcumsumexp from a define() block and one
    lowering entry traces, differentiates at second order in both modes, batches, and
    compiles to native code (no object mode), equal to NumPy."""
    from funcgrad.backend import lowerings
    from funcgrad.backend.lowerings import Lowering
    from funcgrad.primitives import REGISTRY
    from funcgrad.primitives.base import define, next_axis, shifted_batch

    def vjp(ct, x, *, out, axis):          # x_j reaches every out_k with k >= j
        tail = fnp.flip(fnp.cumsum(fnp.flip(ct * fnp.exp(-out), axis), axis=axis), axis)
        return (fnp.exp(x) * tail,)

    prim = define("walkthrough_logcumsumexp", impl=lambda x, *, axis: np.logaddexp.accumulate(
        x, axis=axis), abstract=lambda a, *, axis: a, vjp=vjp, batch=shifted_batch("axis", next_axis))
    try:
        lowerings.LOWERINGS[prim.name] = Lowering(statement=lowerings.st.cumulative(
            "np.logaddexp({acc}, {x})", "-np.inf"), fresh=True)
        f = lambda x: prim.bind(x, axis=1)
        x = rand((3, 4), "real", seed=2)
        want = np.logaddexp.accumulate(x, axis=1)
        np.testing.assert_allclose(f(x), want, rtol=1e-14)
        check_grads(lambda x: fnp.sum(fnp.sin(f(x))), (x,), order=2)
        np.testing.assert_allclose(fg.vmap(f)(x[None]), want[None], rtol=1e-14)
        compiled = fg.jit(f, background=False)
        np.testing.assert_allclose(compiled(x), want, rtol=1e-14)
        source = compiled.lower(x).source
        assert "np.logaddexp(" in source and "objmode" not in source
    finally:
        REGISTRY.pop(prim.name)
        lowerings.LOWERINGS.pop(prim.name, None)
