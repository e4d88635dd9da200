"""Elementwise primitives: one `_ufunc(...)` line each, with its derivative next to it.

Every primitive here wraps a NumPy ufunc: NumPy's own type resolution gives the output dtype,
and `apply_elementwise` inserts the conversions and broadcasts explicitly, so the rules below
only ever see operands of one shape and dtype. `domain` is where tests draw inputs from.
Also here: power (x ** n becomes integer_pow), fmax/fmin, where (the select primitive) and clip
(two wheres, used by take's clip mode); positive, real and round are in
funcgrad/numpy/_elementwise.py.

Gradient conventions at non-differentiable points (documented in docs/conventions.md):
abs'(0) = 0; sign, floor, ceil, rint, trunc, comparisons have derivative 0; sqrt'(0) = inf;
maximum/minimum send the cotangent to the larger/smaller operand and half to each at a tie (as
JAX and PyTorch do), so the derivative of maximum(x, x) is 1; fg.nn.relu has derivative 0 at 0.
"""
from __future__ import annotations

import numpy as np

from .._errors import UnsupportedFunctionError, out_error
from ..ir import Aval, Traced, aval_of, real_operands
from .base import (NAMESPACE, apply_elementwise, broadcast_shapes, broadcast_to, convert, define,
                   dtype_or_pytype, elementwise_abstract, export, full, has_traced,
                   resolve_ufunc, unit_identity)

LN2, LN10 = float(np.log(2.0)), float(np.log(10.0))
ELEMENTWISE = {}   # name -> (primitive, ufunc, domain); read by tests


def _ufunc(ufunc, vjp=None, *, domain="real", aliases=(), name=None, singular=False, public=True,
           exact=False, identity_input=None):
    """Define the primitive for `ufunc` and export fnp.<name> (+ aliases). vjp=None: derivative 0.
    singular: its derivative can be infinite or NaN at finite inputs; exact: every correct
    evaluation gives the same bits (see ir.Primitive for both).
    public=False: a function defined below (or in funcgrad.numpy) is exported instead."""
    name = name or ufunc.__name__
    prim = define(name, impl=ufunc, abstract=elementwise_abstract(ufunc), vjp=vjp,
                  differentiable=vjp is not None, elementwise=True, singular=singular,
                  exact=exact, identity_input=identity_input)

    def fn(*args, **kwargs):
        if kwargs or len(args) != ufunc.nin:
            if not has_traced(*args, *kwargs.values()):
                return ufunc(*args, **kwargs)       # plain arrays: NumPy's ufunc, every argument
            out = args[ufunc.nin] if len(args) > ufunc.nin else kwargs.pop("out", None)
            if out is not None:
                raise out_error(name)
            if kwargs:
                raise UnsupportedFunctionError(f"np.{name}: keyword arguments {sorted(kwargs)} "
                                               "are not supported on traced values")
            if len(args) != ufunc.nin:
                raise TypeError(f"{name}() takes {ufunc.nin} positional arguments, got {len(args)}")
        return apply_elementwise(prim, ufunc, *args)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise np.{ufunc.__name__}, traceable and differentiable.\n\n    >>> fnp.{name}(x)\n"
    if public:
        export(name, *aliases)(fn)
    ELEMENTWISE[name] = (prim, ufunc, domain)
    return fn


def _where0(cond, x):
    return where(cond, 0.0, x)


def select_vjp(chosen):
    """The vjp of a binary selection (maximum, minimum, fmax, fmin): the cotangent goes to the
    operand that is selected, and half to each at a tie, so the two shares always add up to
    ct (maximum(x, x) has derivative 1). chosen(a, b): a is selected over b."""
    def vjp(ct, x, y, *, out):
        tie = where(x == y, ct * 0.5, 0.0)
        return where(chosen(x, y), ct, tie), where(chosen(y, x), ct, tie)
    return vjp


