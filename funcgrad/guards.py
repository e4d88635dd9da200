"""What a function reads from outside its arguments, and whether that changed since.

`state_key(f)` walks everything a trace of f could read besides its arguments (tiering.py's
docstring lists what) and builds a comparable key of it: exact, but a walk of every value on
every call (about 0.5 us per value). `compile_guard(f, key)` turns one walk into generated
straight-line Python that checks the same values where they were found, by identity where
that is enough and by value or content where it is not: a few hundred nanoseconds for the
usual closure. A guard is only a shortcut: when it passes, state_key(f) would equal `key`
(tests/test_guards.py checks this against the walk on random states and mutations); when it
fails, the caller walks.
"""
from __future__ import annotations

import array
import collections
import functools
import os
import sys
import sysconfig
import types

import numpy as np

from .ir import Program, Traced, Var

__all__ = ["Unguardable", "state_key", "value_key", "trace_key", "compile_guard"]
# ---- the state a function reads -------------------------------------------------------------

_DEPTH = 6           # how many containers/attributes/helpers deep the walk goes
_BUDGET = 5000       # values visited per call at most
_SMALL_ARRAY = 4096  # bytes: smaller arrays count by their bytes, larger by a digest


class Unguardable(Exception):
    """f reads more state than the guards watch."""


def _library_roots():
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots |= {os.path.join(here, "funcgrad"), os.path.join(here, "transforms")}
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots)


_LIB_ROOTS = _library_roots()
_LIB_PACKAGES = frozenset({"funcgrad", "numpy", "numba", "scipy", "builtins"})
@functools.lru_cache(maxsize=4096)
def _library_file(filename):
    """Code in the standard library, site-packages or funcgrad itself, generated ("<funcgrad
    ...>") or not: not the user's, its globals are not watched (wider than _errors' notion)."""
    return (filename.startswith(("<frozen", "<funcgrad"))
            or os.path.realpath(filename).startswith(_LIB_ROOTS))


def library_code(code):
    """Whether a code object is library code (_library_file), cached per code object."""
    lib = _LIBRARY_CODE.get(code)
    if lib is None:
        if len(_LIBRARY_CODE) > 100_000:
            _LIBRARY_CODE.clear()
        lib = _LIBRARY_CODE[code] = _library_file(code.co_filename)
    return lib


@functools.lru_cache(maxsize=4096)
def _library_module(name):
    top = (name or "builtins").partition(".")[0]
    file = (getattr(sys.modules.get(top), "__file__", None)      # (a namespace package:
            or getattr(sys.modules.get(name), "__file__", None))   # its module's file)
    return (top in _LIB_PACKAGES or top in sys.stdlib_module_names or file is None
            or _library_file(file))


_names_cache: dict = {}
_DYNAMIC_LOOKUPS = frozenset({"globals", "vars", "getattr", "hasattr"})


def _global_names(code):
    """Names that `code` and the code nested in it (lambdas, comprehensions) look up; where it
    looks names up by string (`globals()["scale"]`, `getattr(cfg, "scale")`), the string
    constants that could be names too."""
    names = _names_cache.get(code)
    if names is None:
        found, strings, todo = set(), set(), [code]
        while todo:
            c = todo.pop()
            found.update(c.co_names)
            strings.update(k for k in c.co_consts if type(k) is str and k.isidentifier())
            todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
        if found & _DYNAMIC_LOOKUPS:
            found |= strings
        names = tuple(sorted(found))
        if len(_names_cache) > 10_000:
            _names_cache.clear()
        _names_cache[code] = names
    return names


def _module_reads(module, names, name):
    """The attributes of a module named `name` that a function naming `names` reads and the
    walk keys: all of them for a user's module; for a library's module its data (`os.environ`,
    a package's settings), not its functions, classes and submodules (fixed once made)."""
    if not _library_module(module.__name__):
        return [a for a in names if a != name]
    return [a for a in names if a != name and not _fixed(getattr(module, a, None))]


def _arraylike_key(v):
    """The content of an object NumPy can read as an array (None where it cannot: then the
    object counts by its attributes and identity only)."""
    try:
        return _array_key(np.asarray(v), identity=False)
    except Exception:
        return None


def _class_reads(cls):
    """What a user's class holds that its instances read: its attributes, and its special
    methods (`__call__`, `__getitem__`, ... run the user's code), not its bookkeeping."""
    return [(k, x) for k, x in vars(cls).items()
            if not k.startswith("__") or type(x) is types.FunctionType or type(x) in _DESCRIPTORS]


