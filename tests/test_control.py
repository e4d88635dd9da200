"""Structured control flow: while_loop, scan, fori_loop, cond, switch — values, derivatives in
both modes and at second order (against finite differences and closed forms), checkpointing,
vmap, jit, and the errors for carries that change type."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.testing import check_grads
from conftest import rand

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def newton_sqrt(a, checkpoint=None):
    return fg.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12 * a,
                         lambda x: 0.5 * (x + a / x), a, checkpoint=checkpoint)


def fixed_point(a):
    """x = cos(a x), iterated to convergence (a dynamic trip count)."""
    return fg.while_loop(lambda c: fnp.abs(c[0] - c[1]) > 1e-15,
                         lambda c: (fnp.cos(a * c[0]), c[0]), (1.0, 0.0))[0]


def scan_cumprod(x):
    return fg.scan(lambda c, v: (c * v, c * v), 1.0, x)[1]


# ---- values ------------------------------------------------------------------------------------

def test_values_match_python_loops():
    assert fg.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0)) == (10, 1024.0)
    c, ys = fg.scan(lambda c, x: (c + x, c * x), 0.0, np.arange(4.0))
    assert c == 6.0 and np.array_equal(ys, [0.0, 0.0, 2.0, 9.0])
    ref = 1.0
    for i in range(2, 7):
        ref = ref * 2.0 + i
    assert fg.fori_loop(2, 7, lambda i, x: x * 2.0 + i, 1.0) == ref
    assert [fg.switch(k, [lambda x: x, lambda x: 2 * x, lambda x: 3 * x], 5.0) for k in (-1, 1, 7)] == [5.0, 10.0, 15.0]
    x = rand((5,), "positive")
    np.testing.assert_allclose(evaluate(scan_cumprod, x), np.cumprod(x), rtol=1e-15)
    assert abs(evaluate(newton_sqrt, 2.0) - np.sqrt(2.0)) < 1e-15
    r = evaluate(lambda x: fg.scan(lambda c, v: (c + v, c), 0.0, x, reverse=True), np.arange(4.0))
    assert r[0] == 6.0 and np.array_equal(r[1], [6.0, 5.0, 3.0, 0.0])


def test_pytree_carries_and_outputs():
    def f(p):
        out = fg.fori_loop(0, 3, lambda i, c: {"w": c["w"] * p, "n": c["n"] + 1}, {"w": p, "n": 0})
        c, ys = fg.scan(lambda c, x: ((c[0] + x["a"], c[1]), {"y": c[0] * x["b"]}), (0.0, p),
                        {"a": np.ones(3), "b": np.arange(3.0)})
        return out["w"] + c[0] + fnp.sum(ys["y"]) + out["n"]
    assert evaluate(f, 2.0) == 16.0 + 3.0 + (0 * 0 + 1 * 1 + 2 * 2) + 3
    check_grads(f, (1.3,), order=2)


# ---- derivatives -------------------------------------------------------------------------------

def test_newton_sqrt_derivatives_match_closed_forms():
    for a in (2.0, 9.0, 1e4):
        assert np.isclose(fg.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-12)
        assert np.isclose(fg.grad(fg.grad(newton_sqrt))(a), -0.25 * a ** -1.5, rtol=1e-9)
        assert np.isclose(fg.hessian(newton_sqrt)(a), -0.25 * a ** -1.5, rtol=1e-9)
        assert np.isclose(fg.jvp(newton_sqrt, (a,), (1.0,))[1], 0.5 / np.sqrt(a), rtol=1e-12)
    check_grads(newton_sqrt, (3.0,), order=2)


def test_fixed_point_derivative_matches_implicit_function_theorem():
    a = 0.7
    x = evaluate(fixed_point, a)
    s = np.sin(a * x)
    assert np.isclose(fg.grad(fixed_point)(a), -x * s / (1 + a * s), rtol=1e-10)
    check_grads(fixed_point, (a,), order=2)


def test_scan_cumprod_matches_closed_form():
    x = rand((5,), "nonzero")
    J = fg.jacrev(scan_cumprod)(x)
    want = np.tril(np.cumprod(x)[:, None] / x[None, :])
    np.testing.assert_allclose(J, want, rtol=1e-12)
    np.testing.assert_allclose(fg.jacfwd(scan_cumprod)(x), want, rtol=1e-12)
    check_grads(lambda x: fnp.sum(scan_cumprod(x) ** 2), (x,), order=2)


@pytest.mark.parametrize("name", ["scan", "reverse scan", "fori static", "fori dynamic",
                                  "while", "cond", "switch", "nested"])
def test_gradients_against_finite_differences(name):
    x = rand((4,), "unit", seed=3)
    fns = {
        "scan": lambda x: fnp.sum(fg.scan(lambda c, v: (fnp.sin(c) * v + c, c * v), x[0], x)[1]),
        "reverse scan": lambda x: fnp.sum(fg.scan(lambda c, v: (fnp.tanh(c + v), c * v), 0.3, x,
                                                  reverse=True)[1] * x),
        "fori static": lambda x: fg.fori_loop(0, 6, lambda i, c: fnp.sin(c) * x[i % 4] + c, x[1]),
        "fori dynamic": lambda x: fg.fori_loop(0, fnp.argmax(x) + 3,
                                               lambda i, c: c * fnp.cos(c + x[i % 4]), x[2]),
        "while": lambda x: fg.while_loop(lambda c: c[1] < 5,
                                         lambda c: (c[0] * fnp.exp(-c[0] * x), c[1] + 1),
                                         (x, 0))[0].sum(),
        "cond": lambda x: fg.cond(fnp.sum(x) > 0, lambda y: fnp.sum(fnp.exp(y)),
                                  lambda y: fnp.sum(y ** 3), x),
        "switch": lambda x: fg.switch(fnp.argmin(x), [lambda y: y[0] * y[1], lambda y: fnp.sin(y[2]),
                                                      lambda y: fnp.prod(y)], x),
        "nested": lambda x: fg.fori_loop(0, 3, lambda i, c: fg.cond(
            c > 0, lambda c: fg.scan(lambda s, v: (s * v + 0.1, s), c, x)[0], lambda c: -c * x[0], c), x[3]),
    }
    check_grads(fns[name], (x,), order=2)
    check_grads(fns[name], (-x,), order=1)


def test_loss_through_while_loop_with_array_constants_only_differentiates_active_inputs():
    data = np.linspace(0.0, 1.0, 50)   # captured constant: no cotangent is accumulated for it
    f = lambda w: fg.while_loop(lambda c: c[1] < 3, lambda c: (c[0] - 0.1 * fnp.mean(c[0] - data), c[1] + 1), (w, 0))[0]
    check_grads(f, (0.3,), order=2)


# ---- checkpointing -----------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 3, 4, "sqrt", 100])
def test_checkpointed_scan_gives_the_same_gradient(k):
    x = rand((10,), "unit", seed=4)
    for reverse in (False, True):
        def loss(x, k):
            c, ys = fg.scan(lambda c, v: (fnp.sin(c) * v + c, c * v), 0.5, x, reverse=reverse,
                            checkpoint=k)
            return fnp.sum(ys * x) + c
        np.testing.assert_allclose(fg.grad(loss)(x, k), fg.grad(loss)(x, None), rtol=1e-13)
        assert np.isclose(evaluate(loss, x, k), evaluate(loss, x, None), rtol=1e-14)


def _stored_floats(loss, x, k):
    """Floats the forward pass keeps for the backward pass (residuals of fg.vjp)."""
    from funcgrad.api import VjpPlan
    plan = VjpPlan(lambda x: loss(x, k), (x,), False)
    residuals = plan.fwd.outs[plan.n_out:]
    return sum(int(np.prod(v.aval.shape)) for v in residuals)


def test_checkpointing_stores_sqrt_of_the_steps():
    x = np.linspace(0.0, 1.0, 400)
    loss = lambda x, k: fg.scan(lambda c, v: (fnp.sin(c) * v + c, c), 0.5, x, checkpoint=k)[0]
    full, sq = _stored_floats(loss, x, None), _stored_floats(loss, x, "sqrt")
    assert full >= 2 * 400 and sq <= 2 * 20 + 400 + 10, (full, sq)


def test_checkpointed_while_loop_matches_and_compiles():
    for k in (1, 2, 5):
        assert np.isclose(fg.grad(newton_sqrt)(7.0, k), 0.5 / np.sqrt(7.0), rtol=1e-12)
    g = fg.jit(fg.grad(newton_sqrt), static_argnums=1)
    assert np.isclose(g(7.0, 2), 0.5 / np.sqrt(7.0), rtol=1e-12)
    h = fg.jit(fg.grad(fg.grad(newton_sqrt)), static_argnums=1)   # while_grad's own vjp
    assert np.isclose(h(7.0, None), -0.25 * 7.0 ** -1.5, rtol=1e-9)
    with pytest.raises(ValueError, match="sqrt"):
        fg.grad(newton_sqrt)(7.0, "sqrt")


# ---- vmap --------------------------------------------------------------------------------------

def test_vmap_of_while_loop_runs_until_every_lane_is_done():
    a = np.array([2.0, 9.0, 1e6, 0.25])
    # finished lanes are frozen: every lane equals its own unbatched run exactly
    assert np.array_equal(fg.vmap(newton_sqrt)(a), [evaluate(newton_sqrt, v) for v in a])
    np.testing.assert_allclose(fg.vmap(fg.grad(newton_sqrt))(a), 0.5 / np.sqrt(a), rtol=1e-12)
    # the reverse pass is batched too (one loop, not one per example), at every order
    assert fg.make_ir(fg.vmap(fg.grad(newton_sqrt)))(a).pretty().count("while_grad") == 1
    np.testing.assert_allclose(fg.vmap(fg.grad(fg.grad(newton_sqrt)))(a), -0.25 * a ** -1.5,
                               rtol=1e-9)
    np.testing.assert_allclose(fg.grad(lambda a: fnp.sum(fg.vmap(newton_sqrt)(a)))(a),
                               0.5 / np.sqrt(a), rtol=1e-12)


def test_per_example_gradients_with_different_trip_counts():
    def f(x, steps):
        return fg.while_loop(lambda c: c[1] < steps, lambda c: (fnp.sin(c[0]) * x + c[0], c[1] + 1),
                             (x, 0))[0].sum()
    X, S = rand((3, 2), seed=11), np.array([0, 3, 1])
    want = np.stack([fg.grad(f)(X[i], S[i]) for i in range(3)])
    np.testing.assert_allclose(fg.vmap(fg.grad(f))(X, S), want, rtol=1e-14)
    np.testing.assert_allclose(fg.jit(fg.vmap(fg.grad(f)))(X, S), want, rtol=1e-13)


def test_vmap_of_cond_takes_both_branches_in_one_batch():
    g = lambda x: fg.cond(fnp.sum(x) > 0, lambda y: fnp.sum(fnp.log(y)), lambda y: fnp.sum(y ** 2), x)
    x = rand((3,), "positive")
    batch = np.stack([x, -x, 2 * x])
    np.testing.assert_allclose(fg.vmap(g)(batch), [evaluate(g, b) for b in batch], rtol=1e-15)
    per_example = np.stack([fg.grad(g)(b) for b in batch])
    np.testing.assert_allclose(fg.vmap(fg.grad(g))(batch), per_example, rtol=1e-15)
    assert np.allclose(per_example[0], 1 / x) and np.allclose(per_example[1], -2 * x)


def test_vmap_of_scan_with_axes():
    f = lambda x, c0: fg.scan(lambda c, v: (c * v + 1.0, c + v), c0, x)
    xs, c0 = rand((5, 3), seed=5), rand((3,), seed=6)
    got_c, got_y = fg.vmap(f, in_axes=(1, 0), out_axes=(0, 1))(xs, c0)
    for b in range(3):
        c, y = evaluate(f, xs[:, b], c0[b])
        assert np.isclose(got_c[b], c) and np.allclose(got_y[:, b], y)
    got = fg.vmap(f, in_axes=(0, None))(xs.T.copy(), 0.5)
    assert np.allclose(got[1][1], evaluate(f, xs[:, 1], 0.5)[1])


# ---- jit ---------------------------------------------------------------------------------------

def test_compiled_loops_equal_the_interpreter():
    x = rand((4,), "unit", seed=7)
    def f(x):
        c, ys = fg.scan(lambda c, v: (fnp.sin(c) * v + c, c * v), x[0], x)
        w = fg.while_loop(lambda c: c[1] < 4, lambda c: (fnp.cos(c[0]) * x, c[1] + 1), (x, 0))[0]
        b = fg.cond(c > 0, lambda y: fnp.exp(y), lambda y: y * y, x)
        return fnp.sum(ys) + fnp.sum(w * b) + newton_sqrt(1.0 + x[1] ** 2)
    jf = fg.jit(fg.value_and_grad(f))
    v, g = jf(x)
    v0, g0 = fg.value_and_grad(f)(x)
    assert np.isclose(v, v0, rtol=1e-14) and np.allclose(g, g0, rtol=1e-13)
    src = jf.lower(x).source
    assert "while True:" in src and "for " in src and "objmode" not in src


def test_whole_training_loop_compiles_into_one_kernel():
    X, y = rand((20, 3), seed=8), rand((20,), seed=9)
    loss = lambda w: fnp.mean((X @ w - y) ** 2)

    def train(w):
        return fg.fori_loop(0, 50, lambda i, w: w - 0.1 * fg.grad(loss)(w), w)
    w = np.zeros(3)
    for _ in range(50):
        w = w - 0.1 * fg.grad(loss)(w)
    np.testing.assert_allclose(fg.jit(train)(np.zeros(3)), w, rtol=1e-12)


# ---- errors ------------------------------------------------------------------------------------

def test_carry_type_errors_name_the_leaf():
    with pytest.raises(fg.CarryTypeError, match=r"carry\['w'\].*f64\[\].*f64\[2\]"):
        fg.grad(lambda x: fg.while_loop(lambda c: c["n"] < 2, lambda c: {"w": c["w"] * np.ones(2), "n": c["n"] + 1},
                                        {"w": x, "n": 0})["w"])(1.0)
    with pytest.raises(fg.CarryTypeError, match="structure"):
        fg.scan(lambda c, x: ((c, c), x), 0.0, np.ones(2))
    with pytest.raises(fg.CarryTypeError, match="i64.*f64"):
        fg.fori_loop(0, 2, lambda i, c: c * 1.5, 1)
    with pytest.raises(fg.CarryTypeError, match="boolean scalar"):
        fg.while_loop(lambda c: c, lambda c: c + 1.0, 0.0)
    with pytest.raises(fg.CarryTypeError, match=r"fg.cond: true_fun returns the output leaf"):
        fg.grad(lambda x: fg.cond(x > 0, lambda x: x, lambda x: fnp.stack([x, x]), x))(1.0)
    with pytest.raises(fg.CarryTypeError, match=r"fg.fori_loop: body_fun changes the carry leaf carry\[0\]"):
        fg.grad(lambda x: fg.fori_loop(0, 3, lambda i, c: (c[0] + 0.5, c[1]), (0, x))[1])(1.0)
    with pytest.raises(fg.CarryTypeError, match=r"fg.switch: branch 2"):
        fg.grad(lambda x: fg.switch(fnp.argmax(fnp.stack([x, -x])), [
            lambda x: x, lambda x: 2 * x, lambda x: fnp.stack([x, x])], x))(1.0)
    with pytest.raises(fg.CarryTypeError, match="pair"):
        fg.scan(lambda c, x: c, 0.0, np.ones(2))


def test_python_numbers_returned_by_branches_and_bodies_take_the_other_dtype():
    x32 = np.float32(0.5)
    f = lambda p, x: fg.cond(p > 0, lambda x: 0.0, lambda x: x, x)
    for p in (np.float64(1.0), np.float64(-1.0)):      # traced predicate: both branches traced
        assert evaluate(f, p, x32).dtype == np.float32 and fg.jit(f)(p, x32).dtype == np.float32
    assert fg.fori_loop(0, 3, lambda i, c: c * 0 + 1.0, np.float32(2.0)).dtype == np.float32


def test_python_control_flow_on_traced_value_points_to_these_functions():
    def f(x):
        if x > 0:
            return x
        return -x
    with pytest.raises(fg.ConcretizationError, match="fg.cond"):
        fg.scan(lambda c, x: (f(c), c), 1.0, np.ones(2))

    def g(x):
        while x < 10:
            x = x * 2
        return x
    with pytest.raises(fg.ConcretizationError, match="fg.while_loop"):
        fg.vmap(fg.grad(g))(np.ones(2))


def test_unrolled_python_loop_warns_when_large():
    def f(x):
        for _ in range(3000):
            x = fnp.sin(x) * 1.0001
        return x
    with pytest.warns(UserWarning, match="fg.fori_loop"):
        fg.make_ir(f)(1.0)


# ---- found in review -------------------------------------------------------------------------

def test_compiled_reverse_mode_of_while_with_repeated_subexpressions():
    """Simplification merges equal residuals of the body; the backward loop binds its inputs
    by position."""
    g = lambda x: fg.while_loop(lambda c: c[0] < 3, lambda c: (
        c[0] + 1, fnp.exp(c[1] * 0.5) * fnp.exp(c[1] * 0.5)), (0, x))[1]
    assert np.isclose(fg.jit(fg.grad(g))(0.3), fg.grad(g)(0.3), rtol=1e-13)
    f = lambda p, k: fg.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, fnp.sin(c[1]) * p),
                                   (0, p), checkpoint=k)[1]
    for k in (None, 2):             # second order: the derivative of while_grad, compiled
        gg = fg.grad(fg.grad(f))
        assert np.isclose(fg.jit(gg, static_argnums=1)(1.3, k), gg(1.3, k), rtol=1e-12)


def test_compiled_updates_never_write_into_a_loops_initial_value():
    x = np.arange(5.0)

    def f(x):
        y = fg.while_loop(lambda c: fnp.sum(c) < 0, lambda c: c * 2, x)    # zero trips: y is x
        c, _ = fg.scan(lambda c, v: (c, v), x, x)                          # passes x through
        return y.at[0].set(100.0) + c.at[1].add(5.0), x
    out, same = fg.jit(f)(x)
    assert np.array_equal(x, np.arange(5.0)) and np.array_equal(same, x)
    np.testing.assert_array_equal(out, evaluate(f, x)[0])


def test_fallback_numpy_calls_inside_loops_and_branches_compile():
    A = np.array([[4.0, 1.0], [1.0, 3.0]])

    def f(p, b):
        x = fg.cond(p > 0, lambda b: fnp.linalg.solve(A, b), lambda b: b, b)
        y = fg.while_loop(lambda c: c[1] < 2, lambda c: (fnp.linalg.solve(A, c[0]) + 1.0, c[1] + 1),
                          (x, 0))[0]
        return fnp.sum(fnp.linalg.solve(A * 2.0, y))
    b = np.array([1.0, 2.0])
    v, g = fg.jit(fg.value_and_grad(f, argnums=1))(1.0, b)
    v0, g0 = fg.value_and_grad(f, argnums=1)(1.0, b)
    assert np.isclose(v, v0, rtol=1e-14) and np.allclose(g, g0, rtol=1e-13)


def test_second_order_through_a_float32_while_loop_stays_float32():
    w = lambda x: fg.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * c[1] * 0.5), (0, x))[1]
    x = np.float32(0.7)
    for h in (fg.grad(fg.grad(w)), fg.jit(fg.grad(fg.grad(w)))):
        got = h(x)
        assert got.dtype == np.float32 and np.isclose(got, 4.9674527e-05, rtol=1e-5)


def test_fori_loop_counter_promotes_like_a_python_int():
    f = lambda x: fg.fori_loop(0, 5, lambda i, c: c * 3 + i, x)
    x = np.array([1, 2, 3], np.int32)
    ref = x.copy()
    for i in range(5):
        ref = ref * 3 + i
    for got in (evaluate(f, x), fg.jit(f)(x)):
        assert got.dtype == np.int32 and np.array_equal(got, ref)
    # int32 arithmetic wraps in compiled code as in NumPy (Numba computes small ints as int64)
    big = np.array([2 ** 30, 5], np.int32)
    np.testing.assert_array_equal(fg.jit(lambda x: x * 4 + 1)(big), big * 4 + 1)


def test_fori_loop_counter_compared_with_a_python_int_compiles():
    # the counter (a weak int) against a literal must compare as int64, not as Python objects
    f = lambda a: fg.fori_loop(0, 4, lambda i, r: fnp.where(i < 3, r @ r, r) + (i == 1) * 0.1, a)
    a = np.eye(2) * 0.5 + 0.1
    assert "object" not in str(fg.make_ir(f)(a))
    loss = lambda a: fnp.sum(fnp.sin(f(a)))
    with fg.disable_jit():
        want = fg.jit(f)(a), fg.jit(fg.grad(loss))(a)
    got = fg.jit(f)(a), fg.jit(fg.grad(loss))(a)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13)


def test_long_loops_in_interpreted_code_are_compiled(monkeypatch):
    from funcgrad.backend import compile as backend
    from funcgrad.tiering import policy
    monkeypatch.setattr(fg.config, "loop_compile_seconds", 1e-4)   # every loop counts as long
    monkeypatch.setattr(policy, "threshold", 0)                  # fg.grad stays interpreted
    f = lambda a: fg.scan(lambda c, v: (fnp.sin(c) * a + v, c), 0.1, np.linspace(0, 1, 50))[0]
    g = lambda a: newton_sqrt(a * 3.0) + fg.fori_loop(0, fnp.argmax(np.ones(2)) + 40,
                                                      lambda i, c: c * 0.99 + a, a)
    with fg.disable_jit():
        want = [fg.grad(f)(0.7), fg.grad(g)(0.7), evaluate(g, 0.7)]
    before = backend.kernels_made()
    got = [fg.grad(f)(0.7), fg.grad(g)(0.7), evaluate(g, 0.7)]
    assert backend.kernels_made() > before                        # scan, while, while_grad kernels
    np.testing.assert_allclose(got, want, rtol=1e-13)
