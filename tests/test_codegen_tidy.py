"""The generated source is free of noise (issue 11, item 6), and compiled results stay those of
the reference interpreter, bit for bit: no constant rebound in a loop, no copy of a value into
another name, no loop of size 1 and no empty loop, no np.full + np.concatenate to pack scalars
into a small array, no array allocated per loop step that could be allocated once or written
into the loop's stacked output."""
import ast
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from funcgrad.higher_order.loops import scan_p
from funcgrad.ir import Aval, bind_staged
from funcgrad.tracer import trace_flat
from funcgrad.tree_util import tree_leaves
from conftest import rand
from test_scalarize import lorenz, moves_and_reductions, small_while

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DT = 0.01


# ---- programs ----------------------------------------------------------------------------------

def lorenz_tuple(p, steps=30):
    """RK4 of a 3-variable ODE with the state as three scalars."""
    def f(x, y, z):
        return p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z

    def step(i, s):
        k1 = f(*s)
        k2 = f(*[u + 0.5 * DT * k for u, k in zip(s, k1)])
        k3 = f(*[u + 0.5 * DT * k for u, k in zip(s, k2)])
        k4 = f(*[u + DT * k for u, k in zip(s, k3)])
        return tuple(u + DT / 6.0 * (a + 2 * b + 2 * c + d)
                     for u, a, b, c, d in zip(s, k1, k2, k3, k4))
    x, y, z = fg.fori_loop(0, steps, step, (1.0, 1.0, 1.0))
    return x * x + y * y + z * z


def newton(a):
    """sqrt(a) by Newton's iteration with a tolerance stop (a while loop)."""
    def body(c):
        x, _ = c
        return 0.5 * (x + a / x), x
    return fg.while_loop(lambda c: fnp.abs(c[0] - c[1]) > 1e-12, body, (a, a + 1.0))[0]


def scalar_loop(a):
    return fg.fori_loop(0, 100, lambda i, x: x * 0.99 + a, 1.0)


def vector_scan(p):
    """A 20-float carry and a stacked 20-float output per step."""
    def step(s, x):
        s2 = s * p + fnp.sin(s) * x
        return s2, s2 * 2.0
    c, ys = fg.scan(step, fnp.ones(20), fnp.linspace(0.0, 1.0, 10))
    return fnp.sum(c) + fnp.sum(ys * ys)


def small_scan(p):
    """A 3-float carry (scalars in the loop) and 3-float stacked outputs, returned whole."""
    def step(s, x):
        s2 = s * p + fnp.sin(s) * x
        return s2, s2 * 2.0
    c, ys = fg.scan(step, fnp.array([1.0, 2.0, 3.0]), fnp.linspace(0.0, 1.0, 10))
    return fnp.sum(c) + fnp.sum(ys)


def scan_with_temporary(p):
    """tanh(s * x) is an array only the matrix product reads: it does not outlive a step."""
    w = fnp.reshape(fnp.arange(400.0), (20, 20)) / 400.0

    def step(s, x):
        s2 = s + 0.01 * (w @ fnp.tanh(s * x))
        return s2, fnp.sum(s2)
    c, ys = fg.scan(step, p, fnp.linspace(0.0, 1.0, 10))
    return fnp.sum(c) + fnp.sum(ys)


def while_with_temporary(x):
    def body(c):
        v, i = c
        return v * 0.5 + fnp.cumsum(v * 0.1), i + 1
    return fnp.sum(fg.while_loop(lambda c: c[1] < 5, body, (x, 0))[0])


def size_one(x):
    """Arrays with an axis of length 1: fused loops and a cumsum over them."""
    m = x.reshape(1, -1)
    y = fnp.exp(m) * 2.0 + m
    z = y - fnp.max(y, axis=1, keepdims=True)
    return fnp.sum(z ** 2) + fnp.sum(fnp.cumsum(y.reshape(-1, 1), axis=1) * 0.5)


