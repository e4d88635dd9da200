"""Regressions of issue 28 in the funcgrad.numpy namespace and its primitives: quantile in q,
fnp.where(condition), NumPy scalar types of traced values, longdouble and __version__, einsum
broadcasting, .at on constructors, logsumexp's sign, hypot/cumprod at zeros, repeated-index
.at[].set, complex exponents."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads, rand
from funcgrad.api import evaluate

QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "hazen", "weibull",
                    "median_unbiased", "normal_unbiased", "interpolated_inverted_cdf",
                    "inverted_cdf", "averaged_inverted_cdf", "closest_observation")


# ---- 1. quantile / percentile differentiate q -------------------------------------------------

def test_quantile_derivative_in_q_is_the_slope_between_order_statistics():
    x, q = np.array([0.3, 0.5, 0.7]), np.array([0.2, 0.4, 0.9])
    jac = fg.jacrev(lambda q: fnp.quantile(x, q))(q)
    np.testing.assert_allclose(jac, np.diag([0.4, 0.4, 0.4]), atol=1e-12)
    g = fg.grad(lambda p: fnp.sum(fnp.percentile(x, p)))(100 * q)
    np.testing.assert_allclose(g, [0.004] * 3, atol=1e-12)
    g0 = fg.grad(lambda q: fnp.quantile(x, q))(0.2)        # a Python float q
    np.testing.assert_allclose(g0, 0.4)


@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_quantile_in_q_every_method(method):
    x = rand((2, 7), seed=13)
    q = np.array([0.13, 0.52, 0.64, 0.93])      # away from every method's jumps
    want = np.quantile(x, q, axis=1, method=method)
    for f in (lambda q: fnp.quantile(x, q, axis=1, method=method),
              lambda q: fnp.percentile(x, 100 * q, axis=1, method=method)):
        np.testing.assert_allclose(evaluate(f, q), want, rtol=1e-13)
        np.testing.assert_allclose(fg.jit(f)(q), want, rtol=1e-13)
        check_grads(f, (q,), order=2)
    check_grads(lambda x, q: fnp.quantile(x, q, axis=0, method=method, keepdims=True),
                (x.T, q), order=1)


def test_quantile_q_range_checked_when_traced():
    x = np.array([0.3, 0.5, 0.7])
    with pytest.raises(ValueError, match=r"range \[0, 1\]"):
        fg.grad(lambda q: fnp.quantile(x, q))(1.5)
    with pytest.raises(ValueError, match=r"range \[0, 100\]"):
        fg.grad(lambda q: fnp.percentile(x, q))(-3.0)
    # under vmap the check cannot be a Python decision: out of range gives NaN
    got = fg.vmap(lambda q: fnp.quantile(x, q))(np.array([0.25, 1.5]))
    np.testing.assert_allclose(got[0], np.quantile(x, 0.25))
    assert np.isnan(got[1])


# ---- 2. class test: every float argument of funcgrad.numpy differentiates or refuses -----------

from numpy_float_cases import ALIASES, CASES, REFUSES, SKIP  # noqa: E402


def _public_functions():
    names = set()
    for mod, prefix in ((fnp, ""), (fnp.linalg, "linalg."), (fnp.fft, "fft.")):
        for n in dir(mod):
            f = getattr(mod, n)
            if not n.startswith("_") and callable(f) and not isinstance(f, type):
                names.add(prefix + n)
    return names


def _function(name):
    mod, _, short = name.rpartition(".")
    return getattr(getattr(fnp, mod) if mod else fnp, short)


def test_every_function_has_a_float_argument_case_or_a_reason():
    names = _public_functions()
    covered = {n for n in CASES if n in names} | set(ALIASES) | set(SKIP)
    missing = sorted(names - covered)
    assert not missing, (
        f"funcgrad.numpy functions without an example call in tests/numpy_float_cases.py: "
        f"{missing}. Add each to CASES (its float arguments get differentiated) or to SKIP "
        "with the reason it takes no float or has no derivative by nature.")
    stale = sorted((set(SKIP) | set(ALIASES)) - names)
    assert not stale, f"SKIP/ALIASES name functions funcgrad.numpy does not have: {stale}"
    assert not set(SKIP) & set(CASES), "a function is both skipped and checked"


def _is_float_leaf(v):
    return isinstance(v, (float, complex)) or (isinstance(v, np.ndarray) and v.dtype.kind in "fc")


def _has_float(v):
    if isinstance(v, (list, tuple)):
        return any(_has_float(e) for e in v)
    return _is_float_leaf(v)


def _float_cases():
    out = []
    for key in sorted(set(CASES) | set(ALIASES)):
        case = CASES[ALIASES.get(key, key)]
        name = key if key in ALIASES or key in _public_functions() else None
        out.append((key, name, case))
    return out


@pytest.mark.parametrize("key,name,case", _float_cases(), ids=[c[0] for c in _float_cases()])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_every_float_argument_differentiates_or_refuses(key, name, case):
    fn = case.call(_function(name) if name else None)
    flat = list(case.args) + list(case.kwargs.values())
    labels = [f"argument {i}" for i in range(len(case.args))] + list(case.kwargs)
    nargs, keys = len(case.args), list(case.kwargs)

    def call(*vals):
        return fn(*vals[:nargs], **dict(zip(keys, vals[nargs:])))
    call.__name__ = key
    floats = [i for i, v in enumerate(flat) if _has_float(v)]
    assert floats, f"{key}: the example has no float argument; move it to SKIP with a reason"
    for i in floats:
        refusal = REFUSES.get((key, labels[i]))
        if refusal is None:
            check_grads(call, flat, order=2, argnums=i)
        else:
            with pytest.raises(refusal[0], match=refusal[1]):
                check_grads(call, flat, order=1, argnums=i)


def test_float_arguments_found_static_by_the_class_test():
    """What the class test found silently static (derivative 0 or wrong): max/min/sum/nan*'s
    initial=, var/std/nanvar's ddof, vector_norm's ord (its exponent 1/p was a constant),
    arange's float start and step, interp's period."""
    m = rand((3, 4), seed=4)
    np.testing.assert_allclose(fg.grad(lambda i: fnp.sum(fnp.max(m, axis=1, initial=i)))(5.0), 3.0)
    np.testing.assert_allclose(fg.grad(lambda i: fnp.nanmin(np.array([np.nan, 2.0]), initial=i))(
        1.0), 1.0)
    n = m.shape[1]
    ss = np.sum((m[0] - m[0].mean()) ** 2)
    np.testing.assert_allclose(fg.grad(lambda d: fnp.var(m[0], ddof=d))(0.5), ss / (n - 0.5) ** 2)
    x, eps = np.array([0.3, -0.5, 0.7]), 1e-6
    fd = (np.linalg.norm(x, 3 + eps) - np.linalg.norm(x, 3 - eps)) / (2 * eps)
    np.testing.assert_allclose(fg.grad(lambda p: fnp.linalg.norm(x, p))(3.0), fd, rtol=1e-6)
    np.testing.assert_allclose(fg.grad(lambda t: fnp.sum(fnp.arange(t, 2.1, 0.25)))(0.5), 7.0)
    np.testing.assert_allclose(fg.grad(lambda s: fnp.sum(fnp.arange(0.5, 2.1, s)))(0.25), 21.0)
    np.testing.assert_array_equal(fg.jit(lambda t: fnp.arange(t, 2.1, 0.25))(0.5),
                                  np.arange(0.5, 2.1, 0.25))
    with pytest.raises(TypeError, match="order of a matrix norm"):
        fg.grad(lambda p: fnp.linalg.norm(np.eye(2), p))(2.0)


# ---- 3. fnp.where(condition) ----------------------------------------------------------------

def test_where_with_one_argument_is_numpys_on_plain_values():
    c = np.array([[True, False], [False, True]])
    for cond in (c, c.tolist(), np.array([0.0, 2.0, 0.0, -1.0])):
        got, want = fnp.where(cond), np.where(cond)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    # traced: np.nonzero's behaviour, the indices of the call's values (no derivative is lost:
    # they are integers), a clear error where there are no values (vmap)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(x[fnp.where(x > 0)] ** 2))(x),
                               [1.0, 0.0, 4.0])
    with pytest.raises(fg.ConcretizationError, match="fnp.where\\(condition, x, y\\)"):
        fg.vmap(lambda x: fnp.where(x > 0)[0])(np.ones((2, 3)))
    with pytest.raises(ValueError, match="both or neither"):
        fnp.where(c, 1.0)


# ---- 4. NumPy scalar types of traced values ---------------------------------------------------

@pytest.mark.parametrize("typ,kind", [(np.int64, "int"), (np.int32, "int"), (np.float32, "float"),
                                      (np.complex128, "float"), (fnp.int64, "int")])
def test_numpy_scalar_type_of_traced_value_says_to_use_astype(typ, kind):
    def f(x):
        return fnp.sum(fnp.real(typ(x) * 2))
    with pytest.raises(fg.ConcretizationError,
                       match=rf"typ\(x\) of a traced value at .*test_regress_numpy.py.*"
                             rf"x.astype\(np.{typ.__name__}\)"):
        fg.grad(f)(np.array([1.5, 2.5]))
    with pytest.raises(fg.ConcretizationError, match=r"astype"):
        fg.jit(f)(np.array([1.5, 2.5]))
    # what the message says to write: a traced cast (integer: derivative 0; float: kept)
    g = fg.grad(lambda x: fnp.sum(fnp.real(x.astype(typ) * x)))(np.array([1.5, 2.5]))
    np.testing.assert_allclose(g, [1.0, 2.0] if kind == "int" else [3.0, 5.0], rtol=1e-6)


# ---- 5. longdouble, clongdouble, __version__ ----------------------------------------------------

def test_longdouble_clongdouble_and_version():
    assert fnp.longdouble is np.longdouble and fnp.clongdouble is np.clongdouble
    assert fnp.__version__ == np.__version__
    assert np.dtype(fnp.longdouble) == np.zeros(1, np.longdouble).dtype
    # long double arrays are computed in long double (interpreted; compiled code leaves them to
    # the interpreter): 1 + 2**-60 is exact there, 1.0 in float64
    x = np.array([1 + np.longdouble(2.0) ** -60])
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("long double is float64 on this platform")

    def f(x):
        return fnp.sum((x - 1) * x)
    for g in (fg.grad(f), fg.jit(fg.grad(f))):
        d = g(x)
        assert d.dtype == np.longdouble
        assert (d - 1) * 2 ** 59 == 1           # 2x - 1 = 1 + 2**-59, not 1
    assert fnp.zeros(2, dtype=fnp.longdouble).dtype == np.longdouble
    z = fg.jit(lambda z: z * 2)(np.ones(2, fnp.clongdouble))
    assert z.dtype == np.clongdouble


# ---- 6. einsum broadcasts size-1 dimensions ---------------------------------------------------

EINSUM_BROADCASTS = [
    ("mnd,mdo->mno", (1, 4, 1), (3, 1, 5)),         # the issue's case: shape (3, 4, 5)
    ("ij,jk->ik", (2, 1), (3, 4)),                  # a contracted dimension of size 1
    ("ij,jk", (2, 3), (1, 4)),                      # implicit output
    ("...ij,...jk->...ik", (2, 1, 3, 4), (5, 4, 6)),
    ("bi,bi->b", (1, 3), (4, 3)),
    ("ij,ij->ij", (3, 1), (1, 4)),
]


@pytest.mark.parametrize("subs,sa,sb", EINSUM_BROADCASTS)
def test_einsum_broadcasts_size_one_dimensions(subs, sa, sb):
    a, b = rand(sa, seed=1), rand(sb, seed=2)
    want = np.einsum(subs, a, b)
    f = lambda a, b: fnp.einsum(subs, a, b)       # noqa: E731
    np.testing.assert_allclose(f(a, b), want, rtol=1e-12)               # untraced
    np.testing.assert_allclose(evaluate(f, a, b), want, rtol=1e-12)     # traced
    np.testing.assert_allclose(fg.jit(f)(a, b), want, rtol=1e-12)       # compiled
    check_grads(f, (a, b), order=2)
    assert fg.grad(lambda a: fnp.sum(f(a, b)))(a).shape == sa


def test_einsum_gradient_of_a_broadcast_dimension_sums():
    a, b = rand((3, 1), seed=1), rand((1, 4), seed=2)      # out[i, j] = a[i, 0] * b[0, j]
    ga, gb = fg.grad(lambda a, b: fnp.sum(fnp.einsum("ij,ij->ij", a, b)), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, np.full((3, 1), b.sum()), rtol=1e-12)
    np.testing.assert_allclose(gb, np.full((1, 4), a.sum()), rtol=1e-12)


def test_einsum_mismatched_sizes_still_refused():
    with pytest.raises(fg.ShapeError, match=r"size mismatch for dimension 'j': \[2, 3\] .*"
                                            r"\(2, 2\), \(3, 4\)"):
        fg.make_ir(lambda a: fnp.einsum("ij,jk->ik", a, np.ones((3, 4))))(np.ones((2, 2)))
    with pytest.raises(ValueError, match="collapsing index 'i'"):
        fg.make_ir(lambda a: fnp.einsum("ii->i", a))(np.ones((1, 3)))
    with pytest.raises(ValueError):     # plain arrays: NumPy's own einsum and error
        fnp.einsum("ij,jk->ik", np.ones((2, 2)), np.ones((3, 4)))


# ---- 7. .at on the buffers fnp's constructors make inside traced functions --------------------

BUFFERS = [
    ("zeros", lambda: fnp.zeros(3)), ("ones", lambda: fnp.ones(3)),
    ("empty", lambda: fnp.empty(3) * 0), ("full", lambda: fnp.full(3, 0.5)),
    ("eye", lambda: fnp.eye(3)[0]), ("identity", lambda: fnp.identity(3)[1]),
    ("zeros_like", lambda: fnp.zeros_like(np.ones(3))),
    ("ones_like", lambda: fnp.ones_like(np.ones(3))),
    ("full_like", lambda: fnp.full_like(np.ones(3), 2.0)),
]


@pytest.mark.parametrize("name,make", BUFFERS, ids=[b[0] for b in BUFFERS])
def test_at_on_constructor_buffers_inside_grad(name, make):
    idx, v = np.array([0, 2, 2]), np.array([1.0, 2.0, 3.0])
    base = np.asarray(make())
    assert type(base) is np.ndarray             # outside any trace: NumPy's array

    def f(v):
        return fnp.sum(make().at[idx].add(v) ** 2)
    want_out = base.copy()
    np.add.at(want_out, idx, v)
    want = 2 * want_out[idx]                    # d/dv_k of sum(out^2) = 2 out[idx_k]
    np.testing.assert_allclose(fg.grad(f)(v), want)
    np.testing.assert_allclose(fg.jit(fg.grad(f))(v), want)
    np.testing.assert_allclose(fg.vmap(fg.grad(f))(np.stack([v, v])), np.stack([want, want]))
    check_grads(f, (v,), order=2)


def test_writing_into_a_constructor_buffer_inside_a_trace_is_a_clear_error():
    def f(x):
        b = fnp.zeros(3)
        b[0] = x[0]                 # was: a NumPy buffer silently holding x[0]'s number
        return fnp.sum(b)
    with pytest.raises(fg.MutationError, match=r"x.at\[idx\].set\(value\)"):
        fg.grad(f)(np.ones(3))
    # outside a trace the constructors are NumPy's (writable, no .at)
    b = fnp.zeros(3)
    b[0] = 1.0
    assert b[0] == 1.0 and not hasattr(b, "at")


# ---- 8. logsumexp(return_sign=True) -------------------------------------------------------------

LSE_CASES = [
    dict(a=[1.0, 2.0], b=[1.0, -2.0]),                      # a negative sum
    dict(a=[[1.0, 2.0], [3.0, 4.0]], axis=1, b=[1.0, -3.0], keepdims=True),
    dict(a=[[0.5, 2.0, -1.0], [3.0, 4.0, 1.0]], axis=0, b=[[1.0, -1.0, 2.0], [-2.0, 0.5, 1.0]]),
    dict(a=[1.0, 1.0], b=[1.0, -1.0]),                      # a zero sum: (-inf, 0)
    dict(a=[np.inf, 1.0], b=[0.0, 1.0]),                    # b == 0 ignores its a
    dict(a=[1000.0, 1.0], b=[0.0, 1.0]),
    dict(a=[-np.inf, -np.inf]),
    dict(a=[1.0 + 1.0j, 2.0]),                              # complex: the sign is s / |s|
    dict(a=[1.0, 2.0], b=[1.0j, 2.0]),
]


@pytest.mark.parametrize("case", LSE_CASES)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_logsumexp_return_sign_is_scipys(case):
    from scipy.special import logsumexp as scipy_lse
    kw = {k: np.asarray(v) if k in "ab" else v for k, v in case.items()}
    a = kw.pop("a")
    for rs in (True, False):
        want = scipy_lse(a, **kw, return_sign=rs)
        f = lambda a: fg.scipy.special.logsumexp(a, **kw, return_sign=rs)   # noqa: E731
        for got in (f(a), evaluate(f, a), fg.jit(f)(a)):
            for g, w in zip(*((got, want) if rs else ((got,), (want,)))):
                assert np.shape(g) == np.shape(w)
                np.testing.assert_allclose(g, w, rtol=1e-13)


def test_logsumexp_return_sign_gradients():
    a, b = rand((2, 3), seed=3), np.array([[1.0, -1.5, 0.5], [-2.0, 0.25, 1.0]])
    for axis in (None, 0, 1):
        check_grads(lambda a, b: fnp.logsumexp(a, axis=axis, b=b, return_sign=True)[0], (a, b),
                    order=2)
        check_grads(lambda a, b: fnp.logsumexp(a, axis=axis, b=b, return_sign=True)[0], (a, b),
                    order=1, modes=("rev",))
    # d log|s| / d a_i = b_i exp(a_i) / s, negative sums included
    s = np.sum(b * np.exp(a))
    g = fg.grad(lambda a: fnp.logsumexp(a, b=b, return_sign=True)[0])(a)
    np.testing.assert_allclose(g, b * np.exp(a) / s, rtol=1e-12)
    np.testing.assert_allclose(fg.jit(fg.grad(lambda a: fnp.logsumexp(
        a, b=b, return_sign=True)[0]))(a), b * np.exp(a) / s, rtol=1e-12)
    # a zero weight: no derivative in its a, the derivative exp(a_i) / s in its b
    b0 = np.array([1.0, 0.0, 2.0])
    x = np.array([0.3, 0.9, -0.2])
    ga, gb = fg.grad(lambda a, b: fnp.logsumexp(a, b=b, return_sign=True)[0],
                     argnums=(0, 1))(x, b0)
    s0 = np.sum(b0 * np.exp(x))
    np.testing.assert_allclose(ga, b0 * np.exp(x) / s0, rtol=1e-12)
    np.testing.assert_allclose(gb, np.exp(x) / s0, rtol=1e-12)


# ---- 9. hypot at (0, 0), cumprod at zeros: interpreted, tiered and compiled agree ----------------

def _three_modes(f, args, argnums=0):
    """fg.grad(f, argnums) interpreted (first call), tiered (called until its tier compiled)
    and compiled (fg.jit(fg.grad(f)))."""
    from funcgrad.tiering import policy
    interpreted = fg.grad(f, argnums=argnums)(*args)
    for _ in range(12):
        tiered = fg.grad(f, argnums=argnums)(*args)
    assert any(t.jitted for t in policy.tiers(f).values()), "the grad tier did not compile"
    compiled = fg.jit(fg.grad(f, argnums=argnums))(*args)
    return interpreted, tiered, compiled


def _brute_cumprod_grad(x, ct):
    """d sum_k ct_k prod_{j<=k} x_j / d x_i, by products of the other elements (no division)."""
    n, g = len(x), np.zeros(len(x))
    for i in range(n):
        for k in range(i, n):
            g[i] += ct[k] * np.prod(np.delete(x[:k + 1], i))
    return g


@pytest.mark.parametrize("x", [[2.0, 3.0, 0.0, 4.0], [0.0, 3.0, 0.0, 4.0, 5.0], [0.0, 0.0],
                               [1.5, -2.0, 0.5, 0.0, 0.0, 3.0, -1.0], [0.0], [2.0, 3.0, 4.0]])
def test_cumprod_gradient_is_exact_at_zeros(x):
    x = np.array(x)
    ct = np.arange(1.0, len(x) + 1)
    f = lambda x: fnp.sum(fnp.cumprod(x) * ct)          # noqa: E731
    want = _brute_cumprod_grad(x, ct)
    for got in _three_modes(f, (x,)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    check_grads(f, (x,), order=2)
    # second order against the polynomial's own Hessian (finite differences of the brute rule)
    h, eps = fg.hessian(f)(x), 1e-6
    fd = np.stack([(_brute_cumprod_grad(x + eps * e, ct) - _brute_cumprod_grad(x - eps * e, ct))
                   / (2 * eps) for e in np.eye(len(x))])
    np.testing.assert_allclose(h, fd, atol=1e-6)


def test_sum_of_cumprod_example_from_the_issue():
    # d/dx of sum(cumprod([2, 3, 0, 4])) = [1 + 3, 2, 2*3 + 2*3*4, 0] (not NaN at the zero)
    for got in _three_modes(lambda x: fnp.sum(fnp.cumprod(x)), (np.array([2.0, 3.0, 0.0, 4.0]),)):
        np.testing.assert_allclose(got, [4.0, 2.0, 30.0, 0.0])


@pytest.mark.parametrize("axis", [0, 1, None])
def test_cumprod_along_an_axis_with_zeros(axis):
    x = np.array([[2.0, 0.0, 3.0, 1.5], [0.0, -1.0, 0.5, 2.0], [1.0, 2.0, 0.0, 0.0]])
    w = rand(np.cumprod(x, axis=axis).shape, seed=5)
    f = lambda x: fnp.sum(fnp.cumprod(x, axis=axis) * w)     # noqa: E731
    moved = x.reshape(-1) if axis is None else np.moveaxis(x, axis, -1)
    wm = w if axis is None else np.moveaxis(w, axis, -1)
    want = (_brute_cumprod_grad(moved, wm) if axis is None else np.moveaxis(np.stack(
        [_brute_cumprod_grad(r, c) for r, c in zip(moved, wm)]), -1, axis)).reshape(x.shape)
    for got in _three_modes(f, (x,)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    check_grads(f, (x,), order=2)
    check_grads(lambda z: fnp.cumprod(z, axis=axis), (x + 0.5j * x[::-1],), order=1)  # complex


def test_hypot_at_the_origin_has_derivative_zero():
    # the minimum-norm subgradient, as abs(0) and linalg.norm at 0 (docs/conventions.md)
    f = lambda x, y: fnp.hypot(x, y)                     # noqa: E731
    for got in _three_modes(f, (0.0, 0.0), argnums=(0, 1)):
        np.testing.assert_array_equal(got, (0.0, 0.0))
    xs, ys = np.array([0.0, 3.0, -0.0, 1e-300]), np.array([0.0, -4.0, 2.0, 0.0])
    g = lambda x, y: fnp.sum(fnp.hypot(x, y))            # noqa: E731
    for gx, gy in _three_modes(g, (xs, ys), argnums=(0, 1)):
        np.testing.assert_allclose(gx, [0.0, 0.6, 0.0, 1.0])
        np.testing.assert_allclose(gy, [0.0, -0.8, 1.0, 0.0])
    check_grads(g, (np.array([0.3, -1.0]), np.array([0.4, 2.0])), order=2)


# ---- 10. .at[idx].set(v) with repeated indices: the write that won gets the cotangent ---------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_W = np.array([1.0, -2.0, 3.0, 0.5, 4.0])            # loss weights on the 5 positions


def _set_loss(x, v, idx):
    return fnp.sum(x.at[idx].set(v) * _W)


def _reference(x, v, idx):
    """NumPy's assignment (the last write wins) and the gradient that follows it."""
    out = x.copy()
    out[idx] = v
    pos = np.asarray(idx) % len(x)
    last = {p: k for k, p in enumerate(pos)}
    gv = np.array([_W[p] if last[p] == k else 0.0 for k, p in enumerate(pos)])
    gx = np.where(np.isin(np.arange(len(x)), pos), 0.0, _W)
    return out, gx, gv


