"""Source text for generated code: dtypes, literals, loop nests and copies as Python/Numba
text, the mark an error raised in a kernel carries, and printable comments. Imports nothing of
funcgrad.
"""
from __future__ import annotations

import numpy as np


_NUMBA_SCALAR = {"bool": "boolean"}


def numba_type(aval):
    """Numba type string for objmode: a scalar for 0-d, else a C-contiguous array."""
    base = _NUMBA_SCALAR.get(aval.dtype.name, aval.dtype.name)
    if aval.ndim == 0:
        return base
    return f"{base}[{', '.join([':'] * (aval.ndim - 1) + ['::1'])}]"


def tuple_text(xs):
    return "(" + "".join(f"{int(x)}, " for x in xs) + ")"


def dtype_text(dtype):
    dtype = np.dtype(dtype)
    return "np.bool_" if dtype == np.bool_ else f"np.{dtype.name}"


def literal(value, dtype):
    """Source text of a scalar constant with an exact dtype."""
    dt = np.dtype(dtype)
    v = np.asarray(value, dtype=dt).item()
    if dt == np.bool_:
        return "True" if v else "False"
    if dt.kind == "c":
        return f"{dtype_text(dt)}(complex({literal(v.real, 'f8')}, {literal(v.imag, 'f8')}))"
    if dt.kind == "f":
        text = "np.inf" if v == np.inf else "-np.inf" if v == -np.inf else "np.nan" if v != v \
            else repr(float(v))
        return text if dt == np.float64 else f"{dtype_text(dt)}({text})"
    return f"{dtype_text(dt)}({int(v)})"


def numpy_call(template, e):
    """A scalar template that reproduces NumPy's result for equation e's operands, with {one}
    and {cdtype} filled in for complex operands, rounded once to float32 or complex64 (vecmath's
    helpers compute in float64 where a literal meets a float32 value: the result, exact in
    float64, is rounded once, as NumPy's float32 loop)."""
    dtype = e.outputs[0].aval.dtype
    if np.dtype(e.inputs[0].aval.dtype).kind == "c":
        template = template.replace("{one}", f"np.{dtype.name}(1.0)").replace(
            "{cdtype}", np.dtype(e.inputs[0].aval.dtype).name)
    return (f"np.float32({template})" if dtype == np.float32
            else f"np.complex64({template})" if dtype == np.complex64 else template)


def printable(obj):
    """str(obj) with printable characters only: safe in a # comment (no newline can end it),
    and in a string literal once written with repr()."""
    return "".join(c if c.isprintable() else "?" for c in str(obj))


def where_mark(name, prim=None):
    """The end of an error message raised in a kernel for the value `name`: compile.py puts
    the user's line there when it reaches the caller (the compiled text holds no file or line:
    codegen.Generator.where); with `prim`, it adds a note that this primitive failed there,
    as for an error NumPy raises in objmode."""
    return f" [{prim}:{name}]" if prim else f" [{name}]"


def loop_nest(names, sizes):
    """A loop nest `for name in range(size)` (a size of 1 has no loop: its index is 0): the
    lines, the indentation inside it, and the index of each dimension."""
    lines, index = [], []
    for name, n in zip(names, sizes):
        if n == 1:
            index.append("0")
        else:
            lines.append("    " * len(lines) + f"for {name} in range({n}):")
            index.append(name)
    return lines, "    " * len(lines), index


def copy_lines(dst, src, ndim, at=lambda c: c, op="="):
    """`dst[at(c)] = src[c]` (or `op`: +=, *=) for every index c of the ndim-dimensional array
    `src` (a name),
    element by element in a loop nest. One statement assigning an array into a slice goes
    through Numba's fancy_setslice, whose error message formats both shapes: about a second of
    string machinery compiled in every process for each pair of ranks (benchmarks/README.md,
    compile cost); these loops compile to a copy."""
    c = [f"_c{d}" for d in range(ndim)]
    if not ndim:
        return [f"{dst}[{', '.join(at([])) or '()'}] {op} {src}"]
    return ([f"{'    ' * d}for {c[d]} in range({src}.shape[{d}]):" for d in range(ndim)]
            + ["    " * ndim + f"{dst}[{', '.join(at(c))}] {op} {src}[{', '.join(c)}]"])
