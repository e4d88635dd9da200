"""The compiled loops of fit, minimize, root, least_squares and odeint, reused across calls.

Each of these builds a jitted loop around the user's function; tracing it again on every call
would cost more than running it (tens of milliseconds for L-BFGS), and compiling it again
would cost seconds. A loop is therefore kept under a key of *values*: the solver and its
options, the structure of x0, and everything the user's function (and an optimizer's update)
reads from outside its arguments, keyed as tiering's guards key it (closure cells, globals,
captured arrays by identity and content). So `fit(loss, w, adam(0.05), ...)` with a fresh
optimizer object each call, or `minimize(lambda w: f(w, data), ...)` with a fresh lambda,
finds the loop the previous call compiled, while a changed global or a mutated captured array
gets a fresh trace, never a stale result. Numbers an optimizer keeps in its state (a learning
rate) are inputs of the loop: changing them compiles nothing.

The table holds the last MAX_RUNNERS loops of the process (least recently used first out,
funcgrad/_recent.py), with what they captured; `clear()` empties it.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import numpy as fnp
from .._recent import Recent
from ..guards import Unguardable, state_key, value_key
from ..tree_util import tree_flatten

__all__ = ["cached_runner", "tree_signature", "as_float64", "clear"]

MAX_RUNNERS = 64
_RUNNERS = Recent(MAX_RUNNERS)          # key -> runner
_lock = threading.Lock()


def runner_key(fun, key, also=()):
    """The key of a loop: `key` (the solver, its options, the structure of x0), the state of
    `fun` and the values of the solver's own helpers in `also` (an optimizer's update: a
    library function whose closure holds the hyperparameters, compared by value). Raises
    Unguardable or TypeError when they cannot be keyed."""
    k = (key, state_key(fun), tuple(value_key(g, library=True) for g in also))
    hash(k)
    return k


def cached_runner(fun, key, make, also=()):
    """make() -> runner, or the runner made before under an equal runner_key."""
    try:
        k = runner_key(fun, key, also)
    except (Unguardable, TypeError):      # unguardable state, or unhashable options
        return make()
    with _lock:
        hit = _RUNNERS.get(k)
        if hit is not None:
            return hit
    runner = make()
    with _lock:
        _RUNNERS.put(k, runner)
    return runner


def runners(kind):
    """(key, loop) of the loops kept for solver `kind` ("minimize", "fit", "odeint", ...),
    least recently used first; key: the solver's options as cached_runner was given them."""
    with _lock:
        return [(k[0], r) for k, r in _RUNNERS.items() if k[0][0] == kind]


def clear():
    """Forget every kept loop (their kernels stay in the disk cache)."""
    with _lock:
        _RUNNERS.clear()


def tree_signature(tree):
    """What a runner built for x0 depends on besides the function: x0's structure and its
    leaves' shapes and dtypes (its unravel gives every leaf its dtype back)."""
    leaves, treedef = tree_flatten(tree)
    return treedef, tuple((np.shape(x), np.result_type(x).str) for x in leaves)


def as_float64(value):
    """A function's value for a solver's float64 arithmetic (float32 problems are evaluated
    in float32 and iterated in float64)."""
    value = fnp.asarray(value)
    return value if value.dtype.kind != "f" or value.dtype == np.float64 \
        else value.astype(np.float64)
