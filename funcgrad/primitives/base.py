"""Primitive registry and the structural core that every primitive family builds on.

Owns: `define` (register a primitive), `export` (put a user-facing function into the
`funcgrad.numpy` namespace), `numpy_fallback` (send calls without traced arguments to NumPy's
own function), dtype promotion and broadcasting made explicit as equations
(convert_element_type, broadcast_in_dim), and reshape/transpose/reduce_sum, which the
rules of every other family use. Imports only funcgrad.ir and funcgrad._errors.

Conventions for rules: arrays are positional, static params keyword-only and hashable.
`vjp(ct, *ins, out=..., **params)` returns one cotangent per input, `None` meaning zero.
Rules are written with funcgrad operations, so a derived program is differentiable again.
"""
from __future__ import annotations

import functools
import inspect
from functools import lru_cache

import numpy as np

from .. import ir
from .._errors import ShapeError, out_error, user_frame, where
from ..ir import Aval, Primitive, Traced, aval_of, bind

REGISTRY: dict[str, Primitive] = ir.PRIMITIVES     # (ir.primitive_named reads it: pickling)
NAMESPACE: dict[str, object] = {}   # funcgrad.numpy.<name>
LINALG: dict[str, object] = {}      # funcgrad.numpy.linalg.<name>
FFT: dict[str, object] = {}         # funcgrad.numpy.fft.<name>
# (module, name) -> the funcgrad function that another library's ufunc reaching a traced value
# calls instead (filled by the libraries: fg.scipy.special registers scipy.special's)
FOREIGN_UFUNCS: dict[tuple, object] = {}


_BY_KIND = object()


def define(name, batch=_BY_KIND, **rules) -> Primitive:
    """Create and register a primitive; see ir.Primitive for the rule fields. `batch` is a
    rule, a BatchRule built from the primitive, or None (vmap then maps the primitive example
    by example); by default an elementwise primitive batches by batching its operands."""
    if name in REGISTRY:
        raise ValueError(f"primitive {name!r} defined twice")
    prim = REGISTRY[name] = Primitive(name, **rules)
    if batch is _BY_KIND:
        batch = operands_batch() if prim.elementwise else None
    prim.batch = batch.make(prim) if isinstance(batch, BatchRule) else batch
    return prim


# ---- batch rules (vmap) ------------------------------------------------------------------------
# rule(inputs, batched_flags, size, **params) -> outputs batched on axis 0, or NotImplemented to
# leave the case to the example-by-example fallback (transforms/batching.py).

class BatchRule:
    """A batch rule that binds its own primitive again: define() calls make(primitive)."""

    def __init__(self, make):
        self.make = make


def batched(x, flag, size):
    """x with a leading batch axis (broadcast when it has none)."""
    if flag:
        return x
    a = aval_of(x)
    return broadcast_in_dim(x, (size,) + a.shape, tuple(range(1, 1 + a.ndim)), force=True)


def all_batched(ins, flags, size):
    return [batched(x, f, size) for x, f in zip(ins, flags)]


def operands_batch():
    """Batch every operand, keep the params: elementwise primitives (broadcasts are explicit)
    and linear algebra, which already maps over leading axes."""
    return BatchRule(lambda prim: lambda ins, fl, size, **p: prim.bind(*all_batched(ins, fl, size), **p))


def shifted_batch(key, fn):
    """Batch every operand and rewrite the axis parameter `key` with fn(value, size)."""
    def make(prim):
        def rule(ins, fl, size, **p):
            p = dict(p)
            p[key] = fn(p[key], size)
            return prim.bind(*all_batched(ins, fl, size), **p)
        return rule
    return BatchRule(make)


def plus1(axes, size):
    return tuple(a + 1 for a in axes)


def next_axis(axis, size):
    return axis + 1


# Functions whose array arguments are themselves sequences of arrays; every other exported
# function gets list/tuple arguments that hold traced values stacked into one array, as NumPy
# would convert them.
SEQUENCE_ARGS = {"concatenate", "concat", "stack", "hstack", "vstack", "row_stack", "dstack",
                 "column_stack", "array", "asarray", "asanyarray", "ascontiguousarray",
                 "multi_dot", "block", "broadcast_arrays", "einsum", "meshgrid", "select"}