# ---- arithmetic -----------------------------------------------------------------------------
# (exact: correctly rounded IEEE operations on real operands; see ir.Primitive)
add = _ufunc(np.add, lambda ct, x, y, *, out: (ct, ct), exact=real_operands,
             identity_input=unit_identity("-0.0", (0, 1)))
subtract = _ufunc(np.subtract, lambda ct, x, y, *, out: (ct, -ct), exact=real_operands,
                  identity_input=unit_identity("+0.0"))
multiply = _ufunc(np.multiply, lambda ct, x, y, *, out: (ct * y, ct * x), exact=real_operands,
                  identity_input=unit_identity("one", (0, 1)))
divide = _ufunc(np.true_divide, lambda ct, x, y, *, out: (ct / y, -ct * out / y),
                domain="nonzero", aliases=("true_divide",), singular=True, exact=real_operands,
                identity_input=unit_identity("one"))
negative = _ufunc(np.negative, lambda ct, x, *, out: (-ct,), exact=True)
_power = _ufunc(np.power, lambda ct, x, y, *, out: (
    _where0(y == 0, ct * y * x ** (y - 1)),
    _where0(x == 0, ct * out * log(where(x == 0, 1.0, x)))), domain="positive", aliases=("pow",), singular=True)


def _integer_pow_impl(x, *, y):
    return np.square(x) if y == 2 else np.power(x, y)


integer_pow_p = define(
    "integer_pow", impl=_integer_pow_impl, abstract=lambda a, *, y: a, elementwise=True,
    singular=lambda params: params["y"] < 0,
    exact=lambda eqn: eqn.params["y"] in (1, 2) and real_operands(eqn),   # (x * x)
    identity_input=lambda eqn, value_of: (      # (not NumPy's complex z ** 1: signed zeros)
        eqn.inputs[0] if eqn.params["y"] == 1 and np.dtype(eqn.outputs[0].aval.dtype).kind in "fiu"
        else None),
    vjp=lambda ct, x, *, out, y: (ct * y if y == 1 else ct * (y * x) if y == 2
                                  else ct * (y * integer_pow_p.bind(x, y=y - 1)),))


@export("power", "pow")
def power(x1, x2):
    """np.power / the ** operator. A constant integral exponent (x ** 2, x ** -1.0) becomes
    `integer_pow`, whose derivative y * x**(y-1) is exact for negative x too; a constant
    exponent of 0.5 becomes sqrt, as NumPy computes a scalar exponent ((-inf) ** 0.5 is nan,
    while an array of exponents goes through C's pow, where it is inf). A complex exponent
    (z ** (1 + 1j), x ** 0.5j) is NumPy's complex power: a real base becomes complex.

        >>> fnp.power(x, 3)
    """
    if (isinstance(x1, Traced) and not isinstance(x2, Traced) and np.ndim(x2) == 0
            and np.isrealobj(x2) and np.isfinite(x2) and float(x2) == int(x2)
            and abs(int(x2)) <= 64):
        dt = resolve_ufunc(np.power, (dtype_or_pytype(x1), dtype_or_pytype(x2)))[1]
        n = int(x2)
        if n == 0:
            return full(x1.aval.shape, 1, dt)
        if dt.kind in "fc" or n > 0:
            x = convert(x1, dt)
            return x if n == 1 else integer_pow_p.bind(x, y=n)
    if isinstance(x1, Traced) and not isinstance(x2, Traced) and np.ndim(x2) == 0 and x2 == 0.5:
        dt = resolve_ufunc(np.power, (dtype_or_pytype(x1), dtype_or_pytype(x2)))[1]
        if dt.kind == "f":      # NumPy's scalar-exponent shortcut: sqrt ((-inf) ** 0.5 is nan)
            return sqrt(convert(x1, dt))
    return _power(x1, x2)


floor_divide = _ufunc(np.floor_divide, domain="nonzero")
remainder = _ufunc(np.remainder, lambda ct, x, y, *, out: (ct, -ct * floor_divide(x, y)),
                   domain="nonzero", aliases=("mod",))
