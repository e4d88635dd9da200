"""fg.jit: trace once per signature, simplify, compile with Numba, dispatch fast.

A signature is the pytree structure of the arguments, the shape and dtype of every array leaf,
and the values of static arguments. Arrays that f closes over are captured when it is traced,
as in JAX: rebinding or mutating them later is not seen by the compiled function. Called
inside another transform (grad of jit), a jitted function is simply traced through.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import re
import threading
import types

import numpy as np

from .. import _debug_nans as nan_checks
from .._errors import (FuncgradError, KernelInterrupted, add_location, array_memory_error,
                       loop_memory_error, warn_at)
from ..interpreter import eval_program
from ..ir import Program, aval_of, current_trace, exact_program, sub_programs
from ..tiering import LATER, NOT_READY, set_loop_compiler, value_key
from ..tracer import trace_flat
from ..transforms.scalarize import scalarize
from ..transforms.nan_checks import insert_checks
from ..transforms.simplify import simplify
from ..tree_util import tree_flatten, tree_unflatten
from .._config import config
from .background import (Pending, UseKernel, in_first_call, interpret_first,
                         kernel_ready)
from .calls import Args, evaluate, fn_name, to_numpy, trace_call
from .entries import MISS, PASS_SCALARS, Entry, Paths, fast_key, guard_exits, tree_key
from .shipping import jit_state, restore_jit

def prepare(prog):
    """The program as it is compiled: simplified, small arrays in loops made scalars (and
    under fg.debug_nans, checked after each equation: checks go in first, so that an equation
    whose value nothing reads, such as a forward value a gradient does not need, is run and
    checked as the interpreter does; a check is an effect, never dropped)."""
    if nan_checks.active():
        prog = insert_checks(prog, infs=nan_checks.MODE[1])
    prog = simplify(prog)
    small = scalarize(prog)
    return prog if small is prog else simplify(small)


__all__ = ["jit", "disable_jit", "JitFunction"]

class _Disabled(threading.local):
    """Whether jit is disabled, per thread: one thread debugging in `disable_jit` leaves the
    others compiled. `count` (shared) is how many threads are disabled now: a jitted call
    reads only that (15 ns) unless some thread is, then its own thread's flag (70 ns)."""
    on = False
    count = [0]

    def __bool__(self):
        return bool(self.count[0]) and self.on


_disabled = _Disabled()
_count_lock = threading.Lock()


def _checked_key(key):
    """A per-call dispatch key, told apart while fg.debug_nans is on: the checked kernels
    have fast paths of their own."""
    return (key, nan_checks.mode()) if key is not None and nan_checks.active() else key


def _checking_nans(on):
    """fg.debug_nans turned on or off: while it is on, per-call dispatch keys carry the
    check mode (_checked_key); the count is disable_jit's, so that costs nothing when off."""
    with _count_lock:
        _Disabled.count[0] += 1 if on else -1


nan_checks.LISTENERS.append(_checking_nans)
if nan_checks.active():         # FUNCGRAD_DEBUG_NANS=1 from the start
    _Disabled.count[0] += 1


@contextlib.contextmanager
def disable_jit(disable=True):
    """Run jitted functions with the reference interpreter inside this block, in this thread
    (for debugging; other threads keep running compiled).

        >>> f = fg.jit(lambda x: fnp.sum(fnp.sin(x) ** 2))
        >>> with fg.disable_jit():
        ...     f(np.ones(3))         # NumPy, equation by equation
    """
    disable = bool(disable)
    prev = _disabled.on
    with _count_lock:
        _disabled.on = disable
        _Disabled.count[0] += disable - prev
    try:
        yield
    finally:
        with _count_lock:
            _disabled.on = prev
            _Disabled.count[0] += prev - disable


class Lowered:
    """The traced, simplified program and its generated source (fg.jit(f).lower(*args))."""

    def __init__(self, program, out_tree):
        self.program, self.out_tree = program, out_tree
        self._source = None

    @property
    def source(self):
        if self._source is None:
            from ..backend.compile import generate
            self._source = generate(self.program)[1]
        return self._source

    def compile(self, parallel=False):
        from ..backend.compile import compile_program
        return compile_program(self.program, parallel)


