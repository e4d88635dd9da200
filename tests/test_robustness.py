"""Issue 10: inputs and situations that used to crash, leak or hang become answers or clear
user errors. Each test failed before its fix."""
import traceback

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad._errors import ShapeError, UnsupportedDtypeError
from conftest import check_grads


def _notes(exc_info):
    return "".join(getattr(exc_info.value, "__notes__", ()))


# ---- argument kinds on the compiled fast path ------------------------------------------------

_KINDS = {
    "0d f64": lambda v: np.array(float(v)),
    "0d f32": lambda v: np.array(v, np.float32),
    "0d i32": lambda v: np.array(int(v), np.int32),
    "np.float64": lambda v: np.float64(v),
    "np.float32": lambda v: np.float32(v),
    "np.int32": lambda v: np.int32(int(v)),
    "np.int64": lambda v: np.int64(int(v)),
    "float": lambda v: float(v),
    "int": lambda v: int(v),
    "1d f64": lambda v: np.full(2, float(v)),
}
_mixed = fg.jit(lambda x, y: fnp.where(x > 1, x * y + 1, y - x))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(_KINDS)), st.sampled_from(sorted(_KINDS)),
                          st.integers(-3, 3), st.integers(-3, 3)), min_size=1, max_size=6))
def test_repeated_jit_calls_with_any_mix_of_scalars_and_0d_arrays(calls):
    """Every call, first or repeated (the fast scalar path), answers as the interpreter does:
    same values, same dtypes (0-d results as NumPy scalars)."""
    for kx, ky, vx, vy in calls + calls:
        x, y = _KINDS[kx](vx), _KINDS[ky](vy)
        with fg.disable_jit():
            want = _mixed(x, y)
        got = _mixed(x, y)
        assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


def test_jit_tells_apart_which_argument_is_static():
    """f(array, 1) and f(1, array) have the same traced avals and static values: they used to
    share one compiled kernel (found by the property test above)."""
    f = fg.jit(lambda x, y: x - 2 * y)
    assert f(np.array(3.0), 1) == 1.0
    assert f(1, np.array(3.0)) == -5.0


def test_repeated_jit_grad_of_0d_arrays():
    g = fg.jit(fg.grad(lambda x: x * x * 3.0))
    for _ in range(3):
        assert g(np.array(2.0)) == 12.0
    h = fg.jit(lambda x, n: x + n)
    assert [h(np.array(2.0), np.array(3, np.int32)) for _ in range(3)] == [5.0] * 3


# ---- constructors with traced arguments ------------------------------------------------------

@pytest.mark.parametrize("f", [
    lambda x: fnp.linspace(0.0, x, 5),
    lambda x: fnp.linspace(x, 2 * x + 1.0, 7, endpoint=False),
    lambda x: fnp.linspace(x, 3.0, 4, retstep=True)[1] * fnp.linspace(x, 3.0, 4),
    lambda x: np.linspace(x * 0.5, x, 3),                    # plain NumPy, dispatched here
    lambda x: fnp.logspace(0.0, x, 5),
    lambda x: fnp.logspace(x, 1.0, 3, base=x + 1.0),
    lambda x: fnp.geomspace(x, 10.0, 5),
    lambda x: fnp.full((3, 2), x),
    lambda x: fnp.full(3, x * 2),
], ids=["linspace", "linspace-no-endpoint", "linspace-retstep", "np.linspace", "logspace",
        "logspace-base", "geomspace", "full", "np.full"])
def test_constructors_of_traced_scalars_differentiate(f):
    x = 1.7
    with fg.disable_jit():
        ref = np.asarray(f(x))
    assert np.allclose(fg.jit(f)(x), ref)
    check_grads(lambda x: fnp.sum(fnp.sin(f(x))), (x,), order=2)


def test_linspace_matches_numpy_with_vector_endpoints_and_axis():
    a, b = np.array([0.0, 1.0]), np.array([2.0, -1.0])
    for kw in ({}, {"axis": 1}, {"endpoint": False}, {"num": 1}):
        got = fg.jit(lambda a, b: fnp.linspace(a, b, **{"num": 6, **kw}))(a, b)
        np.testing.assert_allclose(got, np.linspace(a, b, **{"num": 6, **kw}), rtol=1e-15)
    # the endpoint is exact, as in NumPy
    assert fg.jit(lambda b: fnp.linspace(0.1, b, 7))(0.7)[-1] == 0.7


