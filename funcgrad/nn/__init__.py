"""fg.nn: activation functions and friends for models written with funcgrad.numpy.

Each is an ordinary traceable function (every transform and fg.jit apply), computed in a
numerically stable form, with PyTorch's and JAX's conventions at the kinks:

    >>> float(fg.grad(lambda x: fg.nn.relu(x))(0.0))     # relu'(0) = 0, as torch.relu
    0.0
    >>> fg.nn.log_softmax(np.array([1000.0, 1000.0]), axis=-1)     # no overflow
    array([-0.69314718, -0.69314718])

`maximum(x, 0)` splits the derivative at the tie (0.5 at x = 0; see docs/conventions.md);
`relu` keeps 0 there, which is what training code expects; so do the other piecewise
activations at their kinks (the value of the left piece's derivative, as JAX).
Weight initializers taking a key are in fg.nn.initializers (funcgrad/nn/initializers.py).
"""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from ..higher_order.custom import host_holomorphic, stop_gradient
from ..primitives import special_functions

__all__ = ["relu", "relu6", "leaky_relu", "elu", "celu", "selu", "sigmoid", "log_sigmoid",
           "softplus", "silu", "swish", "gelu", "glu", "mish", "tanh", "hard_tanh",
           "hard_sigmoid", "hard_silu", "hard_swish", "soft_sign", "squareplus", "sparse_plus",
           "sparse_sigmoid", "identity", "softmax", "log_softmax", "logsumexp", "standardize",
           "one_hot", "dot_product_attention", "erf"]

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


def erf(x):
    """The error function (scipy.special.erf; native code in fg.jit kernels), with its
    derivative 2/sqrt(pi) exp(-x^2) to any order. Complex arguments are SciPy's, called back.

        >>> fg.grad(lambda x: fnp.sum(fg.nn.erf(x)))(np.zeros(2))   # 2 / sqrt(pi)
        array([1.12837917, 1.12837917])
    """
    if special_functions.traced_complex(x):
        return _complex_erf(x)
    return special_functions.erf(x)


_complex_erf = host_holomorphic(lambda z: special_functions.scipy_function("erf")(z),
                                lambda z: (2.0 / math.sqrt(math.pi)) * fnp.exp(-(z * z)))


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


# ---- more activations (jax.nn's names and defaults) --------------------------------------------

def relu6(x):
    """min(max(x, 0), 6), derivative 0 at 0 and at 6.

        >>> fg.nn.relu6(np.array([-1.0, 3.0, 7.0]))
        array([0., 3., 6.])
    """
    return fnp.where(x <= 0, 0.0, fnp.where(x >= 6, 6.0, x))


def leaky_relu(x, negative_slope=0.01):
    """x for x >= 0, negative_slope * x below.

        >>> fg.nn.leaky_relu(np.array([-2.0, 3.0]), 0.1)
        array([-0.2,  3. ])
    """
    return fnp.where(x >= 0, x, negative_slope * x)


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) below (no overflow for large x).

        >>> fg.nn.elu(np.array([-1.0, 2.0]))
        array([-0.63212056,  2.        ])
    """
    return fnp.where(x > 0, x, alpha * fnp.expm1(fnp.where(x > 0, 0.0, x)))


def celu(x, alpha=1.0):
    """Continuously differentiable elu: max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1).

        >>> fg.nn.celu(np.array([-1.0, 2.0]), alpha=2.0)
        array([-0.78693868,  2.        ])
    """
    return fnp.where(x > 0, x, alpha * fnp.expm1(fnp.where(x > 0, 0.0, x) / alpha))


def selu(x):
    """Scaled elu with the self-normalising constants (Klambauer et al. 2017).

        >>> fg.nn.selu(np.array([-1.0, 1.0]))
        array([-1.11133074,  1.05070099])
    """
    return 1.0507009873554804934193349852946 * elu(x, 1.6732632423543772848170429916717)


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), accurate in both tails.

        >>> fg.nn.log_sigmoid(np.array([-1000.0, 0.0]))
        array([-1.00000000e+03, -6.93147181e-01])
    """
    return -softplus(-x)


def glu(x, axis=-1):
    """Gated linear unit: the first half of x along axis times sigmoid of the second half.

        >>> fg.nn.glu(np.array([1.0, 2.0, 0.0, 100.0]))
        array([0.5, 2. ])
    """
    a, b = fnp.split(x, 2, axis=axis)
    return a * sigmoid(b)


def mish(x):
    """x * tanh(softplus(x)) (Misra 2019).

        >>> fg.nn.mish(np.array([0.0, 1.0]))
        array([0.        , 0.86509839])
    """
    return x * fnp.tanh(softplus(x))


def tanh(x):
    """The hyperbolic tangent (np.tanh), here for code that takes activations from fg.nn.

        >>> fg.nn.tanh(np.array([0.0, 20.0]))
        array([0., 1.])
    """
    return fnp.tanh(x)


