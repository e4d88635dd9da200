"""`funcgrad.numpy.fft`: NumPy's FFT functions on traced values, with their derivatives.

Each transform crops or zero-pads its input to `n` (NumPy's rule), then binds the one-axis
`fft` primitive (funcgrad/primitives/fft.py) along each axis, in NumPy's order: fftn and
ifftn go from the last axis to the first, rfftn does the real transform on the last axis
first, irfftn the real one last. hfft and ihfft are irfft and rfft of the conjugate with the
opposite normalization, as NumPy defines them. On plain arrays every function is NumPy's.
Compiled code calls rocket-fft's Numba implementation of pocketfft (NumPy's FFT library)
when it is installed, else NumPy's from object mode.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import aval_of
from ..primitives.base import convert, export, normalize_axes
from ..primitives.fft import NORMS, fft_along, zero_pad
from ..primitives.indexing import slice_axis
from ..primitives.shape import _asarray
from ._arrange import roll
from ._complex import conj

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm):
    norm = "backward" if norm is None else norm
    if norm not in NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return norm


def _fit(x, axis, n):
    """x cropped or zero-padded to length n along axis."""
    have = aval_of(x).shape[axis]
    return slice_axis(x, axis, 0, n) if n < have else zero_pad(x, axis, n)


def _one(kind, a, n, axis, norm):
    a = _asarray(a)
    nd = aval_of(a).ndim
    if nd == 0:
        raise ValueError("Invalid number of FFT data points (0) specified.")
    axis = normalize_axes(axis, nd)[0]
    m = aval_of(a).shape[axis]
    if kind == "irfft":
        n = 2 * (m - 1) if n is None else operator.index(n)
        need = n // 2 + 1
    else:
        n = m if n is None else operator.index(n)
        need = n
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    if kind == "rfft" and aval_of(a).dtype.kind == "c":
        raise TypeError("rfft of a complex array: NumPy discards the imaginary part; take "
                        "fnp.real(a) first, or use fnp.fft.fft")
    if kind != "rfft":
        a = convert(a, np.result_type(aval_of(a).dtype, np.complex64))
    return fft_along(_fit(a, axis, need), kind, axis, n, _norm(norm))


def _transform(kind, name):
    @export(name, fft=True, numpy=getattr(np.fft, name), traced=("a",))
    def transform(a, n=None, axis=-1, norm=None, out=None):
        return _one(kind, a, n, axis, norm)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"np.fft.{name} along one axis, with NumPy's n (crop or zero-pad), "
                         f"axis and norm; differentiable.\n\n        >>> fnp.fft.{name}(x)\n")
    return transform


fft = _transform("fft", "fft")
ifft = _transform("ifft", "ifft")
rfft = _transform("rfft", "rfft")
irfft = _transform("irfft", "irfft")


@export(fft=True, numpy=np.fft.hfft, traced=("a",))
def hfft(a, n=None, axis=-1, norm=None, out=None):
    """np.fft.hfft: the real spectrum of a Hermitian-symmetric signal given by its first half
    (irfft of the conjugate with the opposite normalization).

        >>> fnp.fft.hfft(z, n=8)
    """
    return _one("irfft", conj(_asarray(a)), n, axis, _SWAP[_norm(norm)])


@export(fft=True, numpy=np.fft.ihfft, traced=("a",))
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """np.fft.ihfft: the inverse of hfft (conjugate of rfft with the opposite normalization).

        >>> fnp.fft.ihfft(x)
    """
    return conj(_one("rfft", a, n, axis, _SWAP[_norm(norm)]))


def _shape_axes(a, s, axes, default_all=True):
    nd = aval_of(a).ndim
    if axes is None:
        axes = list(range(nd)) if s is None else list(range(nd - len(s), nd))
    else:
        axes = [normalize_axes(ax, nd)[0] for ax in np.atleast_1d(axes)]
    if s is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return s, axes


def _multi(kind, name, axes_default=None):
    @export(name, fft=True, numpy=getattr(np.fft, name), traced=("a",))
    def transform(a, s=None, axes=axes_default, norm=None, out=None):
        a = _asarray(a)
        s, axes = _shape_axes(a, s, axes)
        if not axes:
            return a
        sizes = list(s) if s is not None else [None] * len(axes)
        if kind in ("fft", "ifft"):
            for ax, n in reversed(list(zip(axes, sizes))):
                a = _one(kind, a, n, ax, norm)
            return a
        if kind == "rfft":
            a = _one("rfft", a, sizes[-1], axes[-1], norm)
            for ax, n in reversed(list(zip(axes[:-1], sizes[:-1]))):
                a = _one("fft", a, n, ax, norm)
            return a
        for ax, n in zip(axes[:-1], sizes[:-1]):                        # irfft
            a = _one("ifft", a, n, ax, norm)
        return _one("irfft", a, sizes[-1], axes[-1], norm)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"np.fft.{name} with NumPy's s, axes and norm; differentiable.\n\n"
                         f"        >>> fnp.fft.{name}(x)\n")
    return transform


fftn, ifftn = _multi("fft", "fftn"), _multi("ifft", "ifftn")
rfftn, irfftn = _multi("rfft", "rfftn"), _multi("irfft", "irfftn")
fft2, ifft2 = _multi("fft", "fft2", (-2, -1)), _multi("ifft", "ifft2", (-2, -1))
rfft2, irfft2 = _multi("rfft", "rfft2", (-2, -1)), _multi("irfft", "irfft2", (-2, -1))


def _shift(x, axes, sign):
    x = _asarray(x)
    nd = aval_of(x).ndim
    axes = list(range(nd)) if axes is None else [normalize_axes(a, nd)[0]
                                                 for a in np.atleast_1d(axes)]
    shape = aval_of(x).shape
    return roll(x, [sign * (shape[a] // 2) for a in axes], axes) if axes else x


@export(fft=True, numpy=np.fft.fftshift, traced=("x",))
def fftshift(x, axes=None):
    """np.fft.fftshift: the zero frequency moved to the middle.

        >>> fnp.fft.fftshift(fnp.fft.fft(x))
    """
    return _shift(x, axes, 1)


@export(fft=True, numpy=np.fft.ifftshift, traced=("x",))
def ifftshift(x, axes=None):
    """np.fft.ifftshift: the inverse of fftshift.

        >>> fnp.fft.ifftshift(X)
    """
    return _shift(x, axes, -1)


@export(fft=True, numpy=np.fft.fftfreq, traced=("d",))
def fftfreq(n, d=1.0, device=None):
    """np.fft.fftfreq: sample frequencies for n points of spacing d (d may be traced).

        >>> fnp.fft.fftfreq(8, d=dt)
    """
    return np.fft.fftfreq(operator.index(n)) / d


@export(fft=True, numpy=np.fft.rfftfreq, traced=("d",))
def rfftfreq(n, d=1.0, device=None):
    """np.fft.rfftfreq: the non-negative sample frequencies (rfft's) for spacing d.

        >>> fnp.fft.rfftfreq(8, d=dt)
    """
    return np.fft.rfftfreq(operator.index(n)) / d
