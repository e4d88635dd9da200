"""fg.odeint: solutions against SciPy and closed forms, derivatives against finite differences
and closed forms (both modes, orders 1 and 2 where the solver is smooth), pytrees, vmap,
failures that are reported, and run-time tolerances that do not recompile.

Eager calls compile one kernel per (function, method, state structure): the functions below
are shared between tests so that CI compiles each once."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.ode import ODEError
from funcgrad.testing import check_grads


def lotka_volterra(y, t, a, b, c, d):
    return fnp.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])


def lorenz(y, t, sigma, rho, beta):
    return fnp.stack([sigma * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1],
                      y[0] * y[1] - beta * y[2]])


def pendulum(y, t, g):
    return fnp.stack([y[1], -g * fnp.sin(y[0])])


def decay(y, t, k):
    return -k * y


LV = (lotka_volterra, np.array([10.0, 5.0]), (1.5, 1.0, 3.0, 1.0), 10.0)
PROBLEMS = {
    "lotka_volterra": LV,
    "lorenz": (lorenz, np.array([1.0, 1.0, 1.0]), (10.0, 28.0, 8.0 / 3.0), 1.0),
    "pendulum": (pendulum, np.array([2.5, 0.0]), (9.81,), 5.0),
}


def reference(func, y0, args, ts):
    """SciPy's DOP853 at tolerances far tighter than the ones tested."""
    rhs = lambda t, y: np.asarray(fg.eval_program(fg.make_ir(func)(y, t, *args), y, t, *args)[0])
    return solve_ivp(rhs, (ts[0], ts[-1]), y0, t_eval=ts, rtol=1e-13, atol=1e-13,
                     method="DOP853").y.T


@pytest.mark.parametrize("name", sorted(PROBLEMS))
@pytest.mark.parametrize("method", ["dopri5", "tsit5"])
def test_adaptive_solutions_match_scipy(name, method):
    """At rtol = atol = 1e-9 the global error is that of SciPy's RK45 at the same tolerances
    (the same Dormand-Prince pair and controller), within a factor of 3."""
    func, y0, args, t_end = PROBLEMS[name]
    ts = np.linspace(0.0, t_end, 17)       # (most output times fall inside steps: dense output)
    want = reference(func, y0, args, ts)
    got = fg.odeint(func, y0, ts, *args, rtol=1e-9, atol=1e-9, method=method)
    rk45 = solve_ivp(lambda t, y: np.asarray(func(y, t, *args)), (0.0, t_end), y0, t_eval=ts,
                     rtol=1e-9, atol=1e-9).y.T
    assert got.shape == (17, y0.size)
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 3 * max(np.abs(rk45 - want).max(), 1e-12 * scale)


def test_the_same_steps_as_scipy_rk45():
    """dopri5 is SciPy's RK45 algorithm (pair, controller, starting step): the same number of
    right-hand side evaluations on Lotka-Volterra."""
    func, y0, args, t_end = LV
    ts = np.linspace(0.0, t_end, 21)
    _, info = fg.odeint(func, y0, ts, *args, full_output=True)
    rk45 = solve_ivp(lambda t, y: np.asarray(func(y, t, *args)), (0.0, t_end), y0,
                     t_eval=ts, rtol=1.4e-8, atol=1.4e-8)
    assert info["status"] == 0 and info["message"] == "integration successful"
    assert info["nfev"] == rk45.nfev


@pytest.mark.parametrize("method", ["dopri5", "tsit5"])
def test_dense_output_is_fourth_order(method):
    """Between steps the solution comes from the continuous extension: halving the (fixed)
    step size shrinks its error at mid-step times about 2^4-fold or more."""
    ts = np.linspace(0.0, 2.0, 41)
    errs = []
    for first in (0.2, 0.1):                # fixed steps: a huge tolerance, a given first step
        got = fg.odeint(decay, np.array([1.0]), ts, 1.5, rtol=1e3, atol=1e3, method=method,
                        first_step=first, max_step=first)
        errs.append(np.abs(got[:, 0] - np.exp(-1.5 * ts)).max())
    assert errs[1] < errs[0] / 12, errs


