"""Higher-order primitives: primitives whose parameters hold sub-programs, so that their rules
transform programs (they sit above transforms/ and below the public API).

- loops.py: while_loop (and while_grad, its reverse mode) and scan, with fg.while_loop,
  fg.scan and fg.fori_loop;
- conditionals.py: cond, with fg.cond and fg.switch;
- custom.py: user-written derivative rules and rematerialisation: fg.custom_vjp, fg.custom_jvp,
  fg.checkpoint, fg.stop_gradient, fg.pure_callback;
- implicit.py: derivatives through the equation a solution solves: fg.custom_root,
  fg.custom_linear_solve;
- subprograms.py: tracing a user's body into a sub-program, and the helpers the rules share.
Each primitive is one block: evaluation, shape rule, derivative rules and batching rule together.
"""
from .conditionals import cond, switch
from .custom import (checkpoint, checkpoint_name, checkpoint_policies, custom_jvp, custom_vjp,
                     pure_callback, stop_gradient)
from .implicit import custom_linear_solve, custom_root
from .loops import fori_loop, scan, while_loop

__all__ = ["cond", "switch", "fori_loop", "scan", "while_loop", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "custom_jvp", "custom_vjp", "pure_callback", "stop_gradient",
           "custom_root", "custom_linear_solve"]
