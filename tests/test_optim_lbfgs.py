"""fg.optim's L-BFGS, line searches, Polyak's step and Adafactor (optim/lbfgs_scaling.py,
linesearch.py, factored.py), the per-leaf wrappers, sign SGD and the clipping functions.
L-BFGS's directions against the inverse-Hessian estimate built as a dense NumPy matrix, its
accepted steps against the Wolfe conditions, its end point against SciPy's L-BFGS-B, the whole
loop compiled as one kernel, fit; the others step by step against NumPy versions of their
published rules; each against optax where installed (L-BFGS: one update from the same state,
so that rounding is not amplified along the run)."""
import numpy as np
import pytest
import scipy.optimize

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import optim
from test_optim import (PARAMS, _eager_run, _float64_optax, assert_follows_its_rule, grads_at,
                        scanned_run)


def rosen(w):
    return fnp.sum((1 - w[:-1]) ** 2 + 100 * (w[1:] - w[:-1] ** 2) ** 2)


def rosen_np(w):
    return np.sum((1 - w[:-1]) ** 2 + 100 * (w[1:] - w[:-1] ** 2) ** 2)


STARTS = {2: np.array([-1.2, 1.0]), 10: np.linspace(-1.5, 1.5, 10)}


def lbfgs_run(opt, w, steps, f=rosen):
    """The hand-written loop of lbfgs's docstring: the iterates, states and (value, grad)
    pairs passed to each update."""
    state, vg = opt.init(w), optim.value_and_grad_from_state(f)
    trail = [(w, state, None)]
    for _ in range(steps):
        value, grad = vg(w, state=state)
        updates, state = opt.update(grad, state, w, value=value, grad=grad, value_fn=f)
        trail[-1] = trail[-1][:2] + ((value, grad),)
        w = optim.apply_updates(w, updates)
        trail.append((w, state, None))
    return trail


def dense_direction(ws, gs, k, memory, c1=None):
    """-H_k g_k with H_k the L-BFGS inverse-Hessian estimate as a matrix (Nocedal & Wright
    (7.19)): gamma I updated by H <- V^T H V + rho s s^T, V = I - rho y s^T, for the last
    `memory` pairs s = w_{j+1} - w_j, y = g_{j+1} - g_j."""
    n = ws[0].size
    pairs = [(ws[j + 1] - ws[j], gs[j + 1] - gs[j]) for j in range(max(0, k - memory), k)]
    if k == 0:
        gamma = min(1.0, 1.0 / np.linalg.norm(gs[0]))
    else:
        s, y = pairs[-1]
        gamma = s @ y / (y @ y)
    H = gamma * np.eye(n)
    for s, y in pairs:
        rho = 1.0 / (y @ s)
        V = np.eye(n) - rho * np.outer(y, s)
        H = V.T @ H @ V + rho * np.outer(s, s)
    return -H @ gs[k]


@pytest.mark.parametrize("dim, steps", [(2, 40), (10, 100)])
def test_lbfgs_directions_wolfe_steps_and_end_point_on_rosenbrock(dim, steps):
    trail = lbfgs_run(optim.lbfgs(), STARTS[dim], steps)
    ws = [np.asarray(w) for w, _, _ in trail]
    gs = [np.asarray(fg.grad(rosen)(w)) for w in ws]
    c1, c2, c3 = 1e-4, 0.9, 1e-6
    for k in range(steps):
        w, state, (value, grad) = trail[k]
        np.testing.assert_allclose(value, rosen_np(ws[k]), rtol=1e-13)
        np.testing.assert_allclose(grad, gs[k], rtol=1e-12, atol=1e-12)
        if np.linalg.norm(ws[k + 1] - ws[k]) < 1e-6:      # (differences lose their digits)
            break
        eta = float(trail[k + 1][1][2].learning_rate)
        d = dense_direction(ws, gs, k, memory=10)
        np.testing.assert_allclose((ws[k + 1] - ws[k]) / eta, d, rtol=1e-7,
                                   atol=1e-9 * np.abs(d).max(), err_msg=f"direction at step {k}")
        f0, f1 = rosen_np(ws[k]), rosen_np(ws[k + 1])
        slope0, slope1 = d @ gs[k], d @ gs[k + 1]
        armijo = f1 <= f0 + c1 * eta * slope0
        approx = f1 <= f0 + c3 * abs(f0) and slope1 <= (2 * c1 - 1) * slope0
        assert slope0 < 0 and (armijo or approx), f"step {k}: no sufficient decrease"
        assert abs(slope1) <= c2 * abs(slope0) + 1e-12, f"step {k}: curvature condition"
    best = scipy.optimize.minimize(rosen_np, STARTS[dim], method="L-BFGS-B",
                                   options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000}).x
    np.testing.assert_allclose(ws[-1], best, atol=1e-5)
    np.testing.assert_allclose(ws[-1], 1.0, atol=1e-9)         # Rosenbrock's minimum
    assert rosen_np(ws[-1]) < 1e-18


