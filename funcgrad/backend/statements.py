"""Array statements: the `statement` entries of the lowering table (lowerings.py), each
fn(output names, input source texts, equation) -> the lines that assign the outputs, or None
to fall back to the primitive's NumPy implementation in numba.objmode for that case.
LAPACK calls and matrix products call functions compiled once per machine (lapack.py,
runtime.py) instead of Numba's own overloads.
"""
from __future__ import annotations

import importlib.util

import numpy as np

from ..ir import Lit
from .lapack import AVAILABLE as LAPACK
from .source_text import copy_lines, dtype_text, loop_nest, tuple_text, where_mark


def reshape(outs, ins, e):
    (o,), (x,) = outs, ins
    a, shape = e.inputs[0].aval, e.params["shape"]
    if a.ndim == 0:
        return [f"{o} = np.full({tuple_text(shape)}, {x})"]
    if len(shape) == 0:
        return [f"{o} = {x}.ravel()[0]"]
    return [f"{o} = np.ascontiguousarray({x}).reshape({tuple_text(shape)})"]


def _basic_index(spec):
    parts = []
    for s in spec:
        if s[0] == "slice":
            parts.append(":".join("" if v is None else str(int(v)) for v in s[1:]))
        elif s[0] == "int":
            parts.append(str(int(s[1])))
        elif s == ("new",):
            parts.append("None")
        else:
            return None
    return parts


def _index_plan(e, n_arrays):
    """How an index spec maps positions, with NumPy's rules: (the indexed region's shape, the
    source of each region dimension, the source of each input dimension), or None for 0-d
    boolean entries (objmode). A region dimension is ("b", m): the m-th dimension of the index
    arrays' broadcast shape, or ("s", d, start, step): a slice of input dimension d, or ("new",).
    An input dimension is ("s", ...) (its region dimension), ("int", i) or ("arr", k, shape):
    the k-th index array. The array (and, with arrays, integer) entries are NumPy's advanced
    indices: their broadcast dimensions stand where they are when adjacent, else first."""
    x = e.inputs[0].aval
    spec = list(e.params["spec"])
    if any(s[0] == "bool" for s in spec):
        return None
    spec += [("slice", None, None, None)] * (x.ndim - sum(s[0] != "new" for s in spec))
    arrays = [v.aval.shape for v in e.inputs[len(e.inputs) - n_arrays:]] if n_arrays else []
    bshape = tuple(np.broadcast_shapes(*arrays)) if arrays else ()
    adv = [k for k, s in enumerate(spec) if s[0] == "arr" or (arrays and s[0] == "int")]
    first = bool(adv) and adv[-1] - adv[0] + 1 != len(adv)
    region = [("b", m) for m in range(len(bshape))] if first else []
    sources, d, k = [], 0, 0
    for at, s in enumerate(spec):
        if adv and at == adv[0] and not first:
            region += [("b", m) for m in range(len(bshape))]
        if s[0] == "new":
            region.append(("new",))
            continue
        n = x.shape[d]
        if s[0] == "slice":
            start, stop, step = slice(*s[1:]).indices(n)
            region.append(("s", d, start, step, len(range(start, stop, step))))
            sources.append(len(region) - 1)
        elif s[0] == "int":
            sources.append(("int", s[1] % n))
        else:
            sources.append(("arr", k, arrays[k]))
            k += 1
        d += 1
    sizes = [bshape[r[1]] if r[0] == "b" else r[4] if r[0] == "s" else 1 for r in region]
    return sizes, region, sources