def _slots(t):
    """The data slots of t's instances (a single name or a sequence; not __weakref__)."""
    slots = getattr(t, "__slots__", ())
    return (slots,) if isinstance(slots, str) else [s for s in slots if not s.startswith("__")]


def _fixed(x):
    return x is None or callable(x) or isinstance(x, types.ModuleType)


def _buffer_key(v):
    """The content of a mutable buffer (bytearray, array.array, memoryview): its bytes, or a
    digest of them when large (as arrays)."""
    try:
        a = np.frombuffer(v, np.uint8)
    except (ValueError, TypeError, BufferError):      # (a strided memoryview)
        a = np.frombuffer(v.tobytes(), np.uint8)
    content = a.tobytes() if a.nbytes <= _SMALL_ARRAY else _digest(a)
    return (getattr(v, "typecode", None), content)


def _array_key(a, identity=True):
    if a.dtype.hasobject:
        content = tuple(id(x) for x in a.flat)
    elif a.nbytes <= _SMALL_ARRAY:
        content = a.tobytes()
    else:
        from .digest import array_digest
        content = array_digest(a)
    return (np.ndarray, id(a) if identity else None, a.shape, a.dtype.str, content)


(_ATOM, _FLOAT, _GENERIC, _ARRAY, _IDENTITY, _TUPLE, _SEQ, _DICT, _SET, _FUNCTION, _METHOD,
 _PARTIAL, _PROGRAM, _VAR, _CLASS, _BUILTIN, _VALUE, _LIBRARY, _OBJECT, _BUFFER, _DESCRIPTOR) = (
    "atom", "float", "generic", "array", "identity", "tuple", "seq", "dict", "set", "function",
    "method", "partial", "program", "var", "class", "builtin", "value", "library", "object",
    "buffer", "descriptor")
_BUFFERS = (bytearray, array.array, memoryview)
# A descriptor on a user's class runs the user's code when read (`cfg.scale`): the function
# behind it is walked as the user's own.
_DESCRIPTORS = {property: "fget", staticmethod: "__func__", classmethod: "__func__",
                functools.cached_property: "func"}
_ATOMS = (bool, int, str, bytes, type(None), complex, type(Ellipsis), slice, range)
_CATEGORY: dict = {}
_LIBRARY_CODE: dict = {}       # code object -> defined in library code (cleared when large)


def _categorize(t):
    """How _Walker.key treats values of type t (computed once per type)."""
    if t is float:
        cat = _FLOAT
    elif t in _ATOMS:
        cat = _ATOM
    elif issubclass(t, np.generic):
        cat = _GENERIC
    elif issubclass(t, np.ndarray):
        cat = _ARRAY
    elif issubclass(t, (types.ModuleType, Traced)):
        cat = _IDENTITY
    elif t is tuple:
        cat = _TUPLE
    elif issubclass(t, (tuple, list)):
        cat = _SEQ
    elif issubclass(t, dict):
        cat = _DICT
    elif issubclass(t, (set, frozenset)):
        cat = _SET
    elif t is types.FunctionType:
        cat = _FUNCTION
    elif t is types.MethodType:
        cat = _METHOD
    elif issubclass(t, functools.partial):
        cat = _PARTIAL
    elif issubclass(t, Program):
        cat = _PROGRAM
    elif issubclass(t, Var):
        cat = _VAR
    elif issubclass(t, type):
        cat = _CLASS
    elif t in (types.BuiltinFunctionType, types.MethodWrapperType):
        cat = _BUILTIN
    elif issubclass(t, _BUFFERS):
        cat = _BUFFER
    elif t in _DESCRIPTORS:
        cat = _DESCRIPTOR
    elif issubclass(t, collections.deque):
        cat = _SEQ
    elif (t.__module__ or "builtins").partition(".")[0] in _LIB_PACKAGES:
        cat = _VALUE if t.__hash__ is not object.__hash__ and t.__eq__ is not object.__eq__ \
            else _LIBRARY
    else:
        cat = _OBJECT
    if len(_CATEGORY) > 10_000:          # (classes made at run time would pile up)
        _CATEGORY.clear()
    _CATEGORY[t] = cat
    return cat