def test_lbfgs_on_complex_parameters():
    """A real quadratic form in complex z: inner products are Re <a, b>, so L-BFGS is BFGS on
    (Re z, Im z) and ends at the minimum c."""
    c, A = np.array([1 + 2j, -0.5 + 1j, 3j]), np.array([[2, 0.5, 0], [0.5, 1, 0.2], [0, 0.2, 3]])
    f = lambda z: fnp.real(fnp.sum(fnp.conj(z - c) * (A @ (z - c))))  # noqa: E731
    trail = lbfgs_run(optim.lbfgs(), np.zeros(3, complex), 12, f)
    np.testing.assert_allclose(trail[-1][0], c, atol=1e-10)
    assert all(float(st[2].info.decrease_error) == 0.0 for _, st, _ in trail[1:])


def _optax_state(optax, theirs, ours, params):
    """Our state's leaves in optax's state structure (the same fields in the same order)."""
    import jax
    structure = jax.tree.structure(theirs.init(params))
    return jax.tree.unflatten(structure, [jax.numpy.asarray(x)
                                          for x in fg.tree_util.tree_leaves(ours)])


@pytest.mark.parametrize("case", ["zoom-2", "zoom-10", "zoom-options", "backtracking"])
def test_lbfgs_updates_equal_optax_from_the_same_state(case):
    optax = _float64_optax()
    import jax
    dim = 2 if case == "zoom-2" else 10
    ours, theirs = {
        "zoom-2": (optim.lbfgs(), optax.lbfgs()), "zoom-10": (optim.lbfgs(), optax.lbfgs()),
        "zoom-options": (
            optim.lbfgs(0.5, memory_size=3, scale_init_precond=False,
                        linesearch=optim.scale_by_zoom_linesearch(15, max_learning_rate=1.5)),
            optax.lbfgs(0.5, memory_size=3, scale_init_precond=False,
                        linesearch=optax.scale_by_zoom_linesearch(15, max_learning_rate=1.5))),
        "backtracking": (
            optim.lbfgs(linesearch=optim.scale_by_backtracking_linesearch(30, store_grad=True)),
            optax.lbfgs(linesearch=optax.scale_by_backtracking_linesearch(30, store_grad=True)))
    }[case]
    f_jax = lambda w: jax.numpy.sum(                                # noqa: E731
        (1 - w[:-1]) ** 2 + 100 * (w[1:] - w[:-1] ** 2) ** 2)
    their_update = jax.jit(lambda g, s, w, value: theirs.update(g, s, w, value=value, grad=g,
                                                                value_fn=f_jax))
    trail = lbfgs_run(ours, STARTS[dim], 40)
    for k, (w, state, (value, grad)) in enumerate(trail[:-1]):
        want, new = their_update(grad, _optax_state(optax, theirs, state, w), w, value)
        got, _ = ours.update(grad, state, w, value=value, grad=grad, value_fn=rosen)
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10,
                                   atol=1e-10 * np.abs(want).max() + 1e-300, err_msg=f"step {k}")
        ls = trail[k + 1][1][2]
        np.testing.assert_allclose(float(ls.learning_rate), float(new[2].learning_rate), rtol=1e-10)
        assert int(ls.info.num_linesearch_steps) == int(new[2].info.num_linesearch_steps)