def _check_static_argnums(f, static_argnums):
    """static_argnums as a tuple of ints, refused when f cannot have such an argument."""
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise TypeError(f"fg.jit: static_argnums must be ints, got {static_argnums!r}")
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):          # a builtin or C callable: nothing to check
        return nums
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return nums
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    bad = [i for i in nums if not -n <= i < n]
    if bad:
        name = getattr(f, "__name__", repr(f))
        raise ValueError(f"fg.jit: static_argnums={static_argnums!r} refers to argument "
                         f"{bad[0]}, but {name} takes {n} positional argument(s)")
    return tuple(i % n for i in nums)


def signature(a: Args):
    """The key of a call's compiled entry (fg.jit's signatures, a compiled vjp's plans): the
    arguments' pytree structure, which leaves are traced and their shapes and dtypes, the
    static values (by value, never by identity: a mutated static recompiles) and the
    fg.debug_nans mode (checked kernels are others). Tiering counts calls by a key of its own
    taken before tracing (tiering._signature), and fast dispatch maps arguments to an entry
    by fast_key/tree_key (entries.py), a cache of this key for arrays and numbers."""
    statics = tuple(s[1] for s in a.slots if not isinstance(s, int))
    if statics:
        statics = value_key(statics)
    # which leaves are traced: f(array, 1) and f(1, array) have the same avals and statics
    layout = tuple(isinstance(s, int) for s in a.slots)
    return (tuple(a.trees), layout, tuple(a.avals()), statics, nan_checks.mode())


