"""Tiered execution: fresh closures stay interpreted (no compiling), hot functions compile,
rebinding what a function reads invalidates its compiled form."""
import time
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.tiering import policy


@pytest.fixture(autouse=True)
def fresh_policy():
    old = policy.threshold
    policy.reset()
    yield
    policy.threshold = old
    policy.reset()


def _compiled_count():
    from funcgrad.backend import compile as backend
    return backend.kernels_made()


def test_thousand_fresh_closures_never_compile():
    x = np.linspace(0.1, 1.0, 4)
    before = _compiled_count()
    t0 = time.perf_counter()
    total = 0.0
    for k in range(1000):
        scale = 1.0 + k / 1000
        f = lambda x: fnp.sum(fnp.sin(scale * x) ** 2)
        inner = lambda x: fg.grad(f)(x)                           # grad nested two deep
        total += float(fg.grad(lambda x: fnp.sum(inner(x) * x))(x)[0])
        out, f_vjp = fg.vjp(lambda x: fnp.tanh(scale * x), x)
        total += float(f_vjp(np.ones(4))[0][0])
        total += float(fg.jvp(lambda x: fnp.exp(scale * x), (x,), (np.ones(4),))[1][0])
    elapsed = time.perf_counter() - t0
    assert _compiled_count() == before
    assert np.isfinite(total)
    assert elapsed < 30, f"1000 fresh closures took {elapsed:.1f}s"


def test_hot_grad_compiles_and_agrees():
    policy.threshold = 3
    f = lambda x: fnp.sum(fnp.exp(-x ** 2) * fnp.cos(x))
    x = np.linspace(-1, 1, 5)
    interpreted = fg.grad(f)(x)
    for _ in range(4):
        g = fg.grad(f)(x)                   # a new wrapper each time: counted on f itself
    tier = policy.tiers(f)[("grad", 0, False)]
    assert tier.jitted
    np.testing.assert_allclose(g, interpreted, rtol=1e-13)


def test_hot_vjp_compiles_and_agrees():
    policy.threshold = 2
    f = lambda x, y: (fnp.sin(x) * y, fnp.sum(y ** 2))
    x, y = np.linspace(0, 1, 3), np.linspace(1, 2, 3)
    ref = fg.vjp(f, x, y)[1]((np.ones(3), 2.0))
    for _ in range(3):
        out, f_vjp = fg.vjp(f, x, y)
    assert policy.tiers(f)[("vjp", False)].jitted
    for a, b in zip(f_vjp((np.ones(3), 2.0)), ref):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_rebinding_a_global_drops_the_compiled_version():
    policy.threshold = 2
    global SCALE
    SCALE = 2.0
    f = lambda x: fnp.sum(SCALE * x ** 2)
    for _ in range(3):
        assert np.allclose(fg.grad(f)(np.ones(2)), 4.0)
    SCALE = 3.0
    assert np.allclose(fg.grad(f)(np.ones(2)), 6.0)


def compiled_in_background(f, x):
    """fg.grad(f)(x) and f's grad tier, called until its compiled form's kernel (compiled in
    the background, fg.config.jit_background) is ready, or 60 s."""
    from funcgrad.api.background import Pending
    g0 = fg.grad(f)(x)
    tier = policy.tiers(f)[("grad", 0, False)]

    def ready():
        return tier.jitted and not any(isinstance(e, Pending) for j in tier.jitted.values()
                                       for e in j._entries.values())
    deadline = time.time() + 60
    while not ready() and time.time() < deadline:
        time.sleep(0.05)
        fg.grad(f)(x)
    return g0, tier


def test_background_compilation_answers_from_interpreter_meanwhile():
    policy.threshold = 1
    f = lambda x: fnp.sum(fnp.cos(x) * x)
    x = np.linspace(0, 1, 6)
    with fg.config.override(jit_background=True):
        g0, tier = compiled_in_background(f, x)
    assert tier.jitted
    np.testing.assert_allclose(fg.grad(f)(x), g0, rtol=1e-13)