def test_set_with_repeated_indices_routes_the_cotangent_to_the_last_write():
    x, v, idx = np.arange(1.0, 6.0), np.array([0.1, 0.2, 0.3, 0.4, 0.5]), np.array([0, 2, 0, 1, 2])
    out, gx, gv = _reference(x, v, idx)
    np.testing.assert_array_equal(gv, [0.0, 0.0, 1.0, -2.0, 3.0])
    for idx_traced in (False, True):
        f = (lambda x, v, i: _set_loss(x, v, i)) if idx_traced else \
            (lambda x, v, i: _set_loss(x, v, idx))
        for got in _three_modes(f, (x, v, idx), argnums=(0, 1)):
            np.testing.assert_array_equal(got[0], gx)
            np.testing.assert_array_equal(got[1], gv)
    # forward mode and second order follow the same write
    _, tangent = fg.jvp(lambda x, v: x.at[idx].set(v), (x, v), (np.zeros(5), np.arange(1.0, 6.0)))
    np.testing.assert_array_equal(tangent, [3.0, 4.0, 5.0, 0.0, 0.0])
    check_grads(lambda x, v: fnp.sum(x.at[idx].set(v * v) ** 2), (x, v), order=2)


_compiled_set = fg.jit(fg.value_and_grad(_set_loss, argnums=(0, 1)))
_compiled_fwd = fg.jit(lambda x, v, i: x.at[i].set(v))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(-5, 4), min_size=7, max_size=7),
       st.lists(st.floats(-3, 3), min_size=7, max_size=7))
