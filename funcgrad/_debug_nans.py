"""The state and the checks of fg.debug_nans / fg.debug_infs (PyTorch's detect_anomaly,
JAX's jax_debug_nans), shared by the interpreter, the check primitive and fg.jit.

When on, every equation that produces a NaN (or an infinity) from inputs that hold none
raises FloatingPointError naming the primitive and the user's line, and for an equation of a
derived program the role it plays there ("in the backward pass of sqrt"). The interpreter
checks after each equation (funcgrad/interpreter.py); compiled kernels carry the same checks
as generated code (transforms/nan_checks.py inserts a `debug_check` equation after each
floating-point equation, which the backend writes as checks in the kernel, backend/check_code.py),
so the origin is found in the run that failed, without running anything again. Off, nothing
is checked: the interpreter looks at the mode once per program it runs, and kernels are
compiled without checks. Imports nothing from funcgrad but fg.config (_config.py).
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from ._config import config

# (nans, infs) checked now; fg.config's debug_nans / debug_infs read and set it (hooks below)
MODE = [False, False]
_lock = threading.Lock()
# a loop being interpreted pushes its step counter here, so a report can say which step
_steps = threading.local()


def active():
    return MODE[0] or MODE[1]


def mode():
    """(nans, infs): part of a compiled kernel's identity."""
    return (MODE[0], MODE[1])


# called with True when the checks turn on and False when they turn off (fg.jit's per-call
# dispatch keys then carry the mode: api/jit.py)
LISTENERS: list = []


def _set(mode):
    was = active()
    MODE[:] = mode
    if active() != was:
        for listener in LISTENERS:
            listener(active())


@contextlib.contextmanager
def checking(nans=None, infs=None):
    """Turn the checks on (or off, with False) inside the block; restores the previous mode."""
    with _lock:
        prev = list(MODE)
        _set([prev[0] if nans is None else bool(nans), prev[1] if infs is None else bool(infs)])
    try:
        yield
    finally:
        with _lock:
            _set(prev)


def _bad(x, infs):
    """Whether a value holds a NaN (or, when infs, an infinity); False for a traced value
    (a program re-staged into another trace is checked when that one runs)."""
    if not isinstance(x, (np.ndarray, np.generic, float, complex)):
        return False
    a = np.asarray(x)
    if a.dtype.kind not in "fc":
        return False
    with np.errstate(all="ignore"):
        return bool(np.isnan(a).any() or (infs and np.isinf(a).any()))


@contextlib.contextmanager
def loop_step(kind):
    """Count the steps of an interpreted loop for reports (`next_step()` per step)."""
    stack = getattr(_steps, "stack", None)
    if stack is None:
        stack = _steps.stack = []
    stack.append([kind, -1])
    try:
        yield
    finally:
        stack.pop()


def next_step(k=None):
    """The innermost interpreted loop starts its next step (step k)."""
    stack = getattr(_steps, "stack", None)
    if stack:
        stack[-1][1] = stack[-1][1] + 1 if k is None else k


STEPS = "\x00"     # where a compiled check's message gets the steps of the loops around it


def message(prim_name, src, infs, produced=None, where_steps=""):
    """The report: what was produced, by which primitive, where, in which role."""
    produced = produced or ("NaN or inf" if infs else "NaN")
    at = "" if src is None else f" at {src.long()}"
    if src is not None and src.role is not None:
        what = f"in {src.role}{at} (by its {prim_name})"
    else:
        what = f"by {prim_name}{at}"
    inputs = "finite inputs" if infs else "inputs without NaN"
    return (f"{produced} produced {what} from {inputs}{where_steps}. (fg.debug_nans / "
            "fg.debug_infs is on: turn it off when done, it costs time.)")


def check(prim_name, src, ins, outs):
    """Raise FloatingPointError if an output is bad and no input is (the interpreter's check)."""
    nans, infs = MODE
    if not any(_bad(o, infs) for o in outs) or any(_bad(i, infs) for i in ins):
        return
    produced = "NaN" if any(_bad(o, False) for o in outs) else "inf"
    stack = getattr(_steps, "stack", None) or []
    steps = "".join(f", in step {k} of the loop around it ({kind})" for kind, k in reversed(stack)
                    if k >= 0)
    raise FloatingPointError(message(prim_name, src, infs, produced, steps))


def check_eqn(e, ins, out, masked):
    """The interpreter's check of equation e (inputs `ins`, result `out`). Equations whose
    NaNs the strong-zero rule may replace (SourceInfo.masked) are skipped, and their values
    do not count as bad inputs (the replacement is checked instead): `masked` is the set of
    such variables' ids in the program being run."""
    if e.src is not None and e.src.masked:
        masked.update(v.id for v in e.outputs)
        return
    ins = [x for x, v in zip(ins, e.inputs) if getattr(v, "id", None) not in masked]
    check(e.prim.name, e.src, ins, out if e.prim.multiple_results else [out])


def _hook(k):
    def set_(value):
        with _lock:
            mode = list(MODE)
            mode[k] = bool(value)
            _set(mode)
    return (lambda: MODE[k]), set_


config.hook("debug_nans", *_hook(0))       # (the environment's start value is set here)
config.hook("debug_infs", *_hook(1))
