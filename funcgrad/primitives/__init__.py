"""All primitives, grouped by family; importing this package registers every one of them.

Owns the registry (`REGISTRY`, name -> Primitive) and the user-facing namespace tables
(`NAMESPACE`, `LINALG`) that `funcgrad.numpy` re-exports. Imports ir and _errors only.
"""
from .base import LINALG, NAMESPACE, REGISTRY, define, export
from . import elementwise  # noqa: F401  (registers)

__all__ = ["REGISTRY", "NAMESPACE", "LINALG", "define", "export"]
