"""The draws' shared helpers (private): checking keys, shapes and dtypes, fold_in, and the
uniforms every distribution starts from. Both funcgrad/random.py and funcgrad/random_gamma.py
import them here, so that neither imports the other's module (random.py re-exports the gamma
family).
"""
from __future__ import annotations

import operator

import numpy as np

from . import numpy as fnp
from .ir import Traced, aval_of
from .primitives.threefry import random_bits

_WORD = 2 ** 32
_FOLD = 2 ** 31        # fold_in's counters: high word >= 2**31, never reached by a shape


def _check_key(k, name):
    av = aval_of(k)
    if av.dtype != np.uint32 or av.shape[-1:] != (2,):
        raise TypeError(f"fg.random.{name}: expected a key (two uint32 words, from "
                        f"fg.random.key(seed)), got {av}")
    return k if isinstance(k, Traced) else np.asarray(k, np.uint32)


def split(key, num=2):
    """`num` new keys (shape (num, 2)) from one; the key itself should not be used again.

        >>> key, sub = fg.random.split(fg.random.key(0))
    """
    return random_bits(_check_key(key, "split"), (int(num), 2))


def fold_in(key, data):
    """A new key from a key and an integer (a step number, an example's index; may be traced).
    Different data give independent keys, and none equals a key split() makes.

        >>> step_key = fg.random.fold_in(fg.random.key(0), 7)
    """
    key = _check_key(key, "fold_in")
    if isinstance(data, Traced):
        d = fnp.astype(data, np.int64)
        lo = fnp.astype(fnp.remainder(d, _WORD), np.uint32)
        hi = fnp.astype(fnp.remainder(fnp.floor_divide(d, _WORD), _FOLD) + _FOLD, np.uint32)
        start = fnp.broadcast_to(fnp.stack([lo, hi]), aval_of(key).shape)
    else:
        d = operator.index(data) % 2 ** 63
        start = np.broadcast_to(np.array([d % _WORD, d // _WORD + _FOLD], np.uint32),
                                aval_of(key).shape)
    return random_bits(key, (2,), start)


def _shape(shape):
    return (operator.index(shape),) if np.ndim(shape) == 0 and shape != () else tuple(
        operator.index(d) for d in shape)


def _float(dtype):
    dt = np.dtype(dtype)
    if dt not in (np.float64, np.float32):
        raise TypeError(f"fg.random: dtype must be float64 or float32, got {dt}")
    return dt


def _unit(key, shape, dtype):
    """Uniform on [0, 1): 53 random bits for float64, 24 for float32, exactly (every operation
    exact, so interpreted and compiled numbers are the same bits)."""
    if dtype == np.float64:
        w = fnp.astype(random_bits(key, shape + (2,)), np.float64)
        hi, lo = fnp.floor(w[..., 0] / 32.0), fnp.floor(w[..., 1] / 64.0)
        return (hi * 67108864.0 + lo) * 2.0 ** -53
    w = fnp.astype(random_bits(key, shape), np.float64)
    return fnp.astype(fnp.floor(w / 256.0) * 2.0 ** -24, np.float32)


def _open_unit(key, shape, dtype):
    """Uniform on (0, 1): the [0, 1) grid moved by half a step."""
    step = 2.0 ** -53 if dtype == np.float64 else 2.0 ** -24
    return _unit(key, shape, dtype) + np.asarray(step / 2, dtype)


def _result_shape(shape, *params):
    """shape broadcast with the parameters' shapes (shape None: theirs alone)."""
    shapes = [aval_of(p).shape if isinstance(p, Traced) else np.shape(p) for p in params]
    return tuple(np.broadcast_shapes(*([] if shape is None else [_shape(shape)]), *shapes))
