"""The typed IR: avals, variables, literals, equations, programs, primitives, and `bind`.

A Program is a flat SSA list of equations `outs = prim[params] ins` over typed variables.
Every equation records the user's source line that created it. Sub-programs live in params.

Owns: Aval, Var, Lit, Eqn, Program, Primitive, the trace stack and `bind` (the one point
where a primitive call is intercepted). Imports only funcgrad._errors and funcgrad.ir_dot
(pictures of programs, which imports nothing of funcgrad).
"""
from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np

from . import ir_dot
from ._errors import EscapedTracerError, SourceInfo

__all__ = ["Aval", "Var", "Lit", "Eqn", "Program", "Primitive", "Traced", "bind",
           "aval_of", "check_program", "use_counts", "has_effect"]

_SHORT = {"float64": "f64", "float32": "f32", "float16": "f16", "int64": "i64", "int32": "i32",
          "int16": "i16", "int8": "i8", "uint8": "u8", "uint16": "u16", "uint32": "u32",
          "uint64": "u64", "bool": "bool", "complex128": "c128", "complex64": "c64"}


class Aval:
    """Abstract value: a shape and a NumPy dtype. Hashable; prints as f64[3,4].

    `weak` marks a traced Python number: in arithmetic it promotes like the Python scalar it
    came from (float32 array * weak f64 -> float32), as NumPy does with Python scalars."""

    __slots__ = ("shape", "dtype", "weak", "_hash")

    def __init__(self, shape, dtype, weak=False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak = weak
        self._hash = hash((self.shape, self.dtype, weak))

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __eq__(self, other):
        return (isinstance(other, Aval) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak == other.weak)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"{_SHORT.get(self.dtype.name, self.dtype.name)}[{','.join(map(str, self.shape))}]"

    @property
    def is_float(self):
        return self.dtype.kind in "fc"

    def __reduce__(self):               # (the hash is computed again in the receiving process)
        return (Aval, (self.shape, self.dtype, self.weak))


def aval_of(x) -> Aval:
    """The Aval of a traced value, NumPy array, NumPy scalar or Python scalar."""
    if isinstance(x, Traced):
        return x.aval
    if isinstance(x, (np.ndarray, np.generic)):
        return Aval(x.shape, x.dtype)
    return Aval((), np.asarray(x).dtype)


_var_ids = itertools.count()


class Var:
    """An SSA variable: identity plus an Aval."""

    __slots__ = ("aval", "id")

    def __init__(self, aval: Aval):
        self.aval = aval
        self.id = next(_var_ids)

    def __repr__(self):
        return f"Var#{self.id}:{self.aval}"

    def __reduce__(self):
        """Unpickled with a fresh id of the receiving process (ids number this process's
        variables; pickle's memo keeps one Var one object within a pickled program)."""
        return (Var, (self.aval,))


class Lit:
    """A constant operand (scalar or array) baked into a program."""

    __slots__ = ("val", "aval")

    def __init__(self, val):
        self.val = val
        self.aval = aval_of(val)

    def __repr__(self):
        return f"Lit({_fmt_lit(self)})"


def _fmt_lit(lit: Lit):
    v = np.asarray(lit.val)
    if v.ndim == 0:
        return f"{v.item()!r}:{lit.aval}"
    if v.size <= 4:
        return f"{np.array2string(v, separator=',')}:{lit.aval}"
    return f"const:{lit.aval}"


class Eqn:
    """`outputs = prim[params](*inputs)`, created at user source `src`."""

    __slots__ = ("prim", "inputs", "outputs", "params", "src")

    def __init__(self, prim, inputs, outputs, params, src: SourceInfo | None):
        self.prim, self.inputs, self.outputs, self.params, self.src = prim, inputs, outputs, params, src

    def __repr__(self):
        return _Printer().eqn(self, 0)


class Program:
    """A typed SSA program: input variables, equations, outputs (Var or Lit).

    Prints as text; in a notebook it draws itself as a graph when the optional `graphviz`
    package and Graphviz's `dot` program are installed; `to_dot()` gives the Graphviz source.

        >>> prog = fg.make_ir(lambda x: fnp.sum(x ** 2))(np.ones(3))
        >>> prog.in_avals, len(prog.eqns), prog.out_avals
        ([f64[3]], 2, [f64[]])
        >>> prog.to_dot().startswith("digraph")
        True
    """

    __slots__ = ("in_vars", "eqns", "outs")

    def __init__(self, in_vars, eqns, outs):
        self.in_vars, self.eqns, self.outs = list(in_vars), list(eqns), list(outs)

    in_avals = property(lambda self: [v.aval for v in self.in_vars])
    out_avals = property(lambda self: [o.aval for o in self.outs])

    def __str__(self):
        return self.pretty()

    __repr__ = __str__

    def pretty(self, source_info=True):
        """Readable listing; one equation per line, sub-programs indented."""
        return _Printer(source_info).program(self, 0)

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(self.pretty())

    def equation_count(self):
        """Equations, those of loop and branch bodies included (what compiling costs scales
        with)."""
        return sum(1 + sum(p.equation_count() for p in sub_programs(e.params))
                   for e in self.eqns)

    def to_dot(self, *, max_nodes=None, source_info=True) -> str:
        """Graphviz DOT source of the program: a node per equation (primitive, short params,
        inputs -> outputs, and the user's source line, in full in its tooltip), per input and
        per output; an edge from each variable's producer to its readers; the sub-programs of
        loops and branches as clusters. `max_nodes` caps the equations drawn (a note counts
        the rest). Render with `dot -Tsvg` or `graphviz.Source(text)`.

            >>> prog = fg.make_ir(lambda x: fg.fori_loop(0, 3, lambda i, c: c * 2.0, x))(1.0)
            >>> "subgraph cluster_" in prog.to_dot()
            True
        """
        printer = _Printer(source_info=False)
        printer.program(self, 0)          # names variables in the order print() does
        return ir_dot.to_dot(self, printer.name, max_nodes=max_nodes, source_info=source_info)

    def _repr_svg_(self):  # Jupyter: a picture when graphviz is installed; None declines
        return ir_dot.svg(lambda: self.to_dot(max_nodes=ir_dot.SVG_MAX_NODES))


class Traced:
    """Base class of values that stand for an array during tracing (see funcgrad.tracer)."""

    __slots__ = ()
    aval: Aval
    _trace: Any

    def weakened(self):
        """The same value, promoting like a Python number (see Aval.weak)."""
        raise NotImplementedError

    def known_value(self, kind="value"):
        """The concrete value this stands for in the call being traced (a NumPy array),
        recorded as a guard of that trace; None where the trace has no values (fg.jit, loop
        bodies, branches of fg.cond). See funcgrad.tracer."""
        return None

    def offset_from(self, other):
        """c where this value was recorded as other + c, c + other or other - (-c), c an
        integer constant (so x[i:i + k] is a slice of length k even where i has no value);
        else None."""
        return None


class Primitive:
    """A named operation and its rules; each rule is data, filled in where the primitive is defined.

    impl(*arrays, **params) evaluates with NumPy; abstract(*avals, **params) gives the output
    Aval(s); vjp(ct, *ins, out=..., **params) returns one cotangent (or None) per input;
    jvp(primals, tangents, **params) -> (outs, out tangents), None for a zero tangent (optional:
    derived from vjp when absent); batch(ins, flags, size, **params) -> outputs batched on
    axis 0; vjp_split: see transforms/vjp.py. opaque: the derivative is unknown (a host
    callback): its vjp rule raises, and forward mode raises where its tangent would be used.
    user_rule: the derivative is a rule the user gave (custom_vjp's bwd), which replaces the
    tangents of the inputs: an unknown (opaque) tangent there is not an error.
    fresh_params: names of params whose values are made unique per equation (ids that keep
    equations apart); two programs that differ only in those are the same computation.
    effect: the equation does something besides computing its outputs (fg.debug.print): it
    is never removed as dead code, merged with another or folded, and a loop or branch
    holding one is kept too (see `has_effect`).
    singular: the derivative can be infinite or NaN at finite inputs (sqrt at 0, log at 0,
    overflow of exp); True, False or a function of the params. Reverse mode applies the
    strong-zero rule to these (transforms/vjp.py).
    elementwise: the output is one scalar function of the operands' elements at the same
    position (operands of one shape, which the output has too): batching, fusion into loop
    nests and scalar replacement rely on it.
    exact: every correct evaluation gives the same bits (True, False, or a function of the
    equation): its results are exact or one correctly rounded IEEE-754 operation per element
    (+, -, *, /, sqrt, comparisons, moving data), so the interpreter's NumPy and a compiled
    kernel agree bit for bit (which NaN, its sign and payload, comes out where two NaNs meet
    is the one exception: LLVM may swap the operands of + and *). Not exact: sums and products
    over an axis (their order), transcendental functions (each library has its own
    approximation), BLAS and LAPACK, and what NumPy settles differently per CPU
    (maximum(0.0, -0.0)). fg.jit answers a first call from the interpreter only for programs
    of exact equations (`exact_program`).
    Rules of the simplification passes (transforms/simplify.py), for loops and branches:
    prune(eqn, used) -> the equation computing only the outputs marked used (and what they
    need), or None; aliases(eqn) -> {output index: an earlier output index of the same value};
    invariants(eqn) -> (output index, input index) of each carry the body passes through
    unchanged (the output is that input, whatever the trip count).
    stored(params) -> (trips, body, atoms): what a loop keeps once per iteration, the atoms of
    its sub-program `body`, and its trip count when known before it runs (scan's stacked
    outputs: its length; while_grad's tape: None, the tape grows as needed). fg.jit checks
    the memory of the first; fg.saved_residuals lists the second.
    Rules of the algebraic simplifications (fold_constants, absorb_scatter_adds):
    identity_input(eqn, value_of) -> the input the equation passes through unchanged (x * 1,
    a reshape to its own shape), or None; value_of(atom) is the one value all of an atom's
    elements hold, or None. merge(eqn, producer) -> one equation doing what producer and
    then eqn do (a transpose of a transpose), or None. repeats: each output element is a copy
    of an element of input 0, some copied many times (a broadcast: kept lazy, not folded into
    a literal). accumulates(params) -> the binary primitive with which the equation combines
    its other inputs into a copy of input 0 (scatter in add mode: add), or None.
    moves: each output element is a copy of an input element (reshape, gather, a choice
    between operands: select): the equation makes no new value, so no NaN or inf of its own
    (fg.debug_nans does not check it).
    """

    def __init__(self, name, *, impl, abstract, vjp=None, jvp=None, batch=None,
                 multiple_results=False, differentiable=True, elementwise=False, doc=None,
                 vjp_split=None, opaque=False, fresh_params=(), singular=False, effect=False,
                 exact=False, prune=None, aliases=None, invariants=None, stored=None,
                 user_rule=False, identity_input=None, merge=None, repeats=False,
                 accumulates=None, moves=False):
        self.name, self.vjp_split, self.opaque, self.exact = name, vjp_split, opaque, exact
        self.prune, self.aliases, self.invariants = prune, aliases, invariants
        self.stored, self.user_rule = stored, user_rule
        self.identity_input, self.merge = identity_input, merge
        self.repeats, self.accumulates, self.moves = repeats, accumulates, moves
        self.effect = effect
        self.fresh_params, self.singular = fresh_params, singular
        self.impl, self.abstract, self.vjp, self.jvp, self.batch = impl, abstract, vjp, jvp, batch
        self.multiple_results, self.differentiable = multiple_results, differentiable
        self.elementwise, self.__doc__ = elementwise, doc

    def bind(self, *args, **params):
        return bind(self, *args, **params)

    def __repr__(self):
        return f"Primitive({self.name})"

    def __reduce__(self):           # pickled by name: a program travels, its rules do not
        return (primitive_named, (self.name,))


PRIMITIVES: dict[str, Primitive] = {}     # by name; filled by primitives.base.define


def primitive_named(name):
    """The registered primitive `name` (how a pickled program names its primitives)."""
    prim = PRIMITIVES.get(name)
    if prim is None:
        raise LookupError(f"no funcgrad primitive named {name!r} in this process: the program "
                          "was pickled by a funcgrad that has it (a newer version?)")
    return prim


# ---- the trace stack and bind --------------------------------------------------------------

class _ThreadState(threading.local):
    """Tracing state, per thread (a background compile traces while the main thread does too)."""

    def __init__(self):
        self.stack = []           # the active traces, innermost last
        # While a program is re-evaluated under a transform, equations it stages keep the
        # user's source line of the equation they came from (set by interpreter and transforms).
        self.override = [None]
        # tiering watches an interpreted call: the first top-level program traced is appended
        self.observer = None


_state = _ThreadState()


class use_source:
    """Context manager: stage equations as if created at `src`."""

    def __init__(self, src):
        self.src = src

    def __enter__(self):
        override = _state.override
        self.prev, override[0] = override[0], self.src

    def __exit__(self, *exc):
        _state.override[0] = self.prev


class no_trace:
    """Context manager: evaluate concretely even while a trace is active (used by the NumPy
    implementations of primitives that run sub-programs)."""

    def __enter__(self):
        self.saved = _state.stack[:]
        del _state.stack[:]

    def __exit__(self, *exc):
        _state.stack[:] = self.saved


def sub_programs(params):
    """The Programs held in an equation's params (directly or in tuples)."""
    for v in params.values():
        if isinstance(v, Program):
            yield v
        elif isinstance(v, tuple):
            yield from (p for p in v if isinstance(p, Program))


def exact_program(prog):
    """Whether every equation of prog, and of the programs inside its loops and branches, is
    exact (Primitive.exact): then the interpreter computes the compiled kernel's bits."""
    for e in prog.eqns:
        exact = e.prim.exact
        if not (exact(e) if callable(exact) else exact):
            return False
        if not all(exact_program(p) for p in sub_programs(e.params)):
            return False
    return True


def real_operands(eqn):
    """An `exact` rule: exact for real operands (complex * and / are several roundings, in an
    order NumPy and Numba choose differently)."""
    return all(v.aval.dtype.kind != "c" for v in eqn.inputs)


def split_list(seq, *sizes):
    """seq cut into consecutive lists of the given sizes, plus the rest (how the inputs of a
    loop or branch equation are laid out: constants, carries, scanned arrays)."""
    out, k = [], 0
    for n in sizes:
        out.append(list(seq[k:k + n]))
        k += n
    out.append(list(seq[k:]))
    return out


def current_trace():
    stack = _state.stack
    return stack[-1] if stack else None


def bind(prim: Primitive, *args, **params):
    """Apply `prim`: record it into the innermost active trace if any argument is traced,
    otherwise evaluate it with NumPy."""
    for a in args:
        if isinstance(a, Traced):
            stack = _state.stack
            if not stack:
                raise EscapedTracerError(
                    f"a traced value ({a.aval}) was used after the transform that created it "
                    "had returned; return values from the function instead of storing them "
                    "in globals or closures")
            return stack[-1].record(prim, args, params)
    return prim.impl(*args, **params)


def bind_staged(prim: Primitive, *args, **params):
    """Like bind, but inside a trace record the equation even when every input is concrete.
    Used when a program is re-evaluated under a transform, so that its structure (a lazy
    broadcast of a scalar, say) survives instead of being evaluated into a large constant."""
    stack = _state.stack
    if stack:
        return stack[-1].record(prim, args, params)
    return prim.impl(*args, **params)


# ---- printing ------------------------------------------------------------------------------

def _names():
    for n in itertools.count(1):
        for combo in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=n):
            yield "".join(combo)