fmod = _ufunc(np.fmod, lambda ct, x, y, *, out: (ct, -ct * trunc(x / y)), domain="nonzero")


def _abs_vjp(ct, x, *, out):
    if aval_of(x).dtype.kind != "c":
        return (ct * sign(x),)
    # |z| is not holomorphic: d|z| = Re(conj(z) dz) / |z|, whose transpose is ct conj(z) / |z|
    # (0 at z = 0, as for real inputs)
    zero = out == 0.0
    return (where(zero, 0.0, ct * conjugate(x) / where(zero, 1.0, out)),)


absolute = _ufunc(np.absolute, _abs_vjp, aliases=("abs", "fabs"), exact=real_operands)
# fnp.conj (funcgrad/numpy/_elementwise.py) is the identity on real arrays
conjugate = _ufunc(np.conjugate, lambda ct, x, *, out: (conjugate(ct),), public=False)
_sign = _ufunc(np.sign, public=False, exact=real_operands)


@export()
def sign(x):
    """np.sign; derivative 0 for real x. For complex x it is x / |x| (0 at 0), as NumPy 2
    computes it, and differentiable away from 0.

        >>> fnp.sign(x)
    """
    if isinstance(x, Traced) and x.aval.dtype.kind == "c":
        # as NumPy's loop: each part divided by hypot(re, im) (x / |x| would divide by a complex,
        # through 1 / |x|, which overflows for subnormal |x|; np.abs rounds differently from
        # hypot); where |x| overflows at finite parts, NumPy gives 0 + sign(imag) 1j
        part = np.finfo(x.aval.dtype).dtype
        re, im = convert(x, part), convert(x * -1j, part)
        zero = (re == 0.0) & (im == 0.0)
        mag = hypot(where(zero, 1.0, re), im)        # (hypot's derivative is NaN at 0)
        big = isinf(mag)
        m = where(big, 1.0, mag)
        r, i = where(big, 0.0, re / m), where(big, _sign(im), im / m)
        # r + i j with both signed zeros kept: -(-r + 0j) is r - 0j, i * -1j is +0 - i j
        return where(zero, 0.0, -convert(-r, x.aval.dtype) - i * -1j)
    return _sign(x)

floor = _ufunc(np.floor, exact=real_operands)
ceil = _ufunc(np.ceil, exact=real_operands)
rint = _ufunc(np.rint, exact=real_operands)
trunc = _ufunc(np.trunc, aliases=("fix",), exact=real_operands)
square = _ufunc(np.square, lambda ct, x, *, out: (ct * 2.0 * x,), exact=real_operands)
reciprocal = _ufunc(np.reciprocal, lambda ct, x, *, out: (-ct * out * out,), domain="nonzero",
                    singular=True, exact=real_operands)
maximum = _ufunc(np.maximum, select_vjp(lambda a, b: a > b))
minimum = _ufunc(np.minimum, select_vjp(lambda a, b: a < b))

# ---- exponentials and logarithms ----------------------------------------------------------------
exp = _ufunc(np.exp, lambda ct, x, *, out: (ct * out,), singular=True)
exp2 = _ufunc(np.exp2, lambda ct, x, *, out: (ct * out * LN2,), singular=True)
expm1 = _ufunc(np.expm1, lambda ct, x, *, out: (ct * (out + 1.0),), singular=True)
log = _ufunc(np.log, lambda ct, x, *, out: (ct / x,), domain="positive", singular=True)
log2 = _ufunc(np.log2, lambda ct, x, *, out: (ct / (x * LN2),), domain="positive", singular=True)
log10 = _ufunc(np.log10, lambda ct, x, *, out: (ct / (x * LN10),), domain="positive", singular=True)
log1p = _ufunc(np.log1p, lambda ct, x, *, out: (ct / (x + 1.0),), domain="positive", singular=True)
sqrt = _ufunc(np.sqrt, lambda ct, x, *, out: (ct * 0.5 / out,), domain="positive", singular=True,
              exact=real_operands)