def _index_code(o, e, names, n_arrays):
    """A loop nest over the indexed region: (lines, indentation, region index, input position).
    An index out of range raises IndexError marked with o (where_mark: the user's line of the
    equation making o, once it reaches the caller)."""
    plan = _index_plan(e, n_arrays)
    if plan is None:
        return None
    sizes, region, sources = plan
    x = e.inputs[0].aval
    lines, pad, ri = loop_nest([f"{o}_i{t}" for t in range(len(sizes))], sizes)
    b_at = {r[1]: ri[t] for t, r in enumerate(region) if r[0] == "b"}
    nb = len(b_at)
    pos, body = [], []
    for d, src in enumerate(sources):
        if isinstance(src, int):                        # a slice: its region dimension
            _, _, start, step, _ = region[src]
            i = ri[src]
            pos.append(i if (start, step) == (0, 1) else
                       f"{start} + {i}" if step == 1 else f"{start} + {step} * {i}")
        elif src[0] == "int":
            pos.append(str(src[1]))
        else:
            _, k, shape = src
            at = [("0" if shape[m] == 1 else b_at[nb - len(shape) + m]) for m in range(len(shape))]
            at_k = len(names) - n_arrays + k
            j, n, name, known = f"{o}_j{d}", x.shape[d], names[at_k], e.inputs[at_k]
            body.append(f"{j} = {name}[{', '.join(at)}]" if at else f"{j} = {name}")
            # a constant index in range: no test that cannot fail
            known = np.asarray(known.val) if isinstance(known, Lit) else None
            if known is not None and known.size and not -n <= known.min() <= known.max() < n:
                known = None
            if known is None or known.size and known.min() < 0:
                body += [f"if {j} < 0:", f"    {j} += {n}"]
            if known is None:
                message = f"index out of bounds for axis {d} with size {n}{where_mark(o)}"
                body += [f"if {j} < 0 or {j} >= {n}:", f"    raise IndexError({message!r})"]
            pos.append(j)
    return lines + [pad + line for line in body], pad, ri, pos


def gather(outs, ins, e):
    """x[index] for any index of slices, integers, new axes and integer arrays: a view where
    it is one (basic indexing), else a new array filled element by element."""
    (o,), out = outs, e.outputs[0].aval
    if e.inputs[0].aval.ndim == 0:              # a scalar: new axes (or 0-d masks) only
        return [f"{o} = {ins[0]}" if out.ndim == 0 else f"{o} = np.full({tuple_text(out.shape)}, {ins[0]})"]
    if len(ins) == 1:
        parts = _basic_index(e.params["spec"])
        if parts is not None:
            return [f"{o} = {ins[0]}[{', '.join(parts)}]" if parts else f"{o} = {ins[0]}"]
    code = _index_code(o, e, ins, len(ins) - 1)
    if code is None:
        return None
    lines, pad, ri, pos = code
    if out.ndim == 0:
        return lines + [f"{o} = {ins[0]}[{', '.join(pos)}]"]
    return ([f"{o} = np.empty({tuple_text(out.shape)}, {dtype_text(out.dtype)})"] + lines
            + [pad + f"{o}[{', '.join(ri)}] = {ins[0]}[{', '.join(pos)}]"])


def scatter(outs, ins, e):
    """x with x[index] set to, added or multiplied by u (u has the region's shape; repeated
    positions: the last write wins, or every update counts, as np.add.at/np.multiply.at)."""
    (o,), (x, u) = outs, ins[:2]
    if e.inputs[0].aval.ndim == 0:
        return _scatter_scalar(o, x, u, e)
    if e.params["mode"] != "set" and e.outputs[0].aval.dtype == np.bool_:
        return None
    code = _index_code(o, e, ins, len(ins) - 2)
    if code is None:
        return None
    lines, pad, ri, pos = code
    op = {"add": "+=", "set": "=", "mul": "*="}[e.params["mode"]]
    src = f"{u}[{', '.join(ri)}]" if e.inputs[1].aval.ndim else u
    return [f"{o} = {x}.copy()"] + lines + [pad + f"{o}[{', '.join(pos)}] {op} {src}"]


def _scatter_scalar(o, x, u, e):
    """Scatter into a scalar: the updates (of shape (1, ..., 1), or empty under a False mask)
    meet its one element."""
    u_aval = e.inputs[1].aval
    if u_aval.size == 0:
        return [f"{o} = {x}"]
    v = f"{u}[{', '.join(['0'] * u_aval.ndim)}]" if u_aval.ndim else u
    cast = dtype_text(e.outputs[0].aval.dtype)
    return [f"{o} = " + {"set": v, "add": f"{cast}({x} + {v})",
                         "mul": f"{cast}({x} * {v})"}[e.params["mode"]]]


def rev(outs, ins, e):
    nd, axes = e.inputs[0].aval.ndim, e.params["axes"]
    parts = ["::-1" if k in axes else ":" for k in range(nd)]
    return [f"{outs[0]} = {ins[0]}[{', '.join(parts)}]"]


