"""Reductions inside a fused loop nest (codegen.LoopEmitter), and how a nest runs in parallel.

Serial code: a sum into a scalar, a row or a buffer indexed by the kept loop indices; float
sums are compensated (Knuth's TwoSum, see compensated_sum); max/min keep the first of equal
values and let a NaN win (`v > t or v != v`), as NumPy does.

parallel=True (Generator.parallel) runs the outer loop with `numba.prange` in one of two ways
(LoopEmitter.mode):

"prange": every outer iteration writes elements of its own (elementwise results, sums and
    max/min that keep axis 0, scatters whose positions are one-to-one slices of the loop
    index), so `for i0 in numba.prange(n0)` is safe as it stands.
"chunks": the outer index is cut into a fixed number of chunks that depends on the shape
    only, never on the number of threads (so results are the same on every run and thread
    count):

        nc = max(1, min(MAX_CHUNKS, n0 // rows, n0 * n1 * ... // CHUNK_ELEMS))
        for c in numba.prange(nc):
            lo, hi = max(0, c * n0 // nc), (c + 1) * n0 // nc
            <chunk-local accumulators>
            for j in range(hi - lo):
                i0 = lo + j
                ...
            <partials[c] = accumulators>
        <partials combined in chunk order>

    A reduction over axis 0 (a full one, or one over leading axes that keeps trailing ones:
    the column sums of a bias gradient) keeps one partial per chunk (a row of partials
    [nc, ...] for kept axes), combined after the loop: max/min with the serial rule in chunk
    order, so exactly the serial result (NaN included); float sums as compensated partial
    sums and compensations added with TwoSum (a different order than the serial sum, same
    accuracy class); integer sums exactly. A scatter-add carried to the next iteration
    (fusion.scatter_plan's "next", Rosenbrock's gradient) carries it within its chunk; the
    term of a chunk's last iteration is added after the loop where the next chunk starts,
    after that element's other terms, as the serial loop adds it (bit for bit the same).
Anything else (a split loop body, small loops, a scatter into a scalar, a carried scatter-add
that is followed by one at the first offset, narrow sums of small ints) stays serial.
"""
from __future__ import annotations

import re
import weakref

import numpy as np

from .lowerings import lowering, role
from .source_text import dtype_text, literal

CHUNK_ELEMS = 4096       # elements per chunk at least
MAX_CHUNKS = 64          # chunks of one loop at most (partials to combine)
COLUMN_ROWS = 32         # outer iterations per chunk at least when partials are rows


def _kept(e, ndim):
    return [k for k in range(ndim) if k not in e.params["axes"]]


def parallel_need(em, e):
    """What equation e of loop em needs to run its outer loop in parallel: "prange", "chunks",
    "columns" (chunks with rows of partials: enough outer iterations), or None (serial)."""
    kind = role(e)
    if kind == "reduction":
        if 0 in _kept(e, len(em.shape)):
            return "prange"           # the outer index picks the element reduced into
        red, dt = lowering(e.prim).reduction, e.outputs[0].aval.dtype
        if red.kind == "prod":
            return None               # (partial products would round differently)
        if red.is_sum and dt.kind in "iub" and dt.itemsize < 8:
            return None               # (the serial sum widens its running total)
        return "columns" if _kept(e, len(em.shape)) else "chunks"
    if kind == "scatter":
        if e.inputs[0].aval.ndim == 0:
            return None
        if em.plan.get(id(e), ("",))[0] != "next":
            return "prange"           # basic positions: one-to-one in the loop indices
        return "chunks" if _carried_last(em, e) else None
    return "prange"


def _carried_last(em, e):
    """The scatter-adds after e in its chain all carry their term to the next iteration, so
    that a chunk's carried term, added after the loop, still comes after the other terms."""
    chain, x = [e], e.outputs[0]
    made = {s.inputs[0].id: s for s in em.g.eqns if role(s) == "scatter"
            and getattr(s.inputs[0], "id", None) is not None}
    while x.id in made:
        chain.append(made[x.id])
        x = made[x.id].outputs[0]
    return all(em.plan.get(id(s), ("",))[0] == "next" for s in chain)


