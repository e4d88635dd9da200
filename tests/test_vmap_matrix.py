"""vmap matrix: for every primitive, fg.vmap(f, in_axes, out_axes) equals a Python loop over the
batch (conftest.loop_over_batch, the reference interpreter per example).

The cases are those of the backend matrix (tests/matrix_cases.py), run in the interpreter
(no Numba compile), plus per-example gradients (whose backward passes hold primitives that only
transforms create). Each case gets a batch of BATCH examples:

* array cases: the case's inputs and perturbed copies (floats + 0.1 j, other dtypes rolled);
* elementwise grids: the pointwise grid of matrix_cases (domain and special values, every
  pair), cut into BATCH rows, so each example is a 1-D slice of the grid.

The batch axis varies systematically with the case (and, in table cases, the operation) index
g: the first float argument is batched on axis 0 or on its last axis (g even / odd), every other
argument in turn unbatched (in_axes None), on its last axis or on axis 0; each output leaf goes
to out_axes 0, -1 or 1 in turn (and every fourth case passes out_axes=-1 as a plain int).
"""
import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.ir import Lit, aval_of
from funcgrad.primitives import REGISTRY
from funcgrad.tracer import trace_flat
from funcgrad.tree_util import tree_flatten, tree_flatten_with_path, tree_unflatten

import matrix_cases as mc
from conftest import loop_over_batch

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BATCH = 3
# Primitives without a vmap case, name -> reason (none: even backward-only primitives such as
# remat_barrier occur in the per-example gradient cases).
EXCLUDED: dict = {
    # only recorded while fg.checkpoint traces its function, which removes it again
    # (test_checkpoint.py batches a named checkpoint)
    "checkpoint_name": "never in a program vmap sees",
    # fg.debug_nans's checks are inserted into a program about to be compiled, after vmap
    "debug_check": "never in a program vmap sees",
    "debug_check_pointwise": "never in a program vmap sees",
    # an effect without a value: batched example by example (tests/test_debug.py)
    "debug_callback": "batched by the example-by-example fallback; tests/test_debug.py",
}
# Known vmap bugs outside the batch rules, case id -> reason (strict xfail: remove when fixed).
KNOWN_BUGS: dict = {}


# ---- examples ---------------------------------------------------------------------------------

def perturbed(x):
    """BATCH examples: x itself, then copies with floats shifted by 0.1 j and other dtypes
    (integers, booleans, indices) rolled, which keeps their values (and valid indices)."""
    out = [x]
    for j in range(1, BATCH):
        a = np.asarray(x)
        out.append((a + 0.1 * j).astype(a.dtype) if a.dtype.kind == "f"
                   else np.roll(a.ravel(), j).reshape(a.shape))
    return out