cbrt = _ufunc(np.cbrt, lambda ct, x, *, out: (ct / (3.0 * out * out),), domain="nonzero", singular=True)
logaddexp = _ufunc(np.logaddexp, lambda ct, x, y, *, out: (ct * exp(x - out), ct * exp(y - out)))
logaddexp2 = _ufunc(np.logaddexp2, lambda ct, x, y, *, out: (ct * exp2(x - out),
                                                              ct * exp2(y - out)))

# ---- trigonometric and hyperbolic ---------------------------------------------------------------
sin = _ufunc(np.sin, lambda ct, x, *, out: (ct * cos(x),))
cos = _ufunc(np.cos, lambda ct, x, *, out: (-ct * sin(x),))
tan = _ufunc(np.tan, lambda ct, x, *, out: (ct * (1.0 + out * out),), domain="unit", singular=True)
arcsin = _ufunc(np.arcsin, lambda ct, x, *, out: (ct / sqrt(1.0 - x * x),), domain="unit",
                singular=True, aliases=("asin",))
arccos = _ufunc(np.arccos, lambda ct, x, *, out: (-ct / sqrt(1.0 - x * x),), domain="unit",
                singular=True, aliases=("acos",))
arctan = _ufunc(np.arctan, lambda ct, x, *, out: (ct / (1.0 + x * x),), aliases=("atan",))
arctan2 = _ufunc(np.arctan2, lambda ct, y, x, *, out: (ct * x / (x * x + y * y),
                                                       -ct * y / (x * x + y * y)), singular=True,
                 aliases=("atan2",))


def _hypot_vjp(ct, x, y, *, out):
    """(x, y) / hypot(x, y); at x = y = 0, where hypot has no derivative, 0 for both: the
    minimum-norm subgradient, as abs(0) and the 2-norm at 0 (docs/conventions.md)."""
    zero = out == 0.0
    safe = where(zero, 1.0, out)
    return _where0(zero, ct * x / safe), _where0(zero, ct * y / safe)


hypot = _ufunc(np.hypot, _hypot_vjp, domain="nonzero", singular=True)
sinh = _ufunc(np.sinh, lambda ct, x, *, out: (ct * cosh(x),), singular=True)
cosh = _ufunc(np.cosh, lambda ct, x, *, out: (ct * sinh(x),), singular=True)
tanh = _ufunc(np.tanh, lambda ct, x, *, out: (ct * (1.0 - out * out),))
arcsinh = _ufunc(np.arcsinh, lambda ct, x, *, out: (ct / sqrt(x * x + 1.0),), aliases=("asinh",))
arccosh = _ufunc(np.arccosh, lambda ct, x, *, out: (ct / sqrt(x * x - 1.0),), domain="gt1",
                 singular=True, aliases=("acosh",))
arctanh = _ufunc(np.arctanh, lambda ct, x, *, out: (ct / (1.0 - x * x),), domain="unit",
                 singular=True, aliases=("atanh",))
deg2rad = _ufunc(np.deg2rad, lambda ct, x, *, out: (ct * (np.pi / 180.0),), aliases=("radians",))
rad2deg = _ufunc(np.rad2deg, lambda ct, x, *, out: (ct * (180.0 / np.pi),), aliases=("degrees",))

# ---- comparisons and logic (derivative 0) --------------------------------------------------------
(equal, not_equal, less, less_equal, greater, greater_equal, logical_and, logical_or, logical_xor,
 logical_not, isnan, isinf, isfinite, signbit, bitwise_and, bitwise_or, bitwise_xor) = (
    _ufunc(u, exact=True) for u in (
        np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
        np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.isnan, np.isinf,
        np.isfinite, np.signbit, np.bitwise_and, np.bitwise_or, np.bitwise_xor))
