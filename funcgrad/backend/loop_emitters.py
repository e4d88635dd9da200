"""Control flow in generated code: while_loop, scan and cond become Python `while`/`for`/`if`
statements in the kernel, with the sub-program's code written inline (fused like any other
program) and its input variables bound to the loop's carries. No Python runs per iteration.

while_grad (reverse mode through a while loop) becomes two loops: the forward loop appends the
body's residuals to tape arrays that double in size when full, then a counted loop runs the
body's backward half from the last step to the first.

Every loop checks for Ctrl-C at the top of its body (see vecmath.interrupted): each step when
the body does array work, every POLL_EVERY steps when it is scalar code.
"""
from __future__ import annotations

import numpy as np

from ..ir import Lit, Var
from ..ir import split_list as _split
from .source_text import copy_lines, dtype_text

TAPE_START = 16     # initial tape capacity in steps; doubles when full
POLL_EVERY = 1024   # steps between Ctrl-C checks in loops whose body is scalar code


def _poll(gen, counter, *progs, step=None):
    """Emit the Ctrl-C check at the top of a loop body. `counter` counts the steps (`step`
    increments it; None when the loop's own index is the counter)."""
    src = gen.src
    if step is not None:
        src.emit(step)
    _poll_now(gen, "" if gen.heavy(*progs) else f"({counter} & {POLL_EVERY - 1}) == 0 and ")


def _poll_now(gen, first=""):
    """The check itself; `first` a condition tested before it."""
    gen.src.emit(f"if {first}_vm.interrupted():")
    gen.src.emit("    raise _vm.Interrupted('interrupted (Ctrl-C)')")


def _names(gen, vars_):
    return [gen.names[v.id] for v in vars_]


def _atoms(gen, atoms):
    return [gen.name(a) for a in atoms]


def _same_literal(a, b):
    """a and b are the same scalar constant, bit for bit."""
    return (isinstance(a, Lit) and isinstance(b, Lit) and a.aval.ndim == 0 == b.aval.ndim
            and a.aval.dtype == b.aval.dtype
            and np.asarray(a.val, a.aval.dtype).tobytes() == np.asarray(b.val, b.aval.dtype).tobytes())


def _invariant(init, out, var):
    """A carry that keeps its initial value: the step returns it unchanged, or returns the
    constant it starts from."""
    return (isinstance(out, Var) and out.id == var.id) or _same_literal(init, out)


def _carries(gen, init_atoms, init, outs, carry_vars):
    """Bind a loop's carries before it; an invariant carry is written as its initial value
    (a name or literal), neither copied before the loop nor assigned in it. Their names."""
    gen.unalias(carry_vars)
    gen.alias([v for a, o, v in zip(init_atoms, outs, carry_vars) if _invariant(a, o, v)],
              [t for a, t, o, v in zip(init_atoms, init, outs, carry_vars) if _invariant(a, o, v)])
    carry = _names(gen, carry_vars)
    gen.assign(carry, init)
    return carry


def _results(gen, outs, carry, results, carry_vars):
    """A loop's results after it: its carries' names (invariant ones: their initial values),
    copied only where another loop's code assigns the same carry variables (a body program
    shared by two equations), which would overwrite them while they are still read."""
    mine = [gen.in_var_uses[v.id] == 1 or gen.names[v.id] != gen.own_names[v.id] for v in carry_vars]
    gen.alias([r for r, m in zip(results, mine) if m], [c for c, m in zip(carry, mine) if m])
    gen.assign([o for o, m in zip(outs, mine) if not m], [c for c, m in zip(carry, mine) if not m])


class _StepBuffers:
    """While a loop body is emitted: its stacked outputs (`ys`: {result: array}) are written
    into their slice at step `k` instead of a new array copied there, and arrays that do not
    outlive a step are allocated once, before the loop (codegen.LoopEmitter.store). Use:
    open before the loop's first line, emit the loop, close after the body; close inserts
    the allocations. Returns the results written in place."""

    def __init__(self, gen, body, ys=(), k=None):
        self.gen, self.mark, self.depth = gen, len(gen.src.lines), gen.src.depth
        self.lines = []
        out_ids = [o.id for o in body.outs if isinstance(o, Var)]
        made = {v.id for e in body.eqns for v in e.outputs}
        self.slots = {o.id: f"{y}[{k}]" for o, y in ys
                      if isinstance(o, Var) and o.id in made and out_ids.count(o.id) == 1}
        escaping = gen.escaping(body)
        self.hoists = {vid: self.lines for vid in made - escaping}
        gen.slots.update(self.slots)
        gen.hoists.update(self.hoists)

    def close(self):
        gen = self.gen
        for vid in self.slots:
            del gen.slots[vid]
        for vid in self.hoists:
            del gen.hoists[vid]
        gen.src.lines[self.mark:self.mark] = ["    " * self.depth + line for line in self.lines]
        written = gen.slots_used & set(self.slots)
        gen.slots_used -= written
        return written


