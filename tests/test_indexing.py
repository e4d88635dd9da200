"""NumPy indexing on traced arrays: x[idx], x.at[idx], take, take_along_axis, iteration, errors.

Forward values are compared with NumPy on the same index; derivatives are checked to order 2
(through y -> y * sin(y), so the second-order check runs the vjp of every vjp rule).
"""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.primitives.indexing import at
from conftest import check_grads, rand

X = rand((3, 4, 5), seed=1)
M = rand((4, 3), seed=2)
MASK = X[:, 0, 0] > 0                       # a concrete boolean mask over axis 0
MASK2 = np.array([[True, False, True, True]] * 3)


def smooth(y):
    return y * fnp.sin(y)


# (id, index) applied as X[index]
INDEX_CASES = [
    ("int", 1),
    ("neg_int", -1),
    ("two_ints", (2, -3)),
    ("three_ints", (0, 1, 2)),
    ("slice", slice(1, 3)),
    ("slice_step", (slice(None), slice(None, None, 2))),
    ("slice_neg_step", (slice(None, None, -1),)),
    ("slice_neg_step_bounds", (slice(None), slice(3, 0, -2))),
    ("slice_out_of_range", slice(-10, 10)),
    ("slice_empty", slice(2, 1)),
    ("int_and_slice", (1, slice(None, None, -2))),
    ("ellipsis", (Ellipsis, 1)),
    ("ellipsis_middle", (0, Ellipsis, -1)),
    ("ellipsis_only", Ellipsis),
    ("newaxis", (None, 1)),
    ("newaxis_ellipsis", (Ellipsis, None, slice(1, 3), None)),
    ("int_array", [0, 2]),
    ("int_array_repeated", [2, 0, 2, 2]),
    ("int_array_negative", np.array([-1, 0])),
    ("int_array_2d", np.array([[0, 1], [2, 2]])),
    ("empty_list", []),
    ("arrays_adjacent", (slice(None), [0, 3], [1, 1])),            # advanced dims stay in place
    ("arrays_separated", ([0, 1], slice(None), [2, 3])),           # advanced dims go first
    ("arrays_broadcast", (np.array([[0], [2]]), slice(1, 3), np.array([0, 4]))),
    ("int_and_array_separated", (1, slice(None), [2, 3])),         # an int counts as advanced
    ("int_and_array_adjacent", (slice(None), 1, [2, 3])),
    ("array_and_newaxis", (None, [0, 1], Ellipsis)),
    ("array_2d_with_slice", (slice(None), np.array([[0, 1, 1]]))),
    ("bool_mask", MASK),
    ("bool_mask_list", [True, False, True]),
    ("bool_mask_2d", MASK2),
    ("bool_mask_after_ellipsis", (Ellipsis, X[0, 0] > 0)),
    ("bool_mask_with_int", (1, slice(None), X[1, 0] > 0)),
    ("bool_scalar_true", True),
    ("bool_scalar_false_with_int", (1, False)),
]


@pytest.mark.parametrize("name,idx", INDEX_CASES, ids=[c[0] for c in INDEX_CASES])
def test_getitem_forward_matches_numpy(name, idx):
    want = X[idx]
    got = evaluate(lambda x: x[idx], X)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name,idx", INDEX_CASES, ids=[c[0] for c in INDEX_CASES])
def test_getitem_grads_order2(name, idx):
    check_grads(lambda x: smooth(x[idx]), (X,), order=2)


def test_compiled_basic_getitem_matches_numpy():
    """The basic indexes above (no masks) in one kernel (one compile): Numba views, x[None]
    and x[:, None] too (no objmode call); a gradient through new axes likewise."""
    basic = lambda idx: not any(isinstance(i, (list, np.ndarray, bool))
                                for i in (idx if isinstance(idx, tuple) else (idx,)))
    idxs = [idx for _, idx in INDEX_CASES if basic(idx)]
    idxs += [None, (slice(None), None, 1)]
    jf = fg.jit(lambda x: [x[idx] for idx in idxs])
    assert "objmode" not in jf.lower(X).source
    got = jf(X)
    for idx, g in zip(idxs, got):
        np.testing.assert_array_equal(g, X[idx])
    loss = lambda x: fnp.sum((x[None] * x[:, None, 1]) ** 3)
    np.testing.assert_allclose(fg.jit(fg.grad(loss))(X), evaluate(fg.grad(loss), X),
                               rtol=1e-13, atol=1e-15)


