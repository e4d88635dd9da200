"""grad / value_and_grad / vjp: argnums, has_aux, pytrees, dtypes, nesting, return types."""
import collections
import dataclasses

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads, rand

Point = collections.namedtuple("Point", ["x", "y"])


@fg.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: np.ndarray


def test_argnums_int_and_tuple():
    f = lambda a, b, c: a * b ** 2 + c
    assert fg.grad(f)(2.0, 3.0, 1.0) == 9.0
    assert fg.grad(f, 1)(2.0, 3.0, 1.0) == 12.0
    assert fg.grad(f, (0, 2))(2.0, 3.0, 1.0) == (9.0, 1.0)
    assert fg.grad(f, -1)(2.0, 3.0, 1.0) == 1.0
    with pytest.raises(ValueError, match="argnums"):
        fg.grad(f, 3)(2.0, 3.0, 1.0)


def test_results_are_numpy_and_scalars_are_numpy_scalars():
    g = fg.grad(lambda x: x ** 3)(2.0)
    assert isinstance(g, np.float64) and g == 12.0
    v, g = fg.value_and_grad(lambda x: fnp.sum(x ** 2))(np.array([1.0, 2.0]))
    assert isinstance(v, np.float64) and v == 5.0
    assert isinstance(g, np.ndarray) and g.flags.writeable
    np.testing.assert_array_equal(g, [2.0, 4.0])


def test_one_element_output_is_accepted():
    g = fg.grad(lambda x: x[:1] * 3.0)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [3.0, 0.0])


def test_has_aux():
    def loss(w):
        pred = w * 2.0
        return fnp.sum(pred ** 2), {"pred": pred}
    g, aux = fg.grad(loss, has_aux=True)(np.ones(2))
    np.testing.assert_array_equal(g, [8.0, 8.0])
    np.testing.assert_array_equal(aux["pred"], [2.0, 2.0])
    (v, aux), g = fg.value_and_grad(loss, has_aux=True)(np.ones(2))
    assert v == 8.0
    with pytest.raises(TypeError, match="pair"):
        fg.grad(lambda w: fnp.sum(w), has_aux=True)(np.ones(2))


def test_pytrees_in_and_out():
    params = {"w": rand((3, 2)), "b": rand((2,), seed=1), "extra": None,
              "pt": Point(rand((2,), seed=2), 1.5), "layers": [rand((2,), seed=3)]}

    def loss(p, x):
        h = fnp.tanh(x @ p["w"] + p["b"])
        return fnp.sum(h * p["pt"].x) * p["pt"].y + fnp.sum(p["layers"][0] ** 2)
    x = rand((4, 3), seed=4)
    g = fg.grad(loss)(params, x)
    assert g["extra"] is None and isinstance(g["pt"], Point) and isinstance(g["layers"], list)
    assert g["w"].shape == (3, 2) and isinstance(g["pt"].y, np.float64)
    check_grads(lambda p: loss(p, x), (params,), order=2)


def test_registered_dataclass():
    p = Params(w=rand((3,)), b=np.array(0.5))
    g = fg.grad(lambda p, x: fnp.sum((p.w * x + p.b) ** 2))(p, rand((3,), seed=1))
    assert isinstance(g, Params)
    check_grads(lambda p: fnp.sum(fnp.sin(p.w) * p.b), (p,), order=2)


def test_static_python_arguments_and_kwargs():
    def f(x, n, scale=1.0):
        for _ in range(n):              # a Python int that is not differentiated stays static
            x = fnp.sin(x)
        return x * scale
    g = fg.grad(f)(0.3, 3, scale=2.0)
    expected = 2.0 * np.cos(np.sin(np.sin(0.3))) * np.cos(np.sin(0.3)) * np.cos(0.3)
    assert np.isclose(g, expected)


def test_dtypes_preserved_in_vjp_and_scalar_cotangents():
    x32 = rand((3,), dtype=np.float32)
    y, f_vjp = fg.vjp(lambda x: fnp.sum(x * x), x32)
    assert y.dtype == np.float32
    (g,) = f_vjp(1.0)
    assert g.dtype == np.float32
    (g,) = f_vjp(np.array(2.0))
    np.testing.assert_allclose(g, 4 * x32, rtol=1e-6)


def test_vjp_returns_tuple_per_primal_and_checks_cotangent():
    a, b = rand((3,)), rand((3,), seed=1)
    out, f_vjp = fg.vjp(lambda a, b: (a * b, fnp.sum(a)), a, b)
    ga, gb = f_vjp((np.ones(3), 2.0))
    np.testing.assert_allclose(ga, b + 2.0)
    np.testing.assert_allclose(gb, a)
    (gb2,) = fg.vjp(lambda b: a * b, b)[1](np.ones(3))
    np.testing.assert_allclose(gb2, a)
    with pytest.raises(ValueError, match="shape"):
        f_vjp((np.ones(4), 2.0))
    with pytest.raises(ValueError, match="structure"):
        f_vjp(np.ones(3))
    out, f_vjp, aux = fg.vjp(lambda a: (a * 2, "tag" and a.shape[0]), a, has_aux=True)
    assert aux == 3


def test_vjp_can_be_called_repeatedly():   # PyTorch's retain_graph: nothing to retain
    out, f_vjp = fg.vjp(fnp.exp, np.zeros(2))
    assert np.array_equal(f_vjp(np.ones(2))[0], f_vjp(np.ones(2))[0])