def emit_while(gen, outs, ins, e):
    p = e.params
    cond, body, n_cc, n_bc = p["cond"], p["body"], p["n_cc"], p["n_bc"]
    cc, bc, init = _split(ins, n_cc, n_bc)
    gen.alias(cond.in_vars[:n_cc], cc)
    gen.alias(body.in_vars[:n_bc], bc)
    carry = _carries(gen, e.inputs[n_cc + n_bc:], init, body.outs, body.in_vars[n_bc:])
    src = gen.src
    polls = f"{outs[0]}_polls"
    src.emit(f"{polls} = 0")
    buffers = _StepBuffers(gen, body)
    src.emit("while True:")
    src.depth += 1
    _poll(gen, polls, cond, body, step=f"{polls} += 1")
    _cond_test(gen, cond, n_cc, carry)
    gen.emit_step(body, f"{polls} - 1", "while_loop")
    gen.assign(carry, _atoms(gen, body.outs))
    src.depth -= 1
    buffers.close()
    _results(gen, outs, carry, e.outputs, body.in_vars[n_bc:])


def _cond_test(gen, cond, n_cc, carry):
    gen.alias(cond.in_vars[n_cc:], carry)
    gen.emit_program(cond)
    gen.src.emit(f"if not {gen.name(cond.outs[0])}:")
    gen.src.emit("    break")


def emit_scan(gen, outs, ins, e):
    p = e.params
    body, length, n_c, n = p["body"], p["length"], p["n_c"], p["n_carry"]
    consts, init, xs = _split(ins, n_c, n)
    gen.alias(body.in_vars[:n_c], consts)
    carry = _carries(gen, e.inputs[n_c:n_c + n], init, body.outs[:n], body.in_vars[n_c:n_c + n])
    x_vars = body.in_vars[n_c + n:]
    ys = outs[n:]
    for y, a in zip(ys, e.outputs[n:]):
        gen.src.emit(f"{y} = np.empty({gen.dims(a.aval.shape)}, {dtype_text(a.aval.dtype)})")
    k = f"{outs[0]}_k"
    n_steps = gen.dim(length)
    buffers = _StepBuffers(gen, body, zip(body.outs[n:], ys), k)
    chunked = not gen.heavy(body)
    if chunked:         # scalar steps: Ctrl-C checked between chunks of POLL_EVERY steps
        k0 = f"{outs[0]}_k0"
        if p["reverse"]:
            gen.src.emit(f"for {k0} in range({n_steps} - 1, -1, -{POLL_EVERY}):")
            steps = f"range({k0}, max({k0} - {POLL_EVERY}, -1), -1)"
        else:
            gen.src.emit(f"for {k0} in range(0, {n_steps}, {POLL_EVERY}):")
            steps = f"range({k0}, min({k0} + {POLL_EVERY}, {n_steps}))"
        gen.src.depth += 1
        _poll_now(gen)
    else:
        steps = f"range({n_steps} - 1, -1, -1)" if p["reverse"] else f"range({n_steps})"
    gen.src.emit(f"for {k} in {steps}:")
    gen.src.depth += 1
    start = len(gen.src.lines)
    if not chunked:
        _poll_now(gen)
    first = {}                  # a scanned array read once per step, however many inputs it feeds
    gen.unalias(x_vars)
    for v, arr in zip(x_vars, xs):
        if arr in first:
            gen.alias([v], [first[arr]])
        else:
            first[arr] = gen.names[v.id]
            gen.src.emit(f"{first[arr]} = {arr}[{k}]")
    gen.emit_step(body, k, "scan")
    written = buffers.close()
    for y, o in zip(ys, body.outs[n:]):
        if not (isinstance(o, Var) and o.id in written):
            _store(gen, y, k, o)
    gen.assign(carry, _atoms(gen, body.outs[:n]))
    if len(gen.src.lines) == start:         # a step that computes nothing (x -> x)
        gen.src.emit("pass")
    gen.src.depth -= 2 if chunked else 1
    _results(gen, outs, carry, e.outputs[:n], body.in_vars[n_c:n_c + n])


def emit_cond(gen, outs, ins, e):
    branches = e.params["branches"]
    index, ops = ins[0], ins[1:]
    last = len(branches) - 1
    for k, br in enumerate(branches):
        head = (f"if {index} <= 0:" if k == 0 else "else:" if k == last
                else f"elif {index} == {k}:")
        gen.src.emit(head)
        gen.src.depth += 1
        gen.alias(br.in_vars, ops)
        start = len(gen.src.lines)
        gen.emit_program(br)
        gen.assign(outs, _atoms(gen, br.outs))
        if len(gen.src.lines) == start:
            gen.src.emit("pass")
        gen.src.depth -= 1


