"""Transformations that wrap others or act on every update (optax's names): masked,
multi_transform, MultiSteps (gradient accumulation), apply_if_finite, ema, clip, zero_nans,
keep_params_nonnegative, and the per-leaf ("block") ones: clip_by_block_rms,
scale_by_param_block_rms, scale_by_param_block_norm, centralize, normalize_by_update_norm; and
scale_by_sign, set_to_zero, stateless, stateless_with_tree_map.

Each works on traced values too (its choices are fnp.where, not Python branches), so the
wrapped optimizers still compile into one training-loop kernel.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..numpy._complex import abs2
from ..tree_util import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from .updates import EmptyState, GradientTransformation, _count0, _transformation, _zeros_like

__all__ = ["masked", "multi_transform", "MultiSteps", "apply_if_finite", "ema", "clip",
           "zero_nans", "keep_params_nonnegative", "clip_by_block_rms", "scale_by_param_block_rms",
           "scale_by_param_block_norm", "centralize", "normalize_by_update_norm", "scale_by_sign",
           "set_to_zero", "stateless", "stateless_with_tree_map"]


class MaskedState(NamedTuple):
    inner_state: Any


class MultiTransformState(NamedTuple):
    inner_states: dict


class MultiStepsState(NamedTuple):
    mini_step: Any
    gradient_step: Any
    inner_opt_state: Any
    acc_grads: Any


class ApplyIfFiniteState(NamedTuple):
    notfinite_count: Any
    last_finite: Any
    total_notfinite: Any
    inner_state: Any


class EmaState(NamedTuple):
    count: Any
    ema: Any


class ZeroNansState(NamedTuple):
    found_nan: Any


def _mask_leaves(mask, tree):
    """The mask's bools, one per leaf of tree (mask: a bool, a pytree of bools shaped as tree,
    or a function tree -> either)."""
    m = mask(tree) if callable(mask) else mask
    n = len(tree_leaves(tree))
    if isinstance(m, (bool, np.bool_)):
        return [bool(m)] * n
    if tree_structure(m) != tree_structure(tree):
        raise ValueError(f"mask has structure {tree_structure(m)!r}, the parameters "
                         f"{tree_structure(tree)!r}: give one bool per parameter leaf")
    return [bool(b) for b in tree_leaves(m)]


def masked(inner, mask):
    """inner applied to the leaves where mask is True (a pytree of bools like the parameters,
    or a function params -> that); the other updates pass through unchanged, and inner's state
    covers only the selected leaves.

        >>> opt = fg.optim.masked(fg.optim.scale(10.0), {"w": True, "b": False})
        >>> params = {"w": np.ones(1), "b": np.ones(1)}
        >>> opt.update(params, opt.init(params), params)[0]
        {'b': array([1.]), 'w': array([10.])}
    """
    def init(params):
        on = _mask_leaves(mask, params)
        return MaskedState(inner.init([x for x, b in zip(tree_leaves(params), on) if b]))

    def update(updates, state, params=None):
        on = _mask_leaves(mask, updates if params is None else params)
        leaves, tree = tree_flatten(updates)
        picked = [x for x, b in zip(leaves, on) if b]
        sub_params = None if params is None else [x for x, b in zip(tree_leaves(params), on) if b]
        new, inner_state = inner.update(picked, state.inner_state, sub_params)
        it = iter(new)
        return tree_unflatten(tree, [next(it) if b else x for x, b in zip(leaves, on)]), \
            MaskedState(inner_state)
    return GradientTransformation(init, update)


def multi_transform(transforms, param_labels):
    """A different transformation per group of parameters: transforms maps a label to a
    transformation, param_labels gives each parameter leaf its label (a pytree of labels like
    the parameters, or a function params -> that).

        >>> opt = fg.optim.multi_transform({"fast": fg.optim.sgd(1.0), "frozen": fg.optim.scale(0.0)},
        ...                                {"w": "fast", "b": "frozen"})
        >>> params = {"w": np.ones(1), "b": np.ones(1)}
        >>> opt.update(params, opt.init(params), params)[0]
        {'b': array([0.]), 'w': array([-1.])}
    """
    def masks(tree):
        labels = param_labels(tree) if callable(param_labels) else param_labels
        missing = set(tree_leaves(labels)) - set(transforms)
        if missing:
            raise ValueError(f"multi_transform: labels {sorted(missing)} have no transformation")
        return {k: tree_map(lambda label, k=k: label == k, labels) for k in transforms}

    def init(params):
        m = masks(params)
        return MultiTransformState({k: masked(t, m[k]).init(params) for k, t in transforms.items()})

    def update(updates, state, params=None):
        m = masks(updates if params is None else params)
        new = {}
        for k, t in transforms.items():
            updates, new[k] = masked(t, m[k]).update(updates, state.inner_states[k], params)
        return updates, MultiTransformState(new)
    return GradientTransformation(init, update)


def _select(flag, a, b):
    """a where flag, else b, leaf by leaf (the same structure)."""
    return tree_map(lambda x, y: fnp.where(flag, x, y), a, b)


class MultiSteps:
    """Gradient accumulation: the wrapped optimizer sees the mean of every_k_schedule
    successive gradients, once per k calls; the other calls return zero updates (PyTorch: k
    backward passes before optimizer.step()).

        >>> opt = fg.optim.MultiSteps(fg.optim.sgd(1.0), every_k_schedule=2)
        >>> state = opt.init(np.zeros(1))
        >>> u1, state = opt.update(np.array([1.0]), state)
        >>> u2, state = opt.update(np.array([3.0]), state)
        >>> u1, u2                        # nothing, then -lr * mean(1, 3)
        (array([0.]), array([-2.]))
    """

    def __init__(self, opt, every_k_schedule):
        self.opt, self.k = opt, int(every_k_schedule)

    def init(self, params):
        return MultiStepsState(_count0(), _count0(), self.opt.init(params), _zeros_like(params))

    def update(self, updates, state, params=None):
        step = state.mini_step
        acc = tree_map(lambda a, g: a + (g - a) / fnp.astype(step + 1, np.float64).astype(
            fnp.asarray(g).dtype), state.acc_grads, updates)
        emit = step + 1 >= self.k
        out, inner = self.opt.update(acc, state.inner_opt_state, params)
        zeros = tree_map(fnp.zeros_like, out)
        return _select(emit, out, zeros), MultiStepsState(
            fnp.where(emit, 0, step + 1).astype(np.int32),
            fnp.where(emit, state.gradient_step + 1, state.gradient_step).astype(np.int32),
            _select(emit, inner, state.inner_opt_state),
            _select(emit, tree_map(fnp.zeros_like, acc), acc))

    def gradient_transformation(self):
        """This as a GradientTransformation."""
        return GradientTransformation(self.init, self.update)


def apply_if_finite(inner, max_consecutive_errors):
    """inner's update when every update is finite; otherwise zero updates and inner's state
    kept, unless that has happened max_consecutive_errors times in a row (then the update is
    applied as it is). The state counts them (PyTorch's GradScaler skips steps likewise).

        >>> opt = fg.optim.apply_if_finite(fg.optim.sgd(1.0), max_consecutive_errors=3)
        >>> state = opt.init(np.zeros(2))
        >>> opt.update(np.array([1.0, np.nan]), state)[0]
        array([0., 0.])
    """
    def init(params):
        return ApplyIfFiniteState(_count0(), np.array(True), _count0(), inner.init(params))

    def update(updates, state, params=None):
        finite = fnp.all(fnp.stack([fnp.all(fnp.isfinite(g)) for g in tree_leaves(updates)]))
        out, new_inner = inner.update(updates, state.inner_state, params)
        count = fnp.where(finite, 0, state.notfinite_count + 1).astype(np.int32)
        apply = finite | (count > max_consecutive_errors)
        return _select(apply, out, tree_map(fnp.zeros_like, out)), ApplyIfFiniteState(
            count, finite, (state.total_notfinite + fnp.where(finite, 0, 1)).astype(np.int32),
            _select(apply, new_inner, state.inner_state))
    return GradientTransformation(init, update)


def ema(decay, debias=True, accumulator_dtype=None):
    """The updates replaced by their exponential moving average (debiased by 1 - decay^t);
    the average is kept in accumulator_dtype (None: the parameters' dtypes).

        >>> opt = fg.optim.ema(0.9)
        >>> opt.update(np.array([2.0]), opt.init(np.zeros(1)))[0]
        array([2.])
    """
    def init(params):
        if accumulator_dtype is None:
            return EmaState(_count0(), _zeros_like(params))
        return EmaState(_count0(), tree_map(lambda p: fnp.zeros(fnp.shape(p), accumulator_dtype),
                                            params))

    def update(updates, state, params=None):
        avg = tree_map(lambda g, e: (1 - decay) * g + decay * e, updates, state.ema)
        count = state.count + 1
        out = tree_map(lambda e: e / (1 - decay ** count), avg) if debias else avg
        return out, EmaState(count, avg)
    return _transformation(init, update)


def clip(max_delta):
    """Each update entry clipped to [-max_delta, max_delta].

        >>> opt = fg.optim.clip(1.0)
        >>> opt.update(np.array([3.0, -0.5]), opt.init(np.zeros(2)))[0]
        array([ 1. , -0.5])
    """
    return _transformation(lambda params: EmptyState(), lambda updates, state, params=None: (
        tree_map(lambda g: fnp.clip(g, -max_delta, max_delta), updates), state))


def zero_nans():
    """NaN updates replaced by 0; the state says which leaves had one.

        >>> opt = fg.optim.zero_nans()
        >>> opt.update(np.array([np.nan, 1.0]), opt.init(np.zeros(2)))[0]
        array([0., 1.])
    """
    def update(updates, state, params=None):
        found = tree_map(lambda g: fnp.any(fnp.isnan(g)), updates)
        return tree_map(lambda g: fnp.where(fnp.isnan(g), 0.0, g), updates), ZeroNansState(found)
    return _transformation(
        lambda params: ZeroNansState(tree_map(lambda p: np.array(False), params)), update)


def keep_params_nonnegative():
    """Updates changed so that no parameter becomes negative (p + u >= 0): projected steps.

        >>> opt = fg.optim.keep_params_nonnegative()
        >>> params = np.array([1.0, 1.0])
        >>> opt.update(np.array([-3.0, 0.5]), opt.init(params), params)[0]
        array([-1. ,  0.5])
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("keep_params_nonnegative needs the parameters: call "
                             "update(grads, state, params)")
        return tree_map(lambda u, p: fnp.where(p + u < 0, -p, u), updates, params), state
    return _transformation(lambda params: EmptyState(), update)


def _floor_rms(x, least, mean):
    """max(RMS of x (mean=True) or its norm, least), with derivative 0 (not NaN) below."""
    def size(v):
        total = fnp.sum(abs2(v))
        return fnp.sqrt(total / fnp.size(v) if mean else total)
    small = size(x) <= least
    return fnp.where(small, least, size(fnp.where(small, 1.0, x)))


def _needs_params(params, who):
    if params is None:
        raise ValueError(f"{who} needs the parameters: call update(grads, state, params)")


def clip_by_block_rms(threshold):
    """Each leaf's update scaled down to RMS threshold when its RMS is larger.

        >>> opt = fg.optim.clip_by_block_rms(1.0)
        >>> opt.update(np.array([3.0, 4.0]), opt.init(np.zeros(2)))[0]    # RMS 5 / sqrt(2)
        array([0.84852814, 1.13137085])
    """
    def clipped(u):
        return u / fnp.maximum(1.0, fnp.sqrt(fnp.mean(abs2(u))) / threshold)
    return _transformation(lambda params: EmptyState(), lambda updates, state, params=None: (
        tree_map(clipped, updates), state))


def scale_by_param_block_rms(min_scale=1e-3):
    """Each leaf's update times the RMS of its parameter (at least min_scale): steps relative
    to the parameters' scale (Adafactor's).

        >>> opt, params = fg.optim.scale_by_param_block_rms(), np.array([3.0, 4.0])
        >>> opt.update(np.ones(2), opt.init(params), params)[0]
        array([3.53553391, 3.53553391])
    """
    def update(updates, state, params=None):
        _needs_params(params, "scale_by_param_block_rms")
        return tree_map(lambda u, p: u * _floor_rms(p, min_scale, True), updates, params), state
    return _transformation(lambda params: EmptyState(), update)


def scale_by_param_block_norm(min_scale=1e-3):
    """Each leaf's update times the norm of its parameter (at least min_scale).

        >>> opt, params = fg.optim.scale_by_param_block_norm(), np.array([3.0, 4.0])
        >>> opt.update(np.ones(2), opt.init(params), params)[0]
        array([5., 5.])
    """
    def update(updates, state, params=None):
        _needs_params(params, "scale_by_param_block_norm")
        return tree_map(lambda u, p: u * _floor_rms(p, min_scale, False), updates, params), state
    return _transformation(lambda params: EmptyState(), update)


def centralize():
    """Gradient centralization (Yong et al. 2020): each leaf of two axes or more minus its
    mean over all axes but the first; vectors and scalars unchanged.

        >>> opt = fg.optim.centralize()
        >>> opt.update(np.array([[1.0, 2.0, 3.0], [4.0, 6.0, 8.0]]), opt.init(np.zeros((2, 3))))[0]
        array([[-1.,  0.,  1.],
               [-2.,  0.,  2.]])
    """
    def centered(u):
        if fnp.ndim(u) < 2:
            return u
        return u - fnp.mean(u, axis=tuple(range(1, fnp.ndim(u))), keepdims=True)
    return _transformation(lambda params: EmptyState(), lambda updates, state, params=None: (
        tree_map(centered, updates), state))


def normalize_by_update_norm(scale_factor=1.0, eps=1e-6):
    """updates * scale_factor / (global norm of the updates + eps).

        >>> opt = fg.optim.normalize_by_update_norm(scale_factor=-1.0)
        >>> opt.update(np.array([3.0, 4.0]), opt.init(np.zeros(2)))[0].round(6)
        array([-0.6, -0.8])
    """
    def update(updates, state, params=None):
        norm = fnp.sqrt(sum(fnp.sum(abs2(u)) for u in tree_leaves(updates)))
        factor = scale_factor / (norm + eps)
        return tree_map(lambda u: u * factor, updates), state
    return _transformation(lambda params: EmptyState(), update)


def scale_by_sign():
    """The sign of each update entry (signSGD's direction, Bernstein et al. 2018).

        >>> opt = fg.optim.scale_by_sign()
        >>> opt.update(np.array([0.3, -2.0, 0.0]), opt.init(np.zeros(3)))[0]
        array([ 1., -1.,  0.])
    """
    return stateless_with_tree_map(lambda u, p: fnp.sign(u))


def set_to_zero():
    """Zero updates (frozen parameters, e.g. a label of multi_transform).

        >>> opt = fg.optim.set_to_zero()
        >>> opt.update(np.array([0.3, -2.0]), opt.init(np.zeros(2)))[0]
        array([0., 0.])
    """
    return stateless_with_tree_map(lambda u, p: fnp.zeros_like(u))


def stateless(f):
    """A transformation without state from f(updates, params) -> updates (params may be
    None).

        >>> opt = fg.optim.stateless(lambda u, p: fg.tree_util.tree_map(lambda x: 2 * x, u))
        >>> opt.update({"w": np.ones(2)}, opt.init({"w": np.ones(2)}))[0]
        {'w': array([2., 2.])}
    """
    return _transformation(lambda params: EmptyState(),
                           lambda updates, state, params=None: (f(updates, params), EmptyState()))


def stateless_with_tree_map(f):
    """A transformation without state from f(update, param) -> update applied leaf by leaf
    (param None where update is called without params).

        >>> opt = fg.optim.stateless_with_tree_map(lambda u, p: u - p)
        >>> opt.update(np.ones(2), opt.init(np.zeros(2)), np.array([0.5, 2.0]))[0]
        array([ 0.5, -1. ])
    """
    def each(updates, params):
        if params is None:
            return tree_map(lambda u: f(u, None), updates)
        return tree_map(f, updates, params)
    return stateless(each)
