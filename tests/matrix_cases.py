"""Cases of the backend correctness matrix (tests/test_backend_matrix.py).

Two kinds of case, each batched so that one compiled kernel covers many operations:

* Pointwise: every elementwise operation (the ELEMENTWISE table, plus integer_pow, select,
  convert_element_type and friends) on 0-d inputs, one kernel per dtype, called once per point
  of a grid of domain values and special values (NaN, +-inf, +-0, subnormal, huge) and compared
  with the interpreter run on the whole grid at once. A 0-d kernel has no loops, so it compiles
  in a few seconds for all ~80 operations; what loops add (broadcasting, strides, empty
  shapes, mixed dtypes, vectorised math) is covered by the elementwise array cases.
* Array cases: a function of arrays returning a dict of named results; inputs are transposed,
  strided, reversed or Fortran-ordered views, 0-d or empty, with NaN/inf and ties where the
  operation cares. The names of the results are what failure messages report.

Numba's compile time, not the number of kernels, is the budget: it grows with the size of a
kernel (faster than linearly for large ones), at roughly 0.1 s per elementwise operation and
0.3-1 s per reduction, contraction, indexing or linear-algebra operation (forward and
backward). So each case has about ten operations, one or two per variant worth checking.
"""
from __future__ import annotations

import dataclasses
from functools import partial
from typing import Callable

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.primitives.elementwise import ELEMENTWISE
from conftest import COMPLEX_DOMAINS, DOMAINS as BASE_DOMAINS

L = fnp.linalg


# ---- inputs -------------------------------------------------------------------------------------

DOMAINS = dict(BASE_DOMAINS, ties=lambda r, s: r.integers(-2, 3, s).astype(float))  # many equal values
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0]
_seed = [0]


def rand(shape=(), domain="real", layout="C", dtype=np.float64, specials=0):
    """A random array of `shape` from `domain` (a new seed per call), stored as `layout`: "C",
    "T" (transposed view), "F" (Fortran order), "strided" (every other element along each
    axis) or "rev" (reversed along each axis). specials=k writes NaN, +-inf, +-0 into every
    k-th element."""
    _seed[0] += 1
    shape = tuple(shape)
    base = {"T": shape[::-1], "strided": tuple(2 * n for n in shape)}.get(layout, shape)
    domains = COMPLEX_DOMAINS if np.dtype(dtype).kind == "c" else DOMAINS
    a = np.asarray(domains[domain](np.random.default_rng(_seed[0]), base), dtype)
    if specials:
        flat = a.reshape(-1)
        flat[::specials] = np.resize(np.array(SPECIALS, dtype), flat[::specials].shape)
    if layout == "T":
        a = a.T
    elif layout == "F":
        a = np.asfortranarray(a)
    elif layout in ("strided", "rev"):
        a = a[(slice(None, None, 2 if layout == "strided" else -1),) * len(shape)]
    assert a.shape == shape
    return a


def A(*args, **kwargs):
    """An input maker: A(shape, ...)() is rand(shape, ...), fresh data for every operation."""
    return lambda: rand(*args, **kwargs)


def hard_values(dtype, n=64):
    """Input maker: random values plus the arguments that polynomial math kernels find hard
    (huge sin/cos arguments, exp's overflow and underflow edges, subnormals, pi/2)."""
    hard = [1e8, 1e8 + 1, 3e8, 1e15, 1e300, -1e22, 709.78, 709.79, -745.13, -745.14, 88.72,
            88.73, -103.97, 1e-310, -5e-324, 1e-8, 0.5, -0.5, np.pi / 2, np.pi, 2.5e4]
    rng = np.random.default_rng(n)
    v = np.resize(np.concatenate([SPECIALS, hard, 3 * rng.standard_normal(n)]), n)

    def make():
        with np.errstate(over="ignore"):
            return v.astype(dtype)
    return make


# ---- pointwise elementwise table ----------------------------------------------------------------

@dataclasses.dataclass
class Op:
    fn: Callable
    nin: int
    domain: str = "real"


