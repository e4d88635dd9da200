"""Compile generated source with Numba; reuse kernels whose source is identical.

Kernels are reused within the process (a table keyed by the module text) and across processes
through the on-disk cache (cache.py: one file per kernel, Numba's cache beside it). A kernel the
cache cannot hold (disabled, untrusted directory, a helper parameter that cannot be written as a
literal) is compiled in memory: its source is registered with `linecache` under a stable name,
so tracebacks and debuggers show the generated lines either way. With NUMBA_DISABLE_JIT=1 the
same function runs as plain Python (step through the backward pass in pdb). Numba is imported
here, lazily, on the first compilation.
"""
from __future__ import annotations

import hashlib
import linecache
import math
import re

import numpy as np

from . import cache
from .._config import config
from .._errors import KernelInterrupted
from .codegen import Generator, without_locations
from .lowerings import lowering
from .source_text import where_mark
from ..interpreter import eval_program
from .._debug_nans import STEPS
from ..ir import Var, sub_programs

def kernels_made():
    """How many kernels this process has compiled or loaded from the disk cache so far (a
    kernel reused from memory does not count)."""
    return cache.kernels.made


class Compiled:
    """A compiled program: the Numba function, its constant arguments and its source.
    fresh_outs[i]: output i is allocated anew by every call (it can alias nothing).
    dispatcher: the Numba dispatcher behind fn (None for an interpreted program); module: the
    (module text, parallel) it was loaded from in the disk cache, or None."""

    __slots__ = ("fn", "consts", "source", "program", "fresh_outs", "dispatcher", "module")

    def __init__(self, fn, consts, source, program, fresh_outs=None, dispatcher=None,
                 module=None):
        self.fn, self.consts, self.source, self.program = fn, consts, source, program
        self.fresh_outs = fresh_outs or [False] * len(program.outs)
        self.dispatcher, self.module = dispatcher, module

    def precompile(self, args, elsewhere=False):
        """Have Numba compile for these arguments' types without running the kernel.
        elsewhere: in the compile worker (worker.py) into the disk cache, from which the
        kernel's first call then loads it (in milliseconds: loading here, in a thread beside
        the caller's, would trade GIL hand-overs with it at every call into LLVM); if the
        worker cannot, here."""
        if self.dispatcher is None:
            return
        import numba
        types = tuple(numba.typeof(a) for a in (*args, *self.consts))
        if types in self.dispatcher.overloads:
            return
        if elsewhere and self.module is not None:
            if self._on_disk(types):
                return          # (compiled before, by any process: the first call loads it)
            from . import worker
            if worker.compile_elsewhere(*self.module, types):
                return
        self.dispatcher.compile(types)

    def _on_disk(self, types):
        """Whether Numba's disk cache holds this kernel for these types (its index only is
        read). Numba's cache internals: any surprise means no."""
        try:
            c = self.dispatcher._cache
            key = c._index_key(types, self.dispatcher.targetctx.codegen())
            return key in c._cache_file._load_index()
        except Exception:              # pragma: no cover  (another Numba version)
            return False

    def __call__(self, *args):
        try:
            return self.fn(*args, *self.consts)
        except KernelInterrupted:
            raise KeyboardInterrupt from None


def generate(prog, name="kernel", parallel=False, exits=()):
    gen = Generator(prog, name, parallel, exits)
    return gen, gen.generate()


def _uncompilable(dtype):
    """Numba has no arithmetic for float16, long double or complex long double."""
    return dtype.name == "float16" or (
        dtype.kind in "fc" and dtype.itemsize > (16 if dtype.kind == "c" else 8))


def _interpreted(prog, why):
    return Compiled(lambda *args: tuple(np.array(r) for r in eval_program(prog, *args)), [],
                    f"# not compiled ({why}): runs in funcgrad's interpreter\n", prog)


_tuned = [False]


def tune_allocator():
    """Keep freed memory in the C heap between kernel calls (glibc on Linux only).

    Kernels allocate their arrays (loop tapes, results) with malloc on every call. By default
    glibc gives memory at the top of the heap back to the system when it is freed, so the next
    call page-faults the same memory in again; in a loop benchmark that was half the run time,
    and whether it happened depended on heap layout (a 2.5x difference between two runs of one
    kernel). Raising the trim threshold keeps it; fixing the mmap threshold at its largest value
    keeps large arrays in the heap too (setting one disables glibc's own adjustment of both).
    The process's memory high-water mark is then kept rather than returned.
    fg.config.tune_malloc = False (FUNCGRAD_TUNE_MALLOC=0) leaves the allocator alone."""
    if _tuned[0] or not config.tune_malloc:
        return
    _tuned[0] = True
    import ctypes
    import platform
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)        # glibc's maximum on 64-bit
    except (OSError, AttributeError):          # pragma: no cover  (no glibc after all)
        pass


def _on_disk(fn):
    """Whether Numba keeps fn's machine code in its disk cache (njit(cache=True) with a
    writable cache: the compile worker can then compile it for this process)."""
    from numba.core.caching import FunctionCache
    return isinstance(getattr(fn, "_cache", None), FunctionCache)