class JitFunction:
    """A function compiled per signature; see `jit`."""

    def __init__(self, f, static_argnums=(), parallel=False, background=None, same_bits=None):
        self.f = f
        self.static_argnums = _check_static_argnums(f, static_argnums)
        self.parallel = parallel
        # first call of a signature: answered by the interpreter while its kernel compiles
        # (background.py); None: fg.config.jit_background (default on)
        self.background = background
        # ... only where the interpreter computes the kernel's bits (others wait for it);
        # None: fg.config.jit_same_bits (default on). False for tiering and library loops.
        self.same_bits = same_bits
        self._entries: dict = {}
        self._fast: dict = {}
        self._trees = False       # _fast holds keys of pytree arguments (tree_key)
        self._shipped: dict = {}  # signature -> (program, out tree) unpickled (shipping.py)
        functools.update_wrapper(self, f, updated=())

    def __reduce__(self):
        """Pickled as its function and the programs of its compiled signatures (shipping.py):
        another process runs them without tracing again, from its kernel cache."""
        entries = []
        for sig, e in list(self._entries.items()):
            if isinstance(e, Pending):              # (compiling in the background: wait)
                e = self._finish(sig, e)
            if isinstance(e, Entry):                # (not paths of Python control flow)
                entries.append((sig, e.compiled.program, e.out_tree))
        return (restore_jit, (JitFunction,) + jit_state(self, entries))

    def __get__(self, obj, objtype=None):
        """@fg.jit on a method: the instance is the first argument (static, by value: a changed
        attribute recompiles; make the class a pytree to trace its arrays instead)."""
        return self if obj is None else types.MethodType(self, obj)

    def wait(self):
        """Wait until the kernels compiling in the background for this function are ready
        (before timing it, say); returns self. Compile errors are raised by the next call."""
        for e in list(self._entries.values()):
            if isinstance(e, Pending):
                e.wait()
        return self

    def lower(self, *args, **kwargs):
        """Trace and simplify for these arguments; `.source` is the generated code."""
        a = Args(self.f, args, kwargs, static_argnums=self.static_argnums,
                  trace_numbers=(float, complex))
        prog, consts, out_tree = trace_call(self.f, a)
        return Lowered(prepare(prog), out_tree)

    def __call__(self, *args, **kwargs):
        if not kwargs:
            if len(args) == 1:           # (fast_key inlined: one array or number)
                x = args[0]
                t = type(x)
                key = (x.shape, x.dtype) if t is np.ndarray else t if t in PASS_SCALARS else None
            else:
                key = fast_key(args)
            if _Disabled.count[0]:              # (disable_jit, or fg.debug_nans: checked kernels)
                key = _checked_key(key)
            hit, vals = self._fast.get(key), args
            if key is None and self._trees:     # pytrees of arrays: keyed by their structure
                vals, td = tree_flatten(args)
                hit = self._fast.get(_checked_key(tree_key(td, vals)))
            if hit is not None and not (_Disabled.count[0] and _disabled.on):
                hit.hot = True
                try:
                    out = hit.fast(args) if vals is args else hit.fast_tree(vals)
                except KernelInterrupted:       # Ctrl-C inside the kernel (see vecmath)
                    raise KeyboardInterrupt from None
                if out is not MISS:
                    return out
                a = Args(self.f, args, kwargs, trace_numbers=(float, complex))
                return self._guarded(hit, a, tried=True)
        if _disabled:
            return evaluate(self.f, *args, **kwargs)
        if current_trace() is not None:     # inside another transform: traced through (its
            return self.f(*args, **kwargs)  # arguments, or what f closes over, may be traced)
        a = Args(self.f, args, kwargs, static_argnums=self.static_argnums,
                  trace_numbers=(float, complex))
        sig = signature(a)
        entry = self._entries.get(sig)
        if entry is None:
            key = self._dispatch_key(args, kwargs, a)
            if sig in self._shipped:            # unpickled: compile the program it came with
                entry, first = self._compile_shipped(sig, a)
                self._remember(sig, entry, key if entry.fast is not None else None)
                return first
            if self.background if self.background is not None else config.jit_background:
                first = self._start(sig, a, key)
                if first is not MISS:
                    return first
                entry = self._entries[sig]
            else:
                entry, first = self._compile(a)
                self._remember(sig, entry, key if entry.fast is not None else None)
                return first
        if isinstance(entry, Pending):
            if not entry.ready:                 # still compiling: the interpreter answers
                out = self._meanwhile(entry, a, args, kwargs)
                if out is not MISS:
                    return out
            entry = self._finish(sig, entry)
        if not kwargs and not self.static_argnums and not a.converted:
            self._remember_tree(entry, args, len(a.dyn_vals))
        entry.hot = True
        if isinstance(entry, Paths):
            return self._guarded(entry, a)
        return tree_unflatten(entry.out_tree, entry.run(a.dyn_vals))

    def dispatch(self, args):
        """f(*args) through the fast path of a signature whose kernel is ready, else
        NOT_READY (then call the function): tiering's hot calls, whose guards have checked
        f's state, come here first."""
        if len(args) == 1:
            x = args[0]
            t = type(x)
            key = (x.shape, x.dtype) if t is np.ndarray else t if t in PASS_SCALARS else None
        else:
            key = fast_key(args)
        hit = self._fast.get(key)
        if hit is None or _Disabled.count[0]:   # (disable_jit, fg.debug_nans: the full path)
            return NOT_READY
        hit.hot = True
        try:
            out = hit.fast(args)
        except KernelInterrupted:               # Ctrl-C inside the kernel (see vecmath)
            raise KeyboardInterrupt from None
        if out is MISS:                         # no compiled path's guards held
            a = Args(self.f, args, {}, trace_numbers=(float, complex))
            return self._guarded(hit, a, tried=True)
        return out

    def forget(self, *args):
        """Drop the compiled signature of these arguments (tiering: it failed compiled)."""
        a = Args(self.f, args, {}, static_argnums=self.static_argnums,
                 trace_numbers=(float, complex))
        entry = self._entries.pop(signature(a), None)
        for k in getattr(entry, "fast_keys", ()):
            self._fast.pop(k, None)

    def _dispatch_key(self, args, kwargs, a):
        """The key later calls with these arguments find the signature's entry by (_fast), or
        None where they must take the full path."""
        key = _checked_key(fast_key(args))
        if (key is None or kwargs or self.static_argnums or len(a.dyn_vals) != len(args)
                or a.converted):
            return None
        return key

    def compile(self, *args, **kwargs):
        """Compile the kernel for these arguments' signature now and wait for it, without
        running it (ahead of a timed loop, or to see a compile error at once); returns self.
        Calls of that signature then run the kernel from the first.

            >>> f = fg.jit(lambda x: fnp.sum(fnp.cos(x) ** 2)).compile(np.ones(3))
            >>> f(np.zeros(3))
            3.0
        """
        a = Args(self.f, args, kwargs, static_argnums=self.static_argnums,
                 trace_numbers=(float, complex))
        sig = signature(a)
        entry = self._entries.get(sig)
        if isinstance(entry, Pending):
            self._finish(sig, entry)
        elif entry is None:
            prog, consts, out_tree, n_out, guards = self._trace(a)
            entry = self._entry(prog, out_tree, n_out, guards)
            _first_run(entry, a.dyn_vals, self.f, precompile=True)
            key = self._dispatch_key(args, kwargs, a)
            self._remember(sig, _with_paths(entry, n_out, guards),
                           key if entry.fast is not None else None)
        return self

    def _remember(self, sig, entry, key):
        """Keep a new compiled signature; past fg.config.jit_max_signatures one not used
        lately goes (CLOCK, an approximation of least recently used: each call marks its
        entry, a sweep gives marked entries a second chance). Its kernel is freed unless
        another function shares it; calling that signature again compiles it again (from the
        disk cache)."""
        while len(self._entries) >= config.jit_max_signatures:
            old_sig = next(iter(self._entries))
            old = self._entries.pop(old_sig)
            if old.hot:
                old.hot = False
                self._entries[old_sig] = old          # to the back of the queue
                continue
            for k in old.fast_keys:
                self._fast.pop(k, None)
        self._entries[sig] = entry
        if key is not None:
            self._fast[key] = entry
            entry.fast_keys.append(key)

    def _remember_tree(self, entry, args, n_traced):
        """Dispatch later calls with arguments of this structure (pytrees whose leaves are all
        arrays or traced scalars) straight to entry, as _fast does for flat arrays."""
        if fast_key(args) is not None:
            return
        leaves, td = tree_flatten(args)
        key = _checked_key(tree_key(td, leaves))
        if key is not None and len(leaves) == n_traced and key not in self._fast:
            self._fast[key] = entry
            entry.fast_keys.append(key)
            self._trees = True

    def _trace(self, a):
        """The program of this call, simplified, with the values of its guards (decisions of
        Python control flow on traced values, tracer.py) as extra outputs after f's own."""
        guards = []
        prog, consts, out_tree = trace_call(self.f, a, guards=guards)
        n_out = len(prog.outs)
        if guards:
            prog = Program(prog.in_vars, prog.eqns, list(prog.outs) + [g[0] for g in guards])
        prog = prepare(prog)
        _check_sizes(prog)
        return prog, consts, out_tree, n_out, guards

    def _start(self, sig, a, key):
        """The first call of a signature: its kernel compiled in a thread (background.py), the
        results of this call from the interpreter meanwhile (MISS: it holds a loop too long
        to interpret; the signature's entry is then the kernel, waited for)."""
        prog, consts, out_tree, n_out, guards = self._trace(a)
        vals = list(a.dyn_vals)
        exact = exact_program(prog)
        answer = exact or not self._same_bits()

        def build():
            entry = self._entry(prog, out_tree, n_out, guards)
            _first_run(entry, vals, self.f, precompile=True)
            return _with_paths(entry, n_out, guards)
        pending = Pending(build, key, fn_name(self.f))
        pending.program = (prog, consts, out_tree, n_out, bool(guards), exact)
        if not answer:
            pending.why = (f"fg.jit({pending.name}) gives its kernel's bits from the first "
                           "call, and the interpreter's would differ in the last place: "
                           "fg.jit(f, same_bits=False) answers from the interpreter meanwhile")
        self._remember(sig, pending, None)
        out = _interpret(pending, vals) if answer else MISS
        if out is MISS:
            self._finish(sig, pending)
        return out

    def _meanwhile(self, pending, a, args, kwargs):
        """A call of a signature whose kernel is still compiling, answered by the interpreter
        (MISS: wait for the kernel instead: a loop in it is too long to interpret, or the
        interpreter would not compute the kernel's bits, `_same_bits`). The program traced by
        the first call serves, unless Python control flow read traced values there: then
        this call is traced anew (its path may differ; its bits are checked by waiting)."""
        *_, guarded, exact = pending.program
        if self._same_bits() and (guarded or not exact):
            return MISS
        if guarded:
            return evaluate(self.f, *args, **kwargs)
        return _interpret(pending, a.dyn_vals)

    def _same_bits(self):
        """Whether calls must have the kernel's bits (fg.config.jit_same_bits): then only a
        program whose equations are all exact (ir.Primitive.exact) is interpreted while its
        kernel compiles."""
        return self.same_bits if self.same_bits is not None else config.jit_same_bits

    def _finish(self, sig, pending):
        """The entry a background compile made for sig, waited for, in pending's place."""
        entry = pending.join()
        key = pending.key if entry.fast is not None else None
        if self._entries.get(sig) is pending:
            self._entries.pop(sig)
        self._remember(sig, entry, key)
        return entry

    def _entry(self, prog, out_tree, n_out, guards):
        """The kernel of a traced program (its first n_out results f's, then its guards')."""
        from ..backend.compile import compile_program
        return Entry(compile_program(prog, self.parallel, guard_exits(n_out, guards)), out_tree,
                     prog.in_avals, prog.out_avals)

    def _compile(self, a):
        """(the entry for a's signature, the results of this call)."""
        prog, consts, out_tree, n_out, guards = self._trace(a)
        entry = self._entry(prog, out_tree, n_out, guards)
        out = _first_run(entry, a.dyn_vals, self.f)     # Numba compiles on the first call
        return _with_paths(entry, n_out, guards), tree_unflatten(out_tree, out[:n_out])

    def _compile_shipped(self, sig, a):
        """(the entry, the results of this call) for a signature whose program was unpickled."""
        prog, out_tree = self._shipped.pop(sig)
        getattr(self, "_shipped_blobs", {}).pop(sig, None)
        entry = self._entry(prog, out_tree, len(prog.outs), [])
        out = _first_run(entry, a.dyn_vals, self.f)
        return entry, tree_unflatten(out_tree, out)

    def _guarded(self, paths, a, tried=False):
        """A call of a signature whose control flow read traced values: the first compiled
        path whose guards hold (tried: none did), else this call traced, compiled and kept
        as another path (past fg.config.jit_max_paths: interpreted, with a warning once)."""
        if not tried:
            hit = paths.run(a.dyn_vals)
            if hit is not MISS:
                return hit
        prog, consts, out_tree, n_out, guards = self._trace(a)
        if len(paths.paths) >= config.jit_max_paths:
            if not paths.warned:
                paths.warned = True
                warn_at(paths.changed(guards), _too_many_paths(self.f))
            out = eval_program(prog, *consts, *a.dyn_vals)[:n_out]
            return tree_unflatten(out_tree, [to_numpy(o) for o in out])
        entry = self._entry(prog, out_tree, n_out, guards)
        out = _first_run(entry, a.dyn_vals, self.f)
        paths.add(entry, n_out, guards)
        return tree_unflatten(out_tree, out[:n_out])


