"""fg.jit: compiled results equal the reference interpreter (forward and backward), dispatch,
static arguments, pytrees, debugging switches. Each test compiles few kernels (CI budget)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from conftest import rand


def _same(a, b, rtol=1e-12):
    for x, y in zip(fg.tree_util.tree_leaves(a), fg.tree_util.tree_leaves(b)):
        assert np.asarray(x).dtype == np.asarray(y).dtype
        np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-14)


def w1(x):
    return fnp.sum(fnp.sin(x) * fnp.exp(-x ** 2) + fnp.log1p(x ** 2))


def rosen(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def mlp(params, x, labels):
    h = fnp.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    logp = logits - fnp.logsumexp(logits, axis=1, keepdims=True)
    return -fnp.mean(logp[np.arange(labels.shape[0]), labels])


@pytest.mark.parametrize("f, shape", [(w1, (50,)), (rosen, (7,))], ids=["W1", "W2"])
def test_grad_compiled_equals_interpreter(f, shape):
    x = rand(shape, seed=1)
    _same(fg.jit(fg.grad(f))(x), fg.grad(f)(x))
    _same(fg.jit(f)(x), evaluate(f, x))


def test_mlp_pytree_value_and_grad():
    rng = np.random.default_rng(0)
    params = {"W1": rng.standard_normal((5, 7)), "b1": rng.standard_normal(7),
              "W2": rng.standard_normal((7, 3)), "b2": rng.standard_normal(3)}
    x, labels = rng.standard_normal((4, 5)), np.array([0, 2, 1, 2])
    vg = fg.jit(fg.value_and_grad(mlp))
    _same(vg(params, x, labels), fg.value_and_grad(mlp)(params, x, labels))


def test_reductions_axes_and_broadcasting():
    def f(x, y):
        return (fnp.max(x, axis=0) + fnp.sum(x * y, axis=1, keepdims=True)
                - fnp.min(x, axis=(0, 1)) + fnp.mean(y))
    x, y = rand((3, 4), seed=2), rand((4,), seed=3)
    _same(fg.jit(f)(x, y), evaluate(f, x, y))
    g = lambda x, y: fnp.sum(f(x, y) ** 2)
    _same(fg.jit(fg.grad(g, (0, 1)))(x, y), fg.grad(g, (0, 1))(x, y))


def test_zero_dim_float32_and_python_scalars():
    f = lambda x, s: fnp.sum(x * s) * s
    x = rand((3,), dtype=np.float32)
    out = fg.jit(f)(x, 2.0)
    assert isinstance(out, np.float32) and np.isclose(out, evaluate(f, x, 2.0), rtol=1e-6)
    g = fg.jit(fg.grad(lambda s: s ** 3 + fnp.sin(s)))(np.float64(0.5))
    assert isinstance(g, np.float64) and np.isclose(g, 3 * 0.25 + np.cos(0.5))


def test_nan_inf_propagate_and_empty_arrays():
    f = lambda x: (fnp.max(x), fnp.min(x), fnp.sum(x), fnp.exp(x), x / 0.0)
    x = np.array([1.0, np.nan, -np.inf, 2.0])
    with np.errstate(all="ignore"):
        _same(fg.jit(f)(x), evaluate(f, x))
        _same(fg.jit(lambda x: (fnp.sum(x), x * 2))(np.ones(0)), (0.0, np.ones(0)))


def test_non_contiguous_inputs():
    f = lambda x: fnp.sum(fnp.tanh(x) * x[::-1], axis=0)
    base = rand((6, 8), seed=4)
    jf = fg.jit(f)
    for x in (base.T, base[::2, 1::3], np.asfortranarray(base)):
        _same(jf(x), evaluate(f, x))


def test_solve_of_gathered_rows():
    def f(a, idx):
        return fnp.sum(fnp.linalg.solve(a, a[idx]) ** 2)
    a = rand((4, 4), seed=5) + 4 * np.eye(4)
    idx = np.array([3, 0, 0, 1])
    _same(fg.jit(fg.grad(f))(a, idx), fg.grad(f)(a, idx), rtol=1e-10)


def test_static_argnums_and_int_arguments():
    def f(x, n):
        for _ in range(n):
            x = fnp.sin(x)
        return x
    jf = fg.jit(f)
    _same(jf(np.ones(3), 2), np.sin(np.sin(np.ones(3))))
    _same(jf(np.ones(3), 3), np.sin(np.sin(np.sin(np.ones(3)))))
    jg = fg.jit(lambda x, flag: x * 2 if flag else x, static_argnums=1)
    _same(jg(np.ones(2), True), 2 * np.ones(2))


def test_jit_inside_grad_is_traced_through():
    inner = fg.jit(lambda x: fnp.sin(x) * x)
    g = fg.grad(lambda x: fnp.sum(inner(x)))(np.array([0.3, 0.4]))
    x = np.array([0.3, 0.4])
    _same(g, np.cos(x) * x + np.sin(x))


def test_lower_source_is_readable_and_disable_jit():
    low = fg.jit(fg.grad(w1)).lower(np.ones(5))
    src = low.source
    assert "def kernel(a" in src and "for i0 in range(" in src and "_vm.sin_cos_f64(a_i)" in src
    assert "fused loop" in src
    with fg.disable_jit():
        _same(fg.jit(w1)(np.ones(5)), evaluate(w1, np.ones(5)))


def test_dump_env_and_plain_python_mode(tmp_path):
    code = ("import numpy as np, funcgrad as fg, funcgrad.numpy as fnp\n"
            "print(fg.jit(fg.grad(lambda x: fnp.sum(fnp.sin(x))))(np.zeros(2)))\n")
    env = dict(os.environ, FUNCGRAD_DUMP="1", NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "def kernel(" in res.stdout and "[1. 1.]" in res.stdout


def test_fast_path_reuses_compiled_entry():
    jf = fg.jit(fg.grad(rosen))
    x = rand((5,), seed=6)
    first = jf(x)
    assert len(jf._entries) == 1 and len(jf._fast) == 1
    _same(jf(x + 1.0), fg.grad(rosen)(x + 1.0))
    assert len(jf._entries) == 1
    _same(first, fg.grad(rosen)(x))


def test_parallel_equals_serial_up_to_rounding():
    f = lambda x: fnp.sum(fnp.sin(x) * fnp.exp(-x ** 2) + fnp.log1p(x ** 2))
    x = rand((1 << 16,), seed=7)
    pg = fg.jit(fg.grad(f), parallel=True)
    assert "numba.prange" in pg.lower(x).compile(parallel=True).source
    np.testing.assert_allclose(pg(x), fg.grad(f)(x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(fg.jit(f, parallel=True)(x), evaluate(f, x), rtol=1e-12)


def test_integer_and_boolean_reductions_compile():
    f = lambda x: (fnp.sum(x > 0), fnp.mean(x > 0), fnp.sum(fnp.arange(3) * 0 + 1 + 0 * x[:3].astype(int)))
    x = np.array([1.0, -2.0, 3.0, 0.5])
    _same(fg.jit(f)(x), evaluate(f, x))
    _same(fg.jit(fnp.nanmean)(np.array([1.0, np.nan, 3.0])), 2.0)


def test_kernels_are_shared_across_shapes_when_the_source_is_the_same():
    from funcgrad.backend import compile as backend
    jf = fg.jit(fg.grad(w1))
    jf(rand((11,), seed=8))
    n = backend.kernels_made()
    for size in (12, 30):
        x = rand((size,), seed=size)
        _same(jf(x), fg.grad(w1)(x))
    assert backend.kernels_made() == n          # retraced per shape, compiled once
    assert "a.shape[0]" in jf.lower(np.ones(13)).source


def test_numba_failure_names_the_equation_and_user_line(monkeypatch):
    from funcgrad.backend import lowerings
    monkeypatch.setitem(lowerings.LOWERINGS, "rev", lowerings.Lowering(
        statement=lambda outs, ins, e: [f"{outs[0]} = no_such_function({ins[0]})"]))

    def flipped(x):
        return fnp.flip(x) * 3.0
    with pytest.raises(fg.FuncgradError, match=r"no_such_function.*# rev.*test_jit\.py:\d+.*disable_jit"):
        fg.jit(flipped)(np.arange(4.0))


def test_update_of_a_reshaped_input_does_not_write_into_the_input():
    x = np.arange(6.0)
    out = fg.jit(lambda x: x.reshape(2, 3).at[0, 0].set(100.0))(x)
    assert out[0, 0] == 100.0 and np.array_equal(x, np.arange(6.0))


def test_static_arguments_are_keyed_by_value_not_identity():
    from types import SimpleNamespace
    table = np.array([1.0, 2.0])
    cfg = SimpleNamespace(scale=2.0)
    f = fg.jit(lambda x, t, c: x * t * c.scale, static_argnums=(1, 2))
    x = np.ones(2)
    np.testing.assert_allclose(f(x, table, cfg), [2.0, 4.0])
    table[0], cfg.scale = 10.0, 3.0              # mutated in place: recompiled, not stale
    np.testing.assert_allclose(f(x, table, cfg), [30.0, 6.0])
    np.testing.assert_allclose(f(x, [1.0, 1.0], cfg), [3.0, 3.0])      # unhashable list


def test_pytree_arguments_take_the_fast_dispatch_and_stay_exact():
    """Calls with pytrees of arrays (an optimizer step's params and state) are dispatched by
    their structure, shapes and dtypes; anything else (a Python int, which is static, another
    dtype or structure) goes the full way and gets its own kernel."""
    from funcgrad.api.entries import tree_key

    def step(p, s):
        return {"w": p["w"] - s["lr"] * p["w"] ** 2}, {"lr": s["lr"] * 0.5, "n": s["n"] + 1}
    f = fg.jit(step)
    p, s = {"w": np.array([1.0, 2.0])}, {"lr": np.float64(0.1), "n": np.int32(0)}
    for _ in range(3):
        p, s = f(p, s)
    assert f._trees and sum(isinstance(k[0], fg.tree_util.PyTreeDef) for k in f._fast) == 1
    w, lr = np.array([1.0, 2.0]), 0.1
    for _ in range(3):
        w, lr = w - lr * w ** 2, lr * 0.5
    np.testing.assert_allclose(p["w"], w, rtol=1e-15)
    assert s["n"] == 3 and s["n"].dtype == np.int32 and s["lr"] == lr
    assert tree_key(*reversed(fg.tree_util.tree_flatten(({"a": 1},)))) is None   # static int
    w32 = np.array([1.0, 2.0], np.float32)
    q, _ = f({"w": w32}, s)                                       # another dtype: a new kernel
    want = w32 - s["lr"] * w32 ** 2                               # (NumPy's promotion)
    assert q["w"].dtype == want.dtype and np.allclose(q["w"], want) and len(f._entries) == 2
    q, t = f(p, {"lr": 0.2, "n": np.int32(5)})                 # Python float: weakly typed
    np.testing.assert_allclose(q["w"], p["w"] - 0.2 * p["w"] ** 2, rtol=1e-15)
    assert t["n"] == 6


def test_jit_inside_a_transform_sees_what_it_closes_over():
    """A jitted function called inside another transform with untraced arguments but closing
    over a traced value (a library solver's objective closing over the parameters being
    differentiated) is traced through: it raised 'not enough arguments' (the captured value
    was an input its kernel was never given)."""
    from funcgrad.testing import check_grads

    def scaled(a):
        return fg.jit(lambda x: x * fnp.sin(a))(np.array([2.0, 3.0]))

    a = np.array([0.3, 0.7])
    check_grads(scaled, (a,), order=2)
    np.testing.assert_allclose(fg.jit(fg.jacrev(scaled))(a), np.diag([2, 3] * np.cos(a)))
    np.testing.assert_allclose(fg.vmap(lambda s: fnp.sum(scaled(s)))(a[:, None]),
                               np.sin(a) * 5.0)

    def argmin_sum(c):           # minimize's objective closes over the traced c: x* = c
        return fnp.sum(fg.optimize.minimize(lambda x: fnp.sum((x - c) ** 2), np.zeros(2)).x)
    np.testing.assert_allclose(fg.grad(argmin_sum)(np.array([1.0, 2.0])), [1.0, 1.0], rtol=1e-6)
