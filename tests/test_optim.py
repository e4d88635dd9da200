"""fg.optim: every optimizer against a hand-written NumPy version of its published update rule,
step by step, eagerly and compiled (fg.jit of a step, the whole loop in fg.fori_loop); against
optax and torch.optim where they are installed; schedules against their closed forms."""
import math
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import optim

STEPS = 12


def grads_at(k):
    """A gradient pytree that changes with the step (signs flip, magnitudes differ)."""
    rng = np.random.default_rng(100 + k)
    return {"w": rng.normal(size=(3, 2)) * (1 + k % 3), "b": rng.normal(size=2) - 0.3}


PARAMS = {"w": np.linspace(-1, 1, 6).reshape(3, 2), "b": np.array([0.5, -2.0])}


# ---- hand-written references: one function per optimizer, state as a dict of dicts ------------

def ref_sgd(lr, momentum=None, nesterov=False):
    t = {k: np.zeros_like(v) for k, v in PARAMS.items()}

    def step(g, p, k):
        out = {}
        for n in g:
            if momentum is None:
                d = g[n]
            else:
                t[n] = g[n] + momentum * t[n]
                d = g[n] + momentum * t[n] if nesterov else t[n]
            out[n] = p[n] - lr * d
        return out
    return step


def ref_adam(lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=None):
    m = {k: np.zeros_like(v) for k, v in PARAMS.items()}
    v = {k: np.zeros_like(v) for k, v in PARAMS.items()}

    def step(g, p, k):
        out = {}
        for n in g:
            m[n] = b1 * m[n] + (1 - b1) * g[n]
            v[n] = b2 * v[n] + (1 - b2) * g[n] ** 2
            m_hat, v_hat = m[n] / (1 - b1 ** (k + 1)), v[n] / (1 - b2 ** (k + 1))
            d = m_hat / (np.sqrt(v_hat) + eps)
            if weight_decay is not None:
                d = d + weight_decay * p[n]
            out[n] = p[n] - lr * d
        return out
    return step


def ref_rmsprop(lr, decay=0.9, eps=1e-8, centered=False, momentum=None):
    nu = {k: np.zeros_like(v) for k, v in PARAMS.items()}
    mu = {k: np.zeros_like(v) for k, v in PARAMS.items()}
    t = {k: np.zeros_like(v) for k, v in PARAMS.items()}

    def step(g, p, k):
        out = {}
        for n in g:
            nu[n] = decay * nu[n] + (1 - decay) * g[n] ** 2
            mu[n] = decay * mu[n] + (1 - decay) * g[n]
            d = g[n] / np.sqrt(nu[n] - (mu[n] ** 2 if centered else 0) + eps) * lr
            if momentum is not None:
                t[n] = d + momentum * t[n]
                d = t[n]
            out[n] = p[n] - d
        return out
    return step


def ref_adagrad(lr, init=0.1, eps=1e-7):
    s = {k: np.full_like(v, init) for k, v in PARAMS.items()}

    def step(g, p, k):
        out = {}
        for n in g:
            s[n] = s[n] + g[n] ** 2
            out[n] = p[n] - lr * g[n] / np.sqrt(s[n] + eps)
        return out
    return step


def ref_lion(lr, b1=0.9, b2=0.99, weight_decay=1e-3):
    m = {k: np.zeros_like(v) for k, v in PARAMS.items()}

    def step(g, p, k):
        out = {}
        for n in g:
            d = np.sign(b1 * m[n] + (1 - b1) * g[n]) + weight_decay * p[n]
            m[n] = b2 * m[n] + (1 - b2) * g[n]
            out[n] = p[n] - lr * d
        return out
    return step


CASES = {
    "sgd": (lambda: optim.sgd(0.1), lambda: ref_sgd(0.1)),
    "sgd-momentum": (lambda: optim.sgd(0.05, momentum=0.9), lambda: ref_sgd(0.05, 0.9)),
    "sgd-nesterov": (lambda: optim.sgd(0.05, momentum=0.8, nesterov=True),
                     lambda: ref_sgd(0.05, 0.8, True)),
    "adam": (lambda: optim.adam(0.01), lambda: ref_adam(0.01)),
    "adam-b": (lambda: optim.adam(0.02, b1=0.5, b2=0.9, eps=1e-3),
               lambda: ref_adam(0.02, 0.5, 0.9, 1e-3)),
    "adamw": (lambda: optim.adamw(0.01, weight_decay=0.1),
              lambda: ref_adam(0.01, weight_decay=0.1)),
    "rmsprop": (lambda: optim.rmsprop(0.01), lambda: ref_rmsprop(0.01)),
    "rmsprop-centered-momentum": (lambda: optim.rmsprop(0.01, centered=True, momentum=0.5),
                                  lambda: ref_rmsprop(0.01, centered=True, momentum=0.5)),
    "adagrad": (lambda: optim.adagrad(0.3), lambda: ref_adagrad(0.3)),
    "lion": (lambda: optim.lion(0.01), lambda: ref_lion(0.01)),
}


