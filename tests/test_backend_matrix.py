"""The backend correctness matrix: for every primitive, the compiled forward and backward passes
equal the reference interpreter to rounding, with broadcasting, 0-d, empty, non-contiguous
(transposed, strided, reversed, Fortran) and NaN/inf inputs. Cases live in matrix_cases.py.

Each case is one compiled kernel (Numba compile time is the CI budget; the elementwise
"pointwise" kernels are 0-d and called once per grid point, see matrix_cases.py):
`fg.jit(fg.value_and_grad(loss, has_aux=True))`, where loss = sum_k sum(out_k * w_k) over the
case's float results out_k (random weights w_k) and the aux are the results themselves. The
results are compared with `evaluate(fn, ...)`, the gradients with the same value_and_grad
un-jitted (interpreted: tiering is off in this module). Dtypes must match exactly, NaN and
inf positions too; integers and booleans must be equal (the sign of a zero is not checked).
"""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.ir import Program
from funcgrad.primitives import REGISTRY
from funcgrad.tree_util import tree_flatten_with_path, tree_leaves, tree_map

import matrix_cases as mc

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# by result dtype; float64 results use the case's own tolerance (about 1e-12)
TOLERANCES = {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float16): (2e-3, 1e-3),
              np.dtype(np.complex64): (1e-5, 1e-6)}

# Primitives that need no case of their own, name -> reason.
NOT_COVERED: dict = {
    # only ever created inside a backward pass (fg.checkpoint's recomputation), so no forward
    # case contains it: the checkpoint case compiles it there, and test_forward checks the
    # Hessian of a checkpointed chain (its own derivative) against the plain one.
    "remat_barrier": "backward-only",
    # fg.checkpoint removes it from the program it traces (test_checkpoint.py)
    "checkpoint_name": "never in a compiled program",
    # a while loop's reverse mode: compiled forward by the control-flow case here; its own
    # derivative (second order through a while loop) is compiled and checked in test_control
    "while_grad": "backward-only",
    # inserted only into programs compiled under fg.debug_nans; tests/test_debug.py compiles
    # them (forward and backward, loops, vmap) and compares with the interpreter's reports
    "debug_check": "fg.debug_nans only",
    "debug_check_pointwise": "fg.debug_nans only",
    # an effect without a value (fg.debug.print): compiled in tests/test_debug.py
    "debug_callback": "no value to compare",
}


@pytest.fixture(autouse=True, scope="module")
def interpreted_reference():
    """Keep un-jitted grads in the interpreter (tiering would compile them after a few calls)."""
    from funcgrad.tiering import policy
    old, policy.threshold = policy.threshold, 0
    yield
    policy.threshold = old


# ---- comparing --------------------------------------------------------------------------------

def mismatches(got, want, rtol, atol, what):
    """Descriptions of every leaf of `got` that differs from `want` (dtype, shape or value)."""
    errors = []
    g_leaves, g_tree = tree_flatten_with_path(got)
    w_leaves, w_tree = tree_flatten_with_path(want)
    if g_tree != w_tree:
        return [f"{what}: structure {g_tree!r} != {w_tree!r}"]
    for (path, g), (_, w) in zip(g_leaves, w_leaves):
        name = what + "".join(f"[{k!r}]" for k in path)
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            errors.append(f"{name}: got {g.dtype}{list(g.shape)}, want {w.dtype}{list(w.shape)}")
            continue
        if w.dtype.kind not in "fc":
            if not np.array_equal(g, w):
                errors.append(f"{name}: got {g.tolist()}, want {w.tolist()}")
            continue
        rt, at = TOLERANCES.get(w.dtype, (rtol, atol))
        bad = ~np.isclose(g, w, rtol=rt, atol=at, equal_nan=True)    # NaN and inf must match too
        if bad.any():
            at_ = f" at {np.argwhere(bad)[:6].tolist()}" if w.ndim else ""
            errors.append(f"{name}: {int(bad.sum())} of {w.size} differ{at_}; "
                          f"got {g[bad][:6].tolist()}, want {w[bad][:6].tolist()}")
    return errors


def assert_same(got, want, rtol, atol, what):
    errors = mismatches(got, want, rtol, atol, what)
    assert not errors, f"{len(errors)} mismatches:\n" + "\n".join(errors)


def weighted_loss(fn):
    """loss(*args, w) = the sum of sum(out[k] * w[k]) over the results k that have a weight
    (the float ones, see `weights_for`), with the results themselves as aux."""
    def loss(*args):
        *args, w = args
        out = fn(*args)
        return sum((fnp.real(out[k] * w[k]).sum() for k in w), start=0.0), out
    return loss


