"""funcgrad: trace NumPy code into a typed IR, derive adjoints, compile with Numba.

    >>> import funcgrad as fg, funcgrad.numpy as fnp
    >>> fg.grad(lambda x: fnp.sum(fnp.sin(x) ** 2))(np.ones(3))

Re-exports the public API; no logic lives here.
"""
try:                   # (transforms/ at the repository's top level becomes funcgrad.transforms)
    from . import transforms as _transforms  # noqa: F401
except ImportError as _exc:
    if "transforms" not in str(_exc):
        raise
    raise ImportError(
        "funcgrad is imported from its source folder without being installed: its transforms "
        "live in the repository's top-level transforms/ folder, which installing maps to "
        "funcgrad.transforms. In the repository run: python3 -m venv .venv && "
        ".venv/bin/pip install -e . (then .venv/bin/python demo.py)") from None
from . import tree_util
from ._config import config
from ._errors import (CarryTypeError, ConcretizationError, DroppedDerivativeWarning, EscapedTracerError,
                      FuncgradError, IntegerInputError, MutationError, NonScalarOutputError, ShapeError,
                      UnsupportedDtypeError, UnsupportedFunctionError)
from .api.gradients import eval_program, grad, make_ir, value_and_grad, vjp
from .api.derivatives import hessian, hvp, jacfwd, jacrev, jvp, linearize
from .api.residuals import saved_residuals
from .higher_order import (checkpoint, checkpoint_name, checkpoint_policies, cond, custom_jvp,
                           custom_linear_solve, custom_root, custom_vjp, fori_loop, pure_callback,
                           scan, stop_gradient, switch, while_loop)
from .api.vmap import vmap
from .api.jit import disable_jit, jit
from .backend.cache import cache_dir, clear_cache
from .ir import Program
from . import numpy  # noqa: F401  (funcgrad.numpy)
from . import nn  # noqa: F401  (fg.nn)
from . import random  # noqa: F401  (fg.random)
from . import lax  # noqa: F401  (fg.lax)
from .lax import associative_scan, map, top_k  # noqa: A004  (fg.map is jax.lax.map)
from .nn import initializers as _initializers  # noqa: F401,E402  (fg.nn.initializers)
from . import optim  # noqa: F401  (fg.optim)
from . import flatten_util, optimize, scipy  # noqa: F401  (fg.flatten_util, fg.optimize, fg.scipy)
from .ode import ODEError, odeint
from . import debug  # noqa: F401  (fg.debug)
from . import testing  # noqa: F401  (fg.testing.check_grads)
from .debug import debug_infs, debug_nans, grad_hook

from ._version import __version__  # noqa: E402


def __getattr__(name):         # fg.dask: imported on first use (Dask is an optional extra)
    if name == "dask":
        import importlib
        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module 'funcgrad' has no attribute {name!r}")

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "hessian", "hvp", "vmap",
           "stop_gradient", "custom_vjp", "custom_jvp", "custom_root", "custom_linear_solve", "checkpoint", "checkpoint_name", "checkpoint_policies",
           "pure_callback", "make_ir", "saved_residuals", "jit", "debug", "debug_nans", "debug_infs", "grad_hook",
           "fori_loop", "scan", "while_loop", "cond", "switch", "disable_jit", "clear_cache", "cache_dir", "eval_program", "tree_util", "nn", "random", "lax", "map", "associative_scan", "top_k", "optim", "optimize", "scipy", "flatten_util", "Program", "odeint", "ODEError", "config",
           "FuncgradError", "CarryTypeError", "ConcretizationError", "MutationError", "NonScalarOutputError",
           "IntegerInputError", "UnsupportedFunctionError", "UnsupportedDtypeError", "ShapeError", "EscapedTracerError",
           "DroppedDerivativeWarning"]