def test_hot_vmap_jvp_and_hessian_compile_and_agree():
    policy.threshold = 2
    f = lambda x: fnp.sum(fnp.sin(x) * x ** 2)
    g = lambda x: fnp.sin(x) * fnp.exp(x)
    x, t = np.linspace(-1, 1, 4), np.ones(4)
    want = (fg.vmap(g)(np.stack([x, 2 * x])), fg.jvp(g, (x,), (t,))[1], fg.hessian(f)(x))
    for _ in range(3):                      # new wrappers each time: counted on f and g
        got = (fg.vmap(g)(np.stack([x, 2 * x])), fg.jvp(g, (x,), (t,))[1], fg.hessian(f)(x))
    kinds = {k[0] for k, tier in policy.tiers(g).items() if tier.jitted}
    assert kinds == {"vmap", "jvp"}
    assert policy.tiers(f)[("hessian", "0")].jitted
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_hot_signatures_share_one_compiled_form_and_its_cache():
    policy.threshold = 2
    f = lambda x: fnp.sum(fnp.sin(x) * x)
    with fg.config.override(jit_max_signatures=2):
        for n in (3, 4, 5):
            for _ in range(3):
                np.testing.assert_allclose(fg.grad(f)(np.full(n, 0.5)),
                                           np.sin(0.5) + 0.5 * np.cos(0.5), rtol=1e-13)
    tier = policy.tiers(f)[("grad", 0, False)]
    assert [sig[0][0] for sig in tier.jitted] == [(4,), (5,)]      # the oldest went
    (compiled,) = {id(j): j for j in tier.jitted.values()}.values()
    assert compiled is tier.compiled and len(compiled._entries) == 2


def test_a_hot_call_runs_the_kernel_through_fg_jits_dispatch_and_a_failing_one_stops():
    """Hot calls go straight to the compiled form's fast dispatch; a kernel that fails where
    the interpreter does not leaves that signature interpreted from then on."""
    policy.threshold = 2
    f = lambda x: fnp.sum(fnp.sin(x) * x)
    x = np.full(3, 0.5)
    for _ in range(3):
        fg.grad(f)(x)
    tier = policy.tiers(f)[("grad", 0, False)]
    (entry,) = tier.compiled._fast.values()
    runs = []
    fast = entry.fast
    entry.fast = lambda args: runs.append(1) or fast(args)
    want = np.sin(0.5) + 0.5 * np.cos(0.5)
    np.testing.assert_allclose(fg.grad(f)(x), want, rtol=1e-13)
    assert runs == [1]

    def broken(args):
        runs.append(2)
        raise RuntimeError("a kernel defect")
    entry.fast = broken
    for _ in range(3):
        np.testing.assert_allclose(fg.grad(f)(x), want, rtol=1e-13)
    assert runs == [1, 2] and not tier.jitted and not tier.compiled._fast


def test_a_transform_of_a_hot_tiered_function_compiles_too():
    """vmap(grad(loss)): tracing the vmap runs the hot grad's generated state guard, which is
    funcgrad's code, not user code the guards fail to reach (it stayed interpreted, with a
    PerformanceWarning, before)."""
    policy.threshold = 2
    loss = lambda w, x: fnp.sum(fnp.tanh(x * w) ** 2)
    w, xs = np.linspace(0.1, 1.0, 3), np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    g = fg.grad(loss)
    for _ in range(5):
        g(w, xs[0])                                   # g is hot: its guard is compiled
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            got = fg.vmap(g, in_axes=(None, 0))(w, xs)
    (tier,) = [t for k, t in policy.tiers(g).items() if k[0] == "vmap"]
    assert tier.jitted
    t = np.tanh(xs * w)
    np.testing.assert_allclose(got, 2 * t * (1 - t ** 2) * xs, rtol=1e-13)


def test_rebinding_what_a_helper_or_callable_object_reads_recompiles():
    policy.threshold = 3

    class Model:
        def __call__(self, x):
            return x * self.w

    m, got = Model(), []
    for i in range(6):
        m.w = float(i)
        got.append(fg.jacfwd(m)(np.array([1.0, 2.0]))[0, 0])
    assert got == [float(i) for i in range(6)]
    f = lambda x: fnp.sum(_helper(x))
    got = []
    for i in range(6):
        globals()["_SCALE"] = float(i)            # a float freed and rebound may reuse its id
        got.append(fg.grad(f)(np.array([1.0, 2.0]))[0])
    assert got == [float(i) for i in range(6)]


_SCALE = 1.0


def _helper(x):
    return x * _SCALE


def test_background_compiling_does_not_disturb_tracing_in_the_main_thread():
    policy.threshold = 2
    def f(x):
        for _ in range(8):
            x = fnp.sin(x) * 1.01
        return fnp.sum(x)
    x = np.linspace(0, 1, 3)
    want = fg.grad(f)(x)
    with fg.config.override(jit_background=True):
        for _ in range(15):              # the trace stack is per thread
            np.testing.assert_allclose(fg.grad(f)(x), want, rtol=1e-12)
            np.testing.assert_allclose(fg.jacfwd(f)(x), want, rtol=1e-12)
    for tier in policy.tiers(f).values():       # let the compile threads finish
        for jitted in tier.jitted.values():
            jitted.wait()


