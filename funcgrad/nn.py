"""fg.nn: activation functions and friends for models written with funcgrad.numpy.

Each is an ordinary traceable function (every transform and fg.jit apply), computed in a
numerically stable form, with PyTorch's and JAX's conventions at the kinks:

    >>> float(fg.grad(lambda x: fg.nn.relu(x))(0.0))     # relu'(0) = 0, as torch.relu
    0.0
    >>> fg.nn.log_softmax(np.array([1000.0, 1000.0]), axis=-1)     # no overflow
    array([-0.69314718, -0.69314718])

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
    """max(x, 0) with derivative 0 at 0 (torch.relu, jax.nn.relu); NaN stays NaN.

        >>> fg.nn.relu(np.array([-1.0, 0.0, 2.0]))
        array([0., 0., 2.])
    """
    return fnp.where(x <= 0, 0, x)


def sigmoid(x):
    """1 / (1 + exp(-x)), accurate in both tails (computed as exp(-log(1 + exp(-x)))).

        >>> fg.grad(lambda x: fnp.sum(fg.nn.sigmoid(x)))(np.zeros(2))
        array([0.25, 0.25])
    """
    return fnp.exp(-fnp.logaddexp(0.0, -x))


def softplus(x):
    """log(1 + exp(x)) without overflow; its derivative is sigmoid(x).

        >>> fg.nn.softplus(np.array([-1000.0, 0.0, 1000.0]))
        array([0.00000000e+00, 6.93147181e-01, 1.00000000e+03])
    """
    return fnp.logaddexp(x, 0.0)


def silu(x):
    """x * sigmoid(x) (also called swish).

        >>> fg.grad(lambda x: fnp.sum(fg.nn.silu(x)))(np.zeros(2))
        array([0.5, 0.5])
    """
    return x * sigmoid(x)


swish = silu


@custom_vjp
def erf(x):
    """The error function (scipy.special.erf, called back from traced code), with its
    derivative 2/sqrt(pi) exp(-x^2) to any order.

        >>> fg.grad(lambda x: fnp.sum(fg.nn.erf(x)))(np.zeros(2))   # 2 / sqrt(pi)
        array([1.12837917, 1.12837917])
    """
    import scipy.special
    return pure_callback(scipy.special.erf, x, x)


erf.defvjp(lambda x: (erf(x), x),
           lambda x, ct: (ct * (2.0 / math.sqrt(math.pi)) * fnp.exp(-x * x),))


def gelu(x, approximate=True):
    """Gaussian error linear unit: x * Phi(x). approximate=True (JAX's default) uses the tanh
    form; approximate=False (PyTorch's default) the exact one, through erf.

        >>> fg.nn.gelu(np.array([-1.0, 0.0, 1.0]), approximate=False)
        array([-0.15865525,  0.        ,  0.84134475])
    """
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
    """exp(x) / sum(exp(x)) along axis, computed without overflow.

        >>> fg.nn.softmax(np.array([1000.0, 1000.0]))
        array([0.5, 0.5])
    """
    e = fnp.exp(_shifted(x, axis))
    return e / fnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along axis, computed without overflow.

        >>> logits = np.array([[1.0, 2.0, 3.0]])
        >>> fg.grad(lambda z: -fg.nn.log_softmax(z)[0, 2])(logits)   # softmax - one_hot
        array([[ 0.09003057,  0.24472847, -0.33475904]])
    """
    s = _shifted(x, axis)
    return s - fnp.log(fnp.sum(fnp.exp(s), axis=axis, keepdims=True))


def one_hot(x, num_classes, dtype=np.float64, axis=-1):
    """Integer labels -> one-hot rows: out[..., k] = (x[...] == k), as `dtype`; entries
    outside [0, num_classes) give all-zero rows (jax.nn.one_hot; torch's raises there).

        >>> fg.nn.one_hot(np.array([0, 2, 5]), 3)
        array([[1., 0., 0.],
               [0., 0., 1.],
               [0., 0., 0.]])
    """
    x = fnp.asarray(x)
    hot = fnp.expand_dims(x, axis) == fnp.arange(num_classes).reshape(
        (num_classes,) + (1,) * (-axis - 1 if axis < 0 else x.ndim - axis))
    return fnp.asarray(hot, dtype=dtype)
