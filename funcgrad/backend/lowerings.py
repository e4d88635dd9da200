"""The lowering table: how each primitive becomes generated code, in one place keyed by
primitive name (`LOWERINGS`, read through `lowering(prim)`). An entry may give

- `scalar`: the scalar expression of an elementwise primitive, a template over its operands
  ({0}, {1}, ...) and params ({dtype}); it is fused into loop nests. An elementwise primitive
  that wraps a NumPy ufunc needs no entry: `np.<ufunc>({0}, ...)` on scalars, which Numba
  implements with NumPy's semantics;
- `fusion`: the role a non-elementwise primitive can take inside a loop nest (fusion.py, read
  through `role(eqn)`), whose shape `loop_shape(eqn)` gives (None: not fused in that case):
  "index_map" (reads its input at remapped indices, `index_map(eqn, input shape, loop shape,
  loop indices) -> positions`), "reduction" (`reduction`, a `Reduction`: its update and
  start), "scatter" (inputs: the buffer, the values, then index arrays; written into the
  buffer) or "check" (fg.debug_nans's pointwise check);
- `statement`: array-level code, fn(output names, input source texts, equation) -> the lines
  that assign the outputs, or None to fall back to calling the primitive's NumPy implementation
  in numba.objmode (correct for every primitive, but it pays a Python round trip); `check`:
  an fg.debug_nans check (its params name its site and message; its statement also gets the
  loop steps around it);
- `unit_axis` (reshape) and `packs` (concatenate): a concatenation of values each given an
  axis of length 1 is written as one array and a store per value (fusion.packs);
- `structured`: loops and branches, emitter(generator, outs, ins, equation) writing the
  sub-programs inline (loop_emitters.py);
- `fresh`: the generated code always allocates a new array for the result;
- `renames`: the outputs are the (first) inputs themselves, written under the inputs' names.
0-d values are scalars in generated code. The statements are in statements.py, the text
helpers they share with codegen in source_text.py.
"""
from __future__ import annotations

import functools

import numpy as np

from . import check_code, loop_emitters
from . import statements as st
from .source_text import numpy_call


def basic_spec(e):
    """The index spec of a gather/scatter that uses only static slices and integers (so no
    index arrays either), else None."""
    spec = e.params.get("spec")
    if spec is None or any(s[0] not in ("slice", "int") for s in spec):
        return None
    return spec


def slice_positions(spec, in_shape, idx):
    """Source positions (as text) of the element at loop indices `idx` of a basic index."""
    pos, k = [], 0
    for d, s in enumerate(spec):
        if s[0] == "int":
            pos.append(str(s[1] % in_shape[d]))
            continue
        start, _, step = slice(*s[1:]).indices(in_shape[d])
        i = idx[k]
        k += 1
        pos.append(i if (start, step) == (0, 1) else str(start) if i == "0"    # (no loop)
                   else f"{start} + {i}" if step == 1 else f"{start} + {step} * {i}")
    return pos + idx[k:]


def _transposed_positions(e, in_shape, loop_shape, idx):
    perm = e.params["perm"]
    return [idx[perm.index(d)] for d in range(len(perm))]


def _sliced_positions(e, in_shape, loop_shape, idx):
    return slice_positions(e.params["spec"], in_shape, idx)


def _broadcast_positions(e, in_shape, loop_shape, idx):
    return ["0" if in_shape[k] == 1 and loop_shape[d] != 1 else idx[d]
            for k, d in enumerate(e.params["dims"])]


class Reduction:
    """A reduction in a loop nest: its running update and its start value. kind: "sum" (a
    float sum is compensated, codegen's compensated_sum), "max" or "min" (NaN wins), "prod"
    (in index order, one rounding per factor: NumPy's multiply.reduce; always serial)."""

    def __init__(self, kind):
        self.kind, self.is_sum = kind, kind == "sum"

    def loop_shape(self, e):
        """The loop is over the input; max/min of complex numbers are not fused, nor products
        other than of floats and 64-bit integers (NumPy's own code runs those: complex
        products round as NumPy's complex multiply, bool and small-int ones keep their type)."""
        a = e.inputs[0].aval
        if self.kind == "prod":
            ok = a.dtype.kind == "f" or (a.dtype.kind in "iu" and a.dtype.itemsize == 8)
        else:
            ok = a.dtype.kind in "fbiu" or self.is_sum
        return a.shape if ok else None

    def update(self, target, val):
        """Lines adding one value to the running one."""
        if self.is_sum:
            return [f"{target} += {val}"]
        if self.kind == "prod":
            return [f"{target} *= {val}"]
        cmp = ">" if self.kind == "max" else "<"
        return [f"if {val} {cmp} {target} or {val} != {val}:", f"    {target} = {val}"]

    def start(self, dtype):
        """The identity in `dtype` (max of bools starts at False, of ints at the smallest)."""
        if self.is_sum:
            return 0
        if self.kind == "prod":
            return 1
        dt, top = np.dtype(dtype), self.kind == "min"
        if dt.kind == "b":
            return top
        if dt.kind in "iu":
            info = np.iinfo(dt)
            return info.max if top else info.min
        return np.inf if top else -np.inf


