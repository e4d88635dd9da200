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
  modules it names and data in library modules it names (os.environ), the defaults of its
  parameters, the attributes of a callable object or a bound method's instance, a
  functools.partial's arguments, and recursively the contents of these (dicts of any kind,
  lists, tuples, sets, deques, buffers, objects' attributes, the functions behind properties
  and special methods of the user's classes, helper functions' own state, custom_vjp rules) a
  few levels deep. Numbers and strings count by value, arrays by identity *and content* (a
  digest of their bytes), so rebinding *or mutating in place* anything f reads is
  seen. The state is compared on every call (once f is hot, by checks generated for it:
  guards.py, a few hundred nanoseconds); when it changed, the compiled forms are dropped
  and f is interpreted (and counted) again. Non-array arguments that are not traced (a config
  object passed as an argument) are part of the signature, by value the same way.
* **Reproducibility.** f is compiled for a signature only after `threshold` interpreted calls
  with the same state produced identical programs (same equations and constants). If two calls
  with the same state trace to different programs (f reads a clock, a random generator object,
  anything the guards cannot see), or if tracing f advanced NumPy's or Python's global random
  state (a dropout mask drawn with np.random inside the loss), f stays interpreted for good:
  each call then draws, as the user wrote it.
* **Reach.** The call that makes f hot records which of the user's code its trace runs
  (reach.py); code the walk of the state does not reach (a helper deeper than it goes, a
  function behind an object it does not look into) keeps f interpreted, with a warning.
* **Cost.** A hot signature compiles once its interpreted calls have cost
  fg.config.tier_payback of the compile's estimated CPU time (compile_estimate): what is
  called rarely, or interprets quickly, stays interpreted. The compile itself is fg.jit's,
  in the background (api/background.py): no call waits for it.

What is not covered: Python side effects that leave no trace in f's state (print, writing a
file) happen only while f is interpreted, as under fg.jit; state deeper than the walk goes
(`_DEPTH`) or larger than `_BUDGET` values means f is never compiled (a warning says so);
objects of library types (NumPy generators, Numba or SciPy objects) count by identity.
A program larger than `policy.max_equations` is not compiled here at all (the caller opts in
with fg.jit). `policy.explain(f)` tells why a function is still interpreted.

Tiering sits below the public API and the loop primitives: the entry points pass it the
interpreted and compiled forms (`tiered`), and a loop primitive whose NumPy evaluation would run
long asks `compile_loop`, which api/jit.py fills in when it is imported.
"""
from __future__ import annotations

import functools
import random
import time
import types
import weakref
from typing import NamedTuple

import numpy as np

from . import ir
from ._config import config
from ._recent import Recent
from ._errors import user_frame, warn_at
from .guards import Unguardable, _Walker, compile_guard, state_key, trace_key, value_key
from .reach import unfollowed
from .ir import Traced
from .tree_util import _registry, tree_flatten, tree_leaves

__all__ = ["policy", "TieringPolicy", "PerformanceWarning", "state_key", "value_key"]


class PerformanceWarning(UserWarning):
    """funcgrad runs something slower than it could, and says how to make it fast."""


class TieringPolicy:
    """When interpreted transforms get compiled: `threshold` and `max_equations` are
    fg.config's jit_threshold (0 turns tiering off) and tier_max_equations, read and set
    here too. A hot function's compiled form is fg.jit's: its kernel compiles in the
    background while the interpreter answers (fg.config.jit_background, api/background.py).

    Where the counts and compiled forms live: on the function object itself (a plain function
    or functools.partial: an attribute, so they are shared by every fg.grad(f) wrapper and die
    with f, compiled kernels included); for other callables (bound methods, callable
    objects) in the wrapper fg.grad made, so create that wrapper once and reuse it. Nothing
    is kept in a global table: dropping f frees it and everything it captured."""

    def __init__(self):
        # Compiling costs ~0.05-0.1 cpu-s per equation: a program larger than this (loop and
        # branch bodies counted) would stall a call for a minute or more, so it is compiled
        # only where the caller asks (fg.jit).
        self.generation = 0

    threshold = property(lambda self: config.jit_threshold,
                         lambda self, n: config.update("jit_threshold", n))
    max_equations = property(lambda self: config.tier_max_equations,
                             lambda self, n: config.update("tier_max_equations", n))

    def __reduce__(self):
        """Pickled as a reference to the receiving process's policy."""
        return "policy"

    def reset(self):
        """Forget all call counts and tiered compilations."""
        self.generation += 1

    def tier(self, f, kind, local=None):
        """The _Tier of (f, kind), or None when f cannot be tracked (tiering off). `local`:
        the calling wrapper's own _Tiers, used for callables that cannot carry them."""
        if config.jit_threshold <= 0:
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


