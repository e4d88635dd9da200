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
import os
import re
import threading
import types

import numpy as np

from .._errors import (FuncgradError, KernelInterrupted, add_location, array_memory_error,
                       loop_memory_error, warn_at)
from ..interpreter import eval_program
from ..ir import Program, Traced, aval_of, sub_programs
from ..tiering import LATER, set_loop_compiler, value_key
from ..tracer import trace_flat
from ..backend.scalarize import scalarize
from ..transforms.simplify import simplify
from ..tree_util import tree_flatten, tree_unflatten
from .background import (Pending, UseKernel, allowed, in_first_call, interpret_first,
                         kernel_ready)
from .calls import Args, VjpPlan, evaluate, to_numpy, trace_call

def prepare(prog):
    """The program as it is compiled: simplified, small arrays in loops made scalars."""
    prog = simplify(prog)
    small = scalarize(prog)
    return prog if small is prog else simplify(small)


__all__ = ["jit", "disable_jit", "JitFunction", "VjpJit"]

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


@contextlib.contextmanager
def disable_jit(disable=True):
    """Run jitted functions with the reference interpreter inside this block, in this thread
    (for debugging; other threads keep running compiled).

        >>> with fg.disable_jit():
        ...     fg.jit(f)(x)          # NumPy, equation by equation
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


class _Entry:
    """One compiled signature: kernel, how to pass arguments, how to rebuild outputs."""

    __slots__ = ("compiled", "out_tree", "scalar_in", "out_types", "fast", "hot", "fast_keys")

    def __init__(self, compiled, out_tree, in_avals, out_avals):
        self.compiled, self.out_tree = compiled, out_tree
        self.hot, self.fast_keys = True, []     # used since the last eviction sweep; _fast keys
        self.scalar_in = [a.ndim == 0 for a in in_avals]
        self.out_types = [a.dtype.type if a.ndim == 0 else None for a in out_avals]
        self.fast = self._fast_call()

    def run(self, vals):
        args = [_scalar(v) if s else v for v, s in zip(vals, self.scalar_in)]
        res = self.compiled(*args)
        return owned([t(r) if t is not None else r for r, t in zip(res, self.out_types)],
                     self.compiled.fresh_outs, args, self.compiled.consts)

    def _fast_call(self):
        """The call used when every argument is an array: as little Python as possible."""
        fn, consts, tree = self.compiled.fn, tuple(self.compiled.consts), self.out_tree
        fresh = self.compiled.fresh_outs
        simple = not any(self.scalar_in) and not any(t is not None for t in self.out_types)
        if tree is None:
            return None
        if any(self.scalar_in):        # 0-d arguments go in as scalars, as on the first call
            run = self.run
            return lambda args: tree_unflatten(tree, run(args))
        if simple and tree.node_type is None and len(self.out_types) == 1:
            if fresh[0]:                   # allocated by the kernel: nothing to check
                return lambda args: fn(*args, *consts)[0]

            return lambda args: _own_one(fn(*args, *consts)[0], (*args, *consts))
        types = self.out_types
        if tree.node_type is None and len(types) == 1 and types[0] is not None:
            t0 = types[0]          # one scalar result (a loss, a derivative of a scalar)
            return lambda args: t0(fn(*args, *consts)[0])
        return lambda args: tree_unflatten(tree, owned([t(r) if t is not None else r for r, t in
                                                        zip(fn(*args, *consts), types)],
                                                       fresh, args, consts))


def _scalar(v):
    """A 0-d argument as the scalar the kernel takes."""
    t = type(v)
    if t is np.ndarray:
        return v[()]
    return v if t in _PASS_SCALARS else np.asarray(v)[()]


def _own_one(r, sources):
    for s in sources:
        if r is s or type(s) is np.ndarray and np.may_share_memory(r, s):
            return r.copy()
    return r if r.flags.writeable else r.copy()


def owned(results, fresh, args, consts):
    """Compiled results as fresh arrays the caller owns: a result the kernel may not have
    allocated itself (fresh[i] False: an input returned as it is, a reshape's view, a loop's
    unchanged carry, a constant, the same value twice) is copied when it shares memory with
    an argument, a captured constant (the same object on every call) or another result."""
    if all(fresh):
        return results
    seen = [s for s in (*args, *consts) if type(s) is np.ndarray]
    seen += [r for r, f in zip(results, fresh) if f and type(r) is np.ndarray]
    for i, r in enumerate(results):
        if not fresh[i] and type(r) is np.ndarray and r.ndim:
            r = results[i] = _own_one(r, seen)
            seen.append(r)
    return results


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


# Arguments that Numba accepts as they are: arrays, and scalars of these types
_PASS_SCALARS = frozenset([float, int, bool, np.float64, np.float32, np.int64, np.int32, np.bool_])


def _fast_key(args):
    """The dispatch key of arguments that can go straight to a compiled kernel, else None."""
    if len(args) == 1:
        x = args[0]
        t = type(x)
        return (x.shape, x.dtype) if t is np.ndarray else t if t in _PASS_SCALARS else None
    key = []
    for x in args:
        t = type(x)
        if t is np.ndarray:
            key.append((x.shape, x.dtype))
        elif t in _PASS_SCALARS:
            key.append(t)
        else:
            return None
    return tuple(key)


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


MAX_SIGNATURES = int(os.environ.get("FUNCGRAD_JIT_MAX_SIGNATURES", "32"))
# The first call of a signature answers from the interpreter while its kernel compiles in a
# thread (background.py); FUNCGRAD_JIT_BACKGROUND=0 compiles on the first call instead
BACKGROUND = os.environ.get("FUNCGRAD_JIT_BACKGROUND", "1") != "0"


class JitFunction:
    """A function compiled per signature; see `jit`."""

    def __init__(self, f, static_argnums=(), parallel=False, background=None):
        self.f = f
        self.static_argnums = _check_static_argnums(f, static_argnums)
        self.parallel = parallel
        # first call of a signature: answered by the interpreter while its kernel compiles in
        # a thread (background.py); None: FUNCGRAD_JIT_BACKGROUND (default on)
        self.background = background
        self._entries: dict = {}
        self._fast: dict = {}
        functools.update_wrapper(self, f, updated=())

    def __get__(self, obj, objtype=None):
        """@fg.jit on a method: the instance is the first argument (static, by value: a changed
        attribute recompiles; make the class a pytree to trace its arrays instead)."""
        return self if obj is None else types.MethodType(self, obj)

    def _signature(self, a: Args):
        statics = tuple(s[1] for s in a.slots if not isinstance(s, int))
        if statics:            # by value, never by identity: a mutated static recompiles
            statics = value_key(statics)
        # which leaves are traced: f(array, 1) and f(1, array) have the same avals and statics
        layout = tuple(isinstance(s, int) for s in a.slots)
        return (tuple(a.trees), layout, tuple(a.avals()), statics)

    def lower(self, *args, **kwargs):
        """Trace and simplify for these arguments; `.source` is the generated code."""
        a = Args(self.f, args, kwargs, static_argnums=self.static_argnums,
                  trace_numbers=(float, complex))
        prog, consts, out_tree = trace_call(self.f, a)
        return Lowered(prepare(prog), out_tree)

    def __call__(self, *args, **kwargs):
        if not kwargs:
            hit = self._fast.get(_fast_key(args))
            if hit is not None and not (_Disabled.count[0] and _disabled.on):
                hit.hot = True
                try:
                    out = hit.fast(args)
                except KernelInterrupted:       # Ctrl-C inside the kernel (see vecmath)
                    raise KeyboardInterrupt from None
                if out is not _MISS:
                    return out
                a = Args(self.f, args, kwargs, trace_numbers=(float, complex))
                return self._guarded(hit, a, tried=True)
        if _disabled:
            return evaluate(self.f, *args, **kwargs)
        if any(isinstance(x, Traced) for x in tree_flatten((args, kwargs))[0]):
            return self.f(*args, **kwargs)               # inside another transform: inline
        a = Args(self.f, args, kwargs, static_argnums=self.static_argnums,
                  trace_numbers=(float, complex))
        sig = self._signature(a)
        entry = self._entries.get(sig)
        if entry is None:
            key = _fast_key(args)
            if (key is None or kwargs or self.static_argnums or len(a.dyn_vals) != len(args)
                    or a.converted):
                key = None
            if (self.background if self.background is not None else BACKGROUND) and allowed():
                first = self._start(sig, a, key)
                if first is not _MISS:
                    return first
                entry = self._entries[sig]
            else:
                entry, first = self._compile(a)
                self._remember(sig, entry, key if entry.fast is not None else None)
                return first
        if isinstance(entry, Pending):
            entry = self._finish(sig, entry)
        entry.hot = True
        if isinstance(entry, _Paths):
            return self._guarded(entry, a)
        return tree_unflatten(entry.out_tree, entry.run(a.dyn_vals))

    def _remember(self, sig, entry, key):
        """Keep a new compiled signature; past MAX_SIGNATURES one not used lately goes (CLOCK,
        an approximation of least recently used: each call marks its entry, a sweep gives
        marked entries a second chance). Its kernel is freed unless another function shares
        it; calling that signature again compiles it again (from the disk cache)."""
        while len(self._entries) >= MAX_SIGNATURES:
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
        results of this call from the interpreter meanwhile (_MISS: it holds a loop too long
        to interpret; the signature's entry is then the kernel, waited for)."""
        prog, consts, out_tree, n_out, guards = self._trace(a)
        vals = list(a.dyn_vals)

        def build():
            from ..backend.compile import compile_program
            entry = _Entry(compile_program(prog, self.parallel, _exits(n_out, guards)),
                           out_tree, prog.in_avals, prog.out_avals)
            try:
                entry.compiled.precompile([_scalar(v) if s else v
                                           for v, s in zip(vals, entry.scalar_in)])
            except Exception as exc:
                err = _numba_error(entry, exc, self.f)
                if err is exc:
                    raise
                raise err from None
            if not guards:
                return entry
            paths = _Paths()
            paths.add(entry, n_out, guards)
            return paths
        pending = Pending(build, key)
        self._remember(sig, pending, None)
        out = interpret_first(prog, [*consts, *vals], pending)
        if out is None:
            self._finish(sig, pending)
            return _MISS
        return tree_unflatten(out_tree, [to_numpy(o) for o in out[:n_out]])

    def _finish(self, sig, pending):
        """The entry a background compile made for sig, waited for, in pending's place."""
        entry = pending.join()
        key = pending.key if entry.fast is not None else None
        if self._entries.get(sig) is pending:
            self._entries.pop(sig)
        self._remember(sig, entry, key)
        return entry

    def _compile(self, a):
        """(the entry for a's signature, the results of this call)."""
        from ..backend.compile import compile_program
        prog, consts, out_tree, n_out, guards = self._trace(a)
        entry = _Entry(compile_program(prog, self.parallel, _exits(n_out, guards)), out_tree,
                       prog.in_avals, prog.out_avals)
        out = _first_run(entry, a.dyn_vals, self.f)     # Numba compiles on the first call
        if not guards:
            return entry, tree_unflatten(out_tree, out)
        paths = _Paths()
        paths.add(entry, n_out, guards)
        return paths, tree_unflatten(out_tree, out[:n_out])

    def _guarded(self, paths, a, tried=False):
        """A call of a signature whose control flow read traced values: the first compiled
        path whose guards hold (tried: none did), else this call traced, compiled and kept
        as another path (past MAX_PATHS: interpreted, with a warning once)."""
        if not tried:
            hit = paths.run(a.dyn_vals)
            if hit is not _MISS:
                return hit
        from ..backend.compile import compile_program
        prog, consts, out_tree, n_out, guards = self._trace(a)
        if len(paths.paths) >= MAX_PATHS:
            if not paths.warned:
                paths.warned = True
                warn_at(paths.changed(guards), _too_many_paths(self.f))
            out = eval_program(prog, *consts, *a.dyn_vals)[:n_out]
            return tree_unflatten(out_tree, [to_numpy(o) for o in out])
        entry = _Entry(compile_program(prog, self.parallel, _exits(n_out, guards)), out_tree,
                       prog.in_avals, prog.out_avals)
        out = _first_run(entry, a.dyn_vals, self.f)
        paths.add(entry, n_out, guards)
        return tree_unflatten(out_tree, out[:n_out])


