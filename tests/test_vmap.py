"""vmap matches a Python loop over the batch: per family, in_axes None / non-zero, out_axes,
nesting, vmap of grad (per-example gradients), jit of vmap, grad of vmap."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.primitives import REGISTRY
from conftest import rand


def loop(f, args, in_axes, out_axis=0):
    """Reference: a Python loop over the batch."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = []
    for b in range(size):
        rows.append(evaluate(f, *[a if ax is None else np.take(a, b, axis=ax)
                                  for a, ax in zip(args, in_axes)]))
    return np.moveaxis(np.stack([np.asarray(r) for r in rows]), 0, out_axis)


CASES = [
    ("elementwise", lambda x, y: fnp.sin(x) * y + fnp.where(x > 0, x, y), [(3,), (3,)], (0, None)),
    ("broadcast", lambda x, y: x[:, None] + y, [(3,), (2,)], (0, 0)),
    ("reductions", lambda x, y: fnp.max(x, axis=0) + fnp.sum(x * y, axis=1)[0] + fnp.prod(x), [(2, 3), (3,)], (1, 0)),
    ("argmax cumsum sort", lambda x, y: fnp.cumsum(x) * fnp.argmax(x) + fnp.sort(x) + y, [(4,), ()], (0, 0)),
    ("reshape transpose flip", lambda x, y: fnp.flip(x.reshape(2, 3).T, 0) * y, [(6,), ()], (0, None)),
    ("concatenate", lambda x, y: fnp.concatenate([x, y, x]), [(2,), (3,)], (0, None)),
    ("matmul", lambda x, y: x @ y, [(2, 3), (3, 4)], (0, None)),
    ("matmul both", lambda x, y: fnp.einsum("ij,jk->ik", x, y), [(2, 3), (3, 4)], (2, 0)),
    ("slices and at", lambda x, y: x[1:].at[0].add(y) * x[:-1], [(4,), ()], (0, 0)),
    ("fancy index", lambda x, y: x[np.array([2, 0, 2])] + y, [(3,), (3,)], (0, None)),
    ("batched index", lambda x, i: x[i] * 2.0, [(4,), ()], (None, 0)),
    ("linalg", lambda a, b: fnp.linalg.solve(a, b) + fnp.linalg.det(a), [(3, 3), (3,)], (0, 0)),
    ("inv slogdet", lambda a, b: fnp.linalg.inv(a) * fnp.linalg.slogdet(a)[1] + b, [(3, 3), ()], (0, None)),
    ("custom_vjp and stop_gradient", lambda x, y: fg.stop_gradient(x) * y, [(3,), (3,)], (0, 0)),
]


@pytest.mark.parametrize("name, f, shapes, in_axes", CASES, ids=[c[0] for c in CASES])
def test_vmap_matches_loop(name, f, shapes, in_axes):
    args = []
    for k, (s, ax) in enumerate(zip(shapes, in_axes)):
        a = rand(s, seed=k)
        if "linalg" in name or "inv" in name:
            a = a + 3 * np.eye(3) if len(s) == 2 else a
        if ax is not None:
            a = np.stack([a + 0.1 * j for j in range(5)], axis=ax)
        args.append(a)
    if name == "batched index":
        args[1] = np.array([3, 0, 1, 1, 2])
    np.testing.assert_allclose(fg.vmap(f, in_axes)(*args), loop(f, args, in_axes), rtol=1e-12)


def test_out_axes_and_nesting():
    x = rand((4, 3, 2), seed=1)
    f = lambda v: fnp.outer(v, v)
    got = fg.vmap(f, in_axes=1, out_axes=2)(x)
    np.testing.assert_allclose(got, loop(f, [x], (1,), out_axis=2), rtol=1e-14)
    nested = fg.vmap(fg.vmap(lambda a, b: fnp.dot(a, b)), in_axes=(0, None))(x, x[0])
    np.testing.assert_allclose(nested, np.einsum("ijk,jk->ij", x, x[0]))


def test_per_example_gradients_jit_and_grad_of_vmap():
    X, y, w = rand((8, 3), seed=2), rand((8,), seed=3), rand((3,), seed=4)
    loss = lambda w, x, y: (fnp.tanh(fnp.dot(x, w)) - y) ** 2
    per_example = fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))(w, X, y)
    ref = np.stack([fg.grad(loss)(w, X[i], y[i]) for i in range(8)])
    np.testing.assert_allclose(per_example, ref, rtol=1e-12)
    jitted = fg.jit(fg.vmap(fg.grad(loss), in_axes=(None, 0, 0)))(w, X, y)
    np.testing.assert_allclose(jitted, ref, rtol=1e-12)
    total = fg.grad(lambda w: fnp.sum(fg.vmap(loss, in_axes=(None, 0, 0))(w, X, y)))(w)
    np.testing.assert_allclose(total, ref.sum(0), rtol=1e-12)


def test_common_primitives_have_batch_rules():
    without = sorted(n for n, p in REGISTRY.items() if p.batch is None)
    # debug_callback runs once per example by design (fg.debug.print under vmap)
    assert without == ["custom_vjp_call", "debug_callback", "pure_callback", "searchsorted"], without


def test_errors():
    with pytest.raises(ValueError, match="batch size"):
        fg.vmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="out of range"):
        fg.vmap(lambda a: a, in_axes=2)(np.ones((2, 3)))
