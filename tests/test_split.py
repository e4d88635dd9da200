"""Large programs are compiled as several functions (backend/split.py) with unchanged results.

Each test makes every program "large" and its parts tiny (a few equations), so that small
programs exercise the splitting: the source must really have several part functions, and the
results must equal the unsplit kernel's bit for bit and the interpreter's to rounding.
"""
import contextlib
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.backend import cache, codegen, split
from funcgrad.tree_util import tree_flatten
from conftest import rand


@contextlib.contextmanager
def part_sizes(split_size, chunk, inline_calls=None):
    old = split.SPLIT_SIZE, split.CHUNK_SIZE, split.INLINE_CALLS
    split.SPLIT_SIZE, split.CHUNK_SIZE = split_size, chunk
    split.INLINE_CALLS = old[2] if inline_calls is None else inline_calls
    try:
        yield
    finally:
        split.SPLIT_SIZE, split.CHUNK_SIZE, split.INLINE_CALLS = old


NEVER = (10 ** 9, 10 ** 9, 10 ** 9)       # part_sizes(*NEVER): one function, vecmath inlined


def check_split(f, *args, chunk=4, parallel=False, whole=True):
    """Compile f split into parts of `chunk` equations; compare with the one-function kernel
    (bit for bit) and the interpreter (to rounding: vecmath's sin is not NumPy's). Returns
    the split kernel's source."""
    with part_sizes(0, chunk):
        jf = fg.jit(f, parallel=parallel)
        got = jf(*args)
        (entry,) = jf._entries.values()
        source = entry.compiled.source
    assert source.count("def _part") >= 2, source
    with fg.disable_jit():
        ref = fg.jit(f)(*args)
    if whole:
        with part_sizes(*NEVER):
            expected = fg.jit(f, parallel=parallel)(*args)
    got, tree = tree_flatten(got)
    ref, ref_tree = tree_flatten(ref)
    assert tree == ref_tree
    for k, (g, r) in enumerate(zip(got, ref)):
        g, r = np.asarray(g), np.asarray(r)
        assert g.dtype == r.dtype and g.shape == r.shape, (k, g, r)
        if g.dtype.kind == "f":
            tol = 1e-12 if g.dtype == np.float64 else 1e-5
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(g, r, err_msg=f"output {k}")
        if whole:
            np.testing.assert_array_equal(g, np.asarray(tree_flatten(expected)[0][k]))
    return source


def unrolled(x, n=12):
    for _ in range(n):
        x = x + 0.001 * fnp.sin(x) * x
    return fnp.sum(x)


# ---- the regression: an unrolled Python loop ------------------------------------------------

def test_unrolled_loop_gradient_is_split_inside_its_fused_loop():
    source = check_split(fg.grad(unrolled), np.array([1.0, -0.5, 2.0]))
    kernel = source[source.index("def kernel"):]
    assert "for i0 in range(a.shape[0]):" in kernel
    calls = [ln for ln in kernel.splitlines() if "= _part" in ln]
    assert len(calls) >= 10 and all(ln.startswith("        (") for ln in calls)   # in the loop
    assert "_vm.outlined.sin_cos_f64(" in source and "_vm.sin" not in source


def test_default_sizes_split_a_long_unrolled_loop_into_bounded_parts():
    """100 unrolled steps under jit(grad) are 1,098 equations: over SPLIT_SIZE, so the kernel
    is generated as parts of at most CHUNK_SIZE equations (only generated here, not compiled)."""
    lowered = fg.jit(fg.grad(lambda x: unrolled(x, 100))).lower(np.ones(3))
    assert len(lowered.program.eqns) > split.SPLIT_SIZE
    source = lowered.source
    parts = source.split("def _part")[1:]
    assert len(parts) >= len(lowered.program.eqns) // split.CHUNK_SIZE
    assert all(p.count("\n") <= 2 * split.CHUNK_SIZE for p in parts)
    assert "fused loop over (a.shape[0], ): 1098 equations in parts" in source


def test_small_programs_are_generated_exactly_as_before():
    f = fg.grad(lambda x: unrolled(x, 12))
    lowered = fg.jit(f).lower(np.ones(3))
    assert split.weight(lowered.program, {}) <= split.SPLIT_SIZE
    assert codegen.vecmath_calls(lowered.program) <= split.INLINE_CALLS
    with part_sizes(*NEVER):
        before = fg.jit(f).lower(np.ones(3)).source
    assert lowered.source == before
    assert "_part" not in before and "outlined" not in before
    assert before.startswith("def kernel(a):\n    # fused loop over (a.shape[0], ): sin, ")


