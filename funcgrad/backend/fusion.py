"""Fusion: partition a Program's equations into loop groups and single array statements.

A loop group is one loop nest over an iteration shape S. It holds elementwise equations and
broadcasts whose output has shape S, and reductions whose input has shape S (their results
are final: nothing in the same group may read them). An equation joins the group of one of its
producers, or else a recent sibling group of the same shape (so that, for example, forward and
backward passes that read the same input share one loop), as long as the merged groups still
form an acyclic graph. Everything else is an array statement of its own.
"""
from __future__ import annotations

import re

import numpy as np

from ..ir import Lit, Program, Var, needed, use_counts
from .lowerings import lowering, role, slice_positions

ACCUMULATORS = ("reduction", "scatter")       # roles whose results are final after the loop
SIBLING_WINDOW = 8       # how many recent groups sibling fusion looks back at


def scatter_plan(eqns, idx):
    """id(scatter-add) -> how it is written, for the scatter-adds of a loop (equations `eqns`,
    loop indices `idx`) into a buffer that they write at more than one position:
    ("next", position): in a 1-D loop where the others write at offset 0 and this one at
        offset 1, its term is carried to the next iteration and added there, at `position`
        (an element's terms are added in equation order, as the interpreter adds them;
        LLVM vectorises such a first-order recurrence);
    ("pass", None): otherwise, from the first one at another position on, the terms are
        stored and added in a loop of their own after this one, in equation order."""
    plan = {}
    for chain in _chains(eqns):
        pos = [slice_positions(e.params["spec"], e.inputs[0].aval.shape, idx)
               for e in chain]
        if all(p == pos[0] for p in pos):
            continue
        offsets = [_offset(p) for p in pos] if len(idx) == 1 else [None]
        if None not in offsets and set(offsets) == {offsets[0], offsets[0] + 1}:
            plan.update((id(e), ("next", pos[0])) for e, o in zip(chain, offsets)
                        if o != offsets[0])
            continue
        first = next(k for k, p in enumerate(pos) if p != pos[0])
        plan.update((id(e), ("pass", None)) for e in chain[first:])
    return plan


def _chains(eqns):
    """The scatter-adds of `eqns` grouped by buffer (each writes the one the last made)."""
    chains = {}                 # var id of a chain's latest buffer -> its scatter-adds
    for e in eqns:
        x = e.inputs[0]
        if role(e) == "scatter" and e.params["mode"] == "add" and x.aval.ndim:
            chains[e.outputs[0].id] = chains.pop(getattr(x, "id", None), []) + [e]
    return chains.values()


def first_writes(order, zeros, planned):
    """Scatter-add chains that a loop writes with scatter_plan's carried term into a buffer of
    zeros made for them (`zeros(var)`: +0.0 everywhere, read by nothing else), in the groups
    `order` whose plans are used (`planned(group)`). Such a chain is the first to write each
    element it reaches, so instead of adding to a zero-filled buffer it stores `0 + term` (the
    same value: no sum starting at +0.0 is ever -0.0, so adding its later terms, the carried
    +0.0 of the first iteration included, goes as before): Rosenbrock's gradient loop then
    reads nothing back and skips a pass over memory. Returns ({buffer var id: the (start,
    stop) ranges of the elements the chain does not write, zero-filled}, {id(scatter-add)
    whose write at the loop index is the first}, {id(scatter-add) whose carried write after
    the loop is the first})."""
    fills, firsts, tails = {}, set(), set()
    for g in order:
        if g.shape is None or len(g.shape) != 1 or not planned(g):
            continue
        plan = scatter_plan(g.eqns, ["i0"])
        for chain in _chains(g.eqns):
            carried = [e for e in chain if plan.get(id(e), ("",))[0] == "next"]
            x = chain[0].inputs[0]
            if not carried or x.aval.ndim != 1 or not zeros(x):
                continue
            (start,) = slice_positions(chain[0].params["spec"], x.aval.shape, ["i0"])
            start = _offset([start])
            stop, size = start + g.shape[0] + 1, x.aval.shape[0]
            fills[x.id] = [(a, b) for a, b in ((0, start), (stop, size)) if a < b]
            firsts.add(id(chain[0]))
            tails.add(id(carried[0]))
    return fills, firsts, tails


