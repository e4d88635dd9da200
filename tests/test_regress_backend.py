"""Regressions of the Numba backend, the simplification passes and fg.debug_nans (issue 28).

- Compiled arithmetic is IEEE-exact as NumPy's: signed zeros, infinities and NaN come out of
  compiled code (loop nests, 0-d scalar code, scalarised loop bodies) and of the program the
  interpreter runs for fg.jit's first call bit for bit as from NumPy on the same Python
  function (`x + 0.0` is not `x`: -0.0 + 0.0 is +0.0).
- Loops whose derivative step computes nothing compile (jit of grad, jvp, vmap of grad).
- fg.debug_nans reports the first NaN with the same message compiled as interpreted.
- Dropped kernels leave only the memory Numba cannot free, within a measured bound.
"""
import ast
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.backend.compile import generate
from funcgrad.interpreter import eval_program
from funcgrad.tree_util import tree_leaves, tree_unflatten

INF, NAN = np.inf, np.nan
SPECIAL = {
    np.float64: [0.0, -0.0, INF, -INF, NAN, 5e-324, -5e-324, 2.2250738585072014e-308, 1.0,
                 -1.0, 0.5, -2.5, 3.0, 1e308, -1e308, 710.0, -745.5],
    np.float32: [0.0, -0.0, INF, -INF, NAN, 1e-45, -1e-45, 1.1754944e-38, 1.0, -1.0, 0.5,
                 -2.5, 3.0, 3.4e38, -3.4e38, 89.0, -104.0],
}


def pairs(dtype):
    """Every ordered pair of the special values of dtype, as two vectors."""
    s = np.array(SPECIAL[dtype], dtype=dtype)
    return np.repeat(s, len(s)), np.tile(s, len(s))


