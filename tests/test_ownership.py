"""Results are fresh arrays the caller owns: writing into any output of any funcgrad call
(interpreted, tiered and compiled, fg.jit) changes no argument, no captured constant and no
later result."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.tiering import policy

C = np.array([[2.0, -1.0], [0.5, 3.0]])
D = np.array([0.25, 4.0])


def _ident(x):
    return x


def _views(x):
    return x.reshape(-1), x.T, x[1:]


def _const_and_dup(x):
    y = x * 2.0
    return y, y, C, D


def _cond_passthrough(x):
    return fg.cond(fnp.sum(x) > -1e9, lambda v: v, lambda v: v * 2.0, x)


def _while_zero_trips(x):
    return fg.while_loop(lambda c: fnp.sum(c) < -1e9, lambda c: c * 2.0, x)


def _linear(x):
    return C @ x                                 # its Jacobian is C itself


def _weighted(w, d):
    return fnp.sum(w * d)                        # its gradient in w is d itself


FORWARD = [_ident, _views, _const_and_dup, _cond_passthrough, _while_zero_trips, _linear]


def _routes(f, args):
    """(name, call) for each way a user gets f's outputs (or derivatives)."""
    yield "jit", lambda: fg.jit(f)(*args)
    yield "vmap", lambda: fg.vmap(f)(*[np.stack([a, a]) for a in args])
    yield "vjp", lambda: fg.vjp(f, *args)
    yield "jvp", lambda: fg.jvp(f, args, tuple(np.ones_like(a) for a in args))
    if f in (_linear, _ident):
        yield "jacfwd", lambda: fg.jacfwd(f)(*args)
        yield "jacrev", lambda: fg.jacrev(f)(*args)


def _leaves(out):
    return [x for x in fg.tree_util.tree_leaves(out) if isinstance(x, np.ndarray)]


def _expand(out):
    """vjp returns (out, f_vjp): call f_vjp too, so its results are checked."""
    if isinstance(out, tuple) and len(out) == 2 and callable(out[1]):
        return out[0], out[1](out[0])
    return out


def _check_owned(call, watched):
    before = [w.copy() for w in watched]
    first = _expand(call())
    want = [x.copy() for x in _leaves(first)]
    for x in _leaves(first):
        x[...] = 777.0
    for w, b in zip(watched, before):
        np.testing.assert_array_equal(w, b)
    again = _leaves(_expand(call()))
    for a, b in zip(again, want):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(params=["interpreted", "compiled"])
def tier(request):
    old = policy.threshold
    policy.reset()
    policy.threshold = 0 if request.param == "interpreted" else 1
    yield request.param
    policy.threshold = old
    policy.reset()


@pytest.mark.parametrize("f", FORWARD, ids=lambda f: f.__name__)
def test_writing_into_outputs_changes_nothing_else(f, tier):
    x = np.array([[1.0, 2.0], [3.0, 4.0]]) if f is not _linear else np.array([1.0, -2.0])
    for name, call in _routes(f, (x,)):
        for _ in range(3):                       # interpreted, then compiled once hot
            _check_owned(call, [x, C, D])


def test_gradients_never_alias_arguments(tier):
    w, d = np.array([1.0, 2.0]), np.array([0.5, -1.5])
    for call in (lambda: fg.grad(_weighted)(w, d), lambda: fg.value_and_grad(_weighted)(w, d),
                 lambda: fg.jit(fg.grad(_weighted))(w, d), lambda: fg.hessian(_weighted)(w, d)):
        for _ in range(3):
            _check_owned(call, [w, d])
    g = fg.jit(fg.grad(_weighted))(w, d)
    assert not np.shares_memory(g, d)