def _interpret(pending, vals):
    """The results of the program pending's first call traced, run by the interpreter on vals
    (MISS where a loop in it is too long to interpret while the kernel compiles)."""
    prog, consts, out_tree, n_out, *_ = pending.program
    out = interpret_first(prog, [*consts, *vals], pending)
    if out is None:
        return MISS
    return tree_unflatten(out_tree, [to_numpy(o) for o in out[:n_out]])


def _too_many_paths(f):
    return (f"fg.jit: {getattr(f, '__name__', 'the function')} has taken "
            f"{config.jit_max_paths} different paths through Python control flow on traced "
            "values (`if`/`while`/int()/float() on them; this line decided differently this "
            "time). Each path is a kernel of its own; calls that take none of the compiled "
            "paths now run interpreted (correct, slower). Put the decision into the program "
            "instead: fg.cond / fg.switch for an `if`, fg.while_loop or fg.fori_loop for a "
            "loop whose trip count depends on the values, fnp.where for an elementwise choice, "
            "fnp.take(table, idx, axis=0) for a NumPy array indexed with traced integers (or "
            "raise the limit with fg.config.jit_max_paths, FUNCGRAD_JIT_MAX_PATHS).")


def _check_sizes(prog):
    """Refuse, before compiling, a program that would allocate more than this machine's
    memory: a kernel would stop with Numba's bare 'Allocation failed' instead."""
    for e in prog.eqns:
        trips, _, kept = e.prim.stored(e.params) if e.prim.stored else (None, None, ())
        if trips is not None:
            err = loop_memory_error(trips, [a.aval for a in kept])
            if err is not None:
                add_location(err, e.src, "the loop")
                raise err
        for v in e.outputs:
            err = array_memory_error(v.aval, e.prim.name, e.src)
            if err is not None:
                raise err
        for sub in sub_programs(e.params):
            _check_sizes(sub)


