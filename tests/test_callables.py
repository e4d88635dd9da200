"""Every kind of callable goes through every transform, on its first call and once tiering has
compiled it: ufuncs, NumPy's dispatchers, builtins, functools.partial, bound and static
methods, callable objects (with and without __slots__), fg.jit functions. Each is compared with
the same transform of a plain lambda computing the same function."""
import functools

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import tiering
from funcgrad.tiering import policy


@pytest.fixture(autouse=True)
def fresh_policy():
    old = policy.threshold
    policy.reset()
    policy.threshold = 2
    yield
    policy.threshold = old
    policy.reset()


def _tanh(x):
    return np.tanh(x)


def _tanh_scaled(x, scale):
    return np.tanh(x * scale) if scale != 1.0 else np.tanh(x)


class _Method:
    def tanh(self, x):
        return np.tanh(x)

    @staticmethod
    def static(x):
        return np.tanh(x)


class _CallableObject:
    def __call__(self, x):
        return np.tanh(x)


class _Slotted:                  # no __dict__ and no __weakref__: cannot be weakly referenced
    __slots__ = ("unused",)

    def __call__(self, x):
        return np.tanh(x)


TANH = {
    "function": _tanh,
    "ufunc": np.tanh,
    "partial of a ufunc": functools.partial(np.tanh),
    "partial with a keyword": functools.partial(_tanh_scaled, scale=1.0),
    "bound method": _Method().tanh,
    "staticmethod": _Method.static,
    "callable object": _CallableObject(),
    "__slots__ object": _Slotted(),
    "fg.jit function": fg.jit(np.tanh),
}
# NumPy's array-function dispatchers and Python's builtins compute other functions
OTHERS = {
    "NumPy dispatcher (np.sum)": (np.sum, lambda x: np.sum(x)),
    "NumPy dispatcher (np.linalg.norm)": (np.linalg.norm, lambda x: np.linalg.norm(x)),
    "builtin (abs)": (abs, lambda x: np.abs(x)),
}
CASES = {**{k: (f, lambda x: np.tanh(x)) for k, f in TANH.items()}, **OTHERS}

S, V = 0.3, np.array([0.3, -0.5, 0.9])
TRANSFORMS = {
    "grad": lambda f: fg.grad(f)(S),
    "value_and_grad": lambda f: fg.value_and_grad(f)(S),
    "hessian": lambda f: fg.hessian(f)(S),
    "jacfwd": lambda f: fg.jacfwd(f)(V),
    "jacrev": lambda f: fg.jacrev(f)(V),
    "vmap": lambda f: fg.vmap(f)(V),
    "vjp": lambda f: fg.vjp(f, V)[1](np.ones_like(np.asarray(f(V)))),
    "jvp": lambda f: fg.jvp(f, (V,), (np.ones(3),)),
    "jit": lambda f: fg.jit(f)(V),
    "jit(grad)": lambda f: fg.jit(fg.grad(f))(S),
}
# the dispatchers and builtins through the transforms that build different kernels
SOME = ("grad", "jacrev", "vmap", "jit")


def _assert_same(got, want):
    got, want = fg.tree_util.tree_leaves(got), fg.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def _params():
    for case in CASES:
        for name in TRANSFORMS:
            if case in TANH or name in SOME:
                yield pytest.param(case, name, id=f"{name}-{case}")


@pytest.mark.parametrize("case, transform", list(_params()))
def test_every_callable_through_every_transform_first_call_and_tiered(case, transform,
                                                                       monkeypatch):
    f, reference = CASES[case]
    apply = TRANSFORMS[transform]
    want = apply(reference)
    _assert_same(apply(f), want)                            # the first call: interpreted
    kept, keep = [], tiering._Tier._keep
    monkeypatch.setattr(tiering._Tier, "_keep",
                        lambda tier, sig, jitted: (kept.append(sig), keep(tier, sig, jitted)))
    wrapper = {"grad": fg.grad, "value_and_grad": fg.value_and_grad, "hessian": fg.hessian,
               "jacfwd": fg.jacfwd, "jacrev": fg.jacrev, "vmap": fg.vmap}.get(transform)
    if wrapper is None:                    # (vjp, jvp, jit: made per call here, or no tiering)
        for _ in range(4):
            _assert_same(apply(f), want)
        return
    made = wrapper(f)                      # one wrapper: where non-functions keep their tiers
    x = S if transform in ("grad", "value_and_grad", "hessian") else V
    for _ in range(4):
        _assert_same(made(x), want)
    assert kept, f"{transform} of a {case} never compiled"