def concatenate(outs, ins, e):
    return [f"{outs[0]} = np.concatenate(({''.join(x + ', ' for x in ins)}), axis={e.params['axis']})"]


def _permuted(dst, src, shape, perm, dtype):
    """Lines that copy `src` transposed by `perm` into a new C-contiguous array `dst`
    (explicit loops: Numba compiles np.transpose with an axes tuple very slowly)."""
    if tuple(perm) == tuple(range(len(perm))):
        return [f"{dst} = np.ascontiguousarray({src})"]
    if len(perm) == 2:
        return [f"{dst} = np.ascontiguousarray({src}.T)"]
    out_shape = [shape[p] for p in perm]
    loops, pad, idx = loop_nest([f"{dst}_{k}" for k in range(len(perm))], out_shape)
    src_idx = [idx[perm.index(d)] for d in range(len(perm))]
    return ([f"{dst} = np.empty({tuple_text(out_shape)}, {dtype_text(dtype)})"] + loops
            + [pad + f"{dst}[{', '.join(idx)}] = {src}[{', '.join(src_idx)}]"])


def contract(outs, ins, e):
    """Batched matrix product with BLAS: (batch, free_a, k) @ (batch, k, free_b)."""
    sa, sb, so = e.params["spec"]
    a, b, out = e.inputs[0].aval, e.inputs[1].aval, e.outputs[0].aval
    if a.ndim == 0 or b.ndim == 0 or not (
            a.dtype.kind == b.dtype.kind == "f" or a.dtype == b.dtype == out.dtype and a.dtype.kind == "c"):
        return None                                   # (complex: BLAS's zgemm/cgemm, one dtype)
    if any(c not in so and c not in sb for c in sa) or any(c not in so and c not in sa for c in sb):
        return None                                   # letters summed inside one operand
    size = dict(zip(sa, a.shape)) | dict(zip(sb, b.shape))
    batch = [c for c in so if c in sa and c in sb]
    fa = [c for c in so if c in sa and c not in sb]
    fb = [c for c in so if c in sb and c not in sa]
    k = [c for c in sa if c in sb and c not in so]
    prod = lambda cs: int(np.prod([size[c] for c in cs], dtype=np.int64))
    B, M, N, K = prod(batch), prod(fa), prod(fb), prod(k)
    (o,), (x, y) = outs, ins
    lines = _permuted(f"{o}_a", x, a.shape, [sa.index(c) for c in batch + fa + k], a.dtype)
    lines += _permuted(f"{o}_b", y, b.shape, [sb.index(c) for c in batch + k + fb], b.dtype)
    if B == 1:
        lines.append(f"{o}_m = _vm.dot({o}_a.reshape({tuple_text((M, K))}), {o}_b.reshape({tuple_text((K, N))}))")
    else:
        lines += [f"{o}_a3 = {o}_a.reshape({tuple_text((B, M, K))})",
                  f"{o}_b3 = {o}_b.reshape({tuple_text((B, K, N))})",
                  f"{o}_m = np.empty({tuple_text((B, M, N))}, {dtype_text(out.dtype)})",
                  f"for {o}_k in range({B}):",      # (into the slice: no array assignment)
                  f"    _vm.dot_into({o}_a3[{o}_k], {o}_b3[{o}_k], {o}_m[{o}_k])"]
    if not so:
        return lines + [f"{o} = {o}_m.ravel()[0]"]
    order = batch + fa + fb
    perm = [order.index(c) for c in so]
    shape = [size[c] for c in order]
    if perm == list(range(len(so))):
        return lines + [f"{o} = {o}_m.reshape({tuple_text(shape)})"]
    lines.append(f"{o}_r = {o}_m.reshape({tuple_text(shape)})")
    return lines + _permuted(o, f"{o}_r", shape, perm, out.dtype)


def cumulative(combine, init, compensated=False):
    """A running reduction along one axis (cumsum: "{acc} + {x}", "0"): loops over the other
    axes, a running value inside, `combine` giving the next from the last ({acc}) and the
    element ({x}). compensated: a float sum keeps a running compensation in float64 (more
    accurate than NumPy's)."""
    return lambda outs, ins, e: _cumulative_lines(combine, init, compensated, outs, ins, e)