class Lowering:
    """One entry of the table (see the module docstring)."""

    __slots__ = ("scalar", "fusion", "statement", "structured", "fresh", "renames", "index_map",
                 "reduction", "check", "unit_axis", "packs", "loop_shape", "by_kind", "inline",
                 "special", "vecmath", "complex_func", "twin")

    def __init__(self, scalar=None, fusion=None, statement=None, structured=None, fresh=False,
                 renames=False, index_map=None, reduction=None, check=False, unit_axis=False,
                 packs=False, loop_shape=None, by_kind=None, inline=False, special=None,
                 vecmath=None, complex_func=False, twin=None):
        self.scalar, self.by_kind, self.inline, self.special = scalar, by_kind or {}, inline, special
        self.vecmath, self.complex_func, self.twin = vecmath, complex_func, twin
        self.statement, self.structured = statement, structured
        self.fresh, self.renames, self.index_map, self.reduction = fresh, renames, index_map, reduction
        self.fusion = ("index_map" if index_map is not None else
                       "reduction" if reduction is not None else fusion)
        self.check, self.unit_axis, self.packs = check, unit_axis, packs
        if loop_shape is None and reduction is not None:
            loop_shape = reduction.loop_shape
        elif loop_shape is None and index_map is not None:
            loop_shape = _output_shape
        self.loop_shape = loop_shape


def _output_shape(e):
    return e.outputs[0].aval.shape


def _scalars(**templates):
    return {name: Lowering(scalar=t) for name, t in templates.items()}


def _complex_func(name, **kw):
    """NumPy's algorithm for complex operands (complexfuncs.py: c_<name>_<dtype>); Numba's
    differ on finite inputs."""
    return Lowering(complex_func=True, by_kind={"c": f"_vm.c_{name}_{{cdtype}}({{0}})"}, **kw)


def _lexicographic(name, scalar=None):
    """NumPy's order of complex numbers (complexmath.py)."""
    return Lowering(scalar=scalar, by_kind={"c": f"_vm.c_{name}({{0}}, {{1}})"})


def _integer_pow_special(e):
    y, dt = e.params["y"], e.outputs[0].aval.dtype
    if y < 0 and dt.kind == "f":
        return f"(1.0 / ({{0}} ** {-y}))"             # Numba raises on 0.0 ** -n
    if e.inputs[0].aval.dtype.kind == "c":          # NumPy's power loop (Numba's z ** 3 is cpow)
        return numpy_call(f"_vm.c_power_{{cdtype}}({{0}}, complex({float(y)!r}, 0.0))", e)
    return None


def _convert_special(e):
    dt = e.outputs[0].aval.dtype
    if e.inputs[0].aval.dtype.kind == "c" and dt.kind in "fiu":
        return f"np.{dt.name}({{0}}.real)"            # NumPy keeps the real part
    return None


def _shift_special(name):
    """NumPy's shifts: defined for every count (vecmath's left_shift_int/right_shift_int)."""
    def special(e):
        dt = np.dtype(e.outputs[0].aval.dtype)
        return f"_vm.{name}_int({{0}}, {{1}}, {8 * dt.itemsize})" if dt.kind in "iu" else None
    return special


_INT_AND_UINT = lambda t: {"i": t, "u": t}          # noqa: E731


