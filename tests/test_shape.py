"""NumPy's shape functions on traced arrays: forward values against NumPy, derivatives to order 2.

Each case is `fn(L, *args)` where L is a NumPy-like namespace. NumPy itself (L = np on plain
arrays) is the oracle; the same code is then run traced with L = np (dispatch through
__array_function__) and with L = funcgrad.numpy, and funcgrad.numpy is run on plain arrays.
"""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.numpy import _arrange as arrange, _pad as pad, _shape as np_shape
from funcgrad.primitives import shape
from funcgrad.tree_util import tree_flatten, tree_map
from conftest import check_grads, rand

SHAPE_FUNCTIONS = shape.__all__ + np_shape.__all__ + arrange.__all__ + pad.__all__

V = rand((5,), seed=1)
V4 = rand((4,), seed=2)
S = rand((), seed=3)
M = rand((3, 4), seed=4)
M2 = rand((3, 4), seed=5)
SQ = rand((4, 4), seed=6)
T = rand((2, 3, 4), seed=7)
T2 = rand((2, 3, 4), seed=8)
B = rand((2, 3, 4, 4), seed=9)
C = np.arange(12.0).reshape(3, 4)          # a constant (never traced) NumPy operand
CI = np.arange(8).reshape(2, 4)            # an integer constant

