"""Learning-rate schedules: functions step -> value, as in optax (same names and arguments).

Each works on a Python int, a NumPy integer and a traced step count alike, so a schedule can be
evaluated inside `fg.jit`, `fg.fori_loop` and `fg.scan`.

    >>> sched = fg.optim.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=100, decay_steps=1000)
    >>> sched(50), sched(100), sched(1000)
    (0.005, 0.01, 0.0)
"""
from __future__ import annotations

import math

from .. import numpy as fnp

__all__ = ["constant_schedule", "linear_schedule", "polynomial_schedule", "exponential_decay",
           "cosine_decay_schedule", "warmup_cosine_decay_schedule", "piecewise_constant_schedule",
           "join_schedules"]


def constant_schedule(value):
    """step -> value.

        >>> fg.optim.constant_schedule(0.1)(1000)
        0.1
    """
    return lambda count: value


def polynomial_schedule(init_value, end_value, power, transition_steps, transition_begin=0):
    """From init_value to end_value over transition_steps steps (starting at transition_begin)
    along (1 - t) ** power; constant before and after.

        >>> sched = fg.optim.polynomial_schedule(1.0, 0.0, power=2, transition_steps=10)
        >>> sched(0), sched(5), sched(20)
        (1.0, 0.25, 0.0)
    """
    if transition_steps <= 0:
        return constant_schedule(init_value)

    def schedule(count):
        count = fnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * frac ** power + end_value
    return schedule


def linear_schedule(init_value, end_value, transition_steps, transition_begin=0):
    """Linear from init_value to end_value over transition_steps steps.

        >>> sched = fg.optim.linear_schedule(1.0, 0.0, transition_steps=10)
        >>> sched(5), sched(20)
        (0.5, 0.0)
    """
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0,
                      staircase=False, end_value=None):
    """init_value * decay_rate ** ((step - transition_begin) / transition_steps), from
    transition_begin on (in whole transitions when staircase); bounded by end_value.

        >>> sched = fg.optim.exponential_decay(1.0, transition_steps=10, decay_rate=0.5)
        >>> sched(10), sched(20)
        (0.5, 0.25)
    """
    if transition_steps <= 0 or decay_rate == 0:
        return constant_schedule(init_value)

    def schedule(count):
        p = (count - transition_begin) / transition_steps
        if staircase:
            p = fnp.floor(p)
        value = fnp.where(count <= transition_begin, init_value, init_value * decay_rate ** p)
        if end_value is not None:
            bound = fnp.maximum if decay_rate < 1 else fnp.minimum
            value = bound(value, end_value)
        return value
    return schedule


def cosine_decay_schedule(init_value, decay_steps, alpha=0.0, exponent=1.0):
    """init_value * ((1 - alpha) * (0.5 (1 + cos(pi t / decay_steps))) ** exponent + alpha),
    constant after decay_steps.

        >>> sched = fg.optim.cosine_decay_schedule(1.0, decay_steps=100, alpha=0.1)
        >>> sched(0), sched(50), sched(200)
        (1.0, 0.55, 0.1)
    """
    if decay_steps <= 0:
        raise ValueError("cosine_decay_schedule: decay_steps must be positive")

    def schedule(count):
        count = fnp.minimum(count, decay_steps)
        cosine = 0.5 * (1 + fnp.cos(math.pi * count / decay_steps))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)
    return schedule


def join_schedules(schedules, boundaries):
    """schedules[i] from boundaries[i - 1] on, each given the steps since its boundary.

        >>> warmup = fg.optim.linear_schedule(0.0, 1.0, transition_steps=10)
        >>> sched = fg.optim.join_schedules([warmup, fg.optim.constant_schedule(1.0)], [10])
        >>> sched(5), sched(50)
        (0.5, 1.0)
    """
    def schedule(count):
        value = schedules[0](count)
        for boundary, sched in zip(boundaries, schedules[1:]):
            value = fnp.where(count < boundary, value, sched(count - boundary))
        return value
    return schedule


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps, decay_steps,
                                 end_value=0.0, exponent=1.0):
    """Linear warm-up from init_value to peak_value over warmup_steps, then cosine decay to
    end_value at decay_steps (decay_steps counts the warm-up, as in optax).

        >>> sched = fg.optim.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=10, decay_steps=50)
        >>> sched(5), sched(10), sched(50)
        (0.5, 1.0, 0.0)
    """
    alpha = 0.0 if peak_value == 0 else end_value / peak_value
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)],
        [warmup_steps])


def piecewise_constant_schedule(init_value, boundaries_and_scales=None):
    """init_value, multiplied by scale from step `boundary` on, for each (boundary, scale).

        >>> sched = fg.optim.piecewise_constant_schedule(1.0, {100: 0.5, 200: 0.5})
        >>> sched(50), sched(150), sched(250)
        (1.0, 0.5, 0.25)
    """
    def schedule(count):
        value = init_value
        for boundary, scale in sorted((boundaries_and_scales or {}).items()):
            value = fnp.where(count < boundary, value, value * scale)
        return value
    return schedule
