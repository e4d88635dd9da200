"""Implicit differentiation: the derivative of a solution through the equation it solves, not
through the iterations that found it (fg.custom_root, fg.custom_linear_solve; JAX's
signatures).

If x*(theta) solves f(x, theta) = 0, then dx*/dtheta = -(df/dx)^-1 df/dtheta at x*. The
parameters theta are whatever f closes over: tracing f finds them (the values of enclosing
transforms it captures), so the user writes `f(x)` only. Reverse mode solves the transposed
system (df/dx)^T lam = ct with the user's `tangent_solve` applied to the transposed linear map,
then gives theta the cotangent -(df/dtheta)^T lam. The rules are written with funcgrad
operations, so derivatives of every order follow.
"""
from __future__ import annotations

from ..interpreter import eval_program
from ..ir import aval_of
from ..tracer import trace_flat
from ..tree_util import tree_flatten, tree_unflatten
from .custom import custom_vjp, vjp_of
from .subprograms import as_array, strong

__all__ = ["custom_root", "custom_linear_solve"]


def _closed(fn, example):
    """fn (a function of one pytree like `example`) as fn_at(params, x) with the values it
    closes over from enclosing transforms made the explicit `params`."""
    leaves, tree = tree_flatten(example)
    box = {}

    def flat(*xs):
        out_leaves, box["tree"] = tree_flatten(fn(tree_unflatten(tree, list(xs))))
        return out_leaves
    prog, params = trace_flat(flat, [strong(aval_of(as_array(x))) for x in leaves])

    def fn_at(theta, x):
        return tree_unflatten(box["tree"], list(eval_program(prog, *theta, *tree_flatten(x)[0])))
    return fn_at, tuple(params)


def _negated(cts):
    return tuple(None if c is None else -c for c in cts)


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """The root x of f(x) = 0 found by `solve(f, initial_guess)`, differentiated implicitly.

    tangent_solve(g, y) solves the linear system g(x) = y, g being f's Jacobian (or its
    transpose, in reverse mode) as a linear function: `lambda g, y: y / g(1.0)` for a scalar,
    a dense solve of the materialised matrix for small vectors. With has_aux, solve returns
    (root, aux) and aux is not differentiated.

        >>> def sqrt(a):
        ...     newton = lambda f, x0: fg.while_loop(lambda x: fnp.abs(f(x)) > 1e-12,
        ...                                          lambda x: x - f(x) / (2 * x), x0)
        ...     return fg.custom_root(lambda x: x * x - a, 1.0, newton, lambda g, y: y / g(1.0))
        >>> fg.grad(sqrt)(2.0)               # 1 / (2 sqrt 2), without differentiating the loop
    """
    return _implicit(f, initial_guess, solve, tangent_solve, has_aux, start_gets_ct=False)


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """x with matvec(x) = b, computed by `solve(matvec, b)` and differentiated implicitly
    with respect to b and to whatever matvec closes over. Reverse mode needs the transposed
    system: `transpose_solve(vecmat, b)`, or `symmetric=True` to reuse `solve`.

        >>> A, b = np.array([[4.0, 1.0], [1.0, 3.0]]), np.ones(2)
        >>> def dense_solve(mv, b):          # materialise the matrix from mv, then solve
        ...     return fnp.linalg.solve(fnp.stack([mv(e) for e in np.eye(b.shape[0])], axis=1), b)
        >>> x = fg.custom_linear_solve(lambda v: A @ v, b, dense_solve, symmetric=True)

    solve and transpose_solve must reach the matrix through the function they are given (they
    also run in the backward pass, where the forward pass's traced values are gone).
    """
    if transpose_solve is None and not symmetric:
        def transpose_solve(vecmat, ct):
            raise TypeError("custom_linear_solve: reverse mode needs the transposed system: "
                            "give transpose_solve, or symmetric=True when matvec is symmetric")
    elif transpose_solve is None:
        transpose_solve = solve
    return _implicit(matvec, b, solve, transpose_solve, has_aux, start_gets_ct=True)


def _implicit(fn, start, solve, transposed_solve, has_aux, start_gets_ct):
    """solve(lambda x: fn(x), start), differentiated through fn's Jacobian in x at the
    solution x: lam = transposed_solve(v -> (dfn/dx)^T v, ct), the values fn closes over get
    -(dfn/dtheta)^T lam, and `start` gets lam when start_gets_ct (the right-hand side b of a
    linear system fn(x) - b = 0), nothing otherwise (a root's initial guess)."""
    fn_at, theta = _closed(fn, start)

    def run(theta, start):
        return solve(lambda x: fn_at(theta, x), start)

    def fwd(theta, start):
        out = run(theta, start)
        return out, (theta, out[0] if has_aux else out)

    def bwd(res, ct):
        theta, x = res
        ct = ct[0] if has_aux else ct
        lam = transposed_solve(lambda v: vjp_of(lambda y: fn_at(theta, y), [x], v)[0], ct)
        theta_ct = _negated(vjp_of(lambda *th: fn_at(th, x), theta, lam))
        return theta_ct, (lam if start_gets_ct else None)

    return custom_vjp(run).defvjp(fwd, bwd)(theta, start)