LOWERINGS = {
    # elementwise primitives: `scalar` where the code is not np.<ufunc>(...); `by_kind` where
    # Numba's scalar code differs from NumPy's for operands of a kind (infinities, integer
    # division by 0 and of MIN by -1, 0 ** -n, signed zeros, complex numbers), with {one} (1
    # in the result's dtype) and {cdtype} (the complex operand's dtype); `inline` when those
    # are expressions, not calls; `special(eqn)`: the template for cases the others do not
    # cover; `vecmath`: "fast" (in loops: vecmath's vectorisable versions, ~1 ulp, every
    # special value as NumPy) or "accurate" (vecmath's version everywhere: Numba's scalar
    # libm call is less accurate); `twin`: (the function computing this and its twin from one
    # range reduction, this one's position in its results)
    **_scalars(subtract="({0} - {1})", negative="(-{0})", equal="({0} == {1})",
               not_equal="({0} != {1})", select="({1} if {0} else {2})", stop_gradient="{0}",
               checkpoint_name="{0}"),
    # (NumPy's bool + and * are `or` and `and`; Numba's are int arithmetic: True + True is 2,
    # which a later cast or comparison in the same loop would see. NumPy's complex multiply
    # and square loops fuse where its SIMD loops do: LLVM code, not a call)
    "add": Lowering(scalar="({0} + {1})", by_kind={"b": "({0} or {1})"}, inline=True),
    "multiply": Lowering(scalar="({0} * {1})", inline=True, by_kind={
        "b": "({0} and {1})", "c": "_vm.c_multiply({0}, {1})"}),
    "square": Lowering(scalar="({0} * {0})", by_kind={"c": "_vm.c_multiply({0}, {0})"},
                       inline=True),
    "sign": Lowering(by_kind={"f": "(np.sign({0}) + 0.0)"}, inline=True),  # sign(-0.0) is +0.0
    "divide": Lowering(scalar="({0} / {1})", by_kind={"c": "_vm.c_divide({0}, {1}, {one})"}),
    "reciprocal": Lowering(by_kind={"c": "_vm.c_reciprocal({0}, {one})"}),
    "floor_divide": Lowering(by_kind={"f": "_vm.floor_divide({0}, {1})",
                                      **_INT_AND_UINT("_vm.floor_divide_int({0}, {1})")}),
    "remainder": Lowering(by_kind={"f": "_vm.remainder({0}, {1})",
                                   **_INT_AND_UINT("_vm.remainder_int({0}, {1})")}),
    "fmod": Lowering(by_kind=_INT_AND_UINT("_vm.fmod_int({0}, {1})")),
    "power": Lowering(by_kind={"f": "_vm.power({0}, {1})", "c": "_vm.c_power_{cdtype}({0}, {1})"}),
    "integer_pow": Lowering(scalar="({0} ** {y})", special=_integer_pow_special),
    "left_shift": Lowering(special=_shift_special("left_shift")),
    "right_shift": Lowering(special=_shift_special("right_shift")),
    "convert_element_type": Lowering(scalar="{dtype}({0})", special=_convert_special),
    **{name: _lexicographic(name, scalar) for name, scalar in (
        ("less", "({0} < {1})"), ("less_equal", "({0} <= {1})"), ("greater", "({0} > {1})"),
        ("greater_equal", "({0} >= {1})"), ("maximum", None), ("minimum", None), ("fmax", None),
        ("fmin", None))},
    **{name: _complex_func(name) for name in (
        "sqrt", "exp2", "log2", "log10", "tan", "sinh", "cosh", "arcsin", "arccos", "arctan",
        "arcsinh", "arccosh", "arctanh", "absolute")},
    **{name: _complex_func(name, vecmath="fast") for name in ("exp", "expm1", "log", "log1p",
                                                              "tanh")},
    "sin": _complex_func("sin", vecmath="fast", twin=("sin_cos", 0)),
    "cos": _complex_func("cos", vecmath="fast", twin=("sin_cos", 1)),
    "logaddexp": Lowering(vecmath="fast"),
    # scipy.special's (primitives/special_functions.py): libm's erf and erfc, specialmath.py's
    # others, all computed in float64 (numpy_call rounds a float32 result once, as SciPy)
    **{name: Lowering(scalar=call.format("{0}"), by_kind={"f": call.format("np.float64({0})")})
       for name, call in (("erf", "math.erf({})"), ("erfc", "math.erfc({})"),
                          ("gammaln", "_vm.gammaln({})"), ("digamma", "_vm.digamma({})"),
                          ("ndtri", "_vm.ndtri({})"), ("erfinv", "_vm.erfinv({})"),
                          ("polygamma", "_vm.polygamma({{n}}, {})"))},
    "cbrt": Lowering(vecmath="accurate"),
    # inside loop nests (fusion.py); outside them gather and scatter are statements
    "broadcast_in_dim": Lowering(index_map=_broadcast_positions, fresh=True),
    "transpose": Lowering(index_map=_transposed_positions, fresh=True),
    "gather": Lowering(index_map=_sliced_positions, statement=st.gather,
                       loop_shape=lambda e: None if basic_spec(e) is None else _output_shape(e)),
    "reduce_sum": Lowering(reduction=Reduction("sum"), fresh=True),
    "reduce_max": Lowering(reduction=Reduction("max"), fresh=True),
    "reduce_min": Lowering(reduction=Reduction("min"), fresh=True),
    "reduce_prod": Lowering(reduction=Reduction("prod"), fresh=True),
    # (a scatter fused into a loop writes into its buffer: not fresh there, loop_emitters.py)
    "scatter": Lowering(fusion="scatter", statement=st.scatter, fresh=True,      # (over the values)
                        loop_shape=lambda e: None if basic_spec(e) is None else e.inputs[1].aval.shape),
    # array statements
    "cumsum": Lowering(statement=st.cumulative("{acc} + {x}", "0", compensated=True)),
    "cumprod": Lowering(statement=st.cumulative("{acc} * {x}", "1")),
    "argsort": Lowering(statement=st.argsort),
    "searchsorted": Lowering(statement=st.searchsorted),
    "argmax": Lowering(statement=st.argextreme(">")),
    "argmin": Lowering(statement=st.argextreme("<")),
    "solve": Lowering(statement=st.solve, fresh=True),
    "inv": Lowering(statement=st.lapack("lapack_inv", fails="Singular matrix"), fresh=True),
    "det": Lowering(statement=st.lapack("lapack_det"), fresh=True),
    "slogdet": Lowering(statement=st.lapack("lapack_slogdet", returns=2), fresh=True),
    "cholesky": Lowering(statement=st.lapack("lapack_cholesky", lambda p: not p["upper"],
                                           fails="Matrix is not positive definite"), fresh=True),
    "eigh": Lowering(statement=st.lapack("lapack_eigh", lambda p: p["UPLO"] == "L", lambda p: True,
                                       returns=2, fails="Eigenvalues did not converge",
                                       vectors=True), fresh=True),
    "eigvalsh": Lowering(statement=st.lapack("lapack_eigh", lambda p: p["UPLO"] == "L",
                                           lambda p: False, returns=2,
                                           fails="Eigenvalues did not converge"), fresh=True),
    "svd": Lowering(statement=st.lapack("lapack_svd", lambda p: p["full_matrices"], lambda p: True,
                                      returns=3, order=(1, 0, 2), fails="SVD did not converge",
                                      when=lambda p: not p["hermitian"], vectors=True),
                    fresh=True),
    "svdvals": Lowering(statement=st.lapack("lapack_svd", lambda p: False, lambda p: False,
                                          returns=3, fails="SVD did not converge",
                                          when=lambda p: not p["hermitian"]), fresh=True),
    "lu": Lowering(statement=st.lapack("lapack_lu", returns=3), fresh=True),
    "pinv": Lowering(statement=st.pinv, fresh=True),
    "eig": Lowering(statement=st.lapack("lapack_eig", returns=2, vectors=True, fails=(
        "Array must not contain infs or NaNs", "Eigenvalues did not converge")), fresh=True),
    "cofactor": Lowering(statement=st.lapack("lapack_cofactor", fails="SVD did not converge"),
                         fresh=True),
    "fft": Lowering(statement=st.fft, fresh=True),
    "random_bits": Lowering(statement=st.random_bits, fresh=True),
    # fg.debug_nans's checks (check_code.py; the statement also gets the loop steps around
    # it); in loop nests the pointwise check's template is the unchecked value, for code that
    # only counts scalar expressions
    "debug_check": Lowering(statement=check_code.statement, check=True),
    "debug_check_pointwise": Lowering(scalar="{0}", fusion="check", check=True),
    "custom_vjp_call": Lowering(renames=True),
    "remat_barrier": Lowering(renames=True),
    "reshape": Lowering(statement=st.reshape, unit_axis=True),
    "rev": Lowering(statement=st.rev),
    "concatenate": Lowering(statement=st.concatenate, fresh=True, packs=True),
    "contract": Lowering(statement=st.contract, fresh=True),
    # loops and branches: their bodies written inline
    "while_loop": Lowering(structured=loop_emitters.emit_while),
    "scan": Lowering(structured=loop_emitters.emit_scan),
    "cond": Lowering(structured=loop_emitters.emit_cond),
    "while_grad": Lowering(structured=loop_emitters.emit_while_grad),
}
_NONE = Lowering()
# Primitives with no entry: their kernels call the NumPy implementation in numba.objmode: the
# host callbacks, by design (the user's Python runs there).
OBJECT_MODE = ("debug_callback", "pure_callback")


def lowering(prim):
    """The table's entry for a primitive (an empty one: objmode); an elementwise ufunc
    primitive whose entry gives no scalar template gets np.<ufunc>(...)."""
    hit = LOWERINGS.get(prim.name, _NONE)
    if hit.scalar is None and prim.elementwise and isinstance(prim.impl, np.ufunc):
        return _with_ufunc(hit, prim.impl)
    return hit


@functools.lru_cache(maxsize=None)
def _with_ufunc(low, ufunc):
    """A copy of entry `low` whose scalar template calls `ufunc` (Numba implements NumPy's
    ufuncs on scalars with NumPy's semantics)."""
    new = object.__new__(Lowering)
    for field in Lowering.__slots__:
        setattr(new, field, getattr(low, field))
    new.scalar = f"np.{ufunc.__name__}({', '.join('{%d}' % i for i in range(ufunc.nin))})"
    return new


def role(e):
    """The role equation e takes in a loop nest (fusion.py): "index_map", "reduction",
    "scatter", "check" or None (elementwise, or not fused)."""
    return lowering(e.prim).fusion
