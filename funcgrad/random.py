"""fg.random: random numbers from keys, that trace, compile, batch and differentiate.

A key is a value (two uint32 words), not hidden state: the same key gives the same numbers, and
a function that draws takes its key as an argument, like any other input. Split a key to get
new ones; never draw twice from one key.

    >>> key = fg.random.key(0)
    >>> key, sub = fg.random.split(key)
    >>> x = fg.random.normal(sub, (3,))                       # three standard normals
    >>> x.shape
    (3,)

Why pass keys: a draw is then a pure function of its arguments, so fg.jit compiles it to
native code (a Threefry-2x32 counter generator, funcgrad/primitives/threefry.py) with no call
back into Python, fg.vmap maps it over a batch of keys (`fg.vmap(f)(fg.random.split(key, n))`:
one independent stream per example), checkpointing recomputes exactly the numbers the forward
pass drew, and the numbers are the same interpreted, compiled, batched and on any number of
threads. A reparameterised draw differentiates with respect to its parameters:

    >>> loss = lambda mu, key: fnp.mean((mu + fg.random.normal(key, (100,))) ** 2)
    >>> z = fg.random.normal(key, (100,))
    >>> bool(np.isclose(fg.grad(loss)(1.0, key), 2 * np.mean(1.0 + z)))
    True

In a training loop, give each step its own key with fold_in (the step number may be traced):

    >>> step = fg.fori_loop(0, 3, lambda i, k: fg.random.fold_in(k, i), key)

Functions that draw from np.random keep NumPy's behaviour (a traced function sees one draw,
made while it was traced: a constant of the program). For PyTorch users: torch.manual_seed
sets a global generator; here the key is the generator, passed explicitly.

Names and signatures are JAX's (jax.random). Bits are not JAX's: the same seed gives other
numbers than JAX does.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from . import numpy as fnp
from .ir import Traced, aval_of
from ._prng import (_WORD, _check_key, _float, _open_unit, _result_shape, _shape, _unit, fold_in,
                    split)
from .primitives.threefry import random_bits
from .random_gamma import (beta, chisquare, dirichlet, f, gamma, generalized_normal, loggamma,
                           poisson, t)
from .scipy.special import ndtr, ndtri

__all__ = ["key", "PRNGKey", "split", "fold_in", "bits", "uniform", "normal", "bernoulli",
           "randint", "categorical", "gumbel", "exponential", "logistic", "laplace", "cauchy",
           "rademacher", "permutation", "choice", "truncated_normal", "multivariate_normal",
           "gamma", "loggamma", "beta", "dirichlet", "chisquare", "f", "t", "generalized_normal",
           "weibull_min", "pareto", "rayleigh", "maxwell", "double_sided_maxwell", "ball",
           "orthogonal", "poisson"]



def key(seed):
    """A key from an integer seed (any size: its low 64 bits are used), traced or not.

        >>> fg.random.key(42)
        array([ 0, 42], dtype=uint32)
    """
    if isinstance(seed, Traced):
        if aval_of(seed).dtype.kind not in "iub":
            raise TypeError(f"fg.random.key: the seed must be an integer, got {aval_of(seed)}")
        s = fnp.astype(seed, np.int64)
        hi = fnp.astype(fnp.remainder(fnp.floor_divide(s, _WORD), _WORD), np.uint32)
        return fnp.stack([hi, fnp.astype(fnp.remainder(s, _WORD), np.uint32)])
    seed = operator.index(seed) % 2 ** 64
    return np.array([seed >> 32, seed & (_WORD - 1)], np.uint32)


PRNGKey = key





def bits(key, shape=(), dtype=np.uint32):
    """Uniformly distributed unsigned integers (uint8 to uint64).

        >>> fg.random.bits(fg.random.key(0), (4,))
    """
    dt = np.dtype(dtype)
    shape = _shape(shape)
    if dt.kind != "u":
        raise TypeError(f"fg.random.bits: dtype must be unsigned (uint8 to uint64), got {dt}")
    if dt.itemsize == 8:
        w = fnp.astype(random_bits(_check_key(key, "bits"), shape + (2,)), np.uint64)
        return w[..., 0] * np.uint64(_WORD) + w[..., 1]
    w = random_bits(_check_key(key, "bits"), shape)
    return w if dt.itemsize == 4 else fnp.astype(fnp.remainder(w, 2 ** (8 * dt.itemsize)), dt)







def uniform(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0):
    """Uniform on [minval, maxval); differentiable with respect to minval and maxval.

        >>> fg.random.uniform(fg.random.key(0), (3,), minval=-1.0, maxval=1.0)
    """
    dt = _float(dtype)
    u = _unit(_check_key(key, "uniform"), _result_shape(shape, minval, maxval), dt)
    if type(minval) in (int, float) and type(maxval) in (int, float) and (minval, maxval) == (0, 1):
        return u
    return minval + (maxval - minval) * u


def normal(key, shape=(), dtype=np.float64):
    """Standard normal (Box-Muller); `mu + sigma * normal(key, shape)` for others, which
    differentiates with respect to mu and sigma.

        >>> fg.random.normal(fg.random.key(0), (2, 3))
    """
    dt, shape = _float(dtype), _shape(shape)
    n = math.prod(shape)
    u = _unit(_check_key(key, "normal"), ((n + 1) // 2, 2), dt)
    r = fnp.sqrt(-2.0 * fnp.log1p(-u[:, 0]))            # 1 - u in (0, 1]: r finite
    theta = np.asarray(2 * np.pi, dt) * u[:, 1]
    z = fnp.concatenate([r * fnp.cos(theta), r * fnp.sin(theta)])
    return fnp.reshape(z[:n], shape)


def bernoulli(key, p=0.5, shape=None):
    """True with probability p (p broadcasts to shape).

        >>> fg.random.bernoulli(fg.random.key(0), 0.3, (5,))
    """
    return _unit(_check_key(key, "bernoulli"), _result_shape(shape, p), np.float64) < p


def randint(key, shape, minval, maxval, dtype=np.int64):
    """Integers uniform on [minval, maxval) (bias below (maxval - minval) / 2**53).

        >>> fg.random.randint(fg.random.key(0), (3,), 0, 10)
    """
    shape = _result_shape(shape, minval, maxval)
    u = _unit(_check_key(key, "randint"), shape, np.float64)
    lo, hi = fnp.astype(minval, np.float64), fnp.astype(maxval, np.float64)
    span = fnp.maximum(hi - lo, 0.0)
    return fnp.astype(lo + fnp.minimum(fnp.floor(u * span), fnp.maximum(span - 1.0, 0.0)), dtype)


def gumbel(key, shape=(), dtype=np.float64):
    """Standard Gumbel, -log(-log(U)).

        >>> fg.random.gumbel(fg.random.key(0), (3,))
    """
    dt = _float(dtype)
    return -fnp.log(-fnp.log(_open_unit(_check_key(key, "gumbel"), _shape(shape), dt)))


def categorical(key, logits, axis=-1, shape=None):
    """Indices drawn with probabilities softmax(logits) along `axis` (the Gumbel-max trick);
    `shape` is the result's shape (default: logits' without axis).

        >>> fg.random.categorical(fg.random.key(0), fnp.log(np.array([0.2, 0.8])), shape=(10,))
    """
    logits = fnp.moveaxis(fnp.asarray(logits), axis, -1)
    batch = aval_of(logits).shape[:-1] if shape is None else _shape(shape)
    shape = tuple(batch) + aval_of(logits).shape[-1:]
    g = gumbel(_check_key(key, "categorical"), shape, aval_of(logits).dtype
               if aval_of(logits).dtype in (np.float32, np.float64) else np.float64)
    return fnp.argmax(logits + g, axis=-1)


def exponential(key, shape=(), dtype=np.float64):
    """Standard exponential, -log(1 - U).

        >>> fg.random.exponential(fg.random.key(0), (3,)) / 2.0      # rate 2
    """
    return -fnp.log1p(-_unit(_check_key(key, "exponential"), _shape(shape), _float(dtype)))


def logistic(key, shape=(), dtype=np.float64):
    """Standard logistic, log(U / (1 - U)).

        >>> fg.random.logistic(fg.random.key(0), (3,))
    """
    u = _open_unit(_check_key(key, "logistic"), _shape(shape), _float(dtype))
    return fnp.log(u) - fnp.log1p(-u)


def laplace(key, shape=(), dtype=np.float64):
    """Standard Laplace (double exponential).

        >>> fg.random.laplace(fg.random.key(0), (3,))
    """
    v = 2.0 * _open_unit(_check_key(key, "laplace"), _shape(shape), _float(dtype)) - 1.0
    return -fnp.sign(v) * fnp.log1p(-fnp.abs(v))


def cauchy(key, shape=(), dtype=np.float64):
    """Standard Cauchy, tan(pi (U - 1/2)).

        >>> fg.random.cauchy(fg.random.key(0), (3,))
    """
    u = _open_unit(_check_key(key, "cauchy"), _shape(shape), _float(dtype))
    return fnp.tan(np.pi * (u - 0.5))


def rademacher(key, shape=(), dtype=np.int64):
    """-1 or +1 with equal probability.

        >>> fg.random.rademacher(fg.random.key(0), (4,))
    """
    b = fnp.remainder(random_bits(_check_key(key, "rademacher"), _shape(shape)), 2)
    return fnp.astype(2 * fnp.astype(b, np.int64) - 1, dtype)


def permutation(key, x, axis=0):
    """A random permutation of range(x) (x an integer), or of x's entries along `axis`.

        >>> fg.random.permutation(fg.random.key(0), 5)
    """
    key = _check_key(key, "permutation")
    if np.ndim(x) == 0 and not isinstance(x, Traced):
        return fnp.argsort(_unit(key, (operator.index(x),), np.float64))
    n = aval_of(x).shape[axis]
    return fnp.take(x, fnp.argsort(_unit(key, (n,), np.float64)), axis=axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Entries of a (or of range(a), a an integer) drawn with replacement, or without (each
    at most once), uniformly or with probabilities p.

        >>> fg.random.choice(fg.random.key(0), 5, (3,), replace=False)
    """
    key, shape = _check_key(key, "choice"), _shape(shape)
    n = operator.index(a) if np.ndim(a) == 0 and not isinstance(a, Traced) else aval_of(a).shape[axis]
    k = math.prod(shape)
    if not replace and k > n:
        raise ValueError(f"fg.random.choice: cannot take {k} samples from {n} without "
                         "replacement; pass replace=True or a smaller shape")
    if p is None and replace:
        idx = randint(key, (k,), 0, n)
    elif p is None:
        idx = fnp.argsort(_unit(key, (n,), np.float64))[:k]
    elif replace:
        idx = categorical(key, _log_prob(p), shape=(k,))
    else:                      # Gumbel top-k: the k largest of log p + Gumbel noise
        idx = fnp.argsort(-(_log_prob(p) + gumbel(key, (n,))))[:k]
    if np.ndim(a) == 0 and not isinstance(a, Traced):
        return fnp.reshape(idx, shape)
    picked = fnp.take(a, idx, axis=axis)
    a_shape = aval_of(a).shape
    return fnp.reshape(picked, a_shape[:axis] + shape + a_shape[axis + 1:])