def ulp_close(got, ref, ulps):
    """Elementwise: the same bits (any NaN for NaN; the sign of zeros and infinities counts),
    or, with ulps > 0, both finite and nonzero within `ulps` units in the last place."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, ref.dtype)
    if ref.dtype.kind == "b":
        return got == ref
    if ref.dtype.kind == "c":
        return ulp_close(got.real, ref.real, ulps) & ulp_close(got.imag, ref.imag, ulps)
    same = ((got == ref) & (np.signbit(got) == np.signbit(ref))) | (np.isnan(got) & np.isnan(ref))
    if ulps:
        with np.errstate(all="ignore"):
            near = np.abs(got - ref) <= ulps * np.spacing(np.abs(ref))
        same |= np.isfinite(ref) & (ref != 0) & np.isfinite(got) & near
    return same


def assert_agree(got, ref, a, b, ulps=0, what=""):
    ok = ulp_close(got, ref, ulps)
    if not np.all(ok):
        k = np.flatnonzero(~np.atleast_1d(ok))
        rows = [(a.flat[i], b.flat[i], np.ravel(got)[i], np.ravel(ref)[i]) for i in k[:6]]
        pytest.fail(f"{what}: {len(k)} results differ from NumPy; (a, b, compiled, NumPy): {rows}")


def numpy_of(f, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args)


# ---- 1, 2: IEEE-exact compiled code ----------------------------------------------------------

EXACT_UNARY = {
    "negative": lambda x, m: m.negative(x), "absolute": lambda x, m: m.absolute(x),
    "sqrt": lambda x, m: m.sqrt(x), "square": lambda x, m: m.square(x),
    "floor": lambda x, m: m.floor(x), "ceil": lambda x, m: m.ceil(x),
    "trunc": lambda x, m: m.trunc(x), "rint": lambda x, m: m.rint(x),
    "sign": lambda x, m: m.sign(x), "reciprocal": lambda x, m: m.reciprocal(x),
    "x ** 2": lambda x, m: x ** 2, "x ** -1": lambda x, m: x ** -1,
    "x ** 1": lambda x, m: x ** 1, "x ** 0": lambda x, m: x ** 0,
    "x ** 0.5": lambda x, m: x ** 0.5,
    "x + 0.0": lambda x, m: x + 0.0, "x - 0.0": lambda x, m: x - 0.0,
    "x + -0.0": lambda x, m: x + (-0.0), "x - -0.0": lambda x, m: x - (-0.0),
    "0.0 + x": lambda x, m: 0.0 + x, "x * 1.0": lambda x, m: x * 1.0,
    "x / 1.0": lambda x, m: x / 1.0, "0.0 * x": lambda x, m: 0.0 * x,
    "x * 0": lambda x, m: x * 0, "0.0 + 0 * x": lambda x, m: 0.0 + 0 * x,
    "x - x": lambda x, m: x - x, "x / x": lambda x, m: x / x,
    "sum of (x, 0 * x)": lambda x, m: m.sum(m.stack([x, 0.0 * x]), axis=0),
    "sum of (x, x)": lambda x, m: m.sum(m.stack([x, x]), axis=0),
    "signbit": lambda x, m: m.signbit(x), "isnan": lambda x, m: m.isnan(x),
    "isinf": lambda x, m: m.isinf(x), "isfinite": lambda x, m: m.isfinite(x),
}
MATH_UNARY = {name: (lambda f: lambda x, m: getattr(m, f)(x))(name) for name in (
    "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "sinh", "cosh",
    "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "cbrt", "deg2rad",
    "rad2deg")}
MATH_UNARY.update({"x ** 3": lambda x, m: x ** 3, "x ** -2": lambda x, m: x ** -2})
EXACT_BINARY = {
    "add": lambda a, b, m: m.add(a, b), "subtract": lambda a, b, m: m.subtract(a, b),
    "multiply": lambda a, b, m: m.multiply(a, b), "divide": lambda a, b, m: m.divide(a, b),
    "fmod": lambda a, b, m: m.fmod(a, b), "remainder": lambda a, b, m: m.remainder(a, b),
    "floor_divide": lambda a, b, m: m.floor_divide(a, b),
    "where(a > b)": lambda a, b, m: m.where(m.greater(a, b), a, b),
    "where(isnan(a))": lambda a, b, m: m.where(m.isnan(a), b, a),
    "less": lambda a, b, m: m.less(a, b), "equal": lambda a, b, m: m.equal(a, b),
    "not_equal": lambda a, b, m: m.not_equal(a, b),
    "less_equal": lambda a, b, m: m.less_equal(a, b),
}
MATH_BINARY = {name: (lambda f: lambda a, b, m: getattr(m, f)(a, b))(name) for name in (
    "arctan2", "hypot", "power", "logaddexp", "logaddexp2")}
# The sign of the zero that max/min return for +0.0 and -0.0 is unspecified (NumPy's own answer
# depends on the platform, and for fmax and reductions on the array's length): compared where
# the arguments are not two zeros
TIES_UNSPECIFIED = {"maximum": lambda a, b, m: m.maximum(a, b),
                    "minimum": lambda a, b, m: m.minimum(a, b),
                    "fmax": lambda a, b, m: m.fmax(a, b), "fmin": lambda a, b, m: m.fmin(a, b),
                    "max of (a, b)": lambda a, b, m: m.max(m.stack([a, b]), axis=0),
                    "min of (a, b)": lambda a, b, m: m.min(m.stack([a, b]), axis=0)}
# libm-class functions: special results exact, finite nonzero ones within a few ulp (funcgrad's
# vectorised exp/log/sin/... are within 1.31 ulp; x ** 3 multiplies: within 2 ulp)
MATH_ULPS = 4


def table(a, b, m):
    """Every function of the tables above, on a (unary) and on (a, b) (binary)."""
    out = {name: f(a, m) for name, f in {**EXACT_UNARY, **MATH_UNARY}.items()}
    out.update({name: f(a, b, m) for name, f in
                {**EXACT_BINARY, **MATH_BINARY, **TIES_UNSPECIFIED}.items()})
    return out


def check_table(got, ref, a, b, path):
    for name in ref:
        r, g = np.asarray(ref[name]), np.asarray(got[name])
        if name in TIES_UNSPECIFIED:
            keep = ~((a == 0) & (b == 0))
            r, g, a_, b_ = r[keep], g[keep], a[keep], b[keep]
        else:
            a_, b_ = a, b
        ulps = MATH_ULPS if name in MATH_UNARY or name in MATH_BINARY else 0
        assert_agree(g, r, a_, b_, ulps, f"{path}: {name}")


def scan_of(g):
    """g(a, b) computed inside a scan body, one pair (two 0-d values) per step: the scalar
    code of a scalarised loop."""
    def run(a, b):
        return fg.scan(lambda c, ab: (c, g(ab[0], ab[1])), 0.0, fnp.stack([a, b], axis=1))[1]
    return run


def test_regression_adding_zero_is_not_an_identity():
    """x + 0.0 and 0.0 + 0 * x at x = -0.0 are +0.0 (they were -0.0 compiled: `x + 0` was
    folded to x); arctan2 of them then gives +pi, not -pi."""
    x = np.array([-0.0, 0.0, -1.0])
    f = lambda x: (x + 0.0, 0.0 + 0 * x, fnp.arctan2(0.0 + 0 * x, -0.0), x - (-0.0))
    ref = numpy_of(f, x)
    for got in (fg.jit(f)(x), [fg.jit(f)(np.float64(v)) for v in x]):
        got = [np.array([g[k] for g in got]) for k in range(4)] if isinstance(got, list) else got
        for g, r in zip(got, ref):
            assert_agree(g, r, x, x, what="x + 0.0")
    z = np.array([complex(-0.0, -0.0), complex(INF, 0.0)])
    fz = lambda z: (z + 0.0, z * 1.0, z / 1.0)          # complex z * 1 is not z at inf
    for g, r in zip(fg.jit(fz)(z), numpy_of(fz, z)):
        assert_agree(g, r, z, z, what="complex z + 0, z * 1")


def test_regression_gradient_scatter_keeps_zero_signs():
    """The adjoint of a slice added to another cotangent (absorb_scatter_adds) rounds as the
    interpreter: 0.0 + (-0.0) is +0.0 where the slice does not reach."""
    w = np.array([-0.0, 1.0, 2.0])
    f = lambda x: fnp.sum(x[1:]) + fnp.sum(x * w)
    x = np.ones(3)
    want = fg.grad(f)(x)
    assert not np.signbit(want[0])
    assert_agree(fg.jit(fg.grad(f))(x), want, x, x, what="grad of a slice")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_special_values_compiled_equal_numpy(dtype):
    """Every function over every pair of special values (+-0, +-inf, NaN, subnormals, huge,
    normal), against NumPy: compiled as loop nests, and (float64) inside a scalarised loop
    body and as 0-d scalar code; the prepared program interpreted (fg.jit's first call).
    (Kernels of their own: one kernel of all three compiles several times slower.)"""
    a, b = pairs(dtype)
    ref = numpy_of(table, a, b, np)
    f = lambda a, b: table(a, b, fnp)
    check_table(fg.jit(f)(a, b), ref, a, b, "loop nest")
    lowered = fg.jit(f).lower(a, b)
    flat = numpy_of(eval_program, lowered.program, a, b)
    check_table(tree_unflatten(lowered.out_tree, flat), ref, a, b, "prepared, interpreted")
    if dtype == np.float64:
        check_table(fg.jit(scan_of(f))(a, b), ref, a, b, "scan body")
        k = fg.jit(f)
        outs = [k(x, y) for x, y in zip(a, b)]
        check_table({n: np.array([o[n] for o in outs]) for n in ref}, ref, a, b, "0-d scalars")


# -- random expression programs -----------------------------------------------------------------

LITERALS = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, 3.0, -2.5, 2.0]
UNARY_OPS = sorted(n for n in EXACT_UNARY if n not in (
    "signbit", "isnan", "isinf", "isfinite", "x ** 0"))
BINARY_OPS = sorted(n for n in EXACT_BINARY if n not in (
    "less", "equal", "not_equal", "less_equal"))
TOP_OPS = [None, *sorted(MATH_UNARY), *sorted(MATH_BINARY)]


def _tree(children):
    return st.one_of(st.tuples(st.sampled_from(UNARY_OPS), children),
                     st.tuples(st.sampled_from(BINARY_OPS), children, children))


EXPRESSIONS = st.recursive(st.sampled_from(["a", "b"]) | st.sampled_from(LITERALS), _tree,
                           max_leaves=5)


def fix_literals(t, sibling_is_array=False):
    """A literal stays only as an operand of a binary operation whose other operand is an
    array (so that every operation has an array operand, as NumPy's dtype rules then agree
    for Python floats); elsewhere it becomes `a`."""
    if isinstance(t, float):
        return t if sibling_is_array else "a"
    if isinstance(t, str):
        return t
    if len(t) == 2:
        return (t[0], fix_literals(t[1]))
    left, right = t[1], t[2]
    if isinstance(left, float) and isinstance(right, float):
        left = "a"
    return (t[0], fix_literals(left, not isinstance(right, float)),
            fix_literals(right, not isinstance(left, float)))


def evaluate_tree(t, a, b, m):
    if isinstance(t, str):
        return a if t == "a" else b
    if isinstance(t, float):
        return t
    if len(t) == 2:
        return EXACT_UNARY[t[0]](evaluate_tree(t[1], a, b, m), m)
    return EXACT_BINARY[t[0]](evaluate_tree(t[1], a, b, m), evaluate_tree(t[2], a, b, m), m)


def evaluate_top(top, a, b, m):
    op, t1, t2 = top
    x, y = evaluate_tree(t1, a, b, m), evaluate_tree(t2, a, b, m)
    if op is None:
        return x
    if op in MATH_UNARY:
        return MATH_UNARY[op](x, m)
    return MATH_BINARY[op](x, y, m)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([np.float64, np.float32]),
       st.lists(st.tuples(st.sampled_from(TOP_OPS), EXPRESSIONS, EXPRESSIONS),
                min_size=3, max_size=6))
def test_random_expressions_compiled_equal_numpy(dtype, tops):
    """Random programs of exact operations (+, -, *, /, sqrt, floor, sign, max, fmod, where,
    ...) over literals and the special values, optionally under one libm-class function, one
    kernel per example: loop nests and a scan body against NumPy on the same function."""
    tops = [(op, fix_literals(t1), fix_literals(t2)) for op, t1, t2 in tops]
    a, b = pairs(dtype)
    f = lambda a, b: [evaluate_top(top, a, b, fnp) for top in tops]
    both = lambda a, b: (f(a, b), scan_of(f)(a, b))
    ref = numpy_of(lambda: [evaluate_top(top, a, b, np) for top in tops])
    arrays, scanned = fg.jit(both)(a, b)
    for top, r, g1, g2 in zip(tops, ref, arrays, scanned):
        ulps = 0 if top[0] is None else MATH_ULPS
        assert_agree(g1, r, a, b, ulps, f"loop nest: {top}")
        assert_agree(g2, r, a, b, ulps, f"scan body: {top}")


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 4).flatmap(lambda nd: st.lists(st.permutations(range(nd)), min_size=1,
                                                     max_size=4)),
       st.integers(-1, 3))
def test_transpose_chains_fold_to_one_transpose(perms, kept):
    """fold_constants composes transpose(transpose(x, p), q) into transpose(x, p[q]) (an
    identity composite into x): the simplified program gives NumPy's result, with one
    transpose per chain (two when an intermediate result is also returned)."""
    from funcgrad.transforms.simplify import simplify
    shape = tuple(range(2, 2 + len(perms[0])))
    x = np.arange(float(np.prod(shape))).reshape(shape)

    def chain(xp):
        def f(x):
            outs, y = [], x
            for k, p in enumerate(perms):
                y = xp.transpose(y, p)
                if k == kept:
                    outs.append(y * 1.5)
            return [y] + outs
        return f
    prog = simplify(fg.make_ir(chain(fnp))(x))
    got, want = eval_program(prog, x), chain(np)(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.shape == w.shape
    n = sum(e.prim.name == "transpose" for e in prog.eqns)
    assert n <= (2 if 0 <= kept < len(perms) - 1 else 1), prog


# ---- 3: loops whose derivative step computes nothing ------------------------------------------

def test_regression_loop_with_an_empty_backward_step_compiles():
    """jit(grad) of a loop whose backward step is the identity (c + 1.0; with a print; under a
    log) raised IndentationError: the generated `for` had no body. Simplification now forwards
    a carry the body passes through, and a step that computes nothing is written `pass`."""
    fs = [lambda x: fnp.sum(fg.fori_loop(0, 5, lambda i, c: c + 1.0, x)),
          lambda x: fnp.sum(fnp.log(fg.fori_loop(0, 5, lambda i, c: c - 0.6, x))),
          lambda x: fnp.sum(fg.fori_loop(0, 3, lambda i, c: (fg.debug.print("c={}", c), c + 1.0)[1],
                                         x))]
    x = np.full(1, 4.0)
    for f in fs:
        np.testing.assert_array_equal(fg.jit(fg.grad(f))(x), evaluate(fg.grad(f), x))
    # the unsimplified backward program, generated as it is: a loop over an empty step
    src = generate(fg.make_ir(fg.grad(fs[0]))(x))[1]
    ast.parse(src)
    assert "pass" in src


LOOP_OPS = {
    "c": lambda c, i, k: c,                                  # derivative: the identity
    "c + 1": lambda c, i, k: c + 1.0,
    "0 * c + 1": lambda c, i, k: 0.0 * c + 1.0,              # derivative: zero
    "stop_gradient": lambda c, i, k: fg.stop_gradient(c) * 2.0,
    "2 c": lambda c, i, k: c * 2.0,
    "c - 0.6": lambda c, i, k: c - 0.6,
    "sin": lambda c, i, k: fnp.sin(c),
    "c + i / 10": lambda c, i, k: c + 0.1 * i,
    "maximum": lambda c, i, k: fnp.maximum(c, 0.5),
    "abs by where": lambda c, i, k: fnp.where(c > 0, c, -c),
    "c * k": lambda c, i, k: c * k,
    "log": lambda c, i, k: fnp.log(fnp.abs(c) + 1.0),
    "print": lambda c, i, k: (fg.debug.print("step {}", i), c)[1],
}
K = np.array([0.5, -1.5])


def loop_loss(kind, ops, n, passthrough):
    """A loss over one loop of `kind` whose step applies `ops` in turn to the carry (and keeps a
    second carry unchanged when `passthrough`)."""
    def step(i, c):
        for name in ops:
            c = LOOP_OPS[name](c, i, K)
        return c

    def loss(x):
        init = (x, x * 2.0) if passthrough else (x,)
        tail = lambda c: fnp.sum(c[0] * c[-1]) if passthrough else fnp.sum(c[0])
        if kind == "fori_loop":
            return tail(fg.fori_loop(0, n, lambda i, c: (step(i, c[0]),) + c[1:], init))
        if kind == "while_loop":
            out = fg.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, step(s[0], s[1])) + s[2:],
                                (0,) + init)
            return tail(out[1:])
        c, ys = fg.scan(lambda c, t: ((step(t, c[0]),) + c[1:], c[0] * t), init,
                        np.arange(n, dtype=np.float64))
        return tail(c) + fnp.sum(ys)
    return loss


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["fori_loop", "while_loop", "scan"]),
       st.lists(st.sampled_from(sorted(LOOP_OPS)), min_size=1, max_size=3),
       st.integers(0, 4), st.booleans())
def test_random_loop_bodies_compiled_equal_interpreted(kind, ops, n, passthrough):
    """jit(grad), jit(jvp) and jit(vmap(grad)) of a loop with a random small step (derivative
    the identity, zero, or other), one kernel per example, against the interpreter."""
    loss = loop_loss(kind, ops, n, passthrough)
    x, v = np.array([0.7, -1.2]), np.array([1.0, 0.5])
    xs = np.stack([x, x + 0.3, -x])
    every = lambda x, v, xs: (fg.grad(loss)(x), fg.jvp(loss, (x,), (v,)),
                              fg.vmap(fg.grad(loss))(xs))
    got = fg.jit(every)(x, v, xs)
    want = evaluate(every, x, v, xs)
    for g, w in zip(tree_leaves(got), tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


# ---- 4, 5: fg.debug_nans reports the same compiled as interpreted -----------------------------

def _stacked_log(x):
    """A stacked output nothing reads holds log of a negative value (step 1)."""
    return fg.scan(lambda c, t: (c * t, fnp.log(t - 2.0)), 1.0, x)[0]


def _scan_log(x):
    return fg.scan(lambda c, t: (c + fnp.log(t - 2.0), c), 0.0, x)[0]


NAN_CASES = {   # f, argument, the transforms applied (each interpreted, then compiled)
    "sqrt of a negative": (lambda x: fnp.sum(fnp.sqrt(x)), np.array([1.0, -1.0]), "g"),
    "log, its value unread by grad": (lambda x: fnp.sum(fnp.log(x)), np.array([1.0, -1.0]), "g"),
    "arcsin, its value unread by grad": (lambda x: fnp.sum(fnp.arcsin(x)), np.array([0.5, 2.0]),
                                         "g"),
    "nanmean of NaN (0 / 0)": (lambda x: fnp.nanmean(x ** 2), np.float64(np.nan), "g"),
    "nansum of a NaN input": (lambda x: fnp.nansum(x ** 2), np.array([1.0, np.nan]), "gv"),
    "log in a scan": (_scan_log, np.array([3.0, 1.0, 4.0]), "gv"),
    "log in an unread stacked output": (_stacked_log, np.array([3.0, 1.0, 4.0]), "gf"),
}


def _outcome(g, x):
    with fg.debug_nans(), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ("value", tree_leaves(g(x)))
        except FloatingPointError as e:
            return ("raised", str(e))


@pytest.mark.parametrize("name", sorted(NAN_CASES))
def test_debug_nans_compiled_reports_as_interpreted(name):
    """The first NaN is reported with the same message compiled as interpreted (or neither
    raises): a forward value nothing reads is still run and checked, as the interpreter runs
    it; checks go in before simplification, so the role named is the equation's own."""
    f, x, which = NAN_CASES[name]
    kinds = {"g": fg.grad(f), "v": fg.value_and_grad(f), "f": f}
    for k in which:
        g = kinds[k]
        want = _outcome(lambda x: evaluate(g, x), x)
        got = _outcome(fg.jit(g), x)
        assert got[0] == want[0], (k, got, want)
        if want[0] == "raised":
            assert got[1] == want[1] and "backward pass" not in got[1]
        else:
            for a, b in zip(got[1], want[1]):
                np.testing.assert_array_equal(a, b)


# ---- 6: what a dropped kernel leaves behind ---------------------------------------------------

_DROP_SCRIPT = """
import gc, os, sys
import numpy as np, funcgrad as fg, funcgrad.numpy as fnp
from numba.core.registry import CPUDispatcher

def rss_mb():
    gc.collect()
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20

def run(k):
    w = np.full(1_000_000, float(k))        # 8 MB captured: must be freed with f
    f = fg.jit(lambda x: fnp.sum(fnp.sin(x * (k + 0.5)) + w[:3]))
    f(np.ones(3))

for k in range(2):                          # Numba's and LLVM's own first-use memory
    run(1000 + k)
base = rss_mb()
for k in range(N):
    run(k)
grown = (rss_mb() - base) / N
kernels = [o for o in gc.get_objects() if type(o) is CPUDispatcher and o.py_func.__name__ == "kernel"]
print(grown, len(kernels))
"""


def _dropped_kernels(cache, n):
    env = dict(os.environ, FUNCGRAD_CACHE_DIR=str(cache), FUNCGRAD_MAX_KERNELS="0",
               FUNCGRAD_JIT_BACKGROUND="0")
    out = subprocess.run([sys.executable, "-c", f"N = {n}\n" + _DROP_SCRIPT], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    grown, alive = out.stdout.split()
    return float(grown), int(alive)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc")
def test_dropped_kernels_leave_a_bounded_remainder(tmp_path):
    """Dropping fg.jit functions frees their dispatchers and captured arrays; what stays is
    the memory Numba/LLVM never gives back for code compiled in the process (docs/tiering.md:
    measured ~2 MB per kernel), and much less for a kernel loaded from the disk cache."""
    compiled, alive = _dropped_kernels(tmp_path, 6)      # compiled here (a fresh cache)
    assert alive == 0
    assert compiled < 5.0, f"{compiled:.2f} MB per dropped kernel compiled in the process"
    loaded, alive = _dropped_kernels(tmp_path, 6)        # the same kernels, from the disk cache
    assert alive == 0
    assert loaded < 1.5, f"{loaded:.2f} MB per dropped kernel loaded from the disk cache"
