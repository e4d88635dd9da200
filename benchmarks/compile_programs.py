"""The programs of compile.py: each written for funcgrad and for JAX, with its data and the
reference funcgrad's result is checked against.

Each fg_*/jax_* function returns build(); build() returns run(); run() returns the result (a
pytree). compile.py times build() and two run()s. `load(impl)` imports funcgrad or JAX into
this module (compile.py's child times the imports separately). A program's functions are
defined here or in workloads.py: compile.py's "moved" run shifts their line numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

fg = fnp = jax = jnp = None          # set by load()


def load(impl):
    """Import funcgrad ("fg") or JAX (x64) into this module, and workloads.py."""
    global fg, fnp, jax, jnp
    if impl == "fg":
        import funcgrad as fg
        import funcgrad.numpy as fnp
    else:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
    return _wl()


# ---- data and losses, written once against an array namespace xp ---------------------------

def _wl():
    import workloads
    return workloads


def _xp(name):
    return _wl().ops(name)


def gp_nll(xp):
    def nll(theta, X, y):
        ell, s2 = xp.exp(theta[0]), xp.exp(theta[1])
        d2 = (X[:, None] - X[None, :]) ** 2
        K = s2 * xp.exp(-0.5 * d2 / ell ** 2) + 1e-2 * xp.eye(X.shape[0])
        L = xp.linalg.cholesky(K)
        alpha = xp.linalg.solve(K, y)
        n = X.shape[0]
        return 0.5 * y @ alpha + xp.sum(xp.log(xp.diag(L))) + 0.5 * n * math.log(2 * math.pi)
    return nll


def gp_args():
    rng = np.random.default_rng(2)
    X = np.sort(rng.uniform(0.0, 5.0, 50))
    return np.log(np.array([0.7, 1.3])), X, np.sin(2 * X) + 0.1 * rng.standard_normal(50)


def small_mlp(xp):
    def loss(params, x, y):
        h = xp.tanh(x @ params["W1"] + params["b1"])
        return (h @ params["W2"] + params["b2"] - y) ** 2
    return loss


def small_mlp_args():
    rng = np.random.default_rng(3)
    params = {"W1": rng.standard_normal((16, 32)) / 4, "b1": np.zeros(32),
              "W2": rng.standard_normal(32) / 6, "b2": np.float64(0.1)}
    return params, rng.standard_normal((64, 16)), rng.standard_normal(64)


def lotka_volterra(xp):
    def f(y, t, a, b, c, d):
        return xp.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])
    return f


LV = dict(y0=np.array([10.0, 5.0]), p=np.array([1.5, 1.0, 3.0, 1.0]), ts=np.linspace(0, 10, 21))


def robertson(xp):
    def f(y, t, lk1, lk2, lk3):          # log rate constants: gradients of comparable size
        k1, k2, k3 = xp.exp(lk1), xp.exp(lk2), xp.exp(lk3)
        return xp.stack([-k1 * y[0] + k3 * y[1] * y[2],
                         k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2, k2 * y[1] ** 2])
    return f


ROB = dict(y0=np.array([1.0, 0.0, 0.0]), p=np.log([0.04, 3e7, 1e4]),
           ts=np.array([0.0, 1e-3, 0.1, 1.0, 10.0, 40.0]), w=np.array([1.0, 1e4, 0.0]))


def logistic_data(n=1000, d=20):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    return X, (X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0).astype(np.float64)


ADAM = dict(lr=0.05, steps=2000)


def rosen(xp):
    return lambda x: xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_x0(n=100):
    x0 = np.empty(n)
    x0[::2], x0[1::2] = -1.2, 1.0
    return x0


# -- funcgrad ---------------------------------------------------------------------------------

def fg_grad_of(loss, args, transform=None):
    def build():
        g = fg.jit((transform or fg.grad)(loss))
        run = lambda: g(*args)
        run.lower = lambda: fg.jit((transform or fg.grad)(loss)).lower(*args)
        return run
    return build


def fg_trivial():
    x = np.arange(3.0)
    return fg_grad_of(lambda x: x + 1.0, (x,), transform=lambda f: f)


def fg_workload(key):
    w = _wl().BY_KEY[key]
    return lambda: fg_grad_of(w.loss(_xp("funcgrad")), w.make_args())


def fg_gp():
    return fg_grad_of(gp_nll(fnp), gp_args(), transform=fg.hessian)


def fg_per_example():
    return fg_grad_of(small_mlp(_xp("funcgrad")), small_mlp_args(),
                      transform=lambda f: fg.vmap(fg.grad(f), in_axes=(None, 0, 0)))


def fg_lv():
    f = lotka_volterra(fnp)
    loss = lambda p: fnp.sum(fg.odeint(f, LV["y0"], LV["ts"], *p, rtol=1e-8, atol=1e-8) ** 2)
    return fg_grad_of(loss, (LV["p"],))


def fg_stiff():
    f = robertson(fnp)
    loss = lambda p: fnp.sum(fg.odeint(f, ROB["y0"], ROB["ts"], *p, method="rosenbrock23",
                                       rtol=1e-6, atol=1e-10) @ ROB["w"])
    return fg_grad_of(loss, (ROB["p"],))


def logistic_loss(w, X, y):
    z = X @ w
    return fnp.mean(fnp.logaddexp(0.0, z) - y * z)


def fg_fit():
    X, y = logistic_data()

    def build():
        opt = fg.optim.adam(ADAM["lr"])
        return lambda: fg.optim.fit(logistic_loss, np.zeros(X.shape[1]), opt,
                                    steps=ADAM["steps"], data=(X, y)).params
    return build


def fg_lbfgs():
    f, x0 = rosen(fnp), rosen_x0()

    def build():
        return lambda: _minimized(fg.optimize.minimize(f, x0))
    return build


def _minimized(res):
    if not res.success:
        raise AssertionError(f"minimize did not converge: {res.message}")
    return np.asarray(res.x)


# -- JAX --------------------------------------------------------------------------------------

def jax_grad_of(loss, args, transform=None):
    args = jax.tree_util.tree_map(jnp.asarray, args)

    def build():
        g = jax.jit((transform or jax.grad)(loss))
        return lambda: jax.block_until_ready(g(*args))
    return build


def jax_trivial():
    return jax_grad_of(lambda x: x + 1.0, (np.arange(3.0),), transform=lambda f: f)


def jax_workload(key):
    w = _wl().BY_KEY[key]
    return lambda: jax_grad_of(w.loss(_xp("jax")), w.make_args())


def jax_gp():
    return jax_grad_of(gp_nll(jnp), gp_args(), transform=jax.hessian)


def jax_per_example():
    return jax_grad_of(small_mlp(_xp("jax")), small_mlp_args(),
                       transform=lambda f: jax.vmap(jax.grad(f), in_axes=(None, 0, 0)))


def jax_lv():
    from jax.experimental.ode import odeint
    f, y0, ts = lotka_volterra(jnp), jnp.asarray(LV["y0"]), jnp.asarray(LV["ts"])
    loss = lambda p: jnp.sum(odeint(f, y0, ts, *p, rtol=1e-8, atol=1e-8) ** 2)
    return jax_grad_of(loss, (LV["p"],))


def jax_stiff():
    import diffrax              # JAX itself has no stiff solver; diffrax is what JAX users use
    f = robertson(jnp)
    term = diffrax.ODETerm(lambda t, y, p: f(y, t, *p))

    def loss(p):
        sol = diffrax.diffeqsolve(
            term, diffrax.Kvaerno5(), t0=0.0, t1=40.0, dt0=1e-6, y0=jnp.asarray(ROB["y0"]),
            args=(p[0], p[1], p[2]), saveat=diffrax.SaveAt(ts=jnp.asarray(ROB["ts"])),
            stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-10), max_steps=20_000)
        return jnp.sum(sol.ys @ jnp.asarray(ROB["w"]))
    return jax_grad_of(loss, (ROB["p"],))


def jax_fit():
    X, y = logistic_data()
    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    lr, b1, b2, eps = ADAM["lr"], 0.9, 0.999, 1e-8

    def loss(w):
        z = Xj @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - yj * z)

    def build():
        @jax.jit
        def fit(w):
            def step(c, k):
                w, m, v = c
                value, g = jax.value_and_grad(loss)(w)
                m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
                t = k + 1.0
                w = w - lr * (m / (1 - b1 ** t)) / (jnp.sqrt(v / (1 - b2 ** t)) + eps)
                return (w, m, v), value
            zero = jnp.zeros_like(w)
            (w, _, _), values = jax.lax.scan(step, (w, zero, zero), jnp.arange(ADAM["steps"]))
            return w, values
        w0 = jnp.zeros(X.shape[1])
        return lambda: jax.block_until_ready(fit(w0))[0]
    return build


def jax_lbfgs():
    """optax's L-BFGS in a while_loop (optax's documented recipe), stopping as
    fg.optimize.minimize does: infinity norm of the gradient at most 1e-5 (jax.scipy's
    minimize, BFGS or its experimental L-BFGS, stops early on this problem: line search)."""
    import optax
    import optax.tree_utils as otu
    f, x0 = rosen(jnp), jnp.asarray(rosen_x0())

    def build():
        opt = optax.lbfgs()
        value_and_grad = optax.value_and_grad_from_state(f)

        def step(carry):
            x, state = carry
            value, g = value_and_grad(x, state=state)
            updates, state = opt.update(g, state, x, value=value, grad=g, value_fn=f)
            return optax.apply_updates(x, updates), state

        def going(carry):
            k, g = otu.tree_get(carry[1], "count"), otu.tree_get(carry[1], "grad")
            return (k == 0) | ((k < 15000) & (jnp.max(jnp.abs(g)) > 1e-5))
        run = jax.jit(lambda x: jax.lax.while_loop(going, step, (x, opt.init(x)))[0])
        return lambda: jax.block_until_ready(run(x0))
    return build


# -- references for funcgrad's results --------------------------------------------------------

def ref_interpreted(make_loss, make_args, transform=None):
    def ref():
        f = make_loss()
        return (transform or fg.grad)(f)(*make_args())
    return ref


def ref_per_example():
    loss, (params, X, y) = small_mlp(_xp("funcgrad")), small_mlp_args()
    g = fg.grad(loss)
    rows = [g(params, X[i], y[i]) for i in range(X.shape[0])]
    return {k: np.stack([np.asarray(r[k]) for r in rows]) for k in params}


def _central(value, p, h):
    return np.array([(value(p + h * e) - value(p - h * e)) / (2 * h) for e in np.eye(p.size)])


def ref_lv():
    from scipy.integrate import solve_ivp
    f = lotka_volterra(np)

    def value(p):
        sol = solve_ivp(lambda t, y: f(y, t, *p), (0, 10), LV["y0"], t_eval=LV["ts"],
                        method="DOP853", rtol=1e-13, atol=1e-13)
        return np.sum(sol.y ** 2)
    return _central(value, LV["p"], 1e-6)


def ref_stiff():
    from scipy.integrate import solve_ivp
    f = robertson(np)

    def value(p):
        sol = solve_ivp(lambda t, y: f(y, t, *p), (0, 40), ROB["y0"], t_eval=ROB["ts"],
                        method="Radau", rtol=1e-12, atol=1e-14)
        return np.sum(sol.y.T @ ROB["w"])
    return _central(value, ROB["p"], 1e-5)


def ref_fit():
    """The same Adam steps in NumPy, with the logistic loss's gradient by hand."""
    X, y = logistic_data()
    lr, b1, b2, eps = ADAM["lr"], 0.9, 0.999, 1e-8
    w, m, v = (np.zeros(X.shape[1]) for _ in range(3))
    for k in range(1, ADAM["steps"] + 1):
        g = X.T @ (1.0 / (1.0 + np.exp(-(X @ w))) - y) / X.shape[0]
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1 ** k)) / (np.sqrt(v / (1 - b2 ** k)) + eps)
    return w


