"""Clipping by parameter norms and per example (optax's names and semantics):
adaptive_grad_clip (a transformation), and per_example_global_norm_clip and
per_example_layer_norm_clip, functions of per-example gradients stacked on a leading axis (as
fg.vmap(fg.grad(loss)) gives them; differentially private SGD clips them so).
"""
from __future__ import annotations

from .. import numpy as fnp
from ..numpy._complex import abs2
from ..tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .updates import EmptyState, _transformation

__all__ = ["adaptive_grad_clip", "per_example_global_norm_clip", "per_example_layer_norm_clip"]

_UNIT_AXES = {2: (0,), 3: (0,), 4: (0, 1, 2), 5: (0, 1, 2, 3)}


def _unitwise_norm(x, axis):
    """The norm of each unit of x, broadcast to x's shape: over `axis` if given; else over all
    of a scalar or vector, over the input axes of a dense kernel (0, of IO or HIO), of a
    convolution kernel (all but the last: HWIO, DHWIO)."""
    if axis is None:
        squeezed = sum(1 for n in fnp.shape(x) if n != 1)
        if squeezed <= 1:
            axis = tuple(range(fnp.ndim(x)))
        elif fnp.ndim(x) in _UNIT_AXES:
            axis = _UNIT_AXES[fnp.ndim(x)]
        else:
            raise ValueError(f"adaptive_grad_clip: no default unit for a parameter of shape "
                             f"{fnp.shape(x)}: give axis")
    norm = fnp.sqrt(fnp.sum(abs2(x), axis=axis, keepdims=True))
    return fnp.broadcast_to(norm, fnp.shape(x))


def adaptive_grad_clip(clipping, eps=1e-3, axis=None):
    """Adaptive gradient clipping (Brock et al. 2021, NFNets): each unit's update (a column
    of a dense kernel, an output channel of a convolution; `axis` sets the reduced axes) scaled
    down to norm clipping * max(its parameter unit's norm, eps) when larger.

        >>> opt, params = fg.optim.adaptive_grad_clip(0.1), np.array([[3.0], [4.0]])
        >>> opt.update(np.array([[6.0], [8.0]]), opt.init(params), params)[0]   # 10 -> 0.5
        array([[0.3],
               [0.4]])
    """
    def clipped(u, p):
        u_norm, p_norm = _unitwise_norm(u, axis), _unitwise_norm(p, axis)
        most = clipping * fnp.maximum(p_norm, eps)
        return fnp.where(u_norm < most, u, u * (most / fnp.maximum(u_norm, 1e-6)))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("adaptive_grad_clip needs the parameters: call "
                             "update(grads, state, params)")
        return tree_map(clipped, updates, params), state
    return _transformation(lambda params: EmptyState(), update)


def _batched(grads, who):
    leaves = tree_leaves(grads)
    sizes = {fnp.shape(g)[0] if fnp.ndim(g) else None for g in leaves}
    if not leaves or None in sizes or len(sizes) != 1:
        raise ValueError(f"{who} expects per-example gradients: every leaf with the same "
                         "leading (example) axis")


def per_example_global_norm_clip(grads, l2_norm_clip):
    """The sum over examples of per-example gradients (leading axis), each scaled down to
    global norm l2_norm_clip when larger; also the number of examples clipped.

        >>> g = np.array([[3.0, 4.0], [0.3, 0.4]])                 # norms 5 and 0.5
        >>> sums, clipped = fg.optim.per_example_global_norm_clip(g, 1.0)
        >>> sums, int(clipped)
        (array([0.9, 1.2]), 1)
    """
    _batched(grads, "per_example_global_norm_clip")
    leaves, tree = tree_flatten(grads)
    squares = sum(fnp.sum(abs2(g).reshape(fnp.shape(g)[0], -1), axis=1) for g in leaves)
    norms = fnp.sqrt(squares)
    factor = fnp.where(norms > l2_norm_clip, l2_norm_clip / fnp.where(norms > 0, norms, 1.0),
                       1.0)
    summed = [fnp.tensordot(factor, g, axes=1) for g in leaves]
    return tree_unflatten(tree, summed), fnp.sum(factor < 1.0)


def per_example_layer_norm_clip(grads, global_l2_norm_clip, uniform=True):
    """per_example_global_norm_clip leaf by leaf, each leaf's bound a share of
    global_l2_norm_clip (equal shares with uniform, else shares by size) so that the whole
    stays within it; returns the sums and the numbers clipped, as pytrees like grads.

        >>> g = {"a": np.array([[3.0, 4.0]]), "b": np.array([[0.1]])}
        >>> sums, clipped = fg.optim.per_example_layer_norm_clip(g, np.sqrt(2.0))
        >>> sums["a"], int(clipped["a"]), int(clipped["b"])       # bounds 1 and 1
        (array([0.6, 0.8]), 1, 0)
    """
    _batched(grads, "per_example_layer_norm_clip")
    leaves, tree = tree_flatten(grads)
    total = sum(fnp.size(g) // fnp.shape(g)[0] for g in leaves)
    shares = [1.0 / len(leaves) if uniform else (fnp.size(g) // fnp.shape(g)[0]) / total
              for g in leaves]
    out = [per_example_global_norm_clip(g, global_l2_norm_clip * s ** 0.5)
           for g, s in zip(leaves, shares)]
    return tree_unflatten(tree, [o[0] for o in out]), tree_unflatten(tree, [o[1] for o in out])
