"""funcgrad.backend.vecmath: ulp error against long-double (float64) or float64 (float32)
references over every magnitude, NumPy's special values, arguments nearest to multiples of
pi/2, and that a loop over each function vectorises."""
import re
from fractions import Fraction

import numba
import numpy as np
import pytest

from funcgrad.backend.vecmath import FUNCTIONS, TRIG_MAX
from funcgrad.testing import ulp_errors

NAMES = ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh")
DTYPES = ("float64", "float32")
MAX_ULP = 2.0
N = 100_000
EXTENDED = np.finfo(np.longdouble).nmant >= 63      # x86 80-bit or IEEE quad long double
# 100 digits of pi, only used to find doubles near multiples of pi/2 (the reference is libm's)
PI = Fraction("3.141592653589793238462643383279502884197169399375105820974944592307816406286"
              "208998628034825342117068")

# scalar float calls, or vector math intrinsics (LLVM expands those into a libm call per lane)
LIBM_CALLS = (r"call [^<]*(double|float) @"
              r"|@llvm\.(exp|exp2|exp10|log|log2|log10|sin|cos|tan|tanh|pow)\.v")
_APPLY = {}


def run(name, x):
    """FUNCTIONS[name, x.dtype] applied by one compiled loop (compiled once per function)."""
    key = (name, x.dtype.name)
    if key not in _APPLY:
        f = FUNCTIONS[key]

        @numba.njit(error_model="numpy")
        def apply(a, out):
            for i in range(a.size):
                out[i] = f(a[i])
        _APPLY[key] = apply
    out = np.empty_like(x)
    _APPLY[key](x, out)
    return out


def reference(name, x):
    wide = np.longdouble if x.dtype == np.float64 else np.float64
    with np.errstate(all="ignore"):
        return getattr(np, name)(x.astype(wide))


def samples(name, dtype, rng):
    """Arrays of N points per range: log-uniform magnitudes (both signs unless noted)."""
    fi = np.finfo(dtype)
    big, tiny, sub = float(fi.max), float(fi.tiny), float(fi.smallest_subnormal)

    def mag(lo, hi, signed=True):
        m = np.exp(rng.uniform(np.log(lo), np.log(hi), N))
        return m * rng.choice([-1.0, 1.0], N) if signed else m
    ln_max, ln_sub = np.log(big), np.log(sub)
    trig = [mag(1e-20, 1), mag(1, 1e5), mag(1e5, TRIG_MAX), mag(TRIG_MAX, big),
            np.where(rng.random(N) < 0.05, mag(TRIG_MAX, big), mag(1e-3, 10))]  # mixed lanes
    table = {
        "exp": [mag(1e-20, 1), mag(1, 1.01 * ln_max),
                rng.uniform(1.01 * ln_sub, np.log(tiny), N)],       # subnormal results
        "expm1": [mag(1e-20, 1), mag(1, 1.01 * ln_max)],
        "log": [mag(sub, tiny, False), mag(tiny, big, False), rng.uniform(0.5, 2.0, N)],
        "log1p": [mag(1e-20, 1), mag(1, big, False), rng.uniform(-1.0, 1.0, N)],
        "sin": trig, "cos": trig,
        "tanh": [mag(1e-20, 1), mag(1, 30)],
    }
    with np.errstate(over="ignore"):
        return [np.asarray(a, dtype) for a in table[name]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_ulp_error_over_all_magnitudes(name, dtype):
    if dtype == "float64" and not EXTENDED:
        pytest.skip("float64 references need an extended long double")
    rng = np.random.default_rng(NAMES.index(name))
    for x in samples(name, dtype, rng):
        err = ulp_errors(run(name, x), reference(name, x))
        worst = int(np.argmax(err))
        assert err[worst] <= MAX_ULP, (name, dtype, x[worst], err[worst])


def _special_inputs(dtype):
    fi = np.finfo(dtype)
    common = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 3.0, -3.0,
              fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, fi.max, -fi.max,
              -0.9999999, 1e-30, -1e-30, 1e8, 1.0000001e8, 3e15, -1e22, 2.0 ** 60, 1e300]
    if dtype == "float64":
        edges = [709.78, 709.79, 710.0, -708.0, -740.0, -745.1, -745.2, -746.0, 1000.0, -1000.0]
    else:
        edges = [88.72, 88.73, 89.0, -87.0, -100.0, -103.9, -104.0, -200.0]
    with np.errstate(over="ignore"):
        return np.array(common + edges, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_special_values_match_numpy(name, dtype):
    x = _special_inputs(dtype)
    got = run(name, x)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    exact = ~np.isfinite(want) | (want == 0)            # inf, NaN and signed zeros
    assert np.array_equal(got[exact], want[exact], equal_nan=True), (x[exact], got[exact])
    assert np.array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))
    with np.errstate(invalid="ignore"):
        close = np.abs(got - want) <= (MAX_ULP + 1) * np.spacing(np.abs(want))  # + NumPy's own
    assert close[~exact].all(), (x[~exact & ~close], got[~exact & ~close])