def _eager_run(opt, steps=STEPS):
    params, state, trail = PARAMS, opt.init(PARAMS), []
    for k in range(steps):
        updates, state = opt.update(grads_at(k), state, params)
        params = optim.apply_updates(params, updates)
        trail.append(params)
    return trail, state


def assert_follows_its_rule(name, make, make_ref):
    """The optimizer make() against the hand-written reference make_ref(), step by step."""
    trail, _ = _eager_run(make())
    ref, params = make_ref(), PARAMS
    for k, got in enumerate(trail):
        params = ref(grads_at(k), params, k)
        for n in params:
            np.testing.assert_allclose(got[n], params[n], rtol=1e-12, atol=1e-14,
                                       err_msg=f"{name}, step {k}, leaf {n}")


def scanned_run(opt):
    """STEPS updates of opt from PARAMS in one compiled fg.scan: the final params and state."""
    gs = {n: np.stack([grads_at(k)[n] for k in range(STEPS)]) for n in PARAMS}

    @fg.jit
    def run(params, gs):
        def body(carry, g):
            p, s = carry
            updates, s = opt.update(g, s, p)
            return (optim.apply_updates(p, updates), s), None
        (p, s), _ = fg.scan(body, (params, opt.init(params)), gs)
        return p, s
    return run(PARAMS, gs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_the_published_update_rule_step_by_step(name):
    assert_follows_its_rule(name, *CASES[name])


@pytest.mark.parametrize("name", ["sgd-nesterov", "adam", "adamw", "rmsprop-centered-momentum",
                                  "adagrad", "lion"])
def test_compiled_step_and_compiled_loop_equal_eager(name):
    opt = CASES[name][0]()
    want, want_state = _eager_run(opt)

    @fg.jit
    def step(params, state, g):
        updates, state = opt.update(g, state, params)
        return optim.apply_updates(params, updates), state

    params, state = PARAMS, opt.init(PARAMS)
    for k in range(STEPS):
        params, state = step(params, state, grads_at(k))
    for n in PARAMS:
        np.testing.assert_allclose(params[n], want[-1][n], rtol=1e-13)

    p, s = scanned_run(opt)
    for n in PARAMS:
        np.testing.assert_allclose(p[n], want[-1][n], rtol=1e-13)
    assert int(s.count) == STEPS and int(want_state.count) == STEPS


def test_learning_rate_is_readable_and_settable_in_the_state():
    opt = optim.sgd(0.1, momentum=0.9)
    state = opt.init(PARAMS)
    assert float(state.hyperparams["learning_rate"]) == 0.1
    assert float(state.hyperparams["momentum"]) == 0.9
    u1, state = opt.update(grads_at(0), state, PARAMS)
    state.hyperparams["learning_rate"] = 0.0          # PyTorch: param_groups[0]["lr"] = 0
    u2, state = opt.update(grads_at(1), state, PARAMS)
    assert all(np.all(u == 0) for u in u2.values()) and any(np.any(u != 0) for u in u1.values())
    assert float(state.hyperparams["learning_rate"]) == 0.0


def test_schedule_as_learning_rate_is_evaluated_each_step_and_shown_in_the_state():
    sched = optim.exponential_decay(0.1, transition_steps=2, decay_rate=0.5)
    opt = optim.sgd(sched)
    state, params = opt.init(PARAMS), PARAMS
    for k in range(5):
        g = grads_at(k)
        updates, state = opt.update(g, state, params)
        np.testing.assert_allclose(float(state.hyperparams["learning_rate"]), 0.1 * 0.5 ** (k / 2),
                                   rtol=1e-15)
        np.testing.assert_allclose(updates["b"], -0.1 * 0.5 ** (k / 2) * g["b"], rtol=1e-14)


def test_chain_clip_and_weight_decay():
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.add_decayed_weights(0.1),
                      optim.scale(-0.5))
    g = {"w": np.full((3, 2), 3.0), "b": np.zeros(2)}
    updates, _ = opt.update(g, opt.init(PARAMS), PARAMS)
    norm = math.sqrt(6 * 9.0)
    for n in PARAMS:
        np.testing.assert_allclose(updates[n], -0.5 * (g[n] / norm + 0.1 * PARAMS[n]), rtol=1e-14)
    small = {n: v * 1e-3 for n, v in g.items()}       # under the norm: unchanged
    np.testing.assert_allclose(optim.clip_by_global_norm(1.0).update(small, ())[0]["w"], small["w"])
    zero = {n: np.zeros_like(v) for n, v in g.items()}   # zero updates: no 0/0, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert optim.clip_by_global_norm(1.0).update(zero, ())[0]["w"].tolist() == zero["w"].tolist()
    masked = optim.add_decayed_weights(0.1, mask={"w": True, "b": False})
    out, _ = masked.update(g, (), PARAMS)
    np.testing.assert_allclose(out["b"], g["b"])
    np.testing.assert_allclose(out["w"], g["w"] + 0.1 * PARAMS["w"])
    with pytest.raises(ValueError, match="needs the parameters"):
        optim.add_decayed_weights(0.1).update(g, ())