def _with_paths(entry, n_out, guards):
    """What a signature keeps: its entry, or for a function whose control flow read traced
    values (guards) the paths, this the first."""
    if not guards:
        return entry
    paths = Paths()
    paths.add(entry, n_out, guards)
    return paths


def _first_run(entry, vals, f, precompile=False):
    """Run a new entry once (precompile: only have Numba compile it for vals' types); a Numba
    compilation failure becomes an error that names the equation and the user's line it came
    from (the generated line's nearest comment)."""
    try:
        return entry.precompile(vals, elsewhere=True) if precompile else entry.run(vals)
    except Exception as exc:
        err = _numba_error(entry, exc, f)
        if err is exc:
            raise
        raise err from None


def _numba_error(entry, exc, f):
    """exc, or for a Numba compilation failure funcgrad's error saying where it came from."""
    from numba.core.errors import NumbaError
    if not isinstance(exc, NumbaError):
        return exc
    lines = entry.compiled.source.splitlines()
    message = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))          # Numba colours its text
    hit = [int(n) - 1 for n in re.findall(r"funcgrad-kernel-[0-9a-f]+>?\"?, line (\d+)", message)]
    hit += [i for name in re.findall(r"name '(\w+)'", message)
            for i, ln in enumerate(lines) if re.search(rf"\b{name}\b", ln)][:1]
    where_ = ""
    if hit:
        k = min(hit[-1], len(lines) - 1)
        comment = next((ln.strip() for ln in reversed(lines[:k + 1])
                        if ln.strip().startswith("#")), "")
        where_ = f" The failing generated line is {lines[k].strip()!r}, from {comment!r}."
    return FuncgradError(
        f"Numba could not compile the program of {getattr(f, '__name__', f)}.{where_} "
        "This is a funcgrad bug: please report it with the source from "
        "fg.jit(f).lower(*args).source. Meanwhile `with fg.disable_jit():` runs the same "
        f"program in the interpreter.\nNumba said: {message[:2000]}")