def _log_prob(p):
    """log p, -inf (without NumPy's divide warning) where p is 0."""
    p = fnp.asarray(p)
    return fnp.where(p > 0, fnp.log(fnp.where(p > 0, p, 1.0)), -np.inf)


def truncated_normal(key, lower, upper, shape=None, dtype=np.float64):
    """Standard normal restricted to [lower, upper] (the inverse of its CDF at a uniform
    point between the bounds'); differentiable with respect to lower and upper.

        >>> fg.random.truncated_normal(fg.random.key(0), -2.0, 2.0, (3,))
    """
    dt = _float(dtype)
    shape = _result_shape(shape, lower, upper)
    u = _open_unit(_check_key(key, "truncated_normal"), shape, dt)
    a, b = ndtr(lower), ndtr(upper)
    return fnp.astype(fnp.clip(ndtri(a + (b - a) * u), lower, upper), dt)


def multivariate_normal(key, mean, cov, shape=None, dtype=np.float64):
    """Normal with mean `mean` (..., n) and covariance `cov` (..., n, n), through the Cholesky
    factor of cov; differentiable with respect to both.

        >>> fg.random.multivariate_normal(fg.random.key(0), np.zeros(2), np.eye(2), (5,))
    """
    mean, cov = fnp.asarray(mean), fnp.asarray(cov)
    n = aval_of(mean).shape[-1]
    batch = (np.broadcast_shapes(aval_of(mean).shape[:-1], aval_of(cov).shape[:-2])
             if shape is None else _shape(shape))
    z = normal(_check_key(key, "multivariate_normal"), tuple(batch) + (n,), _float(dtype))
    chol = fnp.linalg.cholesky(cov)
    return mean + fnp.einsum("...ij,...j->...i", chol, z)


