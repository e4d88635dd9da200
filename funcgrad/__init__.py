"""funcgrad: trace NumPy code into a typed IR, derive adjoints, compile with Numba.

    >>> import funcgrad as fg, funcgrad.numpy as fnp
    >>> fg.grad(lambda x: fnp.sum(fnp.sin(x) ** 2))(np.ones(3))

Re-exports the public API; no logic lives here.
"""
from . import tree_util
from ._errors import (ConcretizationError, EscapedTracerError, FuncgradError, IntegerInputError,
                      MutationError, NonScalarOutputError, ShapeError, UnsupportedFunctionError)
from .api import grad, make_ir, value_and_grad, vjp
from .derivatives import hessian, hvp, jacfwd, jacrev, jvp, linearize
from .custom import checkpoint, custom_jvp, custom_vjp, pure_callback, stop_gradient
from .vmap import vmap
from .interpreter import eval_program
from .jit import disable_jit, jit
from .backend.cache import cache_dir, clear_cache
from .ir import Program
from . import numpy  # noqa: F401  (funcgrad.numpy)

__version__ = "0.1.0"
__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "hessian", "hvp", "vmap",
           "stop_gradient", "custom_vjp", "custom_jvp", "checkpoint", "pure_callback", "make_ir", "jit", "disable_jit", "clear_cache", "cache_dir", "eval_program", "tree_util", "Program",
           "FuncgradError", "ConcretizationError", "MutationError", "NonScalarOutputError",
           "IntegerInputError", "UnsupportedFunctionError", "ShapeError", "EscapedTracerError"]
