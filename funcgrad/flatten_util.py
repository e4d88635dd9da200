"""ravel_pytree: a pytree of arrays as one flat vector, and back (as jax.flatten_util does).

    >>> flat, unravel = fg.flatten_util.ravel_pytree({"w": np.ones((2, 2)), "b": 0.5})
    >>> flat                        # leaves in tree order, each raveled
    array([0.5, 1. , 1. , 1. , 1. ])
    >>> unravel(flat)["w"].shape
    (2, 2)

Works on traced values too, so an optimizer written for vectors can take a pytree of
parameters inside fg.jit. The vector's dtype is the leaves' common type; unravel gives each
leaf its own shape and dtype back.
"""
from __future__ import annotations

import numpy as np

from . import numpy as fnp
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(tree):
    """(flat vector, unravel) for a pytree of arrays and numbers.

        >>> flat, unravel = fg.flatten_util.ravel_pytree({"w": np.ones((2, 2)), "b": 0.5})
        >>> flat, unravel(2 * flat)["w"]
        (array([0.5, 1. , 1. , 1. , 1. ]), array([[2., 2.],
               [2., 2.]]))
    """
    leaves, treedef = tree_flatten(tree)
    shapes = [np.shape(x) for x in leaves]
    dtypes = [x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype for x in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    flat = (fnp.concatenate([fnp.ravel(fnp.asarray(x, dtype)) for x in leaves]) if leaves
            else np.zeros(0, dtype))
    ends = np.cumsum(sizes).tolist()

    def unravel(vec):
        if np.shape(vec) != (sum(sizes),):
            raise ValueError(f"unravel: expected a vector of length {sum(sizes)}, got shape "
                             f"{np.shape(vec)}")
        parts = [fnp.reshape(vec[end - size:end], shape).astype(dt)
                 for end, size, shape, dt in zip(ends, sizes, shapes, dtypes)]
        return tree_unflatten(treedef, parts)
    return flat, unravel


def float_leaves(tree, dtype=None):
    """tree with its integer and bool leaves as float64 and, given `dtype`, its real
    floating-point leaves as `dtype` too (complex leaves stay): the unknowns of a solver and
    the state of an ODE are real numbers whatever the dtype of the starting point, as in
    SciPy (an integer x0 read back as integers would hold the solver at x0).

        >>> fg.flatten_util.float_leaves({"a": np.array([1, 2]), "b": np.float32(0.5)})
        {'a': array([1., 2.]), 'b': np.float32(0.5)}
    """
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [_floating(x, dtype) for x in leaves])


def _floating(x, dtype):
    kind = (x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype).kind
    if kind in "biu":
        target = np.float64 if dtype is None else dtype
    elif kind == "f" and dtype is not None:
        target = dtype
    else:
        return x
    return np.asarray(x, target) if isinstance(x, (np.ndarray, np.generic, int, float, bool)) \
        else fnp.asarray(x).astype(target)