def _cumulative_lines(combine, init, compensated, outs, ins, e):
    a = e.inputs[0].aval
    if a.ndim == 0 or a.dtype.kind not in "fiuc":
        return None
    axis, (o,), (x,) = e.params["axis"], outs, ins
    outer = [d for d in range(a.ndim) if d != axis]
    loops, pad, index = loop_nest([f"{o}_i{d}" for d in outer], [a.shape[d] for d in outer])
    idx = [f"{o}_i{d}" for d in range(a.ndim)]
    for d, i in zip(outer, index):
        idx[d] = i
    lines = [f"{o} = np.empty({tuple_text(a.shape)}, {dtype_text(a.dtype)})"] + loops
    run, inner, (idx[axis],) = loop_nest([idx[axis]], [a.shape[axis]])
    run, inner = [pad + line for line in run], pad + inner
    at = ", ".join(idx)
    if compensated and a.dtype.kind == "f":      # as the fused sums (codegen.py)
        return lines + [pad + f"{o}_acc = 0.0; {o}_c = 0.0"] + run + [
            inner + f"{o}_acc, {o}_c = _vm.add_compensated({o}_acc, {o}_c, np.float64({x}[{at}]))",
            inner + f"{o}[{at}] = {dtype_text(a.dtype)}(_vm.compensated({o}_acc, {o}_c))"]
    return lines + [pad + f"{o}_acc = {dtype_text(a.dtype)}({init})"] + run + [
        inner + f"{o}_acc = {combine.format(acc=f'{o}_acc', x=f'{x}[{at}]')}",
        inner + f"{o}[{at}] = {o}_acc"]


def argextreme(better):
    """argmax (">") / argmin ("<") along an axis (or of the flattened array) of an integer or
    float array: the first extreme, and the first NaN where there is one, as NumPy."""
    return lambda outs, ins, e: _argextreme_lines(better, outs, ins, e)


def _argextreme_lines(better, outs, ins, e):
    a, (o,), (x,) = e.inputs[0].aval, outs, ins
    axis = e.params["axis"]
    if a.dtype.kind not in "iuf" or a.size == 0:
        return None
    if axis is None:
        shape, axis, lines = (a.size,), 0, [f"{o}_x = np.ascontiguousarray({x}).ravel()"]
    else:
        shape, lines = a.shape, [f"{o}_x = {x}"]
    outer = [d for d in range(len(shape)) if d != axis]
    loops, pad, index = loop_nest([f"{o}_i{d}" for d in outer], [shape[d] for d in outer])
    at = list(index)
    at.insert(axis, "{}")
    item = f"{o}_x[{', '.join(at)}]"
    out = dtype_text(e.outputs[0].aval.dtype)
    if outer:
        lines.append(f"{o} = np.empty({tuple_text([shape[d] for d in outer])}, {out})")
    body = [f"{o}_k = 0", f"{o}_best = {item.format('0')}",
            f"if {o}_best == {o}_best:",
            f"    for {o}_j in range(1, {shape[axis]}):",
            f"        {o}_v = {item.format(f'{o}_j')}",
            f"        if {o}_v != {o}_v:",
            f"            {o}_k = {o}_j",
            "            break",
            f"        if {o}_v {better} {o}_best:",
            f"            {o}_best, {o}_k = {o}_v, {o}_j",
            f"{o}[{', '.join(index)}] = {o}_k" if outer else f"{o} = {out}({o}_k)"]
    return lines + loops + [pad + line for line in body]