def test_meshgrid_of_traced_coordinates():
    x, y = np.arange(3.0), np.array([1.0, 5.0])
    for kw in ({}, {"indexing": "ij"}, {"sparse": True}):
        got = fg.jit(lambda x, y: np.meshgrid(x, y, **kw))(x, y)
        for g, w in zip(got, np.meshgrid(x, y, **kw)):
            np.testing.assert_array_equal(g, w)
    check_grads(lambda x: fnp.sum(fnp.meshgrid(x, x ** 2)[1] * fnp.meshgrid(x, x)[0]),
                (x + 0.5,), order=2)


def test_shape_arguments_must_be_static_inside_vmap():
    with pytest.raises(fg.ConcretizationError):
        fg.vmap(fg.grad(lambda n: fnp.sum(fnp.arange(n)) * n))(np.array([3.0, 3.0]))
    assert fg.grad(lambda n: fnp.sum(fnp.arange(n)) * n)(3.0) == 3.0   # the value of this call


# ---- det at singular matrices ----------------------------------------------------------------

def _cofactors(m):
    n = len(m)
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(m, i, 0), j, 1))
                      for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("m", [np.array([[1.0, 2.0], [2.0, 4.0]]),
                               np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]),
                               np.zeros((3, 3)), np.array([[0.0]])])
def test_gradient_of_det_at_a_singular_matrix_is_the_cofactor_matrix(m):
    det = fnp.linalg.det
    np.testing.assert_allclose(fg.grad(det)(m), _cofactors(m) if len(m) > 1 else [[1.0]],
                               atol=1e-12)
    np.testing.assert_allclose(fg.jit(fg.grad(det))(m), fg.grad(det)(m), atol=1e-12)


def test_det_derivatives_unchanged_where_invertible():
    a = np.random.default_rng(1).standard_normal((2, 3, 3))
    g = fg.grad(lambda a: fnp.sum(fnp.linalg.det(a)))(a)
    np.testing.assert_allclose(g, np.linalg.det(a)[:, None, None]
                               * np.linalg.inv(a).transpose(0, 2, 1), rtol=1e-10)
    check_grads(fnp.linalg.det, (a[0],), order=2)


# ---- arrays that are not plain native ndarrays ------------------------------------------------

def test_big_endian_arrays_are_converted():
    x = np.arange(4.0).astype(">f8")
    f = fg.jit(lambda x: x * 2 + 1)
    for _ in range(3):
        out = f(x)
        np.testing.assert_array_equal(out, np.arange(4.0) * 2 + 1)
        assert out.dtype.isnative
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(x ** 2))(x), 2 * np.arange(4.0))


def test_long_double_runs_interpreted_under_jit():
    x = np.arange(3.0).astype(np.longdouble)
    out = fg.jit(lambda x: x * 2)(x)
    assert out.dtype == np.longdouble
    np.testing.assert_array_equal(out, x * 2)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")      # np.matrix itself
@pytest.mark.parametrize("transform", [fg.jit, fg.grad])
def test_masked_arrays_are_refused_not_unmasked(transform):
    x = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(UnsupportedDtypeError, match=r"argument x is a masked array.*filled"):
        transform(lambda x: fnp.sum(x * 2))(x)
    with pytest.raises(UnsupportedDtypeError, match="np.matrix"):
        transform(lambda x: fnp.sum(x * 2))(np.matrix([[1.0, 2.0]]))


# ---- errors that name the user's rule and line -----------------------------------------------

def test_custom_vjp_backward_of_the_wrong_shape_names_the_rule_the_input_and_both_shapes():
    @fg.custom_vjp
    def f(x, y):
        return x * 2 + y

    def my_bwd(res, g):
        return np.ones(5), g

    f.defvjp(lambda x, y: (f(x, y), None), my_bwd)
    with pytest.raises(ShapeError, match=r"my_bwd \(.*test_robustness.py:\d+\).*shape \(5,\) "
                                         r"for differentiable input args\[0\].*shape \(3,\)"):
        fg.grad(lambda x: fnp.sum(f(x, x)))(np.ones(3))