@pytest.mark.parametrize("name, sched, closed", [
    ("constant", optim.constant_schedule(0.3), lambda t: 0.3),
    ("linear", optim.linear_schedule(1.0, 0.1, 10, transition_begin=2),
     lambda t: 1.0 + (0.1 - 1.0) * min(max(t - 2, 0), 10) / 10),
    ("exponential", optim.exponential_decay(1.0, 4, 0.5, transition_begin=1, end_value=0.2),
     lambda t: 1.0 if t <= 1 else max(0.5 ** ((t - 1) / 4), 0.2)),
    ("exponential-staircase", optim.exponential_decay(1.0, 4, 0.5, staircase=True),
     lambda t: 0.5 ** (t // 4)),
    ("cosine", optim.cosine_decay_schedule(2.0, 10, alpha=0.1),
     lambda t: 2.0 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 10) / 10)) + 0.1)),
    ("warmup-cosine", optim.warmup_cosine_decay_schedule(0.0, 1.0, 4, 14, end_value=0.1),
     lambda t: t / 4 if t < 4 else 1.0 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(t - 4, 10) / 10))
                                          + 0.1)),
    ("piecewise", optim.piecewise_constant_schedule(1.0, {3: 0.5, 6: 0.1}),
     lambda t: 1.0 * (0.5 if t >= 3 else 1) * (0.1 if t >= 6 else 1)),
])
def test_schedules_match_their_closed_forms_eager_and_traced(name, sched, closed):
    steps = np.arange(20)
    want = np.array([closed(int(t)) for t in steps])
    eager = np.array([float(sched(int(t))) for t in steps])
    np.testing.assert_allclose(eager, want, rtol=1e-14, atol=1e-15, err_msg=name)
    traced = fg.jit(lambda t: fnp.asarray(sched(t), np.float64) + 0.0 * t)
    got = np.array([float(traced(np.int32(t))) for t in steps])
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15, err_msg=name)


def _float64_optax():
    optax = pytest.importorskip("optax")
    import jax
    jax.config.update("jax_enable_x64", True)
    return optax


@pytest.mark.parametrize("name, theirs", [
    ("adam", lambda o: o.adam(0.01)), ("adamw", lambda o: o.adamw(0.01, weight_decay=0.1)),
    ("rmsprop-centered-momentum", lambda o: o.rmsprop(0.01, centered=True, momentum=0.5)),
    ("adagrad", lambda o: o.adagrad(0.3)), ("lion", lambda o: o.lion(0.01)),
    ("sgd-nesterov", lambda o: o.sgd(0.05, momentum=0.8, nesterov=True))])
def test_agrees_with_optax_where_installed(name, theirs):
    optax = _float64_optax()
    opt = theirs(optax)
    params, state = PARAMS, opt.init(PARAMS)
    for k in range(STEPS):
        updates, state = opt.update(grads_at(k), state, params)
        params = optax.apply_updates(params, updates)
    ours, _ = _eager_run(CASES[name][0]())
    for n in PARAMS:
        np.testing.assert_allclose(ours[-1][n], np.asarray(params[n]), rtol=1e-12)


