"""Every transform composes with every other and with fg.jit, in any nesting, whatever the
function is (a plain function, a jitted one, a callable object, a linearized function, a custom
rule around a jitted function): each composition, tiered and compiled, equals the reference
interpreter (fg.disable_jit with tiering off)."""
import itertools

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.tiering import policy

X = np.array([0.3, -0.8, 1.1])
ONES = np.ones(3)


def _g(x):
    return fnp.sin(x) * x + x ** 2


class _Model:
    """A callable object with an attribute named like JitFunction's own (`f`)."""

    def __init__(self):
        self.f = lambda x: x * 100.0
        self.scale = 1.5

    def __call__(self, x):
        return _g(x) * self.scale


def _custom_of_jit():
    h = fg.custom_vjp(fg.jit(_g))
    h.defvjp(lambda x: (_g(x), x), lambda x, ct: (ct * (fnp.sin(x) + x * fnp.cos(x) + 2 * x),))
    return h


BASES = {
    "plain": lambda: _g,
    "jit": lambda: fg.jit(_g),
    "object": _Model,
    "linearized": lambda: fg.linearize(_g, X)[1],
    "custom_vjp(jit)": _custom_of_jit,
    "jit(jit)": lambda: fg.jit(fg.jit(_g)),
}

# vector -> vector transforms of a vector -> vector function
WRAPS = {
    "jit": lambda h: fg.jit(h),
    "vmap": lambda h: lambda x: fg.vmap(h)(fnp.stack([x, x * 0.5]))[1],
    "jvp": lambda h: lambda x: fg.jvp(h, (x,), (ONES,))[1],
    "grad": lambda h: fg.grad(lambda x: fnp.sum(h(x) * fnp.cos(x))),
    "jacfwd": lambda h: lambda x: fg.jacfwd(h)(x) @ ONES,
    "jacrev": lambda h: lambda x: ONES @ fg.jacrev(h)(x),
}


def _reference(comp):
    old, policy.threshold = policy.threshold, 0
    try:
        with fg.disable_jit():
            return comp(X)
    finally:
        policy.threshold = old


@pytest.fixture(autouse=True)
def hot_quickly():
    old = policy.threshold
    policy.reset()
    policy.threshold = 1
    yield
    policy.threshold = old
    policy.reset()


CASES = ([(b, (w,)) for b in BASES for w in WRAPS]
         + [(b, (w1, w2)) for b in ("plain", "jit", "object", "linearized")
            for w1, w2 in itertools.product(["jit", "grad", "vmap"], ["jit", "jacfwd", "grad"])])


@pytest.mark.parametrize("base,wraps", CASES, ids=lambda v: "-".join(v) if isinstance(v, tuple) else v)
def test_composition_equals_the_interpreter(base, wraps):
    comp = BASES[base]()
    for w in reversed(wraps):
        comp = WRAPS[w](comp)
    want = _reference(comp)
    for _ in range(3):                       # interpreted, then tiered and compiled
        np.testing.assert_allclose(comp(X), want, rtol=1e-12, atol=1e-14)


def test_jit_keeps_its_own_attributes():
    h = lambda x, n: x * n
    inner = fg.jit(h)
    outer = fg.jit(inner, static_argnums=1)
    assert outer.static_argnums == (1,) and outer.f is inner
    np.testing.assert_allclose(outer(X, 3), 3 * X)
    loss = fg.jit(lambda x: fnp.sum(x ** 2))
    np.testing.assert_allclose(fg.jit(fg.grad(loss))(X), 2 * X)     # not the loss value
    m = _Model()
    np.testing.assert_allclose(fg.jit(m)(X), m(X))
