"""The compiled runner of a minimiser, reused across calls of the same function.

Each fg.optimize call builds a jitted loop around the user's function; tracing it again on
every call would cost more than running it (tens of milliseconds for L-BFGS). The runner is
therefore kept per (function, options, structure of x0) and reused while everything the
function reads from outside its arguments is unchanged -- tiering's guards decide that
(closure cells, globals, captured arrays by content), so a changed global or a mutated
captured array gets a fresh trace, never a stale result.
"""
from __future__ import annotations

import weakref

import numpy as np

from .. import numpy as fnp
from ..guards import Unguardable, state_key
from ..tree_util import tree_flatten

__all__ = ["cached_runner", "tree_signature", "as_float64"]

_RUNNERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
MAX_PER_FUNCTION = 8


def cached_runner(fun, key, make, also=()):
    """make() -> runner, or the one made before for (fun, key) if the state of fun (and of the
    functions in `also`, e.g. an optimizer's init and update) is the same."""
    try:
        state = tuple(state_key(g) for g in (fun, *also))
        table = _RUNNERS.setdefault(fun, {})
    except (Unguardable, TypeError):        # unguardable state, or fun not weak-referenceable
        return make()
    hit = table.get(key)
    if hit is not None and hit[0] == state:
        return hit[1]
    runner = make()
    if len(table) >= MAX_PER_FUNCTION:
        table.pop(next(iter(table)))
    table[key] = (state, runner)
    return runner


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
