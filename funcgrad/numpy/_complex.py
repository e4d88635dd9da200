"""Complex parts: real, imag, conj/conjugate, angle, and the predicates iscomplex, isreal,
iscomplexobj, isrealobj, real_if_close. On real arrays each is what NumPy gives (real and conj
the identity, imag zeros). On complex traced values: real is a conversion to the real dtype
(the primitive keeps the real part; its transpose embeds a real cotangent), imag the real part
of -1j z, conj the conjugate primitive, angle arctan2(imag, real). Their derivatives follow
the convention of docs/conventions.md (vjp is the transpose, no conjugation).
"""
from __future__ import annotations

import numpy as np

from .._errors import ConcretizationError, user_frame, where as at_line
from ..ir import Traced, aval_of
from ..primitives.base import convert, export, float_dtype, full, is_traced, real_dtype
from ..primitives.elementwise import arctan2, conjugate, isnan, not_equal, signbit, where
from ..primitives.shape import _asarray


def _is_complex(x):
    return aval_of(x).dtype.kind == "c"


@export(numpy=np.real, traced=("val",))
def real(val):
    """np.real: the real part (real arrays are returned as they are).

        >>> fnp.real(z)
    """
    val = _asarray(val)
    return convert(val, real_dtype(aval_of(val).dtype)) if _is_complex(val) else val


@export(numpy=np.imag, traced=("val",))
def imag(val):
    """np.imag: the imaginary part (zeros of the same dtype for real arrays).

        >>> fnp.imag(z)
    """
    val = _asarray(val)
    a = aval_of(val)
    if a.dtype.kind == "c":
        return convert(val * -1j, real_dtype(a.dtype))
    return full(a.shape, 0, a.dtype)


@export("conj", "conjugate", numpy=np.conjugate, traced=("x",))
def conj(x):
    """np.conj / np.conjugate: the complex conjugate (real arrays are returned as they are).

        >>> fnp.conj(z)
    """
    x = _asarray(x)
    return conjugate(x) if _is_complex(x) else x


def abs2(x):
    """|x|**2 without a square root: x * x for real x, real(x * conj(x)) for complex x (the
    squares in variances and norms)."""
    return real(x * conjugate(x)) if _is_complex(x) else x * x


@export(numpy=np.angle, traced=("z",))
def angle(z, deg=False):
    """np.angle: the argument arctan2(imag, real) in (-pi, pi] (degrees if deg), whose
    derivative is NaN at 0 as arctan2's; for a real array pi where z < 0 (or z is -0.0), 0
    elsewhere, NaN at NaN, with derivative 0.

        >>> fnp.angle(z, deg=True)
    """
    z = _asarray(z)
    half = 180.0 if deg else np.pi
    if not _is_complex(z):
        dt = float_dtype(aval_of(z).dtype)
        return convert(where(isnan(z), np.nan, where(signbit(z), half, 0.0)), dt)
    return arctan2(imag(z), real(z)) * (half / np.pi)


@export(numpy=np.isreal, traced=("x",))
def isreal(x):
    """np.isreal: where the imaginary part is 0 (True everywhere for real arrays).

        >>> fnp.isreal(z)
    """
    return imag(x) == 0


@export(numpy=np.iscomplex, traced=("x",))
def iscomplex(x):
    """np.iscomplex: where the imaginary part is not 0 (False everywhere for real arrays).

        >>> fnp.iscomplex(z)
    """
    x = _asarray(x)
    if not _is_complex(x):
        return full(aval_of(x).shape, False, np.bool_)
    return not_equal(imag(x), 0)


@export(numpy=np.iscomplexobj, check=is_traced)
def iscomplexobj(x):
    """np.iscomplexobj: whether the dtype is complex (a Python bool, known while tracing).

        >>> fnp.iscomplexobj(z)
    """
    return _is_complex(x)


@export()
def isrealobj(x):
    """np.isrealobj: not iscomplexobj(x).

        >>> fnp.isrealobj(x)
    """
    return not iscomplexobj(x)


@export(numpy=np.real_if_close, traced=("a",), check=is_traced)
def real_if_close(a, tol=100):
    """np.real_if_close: real arrays are returned unchanged. For a complex traced array the
    result's dtype would depend on its values, which tracing cannot know: take fnp.real(a)
    where the imaginary part is known to be negligible.

        >>> fnp.real_if_close(x)
    """
    if isinstance(a, Traced) and _is_complex(a):
        raise ConcretizationError(
            f"np.real_if_close of a complex traced array{at_line(user_frame())}: its result "
            "is real or complex depending on the values, which are not known while tracing. "
            "Use fnp.real(a) (or keep it complex).")
    return a
