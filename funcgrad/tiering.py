"""Tiered execution: fg.grad, value_and_grad, vjp, jvp, vmap, jacfwd, jacrev and hessian start in
the interpreter and compile once hot, and compiling never changes what a call returns.

A fresh `fg.grad(f)(x)` (a new lambda in a notebook cell, a closure built inside a loop) runs
the derived program in the NumPy interpreter: no compile wait. Counting is per function object,
so `fg.grad(loss)(w)` inside a training loop becomes hot even though each iteration builds a new
grad wrapper, while 1,000 fresh closures never compile.

The interpreter runs the user's Python on every call; a compiled kernel does not. So a
(function, signature) pair is compiled only when that makes no difference the user could see:

* **Guards.** Everything f reads from outside its arguments is its *state*: its closure cells,
  the globals its code (nested lambdas and comprehensions included) names, attributes of user
  modules it names, the defaults of its parameters, the attributes of a callable object or a
  bound method's instance, a functools.partial's arguments, and recursively the contents of
  these (dicts of any kind, lists, tuples, sets, objects' attributes, helper functions' own
  state) a few levels deep. Numbers and strings count by value, arrays by identity *and
  content* (a digest of their bytes), so rebinding *or mutating in place* anything f reads is
  seen. The state is compared on every call; when it changed, the compiled forms are dropped
  and f is interpreted (and counted) again. Non-array arguments that are not traced (a config
  object passed as an argument) are part of the signature, by value the same way.
* **Reproducibility.** f is compiled for a signature only after `threshold` interpreted calls
  with the same state produced identical programs (same equations and constants). If two calls
  with the same state trace to different programs (f reads a clock, a random generator object,
  anything the guards cannot see), or if tracing f advanced NumPy's or Python's global random
  state (a dropout mask drawn with np.random inside the loss), f stays interpreted for good:
  each call then draws, as the user wrote it.

What is not covered: Python side effects that leave no trace in f's state (print, writing a
file) happen only while f is interpreted, as under fg.jit; state deeper than the walk goes
(`_DEPTH`) or larger than `_BUDGET` values means f is never compiled (a warning says so);
objects of library types (NumPy generators, Numba or SciPy objects) count by identity.
`policy.explain(f)` tells why a function is still interpreted.

Tiering sits below the public API and the loop primitives: the entry points pass it the
interpreted and compiled forms (`tiered`), and a loop primitive whose NumPy evaluation would run
long asks `compile_loop`, which api/jit.py fills in when it is imported.
"""
from __future__ import annotations

import functools
import os
import random
import sys
import sysconfig
import threading
import types
import warnings
import weakref

import numpy as np

from . import ir
from .ir import Program, Traced, Var
from .tree_util import tree_flatten

__all__ = ["policy", "TieringPolicy", "state_key", "value_key"]


class TieringPolicy:
    """When interpreted transforms get compiled. Environment: FUNCGRAD_JIT_THRESHOLD (0 turns
    tiering off), FUNCGRAD_JIT_BACKGROUND=1 (compile in a background thread).

    Where the counts and compiled forms live: on the function object itself (a plain function
    or functools.partial: an attribute, so they are shared by every fg.grad(f) wrapper and die
    with f, compiled kernels included); for other callables (bound methods, callable
    objects) in the wrapper fg.grad made, so create that wrapper once and reuse it. Nothing
    is kept in a global table: dropping f frees it and everything it captured."""

    def __init__(self):
        self.threshold = int(os.environ.get("FUNCGRAD_JIT_THRESHOLD", "10"))
        self.background = os.environ.get("FUNCGRAD_JIT_BACKGROUND", "") not in ("", "0")
        self.generation = 0

    def reset(self):
        """Forget all call counts and tiered compilations."""
        self.generation += 1

    def tier(self, f, kind, local=None):
        """The _Tier of (f, kind), or None when f cannot be tracked (tiering off). `local`:
        the calling wrapper's own _Tiers, used for callables that cannot carry them."""
        if self.threshold <= 0:
            return None
        try:
            hash(kind)                      # (argnums given as a list: not tracked)
        except TypeError:
            return None
        tiers = self._tiers_of(f, local)
        if tiers is None:
            return None
        t = tiers.get(kind)
        if t is None:
            t = tiers[kind] = _Tier(f)
        return t

    def _tiers_of(self, f, local=None):
        if type(f) in _CARRIERS:
            tiers = f.__dict__.get(_ATTR)
            if tiers is None or tiers.owner() is not f or tiers.generation != self.generation:
                # (functools.wraps copies __dict__: another function's _Tiers are not ours)
                tiers = _Tiers(f, self.generation)
                f.__dict__[_ATTR] = tiers
            return tiers
        if local is not None and local.generation != self.generation:
            local.clear()
            local.generation = self.generation
        return local

    def tiers(self, f):
        """f's own {kind: _Tier} ({} when it has none, or cannot carry them)."""
        tiers = f.__dict__.get(_ATTR) if type(f) in _CARRIERS else None
        if tiers is None or tiers.owner() is not f or tiers.generation != self.generation:
            return {}
        return tiers

    def explain(self, f):
        """Why f's transforms run interpreted or compiled: {kind: reason}."""
        return {kind: t.why() for kind, t in self.tiers(f).items()}