def test_lbfgs_loop_compiles_to_one_kernel_and_equals_the_eager_run():
    opt, traces = optim.lbfgs(), []

    @fg.jit
    def run(w):
        traces.append(1)
        vg = optim.value_and_grad_from_state(rosen)

        def step(i, carry):
            w, state = carry
            value, grad = vg(w, state=state)
            updates, state = opt.update(grad, state, w, value=value, grad=grad, value_fn=rosen)
            return optim.apply_updates(w, updates), state
        return fg.fori_loop(0, 30, step, (w, opt.init(w)))
    want = lbfgs_run(opt, STARTS[10], 30)
    for _ in range(2):
        w, state = run(STARTS[10])
        np.testing.assert_allclose(w, want[-1][0], rtol=1e-9)
        assert int(state[0].count) == 30
    assert len(traces) == 1
    (entry,) = run._entries.values()              # one signature, one kernel, no guarded paths
    assert not hasattr(entry, "paths")


def test_lbfgs_on_a_pytree_equals_the_flat_run_and_fit_supplies_the_objective():
    split = lambda p: fnp.concatenate([p["a"], p["b"]])           # noqa: E731
    tree_loss = lambda p: rosen(split(p))                           # noqa: E731
    opt = optim.lbfgs(memory_size=3)          # (a smaller kernel for fit to compile)
    flat = lbfgs_run(opt, STARTS[10], 25)
    tree = lbfgs_run(opt, {"a": STARTS[10][:4], "b": STARTS[10][4:]}, 25, tree_loss)
    for (w, _, _), (p, _, _) in zip(flat, tree):
        # (inner products summed leaf by leaf round differently; the run amplifies that)
        np.testing.assert_allclose(np.asarray(split(p)), w, rtol=1e-9, atol=1e-12)
    res = optim.fit(tree_loss, {"a": STARTS[10][:4], "b": STARTS[10][4:]}, opt, steps=25)
    np.testing.assert_allclose(np.asarray(split(res.params)), np.asarray(split(tree[-1][0])),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.losses, [rosen_np(split(p)) for p, _, _ in tree[:-1]],
                               rtol=1e-9)


def test_line_searches_alone(capsys):
    f = lambda w: fnp.sum((w - 3.0) ** 2)                           # noqa: E731
    w, g = np.zeros(2), np.array([-6.0, -6.0])
    zoom = optim.scale_by_zoom_linesearch(10)
    u, s = zoom.update(-g, zoom.init(w), w, value=18.0, grad=g, value_fn=f)
    np.testing.assert_allclose(u, [3.0, 3.0])                       # eta 1 overshoots to 0.5
    assert float(s.learning_rate) == 0.5 and float(s.value) == 0.0
    np.testing.assert_allclose(s.grad, 0.0)
    back = optim.scale_by_backtracking_linesearch(20, decrease_factor=0.5)
    u, s = back.update(-g, back.init(w), w, value=18.0, grad=g, value_fn=f)
    np.testing.assert_allclose(u, [3.0, 3.0])                       # 1, then 0.5
    assert int(s.info.num_linesearch_steps) == 2 and s.grad is None
    data = lambda w, target: fnp.sum((w - target) ** 2)             # noqa: E731
    u, _ = zoom.update(-g, zoom.init(w), w, value=18.0, grad=g, value_fn=data, target=3.0)
    np.testing.assert_allclose(u, [3.0, 3.0])
    with pytest.raises(TypeError, match="not arguments of value_fn"):
        zoom.update(-g, zoom.init(w), w, value=18.0, grad=g, value_fn=f, target=3.0)
    with pytest.raises(TypeError, match="needs the objective"):
        optim.lbfgs().update(g, optim.lbfgs().init(w), w)
    with pytest.raises(ValueError, match="one of each"):
        optim.value_and_grad_from_state(f)(w, state=optim.adam(0.1).init(w))
    for ls, fails in ((optim.scale_by_zoom_linesearch(1, verbose=True), True),  # eta 1 only
                      (optim.scale_by_zoom_linesearch(2, verbose=True), False),
                      (optim.scale_by_backtracking_linesearch(1, verbose=True), True)):
        u, s = ls.update(-4 * g, ls.init(w), w, value=18.0, grad=g, value_fn=f)
        out = capsys.readouterr().out
        assert out.count("no step size met the conditions") == fails, out
        assert (float(s.info.decrease_error) > 0) == fails


