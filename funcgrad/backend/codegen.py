"""Program -> Python source for one Numba function.

Variables keep the names `make_ir` prints (a, b, c, ...; Python keywords get a trailing `_`),
sub-programs' variables included: a loop body or branch is written inline (backend/loop_emitters.py),
its input variables bound to the loop's carries.
0-d values are scalars, everything else arrays. Loop groups become one loop nest each: array
inputs are loaded once per iteration (`b_i = b[i0, i1]`), elementwise results are scalar locals
(`c_i`), and only values needed outside the loop are stored. Array statements come from
lowerings.py, or call the primitive's NumPy implementation in `numba.objmode`. A large
program's code is cut into several functions (split.py).
No user string is ever pasted into the source: names are generated, literals are numbers
formatted with repr, and parameters pass through `_fmt`, which accepts only numbers, dtypes and
tuples of them.
"""
from __future__ import annotations

import keyword
import re
from collections import Counter

import numpy as np

from ..ir import Lit, Program, Var, _Printer, sub_programs
from . import check_code, split
from .fusion import (literal_broadcasts, materialized, packs, partition, scatter_plan,
                     use_counts, first_writes)
from .loop_reductions import COLUMN_ROWS, Reductions, parallel_need
from .lowerings import lowering, role, slice_positions
from .source_text import copy_lines, dtype_text, literal, numba_type, printable
from .scalar_code import fast_math_template, scalar_template, vecmath_calls

RESERVED = set(keyword.kwlist) | {"np", "numba", "math", "range", "len", "min", "max", "abs"}


def _fmt(v):
    """A static parameter as source text (numbers, dtypes and tuples of them only)."""
    if isinstance(v, np.dtype):
        return dtype_text(v)
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, tuple):
        return "(" + "".join(_fmt(x) + ", " for x in v) + ")"
    if v is None:
        return "None"
    raise TypeError(f"parameter {v!r} cannot be written into generated code")


# a loop with vecmath calls sums its terms after it (LoopEmitter.defer_sums); off: in it
DEFER_SUMS = True


_comment = printable       # text safe inside a # comment

# `# prim  (file:line (in f))`: the comment each statement's lines start with
_LOCATED = re.compile(r"^( *# \w+)  \(.*\)$", re.M)


def without_locations(source):
    """The generated source as it is compiled: the user's file and line left out of the
    comments (the same program compiles to the same text, and hits the disk cache, wherever
    its code lives; line numbers are unchanged, so errors still map to the located source)."""
    return _LOCATED.sub(r"\1", source)


class Source:
    """Lines of the function body with indentation."""

    def __init__(self):
        self.lines, self.depth = [], 1

    def emit(self, line):
        self.lines.append("    " * self.depth + line)


DEFER_SCATTER_SIZE = 256      # smaller loops keep their scatter-adds in them (LoopEmitter)
PARALLEL_MIN_SIZE = 1 << 15   # smaller loops are not worth starting threads for


