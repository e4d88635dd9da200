"""`funcgrad.numpy.linalg`: traceable, differentiable linear algebra (NumPy's signatures)."""
from ..primitives import LINALG as _LINALG

globals().update(_LINALG)