P3 = np.array([10.0, 20.0, 8.0 / 3.0])
V20 = np.linspace(0.5, 0.9, 20)
PROGRAMS = {
    "lorenz-array": (lorenz, (P3,)),
    "lorenz-tuple": (lorenz_tuple, (P3,)),
    "newton": (newton, (2.0,)),
    "scalar-loop": (scalar_loop, (0.5,)),
    "vector-scan": (vector_scan, (V20,)),
    "small-scan": (small_scan, (np.array([0.9, 0.8, 0.7]),)),
    "scan-temporary": (scan_with_temporary, (np.linspace(0.1, 0.5, 20),)),
    "while-temporary": (while_with_temporary, (np.linspace(0.1, 0.5, 20),)),
    "size-one": (size_one, (np.linspace(0.1, 0.5, 20),)),
    "moves-and-reductions": (moves_and_reductions, (rand((4,), seed=1),)),
    "small-while": (lambda x: fnp.sum(small_while(x) ** 3), (np.array([0.3, -0.2, 0.5]),)),
}
IDS = list(PROGRAMS)


def sources(key):
    """The kernel source of the program and of its gradient."""
    f, args = PROGRAMS[key]
    return [fg.jit(g).lower(*args).source for g in (f, fg.grad(f))]


# ---- reading the source ------------------------------------------------------------------------

def loop_bodies(src):
    """(header, lines of the body) of every for/while loop, nested loops included."""
    lines = src.splitlines()
    out = []
    for k, line in enumerate(lines):
        head = line.strip()
        if head.startswith(("for ", "while ")):
            depth = len(line) - len(line.lstrip())
            body = []
            for nxt in lines[k + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= depth:
                    break
                body.append(nxt)
            out.append((head, body))
    return out


def step_loops(src):
    """Bodies of the loops over the steps of a scan (`for b_k in ...`) or of a while loop."""
    return [(h, b) for h, b in loop_bodies(src)
            if re.match(r"for \w+_k in ", h) or h == "while True:"]


def _elements(node):
    return node.elts if isinstance(node, ast.Tuple) else [node]


def copies(src):
    """(target, source) of every assignment of a bare name to another name, and how many times
    each name is assigned in its function."""
    pairs, stores = [], {}
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            ts, vs = _elements(node.targets[0]), _elements(node.value)
            if len(ts) == len(vs) and all(isinstance(x, ast.Name) for x in ts + vs):
                pairs += [(a.id, b.id) for a, b in zip(ts, vs)]
    return pairs, stores


def _constant(node):
    """A number, np.inf / np.nan, a negation of one, or np.float32(...) etc. of one."""
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, ast.Call):
        return len(node.args) == 1 and _constant(node.args[0])
    return isinstance(node, ast.Constant) or (isinstance(node, ast.Attribute)
                                              and node.attr in ("inf", "nan"))


def constants_assigned(lines):
    """Names that these lines (block headers skipped) assign a constant."""
    names = []
    for line in lines:
        try:
            tree = ast.parse(line.strip())
        except SyntaxError:                     # `for ...:`, `if ...:`, `else:`
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                names += [t.id for t, v in zip(_elements(node.targets[0]), _elements(node.value))
                          if isinstance(t, ast.Name) and _constant(v)]
    return names


# ---- the noise is gone ---------------------------------------------------------------------------

@pytest.mark.parametrize("key", IDS)
def test_no_constant_is_rebound_in_a_loop(key):
    for src in sources(key):
        for head, body in loop_bodies(src):
            # values' names are letters (and a trailing `_`, or `_i` for an element); the
            # accumulators of sums (`x_acc`, `x_c`) start again in each row of a loop nest
            bad = [n for n in constants_assigned(body) if re.fullmatch(r"[a-z]+_?(_i)?", n)]
            assert not bad, (head, bad)


@pytest.mark.parametrize("key", IDS)
def test_no_value_is_copied_into_another_name(key):
    for src in sources(key):
        pairs, stores = copies(src)
        copied = {t for t, _ in pairs}
        # a name assigned once, from another name, is that name; a copy of a copy is a chain
        aliases = [(t, s) for t, s in pairs if stores[t] == 1 or s in copied and stores[s] == 1]
        assert not aliases, aliases


@pytest.mark.parametrize("key", IDS)
def test_no_loop_of_size_one_and_no_empty_loop(key):
    for src in sources(key):
        assert not re.search(r"range\(1\)", src)
        for head, body in loop_bodies(src):
            assert any(ln.strip() for ln in body), head
        assert not [n for n in constants_assigned(src.splitlines()) if n.endswith("_i")]


@pytest.mark.parametrize("key", ["lorenz-array", "small-scan", "moves-and-reductions",
                                 "small-while"])