def _alloc(gen, name, aval, steps):
    rest = "".join(f"{gen.dim(d)}, " for d in aval.shape)
    gen.src.emit(f"{name} = np.empty(({steps}, {rest}), {dtype_text(aval.dtype)})")


def _store(gen, tape, index, r, col=""):
    """tape[index] = the value of atom r (an array element by element: copy_lines)."""
    if r.aval.ndim and isinstance(r, Var):
        for line in copy_lines(tape, gen.name(r), r.aval.ndim, lambda c: [index, *c]):
            gen.src.emit(line)
    else:
        gen.src.emit(f"{tape}[{index}{col}] = {gen.name(r)}")


def _grow(gen, tape, index, ndim, dtype, dims):
    """tape, full at `index` rows, doubled (its rows copied element by element)."""
    src = gen.src
    src.emit(f"    {tape}_grown = np.empty((2 * {index}, {dims}), {dtype_text(dtype)})")
    for line in copy_lines(f"{tape}_grown", tape, ndim):
        src.emit("    " + line)
    src.emit(f"    {tape} = {tape}_grown")


def _append(gen, tapes, index):
    """tape[index] = value for each (tape, atom), doubling every tape when the first is full."""
    gen.src.emit(f"if {index} == {tapes[0][0]}.shape[0]:")
    for t, r in tapes:
        dims = "".join(f"{gen.dim(d)}, " for d in r.aval.shape)
        _grow(gen, t, index, 1 + r.aval.ndim, r.aval.dtype, dims)
    for t, r in tapes:
        _store(gen, t, index, r)


class _Tapes:
    """The tapes of a while_grad's residuals, one row per step: the scalar residuals of one
    dtype share one 2-D tape, a column each (a loop body turned into scalar code, see
    scalarize.py, has dozens: one growing array each would be most of the kernel); an array
    residual has a tape of its own."""

    def __init__(self, gen, pre, residuals):
        self.gen, self.entries, self.tapes = gen, [], {}     # tapes: name -> (dims, dtype)
        for j, r in enumerate(residuals):
            if r.aval.ndim:
                name = f"{pre}_t{j}"
                self.tapes[name] = ("".join(f"{gen.dim(d)}, " for d in r.aval.shape), r.aval.dtype)
                self.entries.append((name, "", r))
                continue
            name = f"{pre}_t{dtype_text(r.aval.dtype).rpartition('.')[2]}"
            dims, dt = self.tapes.get(name, (0, r.aval.dtype))
            self.tapes[name] = (dims + 1, dt)
            self.entries.append((name, f", {dims}", r))

    def alloc(self, steps):
        for name, (dims, dt) in self.tapes.items():
            dims = f"{dims}, " if isinstance(dims, int) else dims
            self.gen.src.emit(f"{name} = np.empty(({steps}, {dims}), {dtype_text(dt)})")

    def write(self, index):
        for name, col, r in self.entries:
            _store(self.gen, name, index, r, col)

    def append(self, index):
        """Write step `index`, doubling every tape when they are full."""
        self.gen.src.emit(f"if {index} == {next(iter(self.tapes))}.shape[0]:")
        for name, (dims, dt) in self.tapes.items():
            ndim = 2 if isinstance(dims, int) else 1 + dims.count(",")
            _grow(self.gen, name, index, ndim, dt, f"{dims}, " if isinstance(dims, int) else dims)
        self.write(index)

    def reads(self, index):
        return [f"{name}[{index}{col}]" for name, col, _ in self.entries]