def test_advanced_index_axis_placement():
    # NumPy's rule: adjacent advanced indices replace their dims in place; separated ones
    # (by a slice) put the broadcast index dims first
    assert evaluate(lambda x: x[:, [0, 3], [1, 1]], X).shape == (3, 2)
    assert evaluate(lambda x: x[[0, 1], :, [2, 3]], X).shape == (2, 4)
    assert evaluate(lambda x: x[1, :, [2, 3]], X).shape == (2, 4)
    assert evaluate(lambda x: x[:, 1, [2, 3]], X).shape == (3, 2)


def test_indexing_with_integer_dtypes_and_numpy_scalars():
    for idx in (np.int32(2), np.int64(-1), np.array([1, 0], dtype=np.int8),
                np.array([3], dtype=np.uint16)):
        np.testing.assert_array_equal(evaluate(lambda x: x[:, idx], X), X[:, idx])


# ---- traced integer indices -------------------------------------------------------------------

def test_traced_scalar_index():
    def f(x, i):
        return fnp.sum(fnp.sin(x[i]) ** 2)
    for i in (np.array(2), np.array(-1)):
        assert np.isclose(evaluate(f, M, i), np.sum(np.sin(M[int(i)]) ** 2))
        assert "b:i64[]" in str(fg.make_ir(f)(M, i)).replace("i32", "i64")  # i is traced
        g = fg.grad(f, argnums=0)(M, i)
        want = np.zeros_like(M)
        want[int(i)] = 2 * np.sin(M[int(i)]) * np.cos(M[int(i)])
        np.testing.assert_allclose(g, want, rtol=1e-12)
        # second derivatives, with the index traced inside the inner grad
        check_grads(lambda x: fg.grad(f, argnums=0)(x, i), (M,), order=1)


def test_traced_index_array_repeated_and_with_slices():
    def f(x, idx):
        return fnp.sum(smooth(x[idx, 1:]))
    idx = np.array([0, 2, 2, -1])
    assert np.isclose(evaluate(f, M, idx), np.sum(M[idx, 1:] * np.sin(M[idx, 1:])))
    g = fg.grad(f, argnums=0)(M, idx)
    want = np.zeros_like(M)
    np.add.at(want, (idx, slice(1, None)), np.sin(M[idx, 1:]) + M[idx, 1:] * np.cos(M[idx, 1:]))
    np.testing.assert_allclose(g, want, rtol=1e-12)
    check_grads(lambda x: fg.grad(f, argnums=0)(x, idx), (M,), order=1)


def test_list_of_traced_indices():
    def f(x, i, j):
        return fnp.sum(smooth(x[[i, j, i], 1:]))
    i, j = np.array(3), np.array(-4)
    want = M[[3, -4, 3], 1:]
    assert np.isclose(evaluate(f, M, i, j), np.sum(want * np.sin(want)))
    check_grads(lambda x: fg.grad(f, argnums=0)(x, i, j), (M,), order=1)


def test_traced_index_in_at_update():
    def f(x, i, v):
        return fnp.sum(smooth(x.at[i].add(v * x[0])))
    i, v = np.array([1, 3, 1]), rand((3, 3), seed=3)
    x = M
    want = x.copy()
    np.add.at(want, i, v * x[0])
    assert np.isclose(evaluate(f, x, i, v), np.sum(want * np.sin(want)))
    check_grads(lambda x, v: fg.grad(f, argnums=(0, 2))(x, i, v), (x, v), order=1)


# ---- x.at[idx] --------------------------------------------------------------------------------

def _np_update(op, x, idx, v):
    """NumPy's reference for x.at[idx].<op>(v)."""
    y = x.copy()
    if op == "set":
        y[idx] = v
    elif op in ("add", "subtract"):
        np.add.at(y, idx, v if op == "add" else -v)
    elif op in ("multiply", "divide"):
        np.multiply.at(y, idx, v if op == "multiply" else 1 / v)
    else:
        return x[idx]
    return y