def argsort(outs, ins, e):
    """Stable argsort along any axis: the rows sorted by runtime.argsort_rows (disk-cached:
    Numba's mergesort, NaN last as in NumPy). Another axis is moved last and back by copy
    loops (an array's .transpose(axes) would compile Numba's formatted axis errors)."""
    a, axis = e.inputs[0].aval, e.params["axis"]
    if a.ndim == 0 or a.dtype.kind not in "fiu":
        return None
    (o,), (x,) = outs, ins
    n = a.shape[axis]
    if axis == a.ndim - 1:
        rows = int(np.prod(a.shape[:-1], dtype=np.int64))
        return [f"{o}_r = _vm.argsort_rows(np.ascontiguousarray({x}).reshape(({rows}, {n})))",
                f"{o} = {o}_r.reshape({tuple_text(a.shape)})"]
    perm = [k for k in range(a.ndim) if k != axis] + [axis]
    back = np.argsort(perm).tolist()
    moved = tuple(a.shape[k] for k in perm)
    rows = int(np.prod(moved[:-1], dtype=np.int64))
    return ([f"{o}_x = np.empty({tuple_text(moved)}, {dtype_text(a.dtype)})"]
            + copy_lines(f"{o}_x", x, a.ndim, lambda c: [c[k] for k in perm])
            + [f"{o}_r = _vm.argsort_rows({o}_x.reshape(({rows}, {n})))",
               f"{o}_m = {o}_r.reshape({tuple_text(moved)})",
               f"{o} = np.empty({tuple_text(a.shape)}, np.intp)"]
            + copy_lines(o, f"{o}_m", a.ndim, lambda c: [c[k] for k in back]))


def searchsorted(outs, ins, e):
    """np.searchsorted through runtime.searchsorted (disk-cached; NumPy's binary search step
    for step) when the sorted array and the keys share a real dtype; otherwise (NumPy casts
    them to a common one) NumPy's own, in objmode."""
    a, v = e.inputs[0].aval, e.inputs[1].aval
    if a.dtype != v.dtype or a.dtype.kind not in "biuf":
        return None
    (o,), (x, keys) = outs, ins
    flat = (f"np.full((1, ), {keys}, {dtype_text(v.dtype)})" if v.ndim == 0
            else f"np.ascontiguousarray({keys}).reshape(({v.size}, ))")
    return [f"{o}_v = {flat}",
            f"{o}_r = _vm.searchsorted({x}, {o}_v, {e.params['side'] == 'right'})",
            _unstacked(o, f"{o}_r", e.outputs[0].aval)]


def _stack_of(o, x, aval):
    """x (..., m, n) as a C-contiguous stack (batch, m, n): the name it is given, and the lines."""
    shape = (int(np.prod(aval.shape[:-2], dtype=np.int64)), *aval.shape[-2:])
    return f"{o}_a", [f"{o}_a = np.ascontiguousarray({x}).reshape({tuple_text(shape)})"]


def _unstacked(o, result, aval):
    """o = the runtime function's stacked result `result`, in o's shape (a scalar for 0-d)."""
    if aval.ndim == 0:
        return f"{o} = {result}[0]"
    return f"{o} = {result}.reshape({tuple_text(aval.shape)})"


def random_bits(outs, ins, e):
    """Threefry-2x32 words for each key of a stack and its first counter (runtime.threefry_bits,
    disk-cached)."""
    keys, out = e.inputs[0].aval, e.outputs[0].aval
    (o,), (k, s) = outs, ins
    batch, n = int(np.prod(keys.shape[:-1], dtype=np.int64)), int(np.prod(e.params["shape"]))
    return [f"{o}_k = np.ascontiguousarray({k}).reshape(({batch}, 2))",
            f"{o}_s = np.ascontiguousarray({s}).reshape(({batch}, 2))",
            f"{o}_r = _vm.threefry_bits({o}_k, {o}_s, {n})", _unstacked(o, f"{o}_r", out)]


def _failing(o, prim, flag, message):
    """Raise NumPy's LinAlgError where a LAPACK function's `flag` says it failed, marked with
    the primitive and the value (where_mark), so that the kernel's caller names the line."""
    return [f"if {flag}:", f"    raise np.linalg.LinAlgError({message + where_mark(o, prim)!r})"]