def test_set_with_random_repeated_indices_compiled_equals_interpreted(idx, v):
    idx, v, x = np.array(idx), np.array(v), np.linspace(-1.0, 1.0, 5)
    out, gx, gv = _reference(x, v, idx)
    np.testing.assert_array_equal(evaluate(lambda x, v, i: x.at[i].set(v), x, v, idx), out)
    np.testing.assert_array_equal(_compiled_fwd(x, v, idx), out)
    interpreted = fg.value_and_grad(_set_loss, argnums=(0, 1))(x, v, idx)
    compiled = _compiled_set(x, v, idx)
    for got in (interpreted, compiled):
        np.testing.assert_allclose(got[0], np.sum(out * _W), rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(got[1][0], gx)
        np.testing.assert_array_equal(got[1][1], gv)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(0, 3), min_size=6, max_size=6))
def test_set_with_constant_repeated_indices_2d_compiled_equals_interpreted(rows):
    """Constant index arrays (the mask is computed while tracing) on a 2-D array, with a slice."""
    x, idx = np.arange(12.0).reshape(4, 3), np.array(rows)
    w = np.arange(1.0, 13.0).reshape(4, 3)
    v = np.linspace(0.5, 3.0, 18).reshape(6, 3)
    f = lambda x, v: fnp.sum(x.at[idx, :].set(v) * w)     # noqa: E731
    ref = x.copy()
    ref[idx, :] = v
    last = {r: k for k, r in enumerate(rows)}
    gv = np.stack([w[r] if last[r] == k else np.zeros(3) for k, r in enumerate(rows)])
    for g in (fg.grad(f, argnums=1)(x, v), fg.jit(fg.grad(f, argnums=1))(x, v)):
        np.testing.assert_array_equal(g, gv)
    np.testing.assert_array_equal(fg.jit(lambda x, v: x.at[idx, :].set(v))(x, v), ref)


