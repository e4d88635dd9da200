"""All primitives, grouped by family; importing this package registers every one of them.

Owns the registry (`REGISTRY`, name -> Primitive) and the user-facing namespace tables
(`NAMESPACE`, `LINALG`, `FFT`) that `funcgrad.numpy` re-exports. Each primitive is one `define(...)`
block with all its rules (batching included; base.py holds the shared rule makers), next to the
function that binds it with NumPy's arguments (fnp.sum for reduce_sum, fnp.concatenate, ...) and
the helpers its rules use. NumPy functions that define no primitive (fnp.mean, fnp.split,
fnp.pad, fnp.einsum, ...) are compositions in funcgrad/numpy/.

Families import base.py and each other at module level, in one direction (base <- elementwise
<- special_functions, indexing <- shape <- reductions; base <- contract <- linalg; special;
shape <- fft; threefry),
never the tracer or funcgrad.numpy. Lists holding traced values reach fnp.array through NAMESPACE when called
(base.as_array), since fnp.array stacks with shape.py, which builds on indexing.py.
"""
from .base import FFT, LINALG, NAMESPACE, REGISTRY, define, export
from . import (elementwise, shape, indexing, reductions, contract, linalg,  # noqa: F401
               special, special_functions, fft, checks, threefry)  # noqa: F401,E401

__all__ = ["REGISTRY", "NAMESPACE", "LINALG", "FFT", "define", "export"]