def test_many_vecmath_calls_make_a_program_large():
    """30 unrolled steps are only 328 equations, but 60 sin/cos calls: inlined, Numba took 11 s
    to compile them; outlined, about 2 s."""
    lowered = fg.jit(fg.grad(lambda x: unrolled(x, 30))).lower(np.ones(3))
    assert split.weight(lowered.program, {}) < split.SPLIT_SIZE
    assert codegen.vecmath_calls(lowered.program) == 60
    assert "_vm.outlined.sin_cos_f64(" in lowered.source and "def _part2" in lowered.source


def test_value_and_grad_multiple_outputs():
    x = np.array([0.3, -1.2, 2.0])
    check_split(fg.value_and_grad(lambda x, y: unrolled(x * y, 6), argnums=(0, 1)), x, 0.7)


def test_part_parameters_and_results_come_from_the_generated_text():
    unit = split.Unit(["b_i = a[i0]", "acc += b_i * c", "if b_i > m or b_i != b_i:",
                       "    m = b_i", "for k in range(3):", "    d[k] = k * acc",
                       "with numba.objmode(e='float64'):", "    e, = _impl0_f(d)",
                       "if e < 0:", "    raise IndexError('x')", "f_i = _vm.outlined.sin_f64(e)"], 5)
    assert unit.reads == ["a", "i0", "acc", "c", "m", "d"]      # read before assigned
    assert unit.writes == ["b_i", "acc", "m", "k", "e", "f_i"]


# ---- programs of array statements, integers and booleans ------------------------------------

def test_array_statements_cross_parts():
    def f(a, b):
        c = a @ b
        d = fnp.sum(c * c, axis=1)
        e = fnp.concatenate([a.T.reshape(-1), d])
        g = fnp.max(c, axis=0) + fnp.cumsum(e)[:5]
        h = fnp.tanh(a[1:, ::2]) * 2.0
        return g, e[::-1], h, fnp.sum(h) + fnp.min(c)
    check_split(f, rand((4, 3)), rand((3, 5), seed=1), chunk=3)
    check_split(fg.grad(lambda a, b: f(a, b)[3] + fnp.sum(f(a, b)[0] ** 2)),
                rand((4, 3)), rand((3, 5), seed=1), chunk=5)


def test_integers_and_booleans_cross_parts():
    def f(x, k):
        m = x > 0
        j = k * 3 + 1
        for _ in range(3):
            j = fnp.floor_divide(j, 2) + fnp.remainder(j, 5) - k
            x = fnp.where(m, x * 1.5, -x) + j
            m = fnp.logical_xor(m, x > 1.0)
        return x, j, m, fnp.any(m), fnp.sum(m), fnp.max(j), k.astype(np.int32) * 2
    check_split(f, rand((5,)), np.array([3, -7, 0, 12, 5]))


def test_reductions_inside_a_split_loop_body():
    """Sums (compensated), max/min, row and column reductions fused into one loop whose body
    is split: their accumulators are passed into and returned from the parts."""
    def f(a):
        t = a
        for _ in range(4):
            t = fnp.sin(t) * 0.9 + a
        return (fnp.sum(t), fnp.max(t), fnp.min(t * a), fnp.sum(t * t, axis=1),
                fnp.sum(t, axis=0), fnp.max(t, axis=1), fnp.min(t, axis=0))
    a = rand((3, 4))
    a[1, 2] = np.nan
    source = check_split(f, a, chunk=6)
    assert "in parts" in source
    check_split(f, rand((3, 4)), chunk=6)


def test_float32_and_outlined_exact_operations():
    def f(x, y, exact=True):
        for _ in range(3):
            x = fnp.exp(-x * x) + fnp.log1p(x * x) + fnp.cbrt(y) + fnp.expm1(-fnp.abs(y))
            y = fnp.power(fnp.abs(x), 1.5) + fnp.tanh(y) + fnp.log(1.0 + y * y)
            if exact:
                x = x + fnp.floor_divide(x, 0.3)
                y = y + fnp.remainder(y, 0.7)
        return x, y
    x32, y32 = rand((4,), dtype=np.float32), rand((4,), seed=1, dtype=np.float32)
    source = check_split(lambda x, y: f(x, y, exact=False), x32, y32)
    assert "_vm.outlined.exp_f32(" in source
    source = check_split(f, rand((4,)), rand((4,), seed=1))
    assert "_vm.outlined.floor_divide(" in source