def test_small_arrays_are_packed_without_full_and_concatenate(key):
    for src in sources(key):
        assert "np.concatenate" not in src and not re.search(r"np\.full\(\(1, \)", src)
        assert not re.search(r"\.reshape\(\(\w+, 1, \)\)", src)


def test_packing_writes_each_value_once():
    src = sources("lorenz-array")[0]
    packed = re.search(r"\n\s*(\w+) = np\.empty\(\(3, \), np\.float64\)\n", src).group(1)
    stores = re.findall(rf"\n\s*({packed}\[.*\]) = ", src)
    assert stores == [f"{packed}[0]", f"{packed}[1]", f"{packed}[2]"]


def allocated(lines):
    return [m.group(1) for ln in lines if (m := re.match(r"\s*(\w+) = np\.empty\(", ln))]


@pytest.mark.parametrize("key", ["vector-scan", "scan-temporary", "while-temporary"])
def test_step_loops_allocate_only_what_outlives_a_step(key):
    """Inside a loop over steps, the only arrays allocated are those the next step or the code
    after the loop reads: the carries."""
    for src in sources(key):
        for head, body in step_loops(src):
            carried = set()
            for ln in body:
                m = re.fullmatch(r"\s*([\w, ]+) = ([\w, ]+)", ln)
                if m:
                    carried.update(n.strip() for n in m.group(2).split(","))
            assert set(allocated(body)) <= carried, (head, body)


def test_stacked_outputs_are_written_in_place():
    src = sources("vector-scan")[0]
    (head, body), = step_loops(src)
    stacked = re.findall(r"\n\s*(\w+) = np\.empty\(\(10, ", src)
    views = [ln for ln in body if re.fullmatch(rf"\s*\w+ = ({'|'.join(stacked)})\[\w+_k\]", ln)]
    assert views and not [ln for ln in body if re.fullmatch(r"\s*\w+\[\w+_k\] = [a-z]+", ln)]


def test_temporaries_are_allocated_before_the_loop():
    for src in sources("scan-temporary"):
        lines = src.splitlines()
        loop = next(k for k, ln in enumerate(lines) if re.match(r"\s*for \w+_k in ", ln))
        # tanh(s * x), the matrix product's operand
        tanh = re.search(r"(\w+) = np\.ascontiguousarray\((\w+)\)\.reshape\(\(20, 1, \)\)",
                         src).group(2)
        assert tanh in allocated(lines[:loop]) and tanh not in allocated(lines[loop:])


# ---- and the results are the interpreter's, bit for bit ----------------------------------------

def assert_same_bits(got, want):
    got, want = tree_leaves(got), tree_leaves(want)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes(), (a, b)


# sin, tanh (funcgrad's polynomials) and long sums (compensated) round differently from NumPy
INEXACT = {"vector-scan", "small-scan", "scan-temporary", "while-temporary", "size-one"}


@pytest.mark.parametrize("key", IDS)
def test_compiled_equals_interpreter(key):
    f, args = PROGRAMS[key]
    for g in (f, fg.grad(f)):
        got, want = fg.jit(g)(*args), evaluate(g, *args)
        if key in INEXACT:
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
        else:
            assert_same_bits(got, want)


def scan_program(width, constant_carry):
    """A scan with an array carry (scalars when small), a scalar carry, a carry that keeps
    its value or not, a temporary read through a view (a reversal), constants, and stacked
    outputs; only +, -, * and indexing, so compiled and interpreted agree bit for bit."""
    def f(v, c, xs):
        def step(carry, x):
            s, k, z = carry
            t = s * x + c
            s2 = s * 0.9 + t[::-1] * 0.1
            z2 = z if constant_carry else z + s2[0]
            return (s2, k * 0.5 + 1.0, z2), (s2 * 2.0, s2[0] - k)
        (s, k, z), (ys, firsts) = fg.scan(step, (v, 1.0, 0.0), xs)
        return s, k, z, ys, firsts

    def loss(v, c, xs):
        s, k, z, ys, firsts = f(v, c, xs)
        return s[0] * 3.0 + s[-1] + k + z + ys[-1, 0] + firsts[-1]
    return f, loss


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 12), st.integers(1, 4), st.booleans(), st.floats(-2.0, 2.0))
def test_scans_compiled_equal_interpreted(width, steps, constant_carry, x0):
    f, loss = scan_program(width, constant_carry)
    v = np.linspace(-1.0, 1.0, width) + x0
    c, xs = np.cos(np.arange(width)), np.linspace(0.5, 1.0, steps)
    for g in (f, fg.grad(loss, argnums=(0, 1))):
        assert_same_bits(fg.jit(g)(v, c, xs), evaluate(g, v, c, xs))


