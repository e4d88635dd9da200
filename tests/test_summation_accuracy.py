"""Compiled sums are at least as accurate as NumPy's pairwise summation: every float reduction
in a kernel (sum, mean, var, std, norm, logsumexp, sums along rows or columns, the sums inside
backward passes, serial and parallel) is compared with math.fsum on 10**7-element inputs."""
import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

N = 10 ** 7


def _data(dtype, kind):
    rng = np.random.default_rng(7)
    if kind == "tenths":                          # the case: 0.1 ten million times
        return np.full(N, 0.1, dtype)
    if kind == "offset":                          # values near 1000: var cancels badly
        return (1000.0 + rng.standard_normal(N)).astype(dtype)
    return (rng.standard_normal(N) + 0.1).astype(dtype)


def _exact_sum(x, axis=None):
    x64 = np.asarray(x, np.float64)
    if axis is None:
        return math.fsum(x64.ravel())
    return np.array([math.fsum(r) for r in np.moveaxis(x64, axis, -1).reshape(-1, x64.shape[axis])])


def _no_worse_than_numpy(got, numpy_result, exact, dtype):
    got, numpy_result, exact = (np.asarray(v, np.float64) for v in (got, numpy_result, exact))
    ulp = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    err, np_err = np.abs(got - exact), np.abs(numpy_result - exact)
    assert np.all(err <= np.maximum(np_err, ulp)), (float(np.max(err / ulp)), float(np.max(np_err / ulp)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["tenths", "offset", "normal"])
@pytest.mark.parametrize("parallel", [False, True])
def test_full_sums(dtype, kind, parallel):
    x = _data(dtype, kind)
    got = fg.jit(fnp.sum, parallel=parallel)(x)
    assert got.dtype == dtype
    _no_worse_than_numpy(got, np.sum(x), _exact_sum(x), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1])
def test_sums_along_an_axis(dtype, axis):
    x = _data(dtype, "offset").reshape(1000, -1) if axis == 0 else _data(dtype, "offset").reshape(-1, 1000)
    got = fg.jit(lambda x: fnp.sum(x, axis=axis))(x)
    _no_worse_than_numpy(got, np.sum(x, axis=axis), _exact_sum(x, axis), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_statistics(dtype):
    x = _data(dtype, "offset")
    x64 = x.astype(np.float64)
    mean = math.fsum(x64) / N
    var = math.fsum((x64 - mean) ** 2) / N
    for name, f, exact in [("mean", fnp.mean, mean), ("var", fnp.var, var),
                           ("std", fnp.std, math.sqrt(var)),
                           ("norm", fnp.linalg.norm, math.sqrt(math.fsum(x64 ** 2)))]:
        got = fg.jit(f)(x)
        ref = getattr(np, name)(x) if name != "norm" else np.linalg.norm(x)
        assert np.asarray(got).dtype == dtype, name
        _no_worse_than_numpy(got, ref, exact, dtype)
    z = _data(dtype, "normal")
    m = float(np.max(z))
    exact = m + math.log(math.fsum(np.exp(z.astype(np.float64) - m)))
    import scipy.special
    _no_worse_than_numpy(fg.jit(fnp.logsumexp)(z), scipy.special.logsumexp(z), exact, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_in_backward_passes(dtype):
    """d/dw sum(x * w) = sum(x): the backward pass of the broadcast of w is a sum over x."""
    x = _data(dtype, "tenths")
    g = fg.jit(fg.grad(lambda w, x: fnp.sum(x * w)))(dtype(1.0), x)
    _no_worse_than_numpy(g, np.sum(x), _exact_sum(x), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cumsum(dtype):
    x = _data(dtype, "tenths")[: N // 10]
    got = fg.jit(fnp.cumsum)(x)
    assert got.dtype == dtype
    exact = np.arange(1, x.size + 1) * float(x[0])    # every partial sum of one repeated value
    idx = np.linspace(0, x.size - 1, 50).astype(int)
    _no_worse_than_numpy(got[idx], np.cumsum(x)[idx], exact[idx], dtype)


@pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")  # axis-0 sums: no prange
@pytest.mark.parametrize("parallel", [False, True])
def test_infinities_nans_and_overflow_as_numpy(parallel):
    """The compensation of an infinite sum is nan (inf - inf); the result must still be inf."""
    x = np.ones((4, 40000))
    x[0, 5], x[1, 7], x[1, 9], x[2, 3] = np.inf, np.inf, -np.inf, np.nan
    x[3, :] = 1e308
    with np.errstate(all="ignore"):
        for f in (lambda x: fnp.sum(x), lambda x: fnp.sum(x, axis=1), lambda x: fnp.sum(x, axis=0),
                  lambda x: fnp.cumsum(x, axis=1), lambda x: fnp.sum(x.astype(np.float32), axis=1)):
            got, want = fg.jit(f, parallel=parallel)(x), f(x)
            np.testing.assert_array_equal(got, want)


# ---- property: compiled sums and the strong-zero rule agree with the interpreter ------------

from hypothesis import given, settings, strategies as st          # noqa: E402
from hypothesis.extra.numpy import arrays                           # noqa: E402

# no values whose partial sums overflow: then the order of additions decides between inf and
# nan (NumPy's pairwise order and a running sum differ; docs/conventions.md)
_VALUES = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 5e-324]))
_SUMS = {   # compiled once each (shapes vary only through the input)
    "sum": fg.jit(lambda x: fnp.sum(x)), "rows": fg.jit(lambda x: fnp.sum(x, axis=1)),
    "cols": fg.jit(lambda x: fnp.sum(x, axis=0)), "mean": fg.jit(lambda x: fnp.mean(x, axis=1)),
    "cumsum": fg.jit(lambda x: fnp.cumsum(x, axis=1)),
}


@settings(max_examples=60, deadline=None)
@given(x=arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 40)), elements=_VALUES),
       name=st.sampled_from(sorted(_SUMS)))
def test_compiled_sums_agree_with_the_interpreter(x, name):
    """Same special values (inf, -inf, nan) in the same places; finite results within the
    rounding error bound of the sum (n roundings of the magnitudes summed)."""
    from funcgrad.api import evaluate
    f = _SUMS[name]
    with np.errstate(all="ignore"):
        got, want = np.asarray(f(x)), np.asarray(evaluate(f.f, x))
        scale = np.asarray(evaluate(f.f, np.abs(x)))
        finite = np.isfinite(want)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
        # NumPy's own error bound for n terms (its cumsum adds in sequence) plus ours
        bound = (4 + x.shape[1]) * np.finfo(float).eps * scale[finite]
        assert np.all(np.abs(got - want)[finite] <= bound)


@settings(max_examples=40, deadline=None)
@given(x=arrays(np.float64, 5, elements=st.one_of(st.floats(-4, 4), st.just(0.0))),
       branch=st.sampled_from(["sqrt", "log", "reciprocal", "power"]))
def test_strong_zero_compiled_equals_interpreted(x, branch):
    inner = {"sqrt": fnp.sqrt, "log": fnp.log, "reciprocal": lambda v: 1.0 / v,
             "power": lambda v: v ** 1.5}[branch]
    f = lambda x: fnp.sum(fnp.where(x > 0, inner(x), x * 0.5))
    with np.errstate(all="ignore"):
        got, want = fg.jit(fg.grad(f))(x), fg.grad(f)(x)
    assert np.all(got[x <= 0] == 0.5)                 # the discarded branch adds nothing
    np.testing.assert_allclose(got, want, rtol=1e-13)  # (x > 0 tiny: a genuine inf, both)
