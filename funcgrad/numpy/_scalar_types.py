"""NumPy's scalar types applied to a traced value (np.int64(x), np.float32(x), ...): a clear
error that says to cast with x.astype(dtype).

np.int64(x) converts x with np.asarray(x, dtype=int64), which must return a NumPy array, so a
traced value cannot pass through it: there is no hook that lets NumPy's scalar constructors
return a traced cast (np.float64(x) calls float(x) instead: a Python number, see
docs/dynamic_python.md). `explain(frame)`, registered in _errors.FOREIGN_CALL_EXPLAINERS (the
tracer asks it when a traced value refuses to become an array), recognises the call at the
user's line from its source and names the cast to write instead. Imports _errors and NumPy only.
"""
from __future__ import annotations

import ast
import linecache

import numpy as np

from .._errors import FOREIGN_CALL_EXPLAINERS, SourceInfo, where


def _call_source(frame):
    """The source text of the call the frame is executing (Python 3.11+ positions), or None."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None:
        return None
    try:
        line, end_line, col, end_col = list(positions())[frame.f_lasti // 2]
    except (IndexError, ValueError):
        return None
    if None in (line, end_line, col, end_col):
        return None
    lines = [linecache.getline(frame.f_code.co_filename, n) for n in range(line, end_line + 1)]
    if not all(lines):
        return None
    lines[-1] = lines[-1][:end_col]
    lines[0] = lines[0][col:]
    return "".join(lines)


def _resolve(node, frame):
    """The object a Name or a chain of attributes (np.int64) names in `frame`, or None."""
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
            if node.id in scope:
                return scope[node.id]
        return None
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, frame)
        return None if owner is None else getattr(owner, node.attr, None)
    return None


def scalar_type_called(frame):
    """(the NumPy scalar type, the text the user wrote for it, the text of its argument) when
    `frame` is executing a call of one (np.int64(x)); else None."""
    text = _call_source(frame)
    if text is None:
        return None
    try:
        call = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call):
        return None
    fn = _resolve(call.func, frame)
    if not (isinstance(fn, type) and issubclass(fn, np.generic)):
        return None
    return fn, ast.unparse(call.func), ast.unparse(call.args[0]) if call.args else "x"


def explain(frame):
    """The message for np.int64(x) (any NumPy scalar type) on a traced x at `frame`, or None."""
    found = scalar_type_called(frame)
    if found is None:
        return None
    typ, text, arg = found
    src = SourceInfo(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    grad = ("derivative 0, as any cast to an integer" if np.dtype(typ).kind in "biu"
            else "the derivative kept")
    name = f"np.{typ.__name__}"
    operand = arg if arg.isidentifier() or arg.endswith((")", "]")) else f"({arg})"
    return (f"{text}({arg}) of a traced value{where(src)}: NumPy's scalar types convert their "
            "argument with np.asarray, which must return a NumPy array, and a traced value "
            f"cannot become one. Cast it with {operand}.astype({name}) (or fnp.asarray({arg}, "
            f"dtype={name})): the same values, traced, with {grad}.")


FOREIGN_CALL_EXPLAINERS.append(explain)