LINE_CASES = {   # objective (on fnp or jax.numpy), start, direction (None: -gradient)
    "leaves-the-domain": (lambda w, m: -m.sum(m.log(w)) + m.sum(w), np.array([0.5, 2.0]),
                          np.array([10.0, -10.0])),
    "flat-quartic": (lambda w, m: m.sum((w - 1.0) ** 4), np.array([0.0, 3.0]), None),
}
LINE_SEARCHES = [
    ("scale_by_zoom_linesearch", {"max_linesearch_steps": 20}),
    ("scale_by_zoom_linesearch", {"max_linesearch_steps": 3}),
    ("scale_by_zoom_linesearch", {"max_linesearch_steps": 10, "max_learning_rate": 0.5,
                                  "initial_guess_strategy": "one"}),
    ("scale_by_zoom_linesearch", {"max_linesearch_steps": 10, "curv_rtol": 0.01,
                                  "approx_dec_rtol": None}),
    ("scale_by_backtracking_linesearch", {"max_backtracking_steps": 20}),
    ("scale_by_backtracking_linesearch", {"max_backtracking_steps": 3, "store_grad": True}),
]


@pytest.mark.filterwarnings("ignore:invalid value encountered in log")
@pytest.mark.parametrize("case", sorted(LINE_CASES))
def test_line_searches_meet_their_conditions_or_fall_back_and_equal_optax(case):
    f, w, d = LINE_CASES[case]
    fn = lambda x: f(x, fnp)                                         # noqa: E731
    value, grad = fg.value_and_grad(fn)(w)
    d = -grad if d is None else d
    results = []
    for name, kw in LINE_SEARCHES:
        ls = getattr(optim, name)(**kw)
        u, s = ls.update(d, ls.init(w), w, value=value, grad=grad, value_fn=fn)
        eta = float(s.learning_rate)
        np.testing.assert_allclose(u, eta * d, rtol=1e-15)
        f1 = f(w + u, np)
        slope0 = d @ grad
        if float(s.info.decrease_error) == 0.0:
            c1 = 1e-4
            assert f1 <= value + c1 * eta * slope0 or (
                "approx_dec_rtol" not in kw and f1 <= value + 1e-6 * abs(value)
                and d @ fg.grad(fn)(w + u) <= (2 * c1 - 1) * slope0), (name, kw)
        else:                                # no decrease found: no step, or a finite one
            assert eta == 0.0 or np.isfinite(f1), (name, kw)
        if name == "scale_by_zoom_linesearch" and float(s.info.curvature_error) == 0.0:
            assert abs(d @ fg.grad(fn)(w + u)) <= kw.get("curv_rtol", 0.9) * abs(slope0)
        results.append((np.asarray(u), eta, int(s.info.num_linesearch_steps)))
    assert len({r[1] for r in results}) > 2                   # the options matter here
    optax = _float64_optax()
    import jax
    fj = lambda x: f(x, jax.numpy)                                   # noqa: E731
    for (name, kw), (u, eta, count) in zip(LINE_SEARCHES, results):
        ls = getattr(optax, name)(**kw)
        want, s = ls.update(d, ls.init(w), w, value=value, grad=grad, value_fn=fj)
        np.testing.assert_allclose(u, np.asarray(want), rtol=1e-12, atol=1e-15, err_msg=name)
        assert count == int(s.info.num_linesearch_steps), (name, kw)


# ---- Adafactor ---------------------------------------------------------------------------------

def ref_adafactor(lr=None, clip=1.0, param_scale=True, momentum=None, wd=None, factored=True,
                  decay_rate=0.8, eps=1e-30):
    """Shazeer & Stern's Algorithm 4 per leaf (row and column sums of G^2 + eps for matrices,
    V = R C / sum(R)), then optax's chain of clipping, lr, parameter scale, momentum, decay."""
    state = {n: {"r": 0.0, "c": 0.0, "v": 0.0, "m": 0.0} for n in PARAMS}

    def step(g, p, k):
        beta = 1.0 - (k + 1.0) ** -decay_rate
        out = {}
        for n in g:
            s, g2 = state[n], g[n] ** 2 + eps
            if factored and g[n].ndim == 2:
                s["r"] = beta * s["r"] + (1 - beta) * g2.sum(axis=1)
                s["c"] = beta * s["c"] + (1 - beta) * g2.sum(axis=0)
                u = g[n] / np.sqrt(np.outer(s["r"], s["c"]) / s["r"].sum())
            else:
                s["v"] = beta * s["v"] + (1 - beta) * g2
                u = g[n] / np.sqrt(s["v"])
            if clip is not None:
                u = u / max(1.0, np.sqrt(np.mean(u ** 2)) / clip)
            u = u * (1.0 if lr is None else lr)
            if param_scale:
                u = u * max(np.sqrt(np.mean(p[n] ** 2)), 1e-3)
            if momentum is not None:
                s["m"] = u = momentum * s["m"] + (1 - momentum) * u
            if wd is not None:
                u = u + wd * p[n]
            out[n] = p[n] - u
        return out
    return step