def emit_while_grad(gen, outs, ins, e):
    p = e.params
    cond, fwd, bwd, every = p["cond"], p["fwd"], p["bwd"], p.get("checkpoint")
    n_cc, n_bc, n = p["n_cc"], p["n_bc"], p["n_carry"]
    cc, bc, init, ct = _split(ins, n_cc, n_bc, n)
    gen.alias(cond.in_vars[:n_cc], cc)
    gen.alias(fwd.in_vars[:n_bc], bc)
    gen.unalias(fwd.in_vars[n_bc:])                # (restored from snapshots: never aliased)
    carry = _names(gen, fwd.in_vars[n_bc:])
    gen.assign(carry, init)
    src, pre = gen.src, outs[0]
    residuals = fwd.outs[n:]
    taped = _Tapes(gen, pre, [r for r, s in zip(residuals, p["res_src"]) if s < 0])
    snaps = [(f"{pre}_s{j}", v) for j, v in enumerate(fwd.in_vars[n_bc:])] if every else []
    for t, r in snaps:
        _alloc(gen, t, r.aval, TAPE_START)
    if not every:
        taped.alloc(TAPE_START)
    src.emit(f"{pre}_n = 0")
    # forward: run the loop again, appending residuals (or every k-th carry) to tapes
    buffers = _StepBuffers(gen, fwd)
    src.emit("while True:")
    src.depth += 1
    _poll(gen, f"{pre}_n", cond, fwd)
    _cond_test(gen, cond, n_cc, carry)
    if every:
        src.emit(f"if {pre}_n % {int(every)} == 0:")
        src.depth += 1
        _append(gen, snaps, f"({pre}_n // {int(every)})")
        src.depth -= 1
    gen.emit_step(fwd, f"{pre}_n", "while_loop")
    if taped.entries and not every:
        taped.append(f"{pre}_n")
    src.emit(f"{pre}_n += 1")
    gen.assign(carry, _atoms(gen, fwd.outs[:n]))
    src.depth -= 1
    buffers.close()
    # backward: sweep the tape from the last step to the first
    n_acc = sum(p["act_bc"])
    ct_atoms, ct_vars = e.inputs[n_cc + n_bc + n:], bwd.in_vars[len(p["res_src"]):]
    fixed = [_invariant(a, o, v) for a, o, v in zip(ct_atoms, bwd.outs[n_acc:], ct_vars)]
    gen.alias([v for v, f in zip(e.outputs[n_acc:], fixed) if f], [t for t, f in zip(ct, fixed) if f])
    acc, cts = outs[:n_acc], _names(gen, e.outputs[n_acc:])
    for a, v in zip(acc, e.outputs[:n_acc]):
        if v.aval.ndim:
            src.emit(f"{a} = np.zeros({gen.dims(v.aval.shape)}, {dtype_text(v.aval.dtype)})")
        else:
            src.emit(f"{a} = {dtype_text(v.aval.dtype)}(0)")
    gen.assign(cts, ct)
    steps = f"{pre}_n"
    if every:   # segments of k steps, last first: restore the carry, recompute, then sweep
        taped.alloc(int(every))
        src.emit(f"for {pre}_seg in range(({pre}_n + {int(every) - 1}) // {int(every)} - 1, -1, -1):")
        src.depth += 1
        gen.assign(carry, [f"{t}[{pre}_seg]" for t, _ in snaps])
        steps = f"{pre}_m"
        src.emit(f"{steps} = min({int(every)}, {pre}_n - {pre}_seg * {int(every)})")
        buffers = _StepBuffers(gen, fwd)
        src.emit(f"for {pre}_i in range({steps}):")
        src.depth += 1
        _poll(gen, f"{pre}_i", fwd)
        gen.emit_step(fwd, f"{pre}_seg * {int(every)} + {pre}_i", "while_loop")
        taped.write(f"{pre}_i")
        gen.assign(carry, _atoms(gen, fwd.outs[:n]))
        src.depth -= 1
        buffers.close()
    _sweep(gen, bwd, taped, acc, cts, p["res_src"], bc, steps, pre,
           f"{pre}_seg * {int(every)} + " if every else "")
    if every:
        src.depth -= 1


def _sweep(gen, bwd, taped, acc, cts, res_src, consts, steps, pre, first=""):
    """The backward loop. bwd's residual inputs are bound by position (simplification may have
    merged equal residuals of fwd, so they need not be fwd's output variables). `first`: the
    forward step of the tape's first entry (a checkpoint segment's), as "<expr> + "."""
    src = gen.src
    n_res = len(res_src)
    gen.alias([v for v, s in zip(bwd.in_vars, res_src) if s >= 0], [consts[s] for s in res_src if s >= 0])
    gen.alias(bwd.in_vars[n_res:], cts)     # assigned only after the step's last read
    buffers = _StepBuffers(gen, bwd)
    src.emit(f"for {pre}_k in range({steps} - 1, -1, -1):")
    src.depth += 1
    _poll(gen, f"{pre}_k", bwd)
    tapes = iter(taped.reads(f"{pre}_k"))
    gen.unalias([v for v, s in zip(bwd.in_vars, res_src) if s < 0])
    for v, s in zip(bwd.in_vars, res_src):
        if s < 0:
            src.emit(f"{gen.names[v.id]} = {next(tapes)}")
    gen.emit_step(bwd, f"{first}{pre}_k", "while_loop")
    for a, g in zip(acc, bwd.outs[:len(acc)]):
        src.emit(f"{a} = {a} + {gen.name(g)}")
    gen.assign(cts, _atoms(gen, bwd.outs[len(acc):]))
    src.depth -= 1
    buffers.close()
