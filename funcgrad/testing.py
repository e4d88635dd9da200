"""Gradient checking against central finite differences (public, like autograd's test_util).

`check_grads(f, args, order=2)` compares the directional derivative <u, J v> from forward mode
(fg.jvp) and from reverse mode (fg.vjp) with a central difference of <u, f(x + eps v)> along a
random direction v, and for order > 1 calls itself on each derivative.

    >>> check_grads(lambda x: fnp.sum(fnp.sin(x) ** 2), (np.ones(3),), order=2)
"""
from __future__ import annotations

import numpy as np

from .api.calls import evaluate
from .api.gradients import vjp
from .api.derivatives import jvp
from .tree_util import tree_flatten, tree_map

__all__ = ["check_grads", "numerical_directional_derivative", "ulp_errors"]


def _float_leaves(tree):
    return [np.asarray(x) for x in tree_flatten(tree)[0] if np.asarray(x).dtype.kind in "fc"]


def _inner(a, b):
    """Re(sum a * b), unconjugated: the pairing under which reverse mode's cotangents are the
    transposes of forward mode's tangents, for complex values too (docs/conventions.md)."""
    return sum(float(np.real(np.sum(x * y))) for x, y in zip(_float_leaves(a), _float_leaves(b)))


def _random_like(tree, rng):
    """A random direction: complex leaves move in both the real and the imaginary direction."""
    def leaf(x):
        x = np.asarray(x)
        if x.dtype.kind == "c":
            return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
        if x.dtype.kind != "f":
            return np.zeros(x.shape, x.dtype)
        return rng.standard_normal(x.shape).astype(x.dtype)
    return tree_map(leaf, tree)


def _scale_add(x, v, s):
    return tree_map(lambda a, b: np.asarray(a + s * b, dtype=np.asarray(a).dtype)
                    if np.asarray(a).dtype.kind in "fc" else a, x, v)


def numerical_directional_derivative(f, args, v, u, eps):
    """Central difference of <u, f(args + t v)> at t = 0.

        >>> fg.testing.numerical_directional_derivative(
        ...     lambda x: x ** 3, (np.array([2.0]),), (np.array([1.0]),), np.array([1.0]), 1e-5)
        # about 12.0
    """
    plus = evaluate(f, *_scale_add(args, v, eps))
    minus = evaluate(f, *_scale_add(args, v, -eps))
    return (_inner(u, plus) - _inner(u, minus)) / (2 * eps)


def check_grads(f, args, order=2, modes=("fwd", "rev"), eps=1e-5, atol=1e-6, rtol=1e-5, seed=0,
                argnums=None):
    """Check f's derivatives up to `order` against finite differences (float64 or complex128
    inputs; a complex input is moved in its real and imaginary directions at once), in
    forward mode (<u, J v> from fg.jvp) and reverse mode (<J^T u, v> from fg.vjp). For order > 1
    each mode's derivative is checked again (reverse-over-reverse, forward-over-forward).
    `argnums` (int or tuple) limits the check to those arguments; the others (integer indices,
    say) are held fixed. Raises AssertionError with f's name, the argument shapes and both
    values on mismatch (PyTorch's torch.autograd.gradcheck and gradgradcheck in one).

        >>> fg.testing.check_grads(lambda x, y: fnp.sum(fnp.sin(x) * y), (np.ones(3), 2.0))
    """
    args = tuple(args)
    if argnums is not None:
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

        def f_of_some(*some):
            full = list(args)
            for i, a in zip(nums, some):
                full[i] = a
            return f(*full)
        f_of_some.__name__ = getattr(f, "__name__", "f")
        return check_grads(f_of_some, [args[i] for i in nums], order, modes, eps, atol, rtol, seed)
    unknown = set(modes) - {"fwd", "rev"}
    if unknown:
        raise ValueError(f"check_grads: unknown modes {sorted(unknown)}")
    for mode in modes:
        rng = np.random.default_rng(seed)
        out = evaluate(f, *args)
        u, v = _random_like(out, rng), _random_like(args, rng)
        if mode == "rev":
            analytic = _inner(vjp(f, *args)[1](u), v)

            def derivative(*a):
                return vjp(f, *a)[1](u)
        else:
            analytic = _inner(u, jvp(f, args, v)[1])

            def derivative(*a):
                return jvp(f, a, v)[1]
        numeric = numerical_directional_derivative(f, args, v, u, eps)
        if not abs(analytic - numeric) <= atol + rtol * abs(numeric):
            shapes = [np.shape(a) for a in tree_flatten(args)[0]]
            raise AssertionError(
                f"check_grads: {mode}-mode derivative of {getattr(f, '__name__', f)} (order "
                f"{order} remaining) disagrees with central differences at argument shapes "
                f"{shapes}: analytic {analytic!r}, numerical {numeric!r}, "
                f"difference {abs(analytic - numeric):.3g}")
        if order > 1:
            derivative.__name__ = f"{mode}_derivative_of_{getattr(f, '__name__', 'f')}"
            derivative.__wrapped__ = f          # (tiering's guards walk f's state through it)
            check_grads(derivative, args, order - 1, (mode,), eps, atol * 10, rtol * 10, seed + 1)


def ulp_errors(got, ref):
    """|got - ref| in ulps of the correctly rounded result (ref in higher precision); inf
    where that result is non-finite (overflow, NaN) and got differs from it.

        >>> fg.testing.ulp_errors(np.float32([1.0, 1.5]), np.array([1.0, 1.5 + 2 ** -22]))
        array([0., 2.])
    """
    with np.errstate(all="ignore"):
        rounded = ref.astype(got.dtype)
        err = (np.abs(got.astype(ref.dtype) - ref)
               / np.spacing(np.abs(rounded)).astype(ref.dtype)).astype(np.float64)
    special = ~np.isfinite(rounded) | ~np.isfinite(got)
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    err[special] = np.where(same[special], 0.0, np.inf)
    return err
