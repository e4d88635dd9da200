"""fg.jit's first call of a new signature: answered by the interpreter while a thread compiles.

Compiling a kernel takes from a fraction of a second to several seconds (Numba's typing and
LLVM); interpreting the same program once usually takes milliseconds. So the first call of a
signature traces f, starts compiling its kernel in a background thread, and answers from the
reference interpreter (interpreter.py, the same program the kernel is built from). The next
call of that signature waits for the kernel if it is not ready yet and runs it; from then on
calls are native, as before. A notebook cell answers at once; a loop waits once, at its second
call, for what is left of the compile (never longer than compiling on the first call would
have taken, less the first call's own time).

Long loops in a first call: a `scan`/`fori_loop` too long to interpret (tiering.loop_is_long)
stops the interpretation, and the call waits for the kernel and runs it; a `while_loop`
(trip count unknown) keeps being interpreted, and every LOOP_COMPILE_SECONDS the interpreter
asks whether the kernel is ready: once it is, the call runs the kernel instead. (L-BFGS on a
100-dimensional Rosenbrock interprets in about 1 s; its kernel compiles in 7-11 s.)

FUNCGRAD_JIT_BACKGROUND=0 compiles on the first call; `fg.jit(f, background=False)` does for
one function.
"""
from __future__ import annotations

import threading

from ..interpreter import eval_program

__all__ = ["Pending", "allowed", "interpret_first", "in_first_call", "kernel_ready", "UseKernel"]


class UseKernel(BaseException):
    """Raised inside a first call's interpretation when a loop would take long to interpret:
    waiting for the kernel is quicker. (A BaseException: the interpreter's error handling,
    which adds the user's line to errors, lets it through untouched.)"""


class _FirstCall(threading.local):
    pending = None          # the Pending whose first call this thread is interpreting


_first = _FirstCall()


def in_first_call():
    """Whether this thread is interpreting a first call whose kernel is being compiled."""
    return _first.pending is not None


def kernel_ready():
    """Whether the kernel of the first call this thread is interpreting is ready."""
    return _first.pending is not None and _first.pending.ready


def interpret_first(prog, args, pending):
    """prog's results from the interpreter, or None when running pending's kernel is the
    quicker way (a long loop met while it compiles, api/jit.py _compile_loop)."""
    _first.pending = pending
    try:
        return eval_program(prog, *args)
    except UseKernel:
        return None
    finally:
        _first.pending = None


class Pending:
    """A signature whose kernel a background thread is compiling: `build()` returns what the
    signature's entry will be; `join()` waits for it and returns it, or raises what building
    raised."""

    __slots__ = ("thread", "result", "error", "key", "hot", "fast_keys")

    def __init__(self, build, key):
        self.result = self.error = None
        self.key, self.hot, self.fast_keys = key, True, []
        self.thread = threading.Thread(target=self._run, args=(build,), daemon=True,
                                       name="funcgrad-jit-compile")  # (see allowed())
        self.thread.start()

    def _run(self, build):
        try:
            self.result = build()
        except Exception as exc:        # raised to the caller by join()
            self.error = exc

    @property
    def ready(self):
        return not self.thread.is_alive()

    def join(self):
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.result


def allowed():
    """Whether a first call in this thread may compile in the background: not in a thread
    that is itself compiling for funcgrad (tiering's background compile, tiering.py)."""
    return not threading.current_thread().name.startswith("funcgrad-")
