"""fg.jit(..., parallel=True): reductions over axis 0 (max/min, full and column sums) and the
backward pass's scatter-adds run with prange (backend/loop_reductions.py), and agree with the
reference interpreter.

Tolerances: max/min exactly (NaN included: a NaN anywhere wins); integer sums exactly; float
sums (full and column) within 1e-14 * sum(|x|) of the interpreter's (NumPy's pairwise) sum and
within an ulp of the exact sum (math.fsum), as the serial compensated sum; scatter-add
gradients within rtol 1e-12 of fg.grad interpreted. Results are the same bit for bit at 1 and 2
threads (the chunks depend on the shape only). Sizes are above codegen.PARALLEL_MIN_SIZE; each
function is jitted once at module level with fixed shapes, hypothesis draws values only (each
kernel compiles once: CI budget)."""
import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.backend import codegen
from funcgrad.backend.compile import generate

pytestmark = pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")

ROWS, COLS, N, CUBE = 256, 160, 50_000, (128, 12, 24)
assert min(ROWS * COLS, N, math.prod(CUBE)) >= codegen.PARALLEL_MIN_SIZE
THREADS = list(range(1, min(2, numba.config.NUMBA_NUM_THREADS) + 1))
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 5e-324]


def reductions(x, m, c, k):
    return (fnp.max(x), fnp.min(x), fnp.max(m), fnp.min(m),
            fnp.max(m, axis=0), fnp.min(m, axis=0), fnp.max(m, axis=1),
            fnp.max(c, axis=(0, 2)), fnp.min(c, axis=(0, 1)),
            fnp.sum(k, axis=0), fnp.max(k), fnp.sum(k))


def sums(x, m, c):
    return (fnp.sum(x), fnp.sum(fnp.sin(x) * x), fnp.sum(m, axis=0), fnp.sum(m * m),
            fnp.sum(c, axis=(0, 2)), fnp.sum(m.astype(np.float32), axis=0))


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def shifted(x, m):
    return (fnp.sum(fnp.sin(x[2:]) * x[:-2]) + fnp.sum(x[:-2] * x[1:-1] * x[2:])
            + fnp.sum(m[1:, :] * fnp.tanh(m[:-1, :])))


def mlp(params, x):
    h = fnp.tanh(x @ params["W"] + params["b"])
    return fnp.sum(h * h) / x.shape[0]


JIT = {name: fg.jit(f, parallel=True, background=False)
       for name, f in [("reductions", reductions), ("sums", sums), ("rosenbrock", fg.grad(rosenbrock)),
                       ("shifted", fg.grad(shifted, (0, 1))), ("mlp", fg.grad(mlp))]}


def _normal(seed, shape, scale=1.0, offset=0.0):
    return offset + scale * np.random.default_rng(seed).standard_normal(shape)


def _with(a, specials):
    a = a.copy()
    for pos, v in specials:
        a.flat[pos % a.size] = v
    return a


def _each_thread_count(f, *args):
    """f(*args) at every thread count, checked to be the same bit for bit."""
    outs = []
    try:
        for t in THREADS:
            numba.set_num_threads(t)
            outs.append(f(*args))
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    first = fg.tree_util.tree_leaves(outs[0])
    for other in outs[1:]:
        for a, b in zip(first, fg.tree_util.tree_leaves(other)):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    return outs[0]


def _close_sum(got, want, terms, axis):
    """|got - want| <= 1e-14 * sum(|x|) (the interpreter's pairwise sum is off by about
    log2(n) * eps * sum(|x|)); where the reference is inf or nan, exactly that."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    bound = 1e-14 * np.sum(np.abs(np.asarray(terms, np.float64)), axis=axis)
    assert np.all(np.abs(got - want)[finite] <= np.broadcast_to(bound, want.shape)[finite])


def _exact_columns(a):
    """The exact sums of a's columns, rounded once (math.fsum)."""
    return np.array([math.fsum(col) for col in np.asarray(a, np.float64).T])