class _Printer:
    def __init__(self, source_info=True):
        self.names: dict[int, str] = {}
        self.gen = _names()
        self.source_info = source_info

    def name(self, v):
        if isinstance(v, Lit):
            return _fmt_lit(v)
        if v.id not in self.names:
            self.names[v.id] = next(self.gen)
        return self.names[v.id]

    def binder(self, v):
        return f"{self.name(v)}:{v.aval}"

    def program(self, prog: Program, indent: int):
        pad = " " * indent
        head = " ".join(self.binder(v) for v in prog.in_vars)
        lines = [f"{{ lambda {head} . let"]
        lines += [self.eqn(e, indent + 4) for e in prog.eqns]
        lines.append(f"{pad}  in ( {' '.join(self.name(o) for o in prog.outs)} ) }}")
        return "\n".join(lines)

    def param(self, k, v, indent):
        if isinstance(v, Program):
            return f"{k}=\n{' ' * (indent + 2)}{self.program(v, indent + 2)}"
        if isinstance(v, tuple) and v and all(isinstance(p, Program) for p in v):
            return f"{k}=(\n" + "".join(f"{' ' * (indent + 2)}{self.program(p, indent + 2)}\n"
                                        for p in v) + f"{' ' * indent})"
        return f"{k}={v!r}" if not isinstance(v, np.dtype) else f"{k}={v.name}"

    def eqn(self, e: Eqn, indent: int):
        pad = " " * indent
        outs = " ".join(self.binder(v) for v in e.outputs)
        params = ", ".join(self.param(k, e.params[k], indent) for k in sorted(e.params))
        params = f"[{params}]" if params else ""
        ins = " ".join(self.name(v) for v in e.inputs)
        line = f"{pad}{outs} = {e.prim.name}{params} {ins}".rstrip()
        if self.source_info and e.src is not None:
            line = f"{line:<60}  # {e.src}"
        return line


