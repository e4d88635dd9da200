"""Program transforms (IR -> IR), installed as `funcgrad.transforms`.

Owns: reverse mode (vjp.py), forward mode (jvp.py), batching (batching.py), simplification
passes (simplify.py) and scalar replacement of small arrays in loops (scalarize.py). Each
reads a primitive's rules from the primitive itself (scalarize: from its own tables, by
primitive name), so the higher-order primitives (funcgrad/higher_order/), whose rules
transform sub-programs, sit above this package. Imports funcgrad's ir, interpreter,
primitives, tracer and numpy namespace only, always relatively (`from ..ir import Program`),
never `transforms` by its bare name. See docs/architecture.md.
"""
from .simplify import dce
from .vjp import vjp_program, split_program

__all__ = ["dce", "vjp_program", "split_program"]
