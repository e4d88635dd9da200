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
