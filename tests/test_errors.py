"""Each user error has its own type and a message naming the user's line/argument and the fix."""
import re

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

HERE = re.escape(__file__.rsplit("/", 1)[-1])


def test_grad_of_non_scalar_output_suggests_vjp():
    with pytest.raises(fg.NonScalarOutputError, match=r"shape \(3,\).*backward.*fg\.vjp"):
        fg.grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(fg.NonScalarOutputError, match="has_aux"):
        fg.grad(lambda x: (fnp.sum(x), x))(np.ones(3))


@pytest.mark.parametrize("arg, dtype", [(3, "int64"), (np.arange(3), "int64"),
                                        (np.array([True, False]), "bool")])
def test_integer_and_boolean_inputs(arg, dtype):
    def f(x):
        return fnp.sum(x * 1.0)
    with pytest.raises(fg.IntegerInputError, match=rf"argument x: it has dtype {dtype}.*argnums"):
        fg.grad(f)(arg)


def test_integer_leaf_of_pytree_is_named():
    with pytest.raises(fg.IntegerInputError, match=r"params\['n'\]"):
        fg.grad(lambda params: params["w"] * 1.0)({"w": 1.0, "n": np.arange(2)})


@pytest.mark.parametrize("body, what", [
    (lambda x: x if x > 0 else -x, r"`if`"),
    (lambda x: float(x), r"float\(\)"),
    (lambda x: int(x) * x, r"int\(\)"),
    (lambda x: x * range(x)[0], r"index"),
    (lambda x: np.asarray(x).sum(), r"NumPy array"),
])
def test_python_control_flow_on_traced_values_inside_vmap(body, what):
    """fg.vmap traces f once for every example: control flow on a value is refused there, at
    the user's line (fg.grad and fg.jit follow it: tests/test_dynamic.py)."""
    with pytest.raises(fg.ConcretizationError, match=what) as info:
        fg.vmap(body)(np.ones(2))
    msg = str(info.value)
    assert re.search(HERE + r":\d+", msg), msg            # points at this file
    assert "depends on argument 'x'" in msg and "fnp.where" in msg and "fg.vmap" in msg


def test_while_on_traced_value_inside_a_loop_body():
    def f(x):
        while x < 10:
            x = x * 2
        return x
    with pytest.raises(fg.ConcretizationError, match="while"):
        fg.grad(lambda x: fg.fori_loop(0, 2, lambda i, c: f(c), x))(1.0)
    assert fg.grad(f)(1.0) == 16.0


def test_item_assignment_suggests_at():
    def f(x):
        x[0] = 0.0
        return fnp.sum(x)
    with pytest.raises(fg.MutationError, match=r"\.at\[idx\]\.set") as info:
        fg.grad(f)(np.ones(3))
    assert re.search(HERE + r":\d+", str(info.value))
    with pytest.raises(fg.MutationError, match="fnp.sort"):
        fg.grad(lambda x: x.sort())(np.ones(3))
    with pytest.raises(fg.MutationError, match="out="):
        fg.grad(lambda x: np.sin(x, out=np.empty(3)).sum())(np.ones(3))


@pytest.mark.parametrize("call, name", [
    (lambda x: np.linalg.tensorinv(x.reshape(3, 1)), r"np\.linalg\.tensorinv"),
    (lambda x: np.spacing(x), r"np\.spacing"),
    (lambda x: np.add.reduceat(x, [0, 1]), r"np\.add\.reduceat"),
    (lambda x: np.i0(x), r"np\.i0"),
])
def test_unsupported_numpy_function_is_named(call, name):
    with pytest.raises(fg.UnsupportedFunctionError, match=name + r".*not supported") as info:
        fg.grad(lambda x: fnp.sum(call(x)))(np.ones(3))
    assert re.search(HERE + r":\d+", str(info.value))


