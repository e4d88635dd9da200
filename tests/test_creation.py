"""Array creation with traced values, and degenerate programs (identity, constants)."""
import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from conftest import check_grads, rand


def test_like_functions_on_traced_values():
    x = rand((2, 3), dtype=np.float32)
    for name, value in (("zeros_like", 0), ("ones_like", 1)):
        got = evaluate(lambda x: getattr(fnp, name)(x), x)
        assert got.dtype == np.float32 and np.all(got == value)
    got = evaluate(lambda x: fnp.full_like(x, 7.0, dtype=np.float64), x)
    assert got.dtype == np.float64 and np.all(got == 7.0)
    g = fg.grad(lambda s: fnp.sum(fnp.full_like(x, s) * x))(2.0)   # traced fill value
    assert np.isclose(g, x.sum(dtype=np.float64), rtol=1e-6)


def test_array_of_traced_values_stacks():
    f = lambda x: fnp.array([[x[0], x[1] ** 2], [1.0, x[0] * x[1]]])
    x = np.array([2.0, 3.0])
    np.testing.assert_array_equal(evaluate(f, x), [[2.0, 9.0], [1.0, 6.0]])
    check_grads(f, (x,), order=2)
    assert evaluate(lambda x: fnp.asarray(x, dtype=np.float32), x).dtype == np.float32


def test_constructors_make_constants():
    f = lambda x: fnp.sum(x * fnp.arange(3) + fnp.eye(3)[0] + fnp.linspace(0, 1, 3))
    np.testing.assert_array_equal(fg.grad(f)(np.ones(3)), [0.0, 1.0, 2.0])


def test_identity_and_constant_functions():
    assert fg.grad(lambda x: x)(3.0) == 1.0
    assert fg.grad(lambda x: 3.0)(1.0) == 0.0
    assert fg.grad(lambda x, y: y, 1)(1.0, 2.0) == 1.0
    out, f_vjp = fg.vjp(lambda x: (x, 2.0), np.ones(2))
    np.testing.assert_array_equal(f_vjp((np.full(2, 3.0), 1.0))[0], [3.0, 3.0])


def test_astype_method_and_function():
    x = rand((3,))
    y = evaluate(lambda x: x.astype(np.float32) * 2, x)
    assert y.dtype == np.float32
    g = fg.grad(lambda x: fnp.sum(fnp.astype(x, np.float32) ** 2))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * x, rtol=1e-6)
    assert fg.grad(lambda x: fnp.sum(x.astype(int) * x))(x).dtype == np.float64
