"""fg.saved_residuals: what the backward pass keeps (shape, dtype, bytes, origin and user
line), through loops and checkpoints; fg.checkpoint(residual_dtype=...) storing it narrower."""
import inspect

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import VjpPlan
from conftest import rand

X = rand((5,), seed=1)


def line_of(fn, text):
    """The line number of the first line of fn's source containing `text`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def sin_exp(x):
    return fnp.sum(fnp.sin(x) * fnp.exp(x))


def test_sin_times_exp_keeps_sin_exp_and_cos():
    """d/dx sum(sin x * exp x) = cos x * exp x + sin x * exp x: the forward pass keeps the
    two factors and computes cos x there too (it needs no cotangent)."""
    res = fg.saved_residuals(sin_exp, X)
    assert sorted(r.primitive for r in res) == ["cos", "exp", "sin"]
    line = line_of(sin_exp, "return")
    for r in res:
        assert (r.shape, r.dtype, r.nbytes, r.kind) == ((5,), np.float64, 40, "computed")
        assert (r.src.filename, r.src.lineno, r.src.function) == (__file__, line, "sin_exp")
        assert r.loop is None and r.label is None
    assert res.total_bytes == 120
    text = str(res)
    assert text.startswith("saved for the backward pass of sin_exp: 3 residuals")
    assert f"f64[5]  40 B  exp at test_saved_residuals.py:{line} (sin_exp)" in text
    assert text.endswith("total: 120 bytes")


@pytest.mark.parametrize("f,args", [
    (sin_exp, (X,)),
    (lambda w, x: fnp.sum(fnp.tanh(x @ w) ** 2), (rand((5, 3)), rand((4, 5)))),
    (lambda x: fnp.sum(fg.fori_loop(0, 4, lambda i, c: fnp.sin(c) * c, x)), (X,)),
])
def test_the_list_is_what_vjp_stores(f, args):
    plan = VjpPlan(f, args, False)
    stored = plan.fwd.outs[plan.n_out:]
    res = fg.saved_residuals(f, *args)
    assert [(r.shape, r.dtype) for r in res] == [(v.aval.shape, v.aval.dtype) for v in stored]


def test_arguments_are_named_and_closed_over_arrays_are_not_residuals():
    C = rand((5,), seed=2)
    res = fg.saved_residuals(lambda p: fnp.sum(p["w"] * p["w"] * C), {"w": X})
    assert [(r.kind, r.label) for r in res] == [("argument", "p['w']")]
    assert "argument p['w']" in str(res)
    assert fg.saved_residuals(lambda x: fnp.sum(x * C), X) == []   # C lives in the program


def test_argnums_picks_what_is_differentiated():
    """d/dw of sum(x @ w) needs x only; d/dx needs w only."""
    w, x = rand((5, 3)), rand((4, 5))
    f = lambda w, x: fnp.sum(x @ w)
    assert [r.label for r in fg.saved_residuals(f, w, x, argnums=0)] == ["x"]
    assert [r.label for r in fg.saved_residuals(f, w, x, argnums=1)] == ["w"]
    assert sorted(r.label for r in fg.saved_residuals(f, w, x)) == ["w", "x"]
    n = fg.saved_residuals(lambda x, k: fnp.sum(x ** k), X, 3, argnums=0)   # an int argument
    assert len(n) >= 1


def test_has_aux_outputs_get_no_cotangent():
    f = lambda x: (fnp.sum(x * x), fnp.exp(x))
    assert [r.label for r in fg.saved_residuals(f, X, has_aux=True)] == ["x"]
    assert "exp" in [r.primitive for r in fg.saved_residuals(f, X)]


def looped(x):
    c = fg.fori_loop(0, 4, lambda i, c: fnp.sin(c) * 2.0, x)
    return fnp.sum(c)


def scanned(x):
    c, ys = fg.scan(lambda c, xi: (fnp.tanh(c) * xi, fnp.cos(c)), x, np.ones((6, 5)))
    return fnp.sum(ys) + fnp.sum(c)


def test_loop_residuals_are_stacked_with_the_body_and_loop_lines():
    (r,) = fg.saved_residuals(looped, X)
    assert (r.shape, r.nbytes, r.primitive, r.loop) == ((4, 5), 160, "cos", "scan")
    assert r.src.lineno == r.loop_src.lineno == line_of(looped, "fori_loop")
    assert r.src.function == "<lambda>" and r.loop_src.function == "looped"
    res = fg.saved_residuals(scanned, X)
    assert {r.shape for r in res} == {(6, 5)} and {r.loop for r in res} == {"scan"}
    assert "sin" in {r.primitive for r in res}            # d cos c = -sin c, stacked
    assert all(r.loop_src.function == "scanned" for r in res)
    assert "out of scan at test_saved_residuals.py:" in str(res)


def test_while_loop_tape_is_listed_per_iteration():
    def f(x):
        c, _ = fg.while_loop(lambda c: c[1] < 3, lambda c: (fnp.sin(c[0]) * 2.0, c[1] + 1),
                             (x, 0))
        return fnp.sum(c)
    res = fg.saved_residuals(f, X)
    assert [r.label for r in res] == ["x"]                # the loop re-runs in backward
    (t,) = res.tapes
    assert (t.kind, t.shape, t.primitive, t.loop) == ("tape", (5,), "cos", "while_loop")
    assert t.src.lineno == line_of(f, "fg.while_loop") and res.total_bytes == 40
    assert "per iteration, on the tape" in str(res)


W1, W2 = rand((5, 5), seed=3) / 2, rand((5, 5), seed=4) / 2
BATCH = rand((8, 5), seed=5)


def layer(h):
    return fnp.tanh(fnp.sin(h @ W1) @ W2)


def chain(block):
    def net(x):
        h = x
        for _ in range(3):
            h = block(h)
        return fnp.sum(h)
    return net


def test_checkpoint_keeps_only_block_inputs():
    plain = fg.saved_residuals(chain(layer), BATCH)
    ckpt = fg.saved_residuals(chain(fg.checkpoint(layer)), BATCH)
    assert len(ckpt) < len(plain) and ckpt.total_bytes < plain.total_bytes
    # each block's input: x and two block outputs
    assert sorted(r.primitive or r.kind for r in ckpt) == ["argument", "checkpoint",
                                                           "checkpoint"]
    assert all(r.shape == (8, 5) for r in ckpt)


def test_float32_residuals_halve_memory_at_float32_accuracy():
    net64, net32 = (chain(fg.checkpoint(layer, residual_dtype=d)) for d in (None, np.float32))
    r64, r32 = fg.saved_residuals(net64, BATCH), fg.saved_residuals(net32, BATCH)
    assert [r.dtype for r in r64] == [np.float64] * len(r64)
    narrowed = [r for r in r32 if r.dtype == np.float32]
    assert len(narrowed) == 3                          # each block's input
    assert r32.total_bytes < r64.total_bytes
    assert sum(r.nbytes for r in narrowed) * 2 == 3 * BATCH.nbytes
    assert fg.value_and_grad(net32)(BATCH)[0] == fg.value_and_grad(net64)(BATCH)[0]
    exact = fg.grad(chain(layer))(BATCH)
    for got in (fg.grad(net32)(BATCH), fg.jit(fg.grad(net32))(BATCH),
                fg.vjp(net32, BATCH)[1](1.0)[0]):
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-6 * np.abs(exact).max())
        assert not np.array_equal(got, exact)          # it did go through float32
    np.testing.assert_array_equal(fg.grad(net64)(BATCH), exact)


def test_float32_residuals_with_a_policy_and_complex_values():
    block = fg.checkpoint(layer, policy=fg.checkpoint_policies.everything_saveable,
                          residual_dtype=np.float32)
    res = fg.saved_residuals(lambda x: fnp.sum(block(x)), BATCH)
    assert {r.dtype for r in res} == {np.dtype(np.float32)}
    z = fg.checkpoint(lambda z: fnp.sin(z) * z, residual_dtype=np.float32)
    zres = fg.saved_residuals(lambda x: fnp.sum(fnp.abs(z(x * (1 + 1j))) ** 2), X)
    assert np.dtype(np.complex64) in {r.dtype for r in zres}
    g = fg.grad(lambda x: fnp.sum(fnp.abs(z(x * (1 + 1j))) ** 2))(X)
    want = fg.grad(lambda x: fnp.sum(fnp.abs(fnp.sin(x * (1 + 1j)) * x * (1 + 1j)) ** 2))(X)
    np.testing.assert_allclose(g, want, rtol=1e-5)


def test_residual_dtype_must_be_a_float_dtype():
    for bad in (np.int32, "nonsense", bool):
        with pytest.raises(TypeError, match="residual_dtype"):
            fg.checkpoint(layer, residual_dtype=bad)
