"""`funcgrad.numpy.linalg`: traceable, differentiable linear algebra (NumPy's signatures)."""
from ..primitives import LINALG as _LINALG
from . import _linalg_compositions  # noqa: F401  (registers the compositions)

globals().update(_LINALG)
