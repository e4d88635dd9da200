"""Runtime pieces kernels call, compiled once per machine instead of once per process.

A kernel that writes `np.linalg.solve(a, b)` has Numba compile its whole overload (LAPACK
calls, copies, the formatted error messages of its shape checks) into that kernel, again in
every new process: 6.5 cpu-s for one solve (benchmarks/README.md, compile cost). The
functions here are ordinary Numba functions with Numba's on-disk cache (`cache=True`): the
first process on a machine compiles each for the types it meets, every later one loads the
machine code, and a kernel only calls them (a new kernel calling a solve compiles in 1.3
cpu-s instead of 6.5). Kernels reach them through vecmath (`_vm.dot`), so a change to this
file changes every kernel's cache key (cache._vecmath_digest). The linear algebra is in
lapack.py.

Callers pass C-contiguous arrays (np.ascontiguousarray), so each function has one signature
per dtype and rank.
"""
import numba
import numpy as np

_cached = numba.njit(cache=True, error_model="numpy", nogil=True)


@_cached
def dot(a, b):
    """The matrix product of two 2-d arrays (BLAS gemm; gemv where one is a vector)."""
    return np.dot(a, b)


@_cached
def dot_into(a, b, out):
    """out = a @ b for 2-d a, b and a C-contiguous 2-d out (a slice of a batch)."""
    np.dot(a, b, out)


_MASK = np.uint64(0xFFFFFFFF)


@_cached
def threefry_bits(keys, starts, n):
    """(batch, 2) uint32 keys and first counters -> (batch, n) uint32 words: words 2j and
    2j + 1 are Threefry-2x32 (20 rounds) of the key and the 64-bit counter start + j, as
    primitives/threefry.py computes them (32-bit sums in 64-bit integers, masked)."""
    out = np.empty((keys.shape[0], n), np.uint32)
    rot = (13, 15, 26, 6, 17, 29, 16, 24)
    for b in range(keys.shape[0]):
        k0, k1 = np.uint64(keys[b, 0]), np.uint64(keys[b, 1])
        ks = (k0, k1, k0 ^ k1 ^ np.uint64(0x1BD11BDA))
        first = np.uint64(starts[b, 0]) | (np.uint64(starts[b, 1]) << np.uint64(32))
        for j in range((n + 1) // 2):
            c = first + np.uint64(j)
            x0, x1 = ((c & _MASK) + ks[0]) & _MASK, ((c >> np.uint64(32)) + ks[1]) & _MASK
            for group in range(5):
                for i in range(4):
                    r = np.uint64(rot[4 * (group % 2) + i])
                    x0 = (x0 + x1) & _MASK
                    x1 = ((x1 << r) | (x1 >> (np.uint64(32) - r))) & _MASK
                    x1 = x1 ^ x0
                x0 = (x0 + ks[(group + 1) % 3]) & _MASK
                x1 = (x1 + ks[(group + 2) % 3] + np.uint64(group + 1)) & _MASK
            out[b, 2 * j] = x0
            if 2 * j + 1 < n:
                out[b, 2 * j + 1] = x1
    return out


@_cached
def argsort_rows(x):
    """The stable argsort of each row of the C-contiguous 2-d x (Numba's mergesort: NaN last,
    as NumPy's kind="stable")."""
    out = np.empty(x.shape, np.intp)
    for r in range(x.shape[0]):
        s = np.argsort(x[r], kind="mergesort")
        for j in range(x.shape[1]):
            out[r, j] = s[j]
    return out


@numba.njit(inline="always")
def _less(p, q):
    """NumPy's sort order: NaN after every number (for integers plain <)."""
    return p < q or (q != q and p == p)


@_cached
def searchsorted(a, v, right):
    """np.searchsorted(a, v, side) for a 1-d a and the 1-d C-contiguous v of a's dtype, step
    for step as NumPy's binary search (npysort's binsearch, whose comparison is a < b on the
    left side and a <= b on the right): each search starts from the last one's bounds when
    the keys come in order, so an unsorted `a` gives NumPy's indices too."""
    out = np.empty(v.shape[0], np.intp)
    n = a.shape[0]
    lo, hi = 0, n
    if v.shape[0] > 0:
        last = v[0]
    for k in range(v.shape[0]):
        x = v[k]
        if (not _less(x, last)) if right else _less(last, x):
            hi = n
        else:
            lo = 0
            hi = hi + 1 if hi < n else n
        last = x
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if (not _less(x, a[mid])) if right else _less(a[mid], x):
                lo = mid + 1
            else:
                hi = mid
        out[k] = lo
    return out
