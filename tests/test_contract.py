"""Products and contractions: matmul/@, dot, vdot, inner, outer, tensordot, einsum, kron,
trace, diagonal, cross — values vs NumPy and derivatives (first and second order)."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from conftest import check_grads, rand

CASES = [
    ("matmul 2d", lambda a, b: a @ b, [(3, 4), (4, 2)]),
    ("matmul batched broadcast", lambda a, b: fnp.matmul(a, b), [(2, 1, 3, 4), (5, 4, 2)]),
    ("matmul vec-mat", lambda a, b: a @ b, [(4,), (2, 4, 3)]),
    ("matmul mat-vec", lambda a, b: a @ b, [(2, 3, 4), (4,)]),
    ("matmul vec-vec", lambda a, b: a @ b, [(4,), (4,)]),
    ("dot scalar", lambda a, b: fnp.dot(a, b), [(), (3,)]),
    ("dot 1d", lambda a, b: fnp.dot(a, b), [(3,), (3,)]),
    ("dot nd-1d", lambda a, b: fnp.dot(a, b), [(2, 3), (3,)]),
    ("dot nd-md", lambda a, b: fnp.dot(a, b), [(2, 3), (4, 3, 5)]),
    ("vdot", lambda a, b: fnp.vdot(a, b), [(2, 3), (3, 2)]),
    ("inner", lambda a, b: fnp.inner(a, b), [(2, 3), (4, 3)]),
    ("outer", lambda a, b: fnp.outer(a, b), [(3,), (2, 2)]),
    ("tensordot int", lambda a, b: fnp.tensordot(a, b, 2), [(2, 3, 4), (3, 4, 5)]),
    ("tensordot lists", lambda a, b: fnp.tensordot(a, b, ([0, 2], [2, 0])), [(2, 3, 4), (4, 5, 2)]),
    ("einsum batch", lambda a, b: fnp.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 5)]),
    ("einsum implicit", lambda a, b: fnp.einsum("ij,jk", a, b), [(3, 4), (4, 5)]),
    ("einsum ellipsis", lambda a, b: fnp.einsum("...ij,...j->...i", a, b), [(2, 3, 4), (4,)]),
    ("einsum sum-only letter", lambda a, b: fnp.einsum("ij,k->j", a, b), [(3, 4), (2,)]),
    ("einsum three operands", lambda a, b: fnp.einsum("ij,jk,k->i", a, b, b[0]), [(3, 4), (4, 4)]),
    ("einsum diagonal", lambda a, b: fnp.einsum("ii,i->i", a, b), [(3, 3), (3,)]),
    ("einsum trace", lambda a, b: fnp.einsum("ii", a) * fnp.sum(b), [(3, 3), (2,)]),
    ("einsum transpose", lambda a, b: fnp.einsum("ijk->kji", a) + b, [(2, 3, 4), (4, 3, 2)]),
    ("kron", lambda a, b: fnp.kron(a, b), [(2, 3), (3, 2)]),
    ("kron 1d-2d", lambda a, b: fnp.kron(a, b), [(2,), (3, 2)]),
    ("trace", lambda a, b: fnp.trace(a, offset=1) * b, [(3, 4), ()]),
    ("trace axes", lambda a, b: fnp.trace(a, axis1=1, axis2=2) + b, [(2, 3, 3), (2,)]),
    ("diagonal", lambda a, b: fnp.diagonal(a, -1) * b, [(4, 3), (3,)]),
    ("cross 3d", lambda a, b: fnp.cross(a, b), [(4, 3), (3,)]),
    ("cross 2d", lambda a, b: fnp.cross(a, b), [(4, 2), (4, 2)]),
    ("cross axis", lambda a, b: fnp.cross(a, b, axis=0), [(3, 2), (3, 2)]),
]


@pytest.mark.parametrize("name, f, shapes", CASES, ids=[c[0] for c in CASES])
def test_value_and_derivatives(name, f, shapes):
    args = [rand(s, seed=i + 1) for i, s in enumerate(shapes)]
    np.testing.assert_allclose(evaluate(f, *args), f(*args), rtol=1e-12, atol=1e-14)
    check_grads(f, args, order=2)


def test_matmul_closed_form_and_operator_dispatch():
    A, B = rand((3, 4)), rand((4, 2), seed=1)
    gA, gB = fg.grad(lambda A, B: fnp.sum(A @ B), (0, 1))(A, B)
    np.testing.assert_allclose(gA, np.ones((3, 2)) @ B.T)
    np.testing.assert_allclose(gB, A.T @ np.ones((3, 2)))
    gA2 = fg.grad(lambda A: np.sum(np.matmul(A, B)))(A)          # plain numpy call
    np.testing.assert_array_equal(gA, gA2)
    gA3 = fg.grad(lambda A: np.sum(B.T @ A.T))(A)                # ndarray @ traced
    np.testing.assert_allclose(gA, gA3)


def test_dtype_promotion():
    a32, b64 = rand((2, 3), dtype=np.float32), rand((3,), seed=1)
    assert np.asarray(evaluate(lambda a: a @ b64, a32)).dtype == np.float64
    assert np.asarray(evaluate(lambda a: a @ a.T, a32)).dtype == np.float32
    assert fg.grad(lambda a: fnp.sum(a @ a.T))(a32).dtype == np.float32


def test_contraction_shape_errors_name_the_shapes():
    with pytest.raises(fg.ShapeError, match=r"\(3, 4\) @ \(3,\)"):
        fg.grad(lambda a: fnp.sum(a @ a[0, :3]))(rand((3, 4)))
    with pytest.raises(fg.ShapeError, match="size mismatch"):
        fg.grad(lambda a: fnp.sum(fnp.einsum("ij,ij->i", a, a.T)))(rand((3, 4)))
