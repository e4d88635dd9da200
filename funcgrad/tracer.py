"""Tracing: run a Python function on Tracers (shape + dtype) and record a Program.

Owns: Trace (records equations, captures tracers of enclosing traces as extra inputs),
Tracer (Python operators, array methods, NumPy's __array_ufunc__/__array_function__
protocols, and the errors for Python control flow and in-place writes), trace_flat.
Imports ir, _errors and the primitive registry (for the namespace functions).

Dynamic Python. A trace of one call (fg.grad(f)(x), fg.vjp, fg.jvp, the Jacobians, fg.jit;
not fg.vmap, loop bodies or fg.cond branches, which stand for many values) knows its inputs'
values. `if x > 0`, `while err > tol`, bool(), float(), int(), .item(), a traced int as a
range() bound, a slice bound or a shape then work as in PyTorch's eager mode: the value is
computed on demand (only the equations it depends on, with NumPy) and the trace follows the
path taken, so the derivative is that of the path taken (at a branch boundary, of the branch
Python chose). Each decision is kept as a guard -- (variable, value, user line) in
`Trace.guards` -- which fg.jit compiles into the kernel as extra results and checks on every
call (api/jit.py: one kernel per path taken). A value read with float(), int() or
.item() is a constant from then on (no gradient flows through it, as with PyTorch's .item());
where that drops the derivative of an input being differentiated (Trace.diff), and the number
is not only compared, a DroppedDerivativeWarning says so at the user's line (fg.config).
"""
from __future__ import annotations

import operator
import sys
import threading

import numpy as np

from . import ir
from ._config import config
from ._errors import (INDEX_HINT, LIST_HINT, MASK_HINT, SLICE_HINT, ConcretizationError,
                      DroppedDerivativeWarning, EscapedTracerError, MutationError,
                      UnsupportedFunctionError, add_location, concretization_message,
                      dropped_derivative_message, float_array_message, foreign_call_message,
                      out_error, traceback_user_frame, user_decides, user_expression, user_frame,
                      warn_at, where)
from .ir import Aval, Eqn, Lit, Program, Traced, Var
from .primitives.base import FFT, FOREIGN_UFUNCS, LINALG, NAMESPACE

__all__ = ["Trace", "Tracer", "trace_flat", "RULE_GIVEN"]


class _RuleGiven(threading.local):
    """depth > 0 while a custom_vjp's fwd runs: the derivative of what it computes is the
    user's bwd rule, so a Python number made there drops none (no DroppedDerivativeWarning).
    `with RULE_GIVEN:` around the call."""
    depth = 0

    def __enter__(self):
        self.depth += 1

    def __exit__(self, *exc):
        self.depth -= 1


RULE_GIVEN = _RuleGiven()