_ATTR = "__funcgrad_tiers__"
_CARRIERS = frozenset({types.FunctionType, functools.partial})


class _Tiers(dict):
    """kind -> _Tier for one function; kept in the function's __dict__. Pickled (cloudpickle
    copies a function's __dict__) as an empty table: compiled forms do not travel."""

    def __init__(self, f=None, generation=0):
        super().__init__()
        self.owner = weakref.ref(f) if f is not None else _dead
        self.generation = generation

    def __reduce__(self):
        return (_Tiers, ())

    def __deepcopy__(self, memo):
        return _Tiers()


def _dead():
    return None


policy = TieringPolicy()


# ---- the state a function reads -------------------------------------------------------------

_DEPTH = 6           # how many containers/attributes/helpers deep the walk goes
_BUDGET = 5000       # values visited per call at most
_SMALL_ARRAY = 4096  # bytes: smaller arrays count by their bytes, larger by a digest


class Unguardable(Exception):
    """f reads more state than the guards watch."""


def _library_roots():
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots |= {os.path.join(here, "funcgrad"), os.path.join(here, "transforms")}
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots)


_LIB_ROOTS = _library_roots()
_LIB_PACKAGES = frozenset({"funcgrad", "numpy", "numba", "scipy", "builtins"})
@functools.lru_cache(maxsize=4096)
def _library_file(filename):
    """Code in the standard library, site-packages or funcgrad itself (not the user's: its
    globals are not watched). Broader than _errors' notion, which only skips funcgrad/NumPy."""
    return filename.startswith("<frozen") or os.path.realpath(filename).startswith(_LIB_ROOTS)


@functools.lru_cache(maxsize=4096)
def _library_module(name):
    top = (name or "builtins").partition(".")[0]
    file = getattr(sys.modules.get(top), "__file__", None)
    return (top in _LIB_PACKAGES or top in sys.stdlib_module_names or file is None
            or _library_file(file))


_names_cache: dict = {}


def _global_names(code):
    """Names that `code` and the code nested in it (lambdas, comprehensions) look up."""
    names = _names_cache.get(code)
    if names is None:
        found, todo = set(), [code]
        while todo:
            c = todo.pop()
            found.update(c.co_names)
            todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
        names = tuple(sorted(found))
        if len(_names_cache) > 10_000:
            _names_cache.clear()
        _names_cache[code] = names
    return names


def _array_key(a, identity=True):
    if a.dtype.hasobject:
        content = tuple(id(x) for x in a.flat)
    elif a.nbytes <= _SMALL_ARRAY:
        content = a.tobytes()
    else:
        from .backend.digest import array_digest
        content = array_digest(a)
    return (np.ndarray, id(a) if identity else None, a.shape, a.dtype.str, content)


(_ATOM, _FLOAT, _GENERIC, _ARRAY, _IDENTITY, _TUPLE, _SEQ, _DICT, _SET, _FUNCTION, _METHOD,
 _PARTIAL, _PROGRAM, _VAR, _CLASS, _BUILTIN, _VALUE, _LIBRARY, _OBJECT) = (
    "atom", "float", "generic", "array", "identity", "tuple", "seq", "dict", "set", "function",
    "method", "partial", "program", "var", "class", "builtin", "value", "library", "object")