invert = _ufunc(np.invert, aliases=("bitwise_not", "bitwise_invert"), exact=True)
gcd, lcm = (_ufunc(u, exact=True) for u in (np.gcd, np.lcm))
left_shift = _ufunc(np.left_shift, aliases=("bitwise_left_shift",), exact=True)
right_shift = _ufunc(np.right_shift, aliases=("bitwise_right_shift",), exact=True)
# nextafter(x, y) is x moved by one ulp: derivative 1 in x, 0 in y
nextafter = _ufunc(np.nextafter, lambda ct, x, y, *, out: (ct, None), exact=True)


# ---- fmax, fmin: NaN-ignoring maximum/minimum ----------------------------------------------------

def _nan_ignoring(strictly):
    """a is selected over b: strictly larger (smaller), or b is NaN and a is not."""
    return lambda a, b: logical_or(strictly(a, b), logical_and(isnan(b), logical_not(isnan(a))))


fmax = _ufunc(np.fmax, select_vjp(_nan_ignoring(greater)))
fmin = _ufunc(np.fmin, select_vjp(_nan_ignoring(less)))
for _n, _w in (("fmax", "larger"), ("fmin", "smaller")):
    NAMESPACE[_n].__doc__ = globals()[_n].__doc__ = (
        f"np.{_n}: elementwise {_w} value, ignoring NaN (NaN only where both are NaN). The "
        f"gradient goes to the {_w} operand, half to each at a tie, and, where one operand "
        f"is NaN, to the other.\n\n        >>> fnp.{_n}(x, y)\n")
del _n, _w


# ---- select (where) -----------------------------------------------------------------------------
def _select_abstract(c, x, y):
    if not (c.shape == x.shape == y.shape) or x.dtype != y.dtype:
        raise ValueError(f"select: operands differ: {c}, {x}, {y}")
    return Aval(x.shape, x.dtype)


select_p = define("select", impl=lambda c, x, y: np.where(c, x, y), abstract=_select_abstract,
                  elementwise=True, exact=True, moves=True,
                  vjp=lambda ct, c, x, y, *, out: (None, where(c, ct, 0.0), where(c, 0.0, ct)))


@export(numpy=np.where)
def where(condition, x=None, y=None):
    """np.where(condition, x, y): elementwise choice, traceable; the gradient flows to the chosen
    side. np.where(condition) is np.nonzero(condition) (see funcgrad/numpy/_indexing.py).

        >>> fnp.where(x > 0, x, 0.01 * x)     # leaky relu
    """
    if (x is None) != (y is None):
        raise ValueError("either both or neither of x and y should be given")
    if x is None:       # np.where(condition) is np.nonzero(condition): a traced condition
        # its value in the call being traced (integer indices lose no derivative), a
        # ConcretizationError naming fnp.where(condition, x, y) where there is none (fg.vmap,
        # loop bodies)
        return NAMESPACE["nonzero"](NAMESPACE["asarray"](condition))
    _, dt = resolve_ufunc(np.add, (dtype_or_pytype(x), dtype_or_pytype(y)))
    x, y, c = convert(x, dt), convert(y, dt), convert(condition, bool)
    shape = broadcast_shapes(aval_of(c).shape, aval_of(x).shape, aval_of(y).shape)
    return select_p.bind(*(broadcast_to(a, shape, force=True) for a in (c, x, y)))


@export(numpy=np.clip)
def clip(a, a_min=None, a_max=None, out=None):
    """np.clip: a_min where a <= a_min, then a_max where that is >= a_max (NaN stays NaN). The
    derivative with respect to a is 1 strictly inside and 0 at and beyond the bounds.

        >>> fnp.clip(x, 0.0, 1.0)
    """
    if a_min is not None:
        a = where(a <= a_min, a_min, a)
    if a_max is not None:
        a = where(a >= a_max, a_max, a)
    return a
