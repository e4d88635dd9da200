"""fg.jit by default (funcgrad/api/background.py): the first call of a signature answers from
the interpreter while the kernel compiles in the worker process; later calls are answered the
same way until the kernel is ready, then by the kernel. The rest of the suite compiles on the
first call (conftest.py); here the default is switched back on, and the interpreter answers
every program meanwhile (jit_same_bits off: fg.jit's own default, which waits for the kernels
of programs the interpreter would not compute bit for bit, is tested in test_same_bits.py)."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api.background import Pending, wait_all
from funcgrad.backend import worker
from funcgrad.tiering import policy
from test_tiering import compiled_in_background


@pytest.fixture(autouse=True)
def background():
    with fg.config.override(jit_background=True, jit_same_bits=False):
        yield


@pytest.fixture
def held(monkeypatch):
    """Background compiles wait for `held.set()` before they start."""
    gate = threading.Event()
    compile_elsewhere = worker.compile_elsewhere

    def slow(*args):
        gate.wait(60)
        return compile_elsewhere(*args)
    monkeypatch.setattr(worker, "compile_elsewhere", slow)
    yield gate
    gate.set()


def loss(w, x):
    return fnp.sum(fnp.tanh(x @ w) ** 2) + 0.5 * fnp.sum(w * w)


W, X = np.linspace(-1.0, 1.0, 6).reshape(3, 2), np.linspace(0.0, 2.0, 12).reshape(4, 3)


def reference(w, x):
    t = np.tanh(x @ w)
    return np.sum(t ** 2) + 0.5 * np.sum(w * w), x.T @ (2 * t * (1 - t ** 2)) + w


def test_calls_are_answered_by_the_interpreter_until_the_kernel_is_ready(held):
    jg = fg.jit(fg.value_and_grad(loss))
    meanwhile = []
    for _ in range(5):
        t = time.perf_counter()
        meanwhile.append(jg(W, X))
        assert time.perf_counter() - t < 5           # nobody waits for the compile
    (entry,) = jg._entries.values()
    assert isinstance(entry, Pending) and not entry.ready
    jobs = worker.stats["jobs"]
    held.set()
    jg.wait()
    after, again = jg(W, X), jg(W, X)
    (entry,) = jg._entries.values()
    assert not isinstance(entry, Pending) and len(jg._fast) == 1
    assert worker.stats["jobs"] == jobs + 1          # compiled in the worker process
    want = reference(W, X)
    for got in meanwhile + [after]:
        np.testing.assert_allclose(got[0], want[0], rtol=1e-14)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-14)
    assert after[0] == again[0] and np.array_equal(after[1], again[1])
    meanwhile[0][1][:] = 7.0                     # results are the caller's own
    np.testing.assert_allclose(jg(W, X)[1], want[1], rtol=1e-14)


def piecewise(x, k):
    y = fnp.where(x > 0, fnp.sin(x) * x, x ** 3) * k
    if fnp.sum(y) > 0:                           # a guard: one kernel per path
        y = y + fnp.cumsum(x)
    return fg.fori_loop(0, 3, lambda i, c: c * 0.5 + fnp.tanh(c), y)


def numpy_piecewise(x, k):
    y = np.where(x > 0, np.sin(x) * x, x ** 3) * k
    if np.sum(y) > 0:
        y = y + np.cumsum(x)
    for _ in range(3):
        y = y * 0.5 + np.tanh(y)
    return y


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(-3, 3), min_size=4, max_size=4), st.floats(-2, 2),
       st.lists(st.sampled_from([1.0, -1.0]), min_size=1, max_size=4))
def test_first_calls_and_kernels_agree_with_numpy_and_compiling_first(x, k, signs):
    """Interpreted first calls, background-compiled kernels and kernels compiled on the first
    call give the same results (to rounding) on every call, paths changing from call to call."""
    x = np.array(x)
    background, at_once = fg.jit(piecewise), fg.jit(piecewise, background=False)
    for s in signs:
        want = numpy_piecewise(s * x, k)
        a, b = background(s * x, k), at_once(s * x, k)
        np.testing.assert_allclose(a, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_long_scan_waits_for_the_kernel_and_says_so(monkeypatch, capsys, held):
    from funcgrad.api import background
    monkeypatch.setattr(background, "WAIT_NOTICE", 0.0)
    threading.Timer(1.0, held.set).start()
    f = fg.jit(lambda x: fg.fori_loop(0, 200_000, lambda i, c: c * 0.999999 + 1e-6, x))
    out = f(np.ones(3))
    (entry,) = f._entries.values()
    assert not isinstance(entry, Pending)        # waited for the kernel and ran it
    np.testing.assert_allclose(out, np.ones(3), rtol=1e-9)
    err = capsys.readouterr().err
    assert "waiting for the kernel of <lambda> to compile" in err and "is ready after" in err


def test_a_long_while_loop_switches_to_the_kernel_once_it_is_ready(monkeypatch):
    monkeypatch.setattr(fg.config, "loop_compile_seconds", 0.05)

    def count(n):
        return fg.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1.0, c[1] + fnp.sin(c[0])),
                             (0.0, 0.0))[1]
    f = fg.jit(count)
    t = time.perf_counter()
    out = f(3e6)                     # interpreted to the end: minutes; the kernel: milliseconds
    assert time.perf_counter() - t < 60
    (entry,) = f._entries.values()
    assert not isinstance(entry, Pending)
    n = np.arange(3_000_000, dtype=float)
    np.testing.assert_allclose(out, np.sum(np.sin(n)), rtol=1e-9, atol=1e-9)


def test_user_errors_come_from_the_first_call_and_compile_failures_once_it_failed(monkeypatch):
    with pytest.raises(ValueError, match="test_background.py"):
        fg.jit(lambda a, b: a @ b)(np.ones((2, 3)), np.ones((2, 3)))
    from funcgrad.backend import lowerings
    monkeypatch.setitem(lowerings.LOWERINGS, "rev", lowerings.Lowering(
        statement=lambda outs, ins, e: [f"{outs[0]} = no_such_function({ins[0]})"]))

    def flipped(x):
        return fnp.flip(x) * 3.0
    f = fg.jit(flipped)
    np.testing.assert_array_equal(f(np.arange(4.0)), [9.0, 6.0, 3.0, 0.0])
    f.wait()
    with pytest.raises(fg.FuncgradError, match=r"no_such_function.*# rev.*disable_jit"):
        f(np.arange(4.0))


def test_tiering_compiles_through_fg_jits_background(held):
    old = policy.threshold
    policy.threshold = 1
    try:
        f = lambda x: fnp.sum(fnp.cos(x) * x ** 2)
        x = np.linspace(0, 1, 5)
        g0 = [fg.grad(f)(x) for _ in range(4)]          # hot, its kernel held back: answered
        (jitted,) = policy.tiers(f)[("grad", 0, False)].jitted.values()
        assert any(isinstance(e, Pending) for e in jitted._entries.values())
        held.set()
        g1, tier = compiled_in_background(f, x)
        assert not any(isinstance(e, Pending) for e in jitted._entries.values())
        for g in g0 + [g1, fg.grad(f)(x)]:
            np.testing.assert_allclose(g, -np.sin(x) * x ** 2 + 2 * x * np.cos(x), rtol=1e-13)
    finally:
        policy.threshold = old


def test_a_hot_vjp_compiles_in_the_background(held):
    old = policy.threshold
    policy.threshold = 1
    try:
        f = lambda x: fnp.sin(x) * x
        x = np.linspace(0, 1, 4)
        want = np.cos(x) * x + np.sin(x)
        for _ in range(4):                              # compiling: interpreted meanwhile
            np.testing.assert_allclose(fg.vjp(f, x)[1](np.ones(4))[0], want, rtol=1e-14)
        (jitted,) = policy.tiers(f)[("vjp", False)].jitted.values()
        assert jitted._pending and not jitted._plans
        held.set()
        for (pending,) in [list(jitted._pending.values())]:
            pending.wait()
        np.testing.assert_allclose(fg.vjp(f, x)[1](np.ones(4))[0], want, rtol=1e-14)
        assert not jitted._pending and jitted._plans
    finally:
        policy.threshold = old


def test_a_script_may_end_while_a_kernel_compiles(tmp_path):
    """No worker process is left behind, and the cache stays usable."""
    code = ("import time, numpy as np, funcgrad as fg, funcgrad.numpy as fnp\n"
            "from funcgrad.backend import worker\n"
            "g = fg.jit(fg.grad(lambda w: fnp.sum(fnp.tanh(np.ones((8, 8)) @ w) ** 2)))\n"
            "print(g(np.ones(8))[0])\n"
            "while worker._worker[0] is None: time.sleep(0.01)\n"
            "print(worker._worker[0].proc.pid)\n")
    env = dict(os.environ, FUNCGRAD_JIT_BACKGROUND="1", FUNCGRAD_JIT_SAME_BITS="0",
               FUNCGRAD_CACHE_DIR=str(tmp_path))
    t = np.tanh(8.0)
    for _ in range(2):
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=300)
        assert res.returncode == 0 and res.stderr == "", res.stderr
        value, pid = res.stdout.split()
        assert float(value) == pytest.approx(2 * t * (1 - t ** 2) * 8, rel=1e-12)
        deadline = time.time() + 10
        while _alive(int(pid)) and time.time() < deadline:
            time.sleep(0.05)
        assert not _alive(int(pid))


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# ---- interleaved calls of every kind, state changing between them ---------------------------

SCALE = 1.0
C = np.array([1.0, -2.0, 0.5])


def scaled(w):                           # reads a global and a captured array: guarded state
    return SCALE * fnp.sum((w - C) ** 2) + fnp.sum(fnp.sin(w))


def scaled_grad(w):
    return 2 * SCALE * (w - C) + np.cos(w)


def bowl(w, s):                          # fg.jit: state passed as an argument
    return fnp.sum(s * (w - 1.0) ** 2 + fnp.tanh(w))


JITTED = fg.jit(fg.value_and_grad(bowl))

OPS = st.one_of(
    st.tuples(st.just("scale"), st.sampled_from([1.0, 2.5])),
    st.tuples(st.just("mutate"), st.sampled_from([0.0, 1.5])),
    st.tuples(st.just("grad"), st.floats(-2, 2)),
    st.tuples(st.just("jit"), st.floats(-2, 2)),
    st.tuples(st.just("fit"), st.sampled_from([0.05, 0.1])),
    st.tuples(st.just("minimize"), st.sampled_from([0.5, 2.0])),
    st.tuples(st.just("settle"), st.just(0.0)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(OPS, min_size=4, max_size=14))
def test_interleaved_calls_agree_with_the_interpreter_while_kernels_come_and_go(ops):
    """fg.jit, tiered grad, fit and minimize, called in any order while the state they read
    changes and their kernels compile in the background: every result is the interpreter's
    (to rounding; the solvers to their tolerance)."""
    global SCALE
    old_threshold, policy.threshold = policy.threshold, 2
    try:
        for op, v in ops:
            w = np.array([0.3, -0.7, 1.1]) + v
            if op == "scale":
                SCALE = v
            elif op == "mutate":
                C[:] = [1.0 + v, -2.0, 0.5 * v]
            elif op == "grad":
                np.testing.assert_allclose(fg.grad(scaled)(w), scaled_grad(w), rtol=1e-12)
            elif op == "jit":
                value, g = JITTED(w, SCALE)
                np.testing.assert_allclose(g, 2 * SCALE * (w - 1.0) + 1 - np.tanh(w) ** 2,
                                           rtol=1e-12)
            elif op == "fit":
                loss = lambda p: SCALE * fnp.sum((p - C) ** 2)
                got = fg.optim.fit(loss, np.zeros(3), fg.optim.sgd(v), steps=4).params
                want = np.zeros(3)
                for _ in range(4):
                    want = want - v * 2 * SCALE * (want - C)
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
            elif op == "minimize":
                res = fg.optimize.minimize(lambda p: fnp.sum((p - v * C) ** 2), np.zeros(3))
                np.testing.assert_allclose(res.x, v * C, rtol=1e-6, atol=1e-8)
            else:
                wait_all()
    finally:
        policy.threshold = old_threshold
        SCALE = 1.0
        C[:] = [1.0, -2.0, 0.5]


def test_a_kernel_already_on_disk_is_loaded_without_the_worker():
    from funcgrad.backend import cache
    f = lambda x: fnp.sum(fnp.exp(-x) * fnp.cos(3.0 * x))
    x = np.linspace(0.0, 1.0, 7)
    fg.jit(fg.grad(f))(x)
    wait_all()
    cache.kernels.clear()               # this process forgets it; the disk cache keeps it
    jobs = worker.stats["jobs"]
    again = fg.jit(fg.grad(f))
    first = again(x)
    again.wait()
    assert worker.stats["jobs"] == jobs
    np.testing.assert_allclose(again(x), first, rtol=1e-14)
    np.testing.assert_allclose(first, -np.exp(-x) * (np.cos(3 * x) + 3 * np.sin(3 * x)),
                               rtol=1e-13)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_compiles_with_its_own_worker():
    import multiprocessing
    f = fg.jit(lambda x: fnp.sum(fnp.tan(x) * 0.25))
    f(np.ones(2))
    f.wait()                             # the parent has a worker now
    parent_worker = worker._worker[0]
    ctx = multiprocessing.get_context("fork")
    with worker._lock:                   # forked while another thread might hold it
        pool = ctx.Pool(1)
    with pool:
        got = pool.apply_async(_child_compiles, (3,)).get(timeout=120)
    assert got[0] == pytest.approx(np.sum(np.sin(np.ones(3) * 0.5)), rel=1e-14)
    assert got[1] and got[2] != (parent_worker.proc.pid if parent_worker else None)
    assert worker._worker[0] is parent_worker          # untouched by the child


def _child_compiles(n):
    jobs = worker.stats["jobs"]
    g = fg.jit(lambda x: fnp.sum(fnp.sin(x * 0.5)))
    g(np.ones(n))
    g.wait()
    w = worker._worker[0]
    return float(g(np.ones(n))), worker.stats["jobs"] == jobs + 1, w.proc.pid if w else None


def test_a_worker_that_dies_mid_compile_costs_only_that_compile(monkeypatch):
    """The worker killed while it compiles (a crash, the OOM killer): that kernel is compiled
    here instead, and the next background compile starts a new worker."""
    run = worker._Worker.run

    def dying(self, job):
        self.proc.kill()
        return run(self, job)
    monkeypatch.setattr(worker._Worker, "run", dying)
    failed = worker.stats["failed"]
    f = fg.jit(lambda x: fnp.sum(fnp.arctan(x) * 1.5))
    first = f(np.linspace(0, 1, 4))
    second = f.wait()(np.linspace(0, 1, 4))
    assert worker.stats["failed"] == failed + 1 and worker._worker[0] is None
    np.testing.assert_allclose(first, second, rtol=1e-14)
    monkeypatch.setattr(worker._Worker, "run", run)
    g = fg.jit(lambda x: fnp.sum(fnp.arctan(x) * 2.5))
    g(np.ones(3))
    g.wait()
    assert worker._worker[0] is not None and worker._worker[0].proc.poll() is None
    assert g(np.ones(3)) == pytest.approx(2.5 * 3 * np.arctan(1.0), rel=1e-14)


def test_compile_ahead_waits_for_the_kernel_and_runs_nothing():
    calls = []

    def f(x):
        calls.append(1)                  # runs when traced, never in the kernel
        return fnp.sum(fnp.cos(x) ** 2)
    jf = fg.jit(f).compile(np.ones(4))
    assert len(calls) == 1
    (entry,) = jf._entries.values()
    assert not isinstance(entry, Pending)
    assert jf(np.zeros(4)) == 4.0 and len(calls) == 1
    assert jf.compile(np.ones(4)) is jf and len(calls) == 1      # compiled already
    with pytest.raises(ValueError, match="test_background.py"):
        fg.jit(lambda a, b: a @ b).compile(np.ones((2, 3)), np.ones((2, 3)))


def test_ctrl_c_while_waiting_for_a_kernel_stops_the_wait_and_leaves_it_usable(held):
    import _thread
    f = fg.jit(lambda x: fg.fori_loop(0, 300_000, lambda i, c: c * 0.999999 + 1e-6, x))
    threading.Timer(1.0, _thread.interrupt_main).start()
    t = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        f(np.ones(2))                    # a loop too long to interpret: waits for the kernel
    assert time.perf_counter() - t < 30
    held.set()                           # the compile went on; the function still works
    np.testing.assert_allclose(f.wait()(np.ones(2)), np.ones(2), rtol=1e-9)
