"""fg.debug_nans / fg.debug_infs: the first equation that makes a NaN (inf) from inputs
without one raises FloatingPointError naming the primitive, the user's line and, for derived
equations, their role -- interpreted and compiled (checks generated into the kernel), forward
and backward, in loops and under vmap; NaNs the strong-zero rule replaces are not reported;
off, kernels carry no checks and results are unchanged."""
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def line_of(fn, text):
    """The line number of the first line of fn's source holding `text`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def log_shift(x):
    return fnp.sum(fnp.log(x - 1.0) * 2.0)


def norm(x):
    return fnp.sqrt(fnp.sum(x ** 2))


def masked(x):
    return fnp.sum(fnp.sqrt(x) * x)       # d/dx at 0: 0 * inf, replaced by the strong-zero rule


def stepping(x):
    return fg.fori_loop(0, 5, lambda i, c: c * fnp.sqrt(c - 0.5 * i), x)


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
def test_forward_origin_names_the_primitive_and_line(compiled):
    f = fg.jit(log_shift) if compiled else log_shift
    with fg.debug_nans():
        with pytest.raises(FloatingPointError) as info:
            fg.jit(f)(np.array([0.5, 2.0])) if compiled else fg.grad(f)(np.array([0.5, 2.0]))
    msg = str(info.value)
    assert msg.startswith("NaN produced by log at ")
    assert f"test_debug.py:{line_of(log_shift, 'fnp.log')}" in msg and "(in log_shift)" in msg


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
def test_backward_origin_names_the_backward_pass(compiled):
    g = fg.jit(fg.grad(norm)) if compiled else fg.grad(norm)
    assert np.isnan(g(np.zeros(3))).all()                      # off: no check
    with fg.debug_nans(), pytest.raises(FloatingPointError,
                                        match=r"NaN produced in the backward pass of integer_pow at "
                                              r".*test_debug.py:\d+ \(in norm\) \(by its multiply\) "
                                              "from inputs without NaN"):
        g(np.zeros(3))
    with fg.debug_infs(), pytest.raises(FloatingPointError,
                                        match="inf produced in the backward pass of sqrt .* from finite inputs"):
        g(np.zeros(3))


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
def test_nans_the_strong_zero_rule_replaces_are_not_reported(compiled):
    g = fg.jit(fg.grad(masked)) if compiled else fg.grad(masked)
    with fg.debug_nans():
        np.testing.assert_array_equal(g(np.array([0.0, 4.0])), [0.0, 3.0])


def scanning(x):
    return fg.scan(lambda c, t: (c * fnp.sqrt(c - t), fnp.sum(c)), x, 0.5 * np.arange(5.0))[0]


def while_stepping(x):
    body = lambda c: (c[0] + 1, c[1] * fnp.sqrt(c[1] - 0.5 * c[0]))
    return fg.while_loop(lambda c: c[0] < 5, body, (0, x))[1]


def backward_stepping(x):     # finite forward; in step 1 the backward pass of sqrt(0) is inf
    return fg.fori_loop(0, 4, lambda i, c: c + fnp.sqrt(c * (i - 1.0) ** 2), x)


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
@pytest.mark.parametrize("f, kind", [(stepping, "scan"), (scanning, "scan"),
                                     (while_stepping, "while_loop")])
@pytest.mark.parametrize("size", [2, 300], ids=["scalars", "loop-nest"])
def test_the_step_of_the_loop_is_reported(f, kind, size, compiled):
    # (compiled: scalar code when the array is replaced by scalars, a fused nest otherwise;
    # under grad the while loop runs as while_grad: taped forward, then the sweep)
    x = np.linspace(1.2, 3.0, size)
    wrap = (lambda g: fg.jit(g, background=False)) if compiled else (lambda g: g)
    pattern = rf"by sqrt .* in step 3 of the loop around it \({kind}\)"
    with fg.debug_nans():
        with pytest.raises(FloatingPointError, match=pattern):
            wrap(f)(x)
        with pytest.raises(FloatingPointError, match=pattern):
            wrap(fg.grad(lambda x: fnp.sum(f(x))))(x)


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
def test_the_step_of_a_backward_loop_is_the_forward_step(compiled):
    g = fg.grad(lambda x: fnp.sum(backward_stepping(x)))
    g = fg.jit(g, background=False) if compiled else g
    x = np.array([1.2, 3.0])
    assert np.isfinite(backward_stepping(x)).all()
    with fg.debug_infs(), pytest.raises(
            FloatingPointError, match=r"inf produced in the backward pass of sqrt .* in step 1 of "
                                      r"the loop around it \(scan\)"):
        g(x)


def test_loops_vmap_and_the_step():
    with fg.debug_nans():
        with pytest.raises(FloatingPointError, match="by log"):
            fg.vmap(log_shift)(np.array([[2.0, 3.0], [0.5, 2.0]]))
        with pytest.raises(FloatingPointError, match="by log"):
            fg.jit(fg.vmap(log_shift))(np.array([[2.0, 3.0], [0.5, 2.0]]))
        x = np.linspace(1.5, 3.0, 5000)                       # a count per check, prange too
        f = fg.jit(lambda x: fnp.sum(fnp.log(x - 1.0) * fnp.sin(x)), parallel=True)
        assert np.isfinite(f(x))
        x[1234] = 0.5
        with pytest.raises(FloatingPointError, match="by log"):
            f(x)


def test_off_means_no_checks_and_the_same_results():
    x = np.linspace(1.5, 3.0, 7)
    g = fg.jit(fg.grad(lambda x: fnp.sum(fnp.tanh(x) * fnp.log(x))))
    plain = g(x)
    assert "debug_check" not in fg.jit(log_shift).lower(x).program.pretty()
    with fg.debug_nans(), fg.debug_infs():
        assert "debug_check" in fg.jit(log_shift).lower(x).program.pretty()
        checked = g(x)
        with fg.debug_nans(False), fg.debug_infs(False):
            assert np.isnan(fg.jit(log_shift)(np.array([0.5, 2.0])))     # off inside the block
    np.testing.assert_array_equal(checked, plain)
    assert np.isnan(fg.jit(log_shift)(np.array([0.5, 2.0])))            # off again after it

    @fg.debug_nans()
    def decorated(x):
        return fg.jit(log_shift)(x)
    with pytest.raises(FloatingPointError):
        decorated(np.array([0.5, 2.0]))


def test_environment_variable_turns_it_on():
    code = ("import numpy as np, funcgrad as fg, funcgrad.numpy as fnp\n"
            "try:\n    fg.jit(lambda x: fnp.log(x - 1.0))(np.array([0.5]))\n"
            "except FloatingPointError as e:\n    print('raised', e)\n")
    env = dict(os.environ, FUNCGRAD_DEBUG_NANS="1")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert "raised NaN produced by log" in out.stdout, out.stderr


# ---- fg.grad_hook -------------------------------------------------------------------------------

def clipped_loss(x):
    y = fg.grad_hook(x * 3.0, lambda g: np.clip(g, -0.5, 0.5))
    return fnp.sum(y ** 2)


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
def test_grad_hook_sees_and_replaces_the_cotangent(compiled):
    x = np.array([1.0, -0.1, 0.05])
    g = fg.jit(fg.grad(clipped_loss)) if compiled else fg.grad(clipped_loss)
    np.testing.assert_allclose(g(x), 3 * np.clip(6 * x, -0.5, 0.5))     # the clipped cotangent
    seen = []
    loop = lambda x: fnp.sum(fg.fori_loop(
        0, 3, lambda i, c: fg.grad_hook(c * 2.0, lambda g: seen.append(g.copy())), x))
    gl = fg.jit(fg.grad(loop)) if compiled else fg.grad(loop)
    np.testing.assert_allclose(gl(np.ones(2)), [8.0, 8.0])              # None: unchanged
    assert [s[0] for s in seen] == [1.0, 2.0, 4.0]                        # last step first
    assert fg.jit(lambda x: fg.grad_hook(x, print) * 2)(np.ones(2)).tolist() == [2.0, 2.0]


def test_grad_hook_in_higher_derivatives_and_pytrees():
    calls = []
    f = lambda x: fnp.sum(fg.grad_hook(x ** 3, lambda g: calls.append(1)))
    np.testing.assert_allclose(fg.hessian(f)(np.array([1.0, 2.0])), np.diag([6.0, 12.0]))
    assert calls                                           # ran in the backward passes
    tree = {"a": np.ones(2), "b": np.full(3, 2.0)}
    g = fg.grad(lambda t: sum(fnp.sum(v ** 2) for v in fg.grad_hook(t, lambda c: c * 0.0).values()))(tree)
    assert all(np.all(v == 0.0) for v in g.values())
    with pytest.raises(ValueError, match="returned shape"):
        fg.grad(lambda x: fnp.sum(fg.grad_hook(x, lambda c: c[:1])))(np.ones(2))


# ---- fg.debug.print / fg.debug.callback ---------------------------------------------------------

def printing(x):
    fg.debug.print("f sees {}", x)

    def body(i, c):
        fg.debug.print("step {i}: {c:.1f}", i=i, c=fnp.sum(c))
        return c * 2.0
    return fnp.sum(fg.fori_loop(0, 3, body, x) ** 2)


@pytest.mark.parametrize("how", ["interpreted", "compiled", "grad", "jit(grad)", "jvp"])
def test_debug_print_runs_once_per_run_in_order(how, capsys):
    x = np.array([1.0, 2.0])
    run = {"interpreted": lambda: fg.disable_jit()(lambda: fg.jit(printing)(x))(),
           "compiled": lambda: fg.jit(printing, background=False)(x),
           "grad": lambda: fg.grad(printing)(x),
           "jit(grad)": lambda: fg.jit(fg.grad(printing), background=False)(x),
           "jvp": lambda: fg.jvp(printing, (x,), (x,))}[how]
    capsys.readouterr()
    run()
    assert capsys.readouterr().out.splitlines() == [
        "f sees [1. 2.]", "step 0: 3.0", "step 1: 6.0", "step 2: 12.0"]


def test_debug_callback_in_branches_vmap_and_never_dropped(capsys):
    seen = []
    f = lambda x: fg.cond(x > 0, lambda x: (fg.debug.callback(seen.append, ("pos", x)), x)[1],
                          lambda x: (fg.debug.callback(seen.append, ("neg", x)), -x)[1], x)
    fg.jit(f, background=False)(np.float64(-1.0))
    assert seen == [("neg", -1.0)]
    fg.vmap(lambda r: (fg.debug.print("row {}", r), r * 2)[1])(np.eye(2))
    assert capsys.readouterr().out.splitlines() == ["row [1. 0.]", "row [0. 1.]"]   # per example
    # a print whose value nothing else uses survives simplification, merging and splitting
    prog = fg.make_ir(lambda x: (fg.debug.print("{}", x), fg.debug.print("{}", x), x * 2)[2])(1.0)
    assert [e.prim.name for e in prog.eqns].count("debug_callback") == 2
    fg.debug.print("plain {}", 3)                          # no traced value: prints at once
    assert capsys.readouterr().out == "plain 3\n"


# ---- progress from compiled loops -------------------------------------------------------------

def test_progress_reports_from_compiled_loops(capsys):
    f = lambda x: fg.fori_loop(0, 10, lambda i, c: c * 1.1, x, progress=3)
    for run in (fg.jit(f, background=False), f):
        capsys.readouterr()
        np.testing.assert_allclose(run(np.ones(2)), 1.1 ** 10)
        assert capsys.readouterr().out.splitlines() == [
            f"fg.fori_loop: step {k}/10" for k in (3, 6, 9, 10)]
    seen = []
    scan_sum = lambda x: fg.scan(lambda c, v: (c + v, c), 0.0, x,
                                 progress=lambda s, t: seen.append((s, t)))[0]
    assert fg.jit(scan_sum, background=False)(np.arange(5.0)) == 10.0
    assert seen == [(k, 5) for k in range(1, 6)]                   # True/default: about 1%
    w = lambda x: fg.while_loop(lambda c: c < 2500.0, lambda c: c + 1.0, x, progress=True)
    capsys.readouterr()
    assert fg.jit(w, background=False)(np.float64(0.0)) == 2500.0
    assert capsys.readouterr().out.splitlines() == ["fg.while_loop: step 1000",
                                                     "fg.while_loop: step 2000"]
    seen.clear()
    X = np.random.default_rng(0).normal(size=(32, 2))
    res = fg.optim.fit(lambda w, X: fnp.mean((X @ w - 1.0) ** 2), np.zeros(2), fg.optim.adam(0.1),
                       steps=40, data=(X,), progress=lambda s, t: seen.append(s))
    assert seen == list(range(1, 41)) and res.losses[-1] < res.losses[0]
    with pytest.raises(ValueError, match="positive step interval"):
        fg.fori_loop(0, 3, lambda i, c: c, 1.0, progress=0)


def test_progress_uses_tqdm_when_installed(monkeypatch):
    import types
    from funcgrad.higher_order import progress
    bars = []

    class Bar:
        def __init__(self, total, desc):
            self.total, self.desc, self.n, self.closed = total, desc, 0, False
            bars.append(self)

        def update(self, k):
            self.n += k

        def close(self):
            self.closed = True
    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=Bar))
    monkeypatch.setattr(progress, "_HAS_TQDM", True)
    f = fg.jit(lambda x: fg.fori_loop(0, 200, lambda i, c: c + 1.0, x, progress=True),
               background=False)
    f(0.0)
    f(0.0)                                                   # a new run: a new bar
    assert [(b.total, b.n, b.closed) for b in bars] == [(200, 200, True)] * 2