def grid_rows(g):
    """BATCH examples: the 1-D pointwise grid `g` cut into BATCH rows of equal length."""
    m = -(-len(g) // BATCH)
    return list(np.resize(g, BATCH * m).reshape(BATCH, m))


@dataclasses.dataclass
class VCase:
    """fn(*args) -> pytree of arrays. args is either a tuple of arrays, or (dict of tuples,)
    (a `table` of operations, see matrix_cases.table): then each entry has axes of its own.
    `examples(leaf)` -> BATCH examples of a leaf, the first its unbatched value."""
    id: str
    fn: Callable
    args: tuple
    examples: Callable = perturbed
    shift: int = 0          # added to the case index in group_axes (a second axis assignment)

    @property
    def table(self):
        return len(self.args) == 1 and isinstance(self.args[0], dict)


def group_axes(leaves, g):
    """in_axes of one group of arguments, the g-th: the first float (else the first) argument on
    axis 0 or -1, the others None, -1 or 0 in turn; every fifth group of several arguments swaps
    the first argument's axis with the next one's (the first unbatched, a later one batched)."""
    kinds = [np.asarray(x).dtype.kind for x in leaves]
    first = kinds.index("f") if "f" in kinds else 0
    axes = [(None, -1, 0)[(g + i) % 3] for i in range(len(leaves))]
    axes[first] = (0, -1)[g % 2]
    if len(leaves) > 1 and g % 5 == 4:
        nxt = (first + 1) % len(leaves)
        axes[first], axes[nxt] = None, axes[first]
    return tuple(axes)


def output_axes(example_out, k):
    """out_axes of the k-th case: per output leaf l, 0, -1 or 1 in turn (-1 for a 0-d example
    result); every fourth case the plain int -1."""
    if k % 4 == 3:
        return -1
    leaves, tree = tree_flatten(example_out)
    axes = [(0, -1, 1)[(k + l) % 3] for l in range(len(leaves))]
    return tree_unflatten(tree, [-1 if ax == 1 and np.ndim(x) == 0 else ax
                                 for ax, x in zip(axes, leaves)])


def build(case, k):
    """-> (batched args, unbatched example args, in_axes) of the k-th case."""
    def group(leaves, g):
        axes = group_axes(leaves, g)
        exs = [case.examples(x) for x in leaves]
        return (tuple(e[0] if ax is None else np.stack(e, axis=ax) for e, ax in zip(exs, axes)),
                tuple(e[0] for e in exs), axes)
    if not case.table:
        return group(case.args, k + case.shift)
    d = case.args[0]
    groups = {name: group(d[name], k + case.shift + i) for i, name in enumerate(d)}
    return tuple({name: gr[n] for name, gr in groups.items()} for n in range(3))


def arguments(case, k):
    """-> (batched args, example args, in_axes, out_axes) of the k-th case."""
    args, ex, in_axes = build(case, k)
    if case.table:
        args, ex, in_axes = (args,), (ex,), (in_axes,)
    with np.errstate(all="ignore"):
        out_axes = output_axes(evaluate(case.fn, *ex), k)
    return args, ex, in_axes, out_axes


# ---- cases --------------------------------------------------------------------------------------

def _pointwise_fn(ops):
    def elementwise(x):
        return {name: op.fn(*x[name]) for name, op in ops.items()}
    return elementwise


def _per_example_grads(x, y):
    """Gradient of a loss with checkpoint (remat_barrier), custom_vjp and stop_gradient."""
    def loss(x, y):
        return (fnp.sum(mc._remat(x) * y) + fnp.sum(mc.softplus(x * y))
                + fnp.sum(fg.stop_gradient(x) * fnp.sin(y)))
    return fg.grad(loss, argnums=(0, 1))(x, y)


def _grad_of_indexing(x, v, idx):
    """Backward passes of gather and scatter (scatter-add into zeros, gather of cotangents)."""
    def loss(x, v):
        return fnp.sum(fnp.sin(mc._advanced_indexing(x, v, idx)["at[idx,idx].add"]) * x)
    return fg.grad(loss, argnums=(0, 1))(x, v)


def _per_example_loop_grads(x, y):
    """Backward passes of loops and branches (while_grad, reverse scans, cond of vjps)."""
    def loss(x, y):
        out = mc._control_flow(x, y)
        return sum(fnp.sum(v) for v in out.values())
    return fg.grad(loss, argnums=(0, 1))(x, y)


# cases of several arguments (not tables) twice, with two axis assignments
def _random_draws(x, key):
    """Draws from a batch of keys (random_bits with batched keys and first counters)."""
    return {"normal": x + fg.random.normal(key, (3,)), "uniform": fg.random.uniform(key, (2,)),
            "split": fg.random.split(key, 2), "fold_in": fg.random.fold_in(key, 5)}


CASES = [VCase(c.id + ("/axes2" if shift else ""), c.fn, c.args, shift=shift)
         for c in mc.ARRAY_CASES for shift in (0, 1)
         if (not shift or not isinstance(c.args[0], dict)) and c.id != "random"]
# (matrix_cases' "random" is batched by "random-draws" below, whose place in the list keeps
# every other case's axes)
for _dtype in (np.float64, np.float32, np.float16, np.int64, np.bool_):
    _ops, _X = mc.pointwise_grid(_dtype)
    CASES.append(VCase(f"pointwise-{np.dtype(_dtype).name}", _pointwise_fn(_ops), (_X,),
                       grid_rows))
CASES += [
    VCase("per-example-grads", _per_example_grads, (mc.rand((2, 3)), mc.rand((2, 3)))),
    VCase("per-example-grads-indexing", _grad_of_indexing, mc.INDEXING_CASES[1].args),
    VCase("per-example-grads-control-flow", _per_example_loop_grads, mc.CONTROL_CASES[0].args),
    VCase("random-draws", _random_draws, (mc.rand((3,)), np.array([7, 123], np.uint32))),
]


# ---- the matrix -------------------------------------------------------------------------------

def mismatches(got, want):
    """Descriptions of the leaves of `got` that differ from `want` (dtype, shape, value; NaN
    positions must agree)."""
    g_leaves, g_tree = tree_flatten_with_path(got)
    w_leaves, w_tree = tree_flatten_with_path(want)
    if g_tree != w_tree:
        return [f"structure {g_tree!r} != {w_tree!r}"]
    errors = []
    for (path, g), (_, w) in zip(g_leaves, w_leaves):
        name = "".join(f"[{p!r}]" for p in path)
        g, w = np.asarray(g), np.asarray(w)
        try:
            if w.dtype.kind in "fc":
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, strict=True)
            else:
                np.testing.assert_array_equal(g, w, strict=True)
        except AssertionError as e:
            errors.append(f"{name}: {str(e).strip()[:400]}")
    return errors


