"""Adafactor (Shazeer & Stern 2018, "Adafactor: Adaptive Learning Rates with Sublinear Memory
Cost"), optax's names and defaults: scale_by_factored_rms keeps, for each matrix-like leaf,
running means of the squared gradient over its rows and over its columns instead of one per
entry (memory n + m instead of n m), and adafactor chains it with block-wise clipping, the
parameters' scale, momentum and weight decay.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..numpy._complex import abs2
from ..tree_util import tree_flatten, tree_unflatten
from .updates import (_count0, _transformation, add_decayed_weights, chain, inject_hyperparams,
                      scale, scale_by_learning_rate)
from .wrappers import clip_by_block_rms, ema, scale_by_param_block_rms

__all__ = ["FactoredState", "scale_by_factored_rms", "adafactor"]


class FactoredState(NamedTuple):
    """scale_by_factored_rms's state: the step count, and per leaf the row and column means of
    the squared gradients (factored leaves) or their full running mean v (the others); unused
    slots hold a zero of shape (1,).

        >>> s = fg.optim.scale_by_factored_rms(min_dim_size_to_factor=2).init(np.zeros((3, 4)))
        >>> s.v_row.shape, s.v_col.shape, s.v.shape
        ((3,), (4,), (1,))
    """
    count: Any
    v_row: Any
    v_col: Any
    v: Any


def _decay_rate_pow(step, exponent=0.8):
    """Adafactor's second-moment decay at step t (from 0): 1 - (t + 1)^-exponent."""
    return 1.0 - fnp.astype(step + 1, np.float64) ** (-exponent)


def _factored_dims(shape, factored, min_dim_size_to_factor):
    """(d1, d0): the second largest and the largest axis, if both have at least
    min_dim_size_to_factor entries (factored=True, two axes or more); else None."""
    if not factored or len(shape) < 2:
        return None
    order = np.argsort(shape, kind="stable")
    if shape[order[-2]] < min_dim_size_to_factor:
        return None
    return int(order[-2]), int(order[-1])


def scale_by_factored_rms(factored=True, decay_rate=0.8, step_offset=0,
                          min_dim_size_to_factor=128, epsilon=1e-30,
                          decay_rate_fn=_decay_rate_pow):
    """updates / sqrt(V), V a running mean of g^2 + epsilon with decay
    decay_rate_fn(step - step_offset, decay_rate) (default 1 - (t + 1)^-decay_rate). For a leaf
    whose two largest axes both have min_dim_size_to_factor entries or more, V is the rank-1
    estimate R C / mean(R) from running means over its largest axis (R) and over its second
    largest (C): Shazeer & Stern's Algorithm 4. Other leaves keep V entry by entry.

        >>> opt = fg.optim.scale_by_factored_rms(min_dim_size_to_factor=2)
        >>> g = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> opt.update(g, opt.init(g), g)[0].round(4)     # decay 0 at first: V from g^2
        array([[0.7746, 1.0954],
               [1.0392, 0.9798]])
    """
    def init(params):
        leaves, tree = tree_flatten(params)
        rows, cols, full = [], [], []
        for p in leaves:
            shape, dtype = fnp.shape(p), fnp.asarray(p).dtype
            dims = _factored_dims(shape, factored, min_dim_size_to_factor)
            one = fnp.zeros((1,), dtype)
            if dims is None:
                rows.append(one), cols.append(one), full.append(fnp.zeros(shape, dtype))
            else:
                d1, d0 = dims
                rows.append(fnp.zeros(shape[:d0] + shape[d0 + 1:], dtype))
                cols.append(fnp.zeros(shape[:d1] + shape[d1 + 1:], dtype))
                full.append(one)
        return FactoredState(_count0(), *(tree_unflatten(tree, x) for x in (rows, cols, full)))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_factored_rms needs the parameters: call "
                             "update(grads, state, params)")
        decay = decay_rate_fn(state.count - step_offset, decay_rate)
        leaves, tree = tree_flatten(updates)
        parts = [tree_flatten(x)[0] for x in (state.v_row, state.v_col, state.v)]
        out, rows, cols, full = [], [], [], []
        for g, v_row, v_col, v in zip(leaves, *parts):
            g2 = abs2(g) + epsilon
            dims = _factored_dims(fnp.shape(g), factored, min_dim_size_to_factor)
            if dims is None:
                v = decay * v + (1.0 - decay) * g2
                out.append(g * v ** -0.5)
            else:
                d1, d0 = dims
                v_row = decay * v_row + (1.0 - decay) * fnp.mean(g2, axis=d0)
                v_col = decay * v_col + (1.0 - decay) * fnp.mean(g2, axis=d1)
                # R is indexed by axis d1 (d0 summed out): its mean over that axis normalizes
                row_mean = fnp.mean(v_row, axis=d1 - 1 if d1 > d0 else d1, keepdims=True)
                out.append(g * fnp.expand_dims((v_row / row_mean) ** -0.5, d0)
                           * fnp.expand_dims(v_col ** -0.5, d1))
            rows.append(v_row), cols.append(v_col), full.append(v)
        new = (tree_unflatten(tree, x) for x in (rows, cols, full))
        return tree_unflatten(tree, out), FactoredState(state.count + 1, *new)
    return _transformation(init, update)