def test_numpy_errors_carry_the_users_line():
    def bad_axis(x):
        return fnp.sum(fnp.sum(x, axis=3))             # the line the note names

    line = bad_axis.__code__.co_firstlineno + 1
    with pytest.raises(np.exceptions.AxisError) as e:
        fg.grad(bad_axis)(np.ones(3))
    assert f"test_robustness.py:{line} (in bad_axis)" in _notes(e)

    def singular(a):
        b = a * 2.0
        return fnp.sum(fnp.linalg.inv(b))               # fails on the values, after tracing

    line = singular.__code__.co_firstlineno + 2
    for transform in (fg.grad, fg.jit):
        with pytest.raises(np.linalg.LinAlgError) as e:
            transform(singular)(np.zeros((2, 2)))
        assert f"test_robustness.py:{line} (in singular)" in _notes(e)
        assert "inv failed" in "".join(traceback.format_exception(e.value))


def test_numpy_constructor_given_a_traced_value_suggests_its_fnp_twin():
    with pytest.raises(fg.ConcretizationError, match=r"np.full converts .*Use fnp.full"):
        fg.grad(lambda x: fnp.sum(np.full(3, x)))(2.0)


# ---- the "also" list ---------------------------------------------------------------------------

def test_float32_carry_stays_float32_as_numpy_promotes_python_numbers():
    init = np.ones(3, np.float32)
    want = init.copy()
    for i in range(5):
        want = want + 0.1 * i                  # Python float * int: a Python float (weak)
    got = fg.fori_loop(0, 5, lambda i, c: c + 0.1 * i, init)
    assert got.dtype == np.float32 and want.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    jitted = fg.jit(lambda c: fg.fori_loop(0, 5, lambda i, c: c + 0.1 * i, c))(init)
    np.testing.assert_array_equal(jitted, want)
    # arithmetic on Python-number arguments stays weak too, as in NumPy
    f32 = np.ones(2, np.float32)
    assert fg.jit(lambda x: x * 2.0 * f32)(3.0).dtype == (3.0 * 2.0 * f32).dtype == np.float32