ADAFACTOR = {
    "adafactor": (lambda: optim.adafactor(min_dim_size_to_factor=2), lambda: ref_adafactor()),
    "adafactor-lr-momentum-decay": (
        lambda: optim.adafactor(0.1, min_dim_size_to_factor=2, momentum=0.9,
                                weight_decay_rate=0.01),
        lambda: ref_adafactor(0.1, momentum=0.9, wd=0.01)),
    "adafactor-unfactored-plain": (
        lambda: optim.adafactor(0.05, factored=False, clipping_threshold=None,
                                multiply_by_parameter_scale=False, decay_rate=0.5),
        lambda: ref_adafactor(0.05, clip=None, param_scale=False, factored=False,
                              decay_rate=0.5)),
}


@pytest.mark.parametrize("name", sorted(ADAFACTOR))
def test_adafactor_matches_the_published_rule_step_by_step(name):
    assert_follows_its_rule(name, *ADAFACTOR[name])


def test_adafactor_compiled_loop_and_the_factored_axes_of_a_3d_leaf():
    opt = ADAFACTOR["adafactor-lr-momentum-decay"][0]()
    want, _ = _eager_run(opt)
    got, _ = scanned_run(opt)
    for n in PARAMS:
        np.testing.assert_allclose(got[n], want[-1][n], rtol=1e-12)
    rms = optim.scale_by_factored_rms(min_dim_size_to_factor=3)
    g = np.random.default_rng(1).normal(size=(2, 3, 4))       # factored over the last two axes
    state = rms.init(g)
    assert state.v_row.shape == (2, 3) and state.v_col.shape == (2, 4) and state.v.shape == (1,)
    u, _ = rms.update(g, state, g)
    g2 = g ** 2 + 1e-30                                       # (the first decay is 1 - 1^-0.8 = 0)
    for a in range(2):
        r, c = g2[a].sum(axis=1), g2[a].sum(axis=0)
        np.testing.assert_allclose(u[a], g[a] / np.sqrt(np.outer(r, c) / r.sum()), rtol=1e-13)
    assert rms.init(np.zeros((2, 2))).v.shape == (2, 2)        # too small to factor


def test_adafactor_agrees_with_optax_where_installed():
    optax = _float64_optax()
    import jax
    rng = np.random.default_rng(0)
    params = {"w": rng.normal(size=(4, 5)), "b": rng.normal(size=3),
              "t": rng.normal(size=(2, 3, 4))}
    grads = [{k: rng.normal(size=v.shape) * (1 + i % 3) for k, v in params.items()}
             for i in range(8)]
    decay64 = lambda t, e: 1.0 - jax.numpy.asarray(t + 1, jax.numpy.float64) ** (-e)  # noqa: E731
    kw = dict(learning_rate=0.1, momentum=0.9, weight_decay_rate=0.01)
    theirs_exact = optax.chain(          # optax.adafactor's chain, with a float64 decay schedule
        optax.scale_by_factored_rms(True, 0.8, 0, 3, 1e-30, decay_rate_fn=decay64),
        optax.clip_by_block_rms(1.0), optax.scale_by_learning_rate(0.1, flip_sign=False),
        optax.scale_by_param_block_rms(), optax.ema(0.9, debias=False),
        optax.add_decayed_weights(0.01), optax.scale(-1))
    for theirs, rtol in ((theirs_exact, 1e-12), (optax.adafactor(min_dim_size_to_factor=3, **kw),
                                                  1e-6)):   # (optax's own: float32 decay)
        ours = optim.adafactor(min_dim_size_to_factor=3, **kw)
        p, s, q, t = params, ours.init(params), params, theirs.init(params)
        for g in grads:
            u, s = ours.update(g, s, p)
            p = optim.apply_updates(p, u)
            v, t = theirs.update(g, t, q)
            q = optax.apply_updates(q, v)
            for n in params:
                np.testing.assert_allclose(p[n], np.asarray(q[n]), rtol=rtol, atol=rtol)


