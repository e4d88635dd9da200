"""Dynamic Python under the transforms called directly: `if`, `while`, bool(), float(), int(),
.item(), traced ints as range() bounds, slice bounds and sizes follow the values of the call
(as PyTorch's eager autograd and HIPS autograd do); the derivative is that of the path taken.
Inside fg.jit, fg.vmap, loop bodies and fg.cond branches the same code is still refused."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from conftest import check_grads


def piecewise(x):
    if fnp.sum(x) > 0:
        return fnp.sum(x ** 3)
    return fnp.sum(fnp.sin(x)) * 2.0


POS, NEG = np.array([0.5, 1.5]), np.array([-0.5, -1.0])


def test_if_follows_the_branch_taken_in_every_transform():
    np.testing.assert_allclose(fg.grad(piecewise)(POS), 3 * POS ** 2)
    np.testing.assert_allclose(fg.grad(piecewise)(NEG), 2 * np.cos(NEG))
    value, g = fg.value_and_grad(piecewise)(NEG)
    assert value == 2 * np.sum(np.sin(NEG)) and np.allclose(g, 2 * np.cos(NEG))
    np.testing.assert_allclose(fg.hessian(piecewise)(POS), np.diag(6 * POS))
    np.testing.assert_allclose(fg.hessian(piecewise)(NEG), np.diag(-2 * np.sin(NEG)))
    scale = lambda x: x * 2.0 if x[0] > 0 else x * 3.0
    np.testing.assert_allclose(fg.jacrev(scale)(POS), 2 * np.eye(2))
    np.testing.assert_allclose(fg.jacfwd(scale)(NEG), 3 * np.eye(2))
    y, f_vjp = fg.vjp(scale, NEG)
    np.testing.assert_allclose(y, 3 * NEG)
    np.testing.assert_allclose(f_vjp(np.ones(2))[0], [3.0, 3.0])
    out, tangent = fg.jvp(piecewise, (POS,), (np.ones(2),))
    assert np.isclose(tangent, np.sum(3 * POS ** 2))
    for x in (POS, NEG):
        check_grads(piecewise, (x,), order=2)


def test_nested_transforms_see_the_values():
    cube_or_square = lambda x: x ** 3 if x > 0 else -x ** 2
    assert fg.grad(fg.grad(cube_or_square))(2.0) == 12.0
    assert fg.grad(fg.grad(cube_or_square))(-2.0) == -2.0
    # a decision on a value made inside an inner grad (the inner gradient's sign)
    f = lambda x: fg.grad(lambda y: y ** 3)(x) * (x if fg.grad(lambda y: -y ** 2)(x) > 0 else 1.0)
    assert fg.grad(f)(-1.5) == 3 * 3 * (-1.5) ** 2           # d/dx 3x^3 for x < 0
    assert fg.grad(f)(1.5) == 6 * 1.5


def test_while_with_a_trip_count_that_depends_on_the_value():
    def newton_sqrt(a):
        x = a
        while fnp.abs(x * x - a) > 1e-12 * a:
            x = 0.5 * (x + a / x)
        return x
    for a in (2.0, 9.0, 1e4):
        np.testing.assert_allclose(fg.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-8)
        check_grads(newton_sqrt, (a,), order=1)


def test_python_numbers_from_traced_values_are_constants():
    # float(), .item(): the value of the call, with no gradient through it (PyTorch's .item());
    # of a value being differentiated, that drops a derivative, which is said (a warning)
    with pytest.warns(fg.DroppedDerivativeWarning):
        assert fg.grad(lambda x: float(x) * x)(3.0) == 3.0
    with pytest.warns(fg.DroppedDerivativeWarning):
        assert fg.grad(lambda x: x.sum().item() * x[0])(np.array([1.0, 2.0]))[0] == 3.0
    with pytest.warns(fg.DroppedDerivativeWarning):
        assert fg.grad(lambda x: (x * 2).tolist()[1] * x[1])(np.array([1.0, 2.0]))[1] == 4.0


def test_traced_integers_as_bounds_indices_and_sizes():
    x = np.array([1.0, 2.0, -3.0, 4.0])

    def f(x):
        n = fnp.sum(x > 0)                       # 3 here
        total = 0.0
        for i in range(n):
            total = total + x[i] ** 2
        ones = fnp.zeros(n) + 1.0                # a size
        return total + fnp.sum(x[:n] * ones) + fnp.linspace(0, 1, n).sum() * x[0]
    np.testing.assert_allclose(fg.grad(f)(x), [2 + 1 + 1.5, 4 + 1, -6 + 1, 0])
    k_of_max = lambda x: x[fnp.argmax(x)] ** 2 + fnp.sum(x[:fnp.argmax(x)])
    np.testing.assert_allclose(fg.grad(k_of_max)(x), [1, 1, 1, 8])
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(fnp.roll(x, int(x[1])) * x))(x),
                               np.roll(x, 2) + np.roll(x, -2))
    masked = fg.jit(fg.grad(lambda x: fnp.sum(x[x > 0] ** 2)))     # a mask: one path each
    for y in (x, -x, x):
        got = masked(y)
        np.testing.assert_allclose(got, np.where(y > 0, 2 * y, 0.0))
        got[:] = -1.0                            # (the fast path's own result)
        np.testing.assert_allclose(masked(y), np.where(y > 0, 2 * y, 0.0))


def test_branch_boundary_takes_the_branch_python_chooses():
    """At x == 0, `if x > 0` is False: the derivative is the else branch's, as in PyTorch
    and HIPS autograd (documented in docs/dynamic_python.md)."""
    relu_ish = lambda x: x * 3.0 if x > 0 else x * 0.5
    assert fg.grad(relu_ish)(0.0) == 0.5
    assert fg.grad(lambda x: x * 3.0 if x >= 0 else x * 0.5)(0.0) == 3.0


def test_each_decision_is_recorded_as_a_guard_at_the_users_line():
    from funcgrad.api.calls import Args, trace_call
    guards = []
    trace_call(piecewise, Args(piecewise, (POS,), {}), guards=guards)
    assert len(guards) == 1
    var, value, kind, src = guards[0]
    assert kind == "bool" and bool(value) is True and var.aval.dtype == np.bool_
    assert src.filename == __file__ and src.function == "piecewise"
    guards = []                                 # a trace for every value records none
    with pytest.raises(fg.ConcretizationError):
        trace_call(piecewise, Args(piecewise, (POS,), {}), concrete=False, guards=guards)


@pytest.mark.parametrize("where", ["vmap", "fori_loop", "scan", "while_loop", "cond"])
def test_no_single_value_no_decision(where):
    """Where a traced value stands for many values, control flow on it is still refused,
    with the advice to use fg.cond / fg.while_loop / fnp.where."""
    step = lambda c: c * 2.0 if c > 0 else c
    run = {
        "vmap": lambda x: fg.vmap(step)(fnp.stack([x, -x])),
        "fori_loop": lambda x: fg.fori_loop(0, 3, lambda i, c: step(c), x),
        "scan": lambda x: fg.scan(lambda c, _: (step(c), c), x, np.zeros(2))[0],
        "while_loop": lambda x: fg.while_loop(lambda c: c < 10.0, step, x),
        "cond": lambda x: fg.cond(x > 1.0, step, lambda c: c, x),
    }[where]
    with pytest.raises(fg.ConcretizationError, match="fg.cond") as info:
        fg.grad(run)(1.5)
    assert where.split("_")[0] in str(info.value) or where == "scan"


def test_hot_dynamic_function_stays_correct_across_branches():
    """Past the tiering threshold fg.grad compiles one kernel per branch taken, each checking
    its guard; every call follows its own branch."""
    def f(x):
        if x[0] > 0:
            return fnp.sum(x ** 2)
        return fnp.sum(-x)
    from funcgrad.tiering import policy
    grad_f = fg.grad(f)
    for i in range(25):
        x = np.array([1.0, 2.0]) * (-1.0) ** i
        np.testing.assert_array_equal(grad_f(x), 2 * x if i % 2 == 0 else -np.ones(2))
    # calls that decide differently trace differently by design: not taken for impurity
    assert policy.explain(f)[("grad", 0, False)].startswith("compiled"), policy.explain(f)


def test_hot_vjp_keeps_one_kernel_pair_per_path():
    from funcgrad.api.vjp_jit import VjpJit
    from funcgrad.tiering import policy
    f = lambda x: x * 2.0 if x[0] > 0 else fnp.sin(x)
    compiled = VjpJit(f)
    for i in range(6):
        x = np.array([1.0, 2.0]) * (-1.0) ** i + 0.1 * i
        for out, f_vjp in (compiled(x), fg.vjp(f, x)):
            np.testing.assert_allclose(out, 2 * x if x[0] > 0 else np.sin(x), rtol=1e-14)
            np.testing.assert_allclose(f_vjp(np.ones(2))[0], 2.0 if x[0] > 0 else np.cos(x),
                                       rtol=1e-14)
    assert [len(p) for p in compiled._plans.values()] == [2]
    for i in range(20):                          # hot: the tiered vjp compiles as well
        fg.vjp(f, np.array([1.0, 2.0]) * (-1.0) ** i)
    assert policy.explain(f)[("vjp", False)].startswith("compiled"), policy.explain(f)


# ---- fg.jit: one kernel per path, guards checked on every call -------------------------------

def test_jit_compiles_one_kernel_per_path_and_checks_its_guards():
    traces = []

    def f(x):
        traces.append(1)                         # runs only when a call is traced
        n = int(fnp.sum(x > 0))                  # a size, a bound: part of the path
        total = fnp.sum(x[:n] ** 2)
        return total * 3.0 if total > 1.0 else total - 1.0
    jg = fg.jit(fg.value_and_grad(f))
    xs = [np.array([2.0, 1.0, -1.0]), np.array([0.5, 0.1, -1.0]), np.array([0.3, -1.0, -2.0]),
          np.array([3.0, 1.0, -0.5])]
    for rounds in range(2):
        for x in xs:
            n = int(np.sum(x > 0))
            t = np.sum(x[:n] ** 2)
            want = (t * 3.0 if t > 1.0 else t - 1.0,
                    np.where(np.arange(3) < n, 2 * x * (3.0 if t > 1.0 else 1.0), 0.0))
            value, grad = jg(x)
            np.testing.assert_allclose(value, want[0], rtol=1e-14)
            np.testing.assert_allclose(grad, want[1], rtol=1e-14)
            grad[:] = 99.0                       # results are the caller's: nothing else moves
            np.testing.assert_allclose(jg(x)[1], want[1], rtol=1e-14)
        if rounds == 0:
            first = len(traces)
    assert len(traces) == first, "a path seen before was traced again"
    (paths,) = jg._entries.values()
    assert len(paths.paths) == 3                 # xs[0] and xs[3] take the same path


def test_a_kernel_returns_as_soon_as_one_of_its_decisions_fails():
    """Each path's kernel checks its `if` where the predicate is computed and returns at once
    when it comes out otherwise: a call that takes another path does not pay for this one's
    work (here the matrix products), and results stay those of the path taken."""
    def f(A, x):
        B = A @ A if fnp.sum(x) > 0 else A.T @ A
        return B @ x
    A, x = np.arange(9.0).reshape(3, 3) / 10, np.array([1.0, -2.0, 3.0])
    for jf in (fg.jit(f), fg.jit(fg.grad(lambda A, x: fnp.sum(f(A, x) ** 2), argnums=1))):
        for s in (1.0, -1.0, 1.0, -1.0):
            B = A @ A if np.sum(s * x) > 0 else A.T @ A
            want = B @ (s * x) if jf.f is f else 2 * B.T @ (B @ (s * x))
            np.testing.assert_allclose(jf(A, s * x), want, rtol=1e-14)
        (paths,) = jf._entries.values()
        for entry, *_ in paths.paths:
            source = entry.compiled.source
            assert source.index("a guard failed") < source.index("_vm.dot("), source
    from funcgrad.api.vjp_jit import VjpJit
    compiled = VjpJit(f)
    for s in (1.0, -1.0, 1.0):
        out, f_vjp = compiled(A, s * x)
        B = A @ A if s > 0 else A.T @ A
        np.testing.assert_allclose(out, B @ (s * x), rtol=1e-14)
        np.testing.assert_allclose(f_vjp(np.ones(3))[1], B.T @ np.ones(3), rtol=1e-14)
    for _plan, fwd, _bwd, _ in next(iter(compiled._plans.values())):
        assert "a guard failed" in fwd.compiled.source


def test_past_the_path_limit_calls_run_interpreted_with_one_warning(monkeypatch):
    monkeypatch.setattr(fg.config, "jit_max_paths", 2)

    def repeat_until(x):
        y = x
        while fnp.sum(y) < 10.0:                 # the trip count depends on x
            y = y * 1.5 + 0.1
        return fnp.sum(y * y)
    jg = fg.jit(fg.grad(repeat_until))
    with pytest.warns(UserWarning, match="2 different paths") as record:
        for start in (0.5, 1.0, 2.0, 3.0, 0.25, 2.0):
            x = np.array([start, start])
            np.testing.assert_allclose(jg(x), evaluate(fg.grad(repeat_until), x), rtol=1e-14)
    assert len(record) == 1 and record[0].filename == __file__
    assert "fg.while_loop" in str(record[0].message)


# ---- property: generated piecewise functions, call sequences crossing the boundaries ---------

def make_piecewise(thresholds, powers, scales):
    """f(x) = sum over elements of the piece chosen by a chain of `if s > t_k` on s = sum(x)."""
    def f(x):
        s = fnp.sum(x)
        for t, p, c in zip(thresholds, powers, scales):
            if s > t:
                return c * fnp.sum(x ** p)
        return fnp.sum(fnp.sin(x))

    def reference(x):                          # NumPy: value and gradient by hand
        s = np.sum(x)
        for t, p, c in zip(thresholds, powers, scales):
            if s > t:
                return c * np.sum(x ** p), c * p * x ** (p - 1)
        return np.sum(np.sin(x)), np.cos(x)
    return f, reference


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=1, max_size=3, unique=True),
       st.lists(st.integers(1, 4), min_size=3, max_size=3),
       st.lists(st.floats(-2, 2), min_size=3, max_size=3),
       st.lists(st.floats(-2, 2), min_size=1, max_size=12))
def test_generated_piecewise_functions_match_numpy_on_every_call(thresholds, powers, scales,
                                                                 starts):
    f, reference = make_piecewise(sorted(thresholds, reverse=True), powers, scales)
    vg = fg.value_and_grad(f)
    for start in starts:                         # one function object, many calls
        x = np.array([start, 0.5 * start + 0.1])
        value, grad = vg(x)
        want_value, want_grad = reference(x)
        np.testing.assert_allclose(value, want_value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(evaluate(f, x), want_value, rtol=1e-12, atol=1e-12)
        if min(abs(np.sum(x) - t) for t in thresholds) > 1e-3:   # away from a boundary
            check_grads(f, (x,), order=1, eps=1e-6)


PIECES = make_piecewise([2.0, 0.5, -1.0], [3, 2, 1], [0.5, -1.5, 2.0])


@pytest.fixture(scope="module")
def compiled_pieces():
    """fg.jit and the tiered fg.value_and_grad of one piecewise function (one kernel per
    piece, compiled once for every example)."""
    f, _ = PIECES
    return fg.jit(fg.value_and_grad(f)), fg.value_and_grad(f)


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(st.lists(st.floats(-3, 3), min_size=1, max_size=10))
def test_jitted_and_tiered_paths_match_numpy_and_the_interpreter(compiled_pieces, starts):
    """Call sequences crossing the branch boundaries: the compiled paths (guards checked in
    every call) agree with NumPy by hand and with the interpreter."""
    f, reference = PIECES
    jitted, tiered = compiled_pieces
    for start in starts:
        x = np.array([start, 0.5 * start + 0.1])
        want_value, want_grad = reference(x)
        for vg in (jitted, tiered):
            value, grad = vg(x)
            np.testing.assert_allclose(value, want_value, rtol=1e-13, atol=1e-13)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(evaluate(fg.value_and_grad(f), x)[1], want_grad,
                                   rtol=1e-13, atol=1e-13)


def test_agrees_with_hips_autograd():
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")

    def make(np_):
        def f(x):
            y = x
            while np_.sum(y * y) < 10.0:
                y = y * 1.5 + np_.sin(y)
            return np_.sum(y ** 2) if y[0] > 0 else np_.sum(np_.exp(y))
        return f
    for x in (np.array([0.3, -0.2]), np.array([-0.4, 0.1])):
        np.testing.assert_allclose(fg.grad(make(fnp))(x), autograd.grad(make(anp))(x),
                                   rtol=1e-12)


def test_the_documentation_examples_run():
    """docs/dynamic_python.md's code blocks, run as written."""
    import pathlib
    import re
    text = (pathlib.Path(__file__).parent.parent / "docs" / "dynamic_python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    scope = {}
    for block in blocks:
        exec(compile(block, "docs/dynamic_python.md", "exec"), scope)
    np.testing.assert_allclose(scope["fg"].grad(scope["newton_sqrt"])(2.0), 0.5 / np.sqrt(2))
    np.testing.assert_allclose(scope["fast"](2.0), 0.5 / np.sqrt(2), rtol=1e-12)