def test_rk4_converges_at_fourth_order():
    ts = np.array([0.0, 1.0, 2.0])
    errs = [np.abs(fg.odeint(decay, np.array([1.0]), ts, 2.0, method="rk4", dt=dt)[:, 0]
                   - np.exp(-2.0 * ts)).max() for dt in (0.1, 0.05)]
    assert 14 < errs[0] / errs[1] < 18, errs


def test_gradients_match_closed_forms():
    """y = y0 exp(-k t): d/dk, d/dy0 and d/dt of a loss on the solution, at tight tolerance."""
    ts = np.array([0.0, 0.5, 1.3])

    def loss(y0, k, ts):
        return fnp.sum(fg.odeint(decay, y0, ts, k, rtol=1e-12, atol=1e-12) ** 2)
    y0, k = np.array([1.5]), 0.7
    ys = y0 * np.exp(-k * ts)
    g_y0, g_k, g_t = fg.grad(loss, argnums=(0, 1, 2))(y0, k, ts)
    np.testing.assert_allclose(g_y0, np.sum(2 * ys * np.exp(-k * ts)), rtol=1e-8)
    np.testing.assert_allclose(g_k, np.sum(2 * ys * -ts * ys), rtol=1e-8)
    want_t = 2 * ys * (-k * ys)
    want_t[0] = -np.sum(want_t[1:])          # moving the start moves every later value
    np.testing.assert_allclose(g_t, want_t, rtol=1e-7, atol=1e-12)


def test_fixed_step_gradients_match_finite_differences():
    """rk4 is smooth in everything: orders 1 and 2, forward and reverse mode."""
    ts = np.array([0.0, 0.3, 0.7])

    def f(y0, p):
        return fg.odeint(lotka_volterra, y0, ts, p[0], p[1], p[2], p[3], method="rk4", dt=0.1)
    check_grads(f, (np.array([1.0, 0.5]), np.array([1.5, 1.0, 3.0, 1.0])), order=2,
                rtol=1e-6, atol=1e-8)


def test_adaptive_gradients_match_finite_differences():
    """dopri5's derivative is that of its steps (sizes held): finite differences, which move
    the steps, agree to the solver's tolerance."""
    ts = np.array([0.0, 0.4, 1.0])

    def f(y0, p):
        return fg.odeint(lotka_volterra, y0, ts, p[0], p[1], p[2], p[3], rtol=1e-11,
                         atol=1e-11)
    check_grads(f, (np.array([1.0, 0.5]), np.array([1.5, 1.0, 3.0, 1.0])), order=1,
                eps=1e-4, rtol=1e-6, atol=1e-7)


def test_pytree_state_and_args():
    def rhs(state, t, params):
        return {"x": state["v"], "v": -params["k"] * state["x"] - params["c"] * state["v"]}
    ts = np.linspace(0.0, 1.0, 5)
    state = {"x": np.array([1.0, 2.0]), "v": np.array([0.0, 0.5])}
    out = fg.odeint(rhs, state, ts, {"k": 4.0, "c": 0.1})
    assert set(out) == {"x", "v"} and out["x"].shape == (5, 2)
    flat = fg.odeint(lambda y, t: fnp.concatenate([y[2:], -4.0 * y[:2] - 0.1 * y[2:]]),
                     np.array([1.0, 2.0, 0.0, 0.5]), ts)
    np.testing.assert_allclose(out["x"], flat[:, :2], rtol=1e-12, atol=1e-14)
    g = fg.grad(lambda p: fnp.sum(fg.odeint(rhs, state, ts, p)["x"][-1]))(
        {"k": 4.0, "c": 0.1})
    assert set(g) == {"k", "c"} and np.isfinite(g["k"]) and g["k"] != 0.0


def test_vmap_over_initial_conditions_and_jit():
    ts = np.linspace(0.0, 1.0, 4)
    y0s = np.array([[10.0, 5.0], [8.0, 4.0], [1.0, 1.0]])
    solve = lambda y0: fg.odeint(lotka_volterra, y0, ts, *LV[2])
    batched = fg.vmap(solve)(y0s)
    one_by_one = np.stack([solve(y0) for y0 in y0s])
    np.testing.assert_allclose(batched, one_by_one, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fg.jit(solve)(y0s[1]), one_by_one[1], rtol=1e-12, atol=1e-12)


