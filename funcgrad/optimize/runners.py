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

from ..guards import Unguardable, state_key

__all__ = ["cached_runner"]

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
