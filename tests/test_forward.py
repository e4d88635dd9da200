"""Forward mode (jvp, linearize), Jacobians, Hessians, stop_gradient and custom_vjp."""
import numpy as np
import pytest
import scipy.special

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads, rand


def rosen(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_hessian(x):
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i, i + 1] = H[i + 1, i] = -400 * x[i]
        H[i + 1, i + 1] += 200
    return H


def test_jvp_and_linearize_match_closed_forms():
    x, t = rand((4,)), rand((4,), seed=1)
    y, ty = fg.jvp(lambda x: fnp.sin(x) * x, (x,), (t,))
    np.testing.assert_allclose(y, np.sin(x) * x)
    np.testing.assert_allclose(ty, (np.cos(x) * x + np.sin(x)) * t)
    out, f_jvp = fg.linearize(fnp.exp, x)
    np.testing.assert_allclose(f_jvp(t), np.exp(x) * t)
    np.testing.assert_allclose(f_jvp(2 * t), 2 * np.exp(x) * t)


def test_jvp_pytrees_dtypes_and_errors():
    p = {"w": rand((3,), dtype=np.float32), "b": np.float32(0.5)}
    out, tan = fg.jvp(lambda p: fnp.sum(p["w"] * p["b"]), (p,), ({"w": np.ones(3), "b": 1.0},))
    assert tan.dtype == np.float32
    np.testing.assert_allclose(tan, 0.5 * 3 + p["w"].sum(), rtol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        fg.jvp(fnp.sin, (np.ones(3),), (np.ones(2),))


def test_jacobians_agree_and_have_numpy_layout():
    A = rand((2, 3), seed=2)
    f = lambda x, y: fnp.tanh(A @ x) * y
    x, y = rand((3,), seed=3), rand((2,), seed=4)
    for jac in (fg.jacfwd, fg.jacrev):
        jx, jy = jac(f, (0, 1))(x, y)
        assert jx.shape == (2, 3) and jy.shape == (2, 2)
        sech2 = 1 - np.tanh(A @ x) ** 2
        np.testing.assert_allclose(jx, (sech2 * y)[:, None] * A, rtol=1e-12)
        np.testing.assert_allclose(jy, np.diag(np.tanh(A @ x)), rtol=1e-12)
    tree = fg.jacrev(lambda p: {"a": p["w"] * 2, "s": fnp.sum(p["w"])})({"w": x})
    assert tree["a"]["w"].shape == (3, 3) and tree["s"]["w"].shape == (3,)


def test_hessians_closed_forms():
    x = rand((5,), seed=5)
    np.testing.assert_allclose(fg.hessian(rosen)(x), rosen_hessian(x), rtol=1e-12)
    z = rand((4,), seed=6)
    p = np.exp(z - scipy.special.logsumexp(z))
    np.testing.assert_allclose(fg.hessian(fnp.logsumexp)(z), np.diag(p) - np.outer(p, p),
                               atol=1e-14)
    v = rand((5,), seed=7)
    np.testing.assert_allclose(fg.hvp(rosen, (x,), (v,)), rosen_hessian(x) @ v, rtol=1e-12)
    # third derivative of a scalar function, by composition
    d3 = fg.grad(fg.grad(fg.grad(lambda t: fnp.sin(t) * t)))
    assert np.isclose(d3(0.7), -3 * np.sin(0.7) - 0.7 * np.cos(0.7))


def test_mlp_hessian_matches_finite_differences_of_gradient():
    rng = np.random.default_rng(8)
    X, labels = rng.standard_normal((6, 3)), np.array([0, 1, 1, 0, 1, 0])

    def loss(w):
        logits = fnp.tanh(X @ w[:6].reshape(3, 2)) @ w[6:].reshape(2, 2)
        return -fnp.mean((logits - fnp.logsumexp(logits, axis=1, keepdims=True))[np.arange(6), labels])
    w = rng.standard_normal(10) * 0.5
    H = fg.hessian(loss)(w)
    g = fg.grad(loss)
    eps = 1e-6
    fd = np.stack([(g(w + eps * e) - g(w - eps * e)) / (2 * eps) for e in np.eye(10)], axis=1)
    np.testing.assert_allclose(H, fd, atol=1e-7)
    np.testing.assert_allclose(H, H.T, atol=1e-12)


def test_jitted_hessian():
    # (a jitted Hessian unrolls one tangent program per input; keep n small in tests)
    x = rand((3,), seed=13)
    np.testing.assert_allclose(fg.jit(fg.hessian(rosen))(x), rosen_hessian(x), rtol=1e-12)


def test_compositions_agree():
    f = lambda x: fnp.sum(fnp.exp(-x ** 2) * fnp.cos(3 * x))
    x, v = rand((3,), seed=9), rand((3,), seed=10)
    g = fg.grad(f)(x)
    np.testing.assert_allclose(fg.jit(fg.grad(f))(x), g, rtol=1e-13)
    np.testing.assert_allclose(fg.grad(fg.jit(f))(x), g, rtol=1e-13)
    np.testing.assert_allclose(fg.jvp(f, (x,), (v,))[1], g @ v, rtol=1e-12)
    np.testing.assert_allclose(fg.jvp(fg.grad(f), (x,), (v,))[1],
                               fg.grad(lambda x: fg.grad(f)(x) @ v)(x), rtol=1e-12)
    check_grads(f, (x,), order=3)


def test_stop_gradient_every_mode_and_order():
    f = lambda x: fnp.sum(x ** 2 * fg.stop_gradient(fnp.sin(x)))
    x = rand((3,), seed=11)
    expected = 2 * x * np.sin(x)
    np.testing.assert_allclose(fg.grad(f)(x), expected)
    np.testing.assert_allclose(fg.jit(fg.grad(f))(x), expected)
    np.testing.assert_allclose(fg.jvp(f, (x,), (np.ones(3),))[1], expected.sum())
    np.testing.assert_allclose(fg.hessian(f)(x), np.diag(2 * np.sin(x)), atol=1e-14)
    assert fg.grad(lambda x: fg.stop_gradient(x) * 0 + 1.0)(2.0) == 0.0
    tree = fg.stop_gradient({"a": 1.0, "b": np.ones(2)})
    assert tree["a"] == 1.0


@fg.custom_vjp
def log1pexp(x):
    return fnp.log1p(fnp.exp(x))


log1pexp.defvjp(lambda x: (log1pexp(x), x), lambda x, g: (g / (1 + fnp.exp(-x)),))


def test_custom_vjp_stable_log1pexp():
    big = np.array([1000.0, -1000.0, 0.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = fg.grad(lambda x: fnp.sum(fnp.log1p(fnp.exp(x))))(big)
    assert naive[0] == 0.0     # exp overflowed: the true 1.0 is lost (0 under the strong-zero
    #                            rule, NaN without it); the custom rule below gets it right
    g = fg.grad(lambda x: fnp.sum(log1pexp(x)))(big)
    np.testing.assert_allclose(g, [1.0, 0.0, 0.5])
    np.testing.assert_allclose(fg.jit(fg.grad(lambda x: fnp.sum(log1pexp(x))))(big), g)
    # second order goes through bwd, which is written with funcgrad operations
    x = 0.3
    assert np.isclose(fg.grad(fg.grad(log1pexp))(x), np.exp(-x) / (1 + np.exp(-x)) ** 2)
    assert np.isclose(fg.jvp(log1pexp, (x,), (1.0,))[1], 1 / (1 + np.exp(-x)))


def test_custom_vjp_gradient_clipping_and_nondiff_args():
    clip = fg.custom_vjp(lambda x, c: x, nondiff_argnums=(1,))
    clip.defvjp(lambda x, c: (x, None), lambda c, res, g: (fnp.clip(g, -c, c),))
    g = fg.grad(lambda x: fnp.sum(clip(x, 1.5) * np.array([5.0, -0.5])))(np.ones(2))
    np.testing.assert_allclose(g, [1.5, -0.5])
    np.testing.assert_allclose(fg.jit(fg.grad(lambda x: fnp.sum(clip(x, 1.5) * 5.0)))(np.ones(2)), [1.5, 1.5])


def test_custom_vjp_around_an_opaque_numpy_callback():
    @fg.custom_vjp
    def erf(x):
        return fg.pure_callback(scipy.special.erf, x, x)
    erf.defvjp(lambda x: (erf(x), x), lambda x, g: (g * 2 / np.sqrt(np.pi) * fnp.exp(-x ** 2),))
    x = rand((3,), seed=12)
    expected = 2 / np.sqrt(np.pi) * np.exp(-x ** 2)
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(erf(x)))(x), expected, rtol=1e-12)
    np.testing.assert_allclose(fg.jit(fg.grad(lambda x: fnp.sum(erf(x))))(x), expected, rtol=1e-12)
    check_grads(erf, (x,), order=2)


def test_custom_vjp_errors():
    f = fg.custom_vjp(lambda x: x * 2)
    with pytest.raises(TypeError, match="defvjp"):
        fg.grad(f)(1.0)
    f.defvjp(lambda x: (x * 2, None), lambda res, g: g * 2)
    with pytest.raises(TypeError, match="tuple"):
        fg.grad(f)(1.0)


custom_softplus = fg.custom_jvp(lambda x: fnp.log1p(fnp.exp(x)))
custom_softplus.defjvp(lambda p, t: (custom_softplus(p[0]), t[0] / (1 + fnp.exp(-p[0]))))


def test_custom_jvp_in_every_mode():
    x = np.array([0.3, -1.2, 1000.0])
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(custom_softplus(x)))(x), sig)
    np.testing.assert_allclose(fg.jvp(custom_softplus, (x,), (np.ones(3),))[1], sig)
    np.testing.assert_allclose(fg.jit(fg.grad(lambda x: fnp.sum(custom_softplus(x))))(x), sig)
    np.testing.assert_allclose(fg.vmap(fg.grad(custom_softplus))(x), sig)
    assert np.isclose(fg.grad(fg.grad(custom_softplus))(0.3), sig[0] * (1 - sig[0]))