def _in_range(x, dtype):
    """x where it is finite and within `dtype`'s range, else 0: float -> int of NaN, inf or an
    out-of-range value is undefined in C and LLVM alike (NumPy's answer is platform-specific)."""
    return fnp.where(fnp.isfinite(x) & (fnp.abs(x) < np.iinfo(dtype).max // 2), x, 0.0)


EXTRA_ELEMENTWISE = {
    "integer_pow(2)": Op(lambda x: x ** 2, 1),
    "integer_pow(3)": Op(lambda x: x ** 3, 1),
    "integer_pow(-1)": Op(lambda x: x ** -1, 1, "nonzero"),
    "integer_pow(-3)": Op(lambda x: x ** -3.0, 1, "nonzero"),
    "power(x, 0.5)": Op(lambda x: x ** 0.5, 1, "positive"),
    "power(2, x)": Op(lambda x: 2.0 ** x, 1),
    "add(x, 1.5)": Op(lambda x: x + 1.5, 1),
    "rsub(3, x)": Op(lambda x: 3 - x, 1),
    "select": Op(lambda x, y: fnp.where(x > y, x, y * 2), 2),
    "clip": Op(lambda x: fnp.clip(x, -0.5, 0.5), 1),
    "round(2)": Op(lambda x: fnp.round(x, 2), 1),
    "nan_to_num": Op(fnp.nan_to_num, 1),
    "sinc": Op(fnp.sinc, 1),
    "astype(float32)": Op(lambda x: x.astype(np.float32), 1),
    "astype(float64)": Op(lambda x: x.astype(np.float64) * 1, 1),
    "astype(int64)": Op(lambda x: _in_range(x, np.int64).astype(np.int64), 1),
    "astype(int32)": Op(lambda x: _in_range(x, np.int32).astype(np.int32), 1),
    "astype(bool)": Op(lambda x: x.astype(bool), 1),
    # scipy.special's primitives (funcgrad/primitives/special_functions.py)
    "erf": Op(fg.scipy.special.erf, 1), "erfc": Op(fg.scipy.special.erfc, 1),
    "gammaln": Op(fg.scipy.special.gammaln, 1, "positive"),
    "digamma": Op(fg.scipy.special.digamma, 1, "positive"),
    "polygamma(2, x)": Op(lambda x: fg.scipy.special.polygamma(2, x), 1, "positive"),
    "ndtri(0.5 + x / 2)": Op(lambda x: fg.scipy.special.ndtri(0.5 + 0.5 * x), 1, "unit"),
    "erfinv": Op(fg.scipy.special.erfinv, 1, "unit"),
}
ELEMENTWISE_OPS = {name: Op(getattr(fnp, name), ufunc.nin, domain)
                   for name, (_, ufunc, domain) in ELEMENTWISE.items()}
ELEMENTWISE_OPS.update(EXTRA_ELEMENTWISE)
FLOAT_ONLY = {"integer_pow(-1)", "integer_pow(-3)"}      # int ** negative int raises
INT_VALUES = {"real": [-7, -1, 0, 1, 2, 5, 2 ** 40], "positive": [1, 2, 3, 10],
              "nonzero": [-7, -2, -1, 1, 3, 8], "unit": [0], "gt1": [2, 3, 9]}


# the extra operations that take complex inputs (astype to a real type drops the imaginary
# part with a ComplexWarning in NumPy; fnp.real does it explicitly)
COMPLEX_EXTRAS = {"integer_pow(2)", "integer_pow(3)", "integer_pow(-1)", "integer_pow(-3)",
                  "power(x, 0.5)", "power(2, x)", "add(x, 1.5)", "rsub(3, x)", "sinc",
                  "nan_to_num", "astype(float64)"}
COMPLEX_PARTS = {
    "real": Op(fnp.real, 1), "imag": Op(fnp.imag, 1), "conj": Op(fnp.conj, 1),
    "angle": Op(fnp.angle, 1), "sign": Op(fnp.sign, 1), "complex(x, y)": Op(lambda x, y: x + 1j * y, 2),
    "abs2": Op(lambda z: fnp.real(z * fnp.conj(z)), 1),
}


def float_specials(dtype):
    if np.dtype(dtype).kind == "c":
        # on the axes and off them, signed zeros, NaN in either part. Not infinities: Numba's
        # complex functions (CPython's cmath) and NumPy's (C99) give different special values
        # there (docs/conventions.md)
        part = float_specials(np.empty(0, dtype).real.dtype)[[0, 3, 4, 5, 6, 7]]
        return np.concatenate([part, 1j * part[:5], part[3:] + 1j * part[[3, 4, 0]]]).astype(dtype)
    fi = np.finfo(dtype)
    return np.array(SPECIALS + [1.0, -1.0, 3 * fi.smallest_subnormal, fi.max / 4, -fi.max / 4],
                    dtype)


def _numpy_loop(name, op, dtype):
    """The dtypes of NumPy's loop for this operation on `dtype` inputs; None where NumPy
    rejects such inputs (bitwise operations on floats)."""
    if name not in ELEMENTWISE:
        return (np.dtype(dtype),)
    try:
        return ELEMENTWISE[name][1].resolve_dtypes((np.dtype(dtype),) * op.nin + (None,))
    except TypeError:
        return None


def pointwise_grid(dtype):
    """-> (ops, X): the operations NumPy accepts on `dtype`, and for each its inputs, 1-D arrays
    of one common length whose k-th elements form call k. Floats: 5 domain values and 10
    special values, every pair for binary operations; integers: small domain values (no
    division by zero); bools: every pair. Integers and bools get the operations that NumPy
    computes with an integer or boolean loop (np.sin of an int is float64 arithmetic after a
    conversion, np.sin(True) even float16: the float grids cover those)."""
    dtype = np.dtype(dtype)

    def wanted(name, op):
        loop = _numpy_loop(name, op, dtype)
        if loop is None or (dtype.kind not in "fc" and name in FLOAT_ONLY):
            return False
        if dtype.kind == "c":
            return loop[0] == dtype and (name in ELEMENTWISE or name in COMPLEX_EXTRAS)
        if dtype.kind == "f":
            return dtype == np.float16 or np.float16 not in loop
        if dtype == np.bool_ and name not in ELEMENTWISE:
            return False            # fnp.sinc(True) is float16 too
        return all(d.kind in "biu" for d in loop)    # int/bool loops (float ones: float grids)
    ops = {name: op for name, op in ELEMENTWISE_OPS.items() if wanted(name, op)}
    if dtype.kind == "c":
        ops |= COMPLEX_PARTS

    def values(domain, seed):
        if dtype == np.bool_:
            return np.array([False, True])
        if dtype.kind in "iu":
            return np.array(INT_VALUES[domain], dtype)
        domains = COMPLEX_DOMAINS if dtype.kind == "c" else DOMAINS
        domain_values = domains[domain](np.random.default_rng(seed), 5)
        return np.concatenate([np.asarray(domain_values, dtype), float_specials(dtype)])

    size = max(len(values(op.domain, 0)) ** op.nin for op in ops.values())
    X = {}
    for k, (name, op) in enumerate(ops.items()):
        grid = np.meshgrid(*[values(op.domain, 2 * k + j) for j in range(op.nin)], indexing="ij")
        X[name] = tuple(np.resize(g.ravel(), size) for g in grid)
    return ops, X


# ---- array cases --------------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    """One compiled kernel: fn(*args) -> dict of named results, forward and backward; the
    float pytrees at positions `diff` are differentiated."""
    id: str
    fn: Callable
    args: tuple
    diff: tuple = (0,)
    rtol: float = 1e-12
    atol: float = 1e-13


def table(id, ops, **kw):
    """A case from {name: (fn, input makers...)}: each operation gets inputs of its own, so
    every result and every gradient is attributable to one operation."""
    def fn(a):
        return {name: ops[name][0](*a[name]) for name in a}
    fn.__name__ = id.replace("-", "_")
    args = {name: tuple(make() for make in spec[1:]) for name, spec in ops.items()}
    return Case(id, fn, (args,), **kw)


# -- elementwise in loops: broadcasting, layouts, empty, vectorised math, mixed dtypes ------------

def _layout_table(variants):
    """The same few unary and binary operations (bool result, select) for each (x, y) variant."""
    ops = {}
    for v, (x, y) in variants.items():
        ops |= {f"exp[{v}]": (fnp.exp, x), f"add[{v}]": (fnp.add, x, y),
                f"less[{v}]": (fnp.less, x, y),
                f"where[{v}]": (lambda a, b: fnp.where(a > 0, a, b), x, y)}
    return ops


S33 = A((3, 3))
ELEMENTWISE_ARRAY_CASES = [
    table("elementwise-broadcast", _layout_table({
        "(2,1)x(1,3)": (A((2, 1)), A((1, 3))), "(3,)x()": (A((3,)), A(())),
        "()x(2,3)": (A(()), A((2, 3))), "(0,3)x(1,3)": (A((0, 3)), A((1, 3)))})),
    table("elementwise-layouts", _layout_table({
        "T x strided": (A((4, 3), layout="T"), A((4, 3), layout="strided")),
        "rev x F3d": (A((2, 3, 4), layout="rev"), A((2, 3, 4), layout="F")),
        "nan/inf T x (4,1)": (A((4, 3), layout="T", specials=3), A((4, 1), specials=2))})),
    # the vectorised loops of funcgrad/backend/vecmath.py (0-d kernels take the scalar path)
    table("fast-math-in-loops", {
        f"{name}[{np.dtype(dt).name}]": (getattr(fnp, name), hard_values(dt))
        for name in ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh")
        for dt in (np.float64, np.float32)}),
    # a transpose or reversed slice of a value computed in the same loop (square: same shape)
    table("index-map-of-fused-value", {
        "(2x).T+x": (lambda x: (2 * x).T + x, S33),
        "sin(x)[::-1]*x": (lambda x: fnp.sin(x)[::-1] * x, S33),
        "(x.T*2).T": (lambda x: (x.T * 2).T, S33)}),
]


def _mixed_dtypes(f32, f64, i64, i32, u8, b, py):
    return {
        "f32+f64": f32 + f64, "f32*f32": f32 * f32, "f32+py": f32 + py, "f32**2": f32 ** 2,
        "exp(f32)": fnp.exp(f32), "i64+f64": i64 + f64, "i32*f32": i32 * f32, "u8+i32": u8 + i32,
        "i64//i32": i64 // i32, "i64%3": i64 % 3, "b+f64": b + f64, "i32/i32": i32 / i32,
        "where(b,f32,f64)": fnp.where(b, f32, f64), "b&(i64>0)": b & (i64 > 0), "~u8": ~u8,
        "f64.astype(f32)": f64.astype(np.float32) * f32,
    }


MIXED_DTYPES = Case(
    "elementwise-mixed-dtypes", _mixed_dtypes,
    (rand((3,), dtype=np.float32, layout="rev"), rand((3,)), np.array([3, -4, 7]),
     np.array([2, 5, -3], np.int32), np.array([0, 7, 255], np.uint8),
     np.array([True, False, True]), 1.5),
    diff=(0, 1, 6), rtol=2e-6, atol=1e-6)


# -- reductions, cumulative ops, sorting ----------------------------------------------------------

T34_TIES = A((3, 4), "ties", layout="T")
T34_NAN = A((3, 4), layout="T", specials=3)
E03 = A((0, 3))
REDUCTION_CASES = [
    table("reductions-2d", {
        "sum[None]": (fnp.sum, T34_NAN),
        "sum[0,keepdims]": (partial(fnp.sum, axis=0, keepdims=True), T34_TIES),
        "prod[1]": (partial(fnp.prod, axis=1), A((3, 4), layout="T")),
        "prod[None,nan]": (fnp.prod, T34_NAN),
        "max[None]": (fnp.max, T34_TIES),
        "max[0,nan]": (partial(fnp.max, axis=0), T34_NAN),
        "min[1,keepdims]": (partial(fnp.min, axis=1, keepdims=True), T34_TIES),
        "argmax[1]": (partial(fnp.argmax, axis=1), T34_TIES),
        "argmin[None,nan]": (fnp.argmin, T34_NAN),
    }),
    table("reductions-3d", {
        "sum[(0,2)]": (partial(fnp.sum, axis=(0, 2)), A((2, 3, 4), layout="strided")),
        "max[-1,keepdims]": (partial(fnp.max, axis=-1, keepdims=True),
                             A((2, 3, 4), "ties", layout="T")),
        "prod[(0,1)]": (partial(fnp.prod, axis=(0, 1)), A((2, 3, 4), layout="rev")),
    }),
    table("scans-sorting", {
        "cumsum[0]": (partial(fnp.cumsum, axis=0), T34_NAN),
        "cumprod[1]": (partial(fnp.cumprod, axis=1), A((3, 4), "nonzero", layout="T")),
        "sort[0]": (partial(fnp.sort, axis=0), T34_NAN),
        "argsort[-1]": (partial(fnp.argsort, axis=-1), T34_TIES),
        "argsort[0,nan]": (partial(fnp.argsort, axis=0), T34_NAN),
        "quantile[1]": (lambda x: fnp.quantile(x, 0.3, axis=1), T34_TIES),
    }),
    table("reductions-empty-0d", {
        "sum[0](0,3)": (partial(fnp.sum, axis=0), E03),
        "max[1](0,3)": (partial(fnp.max, axis=1), E03),
        "mean[0](0,3)": (partial(fnp.mean, axis=0), E03),
        "cumsum[0](0,3)": (partial(fnp.cumsum, axis=0), E03),
        "sort[0](0,3)": (partial(fnp.sort, axis=0), E03),
        "argmax[1](0,3)": (partial(fnp.argmax, axis=1), E03),
        **{f"{f.__name__}(0d)": (f, A(())) for f in (fnp.sum, fnp.prod, fnp.max, fnp.cumsum,
                                                     fnp.argmax)},
    }),
    # apart from the others: the interpreter's own vjp of prod fails on an empty reduced axis
    table("prod-empty", {"prod[None](0,3)": (fnp.prod, E03),
                         "prod[0](0,3)": (partial(fnp.prod, axis=0), E03)}),
]


def _int_bool_reductions(i, i32, b, f32):
    return {
        "prod(i32)": fnp.prod(i32, axis=1), "max(i)": fnp.max(i, axis=1),
        "mean(i)": fnp.mean(i, axis=0), "cumsum(i32)": fnp.cumsum(i32, axis=1),
        "argsort(i)": fnp.argsort(i, axis=1), "sum(b)": fnp.sum(b, axis=1), "all(b)": fnp.all(b),
        "any(b)": fnp.any(b, axis=1), "sum(f32)": fnp.sum(f32, axis=0),
        "max(f32)": fnp.max(f32, axis=1), "cumprod(f32)": fnp.cumprod(f32, axis=1),
        "sort(f32)": fnp.sort(f32, axis=0),
    }


INT_BOOL_REDUCTIONS = Case(
    "reductions-int-bool-float32", _int_bool_reductions,
    (np.array([[3, -1, 4], [1, 5, -9], [2, 6, 5]]).T, np.array([[2, 7], [1, -8], [2, 8]], np.int32),
     np.array([[True, False], [True, True], [False, True]])[::-1],
     rand((3, 4), dtype=np.float32, layout="T")),
    diff=(3,), rtol=1e-5, atol=1e-6)


# -- shape and arrangement ------------------------------------------------------------------------

T34 = A((3, 4), layout="T", specials=5)
SHAPE_CASES = [
    table("shape-2d", {
        "reshape": (lambda x: fnp.reshape(x, (2, -1)), T34),
        "concatenate": (lambda x: fnp.concatenate([x[:, ::-1], x], axis=-1), T34),
        "flip": (lambda x: fnp.flip(x, 0), T34),
        "roll": (lambda x: fnp.roll(x, -1, axis=1), T34),
        "tile": (lambda x: fnp.tile(x, (2, 1, 2)), T34),
        "repeat": (lambda x: fnp.repeat(x, [1, 0, 3, 2], axis=1), T34),
        "diag": (lambda x: fnp.diag(x, 1), T34),
        "triu": (lambda x: fnp.triu(x, -1), T34),
        "pad": (lambda x: fnp.pad(x, ((1, 2), (2, 1)), constant_values=1.5), T34),
    }),
    table("shape-3d", {
        "reshape": (lambda x: fnp.reshape(x, (4, 6)), A((2, 3, 4), layout="rev")),
        "transpose(1,2,0)": (lambda x: fnp.transpose(x, (1, 2, 0)), A((2, 3, 4), layout="F")),
        "flip(0,2)": (lambda x: fnp.flip(x, (0, 2)), A((2, 3, 4), layout="strided")),
        "concatenate[1]": (lambda x, y: fnp.concatenate([x, y], axis=1),
                           A((2, 3, 4), layout="T"), A((2, 1, 4))),
    }),
    table("shape-0d-empty", {
        "reshape(0d)": (lambda x: fnp.reshape(x, (1, 1)), A(())),
        "broadcast_to(0d)": (lambda x: fnp.broadcast_to(x, (2, 3)), A(())),
        "tile(0d)": (lambda x: fnp.tile(x, 3), A(())),
        "reshape(0,3)": (lambda x: fnp.reshape(x, (3, 0)), E03),
        "concatenate_with_empty": (lambda x, y: fnp.concatenate([x, y], axis=0), E03, A((2, 3))),
        "flip(0,3)": (lambda x: fnp.flip(x, 1), E03),
        "pad(0,3)": (lambda x: fnp.pad(x, 1), E03),
        "broadcast_to(1,3)->(0,3)": (lambda x: fnp.broadcast_to(x, (0, 3)), A((1, 3))),
    }),
]


# -- indexing: gather and scatter -----------------------------------------------------------------

IDX = np.array([2, 0, -1, 2])                        # repeated and negative
MASK = np.array([True, False, True, True, False])


def _basic_indexing(x, v):
    """x: (4, 5) transposed view, v: (4,) strided."""
    return {
        "x[1]": x[1], "x[-1,2]": x[-1, 2], "x[1:3]": x[1:3], "x[::2,1::2]": x[::2, 1::2],
        "x[::-1,3:0:-2]": x[::-1, 3:0:-2], "x[None,...,1]": x[None, ..., 1],
        "at[1:3,::2].set": x.at[1:3, ::2].set(v[:3]), "at[0].add": x.at[0].add(v[0]),
        "at[:,1].multiply": x.at[:, 1].multiply(v),
        "at[-1,-1].subtract": x.at[-1, -1].subtract(v[3]), "at[2,::-1].get": x.at[2, ::-1].get(),
    }


def _advanced_indexing(x, v, idx):
    """x: (4, 5) transposed view, v: (4,) strided, idx: an int64 argument."""
    return {
        "x[IDX]": x[IDX], "x[IDX[:,None],[[0,1]]]": x[IDX[:, None], np.array([[0, 1]])],
        "x[:,MASK]": x[:, MASK], "x[:,idx]": x[:, idx], "at[IDX].add": x.at[IDX].add(v[:, None]),
        "at[[3,1],2].set": x.at[np.array([3, 1]), 2].set(v[1:3]),
        "at[[0,2]].multiply": x.at[[0, 2]].multiply(v[0]),
        "at[idx,idx].add": x.at[idx, idx].add(v[:3]),
    }


def _indexing_edge(x0, e, v3, x3):
    """x0: 0-d, e: (0, 3), v3: (3,), x3: (2, 3, 4) transposed."""
    return {
        "0d[()]": x0[()] * 1.0, "0d.at[()].set": x0.at[()].set(v3[0]), "e[:,1]": e[:, 1],
        "0d[...,None,None]": x0[..., None, None], "0d.at[None].add": x0.at[None].add(v3[:1]),
        "e.at[:,0].add": e.at[:, 0].add(1.0), "v3.at[[]].add": v3.at[np.array([], int)].add(1.0),
        "x3[:,[2,0],1:]": x3[:, [2, 0], 1:], "x3[[1,0],:,[3,3]]": x3[[1, 0], :, [3, 3]],
        "x3.at[:,1,::2].add": x3.at[:, 1, ::2].add(v3[:2, None]),
        "x3.at[[1,0],:,[3,0]].set": x3.at[[1, 0], :, [3, 0]].set(v3[:2, None]),
    }


X45 = rand((4, 5), layout="T")
INDEXING_CASES = [
    Case("gather-scatter-basic", _basic_indexing, (X45, rand((4,), layout="strided")), diff=(0, 1)),
    Case("gather-scatter-advanced", _advanced_indexing,
         (X45, rand((4,), layout="strided"), np.array([3, -2, 3])), diff=(0, 1)),
    Case("gather-scatter-0d-empty-3d", _indexing_edge,
         (rand(()), rand((0, 3)), rand((3,)), rand((2, 3, 4), layout="T")), diff=(0, 1, 2, 3)),
]


# -- contractions ---------------------------------------------------------------------------------

def _contractions(a, b, v, bt, c3):
    """a (3,4) transposed, b (4,2) strided, v (4,) reversed, bt (2,3,4) Fortran order,
    c3 (2,4,5) transposed."""
    return {
        "matvec": a @ v, "vecvec": v @ v, "batched": bt @ c3,
        "einsum(ij,jk->ki)": fnp.einsum("ij,jk->ki", a, b),
        "tensordot(3d,2 axes)": fnp.tensordot(c3, bt, axes=([0, 1], [0, 2])),
    }


def _contractions_edge(e0, e1, s, f32a, f32b, ia, ib):
    """e0 (3,0), e1 (0,2): an empty contracted dimension; s: 0-d; float32 and int operands."""
    return {
        "empty_k": e0 @ e1, "0d_einsum": fnp.einsum(",->", s, s), "f32_matmul": f32a @ f32b,
        "int_matmul": ia @ ib, "bool_int": (ia > 0) @ ib,
    }


CONTRACT_CASES = [
    Case("contract", _contractions,
         (rand((3, 4), layout="T"), rand((4, 2), layout="strided"), rand((4,), layout="rev"),
          rand((2, 3, 4), layout="F"), rand((2, 4, 5), layout="T")),
         diff=(0, 1, 2, 3, 4), rtol=1e-11),
    Case("contract-empty-0d-float32-int", _contractions_edge,
         (rand((3, 0)), rand((0, 2)), rand(()), rand((3, 4), dtype=np.float32, layout="T"),
          rand((4, 2), dtype=np.float32), np.array([[1, -2, 3], [4, 0, -6]]).T,
          np.array([[2, 1], [0, -1]])),
         diff=(0, 1, 2, 3, 4), rtol=2e-5, atol=1e-5),
]


# -- linear algebra -------------------------------------------------------------------------------

def _spd(n, batch=()):
    a = rand(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _linalg(a, ab, s, sb, b, r):
    """a (3,3) transposed, ab (2,3,3), s (3,3) and sb (2,3,3) SPD, b (3,2) strided,
    r (4,3) transposed. Eigen- and singular vectors enter sign-invariantly."""
    w, q = L.eigh(s)
    u, sv, vh = L.svd(r, full_matrices=False)
    sign, logdet = L.slogdet(ab)
    return {
        "solve": L.solve(a, b), "inv(batch)": L.inv(ab), "det": L.det(a), "slogdet": sign * logdet,
        "cholesky(batch)": L.cholesky(sb), "eigh": w[:, None] * q * q,
        "eigvalsh(U)": L.eigvalsh(sb, UPLO="U"), "svd": (u * sv) @ vh, "svdvals": L.svdvals(r),
        "pinv": L.pinv(r), "cofactor": fg.grad(L.det)(a),       # det's gradient
        "lu_factor": fg.scipy.linalg.lu_factor(a)[0],
    }


def _linalg_edge(a0, e, f32):
    """a0: (0,0), e: (0,3,3), an empty batch; f32: (3,3) float32, transposed."""
    return {"det(0x0)": L.det(a0), "inv(empty batch)": L.inv(e),
            "solve(f32)": L.solve(f32, f32[:, 0]), "lu_factor(f32)": fg.scipy.linalg.lu_factor(f32)[0]}


LINALG_CASES = [
    Case("linalg", _linalg,
         (rand((3, 3), layout="T") + 3 * np.eye(3), rand((2, 3, 3)) + 3 * np.eye(3), _spd(3),
          _spd(3, (2,)), rand((3, 2), layout="strided"), rand((4, 3), layout="T")),
         diff=(0, 1, 2, 3, 4, 5), rtol=1e-9, atol=1e-11),
    Case("linalg-empty-float32", _linalg_edge,
         (rand((0, 0)), rand((0, 3, 3)),
          (rand((3, 3), layout="T") + 3 * np.eye(3)).astype(np.float32)),
         diff=(0, 1, 2), rtol=1e-4, atol=1e-5),
]


# -- searchsorted; user-controlled derivatives ----------------------------------------------------

def _searchsorted(edges, xs, fp):
    return {"left": fnp.searchsorted(edges, xs), "right": fnp.searchsorted(edges, xs, "right"),
            "interp": fnp.interp(xs, edges, fp)}


@fg.custom_vjp
def softplus(x):
    return fnp.log1p(fnp.exp(x))


softplus.defvjp(lambda x: (softplus(x), x), lambda x, g: (g / (1 + fnp.exp(-x)),))


@fg.custom_vjp
def callback_exp(x):
    return fg.pure_callback(np.exp, x, x)


callback_exp.defvjp(lambda x: (callback_exp(x), callback_exp(x)), lambda ex, g: (g * ex,))


def _user_derivatives(x, y):
    return {
        "stop_gradient": x * fg.stop_gradient(x), "custom_vjp": softplus(x),
        "custom_vjp(nan/inf)": softplus(y), "pure_callback": fg.pure_callback(np.sort, y, fg.stop_gradient(y)) + x,
        "custom_vjp(pure_callback)": callback_exp(x[::-1]),
        "checkpoint (remat_barrier)": _remat(x),
    }


_remat = fg.checkpoint(lambda x: fnp.tanh(fnp.sin(x) * 2.0) * x)


def _random(x, key):
    """Draws (random_bits, from batched first counters too) and a reparameterised one."""
    return {"normal": x * fg.random.normal(key, (3,)), "bits": fg.random.bits(key, (5,)),
            "split": fg.random.split(key, 3), "fold_in": fg.random.fold_in(key, 9)}


MISC_CASES = [
    Case("searchsorted-interp", _searchsorted,
         (np.array([-1.0, 0.0, 0.0, 1.5, 3.0]),
          np.array([-2.0, 0.0, 0.7, 1.5, 3.0, 9.0, np.nan, -np.inf]), rand((5,), layout="rev")),
         diff=(2,)),
    Case("stop-gradient-custom-vjp-callback", _user_derivatives,
         (rand((2, 3), layout="T"), rand((2, 3), layout="strided", specials=2)), diff=(0, 1)),
]

def _control_flow(x, y):
    """Loops and branches (their backward passes include while_grad): array carries, scalar
    carries, a reverse scan, both branches of a cond across layouts, a clamped switch index."""
    w = fg.while_loop(lambda c: c[1] < 3, lambda c: (fnp.sin(c[0]) * x + c[0], c[1] + 1), (x, 0))[0]
    c, ys = fg.scan(lambda c, v: (c * v + 1.0, c * fnp.cos(v)), 0.5, y)
    rev = fg.scan(lambda c, v: (c + v * v, c * x[0]), fnp.zeros(3), y, reverse=True)[1]
    return {"while": w, "scan carry": c, "scan ys": ys, "reverse scan": rev,
            "cond": fg.cond(fnp.sum(x) > 0, lambda a: fnp.exp(a), lambda a: a * a, x),
            "cond(other)": fg.cond(fnp.sum(x) > 0, lambda a: a * a, lambda a: fnp.exp(a), -x),
            "switch": fg.switch(fnp.argmax(y) - 1, [lambda a: a, lambda a: fnp.tanh(2 * a),
                                                    lambda a: a ** 3], y)}


CONTROL_CASES = [Case("control-flow", _control_flow,
                      (rand((2, 3), layout="T"), rand((4,), layout="rev")), diff=(0, 1))]


# -- complex arrays and the FFT ----------------------------------------------------------------

def _complex_arrays(z, w, a, x):
    """z (3,4) complex transposed, w (4,) complex strided, a (3,3) complex, x (3,4) real."""
    sign, logdet = L.slogdet(a)
    return {
        "sum(axis 0)": fnp.sum(z, axis=0), "mean": fnp.mean(z), "cumsum": fnp.cumsum(w),
        "z @ w": z @ w, "einsum": fnp.einsum("ij,ij->j", z, fnp.conj(z)),
        "gather": z[::-1, 1], "at[].add": z.at[1].add(w), "concat": fnp.concatenate([w, z[0]]),
        "where": fnp.where(fnp.abs(z) > 1.0, z, x), "abs, angle in a loop": fnp.abs(z) * fnp.angle(z),
        "real * exp": fnp.real(z) * fnp.exp(z), "solve": L.solve(a, z), "det": L.det(a),
        "slogdet": sign * logdet, "inv": L.inv(a), "var": fnp.var(z, axis=1),
        "norm": L.norm(z), "vdot": fnp.vdot(w, z[1]),
        "scan": fg.scan(lambda c, v: (c * v + 1.0, c), 0.5 + 0j, w)[1],
        "eig": L.eigvals(a), "|eigenvectors|^2": fnp.abs(L.eig(a)[1]) ** 2,
        "eigvalsh(hermitian)": L.eigvalsh(a @ fnp.conj(a.T) + 3.0),
        "cholesky(hermitian)": L.cholesky(a @ fnp.conj(a.T) + 3 * np.eye(3)),
        "svd: |U|^2 + S": fnp.abs(L.svd(z)[0]) ** 2 + L.svd(z, compute_uv=False)[:, None],
        "pinv": L.pinv(z),
    }


def _fft(z, x, y):
    """z (3,4) complex transposed, x (4,6) real strided, y (5,) real reversed."""
    F = fnp.fft
    return {
        "fft": F.fft(z), "ifft(axis 0, ortho)": F.ifft(z, axis=0, norm="ortho"),
        "fft(real, n=8)": F.fft(y, n=8), "rfft": F.rfft(x), "rfft(n=3, forward)": F.rfft(y, 3, norm="forward"),
        "irfft": F.irfft(z), "irfft(n=7, axis 0)": F.irfft(z, 7, axis=0), "fft2": F.fft2(z),
        "rfftn": F.rfftn(x), "irfft2": F.irfft2(z), "hfft": F.hfft(z[0]), "ihfft": F.ihfft(y),
        "fftshift(fft)": F.fftshift(F.fft(y)),
    }


COMPLEX_CASES = [
    Case("complex-arrays", _complex_arrays,
         (rand((3, 4), layout="T", dtype=complex), rand((4,), layout="strided", dtype=complex),
          rand((3, 3), dtype=complex) + 3 * np.eye(3), rand((3, 4))), diff=(0, 1, 2, 3),
         rtol=1e-10, atol=1e-12),
    Case("fft", _fft, (rand((3, 4), layout="T", dtype=complex), rand((4, 6), layout="strided"),
                       rand((5,), layout="rev")), diff=(0, 1, 2), rtol=1e-10, atol=1e-12),
]

ARRAY_CASES = (ELEMENTWISE_ARRAY_CASES + [MIXED_DTYPES] + REDUCTION_CASES + [INT_BOOL_REDUCTIONS]
               + SHAPE_CASES + INDEXING_CASES + CONTRACT_CASES + LINALG_CASES + MISC_CASES
               + CONTROL_CASES + COMPLEX_CASES
               + [Case("random", _random, (rand((3,), layout="rev"), np.array([7, 123], np.uint32)))])
