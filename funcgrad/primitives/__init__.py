"""All primitives, grouped by family; importing this package registers every one of them.

Owns the registry (`REGISTRY`, name -> Primitive) and the user-facing namespace tables
(`NAMESPACE`, `LINALG`) that `funcgrad.numpy` re-exports. Each primitive is one `define(...)`
block with all its rules (batching included; base.py holds the shared rule makers). Families import base.py and each
other (elementwise <- shape <- indexing <- reductions <- contract), never the tracer.
"""
from .base import LINALG, NAMESPACE, REGISTRY, define, export
from . import (elementwise, shape, indexing, reductions, contract, linalg,  # noqa: F401
               special)  # noqa: F401,E401

__all__ = ["REGISTRY", "NAMESPACE", "LINALG", "define", "export"]