def has_effect(e) -> bool:
    """Whether equation e, or an equation of its sub-programs, has an effect (Primitive.effect)."""
    return e.prim.effect or any(has_effect(q) for p in sub_programs(e.params) for q in p.eqns)


def needed(prog: Program, var_ids):
    """The equations of prog that the variables var_ids depend on, and those with effects
    (with what they depend on), in program order."""
    live, kept = set(var_ids), []
    for e in reversed(prog.eqns):
        if any(v.id in live for v in e.outputs) or (e.prim.effect or (
                e.params and has_effect(e))):
            kept.append(e)
            live.update(v.id for v in e.inputs if isinstance(v, Var))
    kept.reverse()
    return kept


def use_counts(prog: Program):
    """var id -> how many equation inputs and program outputs read it."""
    uses: dict[int, int] = {}
    for atom in [v for e in prog.eqns for v in e.inputs] + list(prog.outs):
        if isinstance(atom, Var):
            uses[atom.id] = uses.get(atom.id, 0) + 1
    return uses


# ---- type checking -------------------------------------------------------------------------

def check_program(prog: Program):
    """Check that every variable is defined before use and every equation's types follow its
    primitive's shape/dtype rule. Raises TypeError naming the equation."""
    defined = {v.id for v in prog.in_vars}
    for e in prog.eqns:
        for v in e.inputs:
            if isinstance(v, Var) and v.id not in defined:
                raise TypeError(f"variable used before definition in: {e!r}")
        want = e.prim.abstract(*[v.aval for v in e.inputs], **e.params)
        want = list(want) if e.prim.multiple_results else [want]
        got = [v.aval for v in e.outputs]
        if want != got:
            raise TypeError(f"type mismatch: rule gives {want}, equation has {got}: {e!r}")
        defined.update(v.id for v in e.outputs)
    for o in prog.outs:
        if isinstance(o, Var) and o.id not in defined:
            raise TypeError(f"program output {o!r} is never defined")
    return True