def _reference(f):
    """A weak reference to f where f can have one; else a strong one. (Ufuncs, NumPy's
    dispatchers, builtins and objects with __slots__ cannot be weakly referenced; their
    _Tiers live in the fg.grad wrapper, which holds f anyway.)"""
    try:
        return weakref.ref(f)
    except TypeError:
        return lambda: f


def _no_tier():
    return None


policy = TieringPolicy()


_TRACED_SCALARS = frozenset([float, complex, np.float64, np.float32, np.int64, np.int32, np.bool_])


def _signature(args, kwargs):
    if not kwargs:                   # the common case, without flattening: arrays and numbers
        if len(args) == 1 and type(args[0]) is np.ndarray:
            return ((args[0].shape, args[0].dtype),)
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


def _static_leaves(args):
    """The leaves of (args, kwargs) that are not arrays or numbers (a config object passed as
    an argument: its methods may run while f is traced; the signature keys them by value)."""
    return [x for x in tree_leaves(args) if not isinstance(
        x, (np.ndarray, np.generic, int, float, complex, bool, str, type(None)))]


def _pytree_codes():
    """The code of registered pytree flatten/unflatten functions: it runs on every call,
    compiled or not, so what it reads is never frozen."""
    return {fn.__code__ for nt in list(_registry.values()) for fn in nt[:2]
            if isinstance(fn, types.FunctionType)}


def _rng_state():
    """Python's and NumPy's global random states, to see whether a trace drew numbers."""
    _, keys, pos, has_gauss, gauss = np.random.get_state()
    return (random.getstate(), keys.tobytes(), pos, has_gauss, gauss)


class _Observed(list):
    """The programs traced in a watched call (tracer.py appends the first, with the decisions
    it made); with `codes` a set, also the code objects the user's function ran while it was
    traced (tracer.py profiles that trace with `record`)."""

    __slots__ = ("codes",)

    def __init__(self, observe):
        super().__init__()
        self.codes = set() if observe else None

    def record(self, frame, event, arg):
        if event == "call":
            self.codes.add(frame.f_code)


class _Watch:
    """One interpreted call being observed: its state, the first program traced in it and
    the decisions that trace made, how long it took; for the call that makes a signature hot,
    the code it ran and its arguments (to check that the state's key covers that code)."""

    __slots__ = ("sig", "programs", "rng", "prev", "seconds", "args", "start")

    def __init__(self, sig, args=None):
        self.sig, self.programs, self.seconds = sig, _Observed(args is not None), 0.0
        self.args = args

    def __enter__(self):
        self.rng = _rng_state()
        self.prev, ir._state.observer = ir._state.observer, self.programs
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
        ir._state.observer = self.prev


class _Run(NamedTuple):
    """What the interpreted calls of one signature in one state recorded (_Tier.runs)."""
    key: tuple               # the trace key of the last program
    count: int               # identical calls in a row
    decisions: tuple         # the Python control flow decisions on traced values it made
    seconds: float           # time spent interpreting them
    size: int                # equations of the program


def _hot():
    """A tier's table of hot signatures (the last fg.config.jit_max_signatures used)."""
    return Recent(lambda: config.jit_max_signatures)


def compile_estimate(equations):
    """CPU seconds a kernel of a program this size takes to compile (measured on 2026-12-03,
    benchmarks/stalls.py: 30 equations 3.8 s, 106 equations 6.3 s, 270 equations 20 s,
    runtime helpers included)."""
    return 1.5 + 0.06 * equations