class Generator:
    def __init__(self, prog: Program, name="kernel", parallel=False, exits=()):
        self.prog, self.fn_name, self.parallel = prog, name, parallel
        # var id -> the truth value a path was traced with: the kernel returns as soon as the
        # decision comes out otherwise (api/jit.py; the caller sees the guard fail)
        self.exits = {prog.outs[k].id: want for k, want in exits
                      if isinstance(prog.outs[k], Var) and prog.outs[k].aval.ndim == 0}
        printer = _Printer(source_info=False)
        printer.program(prog, 0)
        self.names = {vid: (n + "_" if n in RESERVED else n) for vid, n in printer.names.items()}
        self.own_names = dict(self.names)       # before any alias (see alias)
        self.consts: list = []          # non-scalar literals, passed as extra arguments
        self.const_names: dict[int, str] = {}
        self.impls: dict[str, object] = {}   # objmode helpers, by name
        # the user's line of each value an error can be raised for (an index out of range, an
        # objmode helper's failure), by name: kept out of the compiled text, which is the
        # same wherever the user's code lives (compile.py maps the name back)
        self.where: dict[str, str] = {}
        self.helpers: list[str] = []         # source of helper functions placed before the kernel
        self.src = Source()
        self.weights: dict = {}         # id(program) -> equations in it (split.weight)
        # a large program is split into parts (split.py) and calls vecmath's compiled-once
        # functions instead of inlining them
        self.large = (split.weight(prog, self.weights) > split.SPLIT_SIZE
                      or vecmath_calls(prog) > split.INLINE_CALLS)
        self.parts = 0
        self.chunk_loops = 0            # loops run as chunks in parallel (loop_reductions.py)
        self.uses, self.inputs, self.producer = {}, set(), {}
        self.lit_values = {}            # var id -> scalar: the value of a broadcast literal
        self.steps = []     # (step expression, kind) of each loop being emitted (check_code.py)
        self.fills, self.firsts, self.tails = {}, set(), set()   # (fusion.first_writes)
        self.packs: dict[int, list] = {}     # id(concatenate) -> the values it packs (fusion.packs)
        self.unused: set[int] = set()        # id(reshape) whose only reader is such a pack
        self.in_var_uses: Counter = Counter()   # var id -> sub-programs with it as an input
        # while a loop body is emitted (control._StepBuffers): var id -> the slice of a stacked
        # output it is written into, or the lines run once before the loop that allocate it
        self.slots, self.slots_used, self.hoists = {}, set(), {}
        self._scan(prog)
        self.nested = 0                 # > 0 while emitting a loop body or branch
        self.dim_names = {}
        for v in prog.in_vars:
            for k, d in enumerate(v.aval.shape):
                self.dim_names.setdefault(d, f"{self.names[v.id]}.shape[{k}]")

    def _scan(self, prog):
        """Use counts and input variables of prog and every sub-program in it."""
        for k, n in use_counts(prog).items():
            self.uses[k] = self.uses.get(k, 0) + n
        self.inputs.update(v.id for v in prog.in_vars)
        self.lit_values.update((vid, lit.val) for vid, lit in literal_broadcasts(prog).items())
        found, readers = packs(prog)
        self.packs.update(found)
        self.unused |= readers
        for e in prog.eqns:
            self.producer.update((v.id, e.prim) for v in e.outputs)
            for sub in sub_programs(e.params):
                self.in_var_uses.update(v.id for v in sub.in_vars)
                self._scan(sub)

    def vecmath(self, template):
        """A scalar template, calling vecmath's compiled-once functions in a large program."""
        return template.replace("_vm.", "_vm.outlined.") if self.large else template

    def fresh(self, x):
        """x is an array this kernel allocates on every call: not an input, a constant, a loop
        carry or a result that may be a view of another array (a reshape, an alias)."""
        p = self.producer.get(x.id) if isinstance(x, Var) else None
        return (p is not None and (p.elementwise or lowering(p).fresh)    # elementwise: in loops
                and x.id not in self.inputs)

    def zeros(self, x):
        """x is a buffer of +0.0 (or 0) this kernel makes and reads nowhere else."""
        v = self.lit_values.get(x.id) if isinstance(x, Var) else None
        return v is not None and x.aval.dtype.kind in "fiu" and v == 0 and not np.signbit(v) and self.owns(x)

    def split_body(self, g):
        """A loop group whose body is written as calls to parts (split.py)."""
        return self.large and len(g.eqns) > split.CHUNK_SIZE

    def planned(self, g):
        """A loop group's scatter-adds are written as fusion.scatter_plan says."""
        return bool(g.shape) and not self.split_body(g) and int(np.prod(g.shape)) >= DEFER_SCATTER_SIZE

    def owns(self, x):
        """x is fresh and read nowhere else, so an update may write into it (others are
        copied first)."""
        return self.fresh(x) and self.uses.get(x.id) == 1

    @staticmethod
    def heavy(*progs):
        """Whether a loop step does array work or runs inner loops (microseconds or more)."""
        return any(v.aval.ndim > 0 or lowering(e.prim).structured is not None
                   for p in progs for e in p.eqns for v in e.outputs)

    @staticmethod
    def escaping(prog):
        """Var ids of prog whose arrays may outlive one run of it: its results, and what they
        may be views of (inputs of equations whose code does not always allocate its results;
        a fused scatter writes into its buffer)."""
        out = {o.id for o in prog.outs if isinstance(o, Var)}
        for e in reversed(prog.eqns):
            new = e.prim.elementwise or (lowering(e.prim).fresh and role(e) != "scatter")
            if not new and any(v.id in out for v in e.outputs):
                out.update(v.id for v in e.inputs if isinstance(v, Var))
        return out

    # -- atoms ----------------------------------------------------------------------------------
    def name(self, v):
        if isinstance(v, Lit):
            if v.aval.ndim == 0:
                return literal(v.val, v.aval.dtype)
            if id(v) not in self.const_names:
                self.const_names[id(v)] = f"const{len(self.consts)}"
                self.consts.append(np.ascontiguousarray(v.val))
            return self.const_names[id(v)]
        return self.names[v.id]

    def dim(self, d):
        """A loop bound or allocation size: read from an input's shape when one has that size,
        so that the source (and the compiled kernel) is shared by calls of other sizes."""
        return self.dim_names.get(d, str(d)) if d >= 2 else str(d)

    def dims(self, shape):
        return "(" + "".join(f"{self.dim(d)}, " for d in shape) + ")"

    # -- whole function -------------------------------------------------------------------------
    def emit_step(self, prog, step, kind):
        """prog as the body of a loop ("scan", "while_loop") whose step is the expression
        `step`: checks in it report that step (check_code.py)."""
        self.steps.append((step, kind))
        self.emit_program(prog)
        self.steps.pop()

    def emit_program(self, prog):
        """The equations of prog (the kernel, or a loop body / branch at the current depth);
        in parts (split.py) when the program is large."""
        order = partition(prog, self.exits if prog is self.prog else ())
        need = materialized(prog, order)
        for have, found in zip((self.fills, self.firsts, self.tails), first_writes(order, self.zeros, self.planned)):
            have.update(found)
        if not (self.large and split.weight(prog, self.weights) > split.CHUNK_SIZE):
            exits = self.exits if prog is self.prog else {}
            for g in order:
                self.emit_group(g, need)
                for e in g.eqns if exits else ():
                    for v in e.outputs:
                        if v.id in exits:
                            self.exit(v, exits.pop(v.id))
            return
        units = [split.Unit(self.capture(self.emit_group, g, need),
                            sum(split.eqn_weight(e, self.weights) for e in g.eqns)) for g in order]
        split.outline(self, units, {self.name(o) for o in prog.outs})

    def emit_group(self, g, need):
        if g.is_loop:
            LoopEmitter(self, g, need).emit()
        else:
            self.statement(g.eqns[0])

    def capture(self, emit, *args):
        """The unindented lines that emit(*args) writes."""
        outer, self.src = self.src, Source()
        self.src.depth = 0
        try:
            emit(*args)
            return self.src.lines
        finally:
            self.src = outer

    def assign(self, targets, values):
        """`a, b = x, y` (names of sub-program inputs bound to outer values)."""
        pairs = [(t, v) for t, v in zip(targets, values) if t != v]
        if pairs:
            self.src.emit(", ".join(t for t, _ in pairs) + " = " + ", ".join(v for _, v in pairs))

    def alias(self, vars_, texts):
        """Write variables as other names (or literals) from here on instead of copying them
        (`f = a`): only values no code assigns while the alias is read (a loop's constants)."""
        for v, t in zip(vars_, texts):
            self.names[v.id] = t

    def unalias(self, vars_):
        """Variables code assigns get their own names back (a shared sub-program's aliases)."""
        for v in vars_:
            self.names[v.id] = self.own_names[v.id]

    def generate(self):
        body = self.src
        self.emit_program(self.prog)
        outs = [self.name(o) for o in self.prog.outs]
        body.emit("return (" + "".join(o + ", " for o in outs) + ")")
        args = [self.names[v.id] for v in self.prog.in_vars] + [f"const{i}" for i in range(len(self.consts))]
        header = f"def {self.fn_name}({', '.join(args)}):"
        return "\n".join(self.helpers + [header] + body.lines) + "\n"

    def exit(self, v, want):
        """`if <the decision came out otherwise>: return` (a failed guard), with placeholders
        of the right types for the results not computed yet."""
        outs = []
        for o in self.prog.outs:
            if isinstance(o, Lit) or o.id == v.id:
                outs.append(self.name(o))
            elif o.aval.ndim == 0:
                dt = o.aval.dtype
                outs.append(f"{dtype_text(dt)}(0)" if dt.kind == "c" else literal(0, dt))
            else:
                outs.append(f"np.empty({(0,) * o.aval.ndim}, {dtype_text(o.aval.dtype)})")
        test = f"not {self.name(v)}" if want else self.name(v)
        self.src.emit(f"if {test}:     # a guard failed: another path")
        self.src.emit("    return (" + "".join(o + ", " for o in outs) + ")")

    def statement(self, e):
        outs = [self.names[v.id] for v in e.outputs]
        ins = [self.name(v) for v in e.inputs]
        if lowering(e.prim).renames:        # outputs are (the first) inputs: no copies
            self.alias(e.outputs, ins)
            return
        if id(e) in self.unused:            # read only by a pack, which reads its input instead
            return
        low = lowering(e.prim)
        structured = low.structured
        if structured is not None:
            self.src.emit(f"# {e.prim.name}" + (f"  ({_comment(e.src)})" if e.src is not None else ""))
            self.nested += 1
            structured(self, outs, ins, e)
            self.nested -= 1
            return
        lower = self.pack if id(e) in self.packs else low.statement
        if e.src is not None and outs:
            self.where[outs[0]] = _comment(e.src.long())
        lines = (None if lower is None else lower(outs, ins, e, self.steps) if low.check
                 else lower(outs, ins, e))      # (a check: the steps of the loops around it)
        if lines is None:
            lines = self.objmode(outs, ins, e)
        hoist = self.hoists.get(e.outputs[0].id)
        if hoist is not None and lines and lines[0].startswith(f"{outs[0]} = np.empty("):
            hoist.append(lines[0])          # (a lowering that fills a new array)
            lines = lines[1:]
        self.src.emit(f"# {e.prim.name}" + (f"  ({_comment(e.src)})" if e.src is not None else ""))
        for line in lines:
            self.src.emit(line)

    def pack(self, outs, ins, e):
        """`o = np.empty(shape)` and `o[..., k] = value_k` along the concatenation's axis."""
        (o,), out, axis = outs, e.outputs[0].aval, e.params["axis"]
        shape = "(" + "".join(f"{d if k == axis else self.dim(d)}, "
                              for k, d in enumerate(out.shape)) + ")"
        lines = [f"{o} = np.empty({shape}, {dtype_text(out.dtype)})"]
        for k, v in enumerate(self.packs[id(e)]):
            if v.aval.ndim and isinstance(v, Var):      # (element by element: copy_lines)
                lines += copy_lines(o, self.name(v), v.aval.ndim,
                                    lambda c, k=k: [*c[:axis], str(k), *c[axis:]])
            else:
                lines.append(f"{o}[{''.join(':, ' for _ in range(axis))}{k}] = {self.name(v)}")
        return lines

    def objmode(self, outs, ins, e):
        """Call the primitive's NumPy implementation from compiled code (slow path).
        `impls[helper]` = (primitive, params, output avals, the helper's name: an error it
        raises names it, and the kernel's caller the user's line, `where`); compile.py builds
        the callable."""
        helper = f"_impl{len(self.impls)}_{e.prim.name}"
        self.impls[helper] = (e.prim, dict(e.params), [v.aval for v in e.outputs], helper)
        if e.src is not None:
            self.where[helper] = _comment(e.src.long())
        used = [self.uses.get(v.id, 0) > 0 for v in e.outputs]
        types = ", ".join(f"{o}='{numba_type(v.aval)}'" for o, v, u in zip(outs, e.outputs, used) if u)
        target = ", ".join(o if u else "_" for o, u in zip(outs, used)) + ("," if len(outs) == 1 else "")
        block = lambda args: [f"with numba.objmode({types}):",
                              f"    {target} = {helper}({', '.join(args)})"]
        if not self.nested:
            return block(ins)
        # Inside a loop or branch, an objmode block can break Numba's code generation
        # ("Instruction does not dominate all uses", numba#9574): give it a function of its own.
        fn = "_om" + helper[len("_impl"):]
        params = [f"p{k}" for k in range(len(ins))]
        block = block(params)
        got = [o for o, u in zip(outs, used) if u]
        self.helpers += (["@numba.njit(error_model='numpy')", f"def {fn}({', '.join(params)}):"]
                         + ["    " + line for line in block]
                         + [f"    return ({''.join(o + ', ' for o in got)})", ""])
        return [f"({''.join(o + ', ' for o in got)}) = {fn}({', '.join(ins)})"]


