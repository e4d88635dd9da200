"""Error types and the one place that finds and formats the user's source line.

Owns: the FuncgradError family, `user_frame()` (first stack frame outside funcgrad and
NumPy), `SourceInfo`, and the hook that explains a traced value converted inside another
library (FOREIGN_CALL_EXPLAINERS, filled by fg.scipy). Imports nothing from funcgrad.
"""
from __future__ import annotations

import dis
import functools
import linecache
import os
import sys
import warnings

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_TRANSFORMS_DIR = os.path.join(os.path.dirname(_PKG_DIR), "transforms")


def _library_dirs():
    dirs = [_PKG_DIR + os.sep, _TRANSFORMS_DIR + os.sep]
    try:
        import numpy
        dirs.append(os.path.dirname(os.path.abspath(numpy.__file__)) + os.sep)
    except Exception:  # pragma: no cover
        pass
    return tuple(dirs)


_LIB_DIRS = _library_dirs()


class SourceInfo:
    """Where in the user's code an equation was created: file, line and function. `role`
    says what the equation does for the code there when it is not the line's own operation:
    "the backward pass of sqrt" for an equation reverse mode derived from it."""

    __slots__ = ("filename", "lineno", "function", "role", "masked")

    def __init__(self, filename, lineno, function, role=None, masked=False):
        self.filename, self.lineno, self.function = filename, lineno, function
        self.role, self.masked = role, masked

    def in_role(self, role, masked=False):
        """The same place, for an equation playing `role` there; masked: a NaN it makes may
        be replaced afterwards on purpose (the strong-zero rule), so fg.debug_nans looks at
        the replacement instead."""
        return SourceInfo(self.filename, self.lineno, self.function, role, masked)

    def __str__(self):
        return f"{os.path.basename(self.filename)}:{self.lineno} ({self.function})"

    def long(self):
        return f"{self.filename}:{self.lineno} (in {self.function})"

    def __repr__(self):
        return f"SourceInfo({self})"


_is_lib_cache: dict = {}


def _is_library_file(filename):
    hit = _is_lib_cache.get(filename)
    if hit is None:
        hit = _is_lib_cache[filename] = (filename.startswith(("<frozen", "<__array_function__"))
                                         or os.path.abspath(filename).startswith(_LIB_DIRS))
    return hit