class _Tier:
    """Guards, reproducibility records and compiled forms of one (function, transform) pair."""

    def __init__(self, f):
        self.f_ref = _reference(f)
        self.state = None         # the state the records and compiled forms below belong to
        self.runs = {}            # sig -> _Run
        self.jitted = _hot()      # hot sig -> the compiled form (one for all: its cache)
        self.compiled = None      # that compiled form, made at the first hot signature
        self.failed = set()
        self.never = None         # why f is never compiled, once known
        self.guard = None         # guard(f): the state is still self.state (guards.py)
        self.guard_tried, self.guard_misses = False, 0

    def __reduce__(self):
        """Pickled (cloudpickle copies fg.grad's wrapper with its memo) as no tier: counts
        and compiled forms stay in this process; the receiver finds f's own."""
        return (_no_tier, ())

    def why(self):
        if self.never:
            return f"interpreted: {self.never}"
        if self.jitted:
            return f"compiled for {len(self.jitted)} signature(s)"
        if not self.runs:
            return "interpreted: not called yet with its current state"
        _, count, _, seconds, size = max(self.runs.values(), key=lambda r: r.seconds)
        if count < policy.threshold:
            return (f"interpreted: {count} identical call(s) so far, compiled after "
                    f"{policy.threshold} (fg.config.jit_threshold) once it pays")
        return (f"interpreted: {seconds:.3g} s spent interpreting it so far; its compile "
                f"(~{compile_estimate(size):.1f} cpu-s for {size} equations) starts after "
                f"{config.tier_payback * compile_estimate(size):.3g} s (fg.config.tier_payback "
                f"= {config.tier_payback}), as the calls that will follow are likely to earn "
                "it back")

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
            guard = self.guard
            if guard is not None and guard(f):
                state = self.state           # what the walk would find (guards.py)
            else:
                state = state_key(f)
                if guard is not None:        # rebuilt, unless it keeps failing on states
                    self.guard = None        # the walk finds equal (containers made anew)
                    self.guard_misses += state == self.state
                    self.guard_tried = self.guard_misses >= 3
        except Unguardable as exc:
            self._give_up_all(str(exc), warn=True)
            return None, None
        except TypeError:
            return None, None
        if state != self.state:
            self.state, self.runs, self.jitted, self.guard = state, {}, _hot(), None
            self.compiled = None     # (it captured the old state)
            self.guard_tried = self.guard_misses >= 3
        jitted = self.jitted.get(sig)
        if jitted is not None:
            if not self.guard_tried:         # hot: check the state cheaply from now on
                self.guard, self.guard_tried = compile_guard(f, state), True
            return jitted, None
        record = self.runs.get(sig)
        if (record is not None and record.count >= policy.threshold and sig not in self.failed
                and record.seconds >= config.tier_payback * compile_estimate(record.size)):
            return self._keep(sig, make_jit), None  # (interpreted while its kernel compiles)
        # (the call that makes it hot also records the code its trace runs: only functions
        # about to compile pay for that)
        calls = 0 if record is None else record.count
        return None, _Watch(sig, (args, kwargs) if calls + 1 == policy.threshold else None)

    def observe(self, watch):
        """After an interpreted call under `watch`: count it if it traced as the last did.
        Never raises: the call has its answer, and bookkeeping that fails means only that f
        stays interpreted."""
        try:
            self._observe(watch)
        except Exception as exc:       # pragma: no cover  (a defect here must not cost the call)
            self._give_up_all(f"tiering could not follow it ({type(exc).__name__}: {exc})",
                              warn=True)

    def _observe(self, watch):
        if self.never or not watch.programs:
            return
        if _rng_state() != watch.rng:
            self._give_up_all("tracing it draws from NumPy's or Python's global random state")
            return
        prog, decisions = watch.programs[0]
        size = prog.equation_count()
        if size > policy.max_equations:
            self._give_up_all(f"its program has {size} equations (more than "
                              f"policy.max_equations = {policy.max_equations}): compiling it "
                              "would stall a call for minutes. fg.jit(...) around the "
                              "transform compiles it anyway", warn=True, category=PerformanceWarning)
            return
        if watch.programs.codes:
            bad = unfollowed(self.f_ref(), watch.programs.codes, _static_leaves(watch.args),
                             _pytree_codes())
            if bad:
                c = bad[0]
                self._give_up_all(
                    f"tracing it runs {c.co_name} ({c.co_filename}:{c.co_firstlineno}), code "
                    "the checks of its state do not reach (more than 6 calls deep, or "
                    "reached through an object they do not walk), so what that code reads "
                    "from outside its arguments could change unseen once compiled. Pass what "
                    "it reads as arguments, or compile anyway with fg.jit (which captures "
                    "what f reads when it traces)", warn=True, category=PerformanceWarning)
                return
        key = trace_key(prog)
        record = self.runs.get(watch.sig)      # (other decisions: other programs, by design)
        if record is not None and record.key != key and record.decisions == decisions:
            self._give_up_all("two calls with the same arguments and state traced to "
                              "different programs (it reads a clock, a random generator or "
                              "other state the guards cannot see)")
            return
        count, seconds = (0, 0.0) if record is None else (record.count, record.seconds)
        self.runs[watch.sig] = _Run(key, count + 1, decisions, seconds + watch.seconds, size)

    def _keep(self, sig, make_jit):
        """A hot signature runs the tier's one compiled form (`make_jit()`, made at the first:
        fg.jit's cache of signatures is the only one, its kernels evicted by its own rule),
        the least recently used dropped past fg.config.jit_max_signatures (counted again if it
        comes back and its kernel is gone)."""
        if self.compiled is None:
            self.compiled = make_jit()
        self.jitted.put(sig, self.compiled)
        return self.compiled

    def fall_back(self, interpreted, args, kwargs):
        """The compiled form raised. The user's error (a singular matrix, a bad index) fails
        interpreted too: it is raised from there, with the user's line, and the compiled form
        stays. Only what works interpreted but not compiled makes this signature interpreted
        from now on."""
        out = interpreted(*args, **kwargs)
        sig = _signature(args, kwargs)
        self.jitted.pop(sig, None)
        self.failed.add(sig)
        if self.compiled is not None:
            try:
                self.compiled.forget(*args, **kwargs)
            except Exception:          # (what it cannot key was never on its fast path)
                pass
        return out

    def _give_up_all(self, why, warn=False, category=None):
        self.never, self.jitted, self.runs, self.compiled = why, _hot(), {}, None
        if warn:
            f = self.f_ref()
            advice = "" if category else "; pass large state as arguments"
            warn_at(user_frame(), f"funcgrad will not compile {getattr(f, '__name__', f)}: "
                    f"{why}{advice}", category or RuntimeWarning)