@pytest.mark.parametrize("k", [
    pytest.param(k, id=c.id, marks=[pytest.mark.xfail(reason=KNOWN_BUGS[c.id], strict=True)]
                 if c.id in KNOWN_BUGS else []) for k, c in enumerate(CASES)])
def test_vmap_matches_loop(k):
    case = CASES[k]
    args, _, in_axes, out_axes = arguments(case, k)
    with np.errstate(all="ignore"):
        want = loop_over_batch(case.fn, args, in_axes, out_axes)
        got = fg.vmap(case.fn, in_axes, out_axes)(*args)
    errors = mismatches(got, want)
    assert not errors, (f"in_axes={in_axes!r}, out_axes={out_axes!r}: {len(errors)} "
                        "mismatches:\n" + "\n".join(errors))


# ---- every primitive is batched by some case --------------------------------------------------

def batched_primitives(case, ex, in_axes):
    """Primitives of the per-example program (as fg.vmap traces it) that get a batched operand,
    i.e. whose batch rule (or the fallback) the case runs."""
    leaves, tree = tree_flatten(tuple(ex))
    flags = [ax is not None for ax in tree_flatten(in_axes, is_leaf=lambda x: x is None)[0]]
    assert len(flags) == len(leaves)

    def flat_fn(*xs):
        return tree_flatten(case.fn(*tree_unflatten(tree, list(xs))))[0]
    prog, consts = trace_flat(flat_fn, [aval_of(np.asarray(x)) for x in leaves])
    batched = {v.id: f for v, f in zip(prog.in_vars, [False] * len(consts) + flags)}
    names = set()
    for e in prog.eqns:
        fl = any(batched[v.id] for v in e.inputs if not isinstance(v, Lit))
        if fl:
            names.add(e.prim.name)
        for v in e.outputs:
            batched[v.id] = fl
    return names


def test_every_primitive_is_batched_by_a_case():
    """Every primitive of REGISTRY gets a batched operand in some case (or is EXCLUDED, with a
    reason); in_axes None and out_axes other than 0 occur many times."""
    covered, n_none, n_out = set(), 0, 0
    with np.errstate(all="ignore"):
        for k, case in enumerate(CASES):
            _, ex, in_axes, out_axes = arguments(case, k)
            covered |= batched_primitives(case, ex, in_axes)
            in_leaves = tree_flatten(in_axes, is_leaf=lambda x: x is None)[0]
            n_none += sum(ax is None for ax in in_leaves)
            n_out += sum(ax != 0 for ax in tree_flatten(out_axes)[0])
    assert set(EXCLUDED) <= set(REGISTRY), "stale EXCLUDED entries"
    missing = sorted(set(REGISTRY) - covered - set(EXCLUDED))
    assert not missing, f"primitives that no vmap case batches: {missing}"
    assert n_none >= 50 and n_out >= 50, (n_none, n_out)