def test_nested_grad_with_closures():
    # d/dx [ x * d/dy (x * y^2) at y=x ] = d/dx [2 x^3] = 6 x^2
    f = lambda x: x * fg.grad(lambda y: x * y ** 2)(x)
    assert np.isclose(fg.grad(f)(1.5), 6 * 1.5 ** 2)
    assert np.isclose(fg.grad(fg.grad(fg.grad(lambda x: x ** 4)))(2.0), 48.0)
    check_grads(lambda x: fg.grad(lambda y: fnp.sum(fnp.sin(x * y)))(x), (rand((3,)),), order=2)


def test_grad_of_function_without_dependence_is_zero():
    g = fg.grad(lambda x, y: fnp.sum(y ** 2))(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(g, np.zeros(3))


def test_integer_argument_not_differentiated_is_fine():
    f = lambda x, idx: fnp.sum(x[idx] ** 2)
    g = fg.grad(f)(np.array([1.0, 2.0, 3.0]), np.array([0, 2, 2]))
    np.testing.assert_array_equal(g, [2.0, 0.0, 12.0])


def test_tree_util_roundtrip():
    tree = {"a": [1.0, (2.0, None)], "b": Point(3.0, 4.0)}
    leaves, td = fg.tree_util.tree_flatten(tree)
    assert leaves == [1.0, 2.0, 3.0, 4.0]
    assert fg.tree_util.tree_unflatten(td, leaves) == tree
    doubled = fg.tree_util.tree_map(lambda x: 2 * x, tree)
    assert doubled["b"] == Point(6.0, 8.0)
    assert hash(td) == hash(fg.tree_util.tree_structure(tree))


def test_tree_structures_are_shared_and_never_confused():
    """Flattening the same structure twice gives the same PyTreeDef object (a compiled call's
    signature then compares by identity); different structures, and structures with an
    unhashable aux (not shared), stay distinct and rebuild what they came from."""
    from funcgrad.tree_util import register_pytree_node, tree_flatten, tree_unflatten

    class Box:
        def __init__(self, v, meta):
            self.v, self.meta = v, meta
    register_pytree_node(Box, lambda b: ([b.v], b.meta), lambda meta, c: Box(c[0], meta))
    one = {"w": np.ones(2), "s": (np.zeros(1), Point(1.0, 2.0))}
    two = {"w": np.ones(3), "s": (np.zeros(1), Point(5.0, 6.0))}
    assert tree_flatten(one)[1] is tree_flatten(two)[1]
    assert tree_flatten({"w": 1.0, "t": (1.0, Point(1.0, 2.0))})[1] != tree_flatten(one)[1]
    for meta in ({"k": 1}, {"k": 2}):            # unhashable aux: compared by value
        leaves, td = tree_flatten([Box(np.ones(2), meta)])
        assert tree_unflatten(td, leaves)[0].meta == meta
    a, b = (tree_flatten([Box(1.0, {"k": k})])[1] for k in (1, 2))
    assert a != b and a == tree_flatten([Box(7.0, {"k": 1})])[1]
    for key in (1, True, 1.0):                   # equal keys of other types stay themselves
        leaves, td = tree_flatten({key: 0.5})
        (got,) = tree_unflatten(td, leaves)
        assert type(got) is type(key)
    structures = [tree_flatten({key: 0.5})[1] for key in (1, True, 1.0)]
    assert len(set(structures)) == 3                        # and are different structures
    f = fg.jit(lambda d: {k: 2 * v for k, v in d.items()}, background=False)
    for key in (1, True, 1.0):                   # so a compiled call keeps them apart too
        assert [type(k) for k in f({key: np.ones(2)})] == [type(key)]


def test_lists_and_tuples_of_traced_values_are_accepted_like_numpy():
    assert fg.grad(lambda x: fnp.sum([x, 2 * x]))(1.0) == 3.0
    assert fg.grad(lambda x: fnp.sum(fnp.array([x, x ** 2])))(3.0) == 7.0
    assert fg.grad(lambda x: fnp.dot([x, 1.0], (x, x)))(3.0) == 7.0
    assert fg.grad(lambda x: fnp.prod(fnp.stack((x, x, 2.0))))(3.0) == 12.0
    with pytest.raises(fg.ConcretizationError, match="fnp.array"):
        fg.grad(lambda x: np.sum([x, x]))(1.0)


def test_argnums_as_a_list():
    f = lambda x, y: fnp.sum(x * y ** 2)
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    for _ in range(12):                                 # interpreted, then compiled
        gx, gy = fg.grad(f, argnums=[0, 1])(x, y)
        np.testing.assert_allclose(gx, y ** 2)
        np.testing.assert_allclose(gy, 2 * x * y)
        (v, (gx2, _)) = fg.value_and_grad(f, argnums=[0, 1])(x, y)
        np.testing.assert_allclose(gx2, y ** 2)


def test_eval_program_returns_fresh_arrays_and_numpy_scalars():
    x = np.ones(3)
    prog = fg.make_ir(lambda x: (fnp.sum(x ** 2), x, x.reshape(3, 1), x * 2.0))(x)
    total, same, view, doubled = fg.eval_program(prog, x)
    assert type(total) is np.float64 and total == 3.0
    for out in (same, view, doubled):
        assert isinstance(out, np.ndarray) and not np.may_share_memory(out, x)
