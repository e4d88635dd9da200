"""Regressions of issue 28 owned by the tracer: derivatives dropped silently by Python
conversions, NumPy arrays indexed with traced integers, the reasons ConcretizationError gives,
source lines of warnings in forward mode and in every transform, fg.vmap's out_axes=None."""
import math
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads


def _line_of(fn, text):
    """The line number of the first line of fn's source file containing `text`."""
    with open(fn.__code__.co_filename) as fh:
        for k, line in enumerate(fh, 1):
            if text in line:
                return k
    raise AssertionError(text)


# ---- 1. a Python conversion that drops a derivative warns at the user's line ------------------

def _by_math(x):
    return math.sin(x) * 1.0                                     # conversion: math


def _by_float(x):
    return float(x) + x * 0.0                                    # conversion: float


def _by_item(x):
    return fnp.sum(x.item() * x) * 0.0 + x.item()                # conversion: item


def _by_buffer(x):
    y = np.empty(2)
    y[0] = x[0]                                                  # conversion: buffer
    y[1] = 2.0
    return fnp.sum(fnp.asarray(y) * x)


def _by_tolist(x):
    return x.tolist()[0] + x[1]                                  # conversion: tolist


CONVERSIONS = [(_by_math, 1.0, "math.sin(x)"), (_by_float, 1.0, "float(x)"),
               (_by_item, np.array([1.5]), "x.item()"),
               (_by_buffer, np.array([1.0, 2.0]), "y[0] = ..."),
               (_by_tolist, np.array([1.0, 2.0]), "x.tolist()")]


@pytest.mark.parametrize("f,x,expr", CONVERSIONS, ids=[c[2] for c in CONVERSIONS])
def test_a_python_number_of_a_differentiated_value_warns_at_the_users_line(f, x, expr):
    with pytest.warns(fg.DroppedDerivativeWarning) as record:
        fg.grad(lambda v: fnp.sum(f(v)))(x)
    w = [r for r in record if r.category is fg.DroppedDerivativeWarning][0]
    assert w.filename == __file__
    assert w.lineno == _line_of(f, "# conversion: " + f.__name__[4:])
    assert expr in str(w.message) and "'v'" in str(w.message)
    assert "fg.stop_gradient" in str(w.message) and "fnp.sin" in str(w.message)


