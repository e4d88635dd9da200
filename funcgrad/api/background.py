"""fg.jit's new signatures: answered by the interpreter while the kernel compiles elsewhere.

Compiling a kernel takes from a fraction of a second to a minute (Numba's typing and LLVM);
interpreting the same program once usually takes milliseconds. So the first call of a
signature traces f, starts its kernel compiling, and answers from the reference interpreter
(interpreter.py, the same program the kernel is built from); later calls of that signature
are answered the same way, from the same program, until the kernel is ready, and from the
kernel after that: a notebook cell answers at once, a training loop runs interpreted for its
first seconds and native after. A user's fg.jit answers so only for a program the interpreter
computes bit for bit as the kernel does (ir.exact_program; fg.config.jit_same_bits): the first
call of any other waits for its kernel (api/jit.py). Tiering and the library loops answer
every program so.

Where the compile runs: a thread here (Pending) traces nothing and runs no user code; it
generates the kernel's source and hands it to the compile worker, a separate process
(backend/worker.py), and waits for it without holding the GIL. The worker compiles into the
disk cache; the kernel's first call here loads it (milliseconds). Where the worker cannot be
used (no disk cache, no interpreter to start), the thread compiles here.

Long loops: a `scan`/`fori_loop` too long to interpret (tiering.loop_is_long) stops the
interpretation, and the call waits for the kernel, saying on stderr what it waits for and for
how long so far; a `while_loop` (trip count unknown) keeps being interpreted, and every
fg.config.loop_compile_seconds the interpreter asks whether the kernel is ready: once it is, the call
runs the kernel instead. (L-BFGS on a 100-dimensional Rosenbrock interprets in about 1 s; its
kernel compiles in 7-11 s.)

fg.config.jit_background = False (FUNCGRAD_JIT_BACKGROUND=0) compiles on the first call;
`fg.jit(f, background=False)` does for one function.
"""
from __future__ import annotations

import sys
import threading
import time
import weakref

from ..interpreter import eval_program

__all__ = ["Pending", "interpret_first", "in_first_call", "kernel_ready", "UseKernel", "wait_all"]


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
    raised. `program`: what the first call traced, to answer calls meanwhile (api/jit.py)."""

    __slots__ = ("thread", "result", "error", "key", "hot", "fast_keys", "name", "program",
                 "started", "done", "why", "__weakref__")

    def __init__(self, build, key, name="the function"):
        self.result = self.error = self.program = None
        self.why = ""           # why a call waits for it, said once with the first notice
        self.key, self.hot, self.fast_keys, self.name = key, True, [], name
        self.started = time.perf_counter()
        # (an Event, not Thread.join/is_alive: a join that Ctrl-C interrupts can leave the
        # thread marked stopped while it runs on, in the Pythons we support)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(build,), daemon=True,
                                       name="funcgrad-jit-compile")
        self.thread.start()
        _live.add(self)

    def _run(self, build):
        try:
            self.result = build()
        except Exception as exc:        # raised to the caller by join()
            self.error = exc
        finally:
            self.done.set()

    @property
    def ready(self):
        return self.done.is_set()

    def wait(self):
        """Wait until the build is done (its result or error set)."""
        while not self.done.wait(0.25):
            pass

    def join(self):
        """The entry, once built. A wait longer than WAIT_NOTICE seconds says so on stderr
        (what compiles, for how long so far), so that it never looks like a hang; Ctrl-C
        stops the wait (the compile goes on in the background)."""
        waited = time.perf_counter()
        noticed = False
        while not self.done.is_set():
            now = time.perf_counter()
            if now - waited >= WAIT_NOTICE:
                if not noticed and self.why:
                    sys.stderr.write(f"funcgrad: {self.why}\n")
                _notice(f"funcgrad: waiting for the kernel of {self.name} to compile "
                        f"({now - self.started:.0f} s so far)", final=False, first=not noticed)
                noticed = True
            self.done.wait(0.25)
        if noticed:
            _notice(f"funcgrad: the kernel of {self.name} is ready after "
                    f"{time.perf_counter() - self.started:.1f} s", final=True)
        if self.error is not None:
            raise self.error
        return self.result


_live: "weakref.WeakSet" = weakref.WeakSet()        # Pending objects not yet collected


def wait_all():
    """Wait until every kernel compiling in the background in this process is ready (fg.jit's,
    hot fg.grad & co.'s, the library loops'): benchmarks call it before timing."""
    for p in list(_live):
        p.wait()


WAIT_NOTICE = 2.0       # seconds a call waits for a kernel before it says so
_last_notice = [0.0]


def _notice(text, final, first=False):
    """A progress line on stderr: rewritten in place on a terminal, else every 10 s (and the
    first line of each wait)."""
    stream = sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    now = time.perf_counter()
    if tty:
        stream.write("\r" + text + ("\n" if final else ""))
    elif final or first or now - _last_notice[0] >= 10.0:
        stream.write(text + "\n")
        _last_notice[0] = now
    stream.flush()