class Reductions:
    """The reductions of one loop nest (codegen.LoopEmitter `em`, whose body, indices and mode
    they read) and, when it runs as chunks, the chunk loop: its names (`chunk`: chunk, count,
    lo, hi), and the lines run before and after each chunk's part of the nest."""

    def __init__(self, em):
        # (a proxy: a reference cycle with em kept each kernel's code generator, its constants
        # and its compile's memory until a collection: 3.9 MB per dropped kernel stayed,
        # tests/test_regress_backend.py's test_dropped_kernels_leave_a_bounded_remainder)
        self.em, self.chunk, self.chunk_pre, self.chunk_post = weakref.proxy(em), None, [], []

    # -- the chunk loop around the outer index ----------------------------------------------
    def chunk_setup(self, rows):
        """Names (chunk, count, lo, hi) of this loop's chunks; the count's line."""
        k = self.em.gen.chunk_loops
        self.em.gen.chunk_loops += 1
        self.chunk = (f"pc{k}", f"pn{k}", f"plo{k}", f"phi{k}")
        size = " * ".join(self.em.gen.dim(n) for n in self.em.shape)
        n0 = self.em.gen.dim(self.em.shape[0])
        return (f"{self.chunk[1]} = max(1, min({MAX_CHUNKS}, {n0} // {rows}, "
                f"{size} // {CHUNK_ELEMS}))")

    def open_chunks(self, src):
        """Start the chunk loop (its body then holds the loop nest). The outer loop is
        `for j in range(hi - lo): i0 = lo + j` with lo = max(0, ...): LLVM then knows that i0
        is not negative, drops Numba's wraparound of negative indices and vectorises (with
        `for i0 in range(lo, hi)` Rosenbrock's gradient ran 6x slower, W1's loss 2x). The
        nest stays in the prange body: Numba compiles that with its arrays marked noalias
        (a function of its own, called there, ran up to 2x slower)."""
        c, nc, lo, hi = self.chunk
        n0 = self.em.gen.dim(self.em.shape[0])
        src.emit(f"for {c} in numba.prange({nc}):")
        src.depth += 1
        src.emit(f"{lo}, {hi} = max(0, {c} * {n0} // {nc}), ({c} + 1) * {n0} // {nc}")
        for line in self.chunk_pre:
            src.emit(line)

    def close_chunks(self, src):
        for line in self.chunk_post:
            src.emit(line)
        src.depth -= 1

    def chunk_buffers(self, dt, kept, fill=None):
        """Partials of a reduction, one per chunk (a row of the kept axes for each)."""
        dims = [self.chunk[1]] + [self.em.gen.dim(self.em.shape[k]) for k in kept]
        dims = "(" + "".join(f"{d}, " for d in dims) + ")"
        if fill is None:
            return f"np.empty({dims}, {dtype_text(dt)})"
        return f"np.full({dims}, {fill}, {dtype_text(dt)})"

    def chunk_row(self, buffer):
        """The chunk's own row of partials, a view taken once per chunk."""
        self.chunk_pre.append(f"{buffer}_r = {buffer}[{self.chunk[0]}]")
        return f"{buffer}_r"

    def combine_rows(self, oname, buffers, fold):
        """After the loop: the rows of partials (each buffer [chunks, kept axes...]) folded into
        the first row, chunks in order, each a loop over the columns (it vectorises);
        fold(*rows) -> the lines that fold row q's column j in (rows: "b_2[q, j]" texts)."""
        nc, q, j = self.chunk[1], f"{oname}_q", f"{oname}_j"
        lines = [f"{b}_2 = {b}.reshape(({nc}, {b}.size // {nc}))" for b in buffers]
        lines += [f"for {q} in range(1, {nc}):", f"    for {j} in range({buffers[0]}_2.shape[1]):"]
        return lines + ["        " + s for s in fold(*[(f"{b}_2[0, {j}]", f"{b}_2[{q}, {j}]")
                                                        for b in buffers])]

    def chunk_carry(self, e, oname, carried, first, target, u, pre, post):
        """A scatter-add carried to the next iteration (fusion.scatter_plan "next"), per chunk;
        each chunk's last term added after the loop, in equation order."""
        c, nc, lo, _ = self.chunk
        n, zero = self.em.gen.dim(self.em.shape[0]), literal(0, u.aval.dtype)
        pre.append(f"{carried}_k = np.empty({nc}, {dtype_text(u.aval.dtype)})")
        self.chunk_pre.append(f"{carried} = {zero}")
        self.em.body += [f"if i0 > {lo}:", f"    {oname}{self.em.index(first)} += {carried}",
                         f"{carried} = {self.em.read(u)}"]
        self.chunk_post.append(f"{carried}_k[{c}] = {carried}")
        q = f"{carried}_q"
        edge = re.sub(r"\bi0\b", f"(({q} + 1) * {n} // {nc} - 1)", target)
        last = re.sub(r"\bi0\b", f"({n} - 1)", target)
        store = f"= {zero} +" if id(e) in self.em.gen.tails else "+="
        post += [f"for {q} in range({nc} - 1):", f"    {edge} += {carried}_k[{q}]",
                 f"if {n} > 0:", f"    {last} {store} {carried}_k[{nc} - 1]"]

    # -- reductions -------------------------------------------------------------------------
    def reduction(self, e, oname, pre, post):
        x, axes, dt = e.inputs[0], e.params["axes"], e.outputs[0].aval.dtype
        val, red = self.em.read(x), lowering(e.prim).reduction
        if red.is_sum and dt.kind == "f":
            return self.compensated_sum(e, oname, val, pre, post)
        kept = [self.em.idx[k] for k in range(len(self.em.shape)) if k not in axes]
        out_shape = e.outputs[0].aval.shape
        init = literal(red.start(dt), dt)
        if self.em.mode == "chunks" and 0 in axes:
            return self.chunked_reduction(e, oname, val, init, pre, post)
        target = f"{oname}{self.em.index(kept)}" if kept else oname
        if kept:
            pre.append(f"{oname} = np.full({self.em.gen.dims(out_shape)}, {init}, {dtype_text(dt)})")
        else:
            pre.append(f"{oname} = {init}")
        self.em.body += red.update(target, val)

    def chunked_reduction(self, e, oname, val, init, pre, post):
        """max/min (exact: the serial rule over the partials in chunk order), integer and
        complex sums, with a partial per chunk."""
        dt, kept = e.outputs[0].aval.dtype, _kept(e, len(self.em.shape))
        c, pa, red = self.chunk[0], f"{oname}_pa", lowering(e.prim).reduction
        if not kept:
            t, q = f"{oname}_acc", f"{oname}_q"
            pre.append(f"{pa} = {self.chunk_buffers(dt, [])}")
            self.chunk_pre.append(f"{t} = {init}")
            self.em.body += red.update(t, val)
            self.chunk_post.append(f"{pa}[{c}] = {t}")
            post += [f"{oname} = {init}", f"for {q} in range({self.chunk[1]}):"]
            post += ["    " + s for s in red.update(oname, f"{pa}[{q}]")]
            return
        pre.append(f"{pa} = {self.chunk_buffers(dt, kept, init)}")
        target = self.chunk_row(pa) + self.em.index([self.em.idx[k] for k in kept])
        self.em.body += red.update(target, val)
        post += self.combine_rows(oname, [pa], lambda a: red.update(*a))
        post.append(f"{oname} = {pa}_2[0].reshape({self.em.gen.dims([self.em.shape[k] for k in kept])})")

    def compensated_sum(self, e, oname, val, pre, post):
        """A float sum accumulated with a running compensation (Knuth's TwoSum: the rounding
        error of every addition is itself summed), in float64 for float32 data, so a sum of
        10**7 terms is as accurate as NumPy's pairwise sum or better. The extra additions are
        off the loop's dependency chain, so a serial sum costs about what the plain one did.
        A parallel loop's sum over axis 0 has partial sums per chunk (chunked_sum)."""
        axes, dt = e.params["axes"], e.outputs[0].aval.dtype
        acc = np.dtype(np.float64) if dt.itemsize < 8 else dt
        kept = [k for k in range(len(self.em.shape)) if k not in axes]
        acc_t, zero = dtype_text(acc), literal(0, acc)
        v = f"{acc_t}({val})" if acc != dt else val
        if self.em.mode == "chunks" and 0 in axes:
            return self.chunked_sum(oname, v, dt, acc, kept, pre, post)
        m = len(kept)
        row = 0 < m < len(self.em.shape) and kept == list(range(m))
        if row:       # trailing axes reduced: scalar accumulators around the inner loops
            at, comp = f"{oname}_acc", f"{oname}_c"
            pre.append(f"{oname} = np.empty({self.em.gen.dims(e.outputs[0].aval.shape)}, "
                       f"{dtype_text(dt)})")
            self.em.level_pre.setdefault(m, []).append(f"{at} = {zero}; {comp} = {zero}")
            self.em.level_post.setdefault(m, []).append(
                f"{oname}{self.em.index(self.em.idx[:m])} = {dtype_text(dt)}(_vm.compensated({at}, {comp}))")
        elif kept:
            shape = self.em.gen.dims([self.em.shape[k] for k in kept])
            at = f"{oname}{self.em.index([self.em.idx[k] for k in kept])}"
            comp = f"{oname}_c{self.em.index([self.em.idx[k] for k in kept])}"
            pre += [f"{oname} = np.zeros({shape}, {acc_t})", f"{oname}_c = np.zeros({shape}, {acc_t})"]
        else:
            at, comp = f"{oname}_acc", f"{oname}_c"
            pre += [f"{at} = {zero}", f"{comp} = {zero}"]
        if not kept and self.em.defer_sums:       # the terms stored, summed in their order after
            terms = f"{oname}_t"
            pre.append(f"{terms} = np.empty({self.em.gen.dims(self.em.shape)}, {acc_t})")
            self.em.body.append(f"{terms}{self.em.index(self.em.idx)} = {v}")
            if len(self.em.shape) > 1:
                post.append(f"{terms}_flat = {terms}.ravel()")
                terms += "_flat"
            post += [f"for {oname}_j in range({terms}.shape[0]):",
                     f"    {at}, {comp} = _vm.add_compensated({at}, {comp}, {terms}[{oname}_j])",
                     f"{oname} = {dtype_text(dt)}(_vm.compensated({at}, {comp}))"]
            return
        self.em.body.append(f"{at}, {comp} = _vm.add_compensated({at}, {comp}, {v})")
        if row:
            pass
        elif kept:
            out = oname if acc == dt else f"{oname}_o"
            if acc != dt:
                post.append(f"{out} = np.empty({shape}, {dtype_text(dt)})")
            post.append(f"_vm.compensated_into({oname}, {oname}_c, {out})")
            if out != oname:
                post.append(f"{oname} = {out}")
        else:
            post.append(f"{oname} = {dtype_text(dt)}(_vm.compensated({at}, {comp}))")

    def chunked_sum(self, oname, v, dt, acc, kept, pre, post):
        """A compensated sum over axis 0 of a chunked loop: each chunk's compensated partial
        sum (a row of them for kept axes), the partials and their compensations added with
        TwoSum after the loop, chunks in order (compensated_total)."""
        (c, _, lo, hi), acc_t, zero = self.chunk, dtype_text(acc), literal(0, acc)
        pa, pc = f"{oname}_pa", f"{oname}_pc"
        if kept:
            pre += [f"{pa} = {self.chunk_buffers(acc, kept, zero)}",
                    f"{pc} = {self.chunk_buffers(acc, kept, zero)}"]
            ix = self.em.index([self.em.idx[k] for k in kept])
            ra, rc = self.chunk_row(pa) + ix, self.chunk_row(pc) + ix
            self.em.body.append(f"{ra}, {rc} = _vm.add_compensated({ra}, {rc}, {v})")
            post += self.combine_rows(oname, [pa, pc], lambda s, t: [    # (sums, compensations)
                f"{s[0]}, {t[0]} = _vm.add_compensated({s[0]}, {t[0]} + {t[1]}, {s[1]})"])
            out = self.em.gen.dims([self.em.shape[k] for k in kept])
            post += [f"{oname} = np.empty({out}, {dtype_text(dt)})",
                     f"_vm.compensated_into({pa}_2[0], {pc}_2[0], {oname})"]
            return
        at, comp = f"{oname}_acc", f"{oname}_c"
        pre += [f"{pa} = {self.chunk_buffers(acc, [])}",
                f"{pc} = {self.chunk_buffers(acc, [])}"]
        self.chunk_pre.append(f"{at} = {zero}; {comp} = {zero}")
        if self.em.defer_sums:        # the terms stored (the loop vectorises), summed per chunk
            terms, flat = f"{oname}_t", f"{oname}_t"
            pre.append(f"{terms} = np.empty({self.em.gen.dims(self.em.shape)}, {acc_t})")
            self.em.body.append(f"{terms}{self.em.index(self.em.idx)} = {v}")
            width = " * ".join(self.em.gen.dim(n) for n in self.em.shape[1:])
            span = f"{lo}, {hi}" if not width else f"{lo} * {width}, {hi} * {width}"
            if width:
                flat = f"{terms}_flat"
                pre.append(f"{flat} = {terms}.reshape(({terms}.size,))")
            self.chunk_post += [f"for {oname}_j in range({span}):",
                                f"    {at}, {comp} = _vm.add_compensated({at}, {comp}, {flat}[{oname}_j])"]
        else:
            self.em.body.append(f"{at}, {comp} = _vm.add_compensated({at}, {comp}, {v})")
        self.chunk_post.append(f"{pa}[{c}] = {at}; {pc}[{c}] = {comp}")
        post.append(f"{oname} = {dtype_text(dt)}(_vm.compensated_total({pa}, {pc}))")