def test_tolerances_are_run_time_values():
    """Changing rtol/atol reuses the compiled solve (no new kernel), and tighter is closer."""
    from funcgrad.optimize.runners import runners
    func, y0, args, t_end = LV
    ts = np.linspace(0.0, 2.0, 3)
    want = reference(func, y0, args, ts)
    errs, kernels = [], []
    for tol in (1e-5, 1e-8, 1e-11):
        errs.append(np.abs(fg.odeint(func, y0, ts, *args, rtol=tol, atol=tol) - want).max())
        key, runner = runners("odeint")[-1]              # (the one this call used)
        assert key[1][0] == "dopri5"
        kernels.append(len(runner._entries))
    assert errs[0] > errs[1] > errs[2]
    assert kernels[0] == kernels[1] == kernels[2]


def test_failures_are_reported_never_silent():
    func, y0, args, _ = LV
    ts = np.linspace(0.0, 10.0, 5)
    with pytest.raises(ODEError, match="max_steps"):
        fg.odeint(func, y0, ts, *args, max_steps=20)
    ys, info = fg.odeint(func, y0, ts, *args, max_steps=20, full_output=True)
    assert info["status"] == 1 and np.isnan(ys[-1]).all() and not np.isnan(ys[0]).any()
    blow_up = lambda y, t: y * y                        # y = 1 / (1 - t): infinite at t = 1
    with pytest.raises(ODEError, match="step size underflow"):
        fg.odeint(blow_up, np.array([1.0]), np.array([0.0, 0.5, 2.0]))
    traced = fg.jit(lambda y0: fg.odeint(blow_up, y0, np.array([0.0, 0.5, 2.0])))(
        np.array([1.0]))
    np.testing.assert_allclose(traced[1], [2.0], rtol=1e-6)
    assert np.isnan(traced[2]).all()


def test_bad_input_gets_clear_errors():
    func, y0, args, _ = LV
    with pytest.raises(ValueError, match="method must be one of"):
        fg.odeint(func, y0, [0.0, 1.0], *args, method="euler")
    with pytest.raises(ValueError, match="must increase"):
        fg.odeint(func, y0, [1.0, 0.0], *args)
    with pytest.raises(ValueError, match="returned 3 values in all for a state of 2"):
        fg.odeint(lambda y, t: fnp.concatenate([y, y[:1]]), y0, [0.0, 1.0])


# ---- the stiff method ------------------------------------------------------------------------

def robertson(y, t, k1, k2, k3):
    """Robertson's chemical kinetics: rates 0.04, 3e7 and 1e4, the classic stiff test."""
    return fnp.stack([-k1 * y[0] + k3 * y[1] * y[2],
                      k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2, k2 * y[1] ** 2])


ROBERTSON = (robertson, np.array([1.0, 0.0, 0.0]), (0.04, 3e7, 1e4))


def test_rosenbrock23_solves_robertson_like_scipy_bdf():
    func, y0, args = ROBERTSON
    ts = np.array([0.0, 1e-3, 0.1, 1.0, 10.0, 40.0])
    rhs = lambda t, y: np.asarray(func(y, t, *args))
    want = solve_ivp(rhs, (0, 40), y0, t_eval=ts, method="Radau", rtol=1e-12, atol=1e-14).y.T
    ys, info = fg.odeint(func, y0, ts, *args, method="rosenbrock23", rtol=1e-6, atol=1e-10,
                         full_output=True)
    bdf = solve_ivp(rhs, (0, 40), y0, t_eval=ts, method="BDF", rtol=1e-6, atol=1e-10)
    assert info["status"] == 0 and info["nsteps"] < 2 * bdf.nfev
    np.testing.assert_allclose(ys, want, rtol=1e-3, atol=1e-9)
    np.testing.assert_allclose(ys.sum(axis=1), 1.0, rtol=1e-12)    # mass is conserved
    with pytest.raises(ODEError, match="method='rosenbrock23'"):    # explicit: too many steps
        fg.odeint(func, y0, ts, *args, max_steps=2000)


def _stiff_linear(y, t, lam):
    return -lam * (y - fnp.cos(t))