def _near_multiples_of_half_pi(mantissa_bits, exponents):
    """Floats p * 2**e in [1, TRIG_MAX] with p / q a continued-fraction convergent of
    (pi/2) / 2**e: the arguments closest to multiples of pi/2, where reduction cancels most."""
    out = []
    for e in exponents:
        y = PI / 2 / Fraction(2) ** e
        h0, h1, k0, k1 = 0, 1, 1, 0
        while True:
            a = y.numerator // y.denominator
            h0, h1, k0, k1 = h1, a * h1 + h0, k1, a * k1 + k0
            if h1 >= 2 ** mantissa_bits:
                break
            x = h1 * 2.0 ** e
            if 1 <= x <= TRIG_MAX:
                out += [x, np.nextafter(x, 0), np.nextafter(x, np.inf)]
            if y == a:
                break
            y = 1 / (y - a)
    return np.array(out)


@pytest.mark.parametrize("dtype", DTYPES)
def test_trig_arguments_nearest_multiples_of_half_pi(dtype):
    if dtype == "float64":
        if not EXTENDED:
            pytest.skip("float64 references need an extended long double")
        x = _near_multiples_of_half_pi(53, range(-60, -25))
    else:
        x = _near_multiples_of_half_pi(24, range(-30, 5)).astype(np.float32)
    for name in ("sin", "cos"):
        err = ulp_errors(run(name, x), reference(name, x))
        assert err.max() <= MAX_ULP, (name, x[np.argmax(err)], err.max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_loop_vectorises(name, dtype):
    run(name, np.ones(4, dtype))
    llvm = "".join(_APPLY[name, dtype].inspect_llvm().values())
    body = llvm[llvm.find("vector.body:"):llvm.find("middle.block:")]
    width = "double" if dtype == "float64" else "float"
    assert "vector.body:" in llvm and re.search(rf"<\d+ x {width}>", body), \
        f"{name} {dtype}: the loop is not vectorised"
    assert not re.search(LIBM_CALLS, body), "scalar calls per lane"


@pytest.mark.parametrize("dtype", DTYPES)
def test_logaddexp_matches_numpy_and_vectorises(dtype):
    """logaddexp(a, b) = max + log1p(exp(-|a - b|)), NumPy's formula with funcgrad's exp and
    log1p: within 3 ulps of the larger argument's scale (the sum may cancel, in NumPy too),
    NumPy's special values exactly (equal infinities, nan), and a vectorised loop."""
    f = FUNCTIONS["logaddexp", dtype]

    @numba.njit(error_model="numpy")
    def apply(a, b, out):
        for i in range(a.size):
            out[i] = f(a[i], b[i])
    rng = np.random.default_rng(11)
    special = _special_inputs(dtype)
    a = np.concatenate([rng.normal(0, 5, N), rng.normal(0, 1e3, N), np.repeat(special, special.size)])
    b = np.concatenate([rng.normal(0, 5, N), rng.normal(0, 1e3, N), np.tile(special, special.size)])
    a, b = a.astype(dtype), b.astype(dtype)
    got = np.empty_like(a)
    apply(a, b, got)
    with np.errstate(all="ignore"):
        want = np.logaddexp(a, b)
        scale = np.spacing(np.maximum(np.maximum(np.abs(a), np.abs(b)), 1).astype(dtype))
    exact = ~np.isfinite(want) | ~np.isfinite(a) | ~np.isfinite(b)
    assert np.array_equal(got[exact], want[exact], equal_nan=True), (a[exact], b[exact])
    close = np.abs(got[~exact] - want[~exact]) <= 3 * scale[~exact]
    assert close.all(), (a[~exact][~close], b[~exact][~close], got[~exact][~close])
    llvm = "".join(apply.inspect_llvm().values())
    body = llvm[llvm.find("vector.body:"):llvm.find("middle.block:")]
    assert "vector.body:" in llvm and not re.search(LIBM_CALLS, body)


def test_functions_table():
    assert set(FUNCTIONS) == {(n, d) for n in NAMES + ("logaddexp",) for d in DTYPES}
    assert all(isinstance(f, numba.core.registry.CPUDispatcher) for f in FUNCTIONS.values())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sin_cos_pair_equals_sin_and_cos(dtype):
    from funcgrad.backend import vecmath
    pair, sin, cos = (getattr(vecmath, f"{n}_f{dtype[-2:]}") for n in ("sin_cos", "sin", "cos"))

    @numba.njit(error_model="numpy")
    def run(x, s, c, s2, c2):
        for i in range(x.shape[0]):
            s[i], c[i] = pair(x[i])
            s2[i], c2[i] = sin(x[i]), cos(x[i])
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-20, 20, 5000), np.exp(rng.uniform(-30, 60, 5000)),
                        [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(dtype)
    s, c, s2, c2 = (np.empty_like(x) for _ in range(4))
    with np.errstate(invalid="ignore"):
        run(x, s, c, s2, c2)
    np.testing.assert_array_equal(s, s2)
    np.testing.assert_array_equal(c, c2)
    assert np.signbit(s[-4])              # sin(-0.0) is -0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_cbrt_within_half_an_ulp_with_numpys_special_values(dtype):
    """Numba's scalar cbrt is off by up to 3 ulp (NumPy: 0.55); funcgrad's refines it."""
    import funcgrad as fg
    import funcgrad.numpy as fnp
    rng = np.random.default_rng(5)
    lo = -320 if dtype == "float64" else -44
    x = (10.0 ** rng.uniform(lo, -lo - 12, N) * rng.choice([-1, 1], N)).astype(dtype)
    with np.errstate(over="ignore"):                # 1e300 is inf in float32
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 27.0, -8.0, 1e300, 5e-324,
                            np.finfo(dtype).max, np.finfo(dtype).tiny], dtype)
    x = np.concatenate([x, special])
    got = fg.jit(fnp.cbrt)(x)
    ref = np.cbrt(x.astype(np.longdouble if EXTENDED and dtype == "float64" else np.float64))
    assert ulp_errors(got, ref).max() <= (0.51 if EXTENDED or dtype == "float32" else 1.0)
    want = np.cbrt(special)
    assert np.array_equal(got[-len(special):][:5], want[:5], equal_nan=True)
    assert np.array_equal(np.signbit(got[-len(special):]), np.signbit(want))