def weights_for(outputs, seed=0):
    """Random weights shaped like the float (and complex) results."""
    r = np.random.default_rng(seed)
    return {k: np.asarray(r.standard_normal(np.shape(v))
                          + (1j * r.standard_normal(np.shape(v)) if np.iscomplexobj(v) else 0),
                          np.asarray(v).dtype)
            for k, v in outputs.items() if np.asarray(v).dtype.kind in "fc"}


# ---- the matrix -------------------------------------------------------------------------------

def check(fn, args, diff=(0,), rtol=1e-12, atol=1e-13, grad=True, call=None):
    """Compiled forward (and backward) of fn(*args) against the interpreter. `call(jitted,
    *args)` runs the compiled function (default: once)."""
    call = call or (lambda jitted, *a: jitted(*a))
    with np.errstate(all="ignore"):
        want = evaluate(fn, *args)
        if not grad:
            assert_same(call(fg.jit(fn), *args), want, rtol, atol, "forward")
            return
        w = weights_for(want)
        vg = fg.value_and_grad(weighted_loss(fn), argnums=diff, has_aux=True)
        _, ref_grads = vg(*args, w)
        (_, out), grads = call(fg.jit(vg), *args, w)
    errors = mismatches(out, want, rtol, atol, "forward")
    errors += mismatches(grads, ref_grads, rtol, atol, "grad")
    assert not errors, f"{len(errors)} mismatches:\n" + "\n".join(errors)


@pytest.mark.parametrize("case", mc.ARRAY_CASES, ids=lambda c: c.id)
def test_array_case(case):
    check(case.fn, case.args, case.diff, case.rtol, case.atol)


def run_pointwise(jitted, *grids):
    """Call a 0-d kernel once per grid point (0-d arrays and NumPy scalars alternately, the two
    ways of passing a 0-d value) and stack the results."""
    results = []
    for k in range(len(tree_leaves(grids)[0])):
        pick = (lambda a: a[k]) if k % 2 else (lambda a: np.asarray(a[k]))
        results.append(jitted(*tree_map(pick, grids)))
    return tree_map(lambda *rs: np.stack([np.asarray(r) for r in rs]), *results)


POINTWISE_DTYPES = [np.float64, np.float32, np.float16, np.complex128, np.complex64, np.int64,
                    np.bool_]


def pointwise_fn(ops):
    def elementwise(x):
        return {name: op.fn(*x[name]) for name, op in ops.items()}
    return elementwise


@pytest.mark.parametrize("dtype", POINTWISE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_elementwise_pointwise(dtype):
    """Every elementwise operation at every pair of domain and special values (NaN, +-inf, +-0,
    subnormal, huge); integers and booleans forward only (their results have no gradient)."""
    ops, X = mc.pointwise_grid(dtype)
    check(pointwise_fn(ops), (X,), grad=np.dtype(dtype).kind in "fc", call=run_pointwise)


# ---- every primitive has a case ---------------------------------------------------------------

def _primitives(prog):
    names = set()
    for e in prog.eqns:
        names.add(e.prim.name)
        for p in e.params.values():
            for sub in p if isinstance(p, (tuple, list)) else (p,):
                if isinstance(sub, Program):
                    names |= _primitives(sub)
    return names


def _case_programs():
    """(forward program, forward-and-backward program or None) of every case; tracing only."""
    cases = [(c.fn, c.args, c.diff, True) for c in mc.ARRAY_CASES]
    for dtype in POINTWISE_DTYPES:
        ops, X = mc.pointwise_grid(dtype)
        x0 = tree_map(lambda a: a[0], X)
        cases.append((pointwise_fn(ops), (x0,), (0,), np.dtype(dtype).kind in "fc"))
    for fn, args, diff, grad in cases:
        fwd, full = fg.jit(fn).lower(*args).program, None
        if grad:
            vg = fg.value_and_grad(weighted_loss(fn), argnums=diff, has_aux=True)
            try:
                full = fg.jit(vg).lower(*args, weights_for(evaluate(fn, *args))).program
            except Exception:         # the case's own test reports it
                pass
        yield fwd, full


def test_every_primitive_has_a_case():
    """Every primitive of REGISTRY occurs in a compiled case; every differentiable one also in
    the forward pass of a case whose gradient is checked (so its vjp rule is compiled)."""
    compiled, differentiated = set(), set()
    with np.errstate(all="ignore"):
        for fwd, full in _case_programs():
            compiled |= _primitives(fwd if full is None else full)
            if full is not None:
                differentiated |= _primitives(fwd)
    assert set(NOT_COVERED) <= set(REGISTRY), "stale NOT_COVERED entries"
    missing = sorted(set(REGISTRY) - compiled - set(NOT_COVERED))
    assert not missing, f"primitives without a case in matrix_cases.py: {missing}"
    no_grad = sorted(n for n, p in REGISTRY.items() if p.differentiable
                     and n not in differentiated and n not in NOT_COVERED)
    assert not no_grad, f"differentiable primitives whose gradient no case checks: {no_grad}"
