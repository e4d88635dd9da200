"""fg.nn.initializers: weight initializers taking a key (jax.nn.initializers' names).

Each maker returns `init(key, shape, dtype=np.float64)`, which draws with fg.random:

    >>> init = fg.nn.initializers.glorot_uniform()
    >>> W = init(fg.random.key(0), (784, 128))

Fan-in and fan-out read the shape as JAX does: `in_axis` (default -2) and `out_axis` (default
-1) are the input and output dimensions, every other axis is the receptive field (a
convolution's kernel), which multiplies both. PyTorch's names: xavier_* are glorot_*,
kaiming_* are he_* (PyTorch's kaiming_uniform_ default for nn.Linear is he_uniform with scale
1/3, i.e. variance_scaling(1/3, "fan_in", "uniform")).
"""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from .. import random

__all__ = ["constant", "zeros", "ones", "normal", "uniform", "truncated_normal",
           "variance_scaling", "glorot_normal", "glorot_uniform", "xavier_normal",
           "xavier_uniform", "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform",
           "lecun_normal", "lecun_uniform", "orthogonal"]

# the standard deviation of a standard normal truncated to [-2, 2]
_TRUNCATED_STD = 0.87962566103423978


def constant(value, dtype=np.float64):
    """Every entry `value`.

        >>> fg.nn.initializers.constant(0.1)(fg.random.key(0), (2, 3))
    """
    def init(key, shape, dtype=dtype):
        return fnp.full(shape, value, dtype)
    return init


def zeros(key, shape, dtype=np.float64):
    """All zeros (an initializer itself, as in JAX).

        >>> fg.nn.initializers.zeros(fg.random.key(0), (3,))
    """
    return fnp.zeros(shape, dtype)


def ones(key, shape, dtype=np.float64):
    """All ones (an initializer itself, as in JAX).

        >>> fg.nn.initializers.ones(fg.random.key(0), (3,))
    """
    return fnp.ones(shape, dtype)


def normal(stddev=1e-2, dtype=np.float64):
    """Normal with mean 0 and standard deviation `stddev`.

        >>> fg.nn.initializers.normal(0.1)(fg.random.key(0), (2, 3))
    """
    def init(key, shape, dtype=dtype):
        return stddev * random.normal(key, shape, dtype)
    return init


def uniform(scale=1e-2, dtype=np.float64):
    """Uniform on [0, scale).

        >>> fg.nn.initializers.uniform(0.5)(fg.random.key(0), (2, 3))
    """
    def init(key, shape, dtype=dtype):
        return random.uniform(key, shape, dtype, 0.0, scale)
    return init


def truncated_normal(stddev=1e-2, dtype=np.float64, lower=-2.0, upper=2.0):
    """Normal truncated to [lower, upper] standard deviations, times `stddev`.

        >>> fg.nn.initializers.truncated_normal(0.1)(fg.random.key(0), (2, 3))
    """
    def init(key, shape, dtype=dtype):
        return stddev * random.truncated_normal(key, lower, upper, shape, dtype)
    return init


def _fans(shape, in_axis, out_axis):
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    receptive = math.prod(d for i, d in enumerate(shape)
                          if i not in (in_axis % len(shape), out_axis % len(shape)))
    return float(shape[in_axis] * receptive), float(shape[out_axis] * receptive)


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, dtype=np.float64):
    """Entries with variance scale / n, n the fan-in, fan-out or their mean (mode "fan_in",
    "fan_out", "fan_avg"), from a "truncated_normal" (at 2 standard deviations, rescaled to
    that variance), "normal" or "uniform" distribution.

        >>> fg.nn.initializers.variance_scaling(2.0, "fan_in", "normal")(fg.random.key(0), (4, 3))
    """
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise ValueError(f"variance_scaling: mode must be 'fan_in', 'fan_out' or 'fan_avg', got {mode!r}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError("variance_scaling: distribution must be 'truncated_normal', 'normal' "
                         f"or 'uniform', got {distribution!r}")

    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        fan_in, fan_out = _fans(shape, in_axis, out_axis)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = scale / max(n, 1.0)
        if distribution == "truncated_normal":
            std = math.sqrt(variance) / _TRUNCATED_STD
            return std * random.truncated_normal(key, -2.0, 2.0, shape, dtype)
        if distribution == "normal":
            return math.sqrt(variance) * random.normal(key, shape, dtype)
        limit = math.sqrt(3.0 * variance)
        return random.uniform(key, shape, dtype, -limit, limit)
    return init


def _scaled(scale, mode, distribution, name, note):
    def maker(in_axis=-2, out_axis=-1, dtype=np.float64):
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, dtype)
    maker.__name__ = maker.__qualname__ = name
    maker.__doc__ = (f"variance_scaling({scale}, {mode!r}, {distribution!r}) ({note}).\n\n"
                     f"        >>> fg.nn.initializers.{name}()(fg.random.key(0), (4, 3))\n")
    return maker


glorot_normal = _scaled(1.0, "fan_avg", "truncated_normal", "glorot_normal",
                        "Glorot & Bengio 2010; PyTorch's xavier_normal_")
glorot_uniform = _scaled(1.0, "fan_avg", "uniform", "glorot_uniform",
                         "Glorot & Bengio 2010; PyTorch's xavier_uniform_")
he_normal = _scaled(2.0, "fan_in", "truncated_normal", "he_normal",
                    "He et al. 2015, for relu layers; PyTorch's kaiming_normal_")
he_uniform = _scaled(2.0, "fan_in", "uniform", "he_uniform",
                     "He et al. 2015, for relu layers; PyTorch's kaiming_uniform_")
lecun_normal = _scaled(1.0, "fan_in", "truncated_normal", "lecun_normal",
                       "LeCun et al. 1998, for selu layers")
lecun_uniform = _scaled(1.0, "fan_in", "uniform", "lecun_uniform", "LeCun et al. 1998")
xavier_normal, xavier_uniform = glorot_normal, glorot_uniform
kaiming_normal, kaiming_uniform = he_normal, he_uniform


def orthogonal(scale=1.0, column_axis=-1, dtype=np.float64):
    """A (scaled) matrix with orthonormal columns or rows, whichever are fewer (Saxe et al.
    2014): the Q of a normal matrix's QR factorization, its signs fixed by R's diagonal.
    Axes other than column_axis are flattened into rows.

        >>> W = fg.nn.initializers.orthogonal()(fg.random.key(0), (4, 3))
    """
    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"orthogonal: the shape needs at least two axes, got {shape}")
        cols = shape[column_axis]
        rows = math.prod(shape) // cols
        a = random.normal(key, (max(rows, cols), min(rows, cols)), dtype)
        q, r = fnp.linalg.qr(a)
        q = q * fnp.sign(fnp.diagonal(r))
        q = q if rows >= cols else q.T
        moved = [d for i, d in enumerate(shape) if i != column_axis % len(shape)] + [cols]
        return scale * fnp.moveaxis(fnp.reshape(q, moved), -1, column_axis)
    return init