def lapack(fn, *args, returns=1, fails=None, order=None, when=lambda p: True, vectors=False):
    """A primitive on (stacks of) matrices computed by backend/lapack.py's `fn` (the LAPACK
    routines NumPy calls), for float and complex dtypes and params where `when` holds; the
    others, empty matrices and Numba versions without the entry points, in objmode. `args`:
    the params' source text; `fn` returns `returns` arrays (the outputs first, or at the
    positions `order` gives) and a failure flag where `fails` (NumPy's message) is given, or
    a failure code k where `fails` is a tuple (its k-th message, from 1; 0: no failure).
    vectors: the results include eigen- or singular vectors, whose signs LAPACK chooses; in
    single precision NumPy's LAPACK and SciPy's (which kernels call) can choose differently,
    so only float64 and complex128 compile (float32 and complex64: NumPy's own call)."""
    def lower(outs, ins, e):
        a = e.inputs[0].aval
        if not LAPACK or a.dtype.kind not in "fc" or a.size == 0 or not when(e.params) or any(
                v.aval.dtype.kind not in "fci" for v in e.outputs) or (
                vectors and a.dtype not in (np.float64, np.complex128)):
            return None
        o = outs[0]
        name, lines = _stack_of(o, ins[0], a)
        params = "".join(f", {arg(e.params)}" for arg in args)
        at = order or range(len(outs))
        results = [f"{o}_r{k}" for k in range(returns)]
        for x, k in zip(outs, at):
            results[k] = f"{x}_r"
        lines.append(f"{', '.join(results + [f'{o}_failed'] * bool(fails))} = "
                     f"_vm.{fn}({name}{params})")
        if isinstance(fails, tuple):
            for k, message in enumerate(fails, 1):
                lines += _failing(o, e.prim.name, f"{o}_failed == {k}", message)
        elif fails:
            lines += _failing(o, e.prim.name, f"{o}_failed", fails)
        return lines + [_unstacked(x, results[k], v.aval) for x, k, v in zip(outs, at, e.outputs)]
    return lower


def solve(outs, ins, e):
    """A square system (one matrix, a vector or matrix right-hand side) or a stack of them
    with matrix right-hand sides of the same batch shape, with LAPACK's gesv as NumPy calls it
    (lapack.py); broadcast stacks and mixed dtypes go to NumPy in objmode."""
    a, b = (v.aval for v in e.inputs)
    if not LAPACK or not a.dtype == b.dtype == e.outputs[0].aval.dtype or a.dtype.kind not in "fc":
        return None
    (o,), (x, y) = outs, ins
    n = a.shape[-1]
    if a.ndim == 2 and b.ndim <= 2:
        batch, k = 1, 1 if b.ndim == 1 else b.shape[-1]
    elif a.ndim > 2 and b.ndim == a.ndim and a.shape[:-2] == b.shape[:-2]:    # one batch
        batch, k = int(np.prod(a.shape[:-2], dtype=np.int64)), b.shape[-1]
    else:
        return None
    name, lines = _stack_of(o, x, a)
    return lines + [f"{o}_b = np.ascontiguousarray({y}).reshape({tuple_text((batch, n, k))})",
                    f"{o}_x, {o}_failed = _vm.lapack_solve({name}, {o}_b)",
                    *_failing(o, "solve", f"{o}_failed", "Singular matrix"),
                    f"{o} = {o}_x.reshape({tuple_text(b.shape)})"]


def pinv(outs, ins, e):
    """np.linalg.pinv through lapack_pinv (svd with gesdd), with NumPy's cutoff: rcond, or
    rtol (None: max(m, n) * eps), or 1e-15 when neither is given; hermitian in objmode."""
    kw, a = dict(e.params["kw"]), e.inputs[0].aval
    rcond = kw.get("rcond")
    if rcond is None:
        rtol = kw.get("rtol", 1e-15)
        rcond = max(a.shape[-2:]) * np.finfo(a.dtype).eps if rtol is None else rtol
    return lapack("lapack_pinv", lambda p: repr(float(rcond)), fails="SVD did not converge",
                   when=lambda p: not p["hermitian"])(outs, ins, e)


ROCKET_FFT = importlib.util.find_spec("rocket_fft") is not None
_FFT_NORMS = ("backward", "ortho", "forward")


def fft(outs, ins, e):
    """One-axis FFT through rocket-fft's Numba overloads of np.fft (a port of pocketfft, the
    library NumPy calls: the same results); without rocket-fft, NumPy's in object mode."""
    p, a = e.params, e.inputs[0].aval
    if not ROCKET_FFT or a.dtype.name not in ("float32", "float64", "complex64", "complex128") \
            or p["norm"] not in _FFT_NORMS:
        return None
    (o,), (x,) = outs, ins
    return [f"{o} = np.fft.{p['kind']}({x}, {int(p['n'])}, {int(p['axis'])}, {p['norm']!r})"]