def ref_lbfgs():
    import scipy.optimize as so
    res = so.minimize(so.rosen, rosen_x0(), jac=so.rosen_der, method="L-BFGS-B")
    assert res.success and np.max(np.abs(res.x - 1)) < 1e-3
    return np.ones(res.x.size)


@dataclass(frozen=True)
class Program:
    key: str
    title: str
    fg: Callable                   # () -> build
    ref: Callable                  # () -> reference result
    rtol: float                    # funcgrad vs reference: max|a - b| / max|b|
    jax: Optional[Callable] = None
    jax_rtol: float = 1e-8         # JAX vs funcgrad
    in_mean: bool = True           # counted in the geometric mean of the ratios


def _workload_ref(key):
    w = lambda: _wl().BY_KEY[key]
    return ref_interpreted(lambda: w().loss(_xp("funcgrad")), lambda: w().make_args())


PROGRAMS = [
    Program("trivial", "fg.jit(lambda x: x + 1.0), float64[3]: start-up floor", fg_trivial,
            lambda: np.arange(3.0) + 1, 0, jax_trivial, 0, in_mean=False),
    Program("mlp", "MLP 64-128-10 tanh, softmax xent, batch 256, jit(grad) (= W4)",
            fg_workload("W4"), _workload_ref("W4"), 1e-12, jax_workload("W4"), 1e-10),
    Program("gp_hessian", "GP neg. log marginal likelihood, n=50, jit(hessian) in 2 hyperparams",
            fg_gp, ref_interpreted(lambda: gp_nll(fnp), gp_args, lambda f: fg.hessian(f)),
            1e-10, jax_gp, 1e-8),
    Program("per_example", "per-example grads, MLP 16-32-1, batch 64, jit(vmap(grad))",
            fg_per_example, ref_per_example, 1e-12, jax_per_example, 1e-10),
    Program("lv_odeint", "Lotka-Volterra: grad of sum(y^2) w.r.t. 4 rates via fg.odeint",
            fg_lv, ref_lv, 1e-5, jax_lv, 1e-5),
    Program("fit_adam", "logistic regression n=1000 d=20, 2000 Adam steps, fg.optim.fit",
            fg_fit, ref_fit, 1e-9, jax_fit, 1e-9),
    Program("W1", "W1 grad sum(sin(x)exp(-x^2)+log1p(x^2)), n=10^6", fg_workload("W1"),
            _workload_ref("W1"), 1e-12, jax_workload("W1"), 1e-12),
    Program("W2", "W2 grad Rosenbrock, N=10^5", fg_workload("W2"), _workload_ref("W2"),
            1e-12, jax_workload("W2"), 1e-12),
    Program("W3", "W3 grad Rosenbrock, N=3", fg_workload("W3"), _workload_ref("W3"), 1e-12,
            jax_workload("W3"), 1e-12),
    Program("lbfgs", "L-BFGS to convergence, Rosenbrock N=100, fg.optimize.minimize",
            fg_lbfgs, ref_lbfgs, 1e-4, jax_lbfgs, 1e-3),
    Program("stiff_ode", "Robertson (stiff), grad w.r.t. 3 log-rates, odeint rosenbrock23",
            fg_stiff, ref_stiff, 1e-3, jax_stiff, 1e-3),
]
BY_KEY = {p.key: p for p in PROGRAMS}
