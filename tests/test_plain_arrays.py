"""funcgrad.numpy on plain arrays is NumPy: every argument reaches NumPy's own function
(export(numpy=...) hands the call over in one place), `out=` included; with traced values
`out=` is a MutationError at the user's line (traced arrays are immutable)."""
import inspect

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import MutationError, UnsupportedFunctionError
from funcgrad.primitives.base import has_traced, is_traced, numpy_fallback
from conftest import rand

M = rand((3, 4), seed=1)
SQ = rand((3, 3), seed=2) + 3 * np.eye(3)
V = rand((4,), seed=3)

# an example call per function that takes `out`: L is the namespace (np or fnp), x the array
OUT_CASES = {
    "sum": lambda L, x, **k: L.sum(x, axis=0, **k),
    "prod": lambda L, x, **k: L.prod(x, axis=1, **k),
    "max": lambda L, x, **k: L.max(x, **k),
    "amax": lambda L, x, **k: L.amax(x, axis=1, **k),
    "min": lambda L, x, **k: L.min(x, axis=0, **k),
    "amin": lambda L, x, **k: L.amin(x, **k),
    "mean": lambda L, x, **k: L.mean(x, axis=0, **k),
    "var": lambda L, x, **k: L.var(x, axis=1, **k),
    "std": lambda L, x, **k: L.std(x, **k),
    "all": lambda L, x, **k: L.all(x > 0, axis=0, **k),
    "any": lambda L, x, **k: L.any(x > 0, axis=1, **k),
    "argmax": lambda L, x, **k: L.argmax(x, axis=1, **k),
    "argmin": lambda L, x, **k: L.argmin(x, **k),
    "cumsum": lambda L, x, **k: L.cumsum(x, axis=1, **k),
    "cumprod": lambda L, x, **k: L.cumprod(x, **k),
    "ptp": lambda L, x, **k: L.ptp(x, axis=0, **k),
    "median": lambda L, x, **k: L.median(x, axis=1, **k),
    "quantile": lambda L, x, **k: L.quantile(x, 0.3, axis=0, **k),
    "percentile": lambda L, x, **k: L.percentile(x, 70.0, **k),
    "nansum": lambda L, x, **k: L.nansum(x, axis=0, **k),
    "nanprod": lambda L, x, **k: L.nanprod(x, axis=0, **k),
    "nanmean": lambda L, x, **k: L.nanmean(x, axis=1, **k),
    "nanmax": lambda L, x, **k: L.nanmax(x, axis=0, **k),
    "nanmin": lambda L, x, **k: L.nanmin(x, **k),
    "nanvar": lambda L, x, **k: L.nanvar(x, axis=0, **k),
    "nanstd": lambda L, x, **k: L.nanstd(x, axis=0, **k),
    "isneginf": lambda L, x, **k: L.isneginf(x, **k),
    "isposinf": lambda L, x, **k: L.isposinf(x, **k),
    "take": lambda L, x, **k: L.take(x, [0, 2], axis=1, **k),
    "trace": lambda L, x, **k: L.trace(x, **k),
    "concatenate": lambda L, x, **k: L.concatenate([x, 2 * x], axis=1, **k),
    "concat": lambda L, x, **k: L.concatenate([x, x], **k) if L is np else L.concat([x, x], **k),
    "stack": lambda L, x, **k: L.stack([x, x], axis=-1, **k),
    "dot": lambda L, x, **k: L.dot(x, x.T, **k),
    "outer": lambda L, x, **k: L.outer(x[0], x[1], **k),
    "einsum": lambda L, x, **k: L.einsum("ij,kj->ik", x, x, **k),
    "clip": lambda L, x, **k: L.clip(x, -0.5, 0.5, **k),
    "round": lambda L, x, **k: L.round(x, 2, **k),
    "around": lambda L, x, **k: L.round(x, 1, **k) if L is np else L.around(x, 1, **k),
    "round_": lambda L, x, **k: L.round(x, 3, **k) if L is np else L.round_(x, 3, **k),
    "linalg.multi_dot": lambda L, x, **k: L.linalg.multi_dot([x, x.T, x], **k),
    **{"fft." + n: (lambda n: lambda L, x, **k: getattr(L.fft, n)(x, **k))(n)
       for n in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                 "irfft2", "rfftn", "irfftn", "hfft", "ihfft")},
    "choose": lambda L, x, **k: L.choose(np.array([[0], [1], [0]]), [x, 2 * x], **k),
    "compress": lambda L, x, **k: L.compress([True, False, True], x, axis=0, **k),
    "cumulative_sum": lambda L, x, **k: L.cumulative_sum(x, axis=1, **k),
    "cumulative_prod": lambda L, x, **k: L.cumulative_prod(x, axis=0, **k),
    "nanmedian": lambda L, x, **k: L.nanmedian(x, axis=0, **k),
    "nanquantile": lambda L, x, **k: L.nanquantile(x, 0.3, axis=1, **k),
    "nanpercentile": lambda L, x, **k: L.nanpercentile(x, 30.0, axis=0, **k),
    "nancumsum": lambda L, x, **k: L.nancumsum(x, axis=1, **k),
    "nancumprod": lambda L, x, **k: L.nancumprod(x, axis=0, **k),
    "nanargmax": lambda L, x, **k: L.nanargmax(x, axis=1, **k),
    "nanargmin": lambda L, x, **k: L.nanargmin(x, axis=0, **k),
    "ufunc add": lambda L, x, **k: L.add(x, 1.5, **k),
    "ufunc arctan2": lambda L, x, **k: L.arctan2(x, 2.0, **k),
}


def _takes_out(f):
    try:
        return "out" in inspect.signature(f).parameters
    except (TypeError, ValueError):
        return False


