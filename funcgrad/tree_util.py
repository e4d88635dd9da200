"""Pytrees: nested containers of arrays (tuple, list, dict, namedtuple, None, registered classes).

Owns flatten/unflatten and the registry of container types. Imports nothing from funcgrad.

    >>> leaves, tree = fg.tree_util.tree_flatten({"w": 1.0, "b": (2.0, None)})
    >>> leaves
    [2.0, 1.0]
    >>> fg.tree_util.tree_unflatten(tree, [20.0, 10.0])
    {'b': (20.0, None), 'w': 10.0}
"""
from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any, Callable, NamedTuple

import numpy as np

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "tree_structure",
           "register_pytree_node", "register_dataclass", "PyTreeDef", "all_leaves",
           "register_pytree_node_class", "register_pytree_with_keys", "register_static",
           "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "keystr",
           "DictKey", "SequenceKey", "GetAttrKey", "FlattenedIndexKey", "tree_reduce",
           "tree_all", "treedef_is_leaf", "treedef_children", "treedef_tuple", "build_tree",
           "tree_transpose", "Partial"]


class _NodeType(NamedTuple):
    flatten: Callable[[Any], tuple]       # node -> (children, aux_data)
    unflatten: Callable[[Any, list], Any]  # (aux_data, children) -> node
    keys: Callable[[Any, Any], list] | None = None   # (node, aux) -> its children's path keys


_registry: dict[type, _NodeType] = {}


def register_pytree_node(cls, flatten, unflatten):
    """Register a container type: flatten(node) -> (children, aux), unflatten(aux, children) -> node.

        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> fg.tree_util.register_pytree_node(Pair, lambda p: ((p.a, p.b), None),
        ...                                   lambda _, c: Pair(*c))
        >>> fg.tree_util.tree_leaves(Pair(1.0, [2.0, 3.0]))
        [1.0, 2.0, 3.0]
    """
    _registry[cls] = _NodeType(flatten, unflatten)
    return cls


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """register_pytree_node with path keys: flatten_with_keys(node) -> ([(key, child), ...],
    aux); the keys name the children in tree_flatten_with_path (a DictKey, GetAttrKey, ...).

        >>> class Box:
        ...     def __init__(self, v): self.v = v
        >>> _ = fg.tree_util.register_pytree_with_keys(
        ...     Box, lambda b: ([(fg.tree_util.GetAttrKey("v"), b.v)], None),
        ...     lambda _, c: Box(*c))
        >>> fg.tree_util.keystr(fg.tree_util.tree_leaves_with_path(Box([1.0]))[0][0])
        '.v[0]'
    """
    def flatten(node):
        pairs, aux = flatten_with_keys(node)
        return [c for _, c in pairs], aux

    def keys(node, aux):
        return [k for k, _ in flatten_with_keys(node)[0]]
    _registry[nodetype] = _NodeType(flatten_func or flatten, unflatten_func, keys)
    return nodetype


def register_pytree_node_class(cls):
    """Class decorator: register cls by its own methods, `tree_flatten(self) -> (children,
    aux)` and the classmethod `tree_unflatten(aux, children)`.

        >>> @fg.tree_util.register_pytree_node_class
        ... class Scaled:
        ...     def __init__(self, x, s): self.x, self.s = x, s
        ...     def tree_flatten(self): return (self.x,), self.s
        ...     @classmethod
        ...     def tree_unflatten(cls, s, children): return cls(children[0], s)
        >>> fg.grad(lambda p: fnp.sum(p.x * p.s))(Scaled(np.ones(2), 3.0)).x
        array([3., 3.])
    """
    return register_pytree_node(cls, lambda o: o.tree_flatten(), cls.tree_unflatten)


def register_static(cls):
    """Class decorator: instances of cls are pytree nodes with no children, held whole in the
    structure (so they must be hashable): configuration passed through fg.jit without being
    traced.

        >>> @fg.tree_util.register_static
        ... class Mode(str): pass
        >>> fg.tree_util.tree_leaves([Mode("train"), 1.0])
        [1.0]
    """
    return register_pytree_node(cls, lambda o: ((), o), lambda o, _: o)


