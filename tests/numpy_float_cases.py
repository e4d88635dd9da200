"""Example calls of every function of funcgrad.numpy (and .linalg, .fft), for the class test in
tests/test_regress_numpy.py: each of a function's float arguments (positional or keyword, a
float array, a Python float or a list of them) must be differentiated (check_grads agrees with
finite differences) or refused with an error -- never a silent derivative of 0 (issue 28:
quantile's q).

CASES maps a name ("linalg.norm", "fft.fftfreq") to Case(args, kwargs, call): call(fn) -> the
callable to check (default: the function itself; an output selector where an output has no
derivative by nature, e.g. eig's eigenvectors' phase). ALIASES: names checked with another
name's arguments. SKIP: names with no float argument, or no derivative by nature, with why.
REFUSES: (name, argument) pairs that refuse to differentiate that argument, with the error.
The arguments are chosen away from the kinks and jumps of piecewise functions, so that central
differences are meaningful.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.primitives.elementwise import ELEMENTWISE
from conftest import rand


@dataclasses.dataclass
class Case:
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    call: Callable[[Any], Callable] = staticmethod(lambda fn: fn)


def C(*args, _call=None, **kwargs):
    return Case(args, kwargs, _call or (lambda fn: fn))


V = rand((4,), seed=1)                      # a vector
W = rand((4,), seed=2)
P = rand((4,), "positive", seed=3)
M = rand((3, 4), seed=4)                    # a matrix
N = rand((4, 2), seed=5)
SQ = rand((3, 3), seed=6) + 3 * np.eye(3)   # well conditioned
SPD = SQ @ SQ.T
T3 = rand((2, 3, 4), seed=7)
Z = rand((4,), seed=8, dtype=np.complex128)
ZM = rand((3, 4), seed=9, dtype=np.complex128)
WITH_NAN = np.array([0.7, np.nan, -1.3, 2.1])
MASK = np.array([True, False, True, False])
SORTED = np.array([-1.5, -0.25, 0.6, 1.7])


def _first(fn):
    return lambda *a, **k: fn(*a, **k)[0]


# ---- NumPy's ufuncs: every float argument, drawn from the ufunc's domain --------------------

_BOOL_OUT = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
             "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf",
             "isfinite", "signbit"}
_INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "invert", "gcd", "lcm", "left_shift",
             "right_shift"}

CASES = {}
for _name, (_prim, _uf, _dom) in ELEMENTWISE.items():
    if _name in _BOOL_OUT | _INT_ONLY or not hasattr(fnp, _name):
        continue
    CASES[_name] = C(*(rand((4,), _dom, seed=20 + k) for k in range(_uf.nin)))
CASES["power"] = C(P, rand((4,), seed=21))
CASES["power_scalar_exponent"] = C(P, 2.5, _call=lambda fn: fnp.power)
CASES["floor_divide"] = C(np.array([3.3, -2.2, 5.7, 1.1]), np.array([1.3, 0.7, -1.3, 0.4]))
CASES["remainder"] = C(np.array([3.3, -2.2, 5.7, 1.1]), np.array([1.05, 0.7, -1.3, 0.45]))
CASES["fmod"] = CASES["remainder"]

# ---- the rest, one example call each --------------------------------------------------------

CASES.update({
    "amax": C(M, axis=1, initial=5.0),
    "max": C(M, axis=0),
    "max_initial": C(M, axis=1, initial=5.0, _call=lambda fn: fnp.max),
    "min": C(M, axis=1, initial=-5.0),
    "nanmax": C(WITH_NAN, initial=9.0),
    "nanmin": C(WITH_NAN, initial=-9.0),
    "angle": C(Z),
    "append": C(V, W),
    "arange": C(0.5, 2.1, 0.25),
    "around": C(np.array([0.123, 1.456, -2.789]), 1),
    "array": C([1.5, V[0], 2.5]),
    "asarray": C(V), "asanyarray": C(V), "ascontiguousarray": C(M.T), "copy": C(M),
    "astype": C(V, np.complex128),
    "atleast_1d": C(1.5), "atleast_2d": C(V), "atleast_3d": C(M),
    "average": C(M, axis=1, weights=P),
    "block": C([[M, M[:, :2]], [T3[0], T3[1, :, :2]]]),
    "broadcast_arrays": C(V, M),
    "broadcast_to": C(V, (3, 4)),
    "clip": C(V, -0.5, 0.6),
    "column_stack": C([V, W]),
    "concatenate": C([V, W]),
    "conj": C(Z),
    "convolve": C(V, W[:3]),
    "correlate": C(V, W[:3], "full"),
    "corrcoef": C(M),
    "cov": C(M, aweights=P),
    "cross": C(V[:3], W[:3]),
    "cumprod": C(M, axis=1),
    "cumsum": C(M, axis=0),
    "delete": C(V, [1]),
    "diag": C(V), "diagflat": C(V, 1), "diagonal": C(SQ),
    "diff": C(V, prepend=0.3, append=1.7),
    "dot": C(M, N[:, 0]), "inner": C(V, W), "outer": C(V, W), "vdot": C(Z, Z[::-1]),
    "kron": C(M[:2, :2], SQ[:2]), "matmul": C(M, N), "tensordot": C(M, N, 1),
    "einsum": C("ij,jk->ik", M, N),
    "dsplit": C(T3, 2), "hsplit": C(M, 2), "vsplit": C(M.T, 2), "split": C(V, 2),
    "array_split": C(V, 3),
    "dstack": C([M, M]), "hstack": C([V, W]), "vstack": C([V, W]), "stack": C([V, W]),
    "unstack": C(M),
    "expand_dims": C(V, 0), "squeeze": C(M[None]), "ravel": C(M), "flatten": C(M),
    "reshape": C(M, (4, 3)), "transpose": C(M), "matrix_transpose": C(T3),
    "moveaxis": C(T3, 0, 2), "rollaxis": C(T3, 2), "swapaxes": C(T3, 0, 1),
    "flip": C(M), "fliplr": C(M), "flipud": C(M), "rot90": C(M), "roll": C(V, 1),
    "repeat": C(V, 2), "tile": C(V, 2),
    "full": C((2, 3), 1.7),
    "full_like": C(V, 0.4),
    "zeros_like": C(V), "ones_like": C(V),
    "geomspace": C(0.5, 4.0, 5),
    "linspace": C(0.5, 4.0, 5),
    "logspace": C(0.5, 1.5, 4, base=3.0),
    "gradient": C(V, 0.5),
    "insert": C(V, 1, 2.5),
    "interp": C(np.array([-3.0, -0.7, 0.2, 1.1, 4.0]), SORTED, V, left=-2.5, right=3.5),
    "interp_period": C(np.array([-0.7, 0.2, 1.1, 4.1]), SORTED, V, period=4.5,
                       _call=lambda fn: fnp.interp),
    "logsumexp": C(M, axis=1, b=P),
    "mean": C(M, axis=1), "median": C(V), "ptp": C(M, axis=0),
    "nan_to_num": C(np.array([0.3, np.nan, np.inf, -np.inf]), nan=0.5, posinf=9.0,
                    neginf=-9.0),
    "nanmean": C(WITH_NAN), "nanprod": C(WITH_NAN), "nanstd": C(WITH_NAN, ddof=0.5),
    "nansum": C(WITH_NAN, initial=0.5), "nanvar": C(WITH_NAN, ddof=0.5),
    "std": C(M, axis=1, ddof=0.5), "var": C(M, axis=1, ddof=0.5),
    "pad": C(V, 2, constant_values=0.7),
    "pad_linear_ramp": C(V, 2, "linear_ramp", end_values=1.3, _call=lambda fn: fnp.pad),
    "partition": C(V, 2), "sort": C(M, axis=1),
    "percentile": C(V, np.array([15.0, 62.0])),
    "quantile": C(V, np.array([0.15, 0.62])),
    "polyval": C(W, V),
    "positive": C(V),
    "prod": C(M, axis=0, initial=1.5),
    "sum": C(M, axis=1, initial=0.5),
    "real": C(Z), "imag": C(Z),
    "real_if_close": C(Z.real + 1e-16j),
    "round": C(np.array([0.123, 1.456, -2.789]), 1),
    "select": C([MASK, ~MASK], [V, W], 0.5),
    "sinc": C(V),
    "take": C(V, [0, 2, 2]), "take_along_axis": C(M, np.argsort(M, axis=1), 1),
    "trace": C(SQ),
    "trapezoid": C(V, dx=0.3),
    "trapezoid_x": C(V, SORTED, _call=lambda fn: fnp.trapezoid),
    "tril": C(SQ), "triu": C(SQ),
    "vander": C(V, 3),
    "where": C(MASK, V, W),
    "meshgrid": C(V, W[:3]),
})

# NumPy functions added for issue 32 (value-dependent shapes take JAX's size=/length=)
CASES.update({
    "heaviside": C(V, 0.5), "copysign": C(V, W), "float_power": C(P, W),
    "ldexp": C(V, np.array([-2, 0, 3, 1])), "modf": C(V * 3), "divmod": C(V * 3, 0.7),
    "vecdot": C(M, M[::-1]), "matvec": C(M, V), "vecmat": C(V[:3], M),
    "bincount": C(np.array([0, 2, 2, 5]), V, length=7),
    "histogram": C(V, 3, (-3.0, 3.0), None, W), "unique": C(np.array([0.5, -1.2, 2.0, 0.7]), size=5),
    "compress": C([True, False, True], M, axis=0), "extract": C(MASK, V),
    "choose": C(np.array([0, 2, 1, 0]), [V, W, P]),
    "piecewise": C(V, _call=lambda fn: lambda x: fn(x, [x < 0, x >= 0], [lambda v: -v, np.sin])),
    "cumulative_sum": C(V, include_initial=True), "cumulative_prod": C(P, include_initial=True),
    "ediff1d": C(V, to_begin=0.3, to_end=W[:2]),
    "polyder": C(V, 2), "polyint": C(V, 2, np.array([0.5, -0.2])), "polyadd": C(V, W[:2]),
    "polysub": C(W[:3], V), "polymul": C(V, W[:3]), "polyfit": C(SORTED, V, 2, w=P),
    "nanmedian": C(WITH_NAN), "nanquantile": C(WITH_NAN, np.array([0.15, 0.62])),
    "nanpercentile": C(WITH_NAN, 37.0), "nancumsum": C(WITH_NAN), "nancumprod": C(WITH_NAN),
    "asfortranarray": C(M), "resize": C(V, (2, 3)),
    "unique_values": C(np.array([0.5, -1.2, 2.0, 0.7]), size=5),
    "unique_counts": C(np.array([0.5, -1.2, 2.0, 0.7]), size=5, _call=_first),
    "unique_inverse": C(np.array([0.5, -1.2, 2.0, 0.7]), size=5, _call=_first),
    "unique_all": C(np.array([0.5, -1.2, 2.0, 0.7]), size=5, _call=_first),
    "union1d": C(V, W, size=9), "histogram_bin_edges": C(V, 3, (-3.0, 3.0)),
    "setdiff1d": C(V, W[:2], size=4), "setxor1d": C(V, W, size=9),
    "polydiv": C(V, W[:2], _call=_first),
    "roots": C(np.array([1.0, -6.0, 11.0, -6.0])),
    "histogramdd": C(np.stack([V, W], 1), 3, [(-3.0, 3.0), (-2.0, 2.0)], None, P, _call=_first),
    "histogram2d": C(V, W, 3, [(-3.0, 3.0), (-2.0, 2.0)], True, P, _call=_first),
    "fromfunction": C(V, _call=lambda fn: lambda x: fn(lambda i: x[i] * 2.0, (4,), dtype=int)),
    "unwrap": C(np.array([0.1, 3.0, 6.2, 0.4, 3.5]) * 1.0),
    "frexp": C(V * 3, _call=_first), "require": C(V, np.float64),
    "poly": C(V), "sort_complex": C(V, _call=lambda fn: lambda x: fnp.real(fn(x))),
    "apply_along_axis": C(M, _call=lambda fn: lambda x: fn(lambda v: fnp.sum(v ** 3), 1, x)),
    "apply_over_axes": C(M, _call=lambda fn: lambda x: fn(fnp.sum, x, [0])),
})

ALIASES = {"abs": "absolute", "fabs": "absolute", "mod": "remainder", "true_divide": "divide",
           "pow": "power", "degrees": "rad2deg", "radians": "deg2rad", "fix": "trunc",
           "round_": "round", "concat": "concatenate", "row_stack": "vstack",
           "trapz": "trapezoid", "amin": "min", "permute_dims": "transpose",
           "conjugate": "conj", "acos": "arccos", "asin": "arcsin", "atan": "arctan",
           "atan2": "arctan2", "acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh"}

# ---- funcgrad.numpy.linalg and .fft ---------------------------------------------------------

L, F = "linalg.", "fft."
CASES.update({
    L + "cholesky": C(SPD), L + "cond": C(SQ), L + "cross": C(V[:3], W[:3]), L + "det": C(SQ),
    L + "diagonal": C(SQ), L + "eigvals": C(SPD + np.diag([0.0, 1.0, 3.0])),
    L + "eig": C(SPD + np.diag([0.0, 1.0, 3.0]), _call=_first),
    L + "eigh": C(SPD, _call=_first), L + "eigvalsh": C(SPD), L + "inv": C(SQ),
    L + "lstsq": C(M.T, V, 1e-3, _call=_first), L + "matmul": C(M, N), L + "matrix_norm": C(M),
    L + "matrix_power": C(SQ, 3), L + "matrix_transpose": C(M), L + "multi_dot": C([M, N, N.T]),
    L + "norm": C(V, 3.0), L + "norm_matrix": C(M, "nuc", _call=lambda fn: fnp.linalg.norm),
    L + "norm_matrix_ord": C(M, 2.0, _call=lambda fn: fnp.linalg.norm),
    L + "outer": C(V, W), L + "pinv": C(M, 1e-3), L + "qr": C(M.T, _call=_first),
    L + "slogdet": C(SQ), L + "solve": C(SQ, V[:3]), L + "svd": C(M, _call=lambda fn: (
        lambda a: fn(a, compute_uv=False))), L + "svdvals": C(M), L + "tensordot": C(M, N, axes=1),
    L + "trace": C(SQ), L + "vecdot": C(V, W), L + "vector_norm": C(M, axis=1, ord=3.0),
    F + "fft": C(Z), F + "fft2": C(ZM), F + "fftn": C(ZM), F + "ifft": C(Z), F + "ifft2": C(ZM),
    F + "ifftn": C(ZM), F + "rfft": C(V), F + "rfft2": C(M), F + "rfftn": C(M),
    F + "hfft": C(Z), F + "ihfft": C(V), F + "irfft": C(Z, 6), F + "irfft2": C(ZM, (3, 6)),
    F + "irfftn": C(ZM, (3, 6)), F + "fftshift": C(V), F + "ifftshift": C(M),
    F + "fftfreq": C(5, 0.3), F + "rfftfreq": C(6, 0.3),
})

_NO_FLOAT = "takes no float argument (shapes, sizes, dtypes)"
_NO_DERIVATIVE = "its result is boolean or an integer (indices, counts): no derivative by nature"
SKIP = {
    **{n: _NO_DERIVATIVE for n in _BOOL_OUT | _INT_ONLY},
    **dict.fromkeys(["all", "any", "allclose", "array_equal", "array_equiv", "isclose",
                     "iscomplex", "iscomplexobj", "isreal", "isrealobj", "isneginf", "isposinf",
                     "argmax", "argmin", "argsort", "argpartition", "argwhere", "nonzero",
                     "flatnonzero", "count_nonzero", "searchsorted", "bitwise_not",
                     "digitize", "isin", "bitwise_invert", "nanargmax", "nanargmin",
                     "bitwise_left_shift", "bitwise_right_shift"],
                    _NO_DERIVATIVE),
    **dict.fromkeys(["eye", "identity", "tri", "indices", "zeros", "ones", "empty",
                     "broadcast_shapes", "promote_types", "result_type", "issubdtype",
                     "isscalar", "ndim", "shape", "size", "can_cast"], _NO_FLOAT),
    "empty_like": "its values are undefined (only its shape and dtype depend on the argument)",
    **dict.fromkeys(["bartlett", "blackman", "hamming", "hanning", "diag_indices",
                     "diag_indices_from"], _NO_FLOAT),
    "kaiser": "beta selects a constant window (read as a value while tracing)",
    "trim_zeros": "the result's length depends on which entries are exactly zero",
    **dict.fromkeys(["fill_diagonal", "put", "putmask", "place", "copyto"],
                    "writes in place: plain arrays only (traced ones: a MutationError)"),
    "einsum_path": "returns NumPy's contraction order (it reads only shapes)",
    "put_along_axis": "writes in place: plain arrays only (traced ones: a MutationError)",
    "intersect1d": "keeps values equal in both arrays: central differences move them apart, "
                   "so they cannot see a derivative (its flow to the values kept: "
                   "test_numpy_additions.py)",
    **dict.fromkeys(["tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from",
                     "ix_", "ravel_multi_index", "unravel_index", "lexsort"], _NO_DERIVATIVE),
    **dict.fromkeys(["isdtype", "iterable", "isfortran", "shares_memory", "may_share_memory",
                     "common_type", "min_scalar_type"], "a question about dtypes, shapes or "
                    "memory: its answer is not a float"),
}

# (name, argument) -> (exception type, a fragment of its message): refusals, kept honest by
# the test (a listed refusal that no longer raises fails it).
REFUSES = {
    ("real_if_close", "argument 0"): (TypeError, "real or complex depending on the values"),
    ("linalg.norm_matrix_ord", "argument 1"): (TypeError, "order of a matrix norm selects"),
}
