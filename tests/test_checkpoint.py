"""fg.checkpoint(f, policy=...): which values of f are saved for the backward pass and which are
recomputed, checked on the programs grad builds; gradients equal the un-checkpointed ones under
grad, jit, grad-of-grad and vmap."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import VjpPlan
from conftest import check_grads, rand

P = fg.checkpoint_policies
W1, W2, X = rand((4, 5), seed=1), rand((5, 3), seed=2), rand((2, 4), seed=3)
POLICIES = {"none": None, "nothing": P.nothing_saveable, "dots": P.dots_saveable,
            "everything": P.everything_saveable, "names": P.save_only_these_names("h")}


def mlp(x, w1, w2):
    """Two matmuls; the hidden value is named "h" (an exp, whose vjp rule reads its output)."""
    h = fg.checkpoint_name(fnp.exp(0.3 * (x @ w1)), "h")
    return fnp.sin(h @ w2)


def loss_of(block):
    return lambda x, w1, w2: fnp.sum(block(x, w1, w2) ** 2)


def count(prog, name):
    return sum(e.prim.name == name for e in prog.eqns)


@pytest.mark.parametrize("policy", POLICIES)
def test_gradient_equals_the_plain_gradient(policy):
    loss = loss_of(fg.checkpoint(mlp, policy=POLICIES[policy]))
    want = fg.grad(loss_of(mlp), argnums=(0, 1, 2))(X, W1, W2)
    for got in (fg.grad(loss, argnums=(0, 1, 2))(X, W1, W2),
                fg.jit(fg.grad(loss, argnums=(0, 1, 2)))(X, W1, W2)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    check_grads(loss, (X, W1, W2), order=2)


def test_saved_values_are_not_recomputed():
    """Contractions in the whole gradient program: 2 forward + 4 backward without checkpoint;
    nothing_saveable recomputes both forward matmuls (the exp rule needs x @ w1, sin's rule
    h @ w2); dots_saveable and everything_saveable store them."""
    def contracts(block):
        grad = fg.grad(loss_of(block), argnums=(0, 1, 2))
        progs = (fg.make_ir(grad)(X, W1, W2), fg.jit(grad).lower(X, W1, W2).program)
        return [count(p, "contract") for p in progs]
    assert contracts(mlp) == [6, 6]
    assert contracts(fg.checkpoint(mlp)) == [8, 8]
    assert contracts(fg.checkpoint(mlp, policy=P.nothing_saveable)) == [8, 8]
    assert contracts(fg.checkpoint(mlp, policy=P.dots_saveable)) == [6, 6]
    assert contracts(fg.checkpoint(mlp, policy=P.everything_saveable)) == [6, 6]


def test_backward_half_reads_saved_values_as_residuals():
    """Split into forward and backward (as fg.vjp does): what the backward recomputes."""
    def backward(policy):
        plan = VjpPlan(fg.checkpoint(mlp, policy=policy), (X, W1, W2), False)
        return (count(plan.bwd, "contract"), count(plan.bwd, "exp"), count(plan.bwd, "sin"),
                sorted(str(v.aval) for v in plan.bwd.in_vars))
    nothing = backward(P.nothing_saveable)
    assert nothing[:3] == (6, 1, 0)                        # 2 recomputed + 4 rule contractions
    dots = backward(P.dots_saveable)
    assert dots[:3] == (4, 1, 0)                           # exp recomputed from the saved matmul
    assert dots[3].count("f64[2,5]") > nothing[3].count("f64[2,5]")   # x @ w1 is a residual
    assert backward(P.save_only_these_names("h"))[:3] == (5, 0, 0)    # h stored; h @ w2 redone
    assert backward(P.everything_saveable)[:3] == (4, 0, 0)


def test_custom_policy_sees_primitive_names_and_params():
    seen = []

    def policy(prim_name, params):
        seen.append((prim_name, dict(params)))
        return prim_name == "exp"
    loss = loss_of(fg.checkpoint(mlp, policy=policy))
    np.testing.assert_allclose(fg.grad(loss)(X, W1, W2), fg.grad(loss_of(mlp))(X, W1, W2),
                               rtol=1e-12)
    assert ("checkpoint_name", {"name": "h"}) in seen
    assert ("contract", {"spec": ("ij", "jk", "ik")}) in seen
    plan = VjpPlan(fg.checkpoint(mlp, policy=policy), (X, W1, W2), False)
    assert count(plan.bwd, "exp") == 0


def test_checkpoint_name_is_an_identity_recorded_only_inside_checkpoint():
    x = rand((3,), seed=4)
    assert fg.checkpoint_name(x, "a") is x
    prog = fg.make_ir(lambda v: fg.checkpoint_name(v * 2.0, "a"))(x)
    assert "checkpoint_name" not in str(prog)
    np.testing.assert_allclose(fg.jit(lambda v: fg.checkpoint_name(v, "a") * 2.0)(x), 2 * x)
    tree = fg.checkpoint_name({"a": x, "n": 3}, "t")
    assert tree["n"] == 3 and tree["a"] is x
    with pytest.raises(TypeError, match="name must be a str"):
        fg.checkpoint_name(x, 3)
    with pytest.raises(TypeError, match="names must be str"):
        P.save_only_these_names("a", 1)


def test_grad_of_grad_and_vmap():
    plain = lambda w1: fnp.sum(mlp(X, w1, W2) ** 2)
    for policy in (P.dots_saveable, P.save_only_these_names("h")):
        block = fg.checkpoint(mlp, policy=policy)
        ckpt = lambda w1: fnp.sum(block(X, w1, W2) ** 2)
        np.testing.assert_allclose(fg.hessian(ckpt)(W1), fg.hessian(plain)(W1),
                                   rtol=1e-10, atol=1e-12)
        xs = rand((3, 2, 4), seed=5)
        per_example = fg.vmap(fg.grad(loss_of(block), argnums=1), in_axes=(0, None, None))
        want = np.stack([fg.grad(loss_of(mlp), argnums=1)(x, W1, W2) for x in xs])
        np.testing.assert_allclose(per_example(xs, W1, W2), want, rtol=1e-12)
        np.testing.assert_allclose(fg.vmap(block, in_axes=(0, None, None))(xs, W1, W2),
                                   np.stack([mlp(x, W1, W2) for x in xs]), rtol=1e-14)


def test_pytrees_static_arguments_closures_and_nesting():
    def block(p, v, n):
        for _ in range(n):
            v = fnp.sin(p["A"] @ v) + p["b"]
        return {"y": v, "z": [v * 2.0]}
    p, v = {"A": rand((3, 3), seed=6), "b": rand((3,), seed=7)}, rand((3,), seed=8)
    ck = fg.checkpoint(block, policy=P.dots_saveable)
    got = fg.grad(lambda p, v: fnp.sum(ck(p, v, 2)["z"][0] ** 2), argnums=(0, 1))(p, v)
    want = fg.grad(lambda p, v: fnp.sum(block(p, v, 2)["z"][0] ** 2), argnums=(0, 1))(p, v)
    np.testing.assert_allclose(got[0]["A"], want[0]["A"], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    assert ck(p, v, 1)["y"].shape == (3,)                  # untraced call: just f

    A = p["A"]

    def closes_over(A):        # A is a traced value of the enclosing grad: it gets a gradient
        inner = fg.checkpoint(lambda u: fg.checkpoint_name(fnp.exp(A @ u * 0.3), "e"),
                              policy=P.save_only_these_names("e"))
        outer = fg.checkpoint(lambda u: fnp.sin(inner(u)) @ A, policy=P.dots_saveable)
        return fnp.sum(outer(v) ** 2)
    reference = lambda A: fnp.sum((fnp.sin(fnp.exp(A @ v * 0.3)) @ A) ** 2)
    np.testing.assert_allclose(fg.grad(closes_over)(A), fg.grad(reference)(A), rtol=1e-12)
    np.testing.assert_allclose(fg.jit(fg.grad(closes_over))(A), fg.grad(reference)(A),
                               rtol=1e-12)
    check_grads(closes_over, (A,), order=2)


def test_integer_inputs_and_outputs():
    def block(v, i):
        return fnp.sin(v[i]) * 2.0, fnp.argmax(v)
    v, idx = rand((4,), seed=9), np.array([0, 2, 2])
    for policy in (P.nothing_saveable, P.everything_saveable):
        ck = fg.checkpoint(block, policy=policy)
        loss = lambda v, i: fnp.sum(ck(v, i)[0]) + ck(v, i)[1]
        want = fg.grad(lambda v, i: fnp.sum(block(v, i)[0]))(v, idx)
        np.testing.assert_allclose(fg.grad(loss)(v, idx), want, rtol=1e-14)
        np.testing.assert_allclose(fg.jit(fg.grad(loss))(v, idx), want, rtol=1e-14)


def test_policy_errors():
    f = lambda v: fnp.sin(v)
    with pytest.raises(TypeError, match=r"did you mean fg.checkpoint_policies.dots_saveable"):
        fg.checkpoint(f, policy="dots_saveable")
    with pytest.raises(TypeError, match="policy must be a callable"):
        fg.checkpoint(f, policy=3)
    with pytest.raises(TypeError, match="prim_name, params"):
        fg.checkpoint(f, policy=lambda name: True)


def test_a_long_checkpointed_scan_runs_compiled_inside_an_unjitted_gradient(monkeypatch):
    """A checkpointed scan is a scan of k-step scans: its length counts the inner steps too, so
    a long one is handed to the compiler from an interpreted fg.grad like any long loop (it was
    interpreted step by step: 200 s for 10^6 steps instead of seconds)."""
    from funcgrad import tiering
    asked, compile_and_run = [], tiering._loop_compiler[0]
    monkeypatch.setattr(tiering, "_loop_compiler", [lambda prim, args, params: (
        asked.append(prim.name), compile_and_run(prim, args, params))[1]])

    def loss(x, checkpoint):
        step = lambda c, _: (c * 0.999 + 0.001 * fnp.sin(c), None)
        return fnp.sum(fg.scan(step, x, length=200_000, checkpoint=checkpoint)[0])
    x = np.linspace(0.0, 1.0, 3)
    with_ck = fg.grad(lambda x: loss(x, "sqrt"))(x)
    assert "scan" in asked
    np.testing.assert_allclose(with_ck, fg.grad(lambda x: loss(x, None))(x), rtol=1e-12)