class Trace:
    """One level of tracing: its input variables, recorded equations and captured tracers."""

    def __init__(self, labels=None):
        self.in_vars: list[Var] = []
        self.labels: dict[int, str] = {}
        self.eqns: list[Eqn] = []
        self.captured: dict[int, tuple] = {}   # id(outer tracer) -> (outer tracer, inner var)
        self.active = True
        # with values (a trace of one call): var id -> an array or an enclosing trace's tracer
        self.sources: dict[int, object] | None = None
        self.known: dict[int, np.ndarray] = {}  # var id -> value computed so far
        self.made_by: dict[int, int] = {}       # var id -> index of the equation making it
        self.guards: list[tuple] = []           # (var, value, kind, SourceInfo) per decision
        self.diff: set[int] = set()             # ids of the inputs being differentiated
        self._carries: dict[int, bool] = {}     # var id -> carries_derivative(var), memo
        # what this trace stands for when it has no values (for ConcretizationError): "fg.vmap"
        self.why: str | None = None

    def with_values(self, values):
        """Make this a trace of one call: `values` per input (arrays, or tracers of an
        enclosing trace of one call) give every value on demand (value_of)."""
        self.sources = {v.id: x for v, x in zip(self.in_vars, values)}

    def new_input(self, aval, label=None):
        v = Var(aval)
        self.in_vars.append(v)
        if label is not None:
            self.labels[v.id] = label
        return Tracer(self, v)

    def to_atom(self, x):
        if isinstance(x, Tracer):
            if x._trace is self:
                return x._var
            if x._trace.active:          # a value of an enclosing trace: becomes an input
                hit = self.captured.get(id(x))
                if hit is None:
                    hit = self.captured[id(x)] = (x, Var(x.aval))
                    if self.sources is not None:
                        self.sources[hit[1].id] = x
                return hit[1]
            raise EscapedTracerError(
                f"a traced value {x.aval} escaped from the function that was being transformed "
                f"and was used again{where(user_frame())}. Return it instead of storing it in a "
                "global, a list or a closure.")
        return Lit(x if isinstance(x, (np.ndarray, np.generic)) else np.asarray(x))

    def record(self, prim, args, params):
        ins = [self.to_atom(a) for a in args]
        out_avals = prim.abstract(*[i.aval for i in ins], **params)
        if not prim.multiple_results:
            out_avals = (out_avals,)
        outs = [Var(a) for a in out_avals]
        src = ir._state.override[0] or user_frame()
        if self.sources is not None:
            for o in outs:
                self.made_by[o.id] = len(self.eqns)
        self.eqns.append(Eqn(prim, ins, outs, params, src))
        if len(self.eqns) == LARGE_PROGRAM:
            _warn_large(src)
        tracers = [Tracer(self, v) for v in outs]
        return tuple(tracers) if prim.multiple_results else tracers[0]

    def value_of(self, var):
        """The value of `var` in the call being traced (computing, with NumPy, only the
        equations it depends on), or None where this trace (or an enclosing one that an
        input comes from) stands for every value."""
        if self.sources is None:
            return None
        if var.id in self.known:
            return self.known[var.id]
        need, inputs = self._cone(var, self.known)     # the equations not computed yet
        for v in inputs:                        # an input: from the caller or an outer trace
            x = self.sources.get(v.id)
            if isinstance(x, Traced):
                x = x._trace.value_of(x._var) if isinstance(x, Tracer) else None
            if x is None:
                return None
            self.known[v.id] = np.asarray(x)
        with ir.no_trace(), np.errstate(all="ignore"):    # the real run warns, not this one
            for k in sorted(need):
                e = self.eqns[k]
                out = e.prim.impl(*[i.val if isinstance(i, Lit) else self.known[i.id]
                                    for i in e.inputs], **e.params)
                for o, val in zip(e.outputs, out if e.prim.multiple_results else (out,)):
                    self.known[o.id] = np.asarray(val)
        return self.known[var.id]

    def add_guard(self, var, value, kind, src):
        """Record a decision on `var`'s value, here and, for a trace nested in another trace of
        one call (grad inside grad or jit), in the enclosing traces too: the equations that
        compute var are replayed there (recorded on the enclosing trace's tracers), so the
        outermost program can check the decision on later calls (api/jit.py)."""
        self.guards.append((var, value, kind, src))
        outer = self.lift(var)
        if isinstance(outer, Tracer):
            outer._trace.add_guard(outer._var, value, kind, src)

    def _cone(self, var, known=()):
        """(indices of the equations var depends on, the inputs it depends on), stopping at
        the variables in `known`."""
        eqns, inputs, seen, todo = set(), [], set(), [var]
        while todo:
            v = todo.pop()
            if v.id in known or v.id in seen:
                continue
            seen.add(v.id)
            k = self.made_by.get(v.id)
            if k is None:
                inputs.append(v)
            elif k not in eqns:
                eqns.add(k)
                todo += [i for i in self.eqns[k].inputs if isinstance(i, Var)]
        return eqns, inputs

    def lift(self, var):
        """var recomputed from this trace's sources: a tracer of the innermost enclosing trace
        they come from, or None when it depends on no enclosing tracer."""
        cone, inputs = self._cone(var)
        env = {v.id: self.sources.get(v.id) for v in inputs}
        traces = [x._trace for x in env.values() if isinstance(x, Tracer) and x._trace.active]
        if not traces:
            return None
        if not cone:                            # var is an input: its source
            return env[var.id]
        stack = ir._state.stack
        outer = max(traces, key=lambda t: stack.index(t) if t in stack else -1)
        for k in sorted(cone):
            e = self.eqns[k]
            with ir.use_source(e.src):
                out = outer.record(e.prim, [i.val if isinstance(i, Lit) else env[i.id]
                                            for i in e.inputs], e.params)
            for o, t in zip(e.outputs, out if e.prim.multiple_results else (out,)):
                env[o.id] = t
        return env[var.id]

    def carries_derivative(self, var):
        """Whether var depends, through differentiable floating-point operations, on an input
        being differentiated (by this trace's transform or an enclosing one): converting it
        to a Python number would drop a derivative. Memoised per variable."""
        memo, todo = self._carries, [var]
        while todo:
            v = todo[-1]
            if v.id in memo:
                todo.pop()
                continue
            k = self.made_by.get(v.id)
            if not v.aval.is_float:
                memo[v.id] = False
            elif k is None:
                memo[v.id] = self._input_carries(v)
            else:
                e = self.eqns[k]
                ins = [i for i in e.inputs if isinstance(i, Var)] if (
                    e.prim.differentiable or e.prim.opaque) else []
                pending = [i for i in ins if i.id not in memo]
                if pending:
                    todo += pending
                    continue
                memo[v.id] = any(memo[i.id] for i in ins)
            todo.pop()
        return memo[var.id]

    def _input_carries(self, v):
        if v.id in self.diff:
            return True
        x = (self.sources or {}).get(v.id)
        return isinstance(x, Tracer) and x._trace.active and x._trace.carries_derivative(x._var)

    def why_unknown(self, var):
        """What makes var's value unknown (the `why` of the trace that stands for every value,
        "inside fg.vmap"...), or None when no trace said."""
        if self.sources is None:
            return self.why
        for v in self._cone(var, self.known)[1]:
            x = self.sources.get(v.id)
            if isinstance(x, Tracer) and x._trace.value_of(x._var) is None:
                return x._trace.why_unknown(x._var)
        return self.why

    def depends_on(self, var):
        """Labels of the inputs that `var` depends on (for error messages)."""
        need, labels = {var.id}, set()
        for e in reversed(self.eqns):
            if any(o.id in need for o in e.outputs):
                need.update(i.id for i in e.inputs if isinstance(i, Var))
        for v in self.in_vars:
            if v.id in need and v.id in self.labels:
                labels.add(self.labels[v.id])
        return sorted(labels)