# ---- long loops met while interpreting -----------------------------------------------------
# Interpreting costs about 2 us per equation per loop step, compiling a loop a fraction of a
# second: a loop whose interpreted work would pass fg.config.loop_compile_seconds runs
# compiled, even in an un-jitted fg.grad (never with 0, or in fg.disable_jit()).
EQN_SECONDS = 2e-6
_loop_compiler = [None]
NOT_READY = object()  # a compiled form's answer: its kernel is still compiling (interpret)
LATER = object()    # compile_loop's answer: keep interpreting, ask again after another budget


def set_loop_compiler(compile_and_run):
    """Install `compile_and_run(prim, args, params) -> outputs, None or LATER` (api/jit.py)."""
    _loop_compiler[0] = compile_and_run


def compile_loop(prim, args, params):
    """The outputs of the loop equation prim[params](*args) computed by a compiled kernel; None
    when that is off or not possible (keep interpreting), LATER (keep interpreting, ask again:
    fg.jit's first call while its kernel compiles, api/background.py)."""
    run = _loop_compiler[0]
    if run is None or config.loop_compile_seconds <= 0:
        return None
    if sum(p.equation_count() for p in ir.sub_programs(params)) > policy.max_equations:
        return None             # (its compile would take longer than interpreting it)
    return run(prim, args, params)


def loop_is_long(steps, eqns_per_step):
    """Whether interpreting `steps` steps of a body this size passes the budget."""
    return steps * eqns_per_step * EQN_SECONDS > config.loop_compile_seconds


def tiered(f, kind, make_jit, interpreted):
    """`interpreted`, until f is hot for a signature; then f's compiled form (`make_jit()`).
    If compiling fails, that signature stays interpreted (which raises any user error)."""
    local = _Tiers()           # used when f cannot carry its own (see TieringPolicy)
    memo = [None, None]        # (policy generation, f's _Tier of this kind): the hot path

    def call(*args, **kwargs):
        tier = memo[1]
        if tier is not None and memo[0] == policy.generation and not kwargs:
            guard = tier.guard           # f's state unchanged and these arguments hot:
            if guard is not None and guard(f) and config.jit_threshold > 0:
                compiled = tier.compiled     # a kernel ready for these arguments' signature
                if compiled is not None:     # (tiering's hot path: the runtime's dispatch)
                    try:
                        out = compiled.dispatch(args)
                    except FloatingPointError:
                        raise
                    except Exception:
                        return tier.fall_back(interpreted, args, kwargs)
                    if out is not NOT_READY:
                        return out
                try:
                    jitted = tier.jitted.get(_signature(args, None))
                except TypeError:        # (unhashable: not a signature kept compiled)
                    jitted = None
                if jitted is not None:
                    try:
                        out = jitted(*args)
                    except FloatingPointError:   # fg.debug_nans found the origin: report it
                        raise
                    except Exception:
                        return tier.fall_back(interpreted, args, kwargs)
                    return interpreted(*args) if out is NOT_READY else out
        tier = memo[1] = policy.tier(f, kind, local)
        memo[0] = policy.generation
        return run_tiered(tier, make_jit, interpreted, args, kwargs)
    return call


def run_tiered(tier, make_jit, interpreted, args, kwargs):
    """Call `interpreted` or, once the tier's function is hot for these arguments, its
    compiled form."""
    if tier is None:
        return interpreted(*args, **kwargs)
    try:
        jitted, watch = tier.compiled_for(args, kwargs, make_jit)
    except Exception as exc:           # pragma: no cover  (see _Tier.observe)
        tier._give_up_all(f"tiering could not follow it ({type(exc).__name__}: {exc})", warn=True)
        return interpreted(*args, **kwargs)
    if jitted is not None:
        try:
            out = jitted(*args, **kwargs)
        except FloatingPointError:
            raise
        except Exception:
            return tier.fall_back(interpreted, args, kwargs)
        return interpreted(*args, **kwargs) if out is NOT_READY else out
    if watch is None:
        return interpreted(*args, **kwargs)
    with watch:
        out = interpreted(*args, **kwargs)
    tier.observe(watch)
    return out