def register_dataclass(cls):
    """Class decorator: a dataclass whose fields are all pytree children.

        >>> import dataclasses
        >>> @fg.tree_util.register_dataclass
        ... @dataclasses.dataclass
        ... class Params: w: np.ndarray; b: float
        >>> fg.grad(lambda p: fnp.sum(p.w ** 2) + p.b)(Params(np.ones(2), 0.5))
        Params(w=array([2., 2.]), b=1.0)
    """
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    later = {f.name for f in fields if not f.init}    # init=False: set after construction

    def unflatten(_, children):
        obj = cls(**{n: c for n, c in zip(names, children) if n not in later})
        for n, c in zip(names, children):
            if n in later:
                object.__setattr__(obj, n, c)      # (frozen dataclasses too)
        return obj

    register_pytree_node(cls, lambda o: ([getattr(o, n) for n in names], None), unflatten)
    _registry[cls] = _registry[cls]._replace(keys=lambda o, _: [GetAttrKey(n) for n in names])
    return cls


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=repr)


register_pytree_node(tuple, lambda t: (list(t), None), lambda _, c: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda _, c: list(c))
for _t in (tuple, list):
    _registry[_t] = _registry[_t]._replace(
        keys=lambda t, _: [SequenceKey(i) for i in range(len(t))])
register_pytree_node(dict, lambda d: ([d[k] for k in _sorted_keys(d)], tuple(_sorted_keys(d))),
                     lambda keys, c: dict(zip(keys, c)))
_registry[dict] = _registry[dict]._replace(keys=lambda d, aux: [DictKey(k) for k in aux])
register_pytree_node(type(None), lambda _: ([], None), lambda _, c: None)


def _dict_subclass_node(cls):
    """A dict subclass is a dict node that rebuilds as its own class: OrderedDict keeps its
    key order, defaultdict its default_factory, others their keys sorted as dicts do.
    aux = (keys, default_factory or None)."""
    ordered = issubclass(cls, collections.OrderedDict)

    def flatten(d):
        keys = tuple(d) if ordered else tuple(_sorted_keys(d))
        return [d[k] for k in keys], (keys, getattr(d, "default_factory", None))

    def unflatten(aux, children):
        keys, factory = aux
        if issubclass(cls, collections.defaultdict):
            return cls(factory, zip(keys, children))
        try:
            return cls(zip(keys, children))
        except TypeError:                  # a constructor with other arguments
            new = cls.__new__(cls)
            dict.update(new, zip(keys, children))
            return new
    return _NodeType(flatten, unflatten, lambda d, aux: [DictKey(k) for k in aux[0]])


def _node_type(x):
    nt = _registry.get(type(x))
    if nt is None:
        cls = type(x)
        if isinstance(x, tuple) and hasattr(cls, "_fields"):          # namedtuple
            nt = _registry[cls] = _NodeType(lambda t: (list(t), None), lambda _, c: cls(*c),
                                            lambda t, _: [GetAttrKey(f) for f in cls._fields])
        elif isinstance(x, dict):
            nt = _registry[cls] = _dict_subclass_node(cls)
    return nt


class PyTreeDef:
    """The structure of a pytree with its leaves taken out; hashable, so usable as a cache key.

        >>> tree = fg.tree_util.tree_structure({"w": np.ones(2), "b": (1.0, 2.0)})
        >>> tree.num_leaves, tree == fg.tree_util.tree_structure({"w": 0, "b": (0, 0)})
        (3, True)
    """

    __slots__ = ("node_type", "aux", "children", "num_leaves", "_hash")

    def __init__(self, node_type, aux, children):
        self.node_type, self.aux, self.children = node_type, aux, tuple(children)
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in self.children)
        self._hash = hash((node_type, _hashable(_typed(aux)), self.children))

    def __eq__(self, other):
        if self is other:                 # (structures are interned: see _treedef)
            return True
        return (isinstance(other, PyTreeDef) and self.node_type is other.node_type
                and _typed(self.aux) == _typed(other.aux) and self.children == other.children)

    def __hash__(self):
        return self._hash

    def __reduce__(self):       # (the hash, of node types by identity, is this process's)
        return (_treedef, (self.node_type, self.aux, self.children))

    def __repr__(self):
        if self.node_type is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        if self.node_type is dict:
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children))
            return "{" + inner + "}"
        if issubclass(self.node_type, dict):
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux[0], self.children))
            return f"{self.node_type.__name__}({{{inner}}})"
        return f"{self.node_type.__name__}({inner})"