_ATOMS = (bool, int, str, bytes, type(None), complex, type(Ellipsis), slice, range)
_CATEGORY: dict = {}
_LIBRARY_CODE: dict = {}       # code object -> defined in library code (cleared when large)


def _categorize(t):
    """How _Walker.key treats values of type t (computed once per type)."""
    if t is float:
        cat = _FLOAT
    elif t in _ATOMS:
        cat = _ATOM
    elif issubclass(t, np.generic):
        cat = _GENERIC
    elif issubclass(t, np.ndarray):
        cat = _ARRAY
    elif issubclass(t, (types.ModuleType, Traced)):
        cat = _IDENTITY
    elif t is tuple:
        cat = _TUPLE
    elif issubclass(t, (tuple, list)):
        cat = _SEQ
    elif issubclass(t, dict):
        cat = _DICT
    elif issubclass(t, (set, frozenset)):
        cat = _SET
    elif t is types.FunctionType:
        cat = _FUNCTION
    elif t is types.MethodType:
        cat = _METHOD
    elif issubclass(t, functools.partial):
        cat = _PARTIAL
    elif issubclass(t, Program):
        cat = _PROGRAM
    elif issubclass(t, Var):
        cat = _VAR
    elif issubclass(t, type):
        cat = _CLASS
    elif t in (types.BuiltinFunctionType, types.MethodWrapperType):
        cat = _BUILTIN
    elif (t.__module__ or "builtins").partition(".")[0] in _LIB_PACKAGES:
        cat = _VALUE if t.__hash__ is not object.__hash__ and t.__eq__ is not object.__eq__ \
            else _LIBRARY
    else:
        cat = _OBJECT
    if len(_CATEGORY) > 10_000:          # (classes made at run time would pile up)
        _CATEGORY.clear()
    _CATEGORY[t] = cat
    return cat


