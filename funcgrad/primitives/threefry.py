"""Random bits: one primitive, `random_bits[shape]`, the counter-based generator fg.random's
distributions are written with.

A key is two uint32 words. random_bits(keys, starts, shape) gives, for each key of `keys` (shape
(..., 2): leading axes are a batch of keys) and its first counter in `starts` (the same shape:
low and high word of a 64-bit number s), the uint32 words of `shape`: words 2j and 2j + 1 are
Threefry-2x32 (20 rounds; Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as
1, 2, 3", SC 2011) of the key and the counter s + j, split into its low and high word. Each
word depends only on the key and its position, so the interpreter (NumPy, here), compiled
kernels (backend/runtime.py's threefry_bits) and vmap give the same bits in any order, on any
number of threads. Counters whose high word has its top bit set are never reached by a shape
(2**63 blocks): fg.random.fold_in hashes its data there, so its keys and the bits of any shape
come from disjoint counters.
"""
from __future__ import annotations

import numpy as np

from ..ir import Aval, aval_of
from .base import define, operands_batch

ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
PARITY = 0x1BD11BDA         # Threefry's key-schedule constant for 32-bit words


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32-20 of counters (x0, x1) under key (k0, k1): uint32 arrays, broadcast."""
    k0, k1, x0, x1 = (np.asarray(v, np.uint32) for v in (k0, k1, x0, x1))
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(PARITY))
    with np.errstate(over="ignore"):            # (sums wrap around, modulo 2**32)
        x0, x1 = x0 + ks[0], x1 + ks[1]
        for group in range(5):
            for r in ROTATIONS[4 * (group % 2):4 * (group % 2) + 4]:
                x0 = x0 + x1
                x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
                x1 = x1 ^ x0
            x0 = x0 + ks[(group + 1) % 3]
            x1 = x1 + ks[(group + 2) % 3] + np.uint32(group + 1)
    return x0, x1


def _bits_impl(keys, starts, *, shape):
    keys, starts = np.asarray(keys, np.uint32), np.asarray(starts, np.uint32)
    batch, n = keys.shape[:-1], int(np.prod(shape, dtype=np.int64))
    flat, first = keys.reshape(-1, 2), starts.reshape(-1, 2).astype(np.uint64)
    blocks = (first[:, :1] | (first[:, 1:] << np.uint64(32))) + np.arange((n + 1) // 2, dtype=np.uint64)
    lo, hi = (blocks & np.uint64(0xFFFFFFFF)).astype(np.uint32), (blocks >> np.uint64(32)).astype(np.uint32)
    y0, y1 = threefry2x32(flat[:, :1], flat[:, 1:], lo, hi)
    words = np.stack([y0, y1], axis=-1).reshape(len(flat), -1)[:, :n]
    return np.ascontiguousarray(words).reshape(batch + tuple(shape))


def _bits_abstract(keys, starts, *, shape):
    if keys.dtype != np.uint32 or keys.ndim < 1 or keys.shape[-1] != 2:
        raise TypeError(f"random_bits: a key is two uint32 words (shape (..., 2)), got {keys}; "
                        "make one with fg.random.key(seed)")
    if starts != keys:
        raise TypeError(f"random_bits: the first counters {starts} must be shaped as the keys {keys}")
    return Aval(keys.shape[:-1] + tuple(shape), np.uint32)


# (exact: integer arithmetic; no derivative: the bits are integers, and distributions are
# differentiated through the transformations fg.random applies to them)
random_bits_p = define(
    "random_bits", impl=_bits_impl, abstract=_bits_abstract, differentiable=False, exact=True,
    batch=operands_batch())


def random_bits(keys, shape, start=None):
    """uint32 words of `shape` for each key of keys (..., 2), from the counter `start` (two
    words, low and high; default 0) on (see the module docstring)."""
    if start is None:
        start = np.zeros(aval_of(keys).shape, np.uint32)
    return random_bits_p.bind(keys, start, shape=tuple(int(d) for d in shape))