# Compiled paths kept per signature of a function whose Python control flow reads traced values
MAX_PATHS = int(os.environ.get("FUNCGRAD_JIT_MAX_PATHS", "8"))


def _too_many_paths(f):
    return (f"fg.jit: {getattr(f, '__name__', 'the function')} has taken {MAX_PATHS} different "
            "paths through Python control flow on traced values (`if`/`while`/int()/float() "
            "on them; this line decided differently this time). Each path is a kernel of its "
            "own; calls that take none of the compiled paths now run interpreted (correct, "
            "slower). Put the decision into the program instead: fg.cond / fg.switch for an "
            "`if`, fg.while_loop or fg.fori_loop for a loop whose trip count depends on the "
            "values, fnp.where for an elementwise choice (or raise the limit with "
            "FUNCGRAD_JIT_MAX_PATHS).")


def _exits(first, guards):
    """The guards a kernel checks itself, returning early when one fails: the truth values
    (`if`, `while`, and/or/not), as (output index, value) from output `first` on."""
    return tuple((first + k, bool(value)) for k, (_, value, kind, _) in enumerate(guards)
                 if kind == "bool")


def _holds(got, value, kind):
    if kind == "bool":
        return bool(got) == bool(value)
    return np.array_equal(got, value)


def _all_hold(got, expected):
    """Whether the guards' values `got` are the (value, kind) pairs a path was traced with."""
    return all(_holds(r, v, kind) for r, (v, kind) in zip(got, expected))