def _typed(aux):
    """aux with the type of each key beside it: dict keys 1, True and 1.0 are equal in Python
    but make different dicts (and different programs' outputs)."""
    if type(aux) is tuple:
        return tuple((type(k), k) for k in aux)
    return aux


def _hashable(aux):
    try:
        hash(aux)
        return aux
    except TypeError:
        return repr(aux)


_LEAF = PyTreeDef(None, None, ())


def tree_flatten(tree, is_leaf=None):
    """Split a pytree into a list of leaves and a PyTreeDef.

        >>> fg.tree_util.tree_flatten([1, (2, 3)])[0]
        [1, 2, 3]
    """
    leaves = []
    return leaves, _flatten(tree, leaves, is_leaf)


def _flatten(x, leaves, is_leaf):
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    t = type(x)
    nt = _registry.get(t)
    if nt is None and (t in _LEAF_TYPES or (nt := _node_type(x)) is None):
        leaves.append(x)
        return _LEAF
    children, aux = nt.flatten(x)
    return _treedef(t, aux, [_flatten(c, leaves, is_leaf) for c in children])


# types that are always leaves (unless registered): checked before the namedtuple/dict tests
_LEAF_TYPES = frozenset([np.ndarray, float, int, bool, complex, str, np.float64, np.float32,
                         np.int64, np.int32, np.bool_, np.complex128])
_INTERNED: dict = {}
MAX_INTERNED = 4096


def _treedef(node_type, aux, children):
    """The PyTreeDef of a node, the same object for the same structure while the table has
    room: flattening the same kind of arguments on every call then yields the same
    structures, which compare by identity (a compiled call's signature lookup). Only nodes
    without auxiliary data or with string keys are shared: other aux values may be equal and
    still differ ({True: x} and {1: x}), or be unhashable."""
    if aux is not None and not (type(aux) is tuple and all(type(k) is str for k in aux)):
        return PyTreeDef(node_type, aux, children)
    key = (node_type, aux, tuple(map(id, children)))
    td = _INTERNED.get(key)
    if td is None:
        td = PyTreeDef(node_type, aux, children)
        if len(_INTERNED) < MAX_INTERNED:
            _INTERNED[key] = td
    return td


def tree_unflatten(treedef, leaves):
    """Inverse of tree_flatten.

        >>> fg.tree_util.tree_unflatten(fg.tree_util.tree_structure((1, 2)), ["a", "b"])
        ('a', 'b')
    """
    it = iter(leaves)
    out = _unflatten(treedef, it)
    if next(it, _SENTINEL) is not _SENTINEL:
        raise ValueError(f"too many leaves for tree structure {treedef!r}")
    return out


_SENTINEL = object()


def _unflatten(td, it):
    if td.node_type is None:
        leaf = next(it, _SENTINEL)
        if leaf is _SENTINEL:
            raise ValueError("too few leaves for tree structure")
        return leaf
    children = [_unflatten(c, it) for c in td.children]
    return _registry[td.node_type].unflatten(td.aux, children)


