"""Which of the user's code a trace ran that the walk of a function's state does not reach.

Tiering compiles a function only when its guards (guards.py) cover everything it reads from
outside its arguments. The walk of its state follows its closure, globals, defaults and
helpers a few levels deep; code it does not reach (a helper deeper than that, a function
behind an object it does not look into) could read anything. So the call that makes a
function hot records the code objects its trace runs (tiering.py, tracer.py), and
`unfollowed` names those the walk did not cover: such a function stays interpreted.
"""
from __future__ import annotations

import types

from .guards import Unguardable, _Walker, library_code

__all__ = ["unfollowed"]


def _with_nested(code, out):
    """code and the code objects defined inside it (lambdas, comprehensions, classes)."""
    if code not in out:
        out.add(code)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                _with_nested(c, out)
    return out


def unfollowed(f, executed, also=(), fixed=()):
    """The user's code objects in `executed` (run while f was traced) whose reads the key of
    f's state does not cover: not f's or a helper's the walk reached (nor defined inside
    one), not a function of `also` (f's static arguments), not in `fixed` (code that runs on
    every call, compiled or not, such as pytree flatten functions). Sorted by name."""
    user = [c for c in executed if not library_code(c) and c.co_filename != "<string>"]
    # ("<string>": methods that namedtuple and dataclasses generate, run by pytree unflatten)
    if not user:
        return []
    w = _Walker()
    w.budget = float("inf")
    try:
        w.key(f)
        for x in also:
            w.key(x)
    except Unguardable:                     # (f is then never compiled anyway)
        return []
    covered = set(fixed)
    for c in w.codes:
        _with_nested(c, covered)
    return sorted((c for c in user if c not in covered), key=lambda c: c.co_name)
