"""Large programs become several Numba functions of bounded size.

Why. A Python loop unrolled while tracing easily makes tens of thousands of equations, and
Numba's compile time grows faster than linearly with the size of one function. Most of it
came from vecmath's `inline="always"` functions (sin, exp, ...): Numba inlines their IR, dozens
of blocks each, at every call site, and its inlining and SSA passes then take time quadratic
in the blocks of the function (30 unrolled steps of `x + 1e-3 * sin(x) * x` under
jit(grad): 11 s; 60 steps: 36 s and 1 GB; 300: MemoryError or RecursionError). Without
them, LLVM's passes over one huge loop body still grow faster than linearly.

What. A program with more than SPLIT_SIZE equations (loop bodies and branches included), or
with more than INLINE_CALLS calls of vecmath functions, is *large*: its vecmath calls go to
compiled-once versions (vecmath.outlined), and its code is cut into *parts* of at most
CHUNK_SIZE equations, each a function that the enclosing code calls:

    @numba.njit(error_model='numpy', no_cpython_wrapper=True, no_cfunc_wrapper=True)
    def _part1(a, i0):
        a_i = a[i0]
        b_i, c_i = _vm.outlined.sin_cos_f64(a_i)
        ...
        return (f_i, c_i, )

    def kernel(a):
        ...
        for i0 in range(a.shape[0]):
            (f_i, c_i, ) = _part1(a, i0)
            (g_acc, g_c, ) = _part2(f_i, c_i, g_acc, g_c)

Consecutive fusion groups of a program are packed into parts. A fused loop with more
equations than a part keeps its loop nest where it is and calls parts for its body, so values
stay scalars and no array is stored that was not stored before (the loop runs serially). A
structured statement heavier than a part (a loop whose body is large) stays in place too, and
its body is split the same way. Each part takes the names it reads before assigning them and
returns those it assigns that later code reads, found in the generated text, so every emitter
works unchanged; names stay the ones `make_ir` prints. Other programs are generated exactly
as before. Imports only the IR; codegen.Generator calls in here with itself.
"""
from __future__ import annotations

import ast
import builtins

from numba.core.compiler_lock import global_compiler_lock

from ..ir import sub_programs

SPLIT_SIZE = 1000     # a program with more equations than this is split into parts,
INLINE_CALLS = 32     # and so is one with more vecmath calls (scalar_code.vecmath_calls) than this
CHUNK_SIZE = 200      # equations per part of a split program

GLOBALS = {"np", "numba", "math", "range", "len", "min", "max", "abs"}   # codegen.RESERVED


def weight(prog, memo):
    """The number of equations of prog, those of its loop bodies and branches included.
    memo: {id(program): weight} for programs that stay alive meanwhile (one generator's)."""
    w = memo.get(id(prog))
    if w is None:
        w = memo[id(prog)] = sum(eqn_weight(e, memo) for e in prog.eqns)
    return w


def eqn_weight(e, memo):
    return 1 + sum(weight(s, memo) for s in sub_programs(e.params))


class Unit:
    """Lines that one part must hold whole (a fusion group, or one equation of a loop body),
    unindented, with the equations they stand for and the names they read and assign."""

    __slots__ = ("lines", "weight", "reads", "writes")

    def __init__(self, lines, weight):
        self.lines, self.weight = lines, weight
        self.reads, self.writes = _liveness(lines)


def outline(gen, units, live_after):
    """Emit units at the current depth, consecutive light ones as calls to new parts.
    live_after: names the code after these units (or a next loop iteration) reads."""
    runs = _pack(units)
    live = set(live_after)
    calls = []
    for run, is_part in reversed(runs):
        if not is_part:
            calls.append((run, None, None))
            live.update(run[0].reads)
            continue
        params, writes = _part_names(run)
        results = [n for n in writes if n in live or n in params]
        live.update(params)
        calls.append((run, params, results))
    for run, params, results in reversed(calls):
        if params is None:
            for line in run[0].lines:
                gen.src.emit(line)
        else:
            _emit_part(gen, run, params, results)


