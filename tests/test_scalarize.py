"""Scalar replacement of small arrays in loops (transforms/scalarize.py): compiled results equal
the interpreter's, and the generated loop bodies no longer allocate small arrays."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.transforms.scalarize import scalarize
from conftest import rand

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def lorenz(p, steps=30, dt=0.01):
    """RK4 on a 3-vector, NumPy style: stack, slices, elementwise arithmetic."""
    def f(s):
        x, y, z = s[0], s[1], s[2]
        return fnp.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])

    def step(i, s):
        k1 = f(s)
        k2 = f(s + 0.5 * dt * k1)
        k3 = f(s + 0.5 * dt * k2)
        k4 = f(s + dt * k3)
        return s + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return fnp.sum(fg.fori_loop(0, steps, step, fnp.array([1.0, 1.0, 1.0])) ** 2)


def moves_and_reductions(x):
    """A (2,2) carry through transpose, reshape, reverse, static scatter, reductions and a
    non-scalarizable matrix product (packed), with an integer carry alongside."""
    def step(c, v):
        m, n = c
        m2 = (m.T * v + fnp.flip(m, 0)).reshape(4)[::-1].reshape(2, 2)
        m2 = m2.at[0, 1].add(fnp.sum(m2, axis=0)[1]).at[1].set(fnp.max(m2, axis=1))
        m2 = m2 + 0.01 * (m2 @ m2) + fnp.prod(m2) * 1e-3
        return (m2 / (1.0 + fnp.sum(m2 ** 2)), n + 1), (m2[0], fnp.min(m2))
    (m, n), (rows, mins) = fg.scan(step, (x.reshape(2, 2), 0), fnp.linspace(0.5, 1.5, 5))
    return fnp.sum(m * m) + fnp.sum(rows * rows[::-1]) + fnp.sum(mins) + n


def small_while(x):
    return fg.while_loop(lambda c: fnp.sum(c * c) < 50.0, lambda c: c * 1.5 + fnp.flip(c), x)


CASES = [(lorenz, (np.array([10.0, 20.0, 8.0 / 3.0]),)),
         (moves_and_reductions, (rand((4,), seed=1),)),
         (lambda x: fnp.sum(small_while(x) ** 3), (np.array([0.3, -0.2, 0.5]),))]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_compiled_equals_interpreter(k):
    f, args = CASES[k]
    v, g = fg.jit(fg.value_and_grad(f))(*args)
    v0, g0 = fg.value_and_grad(f)(*args)
    assert np.isclose(v, v0, rtol=1e-14, atol=0)
    np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-300)
    assert np.isclose(evaluate(fg.jit(f), *args), evaluate(f, *args), rtol=1e-14)


def test_loop_bodies_stop_allocating_small_arrays():
    p = np.array([10.0, 20.0, 8.0 / 3.0])
    src = fg.jit(fg.grad(lorenz)).lower(p).source
    # (scalar loops run in chunks between Ctrl-C checks: the step loop is nested one deeper)
    bodies = [block.split("\n    # ")[0] for block in re.split(r"\n +for ", src)[1:]
              if block.split(" ")[0].endswith("_k")]
    assert len(bodies) == 2                     # the forward and the backward scan
    for body in bodies:
        assert "np.concatenate" not in body and "np.full" not in body and "np.empty" not in body
    # each residual is taped once, even when several stacked arrays share an element
    stores = [line.split("=")[1].strip() for line in bodies[0].splitlines() if "[b_k] =" in line]
    assert len(stores) == len(set(stores)), stores


def test_scalarized_program_evaluates_the_same():
    x = rand((4,), seed=2)
    prog = fg.make_ir(fg.grad(moves_and_reductions))(x)
    small = scalarize(prog)
    assert small is not prog
    np.testing.assert_allclose(fg.eval_program(small, x)[0], fg.eval_program(prog, x)[0],
                               rtol=1e-15)
    plain = fg.make_ir(lambda x: fnp.sum(x * 2.0))(x)
    assert scalarize(plain) is plain          # no loops: untouched


def test_stacked_small_outputs_are_returned_whole():
    f = lambda x: fg.scan(lambda c, v: (c + v, fnp.stack([c, c * v])), 0.0, x)[1]
    x = rand((6,), seed=3)
    np.testing.assert_array_equal(fg.jit(f)(x), evaluate(f, x))
    assert fg.jit(f)(x).shape == (6, 2)


# ---- reverse mode of while loops with small carries (scalarize.while_grad) --------------------

def _while_loss(x, p, limit, every):
    """A while loop on a small vector whose trip count depends on the values, differentiated
    with respect to its start and a body constant."""
    def body(c):
        y, k = c
        return fnp.sin(y) * p + 0.7 * fnp.flip(y) + 0.1 * fnp.sum(y * y) * y, k + 1
    y, _ = fg.while_loop(lambda c: (c[1] < limit) & (fnp.sum(c[0] ** 2) < 50.0), body,
                         (x, 0), checkpoint=every)
    return fnp.sum(y ** 3) + fnp.max(y)


_WHILE_KERNELS = {}


def _while_kernel(n, every):
    if (n, every) not in _WHILE_KERNELS:
        f = lambda x, p, limit: _while_loss(x, p, limit, every)
        _WHILE_KERNELS[n, every] = (fg.jit(fg.grad(f, argnums=(0, 1))), fg.grad(f, argnums=(0, 1)))
    return _WHILE_KERNELS[n, every]


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.sampled_from([1, 3]), every=st.sampled_from([None, 2]),
       seed=st.integers(0, 2 ** 31), p=st.floats(-1.5, 1.5), limit=st.integers(0, 9))
def test_while_gradients_of_small_carries_equal_the_interpreter(n, every, seed, p, limit):
    """The scalarized reverse mode (scalar carries, scalar residuals packed into one tape per
    dtype, with and without checkpointing) gives the interpreter's gradients."""
    compiled, interpreted = _while_kernel(n, every)
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, n)
    got, want = compiled(x, p, limit), evaluate(interpreted, x, p, limit)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_while_gradient_of_a_small_carry_is_scalar_code():
    f = lambda x, p: _while_loss(x, p, 5, None)
    prog = fg.make_ir(fg.grad(f))(np.ones(3), 0.5)
    (loop,) = [e for e in scalarize(prog).eqns if e.prim.name == "while_grad"]
    assert all(v.aval.ndim == 0 for v in loop.params["fwd"].in_vars[loop.params["n_bc"]:])
    src = fg.jit(fg.grad(f)).lower(np.ones(3), 0.5).source
    assert re.search(r"_tfloat64 = np.empty\(\(16, \d+, \)", src), src   # one packed tape