class _Walker:
    """Builds a hashable, comparable key of a value and everything reachable from it that a
    trace could read (see the module docstring)."""

    def __init__(self, by_value=False):
        self.budget = _BUDGET
        self.seen: dict = {}
        self.var_names: dict = {}
        self.fresh: dict = {}
        # compare funcgrad's own objects by their contents (the specs in a program's params,
        # made anew by each trace), not by identity
        self.by_value = by_value

    def key(self, v, depth=_DEPTH):
        t = type(v)
        cat = _CATEGORY.get(t) or _categorize(t)
        if cat is _ATOM:
            return (t, v)
        if cat is _FLOAT:
            return (t, v if v == v else "nan")
        self.budget -= 1
        if cat is _FUNCTION:
            code = v.__code__
            lib = _LIBRARY_CODE.get(code)
            if lib is None:
                if len(_LIBRARY_CODE) > 100_000:
                    _LIBRARY_CODE.clear()
                lib = _LIBRARY_CODE[code] = _library_file(code.co_filename)
            if lib and not self.by_value:
                # funcgrad's and other libraries' functions are fixed once made; funcgrad's
                # wrappers (grad, vmap, ...) point at the user's function through __wrapped__
                inner = getattr(v, "__wrapped__", None)
                return id(v) if inner is None else (id(v), self.key(inner, depth))
            return self.function(v, depth) if depth > 0 else (t, id(v))
        if cat is _TUPLE or cat is _SEQ or cat is _DICT or cat is _SET:
            self.budget -= len(v)
        if self.budget < 0:
            raise Unguardable(f"it reads more than {_BUDGET} values from outside its arguments")
        if cat is _GENERIC:
            return (t, v.tobytes())
        if cat is _ARRAY:
            return _array_key(v)
        if cat is _IDENTITY or depth <= 0:
            return (t, id(v))
        if cat is _VALUE:                       # an immutable value type of ours (PyTreeDef)
            return (t, v)
        d = depth - 1
        if cat is _TUPLE:                       # immutable, no cycles: compared where repeated
            return (t, tuple([self.key(x, d) for x in v]))
        if cat is _VAR:                         # the same variable of the same program
            return ("var", self.var_names.setdefault(v.id, len(self.var_names)))
        if cat is _PROGRAM:
            return self.program(v)
        hit = self.seen.get(id(v))
        if hit is not None:                     # met before in this walk (cycles end here)
            return ("seen", hit[1])
        self.seen[id(v)] = (v, len(self.seen))
        if cat is _SEQ:
            return (t, tuple([self.key(x, d) for x in v]))
        if cat is _DICT:                        # (string keys as they are: the common case)
            return (t, tuple([(k if type(k) is str else self.key(k, d), self.key(x, d))
                              for k, x in v.items()]))
        if cat is _SET:
            return (t, frozenset(v))
        if cat is _METHOD:
            return (t, self.key(v.__self__, d), self.key(v.__func__, depth))
        if cat is _PARTIAL:
            return (t, self.key(v.func, depth), self.key(v.args, d), self.key(v.keywords, d))
        if cat is _CLASS:
            if _library_module(v.__module__):
                return (t, id(v))
            return (t, id(v), tuple([(k, self.key(x, d)) for k, x in vars(v).items()
                                     if not k.startswith("__")]))
        if cat is _BUILTIN:
            owner = getattr(v, "__self__", None)
            return (t, id(v)) if owner is None or isinstance(owner, types.ModuleType) else (
                t, v.__name__, self.key(owner, d))
        if cat is _LIBRARY:
            if not self.by_value:
                inner = getattr(v, "__wrapped__", None)
                return (t, id(v)) if inner is None else (t, id(v), self.key(inner, depth))
            if hasattr(v, "__trace_key__"):
                return (t, self.key(v.__trace_key__, depth))
            if not (hasattr(v, "__dict__") or hasattr(t, "__slots__")):
                return (t, id(v))
        parts = [t, id(t) if cat is _LIBRARY else self.key(t, d)]   # the class: its methods
        if hasattr(v, "__dict__"):
            parts.append(self.key(vars(v), depth))
        for slot in getattr(t, "__slots__", ()):
            parts.append(self.key(getattr(v, slot, None), d))
        return tuple(parts)

    def function(self, f, depth):
        """A user's function (or, comparing traces, any function): its code, closure cells,
        defaults and, for the user's own code, the globals it names."""
        d = depth - 1
        code = f.__code__
        parts = [id(code)]
        for cell in f.__closure__ or ():
            try:
                parts.append(self.key(cell.cell_contents, d))
            except ValueError:            # an empty cell
                parts.append(None)
        if f.__defaults__:
            parts.append(self.key(f.__defaults__, d))
        if f.__kwdefaults__:
            parts.append(self.key(f.__kwdefaults__, d))
        if _LIBRARY_CODE.get(code) or _library_file(code.co_filename):
            return tuple(parts)
        glob = f.__globals__
        names = _global_names(code)
        for name in names:
            v = glob.get(name, _MISSING)
            if v is _MISSING:
                continue
            if type(v) is types.ModuleType:
                if not _library_module(v.__name__):       # `config.scale` in a user module
                    parts += [(name, a, self.key(getattr(v, a), d)) for a in names
                              if a != name and hasattr(v, a)]
                continue
            parts.append((name, self.key(v, d)))
        return tuple(parts)

    # -- programs: what a trace recorded, compared between calls ---------------------------

    def program(self, prog):
        names = self.var_names

        def atom(a):
            if isinstance(a, Var):
                return names.setdefault(a.id, len(names))
            v = a.val                     # the same constant, even if a new array object
            return ("lit", _array_key(v, False) if isinstance(v, np.ndarray) else self.key(v))

        def param(prim, k, p):
            if k in prim.fresh_params:          # unique per equation: only distinctness counts
                return self.fresh.setdefault(p, len(self.fresh))
            return self.key(p)

        for v in prog.in_vars:
            atom(v)
        eqns = tuple((e.prim.name, tuple(map(atom, e.inputs)),
                      tuple(sorted((k, param(e.prim, k, p)) for k, p in e.params.items())),
                      tuple((atom(o), o.aval) for o in e.outputs)) for e in prog.eqns)
        return (tuple(v.aval for v in prog.in_vars), eqns, tuple(map(atom, prog.outs)))


_MISSING = object()


def state_key(f):
    """The key of everything f reads from outside its arguments (raises Unguardable)."""
    return _Walker().key(f)


def value_key(v):
    """A key of v by value (numbers, strings, containers, objects' attributes; arrays by
    identity and content): equal keys mean a trace reading v cannot tell them apart."""
    return _Walker().key(v)


def trace_key(prog):
    """The key of a traced program: equal keys mean the same computation."""
    return _Walker(by_value=True).program(prog)


