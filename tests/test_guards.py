"""A compiled state guard is a shortcut for the walk: whenever guard(f) passes, state_key(f)
equals the key the guard was made from. Checked on random states (nested containers, objects,
arrays, floats such as -0.0 and nan, helper functions, dict keys of several types) under random
mutations, rebindings and equal-valued replacements; and the guard passes while nothing
changed, so it is a shortcut that gets taken."""
import array
import collections
import copy
import functools
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import funcgrad.numpy as fnp
from funcgrad.guards import compile_guard, state_key

# (the recursive strategy's repr is large; nothing is wrong)
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")


class Box:
    """A user class: its instances are walked by their attributes."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


def _helper_made(v):
    return lambda x: x * v


def _with_property(v):
    """An object whose attribute is computed by a property reading a holder (user code run by
    the read: the walk must follow the property's function)."""
    holder = Box(v=v)

    class Computed:
        @property
        def value(self):
            return holder.v
    return Computed()


ATOMS = st.one_of(
    st.integers(-3, 3), st.booleans(), st.none(), st.sampled_from(["a", "b", ""]),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, float("nan"), float("inf")]),
    st.sampled_from([np.float64(1.0), np.float32(1.0), np.int64(1)]),
    st.sampled_from([(lambda: np.zeros(2)), (lambda: np.arange(3.0)),
                     (lambda: np.ones(700))]).map(lambda make: make()),
    st.sampled_from([fnp.sin, fnp.sum, np.cos, len]),
)
BUFFERS = st.one_of(
    st.lists(st.sampled_from([0.0, -0.0, 1.5]), max_size=3).map(lambda v: array.array("d", v)),
    st.binary(max_size=3).map(bytearray),
)
ATOMS = st.one_of(ATOMS, BUFFERS)


def _containers(inner):
    return st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from(["p", "q", "r"]), inner, max_size=3),
        st.dictionaries(st.sampled_from([1, True, 1.5, "s"]), inner, max_size=2),
        st.dictionaries(st.sampled_from(["p", "q"]), inner, max_size=2).map(
            lambda d: Box(**d)),
        st.tuples(inner, inner).map(lambda ab: Slotted(*ab)),
        st.tuples(inner, inner).map(lambda ab: SimpleNamespace(u=ab[0], w=ab[1])),
        inner.map(_helper_made),
        inner.map(lambda v: functools.partial(_helper_made, v)),
        st.frozensets(st.integers(0, 3), max_size=3).map(set),
        st.lists(inner, max_size=3).map(collections.deque),
        inner.map(_with_property),
    )


STATES = st.recursive(ATOMS, _containers, max_leaves=12)
NEW_VALUES = st.one_of(ATOMS, st.just("same"), st.just("copy"))


def _make(state, default):
    def f(x, scale=default):
        return x * scale if state is None else x
    return f


def _mutables(v, out, depth=0):
    """The places a user could change in place, reachable from v."""
    if depth > 6:
        return out
    if isinstance(v, (list, dict, np.ndarray, set, collections.deque, array.array, bytearray)) \
            or hasattr(v, "__dict__") or hasattr(type(v), "__slots__") \
            and not isinstance(v, (tuple, str)):
        out.append(v)
    if isinstance(type(v).__dict__.get("value"), property):       # (_with_property)
        out.append(type(v).value.fget.__closure__[0].cell_contents)
    items = (v.values() if isinstance(v, dict) else
             v if isinstance(v, (list, tuple, collections.deque)) else
             vars(v).values() if isinstance(v, (Box, SimpleNamespace)) else
             (v.a, v.b) if isinstance(v, Slotted) else
             [c.cell_contents for c in v.__closure__ or ()]
             if type(v) is type(_make) and v.__code__ is _helper_made(0).__code__ else
             (*v.args,) if isinstance(v, functools.partial) else ())
    for x in list(items):
        _mutables(x, out, depth + 1)
    return out


def _value(old, new):
    """`new`, or for the markers "same"/"copy" the old value or an equal copy of it."""
    if isinstance(new, str) and new in ("same", "copy"):
        return old if new == "same" else copy.deepcopy(old)
    return new