def test_objmode_statements_in_parts_and_in_a_split_loop_body():
    """Primitives without a Numba lowering for a case call NumPy in numba.objmode, inside
    parts too (searchsorted of float keys into integer edges: NumPy casts both)."""
    def f(a, v):
        for _ in range(2):
            a = a @ fnp.linalg.inv(a + 3.0 * fnp.eye(3)) + 0.1
        k = fnp.argmax(a, axis=1)
        return a, k, fnp.searchsorted(fnp.sort(v), a[0]), fnp.linalg.det(a)
    check_split(f, rand((3, 3)), rand((5,), seed=1))

    def g(a):
        step = lambda i, a: (a @ fnp.linalg.inv(a + 3.0 * fnp.eye(3)) * 0.5  # (searchsorted:
                             + fnp.searchsorted(np.array([-1, 0, 1]), a) * 0.01)        # objmode)
        return fg.fori_loop(0, 3, step, a)
    source = check_split(g, rand((3, 3)))
    assert "with numba.objmode(" in source


# ---- loops and branches whose bodies are split ------------------------------------------------

def body(i, x):
    for _ in range(4):
        x = x + 0.01 * fnp.sin(x) * x + 0.001 * i
    return x


def test_fori_loop_body_split_and_its_gradient():
    x = np.array([0.5, 1.0, -2.0])
    check_split(lambda x: fg.fori_loop(0, 5, body, x), x)
    source = check_split(fg.grad(lambda x: fnp.sum(fg.fori_loop(0, 5, body, x) ** 2)), x)
    loop = source[source.index("def kernel"):]
    assert "for " in loop and "= _part" in loop


def test_while_loop_split_body_with_integer_carry_and_gradient():
    def f(x, limit):
        def step(c):
            k, v = c
            for _ in range(3):
                v = fnp.cos(v) * 0.9 + v * 0.1
            return k + 1, v
        return fg.while_loop(lambda c: c[0] < limit, step, (0, x))
    x, limit = np.array([0.3, -0.4]), np.array(4)
    check_split(f, x, limit)
    for k in (None, 2):
        g = lambda x: fnp.sum(fg.while_loop(
            lambda c: c[0] < 4, lambda c: (c[0] + 1, fnp.sin(c[1]) * c[1] + fnp.exp(-c[1])),
            (0, x), checkpoint=k)[1])
        check_split(fg.grad(g), x, chunk=3)


def test_scan_with_outputs_and_cond_branches_split():
    def f(c0, xs):
        def step(c, x):
            for _ in range(3):
                c = c * 0.9 + fnp.sin(x * c)
            return c, (c * 2.0, c > 0.5)
        c, (ys, flags) = fg.scan(step, c0, xs)
        big = fg.cond(fnp.sum(c) > 0, lambda c: unrolled(c, 3) * c, lambda c: -c * 3.0, c)
        return c, ys, flags, big
    c0, xs = np.array([0.1, 0.2]), rand((6, 2), seed=3)
    check_split(f, c0, xs)
    check_split(fg.grad(lambda c0, xs: fnp.sum(f(c0, xs)[1]) + fnp.sum(f(c0, xs)[3])), c0, xs,
                chunk=6)


@pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")   # the driver has no prange
def test_parallel_kernel_with_parts():
    def f(x):
        y = fnp.cumsum(fnp.sin(x) * x)          # a statement between two fused loops
        z = y
        for _ in range(3):
            z = z * 0.5 + fnp.cos(z)
        return fnp.sum(z * y), fnp.sum(x * x)
    source = check_split(f, rand((40000,)), chunk=8, parallel=True)
    assert "@numba.njit(error_model='numpy', parallel=True" in source    # a part with prange
    assert "for i0 in numba.prange(a.shape[0]):" in source


# ---- caching ----------------------------------------------------------------------------------