_TRACED_SCALARS = frozenset([float, complex, np.float64, np.float32, np.int64, np.int32, np.bool_])


def _signature(args, kwargs):
    if not kwargs:                   # the common case, without flattening: arrays and numbers
        sig = []
        for x in args:
            t = type(x)
            if t is np.ndarray:
                sig.append((x.shape, x.dtype))
            elif t in _TRACED_SCALARS:      # traced: the type is enough
                sig.append(t)
            elif t is int or t is bool:       # static where not differentiated: by value
                sig.append((t, x))
            else:
                break
        else:
            return tuple(sig)
    leaves, tree = tree_flatten((args, kwargs))
    if any(isinstance(x, Traced) for x in leaves):
        raise TypeError("traced call: not tiered")      # inside another transform
    w = _Walker()
    return (tree, tuple((x.shape, x.dtype) if isinstance(x, (np.ndarray, np.generic))
                        else (type(x),) if isinstance(x, (float, complex))
                        else w.key(x) for x in leaves))


def _rng_state():
    """Python's and NumPy's global random states, to see whether a trace drew numbers."""
    _, keys, pos, has_gauss, gauss = np.random.get_state()
    return (random.getstate(), keys.tobytes(), pos, has_gauss, gauss)


class _Watch:
    """One interpreted call being observed: its state, the first program traced in it and
    the decisions that trace made."""

    __slots__ = ("sig", "programs", "rng", "prev")

    def __init__(self, sig):
        self.sig, self.programs = sig, []

    def __enter__(self):
        self.rng = _rng_state()
        self.prev, ir._state.observer = ir._state.observer, self.programs
        return self

    def __exit__(self, *exc):
        ir._state.observer = self.prev


MAX_HOT = 64       # compiled signatures per (function, transform)


class _Tier:
    """Guards, reproducibility records and compiled forms of one (function, transform) pair."""

    def __init__(self, f):
        self.f_ref = weakref.ref(f)
        self.state = None         # the state the records and compiled forms below belong to
        self.runs = {}            # sig -> (trace key, identical calls in a row, decisions)
        self.jitted = {}          # sig -> compiled form (hot signatures)
        self.pending, self.failed = set(), set()
        self.never = None         # why f is never compiled, once known

    def why(self):
        if self.never:
            return f"interpreted: {self.never}"
        if self.jitted:
            return f"compiled for {len(self.jitted)} signature(s)"
        return f"interpreted: fewer than {policy.threshold} identical calls so far"

    def compiled_for(self, args, kwargs, make_jit):
        """(compiled form, None) to run compiled, or (None, watch) to interpret this call
        under `watch` (None when the call is not tracked). `make_jit()` builds the compiled
        form; it comes from the calling wrapper, so nothing here holds f strongly until f is
        compiled (then f -> its _Tiers -> the compiled form -> f is a cycle the collector
        frees)."""
        f = self.f_ref()
        if f is None or self.never:
            return None, None
        try:
            sig = _signature(args, kwargs)
            hash(sig)
            state = state_key(f)
        except Unguardable as exc:
            self._give_up_all(str(exc), warn=True)
            return None, None
        except TypeError:
            return None, None
        if state != self.state:
            self.state, self.runs, self.jitted = state, {}, {}
        jitted = self.jitted.get(sig)
        if jitted is not None:
            return jitted, None
        record = self.runs.get(sig)
        if (record is not None and record[1] >= policy.threshold and sig not in self.pending
                and sig not in self.failed):
            jitted = make_jit()
            if not policy.background:
                self._keep(sig, jitted)
                return jitted, None
            self.pending.add(sig)
            threading.Thread(target=self._warm, args=(sig, state, jitted, args, kwargs),
                             daemon=True, name="funcgrad-tiering-compile").start()
        return None, _Watch(sig)

    def observe(self, watch):
        """After an interpreted call under `watch`: count it if it traced as the last did."""
        if self.never or not watch.programs:
            return
        if _rng_state() != watch.rng:
            self._give_up_all("tracing it draws from NumPy's or Python's global random state")
            return
        prog, decisions = watch.programs[0]
        key = trace_key(prog)
        record = self.runs.get(watch.sig)      # (other decisions: other programs, by design)
        if record is not None and record[0] != key and record[2] == decisions:
            self._give_up_all("two calls with the same arguments and state traced to "
                              "different programs (it reads a clock, a random generator or "
                              "other state the guards cannot see)")
            return
        self.runs[watch.sig] = (key, 1 if record is None else record[1] + 1, decisions)

    def _keep(self, sig, jitted):
        """Hot signatures keep their compiled forms, the oldest dropped past MAX_HOT (each
        holds its kernels; a dropped one is interpreted and counted again)."""
        while len(self.jitted) >= MAX_HOT:
            del self.jitted[next(iter(self.jitted))]
        self.jitted[sig] = jitted

    def give_up(self, args, kwargs):
        """Compiling or running this signature failed: interpret it from now on."""
        self.jitted.pop(_signature(args, kwargs), None)
        self.failed.add(_signature(args, kwargs))

    def _give_up_all(self, why, warn=False):
        self.never, self.jitted, self.runs = why, {}, {}
        if warn:
            f = self.f_ref()
            warnings.warn(f"funcgrad will not compile {getattr(f, '__name__', f)}: {why}; "
                          "pass large state as arguments", RuntimeWarning, stacklevel=4)

    def _warm(self, sig, state, jitted, args, kwargs):
        try:
            jitted(*args, **kwargs)
            if self.state == state:       # not if the state changed while it compiled
                self._keep(sig, jitted)
        except Exception:            # compiling failed: keep interpreting this signature
            self.failed.add(sig)
        finally:
            self.pending.discard(sig)


