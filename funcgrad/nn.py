"""fg.nn: activation functions and friends for models written with funcgrad.numpy.

Each is an ordinary traceable function (every transform and fg.jit apply), computed in a
numerically stable form, with PyTorch's and JAX's conventions at the kinks:

    >>> import funcgrad as fg
    >>> fg.grad(lambda x: fg.nn.relu(x))(0.0)          # 0.0: relu'(0) = 0, as torch.relu
    >>> fg.nn.log_softmax(logits, axis=-1)

`maximum(x, 0)` splits the derivative at the tie (0.5 at x = 0; see docs/conventions.md);
`relu` keeps 0 there, which is what training code expects.
"""
from __future__ import annotations

import math

import numpy as np

from . import numpy as fnp
from .higher_order.custom import custom_vjp, pure_callback, stop_gradient

__all__ = ["relu", "sigmoid", "softplus", "silu", "swish", "gelu", "softmax", "log_softmax",
           "logsumexp", "one_hot", "erf"]

logsumexp = fnp.logsumexp


def relu(x):
    """max(x, 0) with derivative 0 at 0 (torch.relu, jax.nn.relu); NaN stays NaN."""
    return fnp.where(x <= 0, 0, x)


def sigmoid(x):
    """1 / (1 + exp(-x)), accurate in both tails (computed as exp(-log(1 + exp(-x))))."""
    return fnp.exp(-fnp.logaddexp(0.0, -x))


def softplus(x):
    """log(1 + exp(x)) without overflow; its derivative is sigmoid(x)."""
    return fnp.logaddexp(x, 0.0)


def silu(x):
    """x * sigmoid(x) (also called swish)."""
    return x * sigmoid(x)


swish = silu


@custom_vjp
def erf(x):
    """The error function (scipy.special.erf, called back from traced code), with its
    derivative 2/sqrt(pi) exp(-x^2) to any order."""
    import scipy.special
    return pure_callback(scipy.special.erf, x, x)


erf.defvjp(lambda x: (erf(x), x),
           lambda x, ct: (ct * (2.0 / math.sqrt(math.pi)) * fnp.exp(-x * x),))


def gelu(x, approximate=True):
    """Gaussian error linear unit: x * Phi(x). approximate=True (JAX's default) uses the tanh
    form; approximate=False (PyTorch's default) the exact one, through erf."""
    if approximate:
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + fnp.tanh(c * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _shifted(x, axis):
    """x minus its (finite) maximum along axis, treated as a constant: the result of softmax
    does not depend on the shift, so no derivative flows through it."""
    m = fnp.max(x, axis=axis, keepdims=True)
    return x - stop_gradient(fnp.where(fnp.isfinite(m), m, 0.0))


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along axis, computed without overflow."""
    e = fnp.exp(_shifted(x, axis))
    return e / fnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along axis, computed without overflow."""
    s = _shifted(x, axis)
    return s - fnp.log(fnp.sum(fnp.exp(s), axis=axis, keepdims=True))


def one_hot(x, num_classes, dtype=np.float64, axis=-1):
    """Integer labels -> one-hot rows: out[..., k] = (x[...] == k), as `dtype`; entries
    outside [0, num_classes) give all-zero rows (jax.nn.one_hot; torch's raises there)."""
    x = fnp.asarray(x)
    hot = fnp.expand_dims(x, axis) == fnp.arange(num_classes).reshape(
        (num_classes,) + (1,) * (-axis - 1 if axis < 0 else x.ndim - axis))
    return fnp.asarray(hot, dtype=dtype)