def compile_program(prog, parallel=False, exits=()) -> Compiled:
    """Lower `prog` to source and compile it (or reuse an identical kernel). Programs with
    dtypes Numba cannot compute in (float16, long double) run in the interpreter instead.
    exits: (output index, truth value) pairs, guards the kernel returns early on when they
    come out otherwise (codegen.Generator.exit)."""
    tune_allocator()
    dtypes = {v.aval.dtype for v in prog.in_vars} | {
        v.aval.dtype for e in prog.eqns for v in e.outputs}
    bad = sorted(d.name for d in dtypes if _uncompilable(d))
    if bad:
        return _interpreted(prog, f"dtype {', '.join(bad)}")
    gen, source = generate(prog, parallel=parallel, exits=exits)
    bare = without_locations(source)                # (source keeps the user's lines to read)
    text = cache.module_text(bare, gen.impls)       # None: helpers not writable as literals
    key = (text, bool(parallel))
    fn = cache.kernels.get_or_make(
        key if text is not None else None,
        lambda: (cache.load_kernel(text, parallel) if text is not None else None)
        or _build(bare, gen.impls, parallel))
    dispatcher = fn if hasattr(fn, "overloads") else None     # (not with NUMBA_DISABLE_JIT=1)
    module = key if text is not None and _on_disk(fn) else None
    if config.dump:
        print(f"# funcgrad: compiled kernel\n{source}")
    ids = [o.id for o in prog.outs if isinstance(o, Var)]
    fresh = [gen.fresh(o) and ids.count(o.id) == 1 for o in prog.outs]
    messages = _check_messages(prog, {})
    if messages or gen.impls or re.search(r"raise (IndexError|np\.linalg\.LinAlgError)\(", bare):
        fn = _reporting(fn, messages, gen.where)
    return Compiled(fn, gen.consts, source, prog, fresh, dispatcher, module)


def _check_messages(prog, out):
    """{site: message} of fg.debug_nans's checks in prog and its sub-programs."""
    for e in prog.eqns:
        if lowering(e.prim).check:
            out[e.params["site"]] = e.params["message"]
        for sub in sub_programs(e.params):
            _check_messages(sub, out)
    return out


def _reporting(fn, messages, where):
    """fn, raising the message of the check whose site number the kernel raised
    (fg.debug_nans), and naming the user's line in the errors the kernel marked with the name
    of a value or objmode helper (source_text.where_mark: the kernel's text holds no lines)."""
    def checked(*args):
        try:
            return fn(*args)
        except FloatingPointError as exc:
            site = exc.args[0] if exc.args else None
            if isinstance(site, int) and site in messages:
                loops = list(zip(exc.args[1::2], exc.args[2::2]))[::-1]     # innermost first
                steps = "".join(f", in step {k} of the loop around it ({kind})" for k, kind in loops)
                raise FloatingPointError(messages[site].replace(STEPS, steps)) from None
            _locate(exc, where)
            raise
        except Exception as exc:
            text = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], str) else ""
            m = _MARK.search(text)
            if m is not None and m.group(1):        # (a primitive failed: NumPy's message)
                error = type(exc)(text[:m.start()])
                place = where.get(m.group(2))
                error.add_note(f"funcgrad: {m.group(1)} failed on values computed"
                               + (f" at {place}" if place is not None else ""))
                raise error from None
            if type(exc) is IndexError and text:
                raise IndexError(_located(text, where)) from None
            _locate(exc, where)
            raise
    return checked


_MARK = re.compile(r" \[(?:(\w+):)?(\w+)\]$")


def _located(text, where):
    """text, its where_mark (' [name]' at its end) replaced by ' at file:line (in f)'."""
    m = _MARK.search(text)
    if m is None:
        return text
    place = where.get(m.group(2))
    return text[:m.start()] + (f" at {place}" if place is not None else "")


def _locate(exc, where):
    """The notes objmode helpers added to exc (objmode_call) name the user's line."""
    notes = getattr(exc, "__notes__", None)
    if notes:
        notes[:] = [_located(n, where) for n in notes]


def _build(source, impls, parallel):
    """Compile in memory (no persistent cache)."""
    import numba
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    filename = f"<funcgrad-kernel-{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    from . import vecmath
    namespace = {"np": np, "numba": numba, "math": math, "_vm": vecmath}
    namespace.update({name: objmode_call(*spec) for name, spec in impls.items()})
    exec(compile(source, filename, "exec"), namespace)
    return numba.njit(error_model="numpy", parallel=parallel)(namespace["kernel"])


def objmode_call(prim, params, avals, name=None):
    """The Python callable behind an objmode block: NumPy impl, outputs in the declared types.
    An error NumPy raises (LinAlgError, ...) gets a note marked with the helper's `name`, which
    the kernel's caller replaces by the user's line (_reporting)."""
    def call(*args):
        try:
            out = prim.impl(*[np.asarray(a) for a in args], **params)
        except Exception as exc:
            if name is not None and hasattr(exc, "add_note"):
                exc.add_note(f"funcgrad: {prim.name} failed on values computed{where_mark(name)}")
            raise
        outs = out if prim.multiple_results else (out,)
        return tuple(np.asarray(o, dtype=a.dtype).reshape(a.shape)[()] if a.ndim == 0
                     else np.ascontiguousarray(o, dtype=a.dtype) for o, a in zip(outs, avals))
    return call