def as_array(seq):
    """fnp.array(seq): a list or tuple holding traced values, stacked into one array. Looked up
    in NAMESPACE when called: the stacking binds shape.py's concatenate, whose rules slice with
    indexing.py, so neither this module nor indexing.py can import it."""
    return NAMESPACE["array"](seq)


def _accept_sequences(fn):
    """Wrap fn so that list/tuple arguments holding traced values become arrays first."""
    def wrapper(*args, **kwargs):
        if any(type(a) in (list, tuple) and has_traced(a) for a in args):
            args = [as_array(a) if type(a) in (list, tuple) and has_traced(a)
                    else a for a in args]
        return fn(*args, **kwargs)
    wrapper.__name__, wrapper.__qualname__ = fn.__name__, fn.__qualname__
    wrapper.__doc__, wrapper.__wrapped__ = fn.__doc__, fn
    return wrapper


def export(*names, linalg=False, fft=False, numpy=None, traced=None, check=None):
    """Decorator: publish a function as funcgrad.numpy.<name> (or funcgrad.numpy.linalg.<name>,
    funcgrad.numpy.fft.<name>). numpy: NumPy's own function, which answers every call whose
    arguments (those named in `traced`) hold no traced value, so plain arrays get exactly
    NumPy's answer (`numpy_fallback`; `check`: has_traced, the default, or is_traced).

        >>> @export(numpy=np.tile, traced=("A", "reps"))
        ... def tile(A, reps): ...         # only runs when A or reps holds a traced value
    """
    def deco(fn):
        looked_at = traced
        if "out" in inspect.signature(fn).parameters:
            label = ("linalg." if linalg else "fft." if fft else "") + (names or (fn.__name__,))[0]
            fn = _out_argument(fn, label.rstrip("_"), writes_out=numpy is None)
            if traced is not None:              # a traced buffer with plain inputs: refused too
                looked_at = (*traced, "out")
        if numpy is not None:
            fn = numpy_fallback(numpy, looked_at, check=check or has_traced)(fn)
        table = LINALG if linalg else FFT if fft else NAMESPACE
        for n in names or (fn.__name__.rstrip("_"),):
            table[n] = fn if n in SEQUENCE_ARGS or n.startswith("_") else _accept_sequences(fn)
        return fn
    return deco


def _out_argument(fn, label, writes_out):
    """NumPy's `out=` for a function that has the parameter: given with traced values, a
    MutationError at the user's line (traced arrays are immutable); on plain arrays, NumPy's
    behaviour (a function with a NumPy fallback, which wraps this one, hands those calls to
    NumPy; otherwise the result is written into `out`, cast as NumPy casts, and `out` is
    returned)."""
    params = list(inspect.signature(fn).parameters.values())
    at = [p.name for p in params].index("out")
    positional = params[at].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                     inspect.Parameter.POSITIONAL_OR_KEYWORD)

    @functools.wraps(fn, updated=())
    def wrapper(*args, **kwargs):
        given_at = positional and len(args) > at
        out = args[at] if given_at else kwargs.get("out")
        if out is None:
            return fn(*args, **kwargs)
        if has_traced(*args, *kwargs.values()):
            raise out_error(label)
        if not writes_out:
            return fn(*args, **kwargs)
        if given_at:
            args = (*args[:at], None, *args[at + 1:])
        else:
            kwargs = {k: v for k, v in kwargs.items() if k != "out"}
        np.copyto(out, fn(*args, **kwargs), casting="same_kind")
        return out
    return wrapper


def is_traced(*xs):
    return any(isinstance(x, Traced) for x in xs)


def has_traced(*xs):
    """Whether any argument is traced, looking inside lists, tuples and dicts."""
    for x in xs:
        if isinstance(x, Traced):
            return True
        if isinstance(x, (list, tuple)) and has_traced(*x):
            return True
        if isinstance(x, dict) and has_traced(*x.values()):
            return True
    return False