def test_compiled_integer_division_matches_numpy_at_the_edges():
    """MIN // -1 wraps (the machine's division traps there: SIGFPE killed the process), x // 0
    and x % 0 are 0, as NumPy gives."""
    import funcgrad as fg
    import funcgrad.numpy as fnp
    for dt in (np.int64, np.int32, np.int8, np.uint8, np.uint64):
        info = np.iinfo(dt)
        a = np.array([info.min, 7, info.max, 5, 0, -7 if info.min < 0 else 9], dt)
        b = np.array([-1 if info.min < 0 else 3, 2, 0, 0, 1, 2], dt)
        with np.errstate(all="ignore"):
            for name in ("floor_divide", "remainder", "fmod"):
                got, want = fg.jit(getattr(fnp, name))(a, b), getattr(np, name)(a, b)
                assert got.dtype == want.dtype and np.array_equal(got, want), (dt, name, got, want)


def test_power_follows_the_form_numpy_uses():
    """A scalar exponent of 0.5 is NumPy's sqrt shortcut ((-inf) ** 0.5 is nan, (-0.0) ** 0.5
    is -0.0); an array of exponents goes through pow ((-inf) ** 0.5 is inf)."""
    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad.api import evaluate
    x, p = np.array([-np.inf, -1.0, -0.0, 4.0]), np.full(4, 0.5)
    with np.errstate(all="ignore"):
        for f in (lambda x, p: fnp.power(x, p), lambda x, p: x ** 0.5,
                  lambda x, p: fnp.power(x, 0.5), lambda x, p: x ** p):
            want = f(x, p)
            for got in (fg.jit(f)(x, p), evaluate(f, x, p)):
                assert np.array_equal(got, want, equal_nan=True)
                assert np.array_equal(np.signbit(got), np.signbit(want))