def _long_unrolled(steps):
    """A loss whose traced program has about 4 * steps equations (slices carry tuple params:
    many values to key), with the gradient known: sum of the weights, plus 1 on x[0], x[1]."""
    weights = [np.full(3, 0.001 * k) for k in range(steps)]

    def loss(x):
        total = 0.0
        for w in weights:
            total = total + fnp.sum(x[::-1][::-1] * w)
        return total + fnp.sum(x[:2])
    return loss, sum(weights) + np.array([1.0, 1.0, 0.0])


@pytest.mark.filterwarnings("ignore:the traced program has grown")
def test_keying_a_large_traced_program_never_raises_into_the_call(monkeypatch):
    # Comparing traced programs is not the state budget's business: an 800-step unrolled
    # program raised guards.Unguardable out of the first fg.grad call.
    monkeypatch.setattr(policy, "max_equations", 10 ** 6)
    policy.threshold = 2
    loss, want = _long_unrolled(800)
    for _ in range(2):                   # counted twice, not compiled (minutes)
        np.testing.assert_allclose(fg.grad(loss)(np.ones(3)), want, rtol=1e-12)
    assert policy.tiers(loss)[("grad", 0, False)].never is None


def test_a_program_too_large_to_compile_quickly_stays_interpreted_and_says_so(monkeypatch):
    monkeypatch.setattr(policy, "max_equations", 60)
    policy.threshold = 2
    loss, want = _long_unrolled(40)
    before = _compiled_count()
    with pytest.warns(fg.tiering.PerformanceWarning, match=r"equations .*fg\.jit"):
        for _ in range(5):
            np.testing.assert_allclose(fg.grad(loss)(np.ones(3)), want, rtol=1e-12)
    assert "equations" in policy.explain(loss)[("grad", 0, False)]
    assert _compiled_count() == before


def test_a_long_loop_with_a_large_body_is_not_compiled_behind_the_call(monkeypatch):
    from funcgrad import tiering
    asked = []
    monkeypatch.setattr(tiering, "_loop_compiler", [lambda *a: asked.append(a)])
    loop = fg.make_ir(lambda x: fg.fori_loop(0, 10, lambda i, c: fnp.sin(c) * 2.0, x))(1.0)
    e = loop.eqns[0]
    args = [np.asarray(1.0) if isinstance(v, fg.ir.Var) else v.val for v in e.inputs]
    monkeypatch.setattr(policy, "max_equations", 1)
    assert tiering.compile_loop(e.prim, args, e.params) is None and not asked
    monkeypatch.setattr(policy, "max_equations", 1000)
    tiering.compile_loop(e.prim, args, e.params)
    assert asked


def test_compiling_waits_until_interpreting_has_cost_a_share_of_the_compile():
    """The cost rule (fg.config.tier_payback): a quick function is compiled only after its
    interpreted calls have taken a share of the compile's estimated cost; a slow one at
    jit_threshold calls. explain() says which."""
    from funcgrad.tiering import compile_estimate
    quick = lambda x: fnp.sum(fnp.sin(x) * x)
    x = np.linspace(0.0, 1.0, 5)
    with fg.config.override(jit_threshold=3, tier_payback=0.02):
        for _ in range(5):
            fg.grad(quick)(x)
        tier = policy.tiers(quick)[("grad", 0, False)]
        assert not tier.jitted
        assert "fg.config.tier_payback" in policy.explain(quick)[("grad", 0, False)]
        _, _, _, seconds, size = next(iter(tier.runs.values()))
        assert 0 < seconds < 0.02 * compile_estimate(size)
        calls = 5
        while not tier.jitted and calls < 20000:
            fg.grad(quick)(x)
            calls += 1
        assert tier.jitted and calls > 10

        slow = lambda x: fnp.sum(fnp.sin(x) * fnp.cos(x) * x)
        big = np.linspace(0.0, 1.0, 3_000_000)     # ~0.1 s a call: pays at once
        for _ in range(4):                          # 3 interpreted, the 4th compiled
            got = fg.grad(slow)(big)
        assert policy.tiers(slow)[("grad", 0, False)].jitted
    np.testing.assert_allclose(got[:3], np.cos(2 * big[:3]) * big[:3] + 0.5 * np.sin(2 * big[:3]),
                               rtol=1e-12)
