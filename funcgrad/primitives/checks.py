"""The check primitives of fg.debug_nans / fg.debug_infs (funcgrad/_debug_nans.py).

`debug_check[site, message, infs](y, *xs)` is y itself; it raises FloatingPointError(message)
when y holds a NaN (or, with infs, an infinity) and none of the inputs xs of the equation that
made y do. transforms/nan_checks.py inserts one after each floating-point equation of a
program about to be compiled. After an elementwise equation the check is elementwise too
(`debug_check_pointwise`, fused into the same loop nest, element by element); after any other
it looks at whole arrays. In compiled code the kernel raises FloatingPointError(site) and the
caller turns the site number into the message (backend/compile.py). A check is an effect:
never removed as dead code (api/jit.py inserts checks before simplifying, so that a value
nothing reads is checked as the interpreter checks it).
"""
from __future__ import annotations

from .. import _debug_nans
from .base import define, operands_batch


def _impl(y, *xs, site, message, infs):
    if _debug_nans._bad(y, infs) and not any(_debug_nans._bad(x, infs) for x in xs):
        raise FloatingPointError(message.replace(_debug_nans.STEPS, ""))
    return y


def _rules(name, elementwise):
    return define(name, impl=_impl, elementwise=elementwise, exact=True, batch=operands_batch(), effect=True,
                  moves=True,
                  abstract=lambda y, *xs, site, message, infs: y,
                  vjp=lambda ct, y, *xs, out, site, message, infs: (ct,) + (None,) * len(xs))


debug_check_p = _rules("debug_check", False)
debug_check_pointwise_p = _rules("debug_check_pointwise", True)