# ---- per-leaf wrappers ----------------------------------------------------------------------

def test_block_wrappers_against_numpy_and_optax():
    rng = np.random.default_rng(3)
    p = {"m": rng.normal(size=(3, 4)), "v": rng.normal(size=5), "z": np.zeros(2)}
    u = {"m": rng.normal(size=(3, 4)) * 3, "v": rng.normal(size=5) * 0.1, "z": np.ones(2)}
    rms = lambda x: np.sqrt(np.mean(x ** 2))                       # noqa: E731
    want = {
        "clip_by_block_rms": (optim.clip_by_block_rms(0.5),
                              {n: x / max(1.0, rms(x) / 0.5) for n, x in u.items()}),
        "scale_by_param_block_rms": (optim.scale_by_param_block_rms(),
                                     {n: u[n] * max(rms(p[n]), 1e-3) for n in u}),
        "scale_by_param_block_norm": (optim.scale_by_param_block_norm(),
                                      {n: u[n] * max(np.linalg.norm(p[n]), 1e-3) for n in u}),
        "centralize": (optim.centralize(),
                       {**u, "m": u["m"] - u["m"].mean(axis=1, keepdims=True)}),
        "normalize_by_update_norm": (
            optim.normalize_by_update_norm(-2.0),
            {n: -2.0 * x / (np.sqrt(sum(np.sum(y ** 2) for y in u.values())) + 1e-6)
             for n, x in u.items()}),
    }
    try:
        optax = _float64_optax()
    except pytest.skip.Exception:
        optax = None
    for name, (opt, ref) in want.items():
        got, _ = opt.update(u, opt.init(p), p)
        for n in u:
            np.testing.assert_allclose(got[n], ref[n], rtol=1e-14, err_msg=name)
        if optax is not None:
            args = {"clip_by_block_rms": (0.5,), "normalize_by_update_norm": (-2.0,)}.get(name, ())
            theirs = getattr(optax, name)(*args)
            out, _ = theirs.update(u, theirs.init(p), p)
            for n in u:
                np.testing.assert_allclose(got[n], np.asarray(out[n]), rtol=1e-12, err_msg=name)
    for opt, want in ((optim.set_to_zero(), {n: 0.0 * x for n, x in u.items()}),
                      (optim.stateless_with_tree_map(lambda g, q: g * q),
                       {n: u[n] * p[n] for n in u}),
                      (optim.scale_by_sign(), {n: np.sign(x) for n, x in u.items()})):
        got, _ = opt.update(u, opt.init(p), p)
        for n in u:
            np.testing.assert_array_equal(got[n], want[n])
    assert fg.grad(lambda x: fnp.sum(optim.scale_by_param_block_rms().update(
        np.ones(2), (), x)[0]))(np.zeros(2)).tolist() == [0.0, 0.0]   # not NaN below min_scale
    with pytest.raises(ValueError, match="needs the parameters"):
        optim.scale_by_param_block_norm().update(u, ())


# ---- sign and Polyak steps, clipping -----------------------------------------------------------

def ref_signum(lr, beta=None):
    m = {n: np.zeros_like(v) for n, v in PARAMS.items()}

    def step(g, p, k):
        out = {}
        for n in g:
            m[n] = g[n] if beta is None else beta * m[n] + (1 - beta) * g[n]
            out[n] = p[n] - lr * np.sign(m[n])
        return out
    return step


def ref_polyak(scaling=1.0, f_min=0.0, max_lr=1.0, plus=False):
    """Polyak's step on f(w) = sum_n |w_n - c_n|^2, the (value, gradient) pairs of test below."""
    def step(w):
        g = {n: 2 * (w[n] - TARGET[n]) for n in w}
        gap = sum(np.sum((w[n] - TARGET[n]) ** 2) for n in w) - f_min
        gap = max(gap, 0.0) if plus else gap
        # (optax's composition: the Polyak step of the direction -scaling * g)
        eta = min(gap / sum(np.sum((scaling * x) ** 2) for x in g.values()), max_lr)
        return {n: w[n] - eta * scaling * g[n] for n in w}
    return step