@pytest.mark.parametrize("body, pattern", [
    (lambda x: x[:2] + x, r"broadcast together with shapes \(2,\) \(3,\)"),
    (lambda x: fnp.reshape(x, (2, 2)), r"cannot reshape array of size 3"),
    (lambda x: fnp.outer(x, x) @ x[:2], r"matmul: dimension mismatch"),
    (lambda x: fnp.concatenate([x, fnp.outer(x, x)]), r"same number of dimensions"),
])
def test_shape_errors_at_trace_time_point_at_user_line(body, pattern):
    with pytest.raises(fg.ShapeError, match=pattern) as info:
        fg.grad(lambda x: fnp.sum(body(x)))(np.ones(3))
    assert re.search(HERE + r":\d+", str(info.value))


def test_escaped_tracer():
    leaked = []
    fg.grad(lambda x: leaked.append(x) or x * 2.0)(1.0)
    with pytest.raises(fg.EscapedTracerError, match="escaped|after the transform"):
        fnp.sin(leaked[0])


def test_grad_of_a_complex_output_says_holomorphic_or_a_real_loss():
    with pytest.raises(TypeError, match=r"return a real value.*holomorphic=True.*fnp.abs"):
        fg.grad(lambda z: fnp.sin(z))(1.0 + 2.0j)
    with pytest.raises(TypeError, match="test_errors.py"):          # the user's line
        fg.grad(lambda z: z * z)(1.0 + 2.0j)
    with pytest.raises(TypeError, match=r"holomorphic=True\) requires .* complex value"):
        fg.grad(lambda x: x * x, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match=r"argument y has dtype float64.*\(y \+ 0j\)"):
        fg.grad(lambda z, y: z * y, argnums=(0, 1), holomorphic=True)(1.0 + 1j, 2.0)
    with pytest.raises(fg.ConcretizationError, match="fnp.real"):
        fg.jit(lambda z: fnp.real_if_close(z))(np.array([1.0 + 0j]))


@pytest.mark.parametrize("traced", [False, True])
def test_cond_with_a_vector_predicate_says_to_use_where(traced):
    x = np.array([1.0, -2.0])

    def f(x):
        return fg.cond(x > 0, lambda x: x, lambda x: -x, x)
    with pytest.raises(fg.ShapeError, match=r"pred must be one truth value.*fnp.where"):
        fg.jit(f)(x) if traced else f(x)


def test_concretization_advice_does_not_suggest_making_a_differentiated_argument_static():
    def f(x):
        return fg.fori_loop(0, 3, lambda i, c: c * 2.0 if c > 0 else c, x)
    with pytest.raises(fg.ConcretizationError) as info:
        fg.grad(f)(1.0)
    msg = str(info.value)
    assert "left out of argnums" not in msg and "cannot be static" in msg


def test_a_scipy_special_ufunc_on_a_traced_value_is_named_as_written():
    """One fg.scipy.special provides is dispatched there (tests/test_scipy_special.py); any
    other is named as written, not as 'np.<name>'."""
    scipy_special = pytest.importorskip("scipy.special")
    with pytest.raises(fg.UnsupportedFunctionError,
                       match=r"scipy.special's ufunc j0 .*fg.pure_callback\(scipy.special.j0"):
        fg.grad(lambda x: scipy_special.j0(x))(0.5)


class _ForeignArray:
    """Another library's array (as JAX's, PyTorch's): NumPy can read it, funcgrad refuses it
    by name. Its slots make it impossible to weakly reference, as JAX's arrays."""
    __slots__ = ("data",)

    def __init__(self, data):
        self.data = np.asarray(data, dtype=float)

    def __array__(self, dtype=None, copy=None):
        return self.data


def _foreign_arrays():
    yield _ForeignArray([1.0, 2.0])
    try:
        import jax.numpy as jnp
    except ImportError:
        return
    yield jnp.ones(2)


@pytest.mark.parametrize("transform", [fg.grad, fg.jit, lambda f: fg.jit(fg.grad(f)), fg.vmap,
                                       fg.jacfwd, fg.value_and_grad],
                         ids=["grad", "jit", "jit(grad)", "vmap", "jacfwd", "value_and_grad"])
def test_another_librarys_array_is_refused_by_name(transform):
    f = lambda x: fnp.sum(fnp.sin(x))
    for x in _foreign_arrays():
        with pytest.raises(TypeError, match=r"argument x is a .*not a NumPy array.*np\.asarray"):
            transform(f)(x)
