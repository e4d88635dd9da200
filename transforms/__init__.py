"""Program transforms (IR -> IR), installed as `funcgrad.transforms`.

Owns: reverse mode (vjp.py) and simplification passes (simplify.py). Later: forward mode,
vmap, checkpointing. Imports funcgrad's ir, tracer, interpreter and primitives only, always
relatively (`from ..ir import Program`), never `transforms` by its bare name.
"""
from .simplify import dce
from .vjp import vjp_program, split_program

__all__ = ["dce", "vjp_program", "split_program"]