def test_split_kernel_is_stored_and_reloaded_from_the_persistent_cache():
    x = np.array([1.0, 2.0, 3.0])
    with part_sizes(0, 6):
        first = fg.jit(fg.grad(unrolled))
        expected = first(x)
        assert "def _part" in first.lower(x).source
        cache.kernels.clear()                   # (weakly shared too: `first` still holds it)
        hits = cache.stats["hit"]
        again = fg.jit(fg.grad(unrolled))
        np.testing.assert_array_equal(again(x), expected)
    if cache.cache_dir() is not None:
        assert cache.stats["hit"] == hits + 1


def test_split_kernel_compiled_in_memory(monkeypatch):
    monkeypatch.setattr(fg.config, "disable_cache", True)
    cache.kernels.clear()
    check_split(fg.grad(lambda x: unrolled(x, 5)), np.array([0.1, 0.2]), chunk=7, whole=False)


# ---- random straight-line programs ------------------------------------------------------------

FLOAT_OPS = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - 0.5 * b,
             lambda a, b: fnp.maximum(a, b), lambda a, b: fnp.sin(a), lambda a, b: fnp.tanh(b),
             lambda a, b: fnp.exp(-a * a)]
INT_OPS = [lambda a, b: a + b, lambda a, b: fnp.floor_divide(a, 3), lambda a, b: a * 2 - b]


def random_program(steps):
    def f(x, y, k):
        fs, ks, bs = [x, y], [k], [x > y]
        for op, i, j in steps:
            a, b = fs[i % len(fs)], fs[j % len(fs)]
            if op < len(FLOAT_OPS):
                fs.append(FLOAT_OPS[op](a, b))
                continue
            op -= len(FLOAT_OPS)
            if op < len(INT_OPS):
                ks.append(INT_OPS[op](ks[i % len(ks)], ks[j % len(ks)]))
            elif op == len(INT_OPS):
                bs.append(fnp.logical_or(a > b, bs[i % len(bs)]))
            else:
                fs.append(fnp.where(bs[j % len(bs)], a, b + ks[i % len(ks)]))
        return fs[-1], fs[-2], ks[-1], bs[-1], fnp.sum(fs[-1] * fs[-3])
    return f


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.integers(0, len(FLOAT_OPS) + len(INT_OPS) + 1),
                                st.integers(0, 50), st.integers(0, 50)), min_size=6, max_size=30),
       chunk=st.integers(1, 6))
def test_random_programs_split_match_the_interpreter(steps, chunk):
    f = random_program(steps)
    args = (rand((3,)), rand((3,), seed=1), np.array([4, -3, 9]))
    check_split(f, *args, chunk=chunk, whole=False)


# ---- the tracing warning ----------------------------------------------------------------------

def test_long_trace_warns_once_at_the_users_line():
    def f(x):
        for _ in range(3000):
            x = fnp.sin(x) * 1.0001      # the line the warning names
        return x
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fg.make_ir(f)(1.0)
    hits = [w for w in caught if "fg.fori_loop" in str(w.message)]
    assert len(hits) == 1
    w = hits[0]
    assert w.filename == __file__ and "fg.scan" in str(w.message)
    assert "x = fnp.sin(x) * 1.0001" in open(__file__).read().splitlines()[w.lineno - 1]


class _Garbage:
    """A reference cycle whose finalizer runs Python code: collected in the middle of an
    AST build, it lets another thread run (how two parses meet in CPython < 3.13)."""
    def __init__(self):
        self.me = self

    def __del__(self):
        sum(range(200))


def test_liveness_parses_safely_beside_other_threads():
    """Background compiles find part parameters on several threads at once; CPython's shared
    AST depth counter made such parses fail with "AST constructor recursion depth mismatch"
    (a flaky CI failure of test_background), unless they hold one lock."""
    import gc
    import threading
    lines = [f"x{i} = (a{i} + b[{i}]) * c({i}, d=e{i})" for i in range(400)]
    want = split._liveness(lines)
    got, errors = [], []

    def work():
        try:
            for _ in range(60):
                for _ in range(5):
                    _Garbage()
                got.append(split._liveness(lines))
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(e)

    old = gc.get_threshold()
    gc.set_threshold(50, 5, 5)
    try:
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*old)
    assert not errors, errors[:2]
    assert len(got) == 180 and all(g == want for g in got)
