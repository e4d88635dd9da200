"""Transformations applied on some steps only, and updates of slowly moving copies of the
parameters (optax's names and semantics): apply_every, conditionally_transform,
conditionally_mask, incremental_update, periodic_update. The step decides by fnp.where, not
Python branches, so they compile inside a training loop.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import numpy as fnp
from ..tree_util import tree_map
from .updates import GradientTransformationExtraArgs, _count0, _transformation, _zeros_like
from .wrappers import _select

__all__ = ["ApplyEvery", "ConditionallyTransformState", "ConditionallyMaskState", "apply_every",
           "conditionally_transform", "conditionally_mask", "incremental_update",
           "periodic_update"]


class ApplyEvery(NamedTuple):
    """apply_every's state: the step within the period and the sum of its updates so far.

        >>> fg.optim.apply_every(2).init(np.zeros(2)).grad_acc
        array([0., 0.])
    """
    count: Any
    grad_acc: Any


class ConditionallyTransformState(NamedTuple):
    """conditionally_transform's state: the inner state and the step count.

        >>> fg.optim.conditionally_transform(fg.optim.sgd(1.0), lambda s: s > 0).init(1.0).step
        array(0, dtype=int32)
    """
    inner_state: Any
    step: Any


class ConditionallyMaskState(NamedTuple):
    """conditionally_mask's state: the step count and the inner state.

        >>> fg.optim.conditionally_mask(fg.optim.sgd(1.0), lambda s: s > 0).init(1.0).step
        array(0, dtype=int32)
    """
    step: Any
    inner_state: Any


def apply_every(k=1):
    """The sum of k successive updates, passed on every k-th call (zeros on the others).

        >>> opt = fg.optim.apply_every(2)
        >>> u1, state = opt.update(np.array([1.0]), opt.init(np.zeros(1)))
        >>> u2, state = opt.update(np.array([3.0]), state)
        >>> u1, u2
        (array([0.]), array([4.]))
    """
    def update(updates, state, params=None):
        within = state.count % k
        acc = tree_map(lambda g, a: g + fnp.where(within != 0, a, 0.0), updates, state.grad_acc)
        out = tree_map(lambda a: fnp.where(within == k - 1, a, 0.0), acc)
        return out, ApplyEvery((state.count + 1) % k, acc)
    return _transformation(lambda params: ApplyEvery(_count0(), _zeros_like(params)), update)


def _conditional(inner, should_transform_fn, forward_extra_args, otherwise, state_of):
    extra = isinstance(inner, GradientTransformationExtraArgs)

    def update(updates, state, params=None, **extra_args):
        step, inner_state = state.step, state.inner_state
        on = should_transform_fn(step, **(extra_args if forward_extra_args else {}))
        out, new = inner.update(updates, inner_state, params, **(extra_args if extra else {}))
        return (_select(on, out, otherwise(updates)),
                state_of(step + 1, _select(on, new, inner_state)))
    return update


def conditionally_transform(inner, should_transform_fn, forward_extra_args=False):
    """inner's update on the steps where should_transform_fn(step) is True (step counts calls
    from 0; with forward_extra_args it also gets update's keywords), the updates unchanged
    and inner's state kept on the others.

        >>> opt = fg.optim.conditionally_transform(fg.optim.scale(10.0), lambda step: step >= 1)
        >>> u1, state = opt.update(np.ones(1), opt.init(np.zeros(1)))
        >>> u2, state = opt.update(np.ones(1), state)
        >>> u1, u2
        (array([1.]), array([10.]))
    """
    return GradientTransformationExtraArgs(
        lambda params: ConditionallyTransformState(inner.init(params), _count0()),
        _conditional(inner, should_transform_fn, forward_extra_args, lambda u: u,
                     lambda step, s: ConditionallyTransformState(s, step)))


def conditionally_mask(inner, should_transform_fn, forward_extra_args=False):
    """inner's update where should_transform_fn(step) is True, zero updates (and inner's
    state kept) elsewhere: conditionally_transform with the updates masked.

        >>> opt = fg.optim.conditionally_mask(fg.optim.sgd(1.0), lambda step: step >= 1)
        >>> u1, state = opt.update(np.ones(1), opt.init(np.zeros(1)))
        >>> u2, state = opt.update(np.ones(1), state)
        >>> u1, u2
        (array([0.]), array([-1.]))
    """
    return GradientTransformationExtraArgs(
        lambda params: ConditionallyMaskState(_count0(), inner.init(params)),
        _conditional(inner, should_transform_fn, forward_extra_args,
                     lambda u: tree_map(fnp.zeros_like, u), ConditionallyMaskState))


def incremental_update(new_tensors, old_tensors, step_size):
    """step_size * new + (1 - step_size) * old, leaf by leaf (a Polyak average of parameters,
    e.g. a target network's).

        >>> fg.optim.incremental_update({"w": np.ones(2)}, {"w": np.zeros(2)}, 0.1)
        {'w': array([0.1, 0.1])}
    """
    return tree_map(lambda new, old: step_size * new + (1.0 - step_size) * old,
                    new_tensors, old_tensors)


def periodic_update(new_tensors, old_tensors, steps, update_period):
    """new_tensors on steps that are multiples of update_period, else old_tensors.

        >>> fg.optim.periodic_update(np.ones(2), np.zeros(2), steps=4, update_period=2)
        array([1., 1.])
    """
    return _select(fnp.asarray(steps) % update_period == 0, new_tensors, old_tensors)