def test_agrees_with_torch_where_installed():
    torch = pytest.importorskip("torch")
    w = torch.tensor(PARAMS["w"], requires_grad=True)
    b = torch.tensor(PARAMS["b"], requires_grad=True)
    topt = torch.optim.Adam([w, b], lr=0.01)
    for k in range(STEPS):
        g = grads_at(k)
        w.grad, b.grad = torch.tensor(g["w"]), torch.tensor(g["b"])
        topt.step()
    ours, _ = _eager_run(optim.adam(0.01))
    np.testing.assert_allclose(ours[-1]["w"], w.detach().numpy(), rtol=1e-12)


# ---- fit: the whole loop compiled --------------------------------------------------------------

def _logistic_problem(n=40, d=3):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(n, d))
    y = (X @ np.arange(1.0, d + 1) + 0.3 * rng.normal(size=n) > 0).astype(float)
    return X, y


def _logistic_loss(w, X, y):
    z = X @ w["coef"] + w["bias"]
    return fnp.mean(fnp.logaddexp(0.0, z) - y * z)


def _by_hand(opt, steps, X, y, batches=None):
    """The same loop, interpreted step by step in Python."""
    params = {"coef": np.zeros(X.shape[1]), "bias": 0.0}
    state, losses = opt.init(params), []
    for k in range(steps):
        idx = slice(None) if batches is None else batches[k]
        value, grads = fg.value_and_grad(_logistic_loss)(params, X[idx], y[idx])
        updates, state = opt.update(grads, state, params)
        params = optim.apply_updates(params, updates)
        losses.append(value)
    return params, state, np.array(losses)


def test_fit_equals_the_loop_written_by_hand():
    X, y = _logistic_problem()
    opt = optim.adam(0.1)
    p0 = {"coef": np.zeros(3), "bias": 0.0}
    res = optim.fit(_logistic_loss, p0, opt, steps=30, data=(X, y))
    want_p, want_s, want_l = _by_hand(opt, 30, X, y)
    np.testing.assert_allclose(res.losses, want_l, rtol=1e-12)
    np.testing.assert_allclose(res.params["coef"], want_p["coef"], rtol=1e-12)
    assert int(res.opt_state.count) == 30 and res.losses[-1] < 0.5 * res.losses[0]


def test_fit_minibatches_are_epoch_permutations_and_match_the_hand_loop():
    X, y = _logistic_problem(n=23)
    batches = optim.batch_indices(23, 5, steps=9, seed=3)
    assert batches.shape == (9, 5)
    for epoch in (batches[:4], batches[4:8]):        # 4 batches of 5 per epoch: 20 distinct rows
        assert len(set(epoch.ravel().tolist())) == 20
    assert np.array_equal(batches, optim.batch_indices(23, 5, steps=9, seed=3))
    assert not np.array_equal(batches, optim.batch_indices(23, 5, steps=9, seed=4))
    opt = optim.sgd(0.5, momentum=0.5)
    res = optim.fit(_logistic_loss, {"coef": np.zeros(3), "bias": 0.0}, opt, steps=9,
                    data=(X, y), batch_size=5, seed=3)
    want_p, _, want_l = _by_hand(opt, 9, X, y, batches)
    np.testing.assert_allclose(res.losses, want_l, rtol=1e-12)
    np.testing.assert_allclose(res.params["bias"], want_p["bias"], rtol=1e-12)


def test_fit_in_chunks_with_logging_and_continued_state_equals_one_run(capsys):
    X, y = _logistic_problem()
    p0, opt = {"coef": np.zeros(3), "bias": 0.0}, optim.adam(0.05)
    whole = optim.fit(_logistic_loss, p0, opt, steps=20, data=(X, y))
    logged = optim.fit(_logistic_loss, p0, opt, steps=20, data=(X, y), log_every=7)
    assert capsys.readouterr().out.count("fit: step") == 3                 # 7, 14, 20
    np.testing.assert_allclose(logged.losses, whole.losses, rtol=1e-13)
    first = optim.fit(_logistic_loss, p0, opt, steps=12, data=(X, y))
    rest = optim.fit(_logistic_loss, first.params, opt, steps=8, data=(X, y),
                     opt_state=first.opt_state)
    np.testing.assert_allclose(np.concatenate([first.losses, rest.losses]), whole.losses, rtol=1e-13)
    np.testing.assert_allclose(rest.params["coef"], whole.params["coef"], rtol=1e-13)


