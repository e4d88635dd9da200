"""fg.custom_root and fg.custom_linear_solve: derivatives through the equation the solution
solves, checked against finite differences and closed forms at first and second order in both
modes, against differentiating the unrolled iterations, and shown not to differentiate the
solver's own loop."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads


def newton(f, x0):
    """Scalar Newton iteration in a while_loop (its derivative uses fg.grad of f)."""
    df = fg.grad(f)
    return fg.while_loop(lambda x: fnp.abs(f(x)) > 1e-13, lambda x: x - f(x) / df(x), x0)


def scalar_tangent_solve(g, y):
    return y / g(1.0)


def cube_root(a):
    return fg.custom_root(lambda x: x ** 3 - a, 1.0, newton, scalar_tangent_solve)


def test_custom_root_value_and_closed_form_derivatives():
    a = 5.0
    np.testing.assert_allclose(cube_root(a), a ** (1 / 3), rtol=1e-13)
    np.testing.assert_allclose(fg.grad(cube_root)(a), a ** (-2 / 3) / 3, rtol=1e-12)
    np.testing.assert_allclose(fg.grad(fg.grad(cube_root))(a), -2 / 9 * a ** (-5 / 3), rtol=1e-10)
    np.testing.assert_allclose(fg.jit(fg.grad(cube_root))(a), a ** (-2 / 3) / 3, rtol=1e-12)
    np.testing.assert_allclose(fg.jvp(cube_root, (a,), (1.0,))[1], a ** (-2 / 3) / 3, rtol=1e-12)


def test_custom_root_with_finite_differences_both_modes_second_order():
    check_grads(cube_root, (3.0,), order=2, modes=("fwd", "rev"))


def _fixed_point_problem():
    """x = tanh(W x + b): a vector root of F(x) = x - tanh(W x + b), solved by iteration."""
    rng = np.random.default_rng(0)
    W = 0.3 * rng.normal(size=(3, 3))

    def solve(F, x0):      # fixed-point iteration of x <- x - F(x)
        return fg.fori_loop(0, 200, lambda i, x: x - F(x), x0)

    def dense_tangent_solve(g, y):
        return fnp.linalg.solve(fnp.stack([g(e) for e in np.eye(3)], axis=1), y)

    def layer(W, b):
        return fg.custom_root(lambda x: x - fnp.tanh(W @ x + b), fnp.zeros(3), solve,
                              dense_tangent_solve)

    def unrolled(W, b):
        return solve(lambda x: x - fnp.tanh(W @ x + b), fnp.zeros(3))
    return W, np.array([0.5, -0.2, 0.1]), layer, unrolled


def test_custom_root_vector_fixed_point_equals_unrolled_differentiation():
    W, b, layer, unrolled = _fixed_point_problem()
    loss = lambda W, b: fnp.sum(layer(W, b) ** 2)
    ref = lambda W, b: fnp.sum(unrolled(W, b) ** 2)
    got, want = fg.grad(loss, argnums=(0, 1))(W, b), fg.grad(ref, argnums=(0, 1))(W, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-14)
    check_grads(layer, (W, b), order=2, modes=("fwd", "rev"))


def test_custom_root_does_not_differentiate_the_solver():
    """The solver's loop may be non-differentiable (here: stop_gradient everywhere, an
    integer iteration count): only f's derivative is used."""
    def opaque_solve(f, x0):
        x = x0
        for _ in range(60):
            x = fg.stop_gradient(x - f(x) / (3 * x * x))
        return x
    root = lambda a: fg.custom_root(lambda x: x ** 3 - a, 1.0, opaque_solve, scalar_tangent_solve)
    np.testing.assert_allclose(fg.grad(root)(8.0), 1 / 12, rtol=1e-12)


def test_custom_root_has_aux():
    def solve(f, x0):
        return newton(f, x0), 7.0
    root, aux = fg.custom_root(lambda x: x ** 2 - 9.0, 1.0, solve, scalar_tangent_solve,
                               has_aux=True)
    assert aux == 7.0 and abs(root - 3.0) < 1e-12
    g = fg.grad(lambda a: fg.custom_root(lambda x: x ** 2 - a, 1.0, solve, scalar_tangent_solve,
                                         has_aux=True)[0])(9.0)
    np.testing.assert_allclose(g, 1 / 6, rtol=1e-12)


def dense_solve(mv, b):
    return fnp.linalg.solve(fnp.stack([mv(e) for e in np.eye(b.shape[0])], axis=1), b)


def test_custom_linear_solve_matches_differentiating_the_solve():
    A = np.array([[4.0, 1.0, 0.0], [0.5, 3.0, 0.2], [0.1, 0.0, 2.0]])
    b = np.array([1.0, 2.0, -1.0])
    ours = lambda A, b: fg.custom_linear_solve(lambda v: A @ v, b, dense_solve,
                                               transpose_solve=dense_solve)
    ref = lambda A, b: fnp.linalg.solve(A, b)
    np.testing.assert_allclose(ours(A, b), np.linalg.solve(A, b), rtol=1e-14)
    loss = lambda f: (lambda A, b: fnp.sum(f(A, b) ** 3))
    for g, w in zip(fg.grad(loss(ours), argnums=(0, 1))(A, b), fg.grad(loss(ref), argnums=(0, 1))(A, b)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)
    check_grads(ours, (A, b), order=2, modes=("fwd", "rev"))
    sym = A + A.T
    check_grads(lambda b: fg.custom_linear_solve(lambda v: sym @ v, b, dense_solve,
                                                 symmetric=True), (b,), order=2)


def test_custom_linear_solve_without_a_transposed_solve_says_what_is_missing():
    A, b = np.eye(2) * 2.0, np.ones(2)
    f = lambda b: fnp.sum(fg.custom_linear_solve(lambda v: A @ v, b, dense_solve))
    np.testing.assert_allclose(f(b), 1.0)
    with pytest.raises(TypeError, match="transpose_solve, or symmetric=True"):
        fg.grad(f)(b)