# (id, fn(L, *args), args): every shape function of funcgrad/primitives/shape.py and
# funcgrad/numpy/_shape.py
CASES = [
    # reshape and friends
    ("reshape", lambda L, a: L.reshape(a, (4, 3)), (M,)),
    ("reshape_-1", lambda L, a: L.reshape(a, (2, -1, 2)), (T,)),
    ("reshape_int", lambda L, a: L.reshape(a, -1), (M,)),
    ("reshape_F", lambda L, a: L.reshape(a, (4, 6), order="F"), (T,)),
    ("reshape_method", lambda L, a: a.reshape(6, -1), (T,)),
    ("ravel", lambda L, a: L.ravel(a), (T,)),
    ("ravel_F", lambda L, a: L.ravel(a, order="F"), (M,)),
    ("ravel_0d", lambda L, a: L.ravel(a), (S,)),
    ("transpose", lambda L, a: L.transpose(a), (T,)),
    ("transpose_axes", lambda L, a: L.transpose(a, (1, 0, 2)), (T,)),
    ("transpose_neg", lambda L, a: L.transpose(a, (-1, 0, 1)), (T,)),
    ("permute_dims", lambda L, a: L.permute_dims(a, (2, 0, 1)), (T,)),
    ("matrix_transpose", lambda L, a: L.matrix_transpose(a), (T,)),
    ("T", lambda L, a: a.T, (M,)),
    ("swapaxes", lambda L, a: L.swapaxes(a, 0, -1), (T,)),
    ("moveaxis", lambda L, a: L.moveaxis(a, 0, -1), (T,)),
    ("moveaxis_seq", lambda L, a: L.moveaxis(a, [0, 1], [-1, 0]), (T,)),
    ("rollaxis", lambda L, a: L.rollaxis(a, 2, 1), (T,)),
    ("expand_dims", lambda L, a: L.expand_dims(a, 1), (M,)),
    ("expand_dims_tuple", lambda L, a: L.expand_dims(a, (0, -1)), (M,)),
    ("expand_dims_0d", lambda L, a: L.expand_dims(a, 0), (S,)),
    ("squeeze", lambda L, a: L.squeeze(a), (rand((1, 3, 1, 2), seed=10),)),
    ("squeeze_axis", lambda L, a: L.squeeze(a, axis=(0, -2)), (rand((1, 3, 1, 2), seed=11),)),
    ("broadcast_to", lambda L, a: L.broadcast_to(a, (2, 3, 5)), (V,)),
    ("broadcast_to_0d", lambda L, a: L.broadcast_to(a, (3,)), (S,)),
    ("broadcast_arrays", lambda L, a, b: L.broadcast_arrays(a, b, C), (V4, rand((3, 1), seed=12))),
    ("atleast_1d", lambda L, a, b: L.atleast_1d(a, b), (S, M)),
    ("atleast_1d_one", lambda L, a: L.atleast_1d(a), (S,)),
    ("atleast_2d", lambda L, a, b, c: L.atleast_2d(a, b, c), (S, V, M)),
    ("atleast_3d", lambda L, a, b, c, d: L.atleast_3d(a, b, c, d), (S, V, M, T)),
    # joining
    ("concatenate", lambda L, a, b: L.concatenate([a, b], axis=1), (M, M2)),
    ("concatenate_neg_axis", lambda L, a, b: L.concatenate((a, b), axis=-2), (T, T2)),
    ("concatenate_none", lambda L, a, b: L.concatenate([a, b, C], axis=None), (T, M)),
    ("concatenate_numpy_mix", lambda L, a: L.concatenate([C, a, [[1.0] * 4]], 0), (M,)),
    ("concatenate_one", lambda L, a: L.concatenate([a]), (M,)),
    ("concatenate_traced_seq", lambda L, a: L.concatenate(a), (T,)),
    ("concat", lambda L, a, b: L.concat([a, b]), (V, V4)),
    ("stack", lambda L, a, b: L.stack([a, b, C]), (M, M2)),
    ("stack_neg_axis", lambda L, a, b: L.stack((a, b), axis=-1), (M, M2)),
    ("stack_0d", lambda L, a, b: L.stack([a, b, a]), (S, rand((), seed=13))),
    ("unstack", lambda L, a: L.unstack(a, axis=1), (T,)),
    ("hstack", lambda L, a, b: L.hstack([a, b, C]), (M, M2)),
    ("hstack_1d", lambda L, a, b: L.hstack((a, b, [1.0])), (V, V4)),
    ("hstack_0d", lambda L, a, b: L.hstack([a, b]), (S, V)),
    ("vstack", lambda L, a, b: L.vstack([a, b, C[0]]), (M, V4)),
    ("vstack_1d", lambda L, a: L.vstack([a, a * 2]), (V,)),
    ("dstack", lambda L, a, b: L.dstack([a, b]), (M, M2)),
    ("dstack_1d", lambda L, a: L.dstack([a, a]), (V,)),
    ("column_stack", lambda L, a, b, c: L.column_stack([a, b, c]), (rand((3,), seed=14), M, C)),
    ("block", lambda L, a, b: L.block([[a, b], [C, C]]), (M, M2)),
    ("block_1d", lambda L, a, b: L.block([a, b, 1.0]), (V, V4)),
    ("append", lambda L, a, b: L.append(a, b), (M, V)),
    ("append_axis", lambda L, a, b: L.append(a, b, axis=0), (M, M2)),
    # splitting
    ("split", lambda L, a: L.split(a, 2, axis=2), (T,)),
    ("split_indices", lambda L, a: L.split(a, [1, 3, 10], axis=-1), (T,)),
    ("split_neg_indices", lambda L, a: L.split(a, [-2]), (V,)),
    ("array_split", lambda L, a: L.array_split(a, 3), (V,)),
    ("array_split_axis", lambda L, a: L.array_split(a, 3, axis=2), (T,)),
    ("hsplit", lambda L, a: L.hsplit(a, 2), (M,)),
    ("hsplit_1d", lambda L, a: L.hsplit(a, [2]), (V,)),
    ("vsplit", lambda L, a: L.vsplit(a, [1]), (M,)),
    ("dsplit", lambda L, a: L.dsplit(a, 2), (T,)),
    # rearranging
    ("flip", lambda L, a: L.flip(a), (T,)),
    ("flip_axis", lambda L, a: L.flip(a, axis=(0, -1)), (T,)),
    ("fliplr", lambda L, a: L.fliplr(a), (M,)),
    ("flipud", lambda L, a: L.flipud(a), (V,)),
    ("rot90", lambda L, a: L.rot90(a), (M,)),
    ("rot90_k2", lambda L, a: L.rot90(a, 2), (M,)),
    ("rot90_k3_axes", lambda L, a: L.rot90(a, 3, axes=(2, 0)), (T,)),
    ("rot90_kneg", lambda L, a: L.rot90(a, -1, axes=(1, 2)), (T,)),
    ("roll", lambda L, a: L.roll(a, 2), (M,)),
    ("roll_axis", lambda L, a: L.roll(a, -1, axis=1), (M,)),
    ("roll_tuple", lambda L, a: L.roll(a, (1, -7, 2), axis=(0, 2, 2)), (T,)),
    ("roll_big", lambda L, a: L.roll(a, 13), (V,)),
    ("tile", lambda L, a: L.tile(a, 3), (V,)),
    ("tile_more_reps", lambda L, a: L.tile(a, (2, 1, 2)), (M,)),
    ("tile_fewer_reps", lambda L, a: L.tile(a, 2), (T,)),
    ("repeat", lambda L, a: L.repeat(a, 2), (M,)),
    ("repeat_axis", lambda L, a: L.repeat(a, 3, axis=-1), (T,)),
    ("repeat_counts", lambda L, a: L.repeat(a, [2, 0, 1], axis=0), (M,)),
    ("repeat_method", lambda L, a: a.repeat(2, axis=1), (M,)),
    # diagonals and triangles
    ("diag_1d", lambda L, a: L.diag(a), (V,)),
    ("diag_1d_k", lambda L, a: L.diag(a, 2), (V,)),
    ("diag_1d_kneg", lambda L, a: L.diag(a, -1), (V,)),
    ("diag_2d", lambda L, a: L.diag(a), (M,)),
    ("diag_2d_k", lambda L, a: L.diag(a, 1), (M,)),
    ("diag_2d_kneg", lambda L, a: L.diag(a, k=-2), (M,)),
    ("diagflat", lambda L, a: L.diagflat(a, -1), (rand((2, 2), seed=15),)),
    ("triu", lambda L, a: L.triu(a), (SQ,)),
    ("triu_k", lambda L, a: L.triu(a, 1), (M,)),
    ("tril", lambda L, a: L.tril(a), (SQ,)),
    ("tril_kneg", lambda L, a: L.tril(a, -1), (M,)),
    ("tril_batched", lambda L, a: L.tril(a, 1), (B,)),
    ("triu_batched", lambda L, a: L.triu(a, -1), (B,)),
    ("tril_1d", lambda L, a: L.tril(a), (V,)),
    # pad
    ("pad_int", lambda L, a: L.pad(a, 1), (M,)),
    ("pad_pair", lambda L, a: L.pad(a, (1, 2)), (M,)),
    ("pad_pairs", lambda L, a: L.pad(a, ((0, 1), (2, 0)), constant_values=1.5), (M,)),
    ("pad_dict", lambda L, a: L.pad(a, {1: (1, 2)}), (M,)),
    ("pad_constant_per_axis", lambda L, a: L.pad(a, ((1, 2), (2, 1)),
                                                  constant_values=((1, 2), (3, 4))), (M,)),
    ("pad_constant_traced", lambda L, a, c: L.pad(a, 1, constant_values=c), (M, S)),
    ("pad_empty_mode_shape", lambda L, a: L.pad(a, 2, mode="empty").shape, (M,)),
    ("pad_edge", lambda L, a: L.pad(a, ((1, 2), (3, 1)), mode="edge"), (M,)),
    ("pad_reflect", lambda L, a: L.pad(a, ((2, 1), (3, 0)), mode="reflect"), (M,)),
    ("pad_reflect_wide", lambda L, a: L.pad(a, (7, 9), mode="reflect"), (V4,)),
    ("pad_symmetric", lambda L, a: L.pad(a, ((2, 5), (1, 1)), mode="symmetric"), (M,)),
    ("pad_wrap", lambda L, a: L.pad(a, ((4, 2), (7, 1)), mode="wrap"), (M,)),
    ("pad_reflect_odd", lambda L, a: L.pad(a, ((5, 2), (1, 6)), mode="reflect",
                                           reflect_type="odd"), (M,)),
    ("pad_symmetric_odd", lambda L, a: L.pad(a, (3, 6), mode="symmetric", reflect_type="odd"),
     (V4,)),
    ("pad_linear_ramp", lambda L, a: L.pad(a, ((2, 1), (1, 3)), mode="linear_ramp",
                                           end_values=((1, 2), (3, -4))), (M,)),
    ("pad_maximum", lambda L, a: L.pad(a, ((1, 2), (2, 1)), mode="maximum"), (M,)),
    ("pad_minimum", lambda L, a: L.pad(a, 2, mode="minimum", stat_length=2), (M,)),
    ("pad_mean", lambda L, a: L.pad(a, ((1, 2), (2, 1)), mode="mean",
                                    stat_length=((1, 2), (3, 2))), (M,)),
    ("pad_median", lambda L, a: L.pad(a, ((1, 2), (2, 1)), mode="median"), (M,)),
    ("pad_3d_axis", lambda L, a: L.pad(a, ((0, 0), (1, 1), (0, 2)), mode="edge"), (T,)),
    # insert / delete
    ("delete", lambda L, a: L.delete(a, 1), (V,)),
    ("delete_axis", lambda L, a: L.delete(a, [0, 2], axis=1), (M,)),
    ("delete_slice_flat", lambda L, a: L.delete(a, slice(1, None, 3)), (M,)),
    ("delete_mask", lambda L, a: L.delete(a, np.array([True, False, True]), axis=0), (M,)),
    ("insert", lambda L, a, b: L.insert(a, 2, b), (V, S)),
    ("insert_row", lambda L, a, b: L.insert(a, 1, b, axis=0), (M, V4)),
    ("insert_column", lambda L, a, b: L.insert(a, [1, 3, 3], b, axis=1), (M, rand((3,), seed=16))),
    ("insert_flat", lambda L, a, b: L.insert(a, [0, 5], b), (M, rand((2,), seed=17))),
    ("insert_constant", lambda L, a: L.insert(a, -1, 7.0, axis=1), (M,)),
    # queries (values known while tracing)
    ("shape_queries", lambda L, a: a * (L.shape(a)[0] + L.ndim(a) + L.size(a) + L.size(a, -1)),
     (T,)),
]