def hard_tanh(x):
    """x clipped to [-1, 1] (derivative 0 at and beyond the ends).

        >>> fg.nn.hard_tanh(np.array([-3.0, 0.5, 2.0]))
        array([-1. ,  0.5,  1. ])
    """
    return fnp.where(x >= 1, 1.0, fnp.where(x <= -1, -1.0, x))


def hard_sigmoid(x):
    """relu6(x + 3) / 6, a piecewise linear sigmoid.

        >>> fg.nn.hard_sigmoid(np.array([-4.0, 0.0, 4.0]))
        array([0. , 0.5, 1. ])
    """
    return relu6(x + 3.0) / 6.0


def hard_silu(x):
    """x * hard_sigmoid(x) (also called hard_swish; MobileNetV3).

        >>> fg.nn.hard_silu(np.array([-4.0, 1.0]))
        array([-0.        ,  0.66666667])
    """
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def soft_sign(x):
    """x / (|x| + 1).

        >>> fg.nn.soft_sign(np.array([-3.0, 1.0]))
        array([-0.75,  0.5 ])
    """
    return x / (fnp.abs(x) + 1.0)


def squareplus(x, b=4.0):
    """(x + sqrt(x^2 + b)) / 2, a smooth relu without exponentials (Barron 2021).

        >>> fg.nn.squareplus(np.array([0.0, 3.0]))
        array([1.        , 3.30277564])
    """
    return (x + fnp.sqrt(x * x + b)) / 2.0


def sparse_plus(x):
    """0 below -1, x above 1, (x + 1)^2 / 4 between (a piecewise quadratic softplus).

        >>> fg.nn.sparse_plus(np.array([-2.0, 0.0, 2.0]))
        array([0.  , 0.25, 2.  ])
    """
    return fnp.where(x <= -1.0, 0.0, fnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4.0))


def sparse_sigmoid(x):
    """clip((x + 1) / 2, 0, 1), the derivative of sparse_plus.

        >>> fg.nn.sparse_sigmoid(np.array([-2.0, 0.0, 2.0]))
        array([0. , 0.5, 1. ])
    """
    return fnp.where(x <= -1.0, 0.0, fnp.where(x >= 1.0, 1.0, (x + 1.0) / 2.0))


def identity(x):
    """x itself (for code that takes an activation as an argument).

        >>> fg.nn.identity(np.array([-1.0, 2.0]))
        array([-1.,  2.])
    """
    return x


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """(x - mean) / sqrt(variance + epsilon) along axis (layer normalisation without the
    affine part); mean and variance are computed when not given.

        >>> fg.nn.standardize(np.array([1.0, 2.0, 3.0]))
        array([-1.22473569,  0.        ,  1.22473569])
    """
    if mean is None:
        mean = fnp.mean(x, axis=axis, keepdims=True, where=where)
    if variance is None:
        variance = fnp.mean(fnp.square(x - mean), axis=axis, keepdims=True, where=where)
    return (x - mean) / fnp.sqrt(variance + epsilon)


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False):
    """softmax(query . key^T * scale + bias, masked) . value, over the sequence axis.

    Shapes as jax.nn.dot_product_attention: query (..., T, N, H), key and value (..., S, N, H)
    (T, S sequence lengths, N heads, H features per head; key and value may have fewer heads,
    a divisor of N, shared by groups of query heads); bias and mask broadcast to
    (..., N, T, S); mask True keeps a score; is_causal keeps key positions up to the query's.
    scale defaults to 1 / sqrt(H). Differentiable in query, key, value and bias.

        >>> q = np.ones((2, 1, 4)); kv = np.arange(12.0).reshape(3, 1, 4) / 12
        >>> fg.nn.dot_product_attention(q, kv, kv).shape
        (2, 1, 4)
    """
    query, key, value = fnp.asarray(query), fnp.asarray(key), fnp.asarray(value)
    heads, kv_heads = query.shape[-2], key.shape[-2]
    if heads % kv_heads:
        raise ValueError(f"dot_product_attention: query has {heads} heads, key {kv_heads}: "
                         "the key's must divide the query's")
    if kv_heads != heads:                       # grouped-query attention: repeat the kv heads
        key = fnp.repeat(key, heads // kv_heads, axis=-2)
        value = fnp.repeat(value, heads // kv_heads, axis=-2)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    logits = fnp.einsum("...tnh,...snh->...nts", query, key) * scale
    if bias is not None:
        logits = logits + bias
    keep = None if mask is None else fnp.asarray(mask, dtype=bool)
    if is_causal:
        t, s = query.shape[-3], key.shape[-3]
        causal = np.tril(np.ones((t, s), bool), k=s - t)
        keep = causal if keep is None else fnp.logical_and(keep, causal)
    if keep is not None:                        # (a row with nothing kept: zeros, not 0/0)
        seen = fnp.any(fnp.broadcast_to(keep, fnp.shape(logits)), axis=-1, keepdims=True)
        logits = fnp.where(keep, logits, fnp.where(seen, -np.inf, 0.0))
    weights = softmax(logits, axis=-1)
    if keep is not None:
        weights = fnp.where(keep, weights, 0.0)
    return fnp.einsum("...nts,...snh->...tnh", weights, value)