# (id, method, index, values(x, v)); `add` cases include repeated indices (they accumulate)
AT_CASES = [
    ("set_int", "set", 1, lambda x, v: v[0]),
    ("set_slice_scalar", "set", (slice(1, None), slice(None, None, 2)), lambda x, v: 7.0),
    ("set_array", "set", [0, 3], lambda x, v: v[:2] ** 2),
    ("set_mask", "set", M > 0, lambda x, v: 0.5),
    ("set_self", "set", (slice(None), 0), lambda x, v: x[:, 1] * x[:, 2]),
    ("add_repeated", "add", [0, 2, 2, 2], lambda x, v: v),
    ("add_broadcast", "add", (slice(None), 1), lambda x, v: v[0, 0]),
    ("add_2d_repeated", "add", ([1, 1], [0, 0]), lambda x, v: v[0, :2]),
    ("add_self_repeated", "add", ([2, 2], Ellipsis), lambda x, v: x[:2] ** 2),
    ("subtract", "subtract", [1, 1], lambda x, v: v[:2]),
    ("multiply", "multiply", [0, 3], lambda x, v: v[:2]),
    ("multiply_self", "multiply", slice(1, None), lambda x, v: x[:-1]),
    ("divide", "divide", 2, lambda x, v: v[0] + 3.0),
    ("get", "get", (slice(None, None, -1), [0, 2]), None),
]


def _at_fn(op, idx, values):
    if op == "get":
        return lambda x, v: x.at[idx].get() * v[0, 0]
    return lambda x, v: getattr(x.at[idx], op)(values(x, v))


@pytest.mark.parametrize("name,op,idx,values", AT_CASES, ids=[c[0] for c in AT_CASES])
def test_at_updates(name, op, idx, values):
    v = rand((4, 3), seed=4)
    f = _at_fn(op, idx, values)
    want = _np_update(op, M, idx, values(M, v)) if values else M[idx] * v[0, 0]
    np.testing.assert_allclose(evaluate(f, M, v), want, rtol=1e-12)
    check_grads(lambda x, v: smooth(f(x, v)), (M, v), order=2)


def test_at_chained_updates():
    def f(x, v):
        return x.at[0].set(1.0).at[0, 1].add(v[1, 1]).at[[1, 2], 0].multiply(v[0, :2] + 2.0)
    v = rand((4, 3), seed=5)
    want = _np_update("set", M, 0, 1.0)
    want[0, 1] += v[1, 1]
    want[[1, 2], 0] *= v[0, :2] + 2.0
    np.testing.assert_allclose(evaluate(f, M, v), want, rtol=1e-12)
    check_grads(lambda x, v: smooth(f(x, v)), (M, v), order=2)


def test_at_set_on_plain_array_and_immutability():
    # a constant (untraced) array updated with a traced value
    out = evaluate(lambda v: at(np.zeros(3))[1].set(v), np.array(2.0))
    np.testing.assert_array_equal(out, [0.0, 2.0, 0.0])
    assert fg.grad(lambda v: fnp.sum(at(np.ones(3))[1:].multiply(v)))(2.0) == 2.0

    def f(x):
        y = x.at[0].set(0.0)
        return x, y
    x, y = evaluate(f, M)
    np.testing.assert_array_equal(x, M)        # the original is unchanged
    assert np.all(y[0] == 0)


# ---- take, take_along_axis ----------------------------------------------------------------

TAKE_CASES = [
    ("take_flat", lambda L, x: L.take(x, [5, 0, 5])),
    ("take_axis", lambda L, x: L.take(x, [[0, 2], [1, 1]], axis=1)),
    ("take_neg_axis", lambda L, x: L.take(x, np.array([-1, 0]), axis=-1)),
    ("take_scalar", lambda L, x: L.take(x, 2, axis=0)),
    ("take_wrap", lambda L, x: L.take(x, [-5, 7], axis=0, mode="wrap")),
    ("take_clip", lambda L, x: L.take(x, [-5, 1, 7], axis=1, mode="clip")),
    ("take_method", lambda L, x: x.take([1, 2], axis=0)),
    ("take_along_axis", lambda L, x: L.take_along_axis(x, np.argsort(M, axis=1), axis=1)),
    ("take_along_axis_default", lambda L, x: L.take_along_axis(x, np.array([[2, 0]] * 4), -1)),
    ("take_along_axis_bcast", lambda L, x: L.take_along_axis(x, np.array([[1, 3, 0]]), axis=0)),
    ("take_along_axis_none", lambda L, x: L.take_along_axis(x, np.array([11, 0, 3]), None)),
    ("take_along_argmax", lambda L, x: L.take_along_axis(x, L.argmax(x, 0, keepdims=True), 0)),
    ("sort", lambda L, x: L.sort(x, axis=0)),
]