# ---- 11. complex Python scalar exponents ------------------------------------------------------

COMPLEX_EXPONENTS = [1 + 1j, 2j, 0.5j, -0.5j, 2 + 0j, -1 + 0j, 3 + 0j, 0.5 + 0j]


def _bits(a):
    return np.asarray(a).view(np.float64)


@pytest.mark.parametrize("c", COMPLEX_EXPONENTS)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_complex_scalar_exponent_is_numpys(c):
    z = np.array([1 + 2j, -0.5 + 0.3j, 0j, -2 + 0j, 3 + 0j])
    x = np.array([0.5, 2.0, -1.5, 0.0, -0.0])            # a real base becomes complex
    for a in (z, x):
        want = a ** c
        for got in (evaluate(lambda a: a ** c, a), fg.jit(lambda a: a ** c)(a),
                    evaluate(lambda a: fnp.power(a, c), a)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(_bits(got), _bits(want))      # bit for bit
    np.testing.assert_array_equal(_bits(fg.jit(lambda t: c ** t)(x)), _bits(c ** x))


@pytest.mark.parametrize("c", [1 + 1j, 2j, 0.5j, 2 + 0j])
def test_complex_scalar_exponent_derivatives(c):
    z, x = np.array([1 + 2j, -0.5 + 0.3j]), np.array([0.5, 2.0, -1.5])
    want = c * z ** (c - 1)
    f = lambda z: fnp.sum(z ** c)                         # noqa: E731
    np.testing.assert_allclose(fg.grad(f, holomorphic=True)(z), want, rtol=1e-13)
    np.testing.assert_allclose(fg.jit(fg.grad(f, holomorphic=True))(z), want, rtol=1e-13)
    check_grads(lambda z: z ** c, (z,), order=2)
    check_grads(lambda x: x ** c, (x,), order=2)         # real in, complex out
    np.testing.assert_allclose(np.diag(fg.jacfwd(lambda x: x ** c)(x)),
                               c * x.astype(complex) ** (c - 1), rtol=1e-13)
    g = fg.grad(lambda x: fnp.sum(fnp.real(x ** c)))(x)
    np.testing.assert_allclose(g, np.real(c * x.astype(complex) ** (c - 1)), rtol=1e-13)