def shared_body(x, n):
    """Two scans with one body program (simplification keeps shared sub-programs shared): a
    result of the first is read after the second has run, assigning the same carry names."""
    body, _ = trace_flat(lambda c, k: [c * 0.5 + k, k + 1.0], [Aval((), np.float64)] * 2)
    scan = lambda init, length: bind_staged(scan_p, *init, body=body, length=length,
                                            reverse=False, n_c=0, n_carry=2)
    a, b = scan((x, 0.0), n), scan((x * 2.0, 1.0), n + 1)
    return a[0] * 3.0 + b[0] + a[1]


@pytest.mark.parametrize("n", [0, 3])
def test_loops_sharing_a_body_keep_their_results(n):
    f = lambda x: shared_body(x, n)
    for g in (f, fg.grad(f)):
        assert_same_bits(fg.jit(g)(0.7), evaluate(g, 0.7))


def math_and_sums(x, y):
    """Full sums fused with vectorisable math (their terms are summed after the loop), a sum
    without it (summed in the loop), and a row sum (never deferred)."""
    s1 = fnp.sum(fnp.logaddexp(0.0, x) - y * x)
    s2 = fnp.sum(fnp.exp(-x * x) * fnp.sin(y))
    return s1 + 2 * s2 + fnp.sum(x * y), fnp.sum(fnp.tanh(x), axis=-1)


@pytest.fixture(scope="module")
def kernels_with_and_without_deferred_sums():
    """fg.jit of math_and_sums and of its gradient, compiled with sums deferred and not."""
    from funcgrad.backend import codegen
    made = {}
    for defer in (True, False):
        codegen.DEFER_SUMS = defer
        try:
            for ndim in (1, 2):
                x = np.ones((3,) * ndim)
                fs = [fg.jit(math_and_sums),
                      fg.jit(fg.grad(lambda x, y: math_and_sums(x, y)[0]))]
                for f in fs:
                    f(x, x)              # compile now, with this setting
                made[defer, ndim] = fs
        finally:
            codegen.DEFER_SUMS = True
    src = fg.jit(math_and_sums).lower(np.ones(3), np.ones(3)).source
    assert "_t[i0] = " in src and "_vm.logaddexp_f64" in src   # the deferred form is compiled
    return made


@settings(max_examples=25, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(1, 2), st.integers(1, 40), st.integers(0, 2 ** 31))
def test_deferred_sums_change_no_result(kernels_with_and_without_deferred_sums, ndim, n, seed):
    """The speed path (terms stored, summed after the loop in the same order) gives the same
    bits as the sum inside the loop, and agrees with the interpreter (NumPy's pairwise sums
    and libm round differently, so to 1e-13)."""
    rng = np.random.default_rng(seed)
    shape = (n,) if ndim == 1 else (n, 1 + n % 5)
    x, y = rng.normal(0, 3, shape), rng.normal(0, 3, shape)
    deferred, inline = (kernels_with_and_without_deferred_sums[d, ndim] for d in (True, False))
    grad = fg.grad(lambda x, y: math_and_sums(x, y)[0])
    for fast, slow, g in zip(deferred, inline, (math_and_sums, grad)):
        got = fast(x, y)
        assert_same_bits(got, slow(x, y))
        for a, b in zip(tree_leaves(got), tree_leaves(evaluate(g, x, y))):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def stencils(x, a, b):
    """Sums of products of shifted slices: the gradient scatter-adds into one buffer at
    offsets 0, 1 and 2 (Rosenbrock's x[1:] / x[:-1], a second-neighbour term)."""
    return (fnp.sum(a * (x[1:] - x[:-1] ** 2) ** 2 + (b - x[:-1]) ** 2)
            + fnp.sum(b * x[2:] * x[:-2]))


