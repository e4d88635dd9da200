"""A fast content digest of large arrays, for tiering's guards (funcgrad/tiering.py).

A compiled tier must notice when an array its function reads from outside its arguments is
changed in place. Comparing a saved copy would double the memory; hashing with hashlib runs at
about 1 GB/s. This kernel mixes each 64-bit word with its position and sums the results, which
runs near memory bandwidth and is independent of alignment order.
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["array_digest"]


@numba.njit(cache=True, nogil=True)
def _mix_sum(words):
    h = np.uint64(0x9E3779B97F4A7C15)
    total = np.uint64(0)
    for i in range(words.size):
        z = words[i] + np.uint64(i) * h
        z = (z ^ (z >> np.uint64(33))) * np.uint64(0xFF51AFD7ED558CCD)
        z = (z ^ (z >> np.uint64(33))) * np.uint64(0xC4CEB9FE1A85EC53)
        total += z ^ (z >> np.uint64(33))
    return total


def array_digest(a: np.ndarray) -> int:
    """A 64-bit digest of the bytes of `a` (its shape and dtype are not included)."""
    flat = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    n8 = flat.size // 8 * 8
    words = flat[:n8].view(np.uint64)
    if not words.flags.aligned:
        words = words.copy()
    return int(_mix_sum(words)) ^ hash(flat[n8:].tobytes())