def weibull_min(key, scale, concentration, shape=(), dtype=np.float64):
    """Weibull draws, scale * E^(1/concentration) for a standard exponential E; differentiable
    with respect to scale and concentration.

        >>> fg.random.weibull_min(fg.random.key(0), 2.0, 1.5, (3,)).shape
        (3,)
    """
    shape = _result_shape(shape, scale, concentration)
    e = -fnp.log(_open_unit(_check_key(key, "weibull_min"), shape, np.float64))
    return fnp.astype(scale * e ** (1.0 / fnp.asarray(concentration)), _float(dtype))


def pareto(key, b, shape=None, dtype=np.float64):
    """Pareto draws of shape b on [1, inf), P(X > x) = x^-b (exp(E / b), E exponential);
    differentiable with respect to b.

        >>> bool(np.all(fg.random.pareto(fg.random.key(0), 3.0, (4,)) >= 1.0))
        True
    """
    shape = _result_shape(shape, b)
    e = -fnp.log(_open_unit(_check_key(key, "pareto"), shape, np.float64))
    return fnp.astype(fnp.exp(e / b), _float(dtype))


def rayleigh(key, scale, shape=None, dtype=np.float64):
    """Rayleigh draws, scale * sqrt(2 E) for a standard exponential E; differentiable with
    respect to scale.

        >>> fg.random.rayleigh(fg.random.key(0), 2.0, (3,)).shape
        (3,)
    """
    shape = _result_shape(shape, scale)
    e = -fnp.log(_open_unit(_check_key(key, "rayleigh"), shape, np.float64))
    return fnp.astype(scale * fnp.sqrt(2.0 * e), _float(dtype))