class _Walker:
    """Builds a hashable, comparable key of a value and everything reachable from it that a
    trace could read (see the module docstring)."""

    def __init__(self, by_value=False, library=False):
        # by_value: compare funcgrad's own objects by content (a program's params, made anew
        # by each trace), with no budget (which bounds the state a guard watches); library:
        # walk library functions' closures too (keys of solver helpers, runners.py)
        self.budget = float("inf") if by_value else _BUDGET
        self.by_value, self.library = by_value, by_value or library
        self.seen, self.var_names, self.fresh = {}, {}, {}
        self.codes: set = set()          # the code objects whose state this walk covered

    def key(self, v, depth=_DEPTH):
        t = type(v)
        cat = _CATEGORY.get(t) or _categorize(t)
        if cat is _ATOM:
            return (t, v)
        if cat is _FLOAT:               # (0.0 and -0.0 differ: 1/x tells them apart)
            return (t, v) if v and v == v else (t, repr(v))
        self.budget -= 1
        if cat is _FUNCTION:
            if library_code(v.__code__) and not self.library:
                # funcgrad's and other libraries' functions are fixed once made; funcgrad's
                # wrappers (grad, vmap, ...) point at the user's function through __wrapped__,
                # and at other functions of the user's they run through __funcgrad_reads__
                return (id(v),) + self.wraps(v, depth)
            return self.function(v, depth) if depth > 0 else (t, id(v))
        if cat is _TUPLE or cat is _SEQ or cat is _DICT or cat is _SET:
            self.budget -= len(v)
        if self.budget < 0:
            raise Unguardable(f"it reads more than {_BUDGET} values from outside its arguments")
        if cat is _GENERIC:
            return (t, v.tobytes())
        if cat is _ARRAY:
            return _array_key(v)
        if cat is _BUFFER:
            return (t, _buffer_key(v))
        if cat is _IDENTITY or depth <= 0:
            return (t, id(v))
        if cat is _DESCRIPTOR:
            return (t, self.key(getattr(v, _DESCRIPTORS[t]), depth))
        if cat is _VALUE:                       # an immutable value type of ours (PyTreeDef)
            return (t, v)
        d = depth - 1
        if cat is _TUPLE:                       # immutable, no cycles: compared where repeated
            return (t, tuple([self.key(x, d) for x in v]))
        if cat is _VAR:                         # the same variable of the same program
            return ("var", self.var_names.setdefault(v.id, len(self.var_names)))
        if cat is _PROGRAM:
            return self.program(v)
        hit = self.seen.get(id(v))
        if hit is not None:                     # met before in this walk (cycles end here)
            return ("seen", hit[1])
        self.seen[id(v)] = (v, len(self.seen))
        if cat is _SEQ:
            return (t, tuple([self.key(x, d) for x in v]))
        if cat is _DICT:                        # (string keys as they are: the common case)
            return (t, tuple([(k if isinstance(k, str) else self.key(k, d), self.key(x, d))
                              for k, x in v.items()]))
        if cat is _SET:
            return (t, frozenset(v))
        if cat is _METHOD:
            return (t, self.key(v.__self__, d), self.key(v.__func__, depth))
        if cat is _PARTIAL:
            return (t, self.key(v.func, depth), self.key(v.args, d), self.key(v.keywords, d))
        if cat is _CLASS:
            if _library_module(v.__module__):
                return (t, id(v))
            return (t, id(v), tuple([(k, self.key(x, d)) for k, x in _class_reads(v)]),
                    tuple([self.key(b, d) for b in v.__bases__]))
        if cat is _BUILTIN:
            owner = getattr(v, "__self__", None)
            return (t, id(v)) if owner is None or isinstance(owner, types.ModuleType) else (
                t, v.__name__, self.key(owner, d))
        if cat is _LIBRARY:
            if not self.by_value:
                return (t, id(v)) + self.wraps(v, depth)
            if hasattr(v, "__trace_key__"):
                return (t, self.key(v.__trace_key__, depth))
            if not (hasattr(v, "__dict__") or hasattr(t, "__slots__")):
                return (t, id(v))
        parts = [t, id(t) if cat is _LIBRARY else self.key(t, d)]   # the class: its methods
        if hasattr(v, "__dict__"):
            parts.append(self.key(vars(v), depth))
        for slot in _slots(t):
            parts.append(self.key(getattr(v, slot, None), d))
        if hasattr(t, "__array__"):             # another library's array (a torch tensor)
            parts.append(_arraylike_key(v))
        return tuple(parts)

    def wraps(self, v, depth):
        """What a library function or object wraps and runs of the user's (custom rules)."""
        return tuple(self.key(getattr(v, a), depth) for a in ("__wrapped__", "__funcgrad_reads__")
                     if getattr(v, a, None) is not None)

    def function(self, f, depth):
        """A user's function (or, comparing traces, any function): its code, closure cells,
        defaults and, for the user's own code, the globals it names."""
        d = depth - 1
        code = f.__code__
        self.codes.add(code)
        parts = [id(code)]
        for cell in f.__closure__ or ():
            try:
                parts.append(self.key(cell.cell_contents, d))
            except ValueError:            # an empty cell
                parts.append(None)
        if f.__defaults__:
            parts.append(self.key(f.__defaults__, d))
        if f.__kwdefaults__:
            parts.append(self.key(f.__kwdefaults__, d))
        if library_code(code):
            return tuple(parts)
        glob = f.__globals__
        names = _global_names(code)
        for name in names:
            v = glob.get(name, _MISSING)
            if v is _MISSING:
                continue
            if type(v) is types.ModuleType:          # `config.scale`, `os.environ[...]`
                parts += [(name, a, self.key(getattr(v, a), d))
                          for a in _module_reads(v, names, name) if hasattr(v, a)]
                continue
            parts.append((name, self.key(v, d)))
        return tuple(parts)

    # -- programs: what a trace recorded, compared between calls ---------------------------

    def program(self, prog):
        names = self.var_names

        def atom(a):
            if isinstance(a, Var):
                return names.setdefault(a.id, len(names))
            v = a.val                     # the same constant, even if a new array object
            return ("lit", _array_key(v, False) if isinstance(v, np.ndarray) else self.key(v))

        def param(prim, k, p):
            if k in prim.fresh_params:          # unique per equation: only distinctness counts
                return self.fresh.setdefault(p, len(self.fresh))
            return self.key(p)

        for v in prog.in_vars:
            atom(v)
        eqns = tuple((e.prim.name, tuple(map(atom, e.inputs)),
                      tuple(sorted((k, param(e.prim, k, p)) for k, p in e.params.items())),
                      tuple((atom(o), o.aval) for o in e.outputs)) for e in prog.eqns)
        return (tuple(v.aval for v in prog.in_vars), eqns, tuple(map(atom, prog.outs)))