TARGET = {n: 0.5 * v + 0.3 for n, v in PARAMS.items()}


def _quadratic(w):
    return sum(fnp.sum((w[n] - TARGET[n]) ** 2) for n in sorted(w))


@pytest.mark.parametrize("name", ["sign_sgd", "signum"])
def test_sign_sgd_and_signum_step_by_step(name):
    make = {"sign_sgd": lambda: optim.sign_sgd(0.01), "signum": lambda: optim.signum(0.01)}[name]
    assert_follows_its_rule(name, make, lambda: ref_signum(0.01, None if name == "sign_sgd"
                                                           else 0.9))
    optax = _float64_optax()
    theirs, (ours, _) = getattr(optax, name)(0.01), _eager_run(make())
    params, state = PARAMS, theirs.init(PARAMS)
    for k in range(len(ours)):
        updates, state = theirs.update(grads_at(k), state, params)
        params = optax.apply_updates(params, updates)
    for n in PARAMS:
        np.testing.assert_allclose(ours[-1][n], np.asarray(params[n]), rtol=1e-13)


@pytest.mark.parametrize("kw", [{}, {"scaling": 0.5, "f_min": 0.1, "max_learning_rate": 0.3,
                                    "variant": "sps+"}])
def test_polyak_sgd_step_by_step_and_in_fit(kw):
    opt = optim.polyak_sgd(**kw)
    ref = ref_polyak(kw.get("scaling", 1.0), kw.get("f_min", 0.0),
                     kw.get("max_learning_rate", 1.0), "variant" in kw)
    w, want, state = PARAMS, PARAMS, opt.init(PARAMS)
    for k in range(6):
        value, grad = fg.value_and_grad(_quadratic)(w)
        updates, state = opt.update(grad, state, w, value=value)
        w, want = optim.apply_updates(w, updates), ref(want)
        for n in w:
            np.testing.assert_allclose(w[n], want[n], rtol=1e-12, err_msg=f"step {k}")
    if not kw:
        res = optim.fit(_quadratic, PARAMS, opt, steps=6)     # fit passes value= itself
        for n in w:
            np.testing.assert_allclose(res.params[n], w[n], rtol=1e-12)
    optax = _float64_optax()
    import jax
    theirs, p = optax.polyak_sgd(**kw), PARAMS
    s = theirs.init(p)
    for _ in range(6):
        value, grad = jax.value_and_grad(
            lambda q: sum(jax.numpy.sum((q[n] - TARGET[n]) ** 2) for n in sorted(q)))(p)
        updates, s = theirs.update(grad, s, p, value=value)
        p = optax.apply_updates(p, updates)
    for n in w:
        np.testing.assert_allclose(w[n], np.asarray(p[n]), rtol=1e-12)


def test_adaptive_and_per_example_clipping_against_numpy_and_optax():
    rng = np.random.default_rng(5)
    p = {"k": rng.normal(size=(3, 4)), "c": rng.normal(size=(2, 2, 3, 4)), "v": rng.normal(size=4)}
    u = {n: rng.normal(size=x.shape) * np.array([0.01, 10.0, 0.5, 3.0]) for n, x in p.items()}
    got, _ = optim.adaptive_grad_clip(0.2).update(u, (), p)
    for n, axes in (("k", (0,)), ("c", (0, 1, 2)), ("v", None)):
        un = np.sqrt(np.sum(u[n] ** 2, axis=axes, keepdims=True))
        most = 0.2 * np.maximum(np.sqrt(np.sum(p[n] ** 2, axis=axes, keepdims=True)), 1e-3)
        np.testing.assert_allclose(got[n], np.where(un < most, u[n], u[n] * most / un),
                                   rtol=1e-14, err_msg=n)
    per = {"a": rng.normal(size=(5, 3)), "b": rng.normal(size=(5, 2, 2)) * 3}
    norms = np.sqrt(np.sum(per["a"] ** 2, axis=1) + np.sum(per["b"] ** 2, axis=(1, 2)))
    factor = np.minimum(1.0, 2.0 / norms)
    sums, clipped = optim.per_example_global_norm_clip(per, 2.0)
    np.testing.assert_allclose(sums["a"], factor @ per["a"], rtol=1e-14)
    np.testing.assert_allclose(sums["b"], np.tensordot(factor, per["b"], axes=1), rtol=1e-14)
    assert int(clipped) == int(np.sum(norms > 2.0)) > 0
    layer, counts = optim.per_example_layer_norm_clip(per, 2.0, uniform=False)
    bound_b = 2.0 * np.sqrt(4 / 7)
    nb = np.sqrt(np.sum(per["b"] ** 2, axis=(1, 2)))
    np.testing.assert_allclose(layer["b"], np.tensordot(np.minimum(1, bound_b / nb), per["b"],
                                                        axes=1), rtol=1e-14)
    assert int(counts["b"]) == int(np.sum(nb > bound_b))
    with pytest.raises(ValueError, match="per-example"):
        optim.per_example_global_norm_clip({"a": np.ones(3), "b": np.ones((2, 3))}, 1.0)
    optax = _float64_optax()
    theirs, _ = optax.adaptive_grad_clip(0.2).update(u, optax.EmptyState(), p)
    t_sums, t_clipped = optax.per_example_global_norm_clip(per, 2.0)
    t_layer, _ = optax.per_example_layer_norm_clip(per, 2.0, uniform=False)
    for n in u:
        np.testing.assert_allclose(got[n], np.asarray(theirs[n]), rtol=1e-12)
    for n in per:
        np.testing.assert_allclose(sums[n], np.asarray(t_sums[n]), rtol=1e-12)
        np.testing.assert_allclose(layer[n], np.asarray(t_layer[n]), rtol=1e-12)
    assert int(t_clipped) == int(clipped)


