"""Tiered execution: fg.grad, value_and_grad, vjp, jvp, vmap, jacfwd, jacrev and hessian start in
the interpreter and compile once hot.

A fresh `fg.grad(f)(x)` (a new lambda in a notebook cell, a closure built inside a loop) runs
the derived program in the NumPy interpreter: no compile wait. When the same function `f` is
differentiated with the same signature `policy.threshold` times, that signature is compiled
with Numba (optionally in a background thread, answering from the interpreter meanwhile), and
later calls run native.

Counting is per function object, so `fg.grad(loss)(w)` inside a training loop becomes hot even
though each iteration builds a new grad wrapper, while 1,000 fresh closures never compile.

As with fg.jit, arrays that f closes over are captured when the compiled version is built. If f
is redefined, or a closure cell or a global name it reads is rebound to another object, the
compiled version is dropped and rebuilt (helpers f calls, attributes of a callable object and
the arguments of a functools.partial are checked too, numbers by value); an array mutated in
place is not noticed (pass data as arguments, or call `fg.tiering.policy.reset()`).
"""
from __future__ import annotations

import functools
import os
import threading
import types
import weakref

import numpy as np

__all__ = ["policy", "TieringPolicy"]


class TieringPolicy:
    """When interpreted transforms get compiled. Environment: FUNCGRAD_JIT_THRESHOLD (0 turns
    tiering off), FUNCGRAD_JIT_BACKGROUND=1 (compile in a background thread)."""

    def __init__(self):
        self.threshold = int(os.environ.get("FUNCGRAD_JIT_THRESHOLD", "10"))
        self.background = os.environ.get("FUNCGRAD_JIT_BACKGROUND", "") not in ("", "0")
        self._tiers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def reset(self):
        """Forget all call counts and tiered compilations."""
        with self._lock:
            self._tiers = weakref.WeakKeyDictionary()

    def tier(self, f, kind, make_jit):
        """The _Tier of (f, kind), or None when f cannot be tracked (tiering off, no weakref)."""
        if self.threshold <= 0:
            return None
        try:
            per_f = self._tiers.get(f)
            if per_f is None:
                per_f = self._tiers[f] = {}
        except TypeError:
            return None
        t = per_f.get(kind)
        if t is None:
            t = per_f[kind] = _Tier(f, make_jit)
        return t


policy = TieringPolicy()


_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)


def _ident(v):
    """Numbers and strings by value (a rebound float may reuse a freed one's id), the rest by
    identity (an array mutated in place is not seen)."""
    return (type(v), v) if isinstance(v, _SCALARS) else id(v)


def _fingerprint(f, depth=3, seen=None):
    """Identities of what f reads (rebinding any of them changes the result): its closure cells
    and globals, the attributes of a callable object or bound method's instance, the arguments
    of a functools.partial, and recursively the same for Python functions among them (helpers
    f calls), `depth` levels deep."""
    seen = set() if seen is None else seen
    if depth < 0 or id(f) in seen:
        return ()
    seen.add(id(f))
    if isinstance(f, functools.partial):
        return (tuple(_ident(a) for a in f.args) + tuple(_ident(v) for v in f.keywords.values())
                + _fingerprint(f.func, depth, seen))
    if not isinstance(f, types.FunctionType):
        owner = getattr(f, "__self__", None)
        func = getattr(f, "__func__", None)
        if func is None and not isinstance(f, type):       # an object with __call__
            owner, func = f, getattr(type(f), "__call__", None)
        ids = []
        if owner is not None and hasattr(owner, "__dict__"):
            ids += [_ident(v) for v in vars(owner).values()]
        if isinstance(func, types.FunctionType):
            ids += _fingerprint(func, depth, seen)
        return tuple(ids)
    values = []
    for cell in f.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:            # empty cell
            values.append(None)
    glob = f.__globals__
    values += [glob[n] for n in f.__code__.co_names
               if n in glob and not isinstance(glob[n], types.ModuleType)]
    ids = [_ident(v) for v in values]
    for v in values:
        if isinstance(v, (types.FunctionType, functools.partial)) or (
                callable(v) and hasattr(v, "__dict__") and not isinstance(v, type)):
            ids += _fingerprint(v, depth - 1, seen)
    return tuple(ids)


def _signature(args, kwargs):
    from .ir import Traced
    from .tree_util import tree_flatten
    leaves, tree = tree_flatten((args, kwargs))
    if any(isinstance(x, Traced) for x in leaves):
        raise TypeError("traced call: not tiered")      # inside another transform
    return (tree, tuple((x.shape, x.dtype) if isinstance(x, (np.ndarray, np.generic))
                        else (type(x), x if isinstance(x, (int, bool, str)) else None)
                        for x in leaves))


class _Tier:
    """Call counts per signature for one (function, transform) pair, and its compiled form."""

    def __init__(self, f, make_jit):
        self.make_jit, self.counts, self.hot = make_jit, {}, set()
        self.jitted, self.fp = None, _fingerprint(f)
        self.f_ref = weakref.ref(f)
        self.pending = set()

    def compiled_for(self, args, kwargs):
        """The jitted function to call for these arguments, or None to interpret this call."""
        f = self.f_ref()
        if f is None:
            return None
        try:
            sig = _signature(args, kwargs)
            hash(sig)
        except TypeError:
            return None
        if self.jitted is not None and _fingerprint(f) != self.fp:
            self.jitted, self.hot, self.counts, self.fp = None, set(), {}, _fingerprint(f)
        if sig in self.hot:
            return self.jitted
        n = self.counts[sig] = self.counts.get(sig, 0) + 1
        if n < policy.threshold or sig in self.pending:
            return None
        if self.jitted is None:
            self.jitted = self.make_jit()
        if policy.background:
            self.pending.add(sig)
            threading.Thread(target=self._warm, args=(sig, args, kwargs), daemon=True).start()
            return None
        self.hot.add(sig)
        return self.jitted

    def give_up(self, args, kwargs):
        """Compiling or running this signature failed: interpret it from now on."""
        sig = _signature(args, kwargs)
        self.hot.discard(sig)
        self.counts[sig] = -(10 ** 9)

    def _warm(self, sig, args, kwargs):
        try:
            self.jitted(*args, **kwargs)
            self.hot.add(sig)
        except Exception:            # compiling failed: keep interpreting this signature
            pass
        finally:
            self.pending.discard(sig)