def _adafactor(learning_rate=None, min_dim_size_to_factor=128, decay_rate=0.8, decay_offset=0,
               multiply_by_parameter_scale=True, clipping_threshold=1.0, momentum=None,
               dtype_momentum=None, weight_decay_rate=None, eps=1e-30, factored=True,
               weight_decay_mask=None):
    parts = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor,
                                   eps)]
    if clipping_threshold is not None:
        parts.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        parts.append(scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        parts.append(scale_by_param_block_rms())
    if momentum is not None:
        parts.append(ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        parts.append(add_decayed_weights(weight_decay_rate, weight_decay_mask))
    return chain(*parts, scale(-1.0))


_STATIC = ("min_dim_size_to_factor", "decay_offset", "dtype_momentum", "weight_decay_mask")


def adafactor(learning_rate=None, min_dim_size_to_factor=128, decay_rate=0.8, decay_offset=0,
              multiply_by_parameter_scale=True, clipping_threshold=1.0, momentum=None,
              dtype_momentum=None, weight_decay_rate=None, eps=1e-30, factored=True,
              weight_decay_mask=None):
    """Adafactor (Shazeer & Stern 2018), optax's composition: scale_by_factored_rms, each
    leaf's update clipped to RMS clipping_threshold (clip_by_block_rms), times learning_rate
    (None: 1), times the RMS of its parameter (at least 1e-3) with
    multiply_by_parameter_scale, an exponential moving average with momentum, plus
    weight_decay_rate * params (where weight_decay_mask says), negated. Leaves with two axes
    of min_dim_size_to_factor or more get factored second moments. dtype_momentum: the
    momentum accumulator's dtype (None, the default: the parameters'; optax's default is
    float32). The numeric hyperparameters are kept in the state as the other named
    optimizers keep theirs.

        >>> loss = lambda p: fnp.sum((p - 3.0) ** 2)
        >>> opt, params = fg.optim.adafactor(0.1), np.ones(2)
        >>> updates, state = opt.update(fg.grad(loss)(params), opt.init(params), params)
        >>> fg.optim.apply_updates(params, updates)          # lr * rms(params) per leaf
        array([1.1, 1.1])
    """
    return inject_hyperparams(_adafactor, _STATIC)(
        learning_rate=learning_rate, min_dim_size_to_factor=min_dim_size_to_factor,
        decay_rate=decay_rate, decay_offset=decay_offset,
        multiply_by_parameter_scale=multiply_by_parameter_scale,
        clipping_threshold=clipping_threshold, momentum=momentum, dtype_momentum=dtype_momentum,
        weight_decay_rate=weight_decay_rate, eps=eps, factored=factored,
        weight_decay_mask=weight_decay_mask)


adafactor.injected = (_adafactor, _STATIC)       # (read by inject_hyperparams)