def test_fit_with_aux_and_bad_data():
    X, y = _logistic_problem()

    def loss_aux(w, X, y):
        value = _logistic_loss(w, X, y)
        return value, {"twice": 2 * value}
    res = optim.fit(loss_aux, {"coef": np.zeros(3), "bias": 0.0}, optim.sgd(0.1), steps=4,
                    data=(X, y), has_aux=True)
    np.testing.assert_allclose(res.aux["twice"], 2 * res.losses, rtol=1e-15)
    assert optim.fit(_logistic_loss, {"coef": np.zeros(3), "bias": 0.0}, optim.sgd(0.1),
                     steps=0, data=(X, y)).losses.shape == (0,)
    with pytest.raises(ValueError, match="same leading"):
        optim.fit(_logistic_loss, {"coef": np.zeros(3), "bias": 0.0}, optim.sgd(0.1), steps=2,
                  data=(X, y[:-1]), batch_size=4)
    with pytest.raises(ValueError, match="batch_size"):
        optim.fit(_logistic_loss, {"coef": np.zeros(3), "bias": 0.0}, optim.sgd(0.1), steps=2,
                  data=(X, y), batch_size=100)


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "rmsprop", "adagrad", "lion"])
def test_inject_hyperparams_of_a_named_optimizer_wraps_once(name):
    """inject_hyperparams(fg.optim.adam) (optax's idiom) wraps the optimizer's own factory,
    not the already injecting one: setting the outer learning rate takes effect."""
    factory = getattr(fg.optim, name)
    opt = fg.optim.inject_hyperparams(factory)(learning_rate=0.1)
    params, grads = np.array([1.0, -2.0]), np.array([0.5, -1.5])
    state = opt.init(params)
    state.hyperparams["learning_rate"] = 0.02
    got = opt.update(grads, state, params)[0]
    plain = factory(0.02)
    want = plain.update(grads, plain.init(params), params)[0]
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_complex_parameters_use_the_squared_modulus():
    """Second moments of complex gradients are |g|^2 (optax's and PyTorch's choice): Adam's
    first step is -lr * g / |g| elementwise, and every optimizer descends a complex loss."""
    opt = fg.optim.adam(0.1)
    step, _ = opt.update(np.array([1j, 3.0 - 4.0j]), opt.init(np.zeros(2, complex)))
    np.testing.assert_allclose(step, -0.1 * np.array([1j, (3 - 4j) / 5]), rtol=1e-6)
    c = np.array([1 + 2j, -0.5 + 1j, 3j])
    loss = lambda z: fnp.sum(fnp.abs(z - c) ** 2)
    for name in ("sgd", "adam", "rmsprop", "adagrad", "lion"):
        opt = getattr(fg.optim, name)(0.05)
        z = np.zeros(3, complex)
        state = opt.init(z)
        for _ in range(300):
            updates, state = opt.update(fg.grad(loss)(z), state, z)
            z = fg.optim.apply_updates(z, updates)
        assert loss(z) < 0.6 * loss(np.zeros(3, complex)), name
    assert fg.optim.global_norm({"a": np.array([3j]), "b": np.array([4.0])}) == pytest.approx(5.0)


def test_fit_with_a_key_gives_each_step_its_own_and_equals_the_hand_loop():
    X = np.random.default_rng(0).normal(size=(32, 2))
    y = X @ np.array([2.0, -1.0])
    loss = lambda w, X, y, k: fnp.mean(   # noqa: E731  (dropout on the weights)
        (X @ (w * fg.random.bernoulli(k, 0.8, w.shape) / 0.8) - y) ** 2)
    key, opt = fg.random.key(5), optim.adam(0.05)
    res = optim.fit(loss, np.zeros(2), opt, steps=40, data=(X, y), batch_size=8, key=key)
    chunked = optim.fit(loss, np.zeros(2), opt, steps=40, data=(X, y), batch_size=8, key=key,
                        log_every=15)
    np.testing.assert_allclose(chunked.losses, res.losses, rtol=1e-13)
    params, state = np.zeros(2), opt.init(np.zeros(2))
    keys, batches = fg.random.split(key, 40), optim.batch_indices(32, 8, 40)
    for k in range(40):
        value, g = fg.value_and_grad(loss)(params, X[batches[k]], y[batches[k]], keys[k])
        updates, state = opt.update(g, state, params)
        params = optim.apply_updates(params, updates)
        np.testing.assert_allclose(res.losses[k], value, rtol=1e-12)
    np.testing.assert_allclose(res.params, params, rtol=1e-12)
    assert len({float(v) for v in res.losses}) > 30       # the masks differ step by step