# forward-only cases: dtypes, integers, mixing with integer constants
FORWARD_ONLY = [
    ("concatenate_promote_f32_int", lambda L, a: L.concatenate([a, CI]),
     (M[:2].astype(np.float32),)),
    ("concatenate_promote_f32_f64", lambda L, a, b: L.concatenate([a, b]),
     (V.astype(np.float32), V4)),
    ("concatenate_dtype", lambda L, a, b: L.concatenate([a, b], dtype=np.float32), (V, V4)),
    ("concatenate_int_traced", lambda L, a: L.concatenate([a, CI], axis=1), (CI * 3,)),
    ("stack_f32", lambda L, a: L.stack([a, a]), (M.astype(np.float32),)),
    ("vstack_dtype", lambda L, a: L.vstack([a, a], dtype=np.float32), (V,)),
    ("pad_int", lambda L, a: L.pad(a, 2, constant_values=1.7), (CI,)),
    ("pad_int_mean", lambda L, a: L.pad(a, 1, mode="mean"), (CI * 3 + 1,)),
    ("pad_int_ramp", lambda L, a: L.pad(a, 2, mode="linear_ramp", end_values=5), (CI * 3,)),
    ("pad_int_odd", lambda L, a: L.pad(a, 3, mode="reflect", reflect_type="odd"), (CI * 3,)),
    ("pad_f32_constant", lambda L, a: L.pad(a, 1, constant_values=2), (M.astype(np.float32),)),
    ("insert_int_values_cast", lambda L, a: L.insert(a, 1, 2.9), (CI,)),
    ("triu_int", lambda L, a: L.triu(a), (CI,)),
    ("tril_bool", lambda L, a: L.tril(a > 2), (CI,)),
    ("diag_int", lambda L, a: L.diag(a), (CI[0],)),
    ("repeat_f32", lambda L, a: L.repeat(a, [1, 2], axis=0), (M[:2].astype(np.float32),)),
    ("tile_int", lambda L, a: L.tile(a, (2, 2)), (CI,)),
    ("flip_int", lambda L, a: L.flip(a, 1), (CI,)),
    ("split_int", lambda L, a: L.split(a, 2, axis=1), (CI,)),
    ("roll_int", lambda L, a: L.roll(a, 1, axis=1), (CI,)),
]