# A traced program this long is most often a Python loop over range() unrolled into it; it
# compiles in time proportional to its length (backend/split.py), a few seconds per thousand
# equations, where a loop primitive records the body once.
LARGE_PROGRAM = 2000


def _warn_large(src):
    """Warn once per line, at the user's line that added the equation past LARGE_PROGRAM."""
    warn_at(src, f"the traced program has grown past {LARGE_PROGRAM} equations (now at "
            f"{src.long() if src is not None else 'an unknown line'}): a Python `for` loop over "
            "range() unrolls while tracing, and compiling costs a few seconds per thousand "
            "equations. Record the loop body once instead: fg.fori_loop(lower, upper, body, init) "
            "for a counted loop, fg.scan(step, init, xs) to also collect per-step outputs, or "
            "fg.while_loop(cond, body, init) for a stopping test.")


def trace_flat(fn, avals, labels=None, values=None, guards=None, diff=None, why=None):
    """Trace fn(*tracers) -> list of outputs. Returns (program, consts): program inputs are the
    captured tracers of enclosing traces (consts, in order) followed by the given avals.
    values: the call's arguments (arrays, or tracers of an enclosing trace of one call), to
    trace that one call (dynamic Python, see above); its decisions are appended to the list
    `guards` when given. diff: a flag per input, True for those being differentiated
    (converting a value that depends on one to a Python float warns: its derivative is
    dropped). why: where values are not given, what the trace stands for, as the errors of
    Python control flow on its values say it ("inside fg.vmap (one value per example)")."""
    trace = Trace()
    trace.why = why
    top = not ir._state.stack
    ins = [trace.new_input(a, None if labels is None else labels[i]) for i, a in enumerate(avals)]
    if values is not None:
        trace.with_values(values)
    if diff is not None:
        trace.diff = {t._var.id for t, d in zip(ins, diff) if d}
    observer = ir._state.observer       # tiering watching this call: which code does it run?
    profile = (top and observer is not None and not observer
               and getattr(observer, "codes", None) is not None and sys.getprofile() is None)
    ir._state.stack.append(trace)
    try:
        if profile:
            sys.setprofile(observer.record)
        outs = fn(*ins)
        out_atoms = [trace.to_atom(o) for o in outs]
    except Exception as exc:
        pending, _PENDING[0] = _PENDING[0], None
        if pending is not None and pending is not exc:
            raise pending from exc
        add_location(exc, traceback_user_frame(exc.__traceback__), "raised while tracing")
        raise
    finally:
        if profile:
            sys.setprofile(None)
        ir._state.stack.pop()
        trace.active = False
    if guards is not None:
        guards += trace.guards
    consts = [t for t, _ in trace.captured.values()]
    const_vars = [v for _, v in trace.captured.values()]
    prog = Program(const_vars + trace.in_vars, trace.eqns, out_atoms)
    observer = ir._state.observer
    if top and observer is not None and not observer:     # (tiering: the decisions made too)
        observer.append((prog, tuple((kind, np.asarray(value).tobytes())
                                     for _, value, kind, _ in trace.guards)))
    return prog, consts