@pytest.mark.parametrize("f,x,expr", CONVERSIONS, ids=[c[2] for c in CONVERSIONS])
def test_dropped_derivative_raises_under_the_config_option(f, x, expr):
    with fg.config.override(dropped_derivative="error"):
        with pytest.raises(fg.ConcretizationError, match="dropped"):
            fg.grad(lambda v: fnp.sum(f(v)))(x)
    with fg.config.override(dropped_derivative="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        fg.grad(lambda v: fnp.sum(f(v)))(x)
    assert fg.config.dropped_derivative == "warn"


def test_config_refuses_unknown_options_and_values():
    with pytest.raises(ValueError, match="warn"):
        fg.config.update("dropped_derivative", "loud")
    with pytest.raises(AttributeError, match="dropped_derivative"):
        fg.config.update("no_such_option", 1)
    assert "dropped_derivative" in fg.config.options()


def _decisions(x, n):
    if x > 0:                                    # a decision on the traced value
        x = x * 2.0
    if float(x) > 0.5:                           # a Python number only compared
        x = x * 3.0
    if 0 < float(x) < 100 and x.item():          # a chained comparison, a truth test
        x = x + 1.0
    if math.sin(x) > -2.0 and not float(x):
        x = x * 0.0
    for _ in range(int(n)):                      # an integer: a loop count
        x = x * 1.5
    k = 0
    while float(x) > 1e-3 and k < 2:
        k += 1
    return x * float(fg.stop_gradient(x)) + float(n) * x    # stop_gradient: a constant meant


@pytest.mark.parametrize("transform", ["grad", "jit_grad", "jvp", "hessian"])
def test_decisions_and_integers_stay_silent(transform):
    f = _decisions
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if transform == "grad":
            got = fg.grad(f)(1.0, 2.0)
        elif transform == "jit_grad":
            got = fg.jit(fg.grad(f))(1.0, 2.0)
        elif transform == "jvp":
            got = fg.jvp(lambda x: f(x, 2.0), (1.0,), (1.0,))[1]
        else:
            got = fg.hessian(f)(1.0, 2.0)
            assert got == 0.0
            return
    # x -> 2x -> 6x -> 6x + 1 -> * 2.25 (n = 2): slope 13.5, value 15.75 (a constant factor)
    assert got == 13.5 * 15.75 + 2.0 * 13.5
    fg.jit(lambda x: float(x) * x)(1.0)           # nothing differentiated: nothing dropped


TRANSFORMS = {
    "grad": lambda f, x: fg.grad(f)(x),
    "value_and_grad": lambda f, x: fg.value_and_grad(f)(x),
    "vjp": lambda f, x: fg.vjp(f, x)[1](1.0),
    "jvp": lambda f, x: fg.jvp(f, (x,), (1.0,)),
    "linearize": lambda f, x: fg.linearize(f, x)[1](1.0),
    "jacfwd": lambda f, x: fg.jacfwd(f)(x),
    "jacrev": lambda f, x: fg.jacrev(f)(x),
    "hessian": lambda f, x: fg.hessian(f)(x),
    "jit_grad": lambda f, x: fg.jit(fg.grad(f))(x),
    "grad_jit": lambda f, x: fg.grad(fg.jit(f))(x),
    "grad_grad": lambda f, x: fg.grad(fg.grad(f))(x),
    "vmap_grad": lambda f, x: fg.vmap(fg.grad(f))(np.array([x, x])),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_every_differentiating_transform_says_a_derivative_is_dropped(name):
    def f(x):
        return x * float(x)                      # the line warned at
    if name == "vmap_grad":                      # (one value per example: no float() at all)
        with pytest.raises(fg.ConcretizationError, match="fg.vmap"):
            TRANSFORMS[name](f, 1.5)
        return
    with pytest.warns(fg.DroppedDerivativeWarning) as record:
        TRANSFORMS[name](f, 1.5)
    assert {r.lineno for r in record if r.category is fg.DroppedDerivativeWarning} == {
        f.__code__.co_firstlineno + 1}


def test_warned_when_traced_and_the_tiered_calls_stay_right():
    f = lambda x: x * float(x)
    grad_f = fg.grad(f)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = [grad_f(2.0) for _ in range(14)]
    assert got == [2.0] * 14
    assert any(r.category is fg.DroppedDerivativeWarning for r in record)


# ---- 2. a NumPy array indexed with traced integers ------------------------------------------

TABLE = np.arange(10.0) ** 2


def _lookup(x):
    return fnp.sum(TABLE[fnp.floor(x).astype(int)] * x ** 2)


def test_numpy_array_indexed_with_traced_integers_under_grad():
    x = np.array([1.5, 3.2, 7.7])
    want = TABLE[np.floor(x).astype(int)] * 2 * x
    np.testing.assert_allclose(fg.grad(_lookup)(x), want, rtol=1e-15)
    check_grads(_lookup, (x,), order=2)
    mask = lambda x: fnp.sum(TABLE[:3][x > 2.0] * x[x > 2.0])       # a traced mask too
    np.testing.assert_allclose(fg.grad(mask)(np.array([1.0, 3.0, 4.0])), [0.0, 1.0, 4.0])


def test_the_indices_are_guarded_on_compiled_paths():
    """The indices are part of the path: a compiled path is reused only for the same ones."""
    compiled, tiered = fg.jit(fg.grad(_lookup)), fg.grad(_lookup)
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # (the paths' limit is reached on purpose)
        for k in range(14):
            x = rng.uniform(0.0, 9.9, 3) if k % 2 else np.array([1.5, 2.5, 3.5])
            want = TABLE[np.floor(x).astype(int)] * 2 * x
            np.testing.assert_allclose(compiled(x), want, rtol=1e-14)
            np.testing.assert_allclose(tiered(x), want, rtol=1e-14)


def _vmapped(x):
    return fg.vmap(fg.grad(_lookup))(fnp.stack([x, x + 1.0]))


WHERE_UNKNOWN = {
    "vmap": (_vmapped, "inside fg.vmap, which"),
    "fori_loop": (lambda x: fg.fori_loop(0, 2, lambda i, c: c + _lookup(c), x),
                  "body of fg.fori_loop / fg.scan"),
    "scan": (lambda x: fg.scan(lambda c, _: (c + _lookup(c), None), x, None, length=2)[0],
             "body of fg.fori_loop / fg.scan"),
    "while_loop": (lambda x: fg.while_loop(lambda c: _lookup(c) < 3.0, lambda c: c + 1.0, x),
                   "fg.while_loop's cond_fun or body_fun"),
    "cond": (lambda x: fg.cond(x[0] > 1.0, _lookup, lambda c: fnp.sum(c), x),
             "branch of fg.cond / fg.switch"),
    "checkpoint": (fg.checkpoint(_lookup), "fg.checkpoint"),
}


@pytest.mark.parametrize("where", sorted(WHERE_UNKNOWN))
def test_where_the_indices_are_not_known_the_error_says_why(where):
    run, reason = WHERE_UNKNOWN[where]
    with pytest.raises(fg.ConcretizationError) as info:
        fg.grad(lambda x: fnp.sum(run(x)))(np.array([1.5, 2.5]))
    message = str(info.value)
    assert reason in message and "fnp.take(table, idx, axis=0)" in message
    assert f"{__file__}:{_lookup.__code__.co_firstlineno + 1}" in message
    others = [r for w, (_, r) in WHERE_UNKNOWN.items() if r != reason]
    assert not any(r in message for r in others), message
    with pytest.raises(fg.ConcretizationError, match="fg.make_ir records"):
        fg.make_ir(_lookup)(np.array([1.5]))


def test_take_is_the_traced_gather_that_works_everywhere():
    take = lambda x: fnp.sum(fnp.take(TABLE, fnp.floor(x).astype(int), axis=0) * x ** 2)
    X = np.array([[1.5, 3.2], [2.5, 8.9]])
    got = fg.vmap(fg.grad(take))(X)
    np.testing.assert_allclose(got, [fg.grad(_lookup)(x) for x in X], rtol=1e-15)
    np.testing.assert_allclose(fg.jit(fg.vmap(fg.grad(take)))(X + 1.0),
                               [fg.grad(_lookup)(x) for x in X + 1.0], rtol=1e-14)


def test_a_float_array_made_numpy_says_why_not_vmap():
    with pytest.raises(fg.ConcretizationError, match="would be a constant") as info:
        fg.grad(lambda x: fnp.sum(np.asarray(x) * x))(np.array([1.0, 2.0]))
    assert "fg.vmap" not in str(info.value) and "fnp.asarray" in str(info.value)


# ---- 3. Python control flow in a custom_vjp backward rule -----------------------------------

def _halved_bwd_python(x, g):
    while g > 10.0:                              # Python `while` on the cotangent
        g = g / 2.0
    return (g,)


def _halved_bwd_traced(x, g):
    return (fg.while_loop(lambda g: g > 10.0, lambda g: g / 2.0, g),)


def test_python_while_in_a_backward_rule_says_the_rule_is_traced():
    f = fg.custom_vjp(lambda x: x * 2.0).defvjp(lambda x: (x * 2.0, x), _halved_bwd_python)
    with pytest.raises(fg.ConcretizationError) as info:
        fg.grad(lambda x: 100.0 * f(x))(1.0)
    message = str(info.value)
    assert "custom_vjp backward rule" in message and "fg.while_loop" in message
    assert "fg.jit" in message and "fg.hessian" in message
    assert f"{__file__}:{_halved_bwd_python.__code__.co_firstlineno + 1}" in message
    assert "fg.vmap" not in message.split("Use fg.cond")[0]


def test_a_backward_rule_with_a_traced_loop_differentiates_and_compiles():
    f = fg.custom_vjp(lambda x: x * 2.0).defvjp(lambda x: (x * 2.0, x), _halved_bwd_traced)
    loss = lambda x: 100.0 * f(x)
    assert fg.grad(loss)(1.0) == 6.25 and fg.jit(fg.grad(loss))(1.0) == 6.25


# ---- 4, 5. warnings and errors name the line of the function they come from -----------------
# Two functions on different lines share a primitive whose derivative (or value) is infinite
# at 0; each transform is applied to the first, then to the second: each report names its own
# function's line (forward mode's derived rules are cached per primitive: they named the
# first function's line for both).

def _sqrt_one(x):
    return fnp.sum(fnp.sqrt(x) * 3.0)                            # (derivative inf at 0)


def _sqrt_two(x):
    return fnp.sum(2.0 * fnp.sqrt(x))                            # (derivative inf at 0)


def _log_one(x):
    return fnp.sum(fnp.log(x) * 3.0)                             # (value -inf at 0)


def _log_two(x):
    return fnp.sum(2.0 * fnp.log(x))                             # (value -inf at 0)


ONES = np.ones(2)
LINE_TRANSFORMS = {
    "grad": lambda f, x: fg.grad(f)(x),
    "value_and_grad": lambda f, x: fg.value_and_grad(f)(x),
    "vjp": lambda f, x: fg.vjp(f, x)[1](1.0),
    "jvp": lambda f, x: fg.jvp(f, (x,), (ONES,)),
    "linearize": lambda f, x: fg.linearize(f, x)[1](ONES),
    "jacfwd": lambda f, x: fg.jacfwd(f)(x),
    "jacrev": lambda f, x: fg.jacrev(f)(x),
    "hessian": lambda f, x: fg.hessian(f)(x),
    "jit_grad": lambda f, x: fg.jit(fg.grad(f))(x),
    "vmap": lambda f, x: fg.vmap(f)(np.stack([x, x])),
    "jit": lambda f, x: fg.jit(f)(x),
}
FORWARD_ONLY = ("vmap", "jit")
COMPILED = ("jit", "jit_grad")      # (compiled code does not give NumPy's warnings)


def _pair(name):
    return (_log_one, _log_two) if name in FORWARD_ONLY else (_sqrt_one, _sqrt_two)


@pytest.mark.parametrize("name", [n for n in LINE_TRANSFORMS if n not in COMPILED])
def test_warnings_name_the_line_of_their_own_function(name):
    x = np.array([0.0, 1.0])
    for f in _pair(name):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            LINE_TRANSFORMS[name](f, x)
        lines = {(r.filename, r.lineno) for r in record if r.category is RuntimeWarning}
        assert lines == {(__file__, f.__code__.co_firstlineno + 1)}, (f.__name__, record)


@pytest.mark.parametrize("name", list(LINE_TRANSFORMS))
def test_errors_name_the_line_of_their_own_function(name):
    x = np.array([0.0, 1.0])
    for f in _pair(name):
        with fg.debug_infs(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(FloatingPointError) as info:
                LINE_TRANSFORMS[name](f, x)
        assert f"{__file__}:{f.__code__.co_firstlineno + 1}" in str(info.value), f.__name__


# ---- 6. fg.vmap(..., out_axes=None): an unbatched output --------------------------------------

X3 = np.arange(6.0).reshape(3, 2)
W2 = np.array([1.0, 2.0])


def _outs(x, w):
    return x * w, w ** 2, {"a": fnp.sum(x), "b": w + 1.0}


def _per_example(x, w):
    """_outs run example by example, stacked (the reference)."""
    rows = [_outs(xi, w) for xi in x]
    return (np.stack([r[0] for r in rows]), rows[0][1],
            {"a": np.stack([r[2]["a"] for r in rows]), "b": rows[0][2]["b"]})


@pytest.mark.parametrize("compiled", [False, True])
def test_out_axes_none_returns_an_output_once(compiled):
    vf = fg.vmap(_outs, in_axes=(0, None), out_axes=(0, None, {"a": 0, "b": None}))
    vf = fg.jit(vf) if compiled else vf
    got, want = vf(X3, W2), _per_example(X3, W2)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[1].shape == (2,) and got[2]["b"].shape == (2,)
    np.testing.assert_array_equal(got[2]["a"], want[2]["a"])
    np.testing.assert_array_equal(got[2]["b"], want[2]["b"])
    # a prefix: one None for a whole subtree; one out_axes for every output
    prefix = fg.vmap(lambda x, w: (x * w, {"c": w, "d": 2.0 * w}), in_axes=(0, None),
                     out_axes=(1, None))(X3, W2)
    np.testing.assert_array_equal(prefix[0], (X3 * W2).T)
    np.testing.assert_array_equal(prefix[1]["d"], 2.0 * W2)
    np.testing.assert_array_equal(
        fg.vmap(lambda x, w: w * 3.0, in_axes=(0, None), out_axes=None)(X3, W2), 3.0 * W2)


def test_out_axes_none_differentiates():
    loss = lambda w: fnp.sum(fg.vmap(_outs, in_axes=(0, None),
                                     out_axes=(0, None, {"a": 0, "b": None}))(X3, w)[1])
    np.testing.assert_allclose(fg.grad(loss)(W2), 2.0 * W2)
    check_grads(lambda w: fnp.sum(fg.vmap(lambda x, w: (x * w, fnp.sin(w)), in_axes=(0, None),
                                          out_axes=(0, None))(X3, w)[1]), (W2,), order=2)


def test_out_axes_none_for_a_batched_output_is_an_error():
    with pytest.raises(ValueError, match=r"out_axes is None for output\[2\]\['a'\].*depends on "
                                         "the batched inputs"):
        fg.vmap(_outs, in_axes=(0, None), out_axes=(0, None, None))(X3, W2)
    with pytest.raises(ValueError, match=r"output\[0\]"):
        fg.vmap(_outs, in_axes=(0, None), out_axes=None)(X3, W2)
    with pytest.raises(ValueError, match="does not match the outputs"):
        fg.vmap(_outs, in_axes=(0, None), out_axes=(0, None))(X3, W2)


def test_a_python_number_in_a_custom_vjp_forward_drops_nothing():
    """The derivative of a custom_vjp function is its bwd rule: float() in fwd is silent."""
    f = fg.custom_vjp(lambda x: x * float(x))
    f.defvjp(lambda x: (x * float(x), x), lambda x, g: (2.0 * x * g,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fg.grad(f)(3.0) == 6.0
