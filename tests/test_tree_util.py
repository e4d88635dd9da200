"""fg.tree_util's key paths, reductions, structure helpers and registration forms (jax.tree_util's
names), and that what they register works through grad, jit and vmap."""
import collections
import dataclasses
import functools
import operator

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

tu = fg.tree_util
Point = collections.namedtuple("Point", ["x", "y"])


@tu.register_dataclass
@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float


@tu.register_pytree_node_class
class Scaled:
    def __init__(self, x, scale):
        self.x, self.scale = x, scale

    def tree_flatten(self):
        return (self.x,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)


class Opaque:                       # registered without keys: flat-index path entries
    def __init__(self, a, b):
        self.a, self.b = a, b


tu.register_pytree_node(Opaque, lambda o: ((o.a, o.b), None), lambda _, c: Opaque(*c))

TREE = {"layers": [Layer(np.ones(2), 0.5), Layer(np.zeros(2), 1.5)], "p": Point(1.0, (2.0,)),
        "o": Opaque(3.0, None), "s": Scaled(4.0, 2.0)}


def test_paths_name_every_leaf_in_flattening_order():
    pairs, td = tu.tree_flatten_with_path(TREE)
    leaves, td2 = tu.tree_flatten(TREE)
    assert td == td2 and [leaf for _, leaf in pairs] == leaves
    assert [tu.keystr(p) for p, _ in pairs] == [
        "['layers'][0].w", "['layers'][0].b", "['layers'][1].w", "['layers'][1].b",
        "['o'][<flat index 0>]", "['p'].x", "['p'].y[0]", "['s'][<flat index 0>]"]
    assert tu.keystr(pairs[0][0], simple=True, separator="/") == "layers/0/w"
    assert pairs[6][0] == (tu.DictKey("p"), tu.GetAttrKey("y"), tu.SequenceKey(0))
    # is_leaf stops the walk: the whole Layer is one leaf with its path
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(
        TREE["layers"], is_leaf=lambda x: isinstance(x, Layer))]
    assert paths == ["[0]", "[1]"]


def test_map_with_path_masks_by_name_and_checks_structures():
    zeroed = tu.tree_map_with_path(lambda p, x: 0.0 * x if p[-1] == tu.GetAttrKey("b") else x,
                                   TREE)
    assert [layer.b for layer in zeroed["layers"]] == [0.0, 0.0]
    np.testing.assert_array_equal(zeroed["layers"][0].w, np.ones(2))
    both = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y), {"a": 1, "b": 2},
                                 {"a": 10, "b": 20})
    assert both == {"a": ("['a']", 11), "b": ("['b']", 22)}
    with pytest.raises(ValueError, match="structures differ"):
        tu.tree_map_with_path(lambda p, x, y: x, {"a": 1}, {"b": 1})


def test_reduce_all_and_structure_helpers():
    assert tu.tree_reduce(operator.add, {"a": 1, "b": [2, 3]}) == 6
    assert tu.tree_reduce(operator.add, [], 7) == 7
    with pytest.raises(TypeError):
        tu.tree_reduce(operator.add, [])                   # (functools.reduce's own error)
    assert tu.tree_all({"a": True, "b": (1, None)}) and not tu.tree_all([1, 0])
    assert tu.tree_all(tu.tree_map(lambda x: bool(np.all(x >= 0)), TREE))
    td = tu.tree_structure((1.0, [2.0, 3.0]))
    kids = tu.treedef_children(td)
    assert tu.treedef_is_leaf(kids[0]) and not tu.treedef_is_leaf(kids[1])
    assert tu.treedef_tuple(kids) == td
    assert tu.build_tree(td, ["a", ["b", "c"]]) == ("a", ["b", "c"])
    outer, inner = tu.tree_structure([0, 0, 0]), tu.tree_structure(Point(0, 0))
    rows = [Point(i, 10 * i) for i in range(3)]
    assert tu.tree_transpose(outer, inner, rows) == Point([0, 1, 2], [0, 10, 20])
    with pytest.raises(ValueError, match="tree_transpose"):
        tu.tree_transpose(outer, inner, rows[:2])


