"""fg.lax (fg.map, fg.associative_scan, fg.top_k, dynamic_slice, dynamic_update_slice):
against NumPy and sequential loops, compiled and batched, derivatives to second order."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads, rand


def _linear(x, y):
    """(a, b) pairs composing h -> a h + b: associative."""
    return (x[0] * y[0], y[0] * x[1] + y[1])


def test_associative_scan_equals_the_sequential_scans():
    x = rand((7, 3), seed=1)
    np.testing.assert_allclose(fg.jit(lambda v: fg.associative_scan(fnp.add, v))(x),
                               np.cumsum(x, axis=0), rtol=1e-13)
    np.testing.assert_array_equal(fg.associative_scan(fnp.maximum, x, axis=1),
                                  np.maximum.accumulate(x, axis=1))
    np.testing.assert_allclose(fg.associative_scan(fnp.multiply, x, reverse=True),
                               np.cumprod(x[::-1], axis=0)[::-1], rtol=1e-13)
    a, b = rand((9,), "unit", seed=2), rand((9,), seed=3)
    _, h = fg.jit(lambda a, b: fg.associative_scan(_linear, (a, b)))(a, b)
    want, s = [], 0.0
    for t in range(9):
        s = a[t] * s + b[t]
        want.append(s)
    np.testing.assert_allclose(h, want, rtol=1e-13)
    check_grads(lambda a, b: fg.associative_scan(_linear, (a, b))[1], (a, b), order=2)
    batched = fg.vmap(lambda v: fg.associative_scan(fnp.add, v))(x.T)
    np.testing.assert_allclose(batched, np.cumsum(x.T, axis=1), rtol=1e-13)
    with pytest.raises(ValueError, match="same length"):
        fg.associative_scan(_linear, (a, b[:3]))


def test_map_is_a_loop_over_the_leading_axis():
    xs = {"a": rand((4, 3), seed=4), "b": rand((4,), seed=5)}
    f = lambda d: fnp.sum(fnp.sin(d["a"]) * d["b"])        # noqa: E731
    want = np.array([f({"a": xs["a"][i], "b": xs["b"][i]}) for i in range(4)])
    np.testing.assert_allclose(fg.jit(lambda d: fg.map(f, d))(xs), want, rtol=1e-14)
    check_grads(lambda a: fg.map(lambda r: fnp.sum(r ** 3), a), (xs["a"],), order=2)


def test_top_k():
    x = np.array([[0.3, 2.0, -1.0, 2.0, 0.7], [5.0, 4.0, 3.0, 2.0, 1.0]])
    values, idx = fg.jit(lambda v: fg.top_k(v, 3))(x)
    np.testing.assert_array_equal(idx, [[1, 3, 4], [0, 1, 2]])
    np.testing.assert_array_equal(values, np.take_along_axis(x, idx, -1))
    check_grads(lambda v: fg.top_k(v, 2)[0], (rand((2, 5), seed=6),), order=2)
    with pytest.raises(ValueError, match="k must be"):
        fg.top_k(x, 6)


def test_dynamic_slice_and_update_with_traced_starts():
    x = np.arange(20.0).reshape(4, 5)
    got = fg.vmap(lambda i: fg.lax.dynamic_slice(x, (i, i + 1), (2, 3)))(np.array([0, 1, 3]))
    np.testing.assert_array_equal(got, [x[0:2, 1:4], x[1:3, 2:5], x[2:4, 2:5]])   # clipped
    upd = fg.jit(lambda a, i: fg.lax.dynamic_update_slice(a, np.ones((2, 2)), (i, 3)))(x, 1)
    want = x.copy()
    want[1:3, 3:5] = 1.0
    np.testing.assert_array_equal(upd, want)
    loop = fg.jit(lambda a: fg.fori_loop(0, 3, lambda i, c: fg.lax.dynamic_update_slice(
        c, fg.lax.dynamic_slice(c, (i,), (1,)) + 10.0, (i + 1,)), a))(np.zeros(5))
    np.testing.assert_array_equal(loop, [0.0, 10.0, 20.0, 30.0, 0.0])
    check_grads(lambda a: fg.lax.dynamic_update_slice(a, a[:2] ** 2, (2,)), (rand((5,), seed=7),),
                order=2)
