"""Every elementwise primitive, from the registry: forward value vs NumPy (dtype included) and
first/second derivatives vs finite differences, on scalar, vector, matrix and broadcast shapes."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.primitives.elementwise import ELEMENTWISE
from conftest import check_grads, rand

DIFFERENTIABLE = sorted(n for n, (p, u, d) in ELEMENTWISE.items() if p.differentiable)
SHAPES = {1: [((),), ((3,),), ((2, 3),)], 2: [((), ()), ((3,), (3,)), ((2, 3), (3,)),
                                              ((2, 1), (1, 3))]}


def _args(name, shapes, seed=0):
    prim, ufunc, domain = ELEMENTWISE[name]
    args = [rand(s, domain, seed=seed + i) for i, s in enumerate(shapes)]
    if name in ("power",):   # positive base, any real exponent
        args[1] = rand(shapes[1], "real", seed=seed + 7)
    return args


def test_registry_covers_the_required_surface():
    required = """add subtract multiply divide true_divide power negative absolute abs sign exp exp2
    expm1 log log2 log10 log1p sqrt cbrt square reciprocal sin cos tan arcsin arccos arctan
    arctan2 sinh cosh tanh arcsinh arccosh arctanh floor ceil round rint maximum minimum clip
    where equal not_equal less less_equal greater greater_equal logical_and logical_or
    logical_not logical_xor""".split()
    missing = [n for n in required if not hasattr(fnp, n)]
    assert not missing


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_forward_and_derivatives(name):
    ufunc = ELEMENTWISE[name][1]
    fn = getattr(fnp, name)
    for shapes in SHAPES[ufunc.nin]:
        args = _args(name, shapes)
        got = evaluate(fn, *args)
        want = ufunc(*args)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-13)
        check_grads(fn, args, order=2)


def _complex_loop(ufunc):
    try:
        ufunc.resolve_dtypes((np.dtype(complex),) * ufunc.nin + (None,) * ufunc.nout)
        return True
    except TypeError:
        return False


COMPLEX = [n for n in DIFFERENTIABLE if _complex_loop(ELEMENTWISE[n][1])]


@pytest.mark.parametrize("name", COMPLEX)
def test_complex_forward_and_derivatives(name):
    """Complex inputs: values and dtypes as NumPy's; derivatives against central differences
    along random directions in both the real and the imaginary parts, orders 1 and 2, both
    modes (holomorphic functions and the non-holomorphic abs alike)."""
    ufunc = ELEMENTWISE[name][1]
    fn = getattr(fnp, name)
    domain = ELEMENTWISE[name][2]
    for k, shapes in enumerate(SHAPES[ufunc.nin][:3]):
        args = [rand(s, domain, seed=10 * k + i, dtype=complex) for i, s in enumerate(shapes)]
        got, want = evaluate(fn, *args), ufunc(*args)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-13)
        check_grads(fn, args, order=2)
    mixed = [rand((3,), domain, seed=1), rand((3,), domain, seed=2, dtype=complex)][:ufunc.nin]
    check_grads(fn, mixed, order=2)     # a real operand promoted to complex: real cotangent


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_plain_numpy_ufunc_matches_funcgrad_numpy(name):
    ufunc = ELEMENTWISE[name][1]
    args = _args(name, SHAPES[ufunc.nin][1], seed=3)
    loss_np = lambda *a: np.sum(ufunc(*a))
    loss_fnp = lambda *a: fnp.sum(getattr(fnp, name)(*a))
    nums = tuple(range(ufunc.nin))
    for g1, g2 in zip(fg.grad(loss_np, nums)(*args), fg.grad(loss_fnp, nums)(*args)):
        np.testing.assert_array_equal(g1, g2)


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "rint", "trunc", "floor_divide",
                                  "equal", "less", "greater_equal"])
def test_zero_derivative_functions(name):
    ufunc = ELEMENTWISE[name][1]
    args = _args(name, SHAPES[ufunc.nin][1], seed=5)
    f = lambda *a: fnp.sum(fnp.asarray(getattr(fnp, name)(*a), dtype=float) * a[0])
    g = fg.grad(lambda x: fnp.sum(getattr(fnp, name)(x, *args[1:]) * 1.0))(args[0])
    np.testing.assert_array_equal(g, np.zeros_like(args[0]))
    np.testing.assert_allclose(fg.grad(f)(*args), np.asarray(ufunc(*args), float))


def test_conventions_at_nondifferentiable_points():
    z = np.zeros(3)
    assert np.all(fg.grad(lambda x: fnp.sum(fnp.abs(x)))(z) == 0)
    for f in (lambda x: fnp.maximum(x, 0.0), lambda x: np.maximum(0.0, x),
              lambda x: fnp.minimum(x, 0.0), lambda x: fnp.fmax(x, 0.0), lambda x: fnp.fmin(0.0, x)):
        assert np.all(fg.grad(lambda x: fnp.sum(f(x)))(z) == 0.5)        # a tie splits evenly
        assert np.all(fg.jit(fg.grad(lambda x: fnp.sum(f(x))))(z) == 0.5)
    assert np.all(fg.grad(lambda x: fnp.sum(fg.nn.relu(x)))(z) == 0)      # relu'(0) = 0
    with np.errstate(divide="ignore"):
        assert np.all(np.isposinf(fg.grad(lambda x: fnp.sum(fnp.sqrt(x)))(z)))   # sqrt'(0) = inf
    for f in (fnp.floor, fnp.ceil, fnp.round, fnp.sign):
        assert np.all(fg.grad(lambda x: fnp.sum(f(x)))(np.array([0.0, 0.5, 1.5, -2.0])) == 0)
    # clip passes the gradient strictly inside the interval, 0 at and beyond the bounds
    g = fg.grad(lambda x: fnp.sum(fnp.clip(x, -1.0, 1.0)))(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]))
    np.testing.assert_array_equal(g, [0, 0, 1, 0, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes_preserved_and_python_scalars_weak(dtype):
    x = rand((3,), dtype=dtype)
    f = lambda x: fnp.sum(fnp.exp(2.0 * x) / 3 + x ** 2)
    assert fg.grad(f)(x).dtype == dtype
    assert np.asarray(evaluate(f, x)).dtype == dtype
    # an integer array mixed in promotes exactly as NumPy does
    n = np.arange(3)
    assert np.asarray(evaluate(lambda x: x * n, x)).dtype == (x * n).dtype
    assert np.asarray(evaluate(lambda x: fnp.sin(n) + 0 * x, x)).dtype == (np.sin(n) + 0 * x).dtype


def test_where_selects_gradient_and_broadcasts():
    x = np.array([-1.0, 2.0, -3.0])
    g = fg.grad(lambda x: fnp.sum(fnp.where(x > 0, x ** 2, 0.5 * x)))(x)
    np.testing.assert_allclose(g, [0.5, 4.0, 0.5])
    check_grads(lambda x, y: fnp.where(x > y[0], x, y), (rand((2, 3)), rand((3,), seed=1)))


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 3, 2.0, 5])
def test_integer_powers_exact_for_negative_bases(n):
    x = np.array([-1.5, -0.5, 0.7, 2.0])
    got = evaluate(lambda x: x ** n, x)
    np.testing.assert_allclose(got, x ** n, rtol=1e-14)
    g = fg.grad(lambda x: fnp.sum(x ** n))(x)
    np.testing.assert_allclose(g, n * x ** (n - 1) if n != 0 else 0 * x, rtol=1e-13)
    check_grads(lambda x: x ** n, (x,), order=2)
    i = np.arange(1, 4)
    assert np.asarray(evaluate(lambda x: i ** 2 + 0 * x[0], x)).dtype == (i ** 2 + 0 * x[0]).dtype


def test_ties_keep_the_sum_rule():
    x = np.array([3.0, 1.0, 2.0, 5.0, 0.5])         # the middle element meets itself
    for f in (fnp.fmin, fnp.fmax, fnp.minimum, fnp.maximum):
        g = fg.grad(lambda x: fnp.sum(f(x, x[::-1])))(x)
        assert g[2] == 1.0, (f, g)
        np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(f(x, x)))(x), np.ones(5))
