"""The public entry points, on top of everything else: what `import funcgrad as fg` offers.

- calls.py: argument handling and the traced call shared by all of them (pytrees, argnums,
  static arguments, input and output checks, results as NumPy);
- gradients.py: fg.make_ir, fg.grad, fg.value_and_grad, fg.vjp;
- derivatives.py: fg.jvp, fg.linearize, fg.jacfwd, fg.jacrev, fg.hessian, fg.hvp;
- vmap.py: fg.vmap;
- residuals.py: fg.saved_residuals (what reverse mode keeps for the backward pass);
- jit.py: fg.jit and fg.disable_jit (compiling through the backend; tiering, one level lower,
  decides when the others compile).
Each applies transforms (transforms/) to the traced program and runs the result with the
interpreter or a compiled kernel.
"""
from .calls import VjpPlan, evaluate

__all__ = ["VjpPlan", "evaluate"]