def _offset(position):
    """k for a 1-D position `i0` (0) or `k + i0`, else None."""
    (p,) = position
    m = re.fullmatch(r"(?:(\d+) \+ )?i0", p)
    return None if m is None else int(m.group(1) or 0)


def loop_shape(e):
    """The iteration shape if equation e can live in a loop nest, else None."""
    if e.prim.elementwise:
        return e.outputs[0].aval.shape
    low = lowering(e.prim)
    return None if low.loop_shape is None else low.loop_shape(e)


class Group:
    __slots__ = ("id", "shape", "eqns", "deps", "reduced", "scatter_add", "early")

    def __init__(self, gid, shape, eqn, early=False):
        self.id, self.shape, self.eqns, self.early = gid, shape, [eqn], early
        self.deps: set[int] = set()          # ids of groups this one reads from directly
        self.reduced: set[int] = set()       # var ids produced by reductions/scatters here
        self.scatter_add: dict[int, bool] = {}   # var id -> produced by a scatter-add here

    @property
    def is_loop(self):
        return self.shape is not None

    def __repr__(self):
        kind = f"loop{self.shape}" if self.is_loop else "stmt"
        return f"Group#{self.id}[{kind}: {', '.join(e.prim.name for e in self.eqns)}]"


def _reaches(groups, start, target):
    """Does group `start` depend, directly or transitively, on group `target`?"""
    stack, seen = [start], set()
    while stack:
        g = stack.pop()
        if g == target:
            return True
        if g not in seen:
            seen.add(g)
            stack.extend(groups[g].deps)
    return False


def _made_in(g, v):
    return any(v is o for e in g.eqns for o in e.outputs)


def _can_join(groups, g, e, in_groups, shape, uses):
    if not g.is_loop or g.shape != shape:
        return False
    reads = e.inputs
    if role(e) == "scatter":
        x = e.inputs[0]
        if isinstance(x, Var) and x.id in g.reduced:
            # scatter-add into the buffer of an earlier scatter-add of this loop: alias it
            if not (e.params["mode"] == "add" and uses.get(x.id) == 1 and g.scatter_add.get(x.id)):
                return False
            reads = e.inputs[1:]
        elif isinstance(x, Var) and _made_in(g, x):
            return False                      # the operand must be complete before the loop
    if role(e) == "index_map" and isinstance(e.inputs[0], Var) and _made_in(g, e.inputs[0]):
        return False                          # it is read at other positions than it is made
    if any(isinstance(v, Var) and v.id in g.reduced for v in reads):
        return False
    return all(h == g.id or not _reaches(groups, h, g.id) for h in in_groups)


def partition(prog: Program, early=()):
    """Groups in an order that respects their dependencies. early: ids of variables to compute
    as soon as possible (a kernel's guards, codegen.Generator.exit): the equations they depend
    on are fused only among themselves and come first."""
    groups: list[Group] = []
    owner: dict[int, int] = {}
    uses = use_counts(prog)
    cone = {id(e) for e in needed(prog, early)} if early else set()
    for e in prog.eqns:
        in_groups = {owner[v.id] for v in e.inputs if isinstance(v, Var) and v.id in owner}
        shape, soon = loop_shape(e), id(e) in cone
        chosen = None
        if shape is not None:
            producers = sorted(in_groups, reverse=True)
            recent = [g.id for g in groups[-SIBLING_WINDOW:]][::-1]
            for gid in producers + [r for r in recent if r not in in_groups]:
                if groups[gid].early == soon and _can_join(groups, groups[gid], e, in_groups,
                                                           shape, uses):
                    chosen = groups[gid]
                    break
        if chosen is None:
            chosen = Group(len(groups), shape, e, soon)
            groups.append(chosen)
        else:
            chosen.eqns.append(e)
        chosen.deps |= in_groups - {chosen.id}
        for v in e.outputs:
            owner[v.id] = chosen.id
        if role(e) in ACCUMULATORS and shape is not None:
            chosen.reduced.update(v.id for v in e.outputs)
            if role(e) == "scatter" and e.params["mode"] == "add":
                chosen.scatter_add[e.outputs[0].id] = True
    return _schedule(groups)


