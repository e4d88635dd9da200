"""SciPy functions called on traced values: the error names the user's line, the SciPy
function and its funcgrad equivalent.

A SciPy function that is not a ufunc converts its arguments with np.asarray, which a traced
value refuses (Tracer.__array__). `explain(frame)`, registered in
_errors.FOREIGN_CALL_EXPLAINERS (the tracer asks it, so it needs no import of this module),
walks out from the converting frame through SciPy's (and NumPy's and funcgrad's) frames to the
first other one, the caller, and names the outermost SciPy function: `scipy.linalg.solve`, or
`scipy.stats.norm.logpdf` for a method of a distribution object. SciPy is never imported here.
"""
from __future__ import annotations

import sys

from .._errors import FOREIGN_CALL_EXPLAINERS, SourceInfo, where

# modules whose frames lie between the user's call of a SciPy function and the conversion
_PASS_THROUGH = ("numpy", "funcgrad", "functools", "contextlib")


def _top(frame):
    return frame.f_globals.get("__name__", "").partition(".")[0]


def _public_modules():
    """SciPy's public subpackages already imported: scipy.linalg, scipy.stats, ..."""
    return [(name, mod) for name, mod in list(sys.modules.items())
            if name.startswith("scipy.") and name.count(".") == 1
            and not name.split(".")[1].startswith("_") and mod is not None]


def _runs(fn, frame):
    """Whether `frame` runs fn, or a wrapper of it (functools.wraps chain), with fn's own
    closure (decorators share one code object between the functions they wrap)."""
    seen = 0
    while fn is not None and seen < 10:
        code = getattr(fn, "__code__", None)
        if code is frame.f_code:
            cells = getattr(fn, "__closure__", None) or ()
            try:
                return all(frame.f_locals.get(name) is cell.cell_contents
                           for name, cell in zip(code.co_freevars, cells))
            except ValueError:                # an empty cell
                return False
        fn, seen = getattr(fn, "__wrapped__", None), seen + 1
    return False


def scipy_name(frame):
    """The public name of the SciPy function `frame` runs ('scipy.linalg.solve',
    'scipy.stats.norm.logpdf'), else its module and qualified name."""
    code = frame.f_code
    owner = frame.f_locals.get("self") if code.co_argcount and code.co_varnames[0] == "self" \
        else None
    frozen = getattr(owner, "dist", None)     # a frozen distribution (norm(0, 1)): its family
    for modname, mod in _public_modules():
        for name, value in list(vars(mod).items()):
            if name.startswith("_"):
                continue
            if owner is not None and (value is owner or frozen is not None
                                      and type(value) is type(frozen)):
                return f"{modname}.{name}{'(...)' if frozen is not None else ''}.{code.co_name}"
            if owner is None and callable(value) and _runs(value, frame):
                return f"{modname}.{name}"
    qualname = getattr(code, "co_qualname", code.co_name)
    return f"{frame.f_globals.get('__name__', 'scipy')}.{qualname}"


def equivalent(name):
    """'fg.scipy.linalg.solve' for 'scipy.linalg.solve' where fg.scipy.linalg, .special or
    .stats has it, else None."""
    parts = name.replace("(...)", "").split(".")[1:]
    if not parts or parts[0] not in ("linalg", "special", "stats"):
        return None
    obj = sys.modules[__package__]           # funcgrad.scipy (imported: it imports this)
    for part in parts:
        if part not in getattr(obj, "__all__", ()):
            return None
        obj = getattr(obj, part)
    return "fg." + name if callable(obj) else None


def explain(frame):
    """The error message for a traced value converted inside a SciPy function called from
    user code at or above `frame`; None when no SciPy function is on the way out."""
    outer = None
    while frame is not None:
        top = _top(frame)
        if top == "scipy":
            outer = frame
        elif top not in _PASS_THROUGH:
            break
        frame = frame.f_back
    if outer is None:
        return None
    name = scipy_name(outer)
    src = None if frame is None else SourceInfo(frame.f_code.co_filename, frame.f_lineno,
                                                 frame.f_code.co_name)
    head = (f"{name} converts its arguments to NumPy arrays, which a traced value cannot "
            f"become{where(src)}.")
    fg_name = equivalent(name)
    if fg_name is not None:
        args = ("the distribution's parameters as arguments" if "(...)" in name
                else "SciPy's arguments")
        return (f"{head} Use {fg_name.replace('(...)', '')} instead: the same function with "
                f"{args}, on traced values, differentiable.")
    if name.startswith("scipy.optimize."):
        return (f"{head} SciPy's optimizers run outside traced code: call them (or "
                "fg.scipy.optimize, SciPy's algorithms with funcgrad's derivatives) outside the "
                "function being transformed, use fg.optimize's compiled optimizers, or "
                "differentiate through a solution with fg.custom_root.")
    return (f"{head} funcgrad has no version of it: call it outside the traced function on "
            "concrete values, or call it through fg.pure_callback inside an fg.custom_vjp that "
            "gives its derivative, or write it with funcgrad.numpy operations.")


FOREIGN_CALL_EXPLAINERS.append(explain)