@pytest.mark.parametrize("name,f", TAKE_CASES, ids=[c[0] for c in TAKE_CASES])
def test_take(name, f):
    want = f(np, M)
    for L in (np, fnp):
        got = evaluate(lambda x: f(L, x), M)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(f(fnp, M), want)          # plain arrays
    check_grads(lambda x: smooth(f(fnp, x)), (M,), order=2)


def test_take_and_take_along_axis_with_traced_indices():
    def f(x, idx, order):
        return fnp.sum(smooth(fnp.take(x, idx, axis=1) + fnp.take_along_axis(x, order, axis=1)))
    idx, order = np.array([[2, 2, 0]] * 4), np.argsort(M, axis=1)
    want = np.take(M, idx, axis=1) + np.take_along_axis(M, order, axis=1)
    assert np.isclose(evaluate(f, M, idx, order), np.sum(want * np.sin(want)))
    check_grads(lambda x: fg.grad(f, argnums=0)(x, idx, order), (M,), order=1)


# ---- iteration ----------------------------------------------------------------------------------

def test_iteration_over_a_traced_array():
    def f(x):
        total = 0.0
        for k, row in enumerate(x):
            total = total + (k + 1) * fnp.sum(row ** 3)
        return total
    assert np.isclose(evaluate(f, M), sum((k + 1) * np.sum(r ** 3) for k, r in enumerate(M)))
    check_grads(f, (M,), order=2)
    rows = evaluate(lambda x: [r for r in x], X)
    assert len(rows) == 3 and all(np.array_equal(r, X[k]) for k, r in enumerate(rows))
    a, b = evaluate(lambda x: tuple(x[:2]), M)        # unpacking iterates too
    np.testing.assert_array_equal(a, M[0])


# ---- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("idx", [4, -5, (0, 3), (slice(None), 5), [0, 4], (0, [3, -4])],
                         ids=["int", "neg_int", "second_axis", "after_slice", "array",
                              "array_second_axis"])
def test_out_of_bounds_index_is_index_error(idx):
    with pytest.raises(IndexError, match="out of bounds"):
        evaluate(lambda x: x[idx], M)


def test_other_index_errors():
    with pytest.raises(IndexError, match="too many indices"):
        evaluate(lambda x: x[0, 0, 0], M)
    with pytest.raises(IndexError, match="single ellipsis"):
        evaluate(lambda x: x[..., 0, ...], M)
    with pytest.raises(IndexError, match="only integers"):
        evaluate(lambda x: x[np.array([0.5])], M)
    with pytest.raises(IndexError, match="boolean index did not match"):
        evaluate(lambda x: x[np.array([True, False])], M)
    with pytest.raises(fg.ConcretizationError, match="slice bound"):
        fg.vmap(lambda x, i: x[i:], in_axes=(None, 0))(M, np.array([1, 1]))
    np.testing.assert_array_equal(evaluate(lambda x, i: x[i:], M, np.array(1)), M[1:])


def test_traced_boolean_mask_uses_the_calls_value_or_is_refused_under_vmap():
    np.testing.assert_array_equal(evaluate(lambda x: x[x > 0], M), M[M > 0])
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(x[x > 0]))(M), (M > 0) * 1.0)
    with pytest.raises(fg.ConcretizationError, match=r"fnp\.where"):
        fg.vmap(lambda x: fnp.sum(x[x > 0]))(M)


def test_item_assignment_is_mutation_error():
    def f(x):
        x[0] = 1.0
        return fnp.sum(x)
    with pytest.raises(fg.MutationError, match=r"\.at\["):
        fg.grad(f)(M)

    def g(x):
        x.at[0] = 1.0
        return x
    with pytest.raises(fg.MutationError, match=r"\.at\["):
        evaluate(g, M)

    def h(x):
        x[1:] += 1.0
        return x
    with pytest.raises(fg.MutationError, match=r"\.at\["):
        evaluate(h, M)