_MISS = object()        # no compiled path's guards held
# what a kernel of a path not taken may raise where the right path would not
_STALE = (FuncgradError, ArithmeticError, IndexError, ValueError)


def _fast_path(entry, n_out, expected):
    """args -> f's outputs if the guards hold, else _MISS: the kernel called directly, the
    decisions compared as one tuple of bools (the common case)."""
    if any(entry.scalar_in) or not all(kind == "bool" for _, kind in expected):
        def general(args):
            try:
                res = entry.run(args)
            except _STALE:
                return _MISS
            if _all_hold(res[n_out:], expected):
                return tree_unflatten(entry.out_tree, res[:n_out])
            return _MISS
        return general
    fn, consts = entry.compiled.fn, tuple(entry.compiled.consts)
    want = tuple(bool(v) for v, _ in expected)
    types, fresh, tree = entry.out_types[:n_out], entry.compiled.fresh_outs[:n_out], entry.out_tree
    one = tree.node_type is None and n_out == 1     # one result: a scalar (t0) or an array
    t0, single = types[0] if n_out else None, len(want) == 1
    w0 = want[0] if single else None

    def run(args):
        try:
            res = fn(*args, *consts)
        except _STALE:
            return _MISS
        if (bool(res[1]) != w0) if single and n_out == 1 else tuple(map(bool, res[n_out:])) != want:
            return _MISS
        if one:
            r = res[0]
            return t0(r) if t0 is not None else r if fresh[0] else _own_one(r, (*args, *consts))
        return tree_unflatten(tree, owned([t(r) if t is not None else r
                                           for r, t in zip(res[:n_out], types)],
                                          fresh, args, consts))
    return run