def _mutate(target, data):
    new = data.draw(NEW_VALUES)
    if isinstance(target, np.ndarray):
        if target.size:
            target.flat[0] = data.draw(st.sampled_from([target.flat[0], 7.0, -0.0]))
        return
    if isinstance(target, set):
        target.symmetric_difference_update({data.draw(st.integers(0, 3))})
        return
    if isinstance(target, (array.array, bytearray)):
        item = data.draw(st.sampled_from([0.0, -0.0, 2.0] if isinstance(target, array.array)
                                         else [0, 1, 255]))
        if target and data.draw(st.booleans()):
            target[0] = item
        else:
            target.append(item)
        return
    if isinstance(target, (list, collections.deque)):
        keys = list(range(len(target)))
    elif isinstance(target, dict):
        keys = list(target)
    elif isinstance(target, Slotted):
        keys = ["a", "b"]
    elif callable(target):             # a helper's closure cell: not writable from here
        return
    else:
        keys = list(vars(target))
    op = data.draw(st.sampled_from(["set", "add", "remove", "reorder"]))
    if not keys:
        op = "add"
    key = data.draw(st.sampled_from(keys)) if keys else None
    indexed = isinstance(target, (list, dict, collections.deque))
    get = target.__getitem__ if indexed else lambda k: getattr(target, k, None)
    put = target.__setitem__ if indexed else lambda k, x: setattr(target, k, x)
    value = _value(get(key) if keys else None, new)
    if op == "set" and keys:
        put(key, value)
    elif op == "add":
        if isinstance(target, (list, collections.deque)):
            target.append(value)
        elif isinstance(target, dict):
            target[data.draw(st.sampled_from(["p", "z", 2, False]))] = value
        elif not isinstance(target, Slotted):
            setattr(target, "z", value)
    elif op == "remove":
        if isinstance(target, (list, collections.deque)):
            del target[key]
        elif isinstance(target, dict):
            del target[key]
        elif not isinstance(target, Slotted):
            delattr(target, key)
    elif op == "reorder" and isinstance(target, dict):
        target[key] = target.pop(key)          # the same items in another order


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(state=STATES, default=ATOMS, data=st.data())
def test_a_passing_guard_means_the_walk_finds_the_same_state(state, default, data):
    f = _make(state, default)
    key = state_key(f)
    guard = compile_guard(f, key)
    assert guard is not None, "these states are all covered by generated guards"
    assert guard(f), "nothing changed: the guard must pass"
    places = _mutables(state, [])
    for _ in range(data.draw(st.integers(1, 3))):
        if places and data.draw(st.booleans()):
            _mutate(data.draw(st.sampled_from(places)), data)
        else:                                   # rebind what f's closure or defaults hold
            which = data.draw(st.sampled_from(["cell", "default"]))
            new = data.draw(NEW_VALUES)
            old = f.__closure__[0].cell_contents if which == "cell" else f.__defaults__[0]
            value = _value(old, new)
            if which == "cell":
                f.__closure__[0].cell_contents = value
            else:
                f.__defaults__ = (value,)
        if guard(f):
            assert state_key(f) == key


def test_the_guard_fails_on_each_kind_of_change():
    cfg = Box(scale=2.0, table={"a": np.ones(3)}, items=[1.0, -0.0])

    def f(x):
        return x * cfg.scale * cfg.table["a"] * cfg.items[0] * cfg.items[1]
    changes = [lambda: setattr(cfg, "scale", 3.0),
               lambda: cfg.table["a"].__setitem__(0, 5.0),       # in place
               lambda: cfg.table.__setitem__("a", np.ones(3)),   # equal, but another array
               lambda: cfg.items.__setitem__(1, 0.0),            # -0.0 -> 0.0
               lambda: cfg.items.append(1.0),
               lambda: setattr(cfg, "new", 1)]
    for change in changes:
        key = state_key(f)
        guard = compile_guard(f, key)
        assert guard(f)
        change()
        assert not guard(f)
        assert state_key(f) != key or change is changes[2]


def test_user_strings_are_constants_in_the_generated_source():
    evil = "x'); import os; os.system('echo owned'); ('"
    table = {evil: 1.0}

    def f(x):
        return x * table[evil]
    from funcgrad.guards import _GuardWriter
    w = _GuardWriter()
    w.walk("v0", f)
    assert evil not in w.source() and "os.system" not in w.source()
    assert compile_guard(f, state_key(f))(f)


REBUILT = {"scale": 2.0}


def _rebuilt_loss(x):
    return fnp.sum(REBUILT["scale"] * x ** 2)


def test_state_rebuilt_equal_each_call_stays_compiled_and_stops_generating_checks():
    """A dict rebuilt with equal contents before every call fails the identity check but not
    the walk: the compiled form stays, and after three such calls no more checks are made."""
    import funcgrad as fg
    from funcgrad.tiering import policy
    old = policy.threshold
    policy.reset()
    policy.threshold = 2
    try:
        g = fg.grad(_rebuilt_loss)
        x = np.array([1.0, -2.0])
        global REBUILT
        for k in range(12):
            REBUILT = {"scale": 2.0 if k < 10 else 3.0}
            np.testing.assert_allclose(g(x), 2 * REBUILT["scale"] * x)
        tier = policy.tiers(_rebuilt_loss)[("grad", 0, False)]
        assert tier.guard_misses >= 3 and tier.guard is None and tier.guard_tried
    finally:
        policy.threshold = old
        policy.reset()