def test_every_function_that_takes_out_has_a_case():
    names = {n for n in dir(fnp) if not n.startswith("_") and _takes_out(getattr(fnp, n))}
    names |= {"linalg." + n for n in dir(fnp.linalg) if _takes_out(getattr(fnp.linalg, n))}
    names |= {"fft." + n for n in dir(fnp.fft) if _takes_out(getattr(fnp.fft, n))}
    assert sorted(names - set(OUT_CASES)) == [], "add an example call to OUT_CASES"


@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_out_is_numpys_on_plain_arrays_and_refused_when_traced(name):
    case = OUT_CASES[name]
    want = case(np, M)
    buf, numpys = (np.full(np.shape(want), 7, np.asarray(want).dtype) for _ in range(2))
    got, expected = case(fnp, M, out=buf), case(np, M, out=numpys)
    assert (got is buf) == (expected is numpys)   # (NumPy's ifft2 and hfft return a new array)
    np.testing.assert_array_equal(buf, numpys)
    np.testing.assert_array_equal(got, want)
    label = {"amax": "max", "amin": "min", "concat": "concatenate", "around": "round",
             "round_": "round"}.get(name, name).replace("ufunc ", "")
    message = rf"np\.{label}\(\.\.\., out=\.\.\.\).*test_plain_arrays\.py:\d+.*return value"
    for L in (fnp, np):         # funcgrad.numpy's function, and NumPy's dispatching to it
        with pytest.raises(MutationError, match=message):
            fg.make_ir(lambda x: case(L, x, out=np.zeros_like(want)))(M)
        # plain inputs, traced buffer (NumPy's own nanargmax passes out on to np.argmax)
        inner = message.replace("nanarg", "(nan)?arg") if L is np else message
        with pytest.raises(MutationError, match=inner):
            fg.make_ir(lambda b: case(L, M, out=b))(np.zeros_like(want))


def test_ufunc_keywords_reach_numpy_on_plain_arrays():
    assert fnp.exp(V, dtype=np.float32).dtype == np.float32
    buf = np.zeros(4)
    assert fnp.add(V, 1.0, buf) is buf and np.array_equal(buf, V + 1.0)    # out by position
    fg.make_ir(lambda x: fnp.exp(x, out=None))(V)             # out=None is no write
    np.testing.assert_array_equal(fnp.add(V, V, where=V > 0, out=np.zeros(4)),
                                  np.add(V, V, where=V > 0, out=np.zeros(4)))
    with pytest.raises(UnsupportedFunctionError, match="dtype"):
        fg.make_ir(lambda x: fnp.exp(x, dtype=np.float32))(V)


def test_plain_calls_pass_every_argument_to_numpy():
    assert fnp.ascontiguousarray(M.T).flags.c_contiguous
    assert fnp.zeros_like(M, order="F").flags.f_contiguous
    assert fnp.full_like(M, 2.0, None, "F").flags.f_contiguous
    f = fnp.array(M, order="F", ndmin=3)
    assert f.shape == (1, 3, 4) and f.flags.f_contiguous
    np.testing.assert_array_equal(fnp.argmax(M, axis=1, keepdims=True),
                                  np.argmax(M, axis=1, keepdims=True))
    np.testing.assert_array_equal(fnp.cumsum(M > 0, axis=0, dtype=np.int8),
                                  np.cumsum(M > 0, axis=0, dtype=np.int8))
    people = np.array([(2, "b"), (1, "c"), (2, "a")], dtype=[("n", int), ("s", "U1")])
    np.testing.assert_array_equal(fnp.sort(people, order="s"), np.sort(people, order="s"))
    ties = np.tile([1.0, 0.0], 200)              # (quicksort reorders ties of this length)
    stable = np.argsort(ties, kind="stable")
    np.testing.assert_array_equal(fnp.argsort(ties, kind="quicksort"), stable)
    np.testing.assert_array_equal(fg.jit(lambda x: fnp.argsort(x))(ties), stable)  # traced too
    assert fg.jit(lambda a: fnp.trace(a))(np.eye(3, dtype=np.int32)).dtype == np.trace(
        np.eye(3, dtype=np.int32)).dtype


def test_generators_of_traced_values_are_sequences():
    """fnp.concatenate / fnp.stack of a generator: its items (traced ones too) are listed first."""
    x = np.arange(12.0).reshape(3, 4)
    for fn, np_fn in ((fnp.concatenate, np.concatenate), (fnp.stack, np.stack)):
        got = fg.jit(lambda t: fn(t[i] * 2 for i in range(3)))(x)
        np.testing.assert_array_equal(got, np_fn([x[i] * 2 for i in range(3)]))


def test_numpy_fallback_reads_the_named_arguments_however_given():
    """The fallback finds traced values in the parameters it is told to look at, given by
    position or keyword, with or without *args/**kwargs in the signature."""
    traced = fg.make_ir(lambda x: calls.append(x) or x)
    calls = []
    traced(1.0)
    t = calls[0]

    def make(fn, names, check=is_traced):
        return numpy_fallback(lambda *a, **k: "numpy", names, check=check)(fn)

    f = make(lambda a, b=None, *, c=None: "traced", ("b", "c"))
    assert [f(t), f(1, t), f(1, b=t), f(1, c=t), f(t, 2, c=3)] == \
        ["numpy", "traced", "traced", "traced", "numpy"]
    g = make(lambda a, *rest, scale=None: "traced", ("rest", "scale"), check=has_traced)
    assert [g(t), g(1, 2, t), g(1, [t]), g(1, scale=t), g(1, 2)] == \
        ["numpy", "traced", "traced", "traced", "numpy"]
    h = make(lambda a, **kw: "traced", ("kw",))
    assert [h(t), h(1, x=t), h(1, x=2)] == ["numpy", "traced", "numpy"]