def _schedule(groups):
    """Topological order of the group graph, earliest-created first among the ready ones
    (groups marked early first)."""
    import heapq
    users: dict[int, list[int]] = {g.id: [] for g in groups}
    pending = {g.id: len(g.deps) for g in groups}
    for g in groups:
        for d in g.deps:
            users[d].append(g.id)
    ready = [(not g.early, g.id) for g in groups if not g.deps]
    heapq.heapify(ready)
    order = []
    while ready:
        _, gid = heapq.heappop(ready)
        order.append(groups[gid])
        for u in users[gid]:
            pending[u] -= 1
            if pending[u] == 0:
                heapq.heappush(ready, (not groups[u].early, u))
    assert len(order) == len(groups), "internal error: fusion produced a dependency cycle"
    return order


def literal_broadcasts(prog: Program):
    """var id -> the scalar Lit that a broadcast_in_dim spreads (every element is that value)."""
    return {e.outputs[0].id: e.inputs[0] for e in prog.eqns
            if e.prim.repeats and isinstance(e.inputs[0], Lit)          # (a broadcast)
            and e.inputs[0].aval.ndim == 0}


def materialized(prog: Program, order):
    """Var ids that must exist as arrays (or scalars) outside the loop that computes them. A
    broadcast literal read by other loops is not stored: they read the literal instead (only a
    statement, an update's buffer or an output needs it as an array)."""
    owner = {v.id: g.id for g in order for e in g.eqns for v in e.outputs}
    lits = literal_broadcasts(prog)
    need = {o.id for o in prog.outs if isinstance(o, Var)}
    for g in order:
        for e in g.eqns:
            for k, v in enumerate(e.inputs):
                if isinstance(v, Var) and owner.get(v.id, -1) != g.id:
                    if v.id in lits and g.is_loop and not (role(e) == "scatter" and k == 0):
                        continue
                    need.add(v.id)
        need.update(g.reduced)
    return need


def packs(prog: Program):
    """Concatenations that join values each given a new axis of length 1 by a reshape
    (fnp.stack; transforms/scalarize.py packing scalars into a small array), which codegen
    writes as one np.empty and a store per value: {id(concatenate): the values}, and the ids
    of the reshapes that only such a concatenation reads (their arrays are not made)."""
    made = {v.id: e for e in prog.eqns for v in e.outputs}
    uses = use_counts(prog)
    found, unused = {}, set()
    for e in prog.eqns:
        if not lowering(e.prim).packs or len(e.inputs) < 2:
            continue
        out, axis, values, readers = e.outputs[0].aval, e.params["axis"], [], []
        for v in e.inputs:
            r = made.get(v.id) if isinstance(v, Var) else None
            if isinstance(v, Lit) and v.aval.shape == (1,) and out.ndim == 1:
                values.append(Lit(np.asarray(v.val).reshape(())))
            elif (r is not None and lowering(r.prim).unit_axis and v.aval.shape[axis] == 1
                  and r.inputs[0].aval.shape == v.aval.shape[:axis] + v.aval.shape[axis + 1:]):
                values.append(r.inputs[0])
                if uses.get(v.id) == 1:
                    readers.append(id(r))
            else:
                break
        else:
            if all(x.aval.dtype == out.dtype for x in values):
                found[id(e)] = values
                unused.update(readers)
    return found, unused


__all__ = ["partition", "materialized", "packs", "use_counts", "Group", "loop_shape"]