def _ns(name):
    return NAMESPACE[name]


def _binary(name, reflected=False):
    if reflected:
        return lambda self, other: _ns(name)(other, self)
    return lambda self, other: _ns(name)(self, other)


def _method(name):
    def method(self, *args, **kwargs):
        return _ns(name)(self, *args, **kwargs)
    method.__name__ = name
    return method


_UFUNC_METHODS = {("reduce", "add"): "sum", ("reduce", "multiply"): "prod",
                  ("reduce", "maximum"): "max", ("reduce", "minimum"): "min",
                  ("reduce", "logical_and"): "all", ("reduce", "logical_or"): "any",
                  ("accumulate", "add"): "cumsum", ("accumulate", "multiply"): "cumprod"}


class Tracer(Traced):
    """Stands for an array while a function is traced. Immutable: use `x.at[idx].set(v)`."""

    __slots__ = ("_trace", "_var", "_weak")
    __array_priority__ = 1000

    def __init__(self, trace, var, weak=None):
        self._trace, self._var, self._weak = trace, var, weak

    # _weak: this value is arithmetic on Python numbers only (0.1 * i of a loop counter i):
    # it keeps promoting like a Python number, as in NumPy, without an equation of its own
    aval = property(lambda self: self._var.aval if self._weak is None else self._weak)

    def weakened(self):
        """The same value, promoting like a Python number from now on."""
        a = self._var.aval
        return self if a.weak else Tracer(self._trace, self._var, Aval(a.shape, a.dtype, True))
    shape = property(lambda self: self._var.aval.shape)
    dtype = property(lambda self: self._var.aval.dtype)
    ndim = property(lambda self: self._var.aval.ndim)
    size = property(lambda self: self._var.aval.size)
    T = property(lambda self: _ns("transpose")(self))
    mT = property(lambda self: _ns("swapaxes")(self, -1, -2))
    at = property(lambda self: _ns("_at")(self))
    real = property(lambda self: _ns("real")(self))
    imag = property(lambda self: _ns("imag")(self))

    def conj(self):
        return _ns("conj")(self)

    conjugate = conj

    def __repr__(self):
        return f"Traced<{self.aval}>"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __round__(self, ndigits=None):
        return _ns("round")(self, ndigits or 0)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("divide"), _binary("divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __neg__ = _method("negative")
    __pos__ = _method("positive")
    __abs__ = _method("absolute")
    __invert__ = _method("invert")
    __hash__ = object.__hash__

    def __getitem__(self, idx):
        return _ns("_getitem")(self, idx)

    def __setitem__(self, idx, value):
        raise MutationError(
            f"cannot assign to an element of a traced array{where(user_frame())}: funcgrad arrays "
            "are immutable while a function is traced (in-place ops as in PyTorch are not "
            "supported). Write `x = x.at[idx].set(value)` (or .add / .multiply) instead of "
            "`x[idx] = value`.")

    # -- conversions that would need the value ------------------------------------------------
    def _concrete_error(self, what, hint=""):
        return ConcretizationError(concretization_message(
            what, user_frame(), self._trace.depends_on(self._var),
            self._trace.why_unknown(self._var), hint))

    def known_value(self, kind="value"):
        value = self._trace.value_of(self._var)
        if value is not None:
            self._trace.add_guard(self._var, value, kind, user_frame())
        return value

    def offset_from(self, other):
        if not isinstance(other, Tracer) or other._trace is not self._trace:
            return None
        e = next((e for e in reversed(self._trace.eqns) if self._var in e.outputs), None)
        if e is None or e.prim.name not in ("add", "subtract") or len(e.inputs) != 2:
            return None
        a, b = e.inputs
        const = b if a is other._var else a if b is other._var and e.prim.name == "add" else None
        if not isinstance(const, Lit) or np.ndim(const.val) or const.aval.dtype.kind not in "iu":
            return None
        return int(const.val) if e.prim.name == "add" else -int(const.val)

    def _value(self, what, kind):
        value = self.known_value(kind)
        if value is None:
            raise self._concrete_error(what)
        return value

    def _number(self, what):
        """The value, for a conversion to a Python number (or list of them): a floating-point
        value that carries a derivative loses it here, which is said (fg.config)."""
        value = self._value(what, "value")
        if (self._var.aval.is_float and not RULE_GIVEN.depth
                and self._trace.carries_derivative(self._var) and not user_decides()):          # (`if float(x) > tol:` drops nothing)
            _dropped_derivative(self, what)
        return value

    def __bool__(self):
        return bool(self._value("Python `if`, `while`, `and`/`or` or bool()", "bool"))

    def __float__(self):
        return float(self._number("float()"))

    def __int__(self):               # (an integer has no derivative: int(x) drops none)
        return int(self._value("int()", "value"))

    def __complex__(self):
        return complex(self._number("complex()"))

    def __index__(self):
        if self.ndim:                # as NumPy: only a 0-d array is an index (else: __array__)
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        what = "Using it as a Python index (range(), list index, a NumPy array's index) or int()"
        value = self.known_value("value")
        if value is None:
            raise self._concrete_error(what, SLICE_HINT)
        return operator.index(value[()])

    def item(self, *args):
        return self._number(".item()").item(*args)

    def tolist(self):
        return self._number(".tolist()").tolist()

    def __array__(self, dtype=None, copy=None):
        message = foreign_call_message(sys._getframe(1))   # a SciPy function converting it
        if message is not None:
            raise ConcretizationError(message)
        caller = _numpy_caller()
        if caller is not None and caller in NAMESPACE:
            raise ConcretizationError(
                f"np.{caller} converts its arguments to NumPy arrays, which a traced value "
                f"cannot become{where(user_frame())}. Use fnp.{caller} (import funcgrad.numpy "
                "as fnp): it takes traced values, and lists of them (or make the list an array "
                "first with fnp.array(list) or fnp.stack(list)).")
        expr = user_expression()
        what = "Converting to a NumPy array" + (f" ({expr})" if expr else "")
        if self.dtype.kind in "iub":     # indices, a mask: values without a derivative
            value = self.known_value("value")
            if value is None:
                raise self._concrete_error(what, MASK_HINT if self.dtype.kind == "b"
                                           else INDEX_HINT)
            return np.array(value, dtype=dtype, copy=True)
        if self._trace.value_of(self._var) is not None:
            raise ConcretizationError(float_array_message(
                expr, user_frame(), self._trace.depends_on(self._var)))
        raise self._concrete_error(what, LIST_HINT)

    # -- NumPy protocols ------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if out is not None:
            raise out_error(ufunc.__name__)
        if method == "__call__":
            name = ufunc.__name__
        elif method == "outer" and ufunc.nin == 2 and ufunc.__name__ in NAMESPACE:
            a, b = (NAMESPACE["asarray"](v) for v in inputs)      # a[..., None, ...] op b
            a = NAMESPACE["reshape"](a, a.shape + (1,) * b.ndim)
            return NAMESPACE[ufunc.__name__](a, b, **kwargs)
        elif method == "at":
            raise MutationError(f"np.{ufunc.__name__}.at(a, indices, ...) writes into `a` in "
                                f"place{where(user_frame())}; traced arrays are immutable. Use "
                                "a.at[indices].add(b) (or .multiply, .min, .max, .set), which "
                                "returns the updated array.")
        else:
            name = _UFUNC_METHODS.get((method, ufunc.__name__))
            kwargs.setdefault("axis", 0)          # ufunc.reduce/accumulate default to axis 0
            if name is None and method in ("reduce", "accumulate") and ufunc.__name__ in NAMESPACE:
                return NAMESPACE[f"_ufunc_{method}"](ufunc, *inputs, **kwargs)
        if getattr(np, ufunc.__name__, None) is not ufunc:    # another library's ufunc
            fn = FOREIGN_UFUNCS.get((_ufunc_module(ufunc), ufunc.__name__))
            if fn is None or method != "__call__":
                raise _foreign_ufunc(ufunc)
            return fn(*inputs, **kwargs)
        fn = NAMESPACE.get(name) if name else None
        if fn is None:
            what = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
            raise _unsupported(what)
        return fn(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        module = func.__module__ or ""
        table = {"numpy": NAMESPACE, "numpy.linalg": LINALG, "numpy.fft": FFT}.get(module, {})
        fn = table.get(func.__name__)
        if fn is None:
            raise _unsupported(f"{module.replace('numpy', 'np', 1)}.{func.__name__}")
        if fn is func:         # NumPy's own function (a constructor from shapes): run its code
            return func._implementation(*args, **kwargs)     # without dispatching here again
        return fn(*args, **kwargs)


def _dropped_derivative(x, what):
    """float(x), math.sin(x), x.item(), y[i] = x ... of a value that carries a derivative:
    warn at the user's line (fg.config.dropped_derivative says whether, or raise)."""
    mode = config.dropped_derivative
    if mode == "ignore":
        return
    src = user_frame()
    message = dropped_derivative_message(user_expression() or what, src,
                                         x._trace.depends_on(x._var))
    if mode == "error":
        # NumPy turns a TypeError from __float__ into "setting an array element with a
        # sequence" (y[0] = x): trace_flat raises this one instead of what comes out
        _PENDING[0] = ConcretizationError(message)
        raise _PENDING[0]
    warn_at(src, message, DroppedDerivativeWarning)


_PENDING = [None]      # the error of a dropped derivative (fg.config) that NumPy may replace


def _numpy_caller():
    """The name of the NumPy function the user called that is converting a traced value
    (np.full(3, x) -> 'full'), or None when the user converted it themselves."""
    frame, name = sys._getframe(2), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "numpy" or module.startswith("numpy."):
            name = frame.f_code.co_name
        elif not module.startswith("funcgrad"):
            break
        frame = frame.f_back
    return None if name in (None, "asarray", "array", "asanyarray") else name


def _ufunc_module(ufunc):
    special = sys.modules.get("scipy.special")
    return "scipy.special" if getattr(special, ufunc.__name__, None) is ufunc else None


def _foreign_ufunc(ufunc):
    """A ufunc that is neither NumPy's nor one fg.scipy.special provides: name it as the user
    wrote it and say what to use instead."""
    name, mod = ufunc.__name__, _ufunc_module(ufunc) or "a library"
    return UnsupportedFunctionError(
        f"{mod}'s ufunc {name} cannot take traced values{where(user_frame())}: funcgrad does "
        f"not know its derivative or compiled form (fg.scipy.special lists the SciPy functions "
        f"it does). Write it with funcgrad.numpy functions, or call it through "
        f"fg.pure_callback({mod}.{name}, x, x) inside an fg.custom_vjp that gives its "
        f"derivative.")


def _unsupported(name):
    return UnsupportedFunctionError(
        f"{name} is not supported on traced values{where(user_frame())}. funcgrad implements "
        "the functions listed in funcgrad.numpy (dir(funcgrad.numpy)); write this step with "
        "those functions.")


_METHODS = ["sum", "mean", "prod", "max", "min", "var", "std", "cumsum", "cumprod", "argmax",
            "argmin", "all", "any", "clip", "dot", "squeeze", "swapaxes", "flatten", "ravel",
            "astype", "conj", "conjugate", "repeat", "take", "trace", "diagonal", "argsort",
            "round", "nonzero"]
for _name in _METHODS:
    setattr(Tracer, _name, _method(_name))


def _reshape_method(self, *shape, order="C"):
    shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) else shape
    return _ns("reshape")(self, shape, order=order)


def _transpose_method(self, *axes):
    axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)) else axes
    return _ns("transpose")(self, axes or None)


def _sort_method(self, *args, **kwargs):
    raise MutationError(f"x.sort() sorts in place{where(user_frame())}; traced arrays are "
                        "immutable. Use x = fnp.sort(x) instead.")


Tracer.reshape, Tracer.transpose, Tracer.sort = _reshape_method, _transpose_method, _sort_method
Tracer.copy = lambda self: self