def tree_leaves(tree, is_leaf=None):
    """The leaves of a pytree, in flattening order.

        >>> fg.tree_util.tree_leaves({"a": 1, "b": [2, None]})
        [1, 2]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    """The PyTreeDef of a pytree.

        >>> fg.tree_util.tree_structure({"w": np.ones(2), "b": (1.0, None)})
        {'b': tuple(*, NoneType()), 'w': *}
    """
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f, tree, *rest, is_leaf=None):
    """Apply f leafwise; `rest` are pytrees of the same structure.

        >>> fg.tree_util.tree_map(lambda a, b: a + b, {"x": 1}, {"x": 2})
        {'x': 3}
    """
    leaves, td = tree_flatten(tree, is_leaf)
    others = _leaves_like(td, rest, is_leaf, "tree_map")
    return tree_unflatten(td, [f(*xs) for xs in zip(leaves, *others)])


def _leaves_like(td, rest, is_leaf, what):
    """The leaves of each tree of `rest`, which must have the structure td."""
    others = []
    for r in rest:
        rl, rtd = tree_flatten(r, is_leaf)
        if rtd != td:
            raise ValueError(f"{what}: structures differ: {td!r} vs {rtd!r}")
        others.append(rl)
    return others


def all_leaves(iterable):
    """True when every element of iterable is a leaf (not a registered container).

        >>> fg.tree_util.all_leaves([1.0, np.ones(2)]), fg.tree_util.all_leaves([1.0, (2.0,)])
        (True, False)
    """
    return all(_node_type(x) is None for x in iterable)


# ---- key paths ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DictKey:
    """A dict entry in a key path: `['w']`.

        >>> fg.tree_util.keystr([fg.tree_util.DictKey("w")])
        "['w']"
    """
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A tuple or list entry in a key path: `[0]`.

        >>> str(fg.tree_util.SequenceKey(0))
        '[0]'
    """
    idx: int

    def __str__(self):
        return f"[{self.idx}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """A field of a namedtuple or dataclass in a key path: `.w`.

        >>> str(fg.tree_util.GetAttrKey("w"))
        '.w'
    """
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The i-th child of a registered node without keys: `[<flat index 0>]`.

        >>> str(fg.tree_util.FlattenedIndexKey(0))
        '[<flat index 0>]'
    """
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def _child_keys(x, nt, children, aux):
    """The path keys of a node's children: those its registration gives (dicts, sequences,
    namedtuples, dataclasses, register_pytree_with_keys), else flat indices -- a type's own
    fields say nothing about the children a custom flatten returns."""
    if nt.keys is not None:
        return nt.keys(x, aux)
    return [FlattenedIndexKey(i) for i in range(len(children))]


def tree_flatten_with_path(tree, is_leaf=None):
    """tree_flatten with each leaf's key path beside it (a tuple of DictKey, SequenceKey,
    GetAttrKey or FlattenedIndexKey): ([(path, leaf), ...], treedef).

        >>> pairs, _ = fg.tree_util.tree_flatten_with_path({"w": [1.0, 2.0]})
        >>> [(fg.tree_util.keystr(path), leaf) for path, leaf in pairs]
        [("['w'][0]", 1.0), ("['w'][1]", 2.0)]
    """
    leaves, td = tree_flatten(tree, is_leaf)
    paths = []
    _paths(tree, (), paths, is_leaf)
    return list(zip(paths, leaves)), td