def _pack(units):
    """[(units, is_part)]: runs of at most CHUNK_SIZE equations; a heavier unit alone, inline."""
    runs, current, size = [], [], 0
    for u in units:
        if u.weight > CHUNK_SIZE:
            if current:
                runs.append((current, True))
            runs.append(([u], False))
            current, size = [], 0
            continue
        if current and size + u.weight > CHUNK_SIZE:
            runs.append((current, True))
            current, size = [], 0
        current.append(u)
        size += u.weight
    if current:
        runs.append((current, True))
    return runs


def _part_names(run):
    """(names the run reads before assigning them, names it assigns), in order."""
    params, writes, seen = {}, [], set()
    for u in run:
        params.update((n, None) for n in u.reads if n not in seen)
        for n in u.writes:
            if n not in seen:
                seen.add(n)
                writes.append(n)
    return list(params), writes


def _emit_part(gen, run, params, results):
    gen.parts += 1
    name = f"_part{gen.parts}"
    ret = "(" + "".join(r + ", " for r in results) + ")"
    body = ["    " + line for u in run for line in u.lines]
    parallel = ", parallel=True" if gen.parallel and any("numba.prange" in ln for ln in body) else ""
    # called from compiled code only: no wrappers for calls from Python
    gen.helpers += [f"@numba.njit(error_model='numpy'{parallel}, no_cpython_wrapper=True, "
                    "no_cfunc_wrapper=True)", f"def {name}({', '.join(params)}):"] + body
    gen.helpers += [f"    return {ret}", ""]
    call = f"{name}({', '.join(params)})"
    gen.src.emit(f"{ret} = {call}" if results else call)


def _liveness(lines):
    """Names the statements read before they assign them (in order of first read; globals
    left out), and the names they assign (in order)."""
    reads, writes = {}, {}
    _scan(_parse("\n".join(lines)).body, reads, writes)
    return [n for n in reads if not _global(n)], list(writes)


def _parse(source):
    """ast.parse, safe beside other threads' parsing. CPython before 3.13 keeps the depth
    counter of its AST-object construction in one place per interpreter, so two threads
    building AST objects at once (a thread switch can happen when a finalizer runs mid-build)
    raise "SystemError: AST constructor recursion depth mismatch". Background compiles run
    here and in Numba's array-expression lowering (which parses under Numba's compiler lock):
    holding that lock keeps them apart; the retry covers a parse on a thread that holds no
    lock (a traceback's formatting, the user's code), the counter being reset per parse."""
    for attempt in range(3):
        try:
            with global_compiler_lock:
                return ast.parse(source)
        except SystemError as e:
            if "recursion depth mismatch" not in str(e) or attempt == 2:
                raise


def _global(name):
    """Module globals and builtins: helpers (`_vm`, `_impl3_sort`, `_part2`), GLOBALS, and
    builtins that are not lowercase (exceptions raised by generated code: `IndexError`).
    Variables are lowercase, and lowercase builtins the code uses are reserved (GLOBALS)."""
    return (name.startswith("_") or name in GLOBALS
            or (not name.islower() and hasattr(builtins, name)))


_BLOCKS = ("body", "orelse", "handlers", "finalbody")


def _scan(stmts, reads, writes):
    """Statements in execution order: a statement's expressions read before its targets are
    assigned (an augmented assignment reads its target first), nested blocks follow."""
    for st in stmts:
        head = [getattr(st, f) for f in st._fields if f not in _BLOCKS]
        names = [n for part in head for node in _nodes(part) for n in ast.walk(node)
                 if isinstance(n, ast.Name)]
        if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
            names.insert(0, ast.Name(st.target.id, ast.Load()))
        for n in names:
            if isinstance(n.ctx, ast.Load) and n.id not in writes:
                reads.setdefault(n.id, None)
        for n in names:
            if isinstance(n.ctx, ast.Store):
                writes.setdefault(n.id, None)
        for f in _BLOCKS:
            _scan(getattr(st, f, None) or [], reads, writes)


def _nodes(field):
    if isinstance(field, ast.AST):
        return [field]
    if isinstance(field, list):
        return [x for x in field if isinstance(x, ast.AST)]
    return []


__all__ = ["SPLIT_SIZE", "INLINE_CALLS", "CHUNK_SIZE", "weight", "eqn_weight", "Unit", "outline"]
