"""Fusion: partition a Program's equations into loop groups and single array statements.

A loop group is one loop nest over an iteration shape S. It holds elementwise equations and
broadcasts whose output has shape S, and reductions whose input has shape S (their results
are final: nothing in the same group may read them). An equation joins the group of one of its
producers, or else a recent sibling group of the same shape (so that, for example, forward and
backward passes that read the same input share one loop), as long as the merged groups still
form an acyclic graph. Everything else is an array statement of its own.
"""
from __future__ import annotations

from ..ir import Program, Var

REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min")
INDEX_MAPS = ("broadcast_in_dim", "transpose")   # read their input at remapped indices
SIBLING_WINDOW = 8       # how many recent groups sibling fusion looks back at


def loop_shape(e):
    """The iteration shape if equation e can live in a loop nest, else None."""
    name = e.prim.name
    if name in REDUCTIONS:
        a = e.inputs[0].aval
        if a.dtype.kind == "f" or name == "reduce_sum":
            return a.shape
        return None
    if name in INDEX_MAPS or isinstance(e.prim.numba, str):
        return e.outputs[0].aval.shape
    return None


class Group:
    __slots__ = ("id", "shape", "eqns", "deps", "reduced")

    def __init__(self, gid, shape, eqn):
        self.id, self.shape, self.eqns = gid, shape, [eqn]
        self.deps: set[int] = set()          # ids of groups this one reads from directly
        self.reduced: set[int] = set()       # var ids produced by reductions in this group

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


def _can_join(groups, g, e, in_groups, shape):
    if not g.is_loop or g.shape != shape:
        return False
    if any(isinstance(v, Var) and v.id in g.reduced for v in e.inputs):
        return False
    return all(h == g.id or not _reaches(groups, h, g.id) for h in in_groups)


def partition(prog: Program):
    """Groups in an order that respects their dependencies."""
    groups: list[Group] = []
    owner: dict[int, int] = {}
    for e in prog.eqns:
        in_groups = {owner[v.id] for v in e.inputs if isinstance(v, Var) and v.id in owner}
        shape = loop_shape(e)
        chosen = None
        if shape is not None:
            producers = sorted(in_groups, reverse=True)
            recent = [g.id for g in groups[-SIBLING_WINDOW:]][::-1]
            for gid in producers + [r for r in recent if r not in in_groups]:
                if _can_join(groups, groups[gid], e, in_groups, shape):
                    chosen = groups[gid]
                    break
        if chosen is None:
            chosen = Group(len(groups), shape, e)
            groups.append(chosen)
        else:
            chosen.eqns.append(e)
        chosen.deps |= in_groups - {chosen.id}
        for v in e.outputs:
            owner[v.id] = chosen.id
        if e.prim.name in REDUCTIONS:
            chosen.reduced.update(v.id for v in e.outputs)
    return _schedule(groups)


def _schedule(groups):
    """Topological order of the group graph, earliest-created first among the ready ones."""
    import heapq
    users: dict[int, list[int]] = {g.id: [] for g in groups}
    pending = {g.id: len(g.deps) for g in groups}
    for g in groups:
        for d in g.deps:
            users[d].append(g.id)
    ready = [g.id for g in groups if not g.deps]
    heapq.heapify(ready)
    order = []
    while ready:
        gid = heapq.heappop(ready)
        order.append(groups[gid])
        for u in users[gid]:
            pending[u] -= 1
            if pending[u] == 0:
                heapq.heappush(ready, u)
    assert len(order) == len(groups), "internal error: fusion produced a dependency cycle"
    return order


def materialized(prog: Program, order):
    """Var ids that must exist as arrays (or scalars) outside the loop that computes them."""
    owner = {v.id: g.id for g in order for e in g.eqns for v in e.outputs}
    need = {o.id for o in prog.outs if isinstance(o, Var)}
    for g in order:
        for e in g.eqns:
            for v in e.inputs:
                if isinstance(v, Var) and owner.get(v.id, -1) != g.id:
                    need.add(v.id)
        need.update(g.reduced)
    return need


__all__ = ["partition", "materialized", "Group", "loop_shape", "REDUCTIONS", "INDEX_MAPS"]