def stencils_2d(x, a, b):
    """The same along either axis of a matrix, with vectorisable math in the loop."""
    return fnp.sum(a * x[:, 1:] * x[:, :-1] ** 2) + fnp.sum(fnp.sin(x[1:, :]) * x[:-1, :] * b)


def rosen_shifted(x, a, b):
    """Rosenbrock on x[1:]: its gradient's carried chain is the first to write the zero
    buffer, from element 1 on (fusion.first_writes: element 0 alone is zero-filled)."""
    return fnp.sum(a * (x[2:] - x[1:-1] ** 2) ** 2 + (b - x[1:-1]) ** 2)


@pytest.fixture(scope="module")
def kernels_with_and_without_deferred_scatters():
    """fg.jit of the stencils' gradients, compiled with the shifted scatter-adds in the loop and
    as the speed path writes them (offset 1: carried to the next iteration; others: added in
    loops of their own)."""
    from funcgrad.backend import codegen
    made, old = {}, codegen.DEFER_SCATTER_SIZE
    shapes = {stencils: (300,), stencils_2d: (17, 19), rosen_shifted: (300,)}
    for size in (old, 10 ** 12):
        codegen.DEFER_SCATTER_SIZE = size
        try:
            for f, shape in shapes.items():
                g = fg.jit(fg.grad(f))
                g(np.ones(shape), 1.0, 1.0)          # compile now, with this setting
                made[f, size == old] = g
        finally:
            codegen.DEFER_SCATTER_SIZE = old
    src = fg.jit(fg.grad(stencils)).lower(np.ones(300), 1.0, 1.0).source
    assert re.search(r"if i0 >= 1:\n\s+\w+\[i0\] \+= \w+_next\d+", src), src    # offset 1
    assert re.search(r"for i0 in range\(\d+\):\n\s+\w+\[i0\] \+= \w+_at\d+\[i0\]", src), src
    src = fg.jit(fg.grad(rosen_shifted)).lower(np.ones(300), 1.0, 1.0).source
    assert re.search(r"(\w+) = np.empty.*\n\s+\1\[0:1\] = 0.0", src), src   # not zero-filled
    assert re.search(r"\w+\[1 \+ i0\] = 0.0 \+ \w+", src), src             # first write
    return made, shapes


@settings(max_examples=25, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 31), st.sampled_from([0.0, -0.0]) | st.floats(-3, 3),
       st.sampled_from([0.0, -0.0]) | st.floats(-3, 3), st.sampled_from([0.0, -0.0, 0.3]))
def test_deferred_scatter_adds_change_no_result(kernels_with_and_without_deferred_scatters,
                                                 seed, a, b, zeros):
    """The speed path (shifted scatter-adds carried to the next iteration or added in loops of
    their own; a zero buffer stored into instead of added to) adds each element's terms in the
    interpreter's order: the same bits as the interpreter where the loop is plain arithmetic
    (signed zeros included), and within rounding of the kernel that adds them inside the loop."""
    made, shapes = kernels_with_and_without_deferred_scatters
    rng = np.random.default_rng(seed)
    for f, shape in shapes.items():
        x = rng.normal(0, 2, shape)
        x[rng.random(shape) < 0.3] = zeros            # terms that are -0.0 or +0.0
        got, inline = made[f, True](x, a, b), made[f, False](x, a, b)
        np.testing.assert_allclose(got, inline, rtol=1e-13, atol=1e-12)
        prog = fg.jit(fg.grad(f)).lower(x, a, b).program
        want = fg.eval_program(prog, x, a, b)[0]
        if f is not stencils_2d:
            assert_same_bits(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)


def test_rosenbrock_gradient_loop_vectorises():
    """The backward loop of Rosenbrock's gradient (scatter-adds at offsets 0 and 1, the second
    carried to the next iteration) is vectorised by LLVM: `vector.body` on doubles."""
    g = fg.jit(fg.grad(lambda x: fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2
                                         + (1 - x[:-1]) ** 2)))
    x = np.linspace(-1.0, 1.0, 1000)
    np.testing.assert_allclose(g(x), fg.grad(lambda x: np.sum(
        100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))(x), rtol=1e-14)
    (entry,) = g._entries.values()
    llvm = "".join(entry.compiled.fn.inspect_llvm().values())
    body = llvm[llvm.find("vector.body:"):]
    assert "vector.body:" in llvm and re.search(r"<\d+ x double>", body), "not vectorised"
