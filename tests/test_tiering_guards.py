"""Tiering is invisible: for any call sequence, a tiered transform returns what the interpreter
returns, whatever impure Python sits around the traced values (state mutated in place or
rebound, counters, random draws, clocks). Compared against the same transform with tiering off."""
import array
import collections
import os
import random
import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
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


def interpreted(call):
    """What the reference interpreter returns for call() (tiering off)."""
    old, policy.threshold = policy.threshold, 0
    try:
        return call()
    finally:
        policy.threshold = old


def assert_same(got, want):
    if isinstance(want, list) and not isinstance(got, list):
        want = np.array(want, dtype=float)
    for a, b in zip(fg.tree_util.tree_leaves(got), fg.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def is_compiled(f, kind=("grad", 0, False)):
    t = policy.tiers(f).get(kind)
    return bool(t and t.jitted)


# ---- the cases a user meets ------------------------------------------------------------------

CFG = SimpleNamespace(scale=1.0)
TABLE = {"shift": 0.0}
SMALL = np.ones(3)
BIG = np.ones(2000)                 # past the byte-for-byte limit: compared by digest
HISTORY = [1.0]
STEP = [0]


def cfg_loss(x):
    return fnp.sum(CFG.scale * fnp.sin(x * SMALL) + TABLE["shift"] * x) + HISTORY[-1] * fnp.sum(
        BIG[:3] * x)


@pytest.mark.parametrize("change", [
    lambda v: setattr(CFG, "scale", v),
    lambda v: TABLE.__setitem__("shift", v),
    lambda v: SMALL.__setitem__(1, v),
    lambda v: BIG.__setitem__(2, v),
    lambda v: HISTORY.__setitem__(0, v),
])
def test_state_changed_after_compiling_is_seen(change):
    x = np.array([0.3, -0.2, 0.9])
    for v in (1.0, 1.0, 1.0, 1.0, 2.5, 2.5, 2.5, -1.0):
        change(v)
        assert_same(fg.grad(cfg_loss)(x), interpreted(lambda: fg.grad(cfg_loss)(x)))
        if v == 1.0:
            last = is_compiled(cfg_loss)
    assert last                                            # it did compile in between
    change(1.0)


# State read in ways a walk of attributes and closures alone does not see: a property (or a
# special method, or a base class) runs the user's code; os.environ is data in a library module;
# buffers and deques hold their content outside __dict__; globals()["name"] names by string.
_SCALE = 1.0
_BUFFER = array.array("d", [1.0])
_BYTES = bytearray([1])
_QUEUE = collections.deque([1.0])


class _Settings:
    @property
    def scale(self):
        return _SCALE

    def __getitem__(self, key):
        return _SCALE


class _Base:
    scale = 1.0


class _Derived(_Base):
    pass


class _Model:
    def __call__(self, x):
        return fnp.sum(fnp.sin(x) * _SCALE)


_SETTINGS, _DERIVED = _Settings(), _Derived()


@fg.custom_vjp
def _scaled_identity(x):
    return x


_scaled_identity.defvjp(lambda x: (x, None), lambda r, g: (g * _SCALE,))


def _h8(x):                     # a helper deeper than the walk goes (guards._DEPTH)
    return x * _SCALE


def _h7(x): return _h8(x)       # noqa: E704
def _h6(x): return _h7(x)       # noqa: E704
def _h5(x): return _h6(x)       # noqa: E704
def _h4(x): return _h5(x)       # noqa: E704
def _h3(x): return _h4(x)       # noqa: E704
def _h2(x): return _h3(x)       # noqa: E704
def _h1(x): return _h2(x)       # noqa: E704


class _Lookup:
    def __getattr__(self, name):
        return _SCALE


class _ScaleDescriptor:
    def __get__(self, obj, owner):
        return _SCALE


class _Described:
    scale = _ScaleDescriptor()


def _cell_pair():
    scale = 1.0

    def get():
        return scale

    def put(v):
        nonlocal scale
        scale = v
    return get, put


_get_cell, _put_cell = _cell_pair()
_LOOKUP, _DESCRIBED = _Lookup(), _Described()
_jvp_identity = fg.custom_jvp(lambda x: x)
_jvp_identity.defjvp(lambda p, t: (p[0], t[0] * _SCALE))


def _set_scale(v):
    global _SCALE
    _SCALE = v


def _set_environ(v):
    os.environ["FUNCGRAD_TEST_SCALE"] = repr(v)


STATE_READS = {
    "property": (lambda x: fnp.sum(fnp.sin(x) * _SETTINGS.scale), _set_scale),
    "__getitem__": (lambda x: fnp.sum(fnp.sin(x) * _SETTINGS["scale"]), _set_scale),
    "__call__": (_Model(), _set_scale),
    "base class": (lambda x: fnp.sum(fnp.sin(x) * _DERIVED.scale),
                   lambda v: setattr(_Base, "scale", v)),
    "os.environ": (lambda x: fnp.sum(fnp.sin(x) * float(os.environ["FUNCGRAD_TEST_SCALE"])),
                   _set_environ),
    "globals()": (lambda x: fnp.sum(fnp.sin(x) * globals()["_SCALE"]), _set_scale),
    "array.array": (lambda x: fnp.sum(fnp.sin(x) * _BUFFER[0]),
                    lambda v: _BUFFER.__setitem__(0, v)),
    "bytearray": (lambda x: fnp.sum(fnp.sin(x) * _BYTES[0]),
                  lambda v: _BYTES.__setitem__(0, int(v) % 256)),
    "deque": (lambda x: fnp.sum(fnp.sin(x) * _QUEUE[0]), lambda v: _QUEUE.__setitem__(0, v)),
    "custom_vjp rule": (lambda x: fnp.sum(fnp.sin(_scaled_identity(x))), _set_scale),
    "custom_jvp rule": (lambda x: fnp.sum(fnp.sin(_jvp_identity(x))), _set_scale),
    "helper 8 calls deep": (lambda x: fnp.sum(_h1(fnp.sin(x))), _set_scale),
    "__getattr__": (lambda x: fnp.sum(fnp.sin(x) * _LOOKUP.scale), _set_scale),
    "descriptor": (lambda x: fnp.sum(fnp.sin(x) * _DESCRIBED.scale), _set_scale),
    "closure of a closure": (lambda x: fnp.sum(fnp.sin(x) * (lambda: _get_cell())()),
                             _put_cell),
}


# ways of reading state the checks cannot follow: tiering sees it runs such code and keeps
# the function interpreted
UNREACHABLE = {"helper 8 calls deep"}


def compilations(monkeypatch):
    """The signatures tiering adopts compiled forms for, in order (any kind of callable)."""
    kept, keep = [], tiering._Tier._keep

    def spy(tier, sig, jitted):
        kept.append(sig)
        keep(tier, sig, jitted)
    monkeypatch.setattr(tiering._Tier, "_keep", spy)
    return kept


@pytest.mark.parametrize("read", list(STATE_READS))
def test_state_read_through_code_or_buffers_is_seen(read, monkeypatch):
    loss, change = STATE_READS[read]
    kept = compilations(monkeypatch)
    grad = fg.grad(loss)               # one wrapper (callable objects keep their tiers in it)
    x = np.array([0.3, -0.2, 0.9])
    hidden = read in UNREACHABLE           # (kept interpreted, with a PerformanceWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tiering.PerformanceWarning)
        for step, v in enumerate((1.0, 1.0, 1.0, 1.0, 3.0, 3.0, 3.0, 2.0)):
            change(v)
            assert_same(grad(x), v * np.cos(x))
            if step == 3:
                assert bool(kept) != hidden, "it compiled before the change" if not hidden \
                    else "it compiled code whose state it cannot check"
    change(1.0)


def test_data_mutated_in_place_by_plain_numpy_code_is_seen():
    data = np.linspace(0.0, 1.0, 5000)

    def loss(w):                     # data.mean() is computed by NumPy while tracing
        return fnp.sum((w - data.mean()) ** 2)
    w = np.zeros(2)
    compiled = []
    for step in range(8):
        assert_same(fg.grad(loss)(w), interpreted(lambda: fg.grad(loss)(w)))
        compiled.append(is_compiled(loss))
        if step in (3, 4):
            data[:] += 1.0
    assert compiled[3] and not compiled[4] and compiled[7]


def test_a_counter_the_loss_advances_keeps_advancing():
    def loss(x):
        STEP[0] += 1
        return fnp.sum(x) * STEP[0]
    STEP[0] = 0
    got = [float(fg.grad(loss)(np.ones(2))[0]) for _ in range(12)]
    assert got == [float(k) for k in range(1, 13)]
    assert STEP[0] == 12 and not is_compiled(loss)


def test_random_draws_inside_the_loss_stay_random():
    def loss(x):                                        # dropout with np.random
        mask = np.random.rand(3) > 0.5
        return fnp.sum(fnp.where(mask, x, 0.0) * 2.0)
    np.random.seed(0)
    got = [fg.grad(loss)(np.ones(3)) for _ in range(12)]
    np.random.seed(0)
    want = [interpreted(lambda: fg.grad(loss)(np.ones(3))) for _ in range(12)]
    assert_same(got, want)
    assert "random" in policy.explain(loss)[("grad", 0, False)]

    def loss_py(x):
        return fnp.sum(x * random.random())
    random.seed(1)
    got = [fg.grad(loss_py)(np.ones(2)) for _ in range(6)]
    random.seed(1)
    assert_same(got, [interpreted(lambda: fg.grad(loss_py)(np.ones(2))) for _ in range(6)])


def test_a_generator_object_or_a_clock_is_never_frozen():
    rng = np.random.default_rng(3)

    def loss(x):
        return fnp.sum(x * rng.normal(size=2))
    grads = [fg.grad(loss)(np.ones(2)) for _ in range(12)]
    assert len({g.tobytes() for g in grads}) == 12
    assert "different programs" in policy.explain(loss)[("grad", 0, False)]

    def loss_t(x):
        return fnp.sum(x) * time.perf_counter()
    grads = [fg.grad(loss_t)(np.ones(1))[0] for _ in range(8)]
    assert grads == sorted(grads) and len(set(grads)) == 8


def test_a_config_object_passed_as_an_argument_is_compared_by_value():
    cfg = SimpleNamespace(scale=1.0)
    loss = lambda x, c: fnp.sum(x * c.scale)
    for v in (1.0, 1.0, 1.0, 3.0, 3.0):
        cfg.scale = v
        assert_same(fg.grad(loss)(np.ones(2), cfg), [v, v])


def test_callable_objects_bound_methods_and_partials():
    import functools

    class Model:
        def __init__(self):
            self.w = np.ones(2)

        def __call__(self, x):
            return fnp.sum(self.w * x)

        def loss(self, x):
            return fnp.sum(self.w * x ** 2)
    m = Model()
    part = functools.partial(lambda x, c: fnp.sum(c * x), c=np.ones(2))
    for k in range(5):
        m.w[0] = float(k // 3)                 # in place, after compiling
        part.keywords["c"][1] = float(k)
        assert_same(fg.grad(m)(np.ones(2)), [k // 3, 1.0])
        assert_same(fg.grad(m.loss)(np.ones(2)), [2.0 * (k // 3), 2.0])
        assert_same(fg.grad(part)(np.ones(2)), [1.0, k])


def test_state_in_a_nested_lambda_or_comprehension_is_watched():
    def loss(x):
        return sum(fnp.sum(x * CFG.scale * k) for k in (1.0, 2.0))
    for v in (1.0, 1.0, 1.0, 2.0):
        CFG.scale = v
        assert_same(fg.grad(loss)(np.ones(2)), [3.0 * v, 3.0 * v])
    CFG.scale = 1.0


def test_too_much_state_is_interpreted_with_a_warning():
    from funcgrad import guards
    table = list(range(guards._BUDGET + 10))
    loss = lambda x: fnp.sum(x) * len(table)
    with pytest.warns(RuntimeWarning, match="will not compile"):
        for _ in range(4):
            fg.grad(loss)(np.ones(2))
    assert not is_compiled(loss)


# ---- property: random call sequences ---------------------------------------------------------

STATE = SimpleNamespace(scale=1.0, table={"a": 0.5}, arr=np.array([1.0, 2.0]),
                        big=np.ones(1024), items=[0.5])


def _state_loss(x):
    s = STATE
    return (fnp.sum(fnp.sin(x) * s.scale * s.arr) + s.table["a"] * fnp.sum(x ** 2)
            + s.items[0] * fnp.sum(x * s.big[:2]))


def _vec_fn(x):
    return fnp.sin(x) * STATE.scale * STATE.arr + STATE.table["a"] * x * STATE.big[:2]


TRANSFORMS = {
    "grad": lambda x: fg.grad(_state_loss)(x),
    "value_and_grad": lambda x: fg.value_and_grad(_state_loss)(x),
    "vjp": lambda x: fg.vjp(_vec_fn, x)[1](np.array([1.0, -1.0])),
    "jvp": lambda x: fg.jvp(_vec_fn, (x,), (np.array([0.5, 1.0]),)),
    "vmap": lambda x: fg.vmap(_vec_fn)(np.stack([x, 2 * x])),
    "jacfwd": lambda x: fg.jacfwd(_vec_fn)(x),
    "jacrev": lambda x: fg.jacrev(_vec_fn)(x),
    "hessian": lambda x: fg.hessian(_state_loss)(x),
}


def _apply(action, v):
    if action == "scale":
        STATE.scale = v
    elif action == "table":
        STATE.table["a"] = v
    elif action == "arr":
        STATE.arr[0] = v                       # in place
    elif action == "rebind_arr":
        STATE.arr = np.array([v, 2.0])
    elif action == "big":
        STATE.big[1] = v                       # in place, compared by digest
    elif action == "items":
        STATE.items[0] = v


ACTIONS = st.tuples(st.sampled_from(["none", "none", "none", "scale", "table", "arr",
                                     "rebind_arr", "big", "items"]),
                    st.sampled_from([0.5, 2.0]))


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(sorted(TRANSFORMS)), actions=st.lists(ACTIONS, min_size=30,
                                                                    max_size=40))
def test_tiered_equals_interpreted_for_any_call_sequence(kind, actions):
    policy.reset()
    STATE.scale, STATE.table, STATE.items = 1.0, {"a": 0.5}, [0.5]
    STATE.arr, STATE.big = np.array([1.0, 2.0]), np.ones(1024)
    call = TRANSFORMS[kind]
    x = np.array([0.3, -0.7])
    for action, v in actions:
        _apply(action, v)
        assert_same(call(x), interpreted(lambda: call(x)))


@fg.custom_vjp
def _softplus(x):
    return fnp.logaddexp(x, 0.0)


_softplus.defvjp(lambda x: (_softplus(x), x), lambda x, g: (g * fg.nn.sigmoid(x),))
_sin_jvp = fg.custom_jvp(lambda x: fnp.sin(x))
_sin_jvp.defjvp(lambda p, t: (fnp.sin(p[0]), fnp.cos(p[0]) * t[0]))


@pytest.mark.parametrize("f", [
    lambda x: fnp.sum(_softplus(x)),
    lambda x: fnp.sum(_sin_jvp(x)),
    lambda x: fnp.sum(fg.checkpoint(lambda y: fnp.sin(y) * 2)(x)),
    lambda x: fnp.sum(fg.nn.gelu(x, approximate=False)),
    lambda x: fnp.sum(fg.scan(lambda c, v: (c * v, c), 1.0, x)[1]),
    lambda x: fnp.sum(fg.pure_callback(np.sort, x, fg.stop_gradient(x)) * x),
], ids=["custom_vjp", "custom_jvp", "checkpoint", "gelu", "scan", "pure_callback"])
def test_pure_functions_with_rules_made_per_trace_still_compile(f):
    """Specs and barrier ids are made anew by every trace; equal ones must compare equal, or
    such functions would never compile."""
    x = np.array([0.3, -0.2, 0.9])
    want = interpreted(lambda: fg.grad(f)(x))
    for _ in range(4):
        assert_same(fg.grad(f)(x), want)
    assert is_compiled(f), policy.explain(f)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(read=st.sampled_from(sorted(STATE_READS)),
       runs=st.lists(st.tuples(st.sampled_from([1.0, 2.0, 3.0]), st.integers(1, 4)),
                     min_size=2, max_size=5))
def test_any_way_of_reading_state_and_any_mutations_agree_with_the_interpreter(read, runs):
    """However the loss reads its state (STATE_READS) and however that state changes between
    calls, every tiered call returns what the interpreter does: compiled when tiering can see
    the state, interpreted (with a PerformanceWarning naming the code) when it cannot."""
    values = [v for v, n in runs for _ in range(n)]     # (runs of equal state: it compiles)
    loss, change = STATE_READS[read]
    old, policy.threshold = policy.threshold, 2
    policy.reset()                         # (each example from fresh counts)
    grad = fg.grad(loss)
    x = np.array([0.3, -0.2, 0.9])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tiering.PerformanceWarning)
            for v in values:
                change(v)
                assert_same(grad(x), v * np.cos(x))
        if read in UNREACHABLE:            # (whatever the values: it must not have compiled)
            assert not any(t.jitted for t in policy.tiers(loss).values())
    finally:
        change(1.0)
        policy.threshold = old


def test_code_the_state_checks_cannot_reach_keeps_a_function_interpreted():
    loss = STATE_READS["helper 8 calls deep"][0]
    old, policy.threshold = policy.threshold, 2
    try:
        with pytest.warns(tiering.PerformanceWarning, match=r"runs _h6 \(.*test_tiering_guards"):
            for _ in range(4):
                fg.grad(loss)(np.ones(2))
        assert "more than 6 calls deep" in policy.explain(loss)[("grad", 0, False)]
        assert not policy.tiers(loss)[("grad", 0, False)].jitted
    finally:
        policy.threshold = old


def test_callable_objects_of_a_namespace_package_module_are_the_users(tmp_path, monkeypatch):
    """A class of a module in a folder without __init__.py (a namespace package, as pytest's
    importlib mode also makes of tests/) is the user's: its instances' state is guarded and
    the gradient compiles (it was taken for a library class and never compiled)."""
    import importlib
    import sys
    (tmp_path / "nspkg_fg").mkdir()
    (tmp_path / "nspkg_fg" / "model.py").write_text(
        "import numpy as np\nimport funcgrad.numpy as fnp\n"
        "class Model:\n    def __init__(self):\n        self.w = np.ones(2)\n"
        "    def __call__(self, x):\n        return fnp.sum(self.w * x ** 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    kept, keep = [], tiering._Tier._keep
    monkeypatch.setattr(tiering._Tier, "_keep",
                        lambda tier, sig, jitted: (kept.append(sig), keep(tier, sig, jitted)))
    m = importlib.import_module("nspkg_fg.model").Model()
    try:
        assert getattr(sys.modules["nspkg_fg"], "__file__", None) is None    # (namespace)
        x, g = np.array([1.0, 2.0]), fg.grad(m)
        for step in range(8):
            assert_same(g(x), 2.0 * m.w * x)
            if step == 4:
                assert kept, "the gradient of the callable object never compiled"
                m.w[1] = 3.0                    # in place, after compiling
    finally:
        sys.modules.pop("nspkg_fg.model", None)
        sys.modules.pop("nspkg_fg", None)
