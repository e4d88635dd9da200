"""Program transforms (IR -> IR), installed as `funcgrad.transforms`.

Owns: reverse mode (vjp.py), forward mode (jvp.py), batching (vmap.py), the rules of the
loop and branch primitives (control.py), simplification passes (simplify.py) and scalar
replacement of small arrays in loops (scalarize.py). Imports funcgrad's ir, tracer,
interpreter, primitives and control (the loop primitives) only, always relatively
(`from ..ir import Program`), never `transforms` by its bare name.
"""
from .simplify import dce
from .vjp import vjp_program, split_program

__all__ = ["dce", "vjp_program", "split_program"]
