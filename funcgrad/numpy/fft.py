"""`funcgrad.numpy.fft`: traceable, differentiable discrete Fourier transforms (NumPy's
signatures; see funcgrad/numpy/_fft_compositions.py)."""
from ..primitives import FFT as _FFT
from . import _fft_compositions  # noqa: F401  (registers the transforms)

globals().update(_FFT)