def _ids(cases):
    return [c[0] for c in cases]


def _assert_same(got, want, what):
    g_leaves, g_tree = tree_flatten(got)
    w_leaves, w_tree = tree_flatten(want)
    assert len(g_leaves) == len(w_leaves), f"{what}: {got!r} vs {want!r}"
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), what
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: shape {g.shape} != NumPy's {w.shape}"
        assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != NumPy's {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("name,fn,args", CASES + FORWARD_ONLY, ids=_ids(CASES + FORWARD_ONLY))
def test_forward_matches_numpy(name, fn, args):
    want = fn(np, *args)
    _assert_same(evaluate(lambda *a: fn(np, *a), *args), want, "traced, np.<name> dispatch")
    _assert_same(evaluate(lambda *a: fn(fnp, *a), *args), want, "traced, funcgrad.numpy")
    _assert_same(fn(fnp, *args), want, "funcgrad.numpy on plain arrays")


def _smooth(fn):
    """fn followed by y -> y * sin(y) on every float output, so second derivatives are not zero
    and the second-order check runs the vjp of every vjp rule fn uses."""
    def f(*args):
        out = fn(fnp, *args)
        return tree_map(lambda y: y * fnp.sin(y) if np.dtype(y.dtype).kind == "f" else y, out)
    return f