class _Paths:
    """The compiled paths of one signature: (entry, number of f's outputs, guards, their user
    lines, a fast runner). Each kernel returns its guards' values after f's outputs; a call
    runs the most recently useful path first and keeps the first whose guards all hold."""

    __slots__ = ("paths", "hot", "fast_keys", "warned")

    def __init__(self):
        self.paths, self.hot, self.fast_keys, self.warned = [], True, [], False

    def add(self, entry, n_out, guards):
        expected = [(value, kind) for _, value, kind, _ in guards]
        self.paths.insert(0, (entry, n_out, expected, [src for *_, src in guards],
                              _fast_path(entry, n_out, expected)))

    def run(self, vals):
        """f's outputs from the first path whose guards hold (tried most recently useful
        first), else _MISS. vals: the traced leaves (arrays, and plain scalars where the
        kernel takes them), as the dispatch fast path passes them too."""
        for k, path in enumerate(self.paths):
            out = path[4](vals)
            if out is not _MISS:
                if k:
                    self.paths.insert(0, self.paths.pop(k))
                return out
        return _MISS

    fast = run

    def changed(self, guards):
        """The user line of the first decision that differs from the latest path's."""
        _, _, expected, srcs, _ = self.paths[0]
        for (_, value, kind, src), (v, _k) in zip(guards, expected):
            if not _holds(value, v, kind):
                return src
        return guards[-1][3] if len(guards) > len(expected) else srcs[-1] if srcs else None