def _paths(x, prefix, out, is_leaf):
    nt = None if is_leaf is not None and is_leaf(x) else _node_type(x)
    if nt is None:
        out.append(prefix)
        return
    children, aux = nt.flatten(x)
    for k, c in zip(_child_keys(x, nt, children, aux), children):
        _paths(c, prefix + (k,), out, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None):
    """[(path, leaf), ...] in flattening order.

        >>> fg.tree_util.tree_leaves_with_path((1.0, {"b": 2.0}))[1][0]
        (SequenceKey(idx=1), DictKey(key='b'))
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None):
    """tree_map whose f also receives each leaf's key path first: f(path, leaf, *others).

        >>> fg.tree_util.tree_map_with_path(
        ...     lambda path, x: 0.0 if fg.tree_util.keystr(path).endswith("['b']") else x,
        ...     {"w": 2.0, "b": 1.0})
        {'b': 0.0, 'w': 2.0}
    """
    pairs, td = tree_flatten_with_path(tree, is_leaf)
    others = _leaves_like(td, rest, is_leaf, "tree_map_with_path")
    return tree_unflatten(td, [f(path, x, *xs) for (path, x), *xs in zip(pairs, *others)])


def keystr(keys, *, simple=False, separator=""):
    """A key path as text: `['w'][0]` (simple=True: the bare keys, `w0`, or joined by
    separator).

        >>> fg.tree_util.keystr((fg.tree_util.DictKey("w"), fg.tree_util.SequenceKey(0)))
        "['w'][0]"
    """
    if not simple:
        return separator.join(map(str, keys))
    return separator.join(str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k))))
                          for k in keys)


def named_path(name, path):
    """`params['w'][0]`: the leaf at `path` under the argument called `name` (errors)."""
    return name + keystr(path)


# ---- reductions over leaves, structures -------------------------------------------------------

class _NoInitializer:
    def __repr__(self):
        return "<no initializer>"


_NO_INITIALIZER = _NoInitializer()


def tree_reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    """functools.reduce(function, leaves[, initializer]).

        >>> fg.tree_util.tree_reduce(lambda a, b: a + b, {"w": 2.0, "b": (1.0, 3.0)})
        6.0
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf=None):
    """all(leaves): True when every leaf is truthy (an array leaf must have one element, or
    reduce it first: tree_map(np.all, tree)).

        >>> fg.tree_util.tree_all({"a": True, "b": [1, 2]}), fg.tree_util.tree_all([0, 1])
        (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


def treedef_is_leaf(treedef):
    """Whether a PyTreeDef is a single leaf.

        >>> fg.tree_util.treedef_is_leaf(fg.tree_util.tree_structure(1.0))
        True
    """
    return treedef.node_type is None


def treedef_children(treedef):
    """The PyTreeDefs of a node's children.

        >>> fg.tree_util.treedef_children(fg.tree_util.tree_structure((1.0, [2.0, 3.0])))
        [*, list(*, *)]
    """
    return list(treedef.children)


def treedef_tuple(treedefs):
    """The PyTreeDef of a tuple of the given structures.

        >>> t = fg.tree_util.tree_structure
        >>> fg.tree_util.treedef_tuple([t(1.0), t([1.0, 2.0])]) == t((0, [0, 0]))
        True
    """
    return _treedef(tuple, None, list(treedefs))


def build_tree(treedef, xs):
    """The tree of treedef's structure whose leaf positions hold the (nested) xs, matched
    node by node; for each node, xs holds the list of its children's values.

        >>> fg.tree_util.build_tree(fg.tree_util.tree_structure({"a": 0, "b": (0, 0)}),
        ...                         [1.0, (2.0, 3.0)])
        {'a': 1.0, 'b': (2.0, 3.0)}
    """
    if treedef.node_type is None:
        return xs
    children = [build_tree(c, x) for c, x in zip(treedef.children, xs)]
    return _registry[treedef.node_type].unflatten(treedef.aux, children)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """A tree of outer structure whose leaves are trees of inner structure -> a tree of inner
    structure whose leaves are trees of outer structure.

        >>> t = fg.tree_util.tree_structure
        >>> fg.tree_util.tree_transpose(t([0, 0]), t({"a": 0, "b": 0}),
        ...                             [{"a": 1, "b": 2}, {"a": 3, "b": 4}])
        {'a': [1, 3], 'b': [2, 4]}
    """
    flat = tree_leaves(pytree_to_transpose)
    n_in, n_out = inner_treedef.num_leaves, outer_treedef.num_leaves
    if len(flat) != n_in * n_out:
        raise ValueError(f"tree_transpose: {len(flat)} leaves, but the structures "
                         f"{outer_treedef!r} of {inner_treedef!r} hold {n_out * n_in}")
    columns = [tree_unflatten(outer_treedef, flat[i::n_in]) for i in range(n_in)]
    return tree_unflatten(inner_treedef, columns)


class Partial(functools.partial):
    """functools.partial as a pytree: the bound arguments are its children (traced, so they
    may be arrays under fg.jit), the function is its static structure.

        >>> scale = fg.tree_util.Partial(fnp.multiply, np.array([1.0, 2.0]))
        >>> fg.jit(lambda f, x: f(x))(scale, 3.0)
        array([3., 6.])
    """

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):          # (flatten nested partials once)
            args, kwargs = func.args + args, {**func.keywords, **kwargs}
            func = func.func
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial, lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]))