# ---- long loops met while interpreting -----------------------------------------------------
# Interpreting costs about 2 us per equation per loop step, compiling a loop a fraction of a
# second: a loop whose interpreted work would pass LOOP_COMPILE_SECONDS runs compiled, even in
# an un-jitted fg.grad (never with FUNCGRAD_LOOP_COMPILE_SECONDS=0 or in fg.disable_jit()).
LOOP_COMPILE_SECONDS = float(os.environ.get("FUNCGRAD_LOOP_COMPILE_SECONDS", "0.5"))
EQN_SECONDS = 2e-6
_loop_compiler = [None]
LATER = object()    # compile_loop's answer: keep interpreting, ask again after another budget


def set_loop_compiler(compile_and_run):
    """Install `compile_and_run(prim, args, params) -> outputs, None or LATER` (api/jit.py)."""
    _loop_compiler[0] = compile_and_run


def compile_loop(prim, args, params):
    """The outputs of the loop equation prim[params](*args) computed by a compiled kernel; None
    when that is off or not possible (keep interpreting), LATER (keep interpreting, ask again:
    fg.jit's first call while its kernel compiles, api/background.py)."""
    run = _loop_compiler[0]
    if run is None or LOOP_COMPILE_SECONDS <= 0:
        return None
    return run(prim, args, params)


def loop_is_long(steps, eqns_per_step):
    """Whether interpreting `steps` steps of a body this size passes the budget."""
    return steps * eqns_per_step * EQN_SECONDS > LOOP_COMPILE_SECONDS


def tiered(f, kind, make_jit, interpreted):
    """`interpreted`, until f is hot for a signature; then f's compiled form (`make_jit()`).
    If compiling fails, that signature stays interpreted (which raises any user error)."""
    local = _Tiers()           # used when f cannot carry its own (see TieringPolicy)

    def call(*args, **kwargs):
        return run_tiered(f, kind, make_jit, interpreted, args, kwargs, local)
    return call


def run_tiered(f, kind, make_jit, interpreted, args, kwargs, local=None):
    """Call `interpreted` or, once f is hot for these arguments, its compiled form. `local`:
    the wrapper's own _Tiers (see TieringPolicy)."""
    tier = policy.tier(f, kind, local)
    if tier is None:
        return interpreted(*args, **kwargs)
    jitted, watch = tier.compiled_for(args, kwargs, make_jit)
    if jitted is not None:
        try:
            return jitted(*args, **kwargs)
        except Exception:
            # The user's error (a singular matrix, a bad index) fails interpreted too: it is
            # raised from there, with the user's line, and the compiled form stays. Only what
            # works interpreted but not compiled makes this signature interpreted from now on.
            out = interpreted(*args, **kwargs)
            tier.give_up(args, kwargs)
            return out
    if watch is None:
        return interpreted(*args, **kwargs)
    with watch:
        out = interpreted(*args, **kwargs)
    tier.observe(watch)
    return out
