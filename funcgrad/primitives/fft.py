"""The discrete Fourier transform along one axis: one primitive, `fft[kind, axis, n, norm]`,
for kind fft, ifft (complex to complex), rfft (real to the n // 2 + 1 non-negative
frequencies) and irfft (those back to n real values). The input is already cropped or
zero-padded (funcgrad/numpy/_fft_compositions.py does NumPy's `n`): its axis has length n, or
n // 2 + 1 for irfft. The n-dimensional transforms, hfft and ihfft are compositions there.

Derivatives. Reverse mode's cotangents are transposes without conjugation (docs/conventions.md),
and the DFT matrix is symmetric, so the vjp of fft is fft and of ifft is ifft, with the same
`norm`. rfft is the first n // 2 + 1 rows of fft applied to a real vector: its vjp is the real
part of fft of the cotangent zero-padded to n. irfft reads the half spectrum as a Hermitian one
(each interior frequency counts twice, the imaginary parts of the zero and Nyquist terms are
ignored): its vjp is conj(rfft(ct)) times those weights, with irfft's scale.
"""
from __future__ import annotations

import numpy as np

from ..ir import Aval, aval_of
from .base import convert, define, full, next_axis, real_dtype, shifted_batch
from .elementwise import conjugate
from .shape import concatenate

KINDS = ("fft", "ifft", "rfft", "irfft")
NORMS = ("backward", "ortho", "forward")


def _complex(dtype):
    return np.result_type(dtype, np.complex64)


def _abstract(a, *, kind, axis, n, norm):
    shape = list(a.shape)
    if kind == "rfft":
        shape[axis] = n // 2 + 1
        return Aval(shape, _complex(a.dtype))
    if kind == "irfft":
        shape[axis] = n
        return Aval(shape, real_dtype(a.dtype))
    return Aval(shape, a.dtype)


def _impl(x, *, kind, axis, n, norm):
    return np.asarray(getattr(np.fft, kind)(x, n=n, axis=axis, norm=norm))


def zero_pad(x, axis, n):
    """x with zeros appended along `axis` up to length n."""
    a = aval_of(x)
    extra = n - a.shape[axis]
    if extra <= 0:
        return x
    shape = list(a.shape)
    shape[axis] = extra
    return concatenate([x, full(shape, 0, a.dtype)], axis=axis)


def _irfft_weights(n, m, axis, ndim, scale, dtype):
    """2 for the interior frequencies, 1 for the zero (and Nyquist, n even) term, times scale,
    shaped to broadcast along `axis`."""
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    shape = [1] * ndim
    shape[axis] = m
    return (w * scale).astype(dtype).reshape(shape)


def _vjp(ct, x, *, out, kind, axis, n, norm):
    params = dict(axis=axis, n=n, norm=norm)
    if kind in ("fft", "ifft"):
        return (fft_p.bind(ct, kind=kind, **params),)
    if kind == "rfft":
        spectrum = fft_p.bind(zero_pad(ct, axis, n), kind="fft", **params)
        return (convert(spectrum, aval_of(x).dtype),)          # the real part
    scale = {"backward": 1.0 / n, "ortho": 1.0 / np.sqrt(n), "forward": 1.0}[norm]
    half = fft_p.bind(ct, kind="rfft", axis=axis, n=n, norm="backward")
    a = aval_of(x)
    return (conjugate(half) * _irfft_weights(n, a.shape[axis], axis, a.ndim, scale,
                                             real_dtype(a.dtype)),)


fft_p = define("fft", impl=_impl, abstract=_abstract, vjp=_vjp,
               batch=shifted_batch("axis", next_axis))


def fft_along(x, kind, axis, n, norm):
    """Bind the primitive on x, already of the transform's input length along `axis`
    (a non-negative axis); complex transforms get complex input, rfft real input."""
    a = aval_of(x)
    if kind == "rfft":
        x = convert(x, a.dtype if a.dtype.kind == "f" else np.float64)
    else:
        x = convert(x, _complex(a.dtype))
    return fft_p.bind(x, kind=kind, axis=int(axis), n=int(n), norm=norm)