def test_jit_on_a_method():
    class Model:
        def __init__(self):
            self.scale = 2.0

        @fg.jit
        def apply(self, x):
            return x * self.scale

    m = Model()
    np.testing.assert_array_equal(m.apply(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(m.apply(np.ones(2)), [2.0, 2.0])
    m.scale = 3.0                               # the instance is static by value: recompiles
    np.testing.assert_array_equal(m.apply(np.ones(2)), [3.0, 3.0])
    np.testing.assert_array_equal(Model.apply(m, np.ones(1)), [3.0])


def test_dataclass_with_an_init_false_field_round_trips():
    import dataclasses

    @fg.tree_util.register_dataclass
    @dataclasses.dataclass
    class P:
        w: np.ndarray
        b: np.ndarray = dataclasses.field(init=False, default=None)

    p = P(np.ones(2))
    p.b = np.full(2, 3.0)
    leaves, tree = fg.tree_util.tree_flatten(p)
    back = fg.tree_util.tree_unflatten(tree, leaves)
    assert back.b is p.b and back.w is p.w
    g = fg.grad(lambda p: fnp.sum(p.w * p.b))(p)
    np.testing.assert_array_equal(g.w, [3.0, 3.0])
    np.testing.assert_array_equal(g.b, [1.0, 1.0])


def test_out_of_range_static_argnums_is_refused():
    with pytest.raises(ValueError, match=r"static_argnums=5 refers to argument 5, but <lambda> "
                                         r"takes 2 positional"):
        fg.jit(lambda x, y: x + y, static_argnums=5)
    assert fg.jit(lambda x, n: x * n, static_argnums=-1)(np.ones(2), 3)[0] == 3.0
    assert fg.jit(lambda *a: a[0] * a[1], static_argnums=4)(np.ones(1), 2.0)[0] == 2.0


def test_disable_jit_is_per_thread():
    import threading
    calls = []

    def f(x):
        calls.append(1)                         # runs on every interpreted call
        return x * 2

    jf = fg.jit(f)
    jf(np.ones(2))
    inside, done = threading.Event(), threading.Event()

    def debugging():
        with fg.disable_jit():
            jf(np.ones(2))
            inside.set()
            done.wait(10)

    t = threading.Thread(target=debugging)
    t.start()
    assert inside.wait(10)
    before = len(calls)
    for _ in range(5):
        jf(np.ones(2))                          # this thread: still compiled
    done.set()
    t.join()
    assert len(calls) == before


def test_a_hot_function_that_raised_once_stays_compiled():
    from funcgrad.tiering import policy
    old = policy.threshold
    policy.threshold = 2
    try:
        def f(a):
            return fnp.sum(fnp.linalg.inv(a) * a)

        g = fg.grad(f)
        good = np.eye(2) * 2.0
        for _ in range(4):
            g(good)
        assert policy.explain(f)[("grad", 0, False)].startswith("compiled")
        with pytest.raises(np.linalg.LinAlgError) as e:
            g(np.zeros((2, 2)))                     # the user's error, raised from the
        assert "(in f)" in _notes(e)                # interpreter with the user's line
        assert policy.explain(f)[("grad", 0, False)].startswith("compiled")
        np.testing.assert_allclose(g(good), fg.grad(f)(good))
    finally:
        policy.threshold = old


def test_a_loop_too_long_to_differentiate_says_what_and_how():
    def loss(x):
        return fg.fori_loop(0, 10 ** 10, lambda i, c: fnp.sin(c), x)

    for transform in (fg.grad, lambda f: fg.jit(fg.grad(f))):    # interpreted, compiled
        with pytest.raises(MemoryError, match=r"10,000,000,000 steps stores 8 bytes per step.*"
                                              r"checkpoint=k") as e:
            transform(loss)(1.0)
        assert "(in loss)" in _notes(e)


# ---- NumPy warnings at the user's line ---------------------------------------------------------

def test_numpy_warnings_point_at_the_users_line_once_per_line():
    import warnings

    def f(x):
        y = fnp.log(x)
        z = 1.0 / x
        return fnp.sum(y + z)

    first = f.__code__.co_firstlineno
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            fg.grad(f)(np.array([0.0, 1.0]))
    where = [(w.filename, w.lineno, str(w.message)) for w in caught]
    assert (__file__, first + 1, "divide by zero encountered in log") in where
    assert (__file__, first + 2, "divide by zero encountered in divide") in where
    assert all(w.filename == __file__ and w.category is RuntimeWarning for w in caught)
    assert len(where) == len(set(where))              # each once, not once per call
    with np.errstate(all="raise"):                    # the user's settings still rule
        with pytest.raises(FloatingPointError):
            fg.grad(f)(np.array([0.0, 1.0]))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        fg.grad(f)(np.array([0.0, 1.0]))


def test_an_index_array_out_of_range_names_the_users_line_compiled_and_interpreted():
    def pick(x, i):
        return fnp.sum(x[i] * 2.0)

    line = pick.__code__.co_firstlineno + 1
    where = f"test_robustness.py:{line} (in pick)"
    f = fg.jit(pick)
    assert f(np.ones(3), np.array([0, 2])) == 4.0
    with pytest.raises(IndexError, match=r"index out of bounds.* at .*" + where.replace("(", r"\(").replace(")", r"\)")):
        f(np.ones(3), np.array([0, 5]))
    with pytest.raises(IndexError) as e:
        fg.grad(pick)(np.ones(3), np.array([0, 5]))
    assert where in _notes(e) or where in str(e.value)


def test_float32_floor_divide_compiles_and_matches_numpy():
    """vecmath's float floor_divide returned float64 for float32 inputs: exp of it failed to
    compile (found by the compile-splitting work)."""
    x = np.linspace(-3, 3, 13).astype(np.float32)
    q = fg.jit(lambda x: fnp.floor_divide(x, np.float32(0.3)))(x)
    assert q.dtype == np.float32
    np.testing.assert_array_equal(q, np.floor_divide(x, np.float32(0.3)))
    e = fg.jit(lambda x: fnp.exp(fnp.floor_divide(x, np.float32(0.3))))(x)
    np.testing.assert_allclose(e, np.exp(np.floor_divide(x, np.float32(0.3))), rtol=3e-7)


def test_a_long_unrolled_trace_warns_once_at_the_users_line_with_what_to_do(monkeypatch):
    import sys
    import warnings
    monkeypatch.setattr(sys.modules["funcgrad.tracer"], "LARGE_PROGRAM", 20)

    def unrolled(x):
        for _ in range(30):
            x = x + 0.001 * fnp.sin(x)                  # the line the warning names
        return fnp.sum(x)

    line = unrolled.__code__.co_firstlineno + 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            fg.grad(unrolled)(np.ones(2))
    ours = [w for w in caught if "grown past 20 equations" in str(w.message)]
    assert len(ours) == 1
    assert ours[0].filename == __file__ and ours[0].lineno == line
    assert "fg.fori_loop" in str(ours[0].message) and "fg.scan" in str(ours[0].message)