GRAD_CASES = [c for c in CASES if c[0] not in ("pad_empty_mode_shape",)]


@pytest.mark.parametrize("name,fn,args", GRAD_CASES, ids=_ids(GRAD_CASES))
def test_grads_order2(name, fn, args):
    check_grads(_smooth(fn), args, order=2)


def test_every_shape_function_has_a_case():
    missing = [n for n in SHAPE_FUNCTIONS if not any(c[0].startswith(n) for c in CASES)]
    assert not missing, f"shape functions without a test case: {missing}"


def test_exported_to_namespace_with_docstrings():
    for name in SHAPE_FUNCTIONS:
        fn = getattr(fnp, name)
        assert fn.__doc__ and ">>>" in fn.__doc__, f"fnp.{name} lacks a docstring with an example"


def test_split_returns_list_of_tracers_inside_grad():
    def f(x):
        a, b, c = np.split(x, 3)
        return np.sum(a * b * c)
    x = rand((6,), seed=20)
    g = fg.grad(f)(x)
    np.testing.assert_allclose(g, np.concatenate([x[2:4] * x[4:], x[:2] * x[4:], x[:2] * x[2:4]]))


def test_pad_constant_values_gradient():
    # d/dc sum(pad(x, 1, constant_values=c)) = number of padded cells
    g = fg.grad(lambda c, x: fnp.sum(fnp.pad(x, ((1, 2), (0, 1)), constant_values=c)))(1.0, M)
    assert np.isclose(g, 6 * 5 - 12)


def test_diag_roundtrip_and_trace_of_tril():
    A = rand((4, 4), seed=21)
    np.testing.assert_allclose(evaluate(lambda a: fnp.diag(fnp.diag(a)), A), np.diag(np.diag(A)))
    g = fg.grad(lambda a: fnp.sum(fnp.tril(a) ** 2))(A)
    np.testing.assert_allclose(g, 2 * np.tril(A))


@pytest.mark.parametrize("call,exc,match", [
    (lambda x: np.split(x, 4), ValueError, "equal division"),
    (lambda x: np.vsplit(x[0], 2), ValueError, "2 or more dimensions"),
    (lambda x: np.reshape(x, (4, -1)), ValueError, "cannot reshape"),
    (lambda x: np.transpose(x, (0, 0)), ValueError, "axes don't match|repeated axis"),
    (lambda x: np.swapaxes(x, 0, 3), np.exceptions.AxisError, "out of bounds"),
    (lambda x: np.concatenate([x, x[None]]), ValueError, "same number of dimensions"),
    (lambda x: np.stack([x, x[:1]]), ValueError, "same shape"),
    (lambda x: np.squeeze(x, 0), ValueError, "size not equal to one"),
    (lambda x: np.pad(x, -1), ValueError, "negative"),
    (lambda x: np.pad(x, 1, mode="nope"), ValueError, "not supported"),
    (lambda x: np.pad(x, 1, mode="edge", constant_values=1), ValueError, "unsupported keyword"),
    (lambda x: np.pad(x, 1, mode=lambda *a: None), NotImplementedError, "callable"),
    (lambda x: np.diag(x[None]), ValueError, "1- or 2-d"),
    (lambda x: np.repeat(x, [1, 2]), ValueError, "broadcast"),
    (lambda x: np.tile(x, -1), ValueError, "negative"),
    (lambda x: np.rot90(x, axes=(0, 0)), ValueError, "different"),
    (lambda x: np.concatenate([x, x], out=np.zeros(6)), fg.MutationError, "out="),
])
def test_shape_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        evaluate(call, rand((2, 3), seed=22))


@pytest.mark.parametrize("call", [
    lambda x, n: np.roll(x, n),
    lambda x, n: np.repeat(x, n),
    lambda x, n: np.split(x, n),
    lambda x, n: np.pad(x, n),
    lambda x, n: np.tile(x, n),
    lambda x, n: np.delete(x, n),
])
def test_traced_shape_arguments_are_refused_inside_vmap(call):
    x = rand((4,), seed=23)
    with pytest.raises(fg.ConcretizationError, match="traced"):
        fg.vmap(lambda n: call(x, n))(np.array([2, 2]))
    got, want = evaluate(call, x, np.array(2)), call(x, 2)    # a call's own value: used
    listed = lambda v: v if isinstance(v, list) else [v]
    for g, w in zip(listed(got), listed(want)):
        np.testing.assert_array_equal(g, w)
