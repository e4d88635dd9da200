"""fg.jit gives its kernel's bits from the first call (fg.config.jit_same_bits, api/jit.py).

While a signature's kernel compiles, the interpreter answers only a program whose equations
are all exact (ir.Primitive.exact: exact results or one correctly rounded IEEE operation per
element), where it computes the kernel's bits; any other program's first call waits for the
kernel. Here: every primitive marked exact, compiled, against the interpreter bit for bit on
special values; drawn programs, exact or not, give the same bits on call 1 and call 2; and
the un-jitted transforms and library loops, which never wait, still do not.
"""
import threading
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api.background import Pending, wait_all
from funcgrad.ir import PRIMITIVES, exact_program, sub_programs
from test_background import held  # noqa: F401  (fixture: background compiles wait for a gate)

@pytest.fixture(autouse=True)
def settled():
    """Background compiles a test started (its gate released) end before the next test."""
    yield
    wait_all()


SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, 1e308, -1e308, 5e-324, -5e-324, 2.2e-308,
            np.inf, -np.inf, np.nan, 1.0 / 3, 7.0, 1e-10, -123.456, 2.0 ** 53 + 1,
            0.49999999999999994, 2.5, -0.5, 1.5]


def same_bits(a, b):
    """a and b hold the same bits (NaN payloads and signed zeros included: the inputs hold
    one NaN only, as which of two NaNs + and * return is not fixed, ir.Primitive.exact)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
    return np.array_equal(a, b)


def assert_same_bits(got, want):
    got, want = fg.tree_util.tree_leaves(got), fg.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert same_bits(a, b), (k, a, b)


def interpreted(f, *args):
    with fg.disable_jit(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args)


def exact_ops(x, y, k):
    """Every elementwise and data-moving primitive marked exact, on x, y (floats), k (ints)."""
    i = np.array([3, 0, 5, 5, 1])
    other = np.float32 if x.dtype == np.float64 else np.float64
    n = x.shape[0]
    return (x + y, x - y, x * y, x / y, -x, fnp.abs(x), fnp.sqrt(x), fnp.square(x), y ** 2,
            fnp.reciprocal(x), fnp.floor(x), fnp.ceil(x), fnp.rint(y), fnp.trunc(x),
            fnp.sign(y), x == y, x != y, x < y, x <= y, x > y, x >= y,
            fnp.logical_and(x > 0, y > 0), fnp.logical_or(x > 0, y < 0),
            fnp.logical_xor(x > 0, y > 0), fnp.logical_not(x > y), fnp.isnan(x), fnp.isinf(y),
            fnp.isfinite(x), fnp.signbit(y), fnp.where(x > y, x, y), x.astype(other),
            ((x > 0) + (y > 0)).astype(x.dtype), ((x > 0) * (y < 0)).astype(x.dtype),
            k.astype(x.dtype), (x > 0).astype(x.dtype), k & (k * 3), k | 3, k ^ k[::-1], ~k,
            fnp.flip(x), fnp.concatenate([x, y]), x[i],
            x.at[i].set(y[:5]), fnp.reshape(x, (n // 4, 4)).T, x[:, None] * y[None, :],
            fnp.argmax(x), fnp.argmin(y), fnp.searchsorted(np.array([-1.0, 0.0, 2.0]), y),
            fg.random.bits(fnp.astype(k[:2], np.uint32), (3,)),
            fnp.gcd(k, k[::-1]), fnp.lcm(k, 6), fnp.left_shift(k, 3), fnp.right_shift(k, 2),
            fnp.nextafter(x, y))


def exact_control(x, y):
    """Loops and a branch whose bodies are exact: the structural primitives."""
    a = fg.fori_loop(0, 3, lambda j, c: c * 0.5 + y, x)
    b, _ = fg.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 1.5 - y, c[1] + 1), (x, 0))
    c = fg.cond(x[0] > y[0], lambda u, v: u - v, lambda u, v: v * 2.0, x, y)
    return a, b, c


# identities and callbacks: they compute nothing the kernel could round differently
NOT_DRAWN = {"stop_gradient", "checkpoint_name", "remat_barrier", "custom_vjp_call",
             "pure_callback", "debug_callback", "debug_check", "debug_check_pointwise"}


def _names(prog, into):
    for e in prog.eqns:
        into.add(e.prim.name)
        for p in sub_programs(e.params):
            _names(p, into)
    return into


def _inputs(dtype):
    with np.errstate(over="ignore"):           # (float32: +-1e308 become +-inf)
        x = np.repeat(SPECIALS, len(SPECIALS)).astype(dtype)
        y = np.tile(SPECIALS, len(SPECIALS)).astype(dtype)
    k = np.arange(-x.size // 2, x.size - x.size // 2, dtype=np.int64) * 7919
    return x, y, k


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_exact_primitive_compiles_to_the_interpreters_bits(dtype):
    x, y, k = _inputs(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ops, control = fg.jit(exact_ops), fg.jit(exact_control)
        assert_same_bits(ops(x, y, k), interpreted(ops, x, y, k))
        assert_same_bits(control(x, y), interpreted(control, x, y))
    progs = [ops.lower(x, y, k).program, control.lower(x, y).program]
    assert all(exact_program(p) for p in progs)
    marked = {n for n, p in PRIMITIVES.items() if p.exact}
    assert marked - NOT_DRAWN <= set().union(*(_names(p, set()) for p in progs))


def test_which_programs_are_exact():
    x = np.linspace(-1.0, 1.0, 4)
    lowered = lambda f, *a: fg.jit(f).lower(*a).program
    assert exact_program(lowered(lambda x: x * 3.0 - fnp.sqrt(fnp.abs(x)) / x, x))
    assert exact_program(lowered(lambda x: fg.fori_loop(0, 4, lambda i, c: c * x, x), x))
    for inexact in (lambda x: fnp.sum(x), lambda x: fnp.exp(x), lambda x: x @ x,
                    lambda x: fnp.maximum(x, 0.0), lambda x: (x * 1j) * x, fnp.cumsum,
                    lambda x: x.astype(np.int32), lambda x: x ** 3,
                    lambda x: fg.fori_loop(0, 4, lambda i, c: fnp.tanh(c), x)):
        assert not exact_program(lowered(inexact, x))


def _release_after(gate, seconds):
    threading.Timer(seconds, gate.set).start()


def test_fg_jit_waits_for_the_kernel_of_a_program_it_would_round_differently(
        held, monkeypatch, capsys):
    """The first call of a program with a sum and transcendental functions waits for its
    kernel (call 1 == call 2 bit for bit), saying why; an exact program's first call does not
    wait."""
    from funcgrad.api import background
    monkeypatch.setattr(background, "WAIT_NOTICE", 0.1)
    f = fg.jit(lambda x: fnp.cbrt(x) + fnp.sum(fnp.exp(x) * fnp.sin(x)))
    x = np.array([27.0, 8.0, -0.3, 1e-3])
    with fg.config.override(jit_background=True):
        _release_after(held, 0.5)
        t = time.perf_counter()
        first = f(x)
        assert time.perf_counter() - t >= 0.4
        err = capsys.readouterr().err
        assert "gives its kernel's bits from the first call" in err and "same_bits=False" in err
        assert "waiting for the kernel of <lambda>" in err
        assert not any(isinstance(e, Pending) for e in f._entries.values())
        assert_same_bits(first, f(x))
        g = fg.jit(lambda x: x * 3.0 - fnp.sqrt(fnp.abs(x)) / x)
        held.clear()
        first = g(x)                                    # answered by the interpreter
        (entry,) = g._entries.values()
        assert isinstance(entry, Pending) and not entry.ready
        held.set()
        assert_same_bits(first, g.wait()(x))


def test_same_bits_off_answers_every_first_call_from_the_interpreter(held):
    x = np.array([27.0, 8.0, -0.3, 1e-3])
    f = fg.jit(lambda x: fnp.sum(fnp.exp(x) * 2.5), same_bits=False)
    with fg.config.override(jit_background=True):
        np.testing.assert_allclose(f(x), np.sum(np.exp(x) * 2.5), rtol=1e-14)
        with fg.config.override(jit_same_bits=False):
            g = fg.jit(lambda x: fnp.sum(fnp.exp(x) * 2.5))
            np.testing.assert_allclose(g(x), np.sum(np.exp(x) * 2.5), rtol=1e-14)
        assert all(isinstance(e, Pending) for j in (f, g) for e in j._entries.values())


def test_same_bits_turned_on_while_a_kernel_compiles_applies_to_the_next_call(held):
    x = np.array([27.0, 8.0, -0.3, 1e-3])
    f = fg.jit(lambda x: fnp.sum(fnp.exp(x) * 1.5))       # (no other test compiles it)
    with fg.config.override(jit_background=True, jit_same_bits=False):
        f(x)                                          # interpreted: same_bits is off
    with fg.config.override(jit_background=True, jit_same_bits=True):
        _release_after(held, 0.5)
        t = time.perf_counter()
        second = f(x)                                 # waits for the kernel
        assert time.perf_counter() - t >= 0.4
        assert_same_bits(second, f(x))


def test_un_jitted_transforms_and_library_loops_never_wait(held):
    """Tiering and fit compile through fg.jit with same_bits off: with every compile held,
    their calls still answer (from the interpreter)."""
    c = 3.0 + time.time() % 1.0          # (a program no earlier run left in the disk cache)
    loss = lambda w: fnp.sum(fnp.exp(-w) * fnp.cos(c * w))
    w = np.linspace(0.1, 1.0, 5)
    want = np.exp(-w) * (-np.cos(c * w) - c * np.sin(c * w))
    with fg.config.override(jit_background=True, jit_threshold=2, tier_payback=0.0):
        for _ in range(6):
            t = time.perf_counter()
            np.testing.assert_allclose(fg.grad(loss)(w), want, rtol=1e-13)
            assert time.perf_counter() - t < 5
        tier = fg.tiering.policy.tiers(loss)[("grad", 0, False)]
        assert any(isinstance(e, Pending) for j in tier.jitted.values()
                   for e in j._entries.values())
        res = fg.optim.fit(loss, w, fg.optim.sgd(0.01), steps=3)
        assert res.params.shape == w.shape


# ---- drawn programs ------------------------------------------------------------------------

UNARY = {"neg": lambda a: -a, "abs": fnp.abs, "sqrt": fnp.sqrt, "square": fnp.square,
         "pow2": lambda a: a ** 2, "recip": fnp.reciprocal, "floor": fnp.floor,
         "rint": fnp.rint, "sign": fnp.sign, "flip": fnp.flip,
         "f32": lambda a: a.astype(np.float32).astype(np.float64),
         "transpose": lambda a: fnp.reshape(fnp.reshape(a, (2, 3)).T, (6,)),
         "gather": lambda a: a[np.array([5, 0, 2, 2, 1, 3])],
         # not exact: the first call waits for the kernel
         "exp": fnp.exp, "tanh": fnp.tanh, "sum": lambda a: a + fnp.sum(a), "cumsum": fnp.cumsum,
         "log1p": lambda a: fnp.log1p(fnp.abs(a))}
BINARY = {"add": fnp.add, "sub": fnp.subtract, "mul": fnp.multiply, "div": fnp.divide,
          "where": lambda a, b: fnp.where(a > b, a, b),
          "halves": lambda a, b: fnp.concatenate([a[:3], b[3:]]),
          "scatter": lambda a, b: a.at[np.array([1, 1, 4])].set(b[:3]),
          "argmax": lambda a, b: a * fnp.argmax(b),
          "less": lambda a, b: (a < b) * a,
          "matvec": lambda a, b: a * (fnp.reshape(b, (2, 3)) @ a[:3]).repeat(3),
          "maximum": fnp.maximum}
STEP = st.one_of(st.tuples(st.sampled_from(sorted(UNARY)), st.integers(0, 9)),
                 st.tuples(st.sampled_from(sorted(BINARY)), st.integers(0, 9), st.integers(0, 9)))
VALUE = st.one_of(st.sampled_from(SPECIALS), st.floats(-1e3, 1e3))


def program(steps):
    def f(x, y):
        vals = [x, y]
        for name, *operands in steps:
            ops = [vals[i % len(vals)] for i in operands]
            vals.append((UNARY if len(ops) == 1 else BINARY)[name](*ops))
        return tuple(vals[2:])
    return f


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(STEP, min_size=1, max_size=7), st.lists(VALUE, min_size=6, max_size=6),
       st.lists(VALUE, min_size=6, max_size=6))
def test_drawn_programs_give_the_same_bits_on_the_first_call_and_after(steps, x, y):
    """fg.jit of a drawn program, its kernel compiling in the worker: call 1 (the interpreter
    for an exact program, else the kernel, waited for) and call 2 hold the same bits; for an
    exact program the interpreter computes the kernel's bits."""
    x, y = np.array(x), np.array(y)
    f = fg.jit(program(steps))
    with fg.config.override(jit_background=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = f(x, y)
        second = f.wait()(x, y)
        assert_same_bits(first, second)
        if exact_program(f.lower(x, y).program):
            assert_same_bits(interpreted(f, x, y), second)