def _check_sizes(prog):
    """Refuse, before compiling, a program that would allocate more than this machine's
    memory: a kernel would stop with Numba's bare 'Allocation failed' instead."""
    for e in prog.eqns:
        if e.prim.name == "scan":
            err = loop_memory_error(e.params["length"],
                                    e.params["body"].out_avals[e.params["n_carry"]:])
            if err is not None:
                add_location(err, e.src, "the loop")
                raise err
        for v in e.outputs:
            err = array_memory_error(v.aval, e.prim.name, e.src)
            if err is not None:
                raise err
        for sub in sub_programs(e.params):
            _check_sizes(sub)


def _first_run(entry, vals, f):
    """Run a new entry once; a Numba compilation failure becomes an error that names the
    equation and the user's line it came from (the generated line's nearest comment)."""
    try:
        return entry.run(vals)
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
        comment = next((ln.strip() for ln in reversed(lines[:k + 1]) if ln.strip().startswith("#")), "")
        where_ = f" The failing generated line is {lines[k].strip()!r}, from {comment!r}."
    return FuncgradError(
        f"Numba could not compile the program of {getattr(f, '__name__', f)}.{where_} "
        "This is a funcgrad bug: please report it with the source from "
        "fg.jit(f).lower(*args).source. Meanwhile `with fg.disable_jit():` runs the same "
        f"program in the interpreter.\nNumba said: {message[:2000]}")


def jit(f=None, *, static_argnums=(), parallel=False, background=None):
    """Compile f with Numba, once per signature (shapes, dtypes, pytree structure, statics).

        >>> fast_grad = fg.jit(fg.grad(loss))
        >>> fast_grad(x)              # first call traces and compiles; later calls are native

    Python floats are traced as 0-d arrays; Python ints and bools, which usually steer control
    flow (loop counts, flags), are static: each new value compiles anew. `static_argnums` makes
    any argument static. `parallel=True` lets Numba run large loops on all
    cores.
    """
    if f is None:
        return functools.partial(jit, static_argnums=static_argnums, parallel=parallel,
                                 background=background)
    return JitFunction(f, static_argnums, parallel, background)


class VjpJit:
    """fg.vjp compiled: per signature, the forward and backward programs become two kernels
    (used by tiering once fg.vjp(f, ...) is hot). Where f's Python control flow reads traced
    values, one plan per path, as in JitFunction: the forward kernel returns the guards."""

    def __init__(self, f, has_aux=False):
        self.f, self.has_aux, self._plans = f, has_aux, {}

    def __call__(self, *primals):
        from ..backend.compile import compile_program
        a = Args(self.f, primals, {}, diff_argnums=tuple(range(len(primals))))
        sig = (tuple(a.trees), tuple(a.avals()))
        paths = self._plans.setdefault(sig, [])
        for k, (plan, fwd, bwd, expected) in enumerate(paths):
            try:
                res = fwd.run(list(plan.consts) + list(a.dyn_vals))
            except _STALE:
                continue
            if _all_hold(plan.guard_values(res), expected):
                if k:
                    paths.insert(0, paths.pop(k))
                return plan.finish(a, res, bwd.run)
        guards = []
        plan = VjpPlan(self.f, primals, self.has_aux, guards=guards)
        if plan.consts:
            raise TypeError("vjp of a function that closes over traced values is not compiled")
        if len(paths) >= MAX_PATHS:          # (tiering then interprets this signature)
            raise FuncgradError(_too_many_paths(self.f))
        exits = _exits(plan.n_out - plan.n_guards, guards)
        fwd, bwd = (_Entry(compile_program(prepare(p), exits=x), None, p.in_avals, p.out_avals)
                    for p, x in ((plan.fwd, exits), (plan.bwd, ())))
        paths.insert(0, (plan, fwd, bwd, [(value, kind) for _, value, kind, _ in guards]))
        return plan.run(a, fwd.run, bwd.run)


def _compile_loop(prim, args, params):
    """Run one loop equation met while interpreting as a compiled kernel (tiering's long-loop
    hook); None when jit is disabled in this thread or the loop cannot be compiled. In a first
    call whose whole kernel is being compiled (background.py), wait for that instead."""
    if _disabled:
        return None
    if in_first_call():          # the whole kernel is compiling: use it once it is ready
        if prim.name == "scan" or kernel_ready():
            raise UseKernel          # (a scan's length is known: interpreting it is long)
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