def test_rosenbrock23_gradients_and_order():
    """y' = -lam (y - cos t) with fixed steps (huge tolerances, first_step = max_step = h): the
    solution is then smooth in y0 and lam, so derivatives in both modes match finite
    differences; and halving h shrinks the error about 4-fold (second order)."""
    ts = np.array([0.0, 0.5, 1.0])

    def solve(y0, lam, h):
        return fg.odeint(_stiff_linear, y0, ts, lam, method="rosenbrock23", rtol=1e3,
                         atol=1e3, first_step=h, max_step=h)
    check_grads(lambda y0, lam: solve(y0, lam, 0.05), (np.array([0.3, -0.2]), 50.0), order=1,
                eps=1e-5, rtol=1e-6, atol=1e-8)
    lam, y0 = 50.0, np.array([2.0])
    exact = lambda t: (lam ** 2 * np.cos(t) + lam * np.sin(t)) / (lam ** 2 + 1) + (
        y0[0] - lam ** 2 / (lam ** 2 + 1)) * np.exp(-lam * t)
    errs = [np.abs(solve(y0, lam, h)[:, 0] - exact(ts)).max() for h in (0.01, 0.005)]
    assert 3.0 < errs[0] / errs[1] < 5.0, errs


def test_backsolve_adjoint_agrees_with_differentiating_the_steps():
    """adjoint="backsolve" solves the adjoint equations backwards in time: at a tight tolerance
    its gradients (with respect to y0, args and every time) agree with reverse mode through
    the steps; pytree args work; the options are checked."""
    ts = np.linspace(0.0, 2.0, 5)

    def loss(y0, p, ts, adjoint):
        ys = fg.odeint(lotka_volterra, y0, ts, p["a"], p["b"], p["c"], p["d"], rtol=1e-10,
                       atol=1e-10, adjoint=adjoint)
        return fnp.sum(ys ** 2)
    args = (np.array([10.0, 5.0]), {"a": 1.5, "b": 1.0, "c": 3.0, "d": 1.0}, ts)
    steps = fg.grad(loss, argnums=(0, 1, 2))(*args, "steps")
    back = fg.grad(loss, argnums=(0, 1, 2))(*args, "backsolve")
    for a, b in zip(fg.tree_util.tree_leaves(back), fg.tree_util.tree_leaves(steps)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="adjoint must be"):
        fg.odeint(lotka_volterra, args[0], ts, *LV[2], adjoint="continuous")
    with pytest.raises(ValueError, match="needs an adaptive method"):
        fg.odeint(lotka_volterra, args[0], ts, *LV[2], method="rk4", adjoint="backsolve")


def test_checkpointed_gradient_equals_the_stored_one():
    """checkpoint=k keeps every k-th step of each interval and recomputes the rest: the same
    gradient."""
    ts = np.linspace(0.0, 3.0, 4)

    def loss(p, k):
        return fnp.sum(fg.odeint(lotka_volterra, np.array([10.0, 5.0]), ts, *p,
                                 checkpoint=k) ** 2)
    p = np.array([1.5, 1.0, 3.0, 1.0])
    np.testing.assert_allclose(fg.grad(loss)(p, 3), fg.grad(loss)(p, None), rtol=1e-12)


def test_tfirst_takes_solve_ivps_argument_order():
    """tfirst=True: func(t, y, *args), as solve_ivp and SciPy's odeint(tfirst=True); the same
    solution and derivatives as the (y, t) order, under fg.grad (traced: no kernel of its own)."""
    t = np.linspace(0.0, 1.0, 4)

    def solve(k, tfirst):
        rhs = (lambda s, y, k: -k * y * (1.0 + s)) if tfirst else (lambda y, s, k: -k * y * (1.0 + s))
        return fg.odeint(rhs, np.array([1.0, 2.0]), t, k, tfirst=tfirst)[-1, 1]

    exact = lambda k: 2.0 * np.exp(-1.5 * k)                  # y' = -k (1 + t) y
    for tfirst in (True, False):
        value, slope = fg.value_and_grad(solve)(0.7, tfirst)
        np.testing.assert_allclose(value, exact(0.7), rtol=1e-7)
        np.testing.assert_allclose(slope, -1.5 * exact(0.7), rtol=1e-6)