def _own_keywords(sig, np_fn):
    """The keyword parameters of sig that NumPy's np_fn does not take (empty where np_fn's
    signature cannot be read or takes **kwargs)."""
    try:
        theirs = inspect.signature(np_fn).parameters
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is p.VAR_KEYWORD for p in theirs.values()):
        return frozenset()
    return frozenset(n for n, p in sig.parameters.items()
                     if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)) - set(theirs)


def numpy_fallback(np_fn, traced=None, *, check=has_traced):
    """Decorator for a NumPy function written with funcgrad operations: unless check(arguments)
    finds a traced value, the call goes to NumPy's own np_fn with the same arguments, so plain
    arrays get exactly NumPy's answer. `traced` names the parameters to look at (default: every
    argument given; a *args or **kwargs parameter contributes each of its values); `check` is
    has_traced (looks inside lists, tuples and dicts) or is_traced (the values themselves).
    Functions of funcgrad.numpy get it from `export(numpy=...)`. A keyword of fn's that np_fn
    lacks (jax.numpy's size=, length=, fill_value=) sends the call to fn, plain arrays or not.
    """
    def deco(fn):
        sig = inspect.signature(fn)
        own = _own_keywords(sig, np_fn)
        names = None if traced is None else tuple(traced)
        if names is not None and not set(names) <= set(sig.parameters):
            raise TypeError(f"numpy_fallback: {fn.__name__} has no parameter "
                            f"{sorted(set(names) - set(sig.parameters))}")
        star = {n: p.kind for n, p in sig.parameters.items()
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        slots = None        # without *args, **kwargs: each name's position (or None), no bind
        if names is not None and not star:
            slots = [(p.name, i if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else None)
                     for i, p in enumerate(sig.parameters.values()) if p.name in names]

        def selected(args, kwargs):
            if names is None:
                return (*args, *kwargs.values())
            if slots is not None:
                return [args[i] if i is not None and i < len(args) else kwargs.get(n)
                        for n, i in slots]
            bound = sig.bind(*args, **kwargs).arguments
            values = []
            for n in names:
                if n not in bound:
                    continue
                if n not in star:
                    values.append(bound[n])
                else:
                    v = bound[n]
                    values.extend(v if star[n] is inspect.Parameter.VAR_POSITIONAL else v.values())
            return values

        @functools.wraps(fn, updated=())
        def wrapper(*args, **kwargs):
            try:
                values = selected(args, kwargs)
            except TypeError:                   # arguments fn does not take: fn's own error
                return fn(*args, **kwargs)
            if own and kwargs and not own.isdisjoint(kwargs):
                return fn(*args, **kwargs)
            return fn(*args, **kwargs) if check(*values) else np_fn(*args, **kwargs)
        return wrapper
    return deco


def record(prim, *args, **params):
    """bind, but stage into the active trace even when every argument is concrete (used to
    broadcast constants lazily instead of baking large arrays into a program)."""
    trace = ir.current_trace()
    if trace is None:
        return prim.impl(*args, **params)
    return trace.record(prim, args, params)


def shape_error(msg):
    return ShapeError(f"{msg}{where(user_frame())}")


# ---- dtypes -------------------------------------------------------------------------------

def dtype_or_pytype(x):
    """What NumPy's type resolution sees: Python scalars stay weak (int/float/complex)."""
    if isinstance(x, (bool, np.bool_)) and not isinstance(x, np.ndarray):
        return np.dtype(bool)
    if type(x) in (int, float, complex):
        return type(x)
    a = aval_of(x)
    if a.weak:
        return {"f": float, "c": complex, "i": int, "u": int}.get(a.dtype.kind, a.dtype)
    return a.dtype


_OBJECT = np.dtype(object)


@lru_cache(maxsize=4096)
def resolve_ufunc(ufunc, in_types):
    """NumPy's own answer: (input dtypes to cast to, output dtype) for `ufunc` on `in_types`.
    Two Python ints (a loop counter and a literal) compare as int64: NumPy 2 picks its object
    loop for comparisons of two Python ints, which compiled code cannot run."""
    try:
        dts = ufunc.resolve_dtypes(tuple(in_types) + (None,) * ufunc.nout)
        if _OBJECT in dts and _OBJECT not in in_types:
            in_types = tuple(np.dtype(t) if isinstance(t, type) else t for t in in_types)
            dts = ufunc.resolve_dtypes(tuple(in_types) + (None,) * ufunc.nout)
    except TypeError as e:
        names = ", ".join(getattr(t, "name", getattr(t, "__name__", str(t))) for t in in_types)
        raise TypeError(f"np.{ufunc.__name__} does not support inputs of type ({names}): {e}") from None
    return dts[:ufunc.nin], dts[ufunc.nin]


def real_dtype(dtype):
    """The dtype of a complex dtype's parts (complex64 -> float32: eigenvalues, moduli, FFTs
    of real signals); other dtypes unchanged."""
    dtype = np.dtype(dtype)
    return np.empty(0, dtype).real.dtype if dtype.kind == "c" else dtype


def float_dtype(dtype):
    """The floating dtype NumPy computes a transcendental function of `dtype` in."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in "fc" else np.result_type(dtype, np.float16)


def convert(x, dtype, weak=False):
    """x as `dtype`. weak=True makes a traced value promote like a Python number (a loop
    counter added to an int32 array keeps it int32, as NumPy does with `a + 3`)."""
    dtype = np.dtype(dtype)
    if isinstance(x, Traced):
        if weak:
            return convert_element_type_p.bind(x, dtype=dtype, weak=True)
        return x if x.aval.dtype == dtype else convert_element_type_p.bind(x, dtype=dtype)
    return np.asarray(x, dtype=dtype)


# ---- identity rules (ir.Primitive.identity_input; read by transforms/simplify.py) ----------

def is_unit(value, dtype, unit):
    """Whether combining any x of `dtype` with `value` gives x, for the unit "one" (x * 1,
    x / 1: real x only, complex z * 1 is not z at infinities), "-0.0" (x + -0.0: IEEE's
    additive unit, as -0.0 + 0.0 is +0.0) or "+0.0" (x - +0.0); integers: 1 or 0."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return False
    kind = np.dtype(dtype).kind
    if unit == "one":
        return kind in "fiu" and value == 1
    if kind in "iu":
        return value == 0
    parts = (value.real, value.imag) if kind == "c" else (value,)
    negative = unit == "-0.0"
    return kind in "fc" and all(p == 0 and bool(np.signbit(p)) == negative for p in parts)


def unit_identity(unit, sides=(0,)):
    """identity_input rule of a binary operation: the operand at a position in `sides` whose
    other operand holds `unit` everywhere (and that has the output's shape and dtype)."""
    def rule(eqn, value_of):
        ins, out = eqn.inputs, eqn.outputs[0].aval
        for k in sides:
            if ins[k].aval == out and is_unit(value_of(ins[1 - k]), out.dtype, unit):
                return ins[k]
        return None
    return rule


def unchanged_identity(eqn, value_of):
    """identity_input rule of a reshape, cast or broadcast to what its input already is."""
    return eqn.inputs[0] if eqn.inputs[0].aval == eqn.outputs[0].aval else None


def _convert_vjp(ct, x, *, out, dtype, weak=False):
    # complex -> real keeps the real part, so the two directions are each other's transpose:
    # real -> complex sends back the cotangent's real part, complex -> real embeds it
    src = aval_of(x).dtype
    return (convert(ct, src) if src.kind in "fc" else None,)


def _convert_impl(x, *, dtype, weak=False):
    x = np.asarray(x)
    if x.dtype.kind == "c" and np.dtype(dtype).kind in "fiu":
        x = x.real        # np.real, without astype's ComplexWarning: funcgrad.numpy.real uses it
    return x.astype(dtype)


convert_element_type_p = define(
    "convert_element_type", elementwise=True,
    # (float to integer is undefined for NaN and out-of-range values: left to each CPU)
    exact=lambda eqn: not (eqn.inputs[0].aval.dtype.kind in "fc"
                           and np.dtype(eqn.params["dtype"]).kind in "iu"),
    impl=_convert_impl,
    abstract=lambda a, *, dtype, weak=False: Aval(a.shape, dtype, weak),
    vjp=_convert_vjp, identity_input=unchanged_identity)


# ---- broadcasting ---------------------------------------------------------------------------

def broadcast_shapes(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise shape_error("operands could not be broadcast together with shapes "
                          + " ".join(str(tuple(s)) for s in shapes)) from None


def _bid_expanded(in_shape, shape, dims):
    expanded = [1] * len(shape)
    for i, d in enumerate(dims):
        expanded[d] = in_shape[i]
    return expanded


def _bid_impl(x, *, shape, dims):
    x = np.asarray(x)
    return np.broadcast_to(x.reshape(_bid_expanded(x.shape, shape, dims)), shape)


def _bid_abstract(a, *, shape, dims):
    if len(dims) != a.ndim or any(a.shape[i] not in (1, shape[d]) for i, d in enumerate(dims)):
        raise ShapeError(f"broadcast_in_dim: cannot broadcast {a} to {shape} along {dims}")
    return Aval(shape, a.dtype)


def _bid_vjp(ct, x, *, out, shape, dims):
    xshape = aval_of(x).shape
    summed = [d for d in range(len(shape)) if d not in dims]
    summed += [d for i, d in enumerate(dims) if xshape[i] == 1 and shape[d] != 1]
    ct = reduce_sum(ct, tuple(sorted(summed)))
    return (reshape(ct, xshape),)


broadcast_in_dim_p = define(
    "broadcast_in_dim", exact=True, moves=True, impl=_bid_impl, abstract=_bid_abstract, vjp=_bid_vjp,
    identity_input=unchanged_identity, repeats=True,
    batch=BatchRule(lambda prim: lambda ins, fl, size, *, shape, dims: prim.bind(
        ins[0], shape=(size,) + tuple(shape), dims=(0,) + tuple(d + 1 for d in dims))))


def broadcast_in_dim(x, shape, dims, force=False):
    shape = tuple(shape)
    if aval_of(x).shape == shape:
        return x
    if force or isinstance(x, Traced):
        return record(broadcast_in_dim_p, x, shape=shape, dims=tuple(dims))
    return _bid_impl(x, shape=shape, dims=tuple(dims))


def broadcast_to(x, shape, force=False):
    """Broadcast with NumPy's rules (align trailing dims), as an explicit equation."""
    a = aval_of(x)
    shape = tuple(shape)
    if a.shape == shape:
        return x
    if broadcast_shapes(a.shape, shape) != shape:
        raise shape_error(f"cannot broadcast an array of shape {a.shape} to shape {shape}")
    return broadcast_in_dim(x, shape, tuple(range(len(shape) - a.ndim, len(shape))), force)


def full(shape, value, dtype):
    """An array of `value`; staged as a broadcast of a scalar when tracing (never a big constant)."""
    return broadcast_in_dim(np.asarray(value, dtype=dtype), tuple(shape), (), force=True)


def zeros_like_aval(a: Aval):
    return full(a.shape, 0, a.dtype)


# ---- elementwise application ----------------------------------------------------------------

def apply_elementwise(prim, ufunc, *args):
    """Promote dtypes as `ufunc` would, broadcast explicitly, then bind `prim`."""
    if not is_traced(*args):
        return ufunc(*args)
    types = tuple(dtype_or_pytype(a) for a in args)
    in_dtypes, out_dtype = resolve_ufunc(ufunc, types)
    args = [convert(a, dt) for a, dt in zip(args, in_dtypes)]
    shape = broadcast_shapes(*[aval_of(a).shape for a in args])
    args = [broadcast_to(a, shape, force=True) for a in args]
    out = bind(prim, *args)
    if out_dtype.kind in "iufc" and all(isinstance(t, type) for t in types):
        out = out.weakened()    # Python numbers in, a Python number out: 0.1 * i stays weak
    return out


def elementwise_abstract(ufunc):
    def abstract(*avals):
        shape = avals[0].shape
        if any(a.shape != shape for a in avals):
            raise ShapeError(f"{ufunc.__name__}: operand shapes differ: {avals}")
        return Aval(shape, resolve_ufunc(ufunc, tuple(a.dtype for a in avals))[1])
    return abstract


# ---- reshape, transpose, reduce_sum ---------------------------------------------------------

reshape_p = define(
    "reshape", exact=True, moves=True,
    impl=lambda x, *, shape: np.reshape(x, shape),
    abstract=lambda a, *, shape: Aval(shape, a.dtype),
    vjp=lambda ct, x, *, out, shape: (reshape(ct, aval_of(x).shape),),
    identity_input=unchanged_identity,
    batch=shifted_batch("shape", lambda shape, size: (size,) + tuple(shape)))


def reshape(x, shape):
    """Reshape (C order); one dimension may be -1."""
    shape = tuple(int(d) for d in shape)
    a = aval_of(x)
    if shape.count(-1) == 1:
        rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if rest == 0 or a.size % rest:
            raise shape_error(f"cannot reshape array of size {a.size} into shape {shape}")
        shape = tuple(a.size // rest if d == -1 else d for d in shape)
    if a.shape == shape:
        return x
    if int(np.prod(shape, dtype=np.int64)) != a.size:
        raise shape_error(f"cannot reshape array of size {a.size} (shape {a.shape}) into shape {shape}")
    return reshape_p.bind(x, shape=shape) if isinstance(x, Traced) else np.reshape(x, shape)


transpose_p = define(
    "transpose", exact=True, moves=True,
    impl=lambda x, *, perm: np.transpose(x, perm),
    abstract=lambda a, *, perm: Aval(tuple(a.shape[p] for p in perm), a.dtype),
    vjp=lambda ct, x, *, out, perm: (transpose(ct, tuple(np.argsort(perm).tolist())),),
    identity_input=lambda eqn, value_of: (
        eqn.inputs[0] if tuple(eqn.params["perm"]) == tuple(range(len(eqn.params["perm"])))
        else None),
    merge=lambda eqn, inner: None if inner.prim is not eqn.prim else ir.Eqn(   # one permutation
        eqn.prim, [inner.inputs[0]], eqn.outputs,
        {"perm": tuple(inner.params["perm"][i] for i in eqn.params["perm"])}, eqn.src),
    batch=shifted_batch("perm", lambda perm, size: (0,) + tuple(p + 1 for p in perm)))


def transpose(x, perm):
    perm = tuple(int(p) for p in perm)
    if perm == tuple(range(len(perm))):
        return x
    return transpose_p.bind(x, perm=perm)


def _reduce_shape(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


reduce_sum_p = define(
    "reduce_sum",
    impl=lambda x, *, axes: np.asarray(np.sum(x, axis=axes, dtype=np.asarray(x).dtype)),
    abstract=lambda a, *, axes: Aval(_reduce_shape(a.shape, axes), a.dtype),
    vjp=lambda ct, x, *, out, axes: (
        broadcast_in_dim(ct, aval_of(x).shape,
                         tuple(i for i in range(aval_of(x).ndim) if i not in axes)),),
    batch=shifted_batch("axes", plus1))


def reduce_sum(x, axes):
    axes = tuple(sorted(axes))
    if not axes:
        return x
    return reduce_sum_p.bind(x, axes=axes)


def normalize_axes(axis, ndim, name="axis"):
    """axis (None, int or tuple) -> sorted tuple of non-negative ints; NumPy's error if out of range."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    out = []
    for ax in axes:
        ax = int(ax)
        if not -ndim <= ax < max(ndim, 1) or (ndim == 0 and ax not in (0, -1)):
            raise np.exceptions.AxisError(f"{name} {ax} is out of bounds for array of dimension {ndim}")
        out.append(ax % max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in '{name}'")
    return tuple(sorted(out)) if ndim else ()