def test_the_loops_run_in_parallel_and_serial_code_is_unchanged():
    x, m, c, k = np.ones(N), np.ones((ROWS, COLS)), np.ones(CUBE), np.ones((ROWS, COLS), np.int64)
    for name, args in [("reductions", (x, m, c, k)), ("sums", (x, m, c)), ("rosenbrock", (x,)),
                       ("shifted", (x, m)), ("mlp", ({"W": np.ones((64, 128)), "b": np.ones(128)},
                                                     np.ones((ROWS, 64))))]:
        prog = JIT[name].lower(*args).program
        serial, par = generate(prog)[1], generate(prog, parallel=True)[1]
        assert "prange" not in serial and "_chunk" not in serial
        loops = par.count("# fused loop over (") - par.count("# fused loop over ()")
        assert par.count("in numba.prange(") >= loops > 0, name       # every loop parallel
        if name != "shifted":           # (shifted's scatter-adds: plain prange, one per element)
            assert "in numba.prange(pn" in par, name                 # chunks with partials


def _reductions_args(seed, specials, ties):
    x, m, c = _normal(seed, N), _normal(seed + 1, (ROWS, COLS)), _normal(seed + 2, CUBE)
    if ties:        # many equal values (and zeros of both signs): the first one is kept
        x, m, c = (np.round(a * 2) / 2 for a in (x, m, c))
    k = np.random.default_rng(seed).integers(-2 ** 40, 2 ** 40, (ROWS, COLS))
    return _with(x, specials), _with(m, specials), _with(c, specials), k


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 32), st.lists(st.tuples(st.integers(0, 10 ** 6), st.sampled_from(SPECIALS)),
                                         max_size=6), st.booleans())
def test_max_min_exact_and_integer_sums(seed, specials, ties):
    args = _reductions_args(seed, specials, ties)
    got = _each_thread_count(JIT["reductions"], *args)
    want = evaluate(reductions, *args)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)         # NaN where NumPy has NaN, values exact


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 32), st.sampled_from([1.0, 1e-3, 1e200]), st.sampled_from([0.0, 10.0, -1e3]),
       st.lists(st.tuples(st.integers(0, 10 ** 6), st.sampled_from([np.nan, np.inf, -np.inf, 0.0])),
                max_size=3))
def test_full_and_column_sums(seed, scale, offset, specials):
    x = _with(_normal(seed, N, scale, offset), specials)
    m, c = _normal(seed + 1, (ROWS, COLS), scale, offset), _normal(seed + 2, CUBE, scale, offset)
    with np.errstate(all="ignore"):
        got = _each_thread_count(JIT["sums"], x, m, c)
        want = evaluate(sums, x, m, c)
        terms = [x, np.sin(x) * x, m, m * m, np.moveaxis(c, 1, 0).reshape(CUBE[1], -1).T,
                 m.astype(np.float32)]
        for g, w, t, ax in zip(got, want, terms, [None, None, 0, None, 0, 0]):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            if np.asarray(g).dtype == np.float32:         # (NumPy's float32 sums: ~1e-7 off)
                _close_sum(g, w, np.asarray(t, np.float64) * 1e8, ax)
            else:
                _close_sum(g, w, t, ax)
        # as accurate as the serial compensated sum: within an ulp of the exact sum
        for g, t in [(got[2], m), (got[3], (m * m).reshape(-1, 1))]:
            if np.all(np.isfinite(t)):
                exact = _exact_columns(t)
                err = np.abs(np.ravel(g) - exact)
                assert np.all(err <= np.spacing(np.abs(exact)) + 1e-20 * np.sum(np.abs(t)))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 32), st.sampled_from([0.5, 1.0, 3.0]))
def test_scatter_add_gradients_of_shifted_slices(seed, scale):
    x = scale * np.random.default_rng(seed).uniform(-1.0, 1.0, N)
    m = _normal(seed + 1, (ROWS, COLS))
    got = _each_thread_count(JIT["rosenbrock"], x)
    np.testing.assert_allclose(got, evaluate(fg.grad(rosenbrock), x), rtol=1e-12, atol=1e-12)
    got = _each_thread_count(JIT["shifted"], x, m)
    for g, w in zip(got, evaluate(fg.grad(shifted, (0, 1)), x, m)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 32))
def test_mlp_bias_gradient(seed):
    rng = np.random.default_rng(seed)
    params = {"W": rng.standard_normal((64, 128)) / 8.0, "b": rng.standard_normal(128) * 0.1}
    x = rng.standard_normal((ROWS, 64))
    got = _each_thread_count(JIT["mlp"], params, x)
    want = evaluate(fg.grad(mlp), params, x)
    for key in ("W", "b"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=1e-14)