# ---- step-conditional wrappers -----------------------------------------------------------------

def ref_every_third_doubled_on_even_steps():
    acc = {}

    def step(g, p, k):
        if k % 3 == 0:
            acc.clear()
        for n in g:
            acc[n] = acc.get(n, 0.0) + g[n] * (2.0 if k % 2 == 0 else 1.0)
        return {n: p[n] - 0.1 * acc[n] if k % 3 == 2 else p[n] for n in g}
    return step


def ref_adam_from_step_4():
    from test_optim import ref_adam
    adam = ref_adam(0.01)
    return lambda g, p, k: p if k < 4 else adam(g, p, k - 4)


STEPWISE = {
    "apply_every-conditionally_transform": (
        lambda: optim.chain(optim.conditionally_transform(optim.scale(2.0), lambda s: s % 2 == 0),
                            optim.apply_every(3), optim.scale(-0.1)),
        ref_every_third_doubled_on_even_steps,
        lambda o: o.chain(o.conditionally_transform(o.scale(2.0), lambda s: s % 2 == 0),
                          o.apply_every(3), o.scale(-0.1))),
    "conditionally_mask": (
        lambda: optim.conditionally_mask(optim.adam(0.01), lambda s: s >= 4),
        ref_adam_from_step_4, lambda o: o.conditionally_mask(o.adam(0.01), lambda s: s >= 4)),
}


@pytest.mark.parametrize("name", sorted(STEPWISE))
def test_step_conditional_wrappers_step_by_step_compiled_and_against_optax(name):
    make, make_ref, theirs = STEPWISE[name]
    assert_follows_its_rule(name, make, make_ref)
    want, _ = _eager_run(make())
    if name == "conditionally_mask":                 # (one compiled loop is enough)
        got, _ = scanned_run(make())
        for n in PARAMS:
            np.testing.assert_allclose(got[n], want[-1][n], rtol=1e-13)
    optax = _float64_optax()
    opt = theirs(optax)
    params, state = PARAMS, opt.init(PARAMS)
    for k in range(len(want)):
        updates, state = opt.update(grads_at(k), state, params)
        params = optax.apply_updates(params, updates)
        for n in PARAMS:
            np.testing.assert_allclose(want[k][n], np.asarray(params[n]), rtol=1e-12)


def test_incremental_and_periodic_updates():
    new, old = {"a": np.ones(3), "b": np.full(2, 4.0)}, {"a": np.zeros(3), "b": np.ones(2)}
    got = optim.incremental_update(new, old, 0.25)
    np.testing.assert_allclose(got["b"], 0.25 * 4.0 + 0.75)
    for step in range(4):
        kept = optim.periodic_update(new, old, np.int32(step), 2)
        np.testing.assert_array_equal(kept["a"], new["a"] if step % 2 == 0 else old["a"])