class LoopEmitter:
    """Emit one loop group."""

    def __init__(self, gen: Generator, group, need):
        self.gen, self.g, self.need = gen, group, need
        self.shape = group.shape
        # a dimension of size 1 has no loop: its index is 0
        self.idx = ["0" if n == 1 else f"i{k}" for k, n in enumerate(self.shape)]
        self.local: dict[int, str] = {}       # var id -> scalar expression inside the loop
        self.loaded: dict[str, str] = {}      # array name -> its element's local
        self.members = {v.id for e in group.eqns for v in e.outputs}
        # a large loop's body is written as calls to parts (split.py), run serially
        self.split_body = gen.split_body(group)
        # a loop with vectorisable math (vecmath) keeps its full sums out of it: a running
        # compensated sum is a serial chain that stops LLVM vectorising the whole loop (the
        # logistic loss's loop: 38 us scalar, 8.5 us with the terms summed after it)
        self.defer_sums = DEFER_SUMS and bool(self.shape) and any(
            lowering(e.prim).vecmath == "fast" for e in group.eqns) and not self.split_body
        # scatter-adds into one buffer at different offsets (x[1:] and x[:-1] in Rosenbrock's
        # gradient) make iteration i+1 read what iteration i wrote: LLVM does not vectorise
        # that. See fusion.scatter_plan: each element still gets its terms in the interpreter's order
        self.plan = scatter_plan(group.eqns, self.idx) if gen.planned(group) else {}
        self.later: list[tuple[str, str]] = []    # (buffer[position], stored term) after it
        # parallel=True: None (serial), "prange" or "chunks" (loop_reductions.py)
        self.mode, self.rows = self.parallel_mode()
        self.reductions = Reductions(self)     # (and the chunks of a parallel loop)

    def index(self, positions):
        return "[" + ", ".join(positions) + "]" if positions else ""

    def read(self, v):
        """Scalar expression for atom v at the current iteration."""
        if isinstance(v, Lit) and v.aval.ndim == 0:
            return literal(v.val, v.aval.dtype)
        if isinstance(v, Var) and v.id in self.local:
            return self.local[v.id]
        if isinstance(v, Var) and v.id in self.gen.lit_values:      # same value everywhere
            return literal(self.gen.lit_values[v.id], v.aval.dtype)
        name = self.gen.name(v)
        if v.aval.ndim == 0:
            return name
        local = self.loaded.get(name)
        if local is None:                 # (two variables may be written as one name)
            local = self.loaded[name] = f"{name}_i"
            self.body.append(f"{local} = {name}{self.index(self.idx)}")
        if isinstance(v, Var):
            self.local[v.id] = local
        return local

    def read_mapped(self, v, e):
        """Input of a broadcast or transpose, read at the remapped position."""
        if v.aval.ndim == 0 or (isinstance(v, Var) and v.id in self.gen.lit_values):
            return self.read(v)
        pos = lowering(e.prim).index_map(e, v.aval.shape, self.shape, self.idx)
        return f"{self.gen.name(v)}{self.index(pos)}"

    def sin_cos_twins(self):
        """Twins (sin and cos) of the same value in this loop: {first eqn: the other}, so that
        one shared range reduction computes both (the entries' `twin`, lowerings.py)."""
        if not self.shape:
            return {}
        seen, twins = {}, {}
        for e in self.g.eqns:
            twin = lowering(e.prim).twin
            if twin is not None and fast_math_template(e):
                key = (id(e.inputs[0]) if isinstance(e.inputs[0], Lit) else e.inputs[0].id,
                       e.outputs[0].aval.dtype, twin[0])
                other = seen.get((key, 1 - twin[1]))
                if other is not None and other not in twins:
                    twins[other] = e
                seen.setdefault((key, twin[1]), e)
        return twins

    def emit(self):
        src, gen = self.gen.src, self.gen
        self.body, pre, post = [], [], []
        # statements just before / just after the loop over index k (at depth k)
        self.level_pre, self.level_post = {}, {}
        if self.mode == "chunks":
            pre.append(self.reductions.chunk_setup(self.rows))
        twins = self.sin_cos_twins()
        starts = []                     # where each equation's lines begin in self.body
        for e in self.g.eqns:
            starts.append(len(self.body))
            out = e.outputs[0]
            oname = gen.names[out.id]
            kind = role(e)
            if kind in ("reduction", "scatter", "check"):     # LoopEmitter.reduction, ...
                getattr(self, kind)(e, oname, pre, post)
                continue
            local = f"{oname}_i" if self.shape else oname
            x = e.inputs[0] if kind == "index_map" else None   # spreads a scalar or literal?
            spread = self.read(x) if x is not None and (
                x.aval.ndim == 0 or (isinstance(x, Var) and x.id in gen.lit_values)) else None
            if out.id in self.local:                  # computed together with its sin/cos twin
                pass
            elif spread is not None:        # the same value at every index: written inline
                self.local[out.id] = spread
                if not self.shape:
                    gen.alias([out], [spread])
                elif out.id in self.need and not self.store(out, oname, spread, pre):
                    dims, dt, rest = gen.dims(self.shape), dtype_text(out.aval.dtype), gen.fills.get(out.id)
                    pre.append(f"{oname} = np.full({dims}, {spread}, {dt})" if rest is None else
                               f"{oname} = np.empty({dims}, {dt})")        # (first_writes)
                    pre += [f"{oname}[{a}:{b}] = {spread}" for a, b in rest or ()]
                continue
            elif kind == "index_map":
                self.body.append(f"{local} = {self.read_mapped(e.inputs[0], e)}")
            elif e in twins:
                twin = twins[e]
                twin_local = f"{gen.names[twin.outputs[0].id]}_i"
                function, position = lowering(e.prim).twin
                both = [twin_local, twin_local]
                both[position] = local
                fn = gen.vecmath(fast_math_template(e, function))
                self.body.append(f"{', '.join(both)} = {fn.format(self.read(e.inputs[0]))}")
                self.local[twin.outputs[0].id] = twin_local
            else:
                template = gen.vecmath(scalar_template(e, bool(self.shape)))
                params = {k: (dtype_text(p) if isinstance(p, np.dtype) else _fmt(p))
                          for k, p in e.params.items() if "{" + k in template}
                expr = template.format(*[self.read(v) for v in e.inputs], **params)
                dt = out.aval.dtype
                if dt.kind in "iu" and dt.itemsize < 8:     # Numba computes small ints as int64
                    expr = f"{dtype_text(dt)}({expr})"
                self.body.append(f"{local} = {expr}")
            self.local[out.id] = local
            if out.id in self.need and self.shape:
                self.store(out, oname, local, pre, new=True)
        names = ", ".join(e.prim.name for e in self.g.eqns)
        if self.split_body:
            counts = Counter(e.prim.name for e in self.g.eqns)
            names = f"{len(self.g.eqns)} equations in parts (" + ", ".join(
                f"{n} {k}" for k, n in counts.items()) + ")"
        # no loop when its body is empty (values written inline); loops of size 0 stay (code
        # that never runs may be the only reader of an objmode result, which Numba requires)
        if not self.body:
            if pre or post:
                src.emit(f"# {names}: the same value everywhere")
            for line in pre + post:
                src.emit(line)
            return
        src.emit(f"# fused loop over {gen.dims(self.shape)}: {names}")
        for line in pre:
            src.emit(line)
        outer = "numba.prange" if self.mode else "range"
        opened = [n != 1 for n in self.shape]       # a dimension of size 1 has no loop
        chunk = self.reductions.chunk
        if chunk:
            self.reductions.open_chunks(src)
        for k, n in enumerate(self.shape):
            for line in self.level_pre.get(k, ()):
                src.emit(line)
            if k == 0 and chunk:      # (counted from 0: see loop_reductions.open_chunks)
                j, lo, hi = f"pj{chunk[0][2:]}", chunk[2], chunk[3]
                src.emit(f"for {j} in range({hi} - {lo}):")
                src.emit(f"    i0 = {lo} + {j}")
                src.depth += 1
            elif opened[k]:
                src.emit(f"for i{k} in {outer if k == 0 else 'range'}({gen.dim(n)}):")
                src.depth += 1
        if self.split_body:
            ends = starts[1:] + [len(self.body)]
            after = [line for lines in (*self.level_pre.values(), *self.level_post.values(), post)
                     for line in lines]
            kept = [gen.names[v.id] for e in self.g.eqns for v in e.outputs if v.id in self.need]
            units = [split.Unit(self.body[a:b], 1) for a, b in zip(starts, ends) if b > a]
            split.outline(gen, units, split.Unit(after, 0).reads + kept)
        else:
            for line in self.body:
                src.emit(line)
        for k in reversed(range(len(self.shape))):
            if opened[k]:
                src.depth -= 1
            for line in self.level_post.get(k, ()):
                src.emit(line)
        if chunk:
            self.reductions.close_chunks(src)
        for line in post:
            src.emit(line)
        for target, term in self.later:           # deferred scatter-adds, each its own loop
            for k, n in enumerate(self.shape):    # (one-to-one positions: prange is safe)
                if opened[k]:
                    src.emit(f"for i{k} in {outer if k == 0 else 'range'}({gen.dim(n)}):")
                    src.depth += 1
            src.emit(f"{target} += {term}")
            src.depth -= sum(opened)

    def store(self, out, oname, local, pre, new=False):
        """Store a result needed outside the loop into a slice of the stacked output of the
        loop body it is in, a buffer allocated before that loop, or (`new`) a new array."""
        gen = self.gen
        slot, hoist = gen.slots.get(out.id), gen.hoists.get(out.id)
        if slot is not None:
            gen.slots_used.add(out.id)
            pre.append(f"{oname} = {slot}")
        elif hoist is not None or new:
            alloc = f"{oname} = np.empty({gen.dims(self.shape)}, {dtype_text(out.aval.dtype)})"
            (hoist if hoist is not None else pre).append(alloc)
        else:
            return False
        self.body.append(f"{oname}{self.index(self.idx)} = {local}")
        return True

    def parallel_mode(self):
        """(mode, outer iterations per chunk at least): how the outer loop runs in parallel,
        from what each equation needs (loop_reductions.parallel_need)."""
        if (not self.gen.parallel or self.gen.nested or self.split_body or not self.shape
                or self.shape[0] == 1 or int(np.prod(self.shape)) < PARALLEL_MIN_SIZE):
            return None, 1
        needs = {parallel_need(self, e) for e in self.g.eqns}
        if None in needs or ("columns" in needs and self.shape[0] < 2 * COLUMN_ROWS):
            return None, 1
        if needs <= {"prange"}:
            return "prange", 1
        return "chunks", COLUMN_ROWS if "columns" in needs else 1

    def reduction(self, e, oname, pre, post):
        self.reductions.reduction(e, oname, pre, post)

    def check(self, e, oname, pre, post):
        """fg.debug_nans's pointwise check (check_code.py)."""
        if self.shape:
            check_code.fused(self, e, oname, pre, post)
        else:
            check_code.scalar(self, e, oname)

    def scatter(self, e, oname, pre, post):
        """x.at[slices] op= u inside the loop: copy x once (or take it over when this is its
        only use, e.g. the buffer of an earlier scatter-add of the same loop)."""
        x, u = e.inputs[0], e.inputs[1]
        if self.gen.owns(x) and x.aval.ndim:        # written into x, named x
            self.gen.alias(e.outputs, [self.gen.name(x)])
            oname = self.gen.name(x)
        else:
            pre.append(f"{oname} = {self.gen.name(x)}" + ("" if x.aval.ndim == 0 else ".copy()"))
        pos = slice_positions(e.params["spec"], x.aval.shape, self.idx)
        op = {"add": "+=", "set": "=", "mul": "*="}[e.params["mode"]]
        target = oname if x.aval.ndim == 0 else f"{oname}{self.index(pos)}"
        how, first = self.plan.get(id(e), (None, None))
        if how == "next":       # the term of iteration i goes where iteration i + 1 adds
            carried, n = f"{oname}_next{len(pre)}", self.gen.dim(self.shape[0])
            if self.reductions.chunk:
                return self.reductions.chunk_carry(e, oname, carried, first, target, u, pre, post)
            pre.append(f"{carried} = {literal(0, u.aval.dtype)}")
            self.body += ["if i0 >= 1:", f"    {oname}{self.index(first)} += {carried}",
                          f"{carried} = {self.read(u)}"]
            last = re.sub(r"\bi0\b", f"({n} - 1)", target)
            store = f"= {literal(0, u.aval.dtype)} +" if id(e) in self.gen.tails else "+="
            post += [f"if {n} > 0:", f"    {last} {store} {carried}"]
            return
        if how == "pass":
            term = f"{oname}_at{len(self.later)}"
            pre.append(f"{term} = np.empty({self.gen.dims(self.shape)}, "
                       f"{dtype_text(u.aval.dtype)})")
            self.body.append(f"{term}{self.index(self.idx)} = {self.read(u)}")
            self.later.append((target, f"{term}{self.index(self.idx)}"))
            return
        if id(e) in self.gen.firsts:           # the first write to a zero buffer
            op = f"= {literal(0, u.aval.dtype)} +"
        self.body.append(f"{target} {op} {self.read(u)}")