def maxwell(key, shape=(), dtype=np.float64):
    """Maxwell-Boltzmann draws (scale 1): the length of a standard normal 3-vector.

        >>> fg.random.maxwell(fg.random.key(0), (3,)).shape
        (3,)
    """
    z = normal(_check_key(key, "maxwell"), _shape(shape) + (3,), np.float64)
    return fnp.astype(fnp.sqrt(fnp.sum(z * z, axis=-1)), _float(dtype))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=np.float64):
    """loc + scale * S * M for a random sign S and a Maxwell draw M; differentiable with
    respect to loc and scale.

        >>> fg.random.double_sided_maxwell(fg.random.key(0), 0.0, 1.0, (3,)).shape
        (3,)
    """
    shape = _result_shape(shape, loc, scale)
    k = split(_check_key(key, "double_sided_maxwell"))
    sign = 2.0 * fnp.floor(2.0 * _unit(k[0], shape, np.float64)) - 1.0
    return fnp.astype(loc + scale * sign * maxwell(k[1], shape), _float(dtype))


def ball(key, d, p=2, shape=(), dtype=np.float64):
    """Points uniform in the unit p-norm ball of R^d (result shape + (d,)): generalized
    normals G (density proportional to exp(-|g|^p)) scaled by (sum |G|^p + E)^(-1/p), E
    exponential (Barthe, Guedon, Mendelson & Naor, 2005).

        >>> x = fg.random.ball(fg.random.key(0), 3, 2, (5,))
        >>> bool(np.all(np.linalg.norm(x, axis=-1) <= 1.0))
        True
    """
    shape = _shape(shape)
    k = split(_check_key(key, "ball"))
    g = generalized_normal(k[0], p, shape + (operator.index(d),))
    e = exponential(k[1], shape)
    r = (fnp.sum(fnp.abs(g) ** p, axis=-1) + e) ** (1.0 / p)
    return fnp.astype(g / r[..., None], _float(dtype))


def orthogonal(key, n, shape=(), dtype=np.float64):
    """Orthogonal n x n matrices uniform under the Haar measure (result shape + (n, n)): Q of
    the QR factorisation of a standard normal matrix, its columns' signs made those of R's
    diagonal (Mezzadri, 2007).

        >>> q = fg.random.orthogonal(fg.random.key(0), 3)
        >>> bool(np.allclose(q.T @ q, np.eye(3)))
        True
    """
    n = operator.index(n)
    z = normal(_check_key(key, "orthogonal"), _shape(shape) + (n, n), np.float64)
    q, r = fnp.linalg.qr(z)
    return fnp.astype(q * fnp.sign(fnp.diagonal(r, axis1=-2, axis2=-1))[..., None, :], _float(dtype))