def jit(f=None, *, static_argnums=(), parallel=False, background=None, same_bits=None):
    """Compile f with Numba, once per signature (shapes, dtypes, pytree structure, statics).

        >>> loss = lambda w: fnp.sum(fnp.sin(w) ** 2)
        >>> fast_grad = fg.jit(fg.grad(loss))
        >>> fast_grad(np.ones(3))     # first call traces and compiles; later calls are native

    Python floats are traced as 0-d arrays; Python ints and bools, which usually steer control
    flow (loop counts, flags), are static: each new value compiles anew. `static_argnums` makes
    any argument static. `parallel=True` lets Numba run large loops on all
    cores.

    Every call gives the kernel's results, bit for bit, from the first: the kernel compiles
    in a worker process, and until it is ready the interpreter answers only programs it
    computes bit for bit as the kernel does (arithmetic, comparisons, indexing); a first call
    of any other program waits for its kernel (saying so on stderr after 2 s).
    `same_bits=False` (fg.config.jit_same_bits) lets the interpreter answer every call
    meanwhile (last bits may then differ until the kernel is ready); `background=False`
    (fg.config.jit_background) compiles on the first call.
    """
    if f is None:
        return functools.partial(jit, static_argnums=static_argnums, parallel=parallel,
                                 background=background, same_bits=same_bits)
    return JitFunction(f, static_argnums, parallel, background, same_bits)


def _compile_loop(prim, args, params):
    """Run one loop equation met while interpreting as a compiled kernel (tiering's long-loop
    hook); None when jit is disabled in this thread or the loop cannot be compiled. In a first
    call whose whole kernel is being compiled (background.py), wait for that instead."""
    if _disabled or nan_checks.active():     # (fg.debug_nans: the interpreter checks it)
        return None
    if in_first_call():          # the whole kernel is compiling: use it once it is ready
        if (prim.stored and prim.stored(params)[0] is not None) or kernel_ready():
            raise UseKernel          # (a scan: its trip count is known, interpreting it is long)
        return LATER
    try:
        from ..backend.compile import compile_program
        arrays = [np.asarray(a) for a in args]
        prog, _ = trace_flat(lambda *a: list(prim.bind(*a, **params)),
                             [aval_of(a) for a in arrays])
        kernel = compile_program(prepare(prog))
        outs = kernel(*[a[()] if a.ndim == 0 else a for a in arrays])
    except Exception:        # compiling is only an optimisation here: keep interpreting
        return None
    return tuple(np.asarray(o) for o in outs)


set_loop_compiler(_compile_loop)