def test_registered_forms_differentiate_compile_and_batch():
    def loss(t):
        first = t["layers"][0]
        return fnp.sum(first.w ** 2) * first.b + t["s"].x * t["s"].scale + t["o"].a ** 2

    g = fg.grad(loss)(TREE)
    assert isinstance(g["s"], Scaled) and g["s"].scale == 2.0 and g["s"].x == 2.0
    assert isinstance(g["o"], Opaque) and g["o"].a == 6.0 and g["o"].b is None
    np.testing.assert_allclose(g["layers"][0].w, [1.0, 1.0])
    assert fg.jit(loss)(TREE) == loss(TREE)
    xs = np.arange(3.0)
    batched = fg.vmap(lambda s: s.x * s.scale)(Scaled(xs, 2.0))
    np.testing.assert_array_equal(batched, 2.0 * xs)


def test_partial_is_a_pytree_of_its_bound_arguments():
    f = tu.Partial(fnp.multiply, np.array([1.0, 2.0]))
    leaves, td = tu.tree_flatten(f)
    assert len(leaves) == 1 and leaves[0] is f.args[0]
    assert tu.tree_unflatten(td, [np.array([5.0, 6.0])])(2.0).tolist() == [10.0, 12.0]
    np.testing.assert_array_equal(fg.jit(lambda f, x: f(x))(f, 3.0), [3.0, 6.0])
    # the bound array is differentiated like any other leaf; keywords are children too
    g = fg.grad(lambda f: fnp.sum(f(2.0)))(f)
    assert isinstance(g, tu.Partial) and g.func is fnp.multiply
    np.testing.assert_array_equal(g.args[0], [2.0, 2.0])
    h = tu.Partial(tu.Partial(lambda a, b, c=0.0: a * b + c, 2.0), c=1.0)
    assert h.args == (2.0,) and h.keywords == {"c": 1.0} and h(3.0) == 7.0
    assert tu.tree_leaves(h) == [2.0, 1.0]
    assert isinstance(functools.partial(h, 1.0), functools.partial)


def test_keys_and_static_registration():
    class Box:
        def __init__(self, v):
            self.v = v
    tu.register_pytree_with_keys(Box, lambda b: ([(tu.GetAttrKey("v"), b.v)], None),
                                 lambda _, c: Box(*c))
    (path, leaf), = tu.tree_leaves_with_path(Box(np.array(1.0)))
    assert tu.keystr(path) == ".v" and leaf == 1.0
    assert fg.grad(lambda b: b.v ** 2)(Box(3.0)).v == 6.0

    @tu.register_static
    class Mode(str):
        pass
    assert tu.tree_leaves([Mode("train"), 1.0]) == [1.0]
    f = fg.jit(lambda mode, x: x * 2.0 if mode == "train" else x)
    assert f(Mode("train"), 1.5) == 3.0 and f(Mode("eval"), 1.5) == 1.5


def test_error_messages_name_leaves_by_their_paths():
    with pytest.raises(TypeError, match=r"argument t\['p'\]\.x: it has dtype int64"):
        fg.grad(lambda t: t["p"].x)({"p": Point(1, 2.0)})           # an integer leaf


def test_a_custom_flatten_gets_flat_index_keys_not_the_types_fields():
    """A dataclass or namedtuple registered with its own flatten: its children are what the
    flatten returns, so their keys are flat indices (the review's case: .name and .w labelled
    w and b, and an error named the wrong field)."""
    @tu.register_pytree_node_class
    @dataclasses.dataclass
    class Named:
        name: str
        w: np.ndarray
        b: np.ndarray

        def tree_flatten(self):
            return (self.w, self.b), self.name

        @classmethod
        def tree_unflatten(cls, name, children):
            return cls(name, *children)
    pairs = tu.tree_leaves_with_path(Named("d", np.ones(2), np.zeros(1)))
    assert [tu.keystr(p) for p, _ in pairs] == ["[<flat index 0>]", "[<flat index 1>]"]
    assert [np.shape(x) for _, x in pairs] == [(2,), (1,)]

    class Sub(dict):
        pass
    tu.register_pytree_node(Sub, lambda d: (list(d.values()), list(d)), lambda k, c: Sub(zip(k, c)))
    assert tu.tree_map_with_path(lambda p, v: v + 1.0, Sub(x=1.0, y=2.0)) == {"x": 2.0, "y": 3.0}