_MISSING = object()


def state_key(f):
    """The key of everything f reads from outside its arguments (raises Unguardable)."""
    return _Walker().key(f)


def value_key(v, library=False):
    """A key of v by value (numbers, strings, containers, objects' attributes; arrays by
    identity and content): equal keys mean a trace reading v cannot tell them apart.
    library=True: library functions count by code and closure, not identity (runners.py)."""
    return _Walker(library=library).key(v)


def trace_key(prog):
    """The key of a traced program: equal keys mean the same computation."""
    return _Walker(by_value=True).program(prog)


# ---- compiled guards ------------------------------------------------------------------------
MAX_GUARD_LINES = 400      # a state needing more checks is walked instead


class _NoGuard(Exception):
    """A part of the state the generated checks do not cover (the caller walks instead)."""


class _GuardWriter:
    """Walks a state as _Walker.key does and writes, for each value on the way, the check that
    the value found at the same place is still one _Walker.key would key the same. Containers,
    objects and classes are checked by identity first (stricter than their key, which is by
    value), so the objects a walk meets, and the order it meets them in, are the recorded ones:
    _Walker's "seen" references then come out the same by construction. Library functions and
    objects count as fixed once made, their `__wrapped__` included (funcgrad's wrappers point
    at the user's function through it: that function is checked, found where it was).
    Every name and value of the user's goes into the generated source as a reference to a
    constant, never as text."""

    def __init__(self):
        self.lines, self.consts, self.const_at = [], [], {}
        self.seen = set()
        self.locals = 0

    def const(self, obj):
        at = self.const_at.get(id(obj))
        if at is None:             # (consts holds obj, so its id is not reused meanwhile)
            at = self.const_at[id(obj)] = len(self.consts)
            self.consts.append(obj)
        return f"k{at}"

    def bind(self, expr):
        """`expr` as a local variable (read once, used several times)."""
        if expr.isidentifier():
            return expr
        self.locals += 1
        self.lines.append(f"v{self.locals} = {expr}")
        return f"v{self.locals}"

    def check(self, cond):
        self.lines.append(f"if not ({cond}): return False")
        if len(self.lines) > MAX_GUARD_LINES:
            raise _NoGuard("too many values")

    def same(self, e, v):
        """e is the recorded object v (nothing to check when e is v's constant)."""
        k = self.const(v)
        if e != k:
            self.check(f"{e} is {k}")

    def walk(self, e, v, depth=_DEPTH):
        """Checks that the value of expression `e` keys as v, found there when recording, did."""
        t = type(v)
        cat = _CATEGORY.get(t) or _categorize(t)
        k = self.const
        if cat is _ATOM:
            e = self.bind(e)
            return self.check(f"type({e}) is {k(t)} and {e} == {k(v)}")
        if cat is _FLOAT:
            e = self.bind(e)
            if v and v == v:
                return self.check(f"type({e}) is float and {e} == {k(v)}")
            return self.check(f"type({e}) is float and repr({e}) == {k(repr(v))}")
        if cat is _FUNCTION:
            if library_code(v.__code__):
                self.same(e, v)
                return self.wrapped(e, v, depth)
            if depth <= 0:
                return self.same(e, v)
            return self.function(e, v, depth)
        if cat is _GENERIC:
            e = self.bind(e)
            return self.check(f"type({e}) is {k(t)} and {e}.tobytes() == {k(v.tobytes())}")
        if cat is _ARRAY:
            if v.dtype.hasobject:
                raise _NoGuard("an array of objects")
            e = self.bind(e)
            content = _array_key(v)[4]
            read = f"{e}.tobytes()" if v.nbytes <= _SMALL_ARRAY else f"_digest({e})"
            return self.check(f"{e} is {k(v)} and {e}.shape == {k(v.shape)} and "
                              f"{e}.dtype.str == {k(v.dtype.str)} and {read} == {k(content)}")
        if cat is _BUFFER:
            e = self.bind(e)
            return self.check(f"type({e}) is {k(t)} and _buffer_key({e}) == {k(_buffer_key(v))}")
        if cat is _IDENTITY or depth <= 0:
            return self.same(e, v)
        if cat is _DESCRIPTOR:
            e = self.bind(e)
            self.same(e, v)
            attr = _DESCRIPTORS[t]
            return self.walk(f"{e}.{attr}", getattr(v, attr), depth)
        if cat is _VALUE:
            e = self.bind(e)
            return self.check(f"type({e}) is {k(t)} and {e} == {k(v)}")
        d = depth - 1
        if cat is _TUPLE:
            e = self.bind(e)
            self.check(f"type({e}) is tuple and len({e}) == {len(v)}")
            for i, x in enumerate(v):
                self.walk(f"{e}[{i}]", x, d)
            return
        if cat is _VAR or cat is _PROGRAM:
            raise _NoGuard("traced values")
        e = self.bind(e)
        self.same(e, v)                      # containers and objects: by identity
        if id(v) in self.seen:
            return
        self.seen.add(id(v))
        if cat is _SEQ:
            self.check(f"len({e}) == {len(v)}")
            for i, x in enumerate(v):
                self.walk(f"{e}[{i}]", x, d)
        elif cat is _DICT:
            self.keys(e, v)
            for key, x in v.items():
                self.walk(f"{e}[{k(key)}]", x, d)
        elif cat is _SET:
            self.check(f"{e} == {k(frozenset(v))}")
        elif cat is _METHOD:
            self.walk(f"{e}.__self__", v.__self__, d)
            self.walk(f"{e}.__func__", v.__func__, depth)
        elif cat is _PARTIAL:
            self.walk(f"{e}.func", v.func, depth)
            self.walk(f"{e}.args", v.args, d)
            self.walk(f"{e}.keywords", v.keywords, d)
        elif cat is _CLASS:
            if _library_module(v.__module__):
                return
            self.check(f"{e}.__module__ == {k(v.__module__)}")
            names = self.bind(f"{e}.__dict__")
            self.check(f"tuple({names}) == {k(tuple(vars(v)))}")
            for key, x in _class_reads(v):
                self.walk(f"{names}[{k(key)}]", x, d)
            bases = self.bind(f"{e}.__bases__")
            self.check(f"len({bases}) == {len(v.__bases__)}")
            for i, b in enumerate(v.__bases__):
                self.walk(f"{bases}[{i}]", b, d)
        elif cat is _BUILTIN:
            owner = getattr(v, "__self__", None)
            if owner is not None and not isinstance(owner, types.ModuleType):
                self.walk(f"{e}.__self__", owner, d)
        elif cat is _LIBRARY:
            self.wrapped(e, v, depth)
        else:
            self.walk(f"type({e})", t, d)
            if hasattr(v, "__dict__"):
                self.walk(f"{e}.__dict__", vars(v), depth)
            for slot in _slots(t):
                self.walk(f"getattr({e}, {k(slot)}, None)", getattr(v, slot, None), d)
            if hasattr(t, "__array__"):
                self.check(f"_arraylike_key({e}) == {k(_arraylike_key(v))}")

    def keys(self, e, d):
        """A dict's keys, in order. String keys compare as _Walker's do (by value, so a str
        subclass equal to the recorded string passes); other plain keys also by type (1,
        1.0 and True are equal keys)."""
        keys = tuple(d)
        if all(isinstance(x, str) for x in keys):
            return self.check(f"tuple({e}) == {self.const(keys)}")
        if not all(_CATEGORY.get(type(x)) is _ATOM or type(x) is float and x and x == x
                   for x in keys):
            raise _NoGuard("dict keys that are not plain values")
        self.check(f"tuple({e}) == {self.const(keys)} and "
                   f"tuple(map(type, {e})) == {self.const(tuple(map(type, keys)))}")

    def wrapped(self, e, v, depth):
        """What a library function or object wraps (fixed: checked where it is, by value),
        and the user's functions it names in __funcgrad_reads__ (read where they are)."""
        inner = getattr(v, "__wrapped__", None)
        if inner is not None:
            self.walk(self.const(inner), inner, depth)
        if getattr(v, "__funcgrad_reads__", None) is not None:
            self.walk(f"{e}.__funcgrad_reads__", v.__funcgrad_reads__, depth)

    def function(self, e, f, depth):
        """As _Walker.function: the code, closure cells, defaults and the globals it names."""
        d = depth - 1
        code = f.__code__
        e = self.bind(e)
        self.check(f"type({e}) is FunctionType and {e}.__code__ is {self.const(code)}")
        if f.__closure__:
            cells = self.bind(f"{e}.__closure__")
            for i, cell in enumerate(f.__closure__):
                try:
                    x = cell.cell_contents
                except ValueError:
                    raise _NoGuard("an empty closure cell") from None
                self.walk(f"{cells}[{i}].cell_contents", x, d)
        empty = []
        for attr in ("__defaults__", "__kwdefaults__"):
            x = getattr(f, attr)
            if x:
                self.walk(f"{e}.{attr}", x, d)
            else:
                empty.append(f"not {e}.{attr}")
        if empty:
            self.check(" and ".join(empty))
        if library_code(code):
            return
        glob, names = f.__globals__, _global_names(code)
        g = self.bind(f"{e}.__globals__")
        missing = []
        for name in names:
            x = glob.get(name, _MISSING)
            k = self.const(name)
            if x is _MISSING:
                missing.append(k)
            elif type(x) is types.ModuleType:
                m = self.bind(f"{g}.get({k})")
                self.same(m, x)
                for a in _module_reads(x, names, name):
                    if hasattr(x, a):
                        self.walk(f"getattr({m}, {self.const(a)})", getattr(x, a), d)
                    else:
                        self.check(f"not hasattr({m}, {self.const(a)})")
            else:
                self.walk(f"{g}[{k}]", x, d)
        if missing:
            self.check(" and ".join(f"{k} not in {g}" for k in missing))

    def source(self):
        body = "\n".join("            " + line for line in self.lines)
        args = ", ".join(f"k{i}" for i in range(len(self.consts)))
        return (f"def make_guard({args}):\n"
                f"    def guard(v0):\n"
                f"        try:\n{body}\n"
                f"        except Exception:\n"
                f"            return False\n"
                f"        return True\n"
                f"    return guard\n")


def compile_guard(f, key):
    """guard(f) -> True only when state_key(f) would equal `key` now (False: walk to find
    out); None when f's state has parts the generated checks do not cover (traced values,
    arrays of objects, unusual dict keys, empty closure cells) or needs more than
    MAX_GUARD_LINES checks."""
    w = _GuardWriter()
    try:
        w.walk("v0", f)
    except (_NoGuard, RecursionError):
        return None
    namespace = {"FunctionType": types.FunctionType, "_digest": _digest,
                 "_buffer_key": _buffer_key, "_arraylike_key": _arraylike_key}
    exec(compile(w.source(), "<funcgrad state guard>", "exec"), namespace)
    guard = namespace["make_guard"](*w.consts)
    try:                     # recorded and keyed from the same values (not changed meanwhile)
        same = guard(f) and state_key(f) == key
    except Unguardable:
        same = False
    return guard if same else None


def _digest(a):
    from .digest import array_digest
    return array_digest(a)