def _chain(block, x, depth=6):
    for _ in range(depth):
        x = block(x)
    return fnp.sum(x)


def _block(x):
    return fnp.tanh(fnp.sin(x) * fnp.cos(x) + x * 0.5)


def test_checkpoint_lowers_peak_memory_and_keeps_the_gradient():
    import tracemalloc
    from funcgrad.tiering import policy
    old, policy.threshold = policy.threshold, 0          # measure the interpreter's arrays
    try:
        x = rand((200_000,), seed=14)
        peaks, grads = [], []
        for block in (_block, fg.checkpoint(_block)):
            g = fg.grad(lambda x: _chain(block, x, depth=10))
            g(x)
            tracemalloc.start()
            grads.append(g(x))
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
    finally:
        policy.threshold = old
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-13)
    assert peaks[1] < 0.7 * peaks[0], peaks


def test_checkpoint_under_jit_grad_of_grad_and_vmap():
    block = fg.checkpoint(_block)
    x = rand((4,), seed=15)
    plain = lambda x: _chain(_block, x, 2)
    ckpt = lambda x: _chain(block, x, 2)
    np.testing.assert_allclose(fg.jit(fg.grad(ckpt))(x), fg.grad(plain)(x), rtol=1e-12)
    np.testing.assert_allclose(fg.hessian(ckpt)(x), fg.hessian(plain)(x), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(fg.vmap(fg.grad(lambda v: _chain(block, v, 2)))(x[:, None] * np.ones(2)),
                               fg.vmap(fg.grad(lambda v: _chain(_block, v, 2)))(x[:, None] * np.ones(2)),
                               rtol=1e-12)


def test_jacobians_of_empty_outputs_keyword_arguments_and_argument_names():
    assert fg.jacrev(lambda x: x[:0])(np.ones(3)).shape == (0, 3)
    assert fg.jacfwd(lambda x: x.T)(np.ones((0, 2))).shape == (2, 0, 0, 2)
    jr, jf = (j(lambda x: (x, fnp.argmax(x)))(np.ones(3)) for j in (fg.jacrev, fg.jacfwd))
    assert jr[1].dtype == jf[1].dtype == np.float64 and jr[1].shape == (3,)
    f = lambda x, scale=1.0: fnp.sin(x) * scale
    x = np.array([0.3, 0.7])
    for jac in (fg.jacfwd, fg.jacrev):
        np.testing.assert_allclose(jac(f)(x, scale=2.0), np.diag(2 * np.cos(x)))
    assert np.allclose(fg.hessian(lambda x, s=1.0: fnp.sum(x ** 3) * s)(x, s=2.0), np.diag(12 * x))
    block = fg.checkpoint(f)
    assert np.allclose(fg.grad(lambda x: fnp.sum(block(x, scale=3.0)))(x), 3 * np.cos(x))
    with pytest.raises(fg.IntegerInputError, match="argument n"):
        fg.jacfwd(lambda x, n: x * n, argnums=1)(x, np.arange(2))


def test_vmap_rejects_out_of_range_out_axes_and_keyword_arguments():
    with pytest.raises(ValueError, match="out_axes 2 is out of range"):
        fg.vmap(lambda x: x, out_axes=2)(np.ones((3, 2)))
    with pytest.raises(TypeError, match="keyword arguments"):
        fg.vmap(lambda x, s=1.0: x * s)(np.ones((3, 2)), s=2.0)


def test_derived_forward_rules_are_not_cached_for_per_call_params():
    from funcgrad.transforms import jvp as jvp_mod
    block = fg.checkpoint(lambda x: fnp.sin(x) * 2.0)
    for _ in range(3):
        fg.jvp(lambda x: fnp.sum(block(x)), (np.ones(2),), (np.ones(2),))
    size = len(jvp_mod._derived)
    for _ in range(5):
        fg.jvp(lambda x: fnp.sum(block(x)), (np.ones(2),), (np.ones(2),))
    assert len(jvp_mod._derived) == size


def test_differentiating_through_a_pure_callback_is_an_error():
    f = lambda x: fnp.sum(fg.pure_callback(np.sort, x, x))
    x = rand((3,), seed=13)
    for d in (lambda: fg.grad(f)(x), lambda: fg.jvp(f, (x,), (x,)), lambda: fg.jit(fg.grad(f))(x)):
        with pytest.raises(fg.UnsupportedFunctionError, match="custom_vjp.*autograd.Function"):
            d()
    np.testing.assert_allclose(f(x), np.sum(x))           # forward still works
    g = lambda x: fnp.sum(fg.pure_callback(np.sort, x, fg.stop_gradient(x)) + x)
    np.testing.assert_allclose(fg.grad(g)(x), np.ones(3))  # stop_gradient: no error