@pytest.mark.parametrize("call", [lambda x: x.nonzero(), lambda x: np.nonzero(x > 0),
                                  lambda x: np.argwhere(x), lambda x: np.flatnonzero(x)],
                         ids=["method", "nonzero", "argwhere", "flatnonzero"])
def test_value_dependent_index_functions_use_the_calls_value_or_are_refused_under_vmap(call):
    for got, want in zip(np.atleast_1d(evaluate(call, M)), np.atleast_1d(call(M))):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(fg.ConcretizationError, match=r"fnp\.where"):
        fg.vmap(call)(M)
    np.testing.assert_array_equal(fnp.nonzero(M > 0)[0], np.nonzero(M > 0)[0])   # plain arrays


from hypothesis import example, given, settings, strategies as st  # noqa: E402


@st.composite
def _indexed(draw):
    """An array and an index of slices (any start/stop/step), integers, new axes and integer
    index arrays (negative and repeated entries, broadcast shapes), in any order; the index
    arrays are given as ("array", k)."""
    shape = tuple(draw(st.lists(st.integers(2, 4), min_size=1, max_size=3)))
    dims = draw(st.integers(max(1, len(shape) - 1), len(shape)))
    idx, arrays = [], []
    bshape = draw(st.sampled_from([(3,), (2, 1), (2, 3), (), (1,)]))
    for n in shape[:dims]:
        if draw(st.integers(0, 3)) == 0:
            idx.append(None)
        kind = draw(st.sampled_from(["arr", "slice", "int", "arr"]))
        if kind == "slice":
            idx.append(slice(draw(st.none() | st.integers(-n - 1, n + 1)),
                             draw(st.none() | st.integers(-n - 1, n + 1)),
                             draw(st.sampled_from([2, -1, None, 1, -2]))))
        elif kind == "int":
            idx.append(draw(st.integers(-n, n - 1)))
        else:
            ashape = bshape[draw(st.integers(0, len(bshape))):]
            size = int(np.prod(ashape))
            arrays.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=size,
                                                 max_size=size))).reshape(ashape))
            idx.append(("array", len(arrays) - 1))
    return shape, idx, arrays


_A = ("array", 0)
_IDX_EXAMPLES = [                           # NumPy's placements, each at least once
    ((4, 3), [slice(None, None, 2), _A], [np.array([0, -1, 1, 1])]),         # adjacent: in place
    ((3, 4, 2), [_A, slice(3, 0, -1), ("array", 1)], [np.array([[2], [0]]), np.array([1, -2])]),
    ((3, 4, 2), [1, slice(None), _A], [np.array([[1, 0, 1]])]),               # separated: first
    ((3, 3, 4), [None, _A, 2, slice(-1, None, -2)], [np.array([2, 2, -3])]),  # int beside arrays
]


@settings(max_examples=8, deadline=None)
@example(case=_IDX_EXAMPLES[0], seed=0)
@example(case=_IDX_EXAMPLES[1], seed=1)
@example(case=_IDX_EXAMPLES[2], seed=2)
@example(case=_IDX_EXAMPLES[3], seed=3)
@given(case=_indexed(), seed=st.integers(0, 2 ** 16))
def test_compiled_gather_and_scatter_equal_the_interpreter(case, seed):
    """x[idx], x.at[idx].set/add/multiply and the gradient of a gather compile natively for
    every index of slices, integers, new axes and integer arrays (NumPy's placement of the
    advanced dimensions, repeated positions: the last write wins, updates accumulate), and
    give the interpreter's values, with index arrays as arguments (checked at run time)."""
    shape, idx, arrays = case
    r = np.random.default_rng(seed)
    x = r.standard_normal(shape)

    def index(ix):
        return tuple(ix[i[1]] if isinstance(i, tuple) else i for i in idx)

    region = x[index(arrays)].shape
    u = r.standard_normal(region)

    def f(x, u, *ix):
        at = x.at[index(ix)]
        g = fg.grad(lambda x: fnp.sum(fnp.sin(x[index(ix)]) * u))(x)
        return x[index(ix)], at.set(u), at.add(u), at.multiply(u), g

    jf = fg.jit(f)
    assert "objmode" not in jf.lower(x, u, *arrays).source
    for got, want in zip(jf(x, u, *arrays), evaluate(f, x, u, *arrays)):
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