def user_frame():
    """SourceInfo of the innermost stack frame that is not funcgrad's or NumPy's own code."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not _is_library_file(code.co_filename):
            return SourceInfo(code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


def _user_frame_object():
    frame = sys._getframe(2)
    while frame is not None and _is_library_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_expression():
    """The text of the expression the user's innermost frame is running, as written
    (`math.sin(x)`), or None where Python does not say (before 3.11, or an expression over
    several lines). An assignment into an item reads `y[0] = ...` (writing into ...)."""
    frame = _user_frame_object()
    positions = getattr(frame.f_code, "co_positions", None) if frame is not None else None
    if positions is None:
        return None
    try:
        line, end, col, end_col = list(positions())[frame.f_lasti // 2]
    except IndexError:
        return None
    if line is None or line != end or col is None or end_col is None:
        return None
    text = linecache.getline(frame.f_code.co_filename, line).encode()[col:end_col]
    text = text.decode(errors="replace").strip()
    if _running(frame.f_code, frame.f_lasti)[1].opname == "STORE_SUBSCR":
        return f"`{text} = ...` (writing into a NumPy array)"
    return f"`{text}`" if text else None


# Bytecode after a call whose result is only compared or tested (see user_decides): loads of
# other operands, the shuffles of a chained comparison, then the comparison or the test.
_LOADS = {"LOAD_CONST", "LOAD_FAST", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_SMALL_INT",
          "LOAD_FAST_CHECK", "LOAD_FAST_BORROW", "COPY"}
_COMPARES = {"COMPARE_OP", "IS_OP", "CONTAINS_OP"}
_TESTS = {"TO_BOOL", "UNARY_NOT"}
_METHOD_BIT = sys.version_info >= (3, 12)     # LOAD_ATTR's arg & 1: a method (pushes two)
_decides: dict = {}             # (code, offset) -> user_decides' answer


def user_decides():
    """Whether the result of the call the user's innermost frame is making (float(x),
    x.item(), math.sin(x)) is only compared or tested for truth right away -- `if float(x) >
    tol:`, `while x.item():` -- so that it steers a decision and flows nowhere else. Read from
    the bytecode after the call; False wherever unsure."""
    frame = _user_frame_object()
    if frame is None:
        return False
    key = (frame.f_code, frame.f_lasti)
    hit = _decides.get(key)
    if hit is None:
        if len(_decides) > 4096:
            _decides.clear()
        hit = _decides[key] = _decides_after(frame.f_code, frame.f_lasti)
    return hit


def _running(code, offset):
    """(the code's instructions, the one running at `offset`, its index): the last one
    starting at or before it (a call's inline caches follow it)."""
    instructions = list(dis.get_instructions(code))
    k = max((i for i, ins in enumerate(instructions) if ins.offset <= offset), default=0)
    return instructions, instructions[k], k


def _decides_after(code, offset):
    instructions, call, k = _running(code, offset)
    if call.opname == "PRECALL" and instructions[k + 1].opname == "CALL":
        k += 1                      # (3.11's specialised PRECALL makes some calls itself)
    elif not call.opname.startswith("CALL"):
        return False
    above = 0                       # values pushed over the call's result
    for ins in instructions[k + 1:]:
        name = ins.opname
        if name in _LOADS:
            above += 1
        elif name == "LOAD_ATTR" and above and not (_METHOD_BIT and (ins.arg or 0) & 1):
            continue                # (an attribute of the other operand)
        elif name in ("SWAP", "NOP"):
            continue
        elif name in _COMPARES:
            return above <= 1
        else:
            return above == 0 and (name in _TESTS or name.startswith("POP_JUMP"))
    return False


def traceback_user_frame(tb):
    """SourceInfo of the innermost user frame (not funcgrad's or NumPy's) in a traceback."""
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not _is_library_file(code.co_filename):
            found = SourceInfo(code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found


def add_location(exc, src, what="raised"):
    """Note on a NumPy/Python error (AxisError, IndexError, LinAlgError, ...) raised inside
    funcgrad the user's line it comes from; funcgrad's own errors already name it. Shown
    under the message in the traceback (Python 3.11+: exception notes)."""
    if src is None or isinstance(exc, FuncgradError) or not hasattr(exc, "add_note"):
        return
    notes = getattr(exc, "__notes__", ())
    if any(n.startswith("funcgrad: ") for n in notes):
        return                          # the innermost place is the useful one
    exc.add_note(f"funcgrad: {what} at {src.long()}")


_REGISTRIES: dict = {}      # filename -> warnings registry of the lines warned at (see warn_at)


def warn_at(src, message, category=UserWarning):
    """Warn as if raised at the user's line `src` (a SourceInfo): the default filter then
    shows each message once per line, as for a warning raised there."""
    if src is None:
        warnings.warn(message, category, stacklevel=3)
        return
    if len(_REGISTRIES) > 1000:
        _REGISTRIES.clear()
    warnings.warn_explicit(message, category, src.filename, src.lineno,
                           registry=_REGISTRIES.setdefault(src.filename, {}))


def concretization_message(what, src, deps, why, hint=""):
    """ConcretizationError's text for Python control flow or a conversion (`what`) on a traced
    value whose value is not known: `why` says what the trace stands for (None: the usual
    places), deps names the arguments it depends on, hint comes before the usual advice."""
    dep = f" The value depends on argument {', '.join(map(repr, deps))}." if deps else ""
    why = why or ("inside fg.vmap (one value per example), a fg.fori_loop/fg.scan/"
                  "fg.while_loop body or an fg.cond branch, funcgrad records the function once "
                  "for many values")
    return (f"{what} on a traced value{where(src)}.{dep} Its value is not known here: {why}, so "
            "Python control flow cannot depend on it (elsewhere -- fg.grad(f)(x), fg.jit -- it "
            f"follows the values of each call).{hint} Use fg.cond(pred, true_fun, false_fun, "
            "*operands) (fg.switch for several branches) instead of `if`, fg.while_loop(cond_fun, "
            "body_fun, init) instead of `while` (fg.fori_loop / fg.scan for counted loops), "
            "fnp.where(condition, x, y) to select elementwise. If the value comes from an "
            "argument you do not differentiate or batch, make that argument static instead "
            "(fg.jit's static_argnums, in_axes=None for fg.vmap); an argument being "
            "differentiated cannot be static.")


def dropped_derivative_message(expr, src, deps):
    """The text of DroppedDerivativeWarning for `expr` (what the user wrote) at src."""
    dep = f"argument {', '.join(map(repr, deps))}" if deps else "an argument"
    return (f"{expr} makes a Python number of a traced value{where(src)}, which depends on "
            f"{dep} being differentiated: its derivative is dropped there (the number is a "
            "constant to the derivative), so the derivative is wrong unless that is intended. Keep the "
            "value traced: funcgrad.numpy's functions (fnp.sin, fnp.exp, ...) instead of "
            "math's, arithmetic on the traced value instead of float(x) / x.item(), and "
            "fnp.array / fnp.stack / x.at[i].set(v) to build an array instead of writing into a "
            "NumPy one. If only a decision depends on it, compare the traced value itself "
            "(`if x > 0:`). If a constant is intended, convert fg.stop_gradient(x) instead. "
            "(fg.config.dropped_derivative: 'error' raises here, 'ignore' silences this.)")


# hints of concretization_message for a traced value converted to a NumPy array
INDEX_HINT = (" To index a NumPy array `table` with traced integers `idx`, write "
              "fnp.take(table, idx, axis=0): the same values as table[idx], read by a traced "
              "gather that works for every index (here too) and stays compiled when the "
              "indices change.")
SLICE_HINT = (" To slice a NumPy array `table` from a traced start i, write "
              "fnp.take(table, i + fnp.arange(k), axis=0) (k entries); a traced array x takes "
              "x[i:i + k] directly.")
LIST_HINT = (" A NumPy function given a list of traced values: use fnp.array(list) or "
             "fnp.stack(list), or the fnp function; np.r_[...] and np.c_[...]: fnp.r_ and fnp.c_.")
MASK_HINT = (" To select with a traced mask, keep the shape: fnp.where(mask, table, 0.0) "
             "(or a sum of fnp.where(mask, x, 0.0) for a masked total).")


def float_array_message(expr, src, deps):
    """np.asarray of a traced floating-point value in a trace of one call: its value is
    known, but a NumPy array of it would be a constant (no derivative, no later values)."""
    dep = f" (it depends on argument {', '.join(map(repr, deps))})" if deps else ""
    return (f"{expr or 'np.asarray(x)'} makes a NumPy array of a traced floating-point value"
            f"{dep}{where(src)}: the array would be a constant, without the derivative through "
            "it (under fg.grad) and fixed to this call's values (under fg.jit). Keep it traced: "
            "fnp.asarray(x) and funcgrad.numpy's functions take traced values (a list of them: "
            "fnp.array(list) or fnp.stack(list); np.r_[...] and np.c_[...]: fnp.r_ and "
            "fnp.c_), and x.at[i].set(v) builds an array instead of writing into a NumPy one "
            "(np.empty then y[i] = ...). If a constant is intended, convert "
            "fg.stop_gradient(x) with .tolist() or float().")


def where(src):
    """' at file:line (function)' or '' when unknown."""
    return f" at {src.long()}" if src is not None else ""


# Explainers of a traced value converted to a NumPy array inside another library's function
# (fg.scipy adds SciPy's): each takes the frame that converts and returns a message or None.
# Filled from above, so that the tracer needs no import of them.
FOREIGN_CALL_EXPLAINERS: list = []


def foreign_call_message(frame):
    """The message of the first explainer that recognises the stack at `frame`, or None."""
    for explain in FOREIGN_CALL_EXPLAINERS:
        message = explain(frame)
        if message is not None:
            return message
    return None


@functools.lru_cache(maxsize=1)
def memory_bytes():
    """This machine's physical memory in bytes (None where unknown); read once."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):       # pragma: no cover  (not POSIX)
        return None


def _gib(n):
    return f"{n / 2 ** 30:,.1f} GiB"


def loop_memory_error(length, avals):
    """A MemoryError that says what was too big and what to do, or None when `length` stacked
    values of `avals` (a scan's per-step outputs) fit in this machine's memory."""
    per_step = sum(a.size * a.dtype.itemsize for a in avals)
    need, have = length * per_step, memory_bytes()
    if not per_step or have is None or need <= have:
        return None
    return MemoryError(
        f"a loop of {length:,} steps stores {per_step:,} bytes per step ({_gib(need)} in all; "
        f"this machine has {_gib(have)}). In a gradient these are the values reverse mode "
        "keeps for the backward pass: pass checkpoint=k to fg.fori_loop / fg.scan / "
        "fg.while_loop to keep every k-th carry and recompute the rest (k near the square root "
        "of the number of steps), or run fewer steps. Outside a gradient, return fewer values "
        "per step from the scan body.")


def array_memory_error(aval, what, src):
    """A MemoryError for one array larger than this machine's memory, or None."""
    need, have = aval.size * aval.dtype.itemsize, memory_bytes()
    if have is None or need <= have:
        return None
    return MemoryError(
        f"{what}{where(src)} makes an array of shape {aval.shape} and dtype {aval.dtype.name} "
        f"({_gib(need)}; this machine has {_gib(have)}). Compute it in pieces (fg.scan over "
        "blocks, fg.vmap over a smaller batch), or keep a smaller dtype.")


class FuncgradError(Exception):
    """Base class of every error funcgrad raises on purpose."""


class ConcretizationError(FuncgradError, TypeError):
    """Python control flow or conversion (`if`, `while`, bool(), float(), int()) on a traced value."""


class DroppedDerivativeWarning(RuntimeWarning):
    """A value that depends on an argument being differentiated became a Python number
    (float(x), math.sin(x), x.item(), x written into a NumPy array): its derivative is
    dropped. fg.config.dropped_derivative = "error" raises ConcretizationError instead."""


class MutationError(FuncgradError, TypeError):
    """In-place write (item assignment, `+=` on a slice, `out=`) to a traced array."""


def out_error(name):
    """The MutationError for np.<name>(..., out=...) on traced values (PyTorch's in-place
    `out=` habit): say what happened at the user's line and what to write instead."""
    return MutationError(f"np.{name}(..., out=...) writes in place into an array"
                         f"{where(user_frame())}; traced arrays are immutable. Use the return "
                         f"value instead (y = np.{name}(...)), and y = x.at[idx].set(value) to "
                         "write into part of an array.")


class NonScalarOutputError(FuncgradError, TypeError):
    """fg.grad of a function whose output has more than one element."""


class IntegerInputError(FuncgradError, TypeError):
    """Differentiating with respect to an integer or boolean input."""


class UnsupportedFunctionError(FuncgradError, NotImplementedError):
    """A NumPy function or ufunc method that funcgrad cannot trace."""


class UnsupportedDtypeError(FuncgradError, TypeError):
    """A dtype funcgrad cannot trace yet (complex numbers)."""


class ShapeError(FuncgradError, ValueError):
    """Operand shapes that do not fit together, found while tracing."""


class EscapedTracerError(FuncgradError, RuntimeError):
    """A traced value used after the transform that made it has finished."""


class CarryTypeError(FuncgradError, TypeError):
    """A loop body or branch returns values whose structure, shape or dtype differ from its
    input carry (or from the other branches)."""


class KernelInterrupted(Exception):
    """Raised inside a compiled kernel when a signal handler raised while it ran (Ctrl-C:
    loops poll Python's signal handlers). Callers re-raise it as KeyboardInterrupt; it is an
    Exception only because Numba can raise nothing else."""
