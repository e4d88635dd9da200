"""Shared test helpers: random inputs by domain, and the one gradient checker."""
import os
import shutil
import tempfile

import numpy as np
import pytest

# Compiled kernels of the test run go to a private directory, not the user's cache, removed
# when the run ends (set FUNCGRAD_CACHE_DIR yourself to keep kernels between runs).
_OWN_CACHE = None if "FUNCGRAD_CACHE_DIR" in os.environ else tempfile.mkdtemp(
    prefix="funcgrad-test-cache-")
if _OWN_CACHE is not None:
    os.environ["FUNCGRAD_CACHE_DIR"] = _OWN_CACHE


# The quick run and the full run. The README's test command runs the quick one: every test
# but those listed in slow_tests.txt (the slowest, half of the suite's time). CI runs all of
# them: FUNCGRAD_TESTS=full before the same command. Naming a test (path::name), a keyword
# (-k) or a marker expression (-m) on the command line runs what it selects, listed or not.
SLOW_LIST = os.path.join(os.path.dirname(__file__), "slow_tests.txt")


def slow_test_ids():
    with open(SLOW_LIST) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: in slow_tests.txt; only the full run "
                                       "(FUNCGRAD_TESTS=full) runs it")


def pytest_collection_modifyitems(config, items):
    slow = slow_test_ids()
    left_out = [item for item in items if item.nodeid in slow]
    for item in left_out:
        item.add_marker(pytest.mark.slow)
    full = os.environ.get("FUNCGRAD_TESTS", "").lower() == "full"
    named = (config.option.markexpr or config.option.keyword
             or any("::" in str(a) for a in config.args))
    if left_out and not (full or named):
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item.nodeid not in slow]


def pytest_report_header(config):
    if os.environ.get("FUNCGRAD_TESTS", "").lower() != "full":
        return ("quick run: the tests in tests/slow_tests.txt are left out "
                "(FUNCGRAD_TESTS=full runs them too)")


def pytest_sessionfinish(session, exitstatus):
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)

# fg.config.jit_background is off here (its environment variable, so that the notebooks and
# scripts tests run in child processes inherit it): fg.jit compiles on the first call, so that
# tests see kernels where they call them and no interpretation runs beside each compile.
# tests/test_background.py switches it on (fg.config.override) to test what users get by
# default: calls answered by the interpreter while the worker process compiles.
os.environ.setdefault("FUNCGRAD_JIT_BACKGROUND", "0")
# Tiering compiles at jit_threshold identical calls here, whatever they cost: tests count calls
# (tests/test_tiering.py tests the cost rule itself).
os.environ.setdefault("FUNCGRAD_TIER_PAYBACK", "0")
os.environ.setdefault("FUNCGRAD_JIT_THRESHOLD", "10")

from funcgrad.testing import check_grads  # noqa: F401  (re-exported for tests)

# Property tests explore new examples locally; in CI they replay a fixed set, so a run cannot
# turn red by chance (a failure found locally is kept in .hypothesis/ and replayed first).
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

DOMAINS = {
    "real": lambda r, s: r.standard_normal(s),
    "positive": lambda r, s: r.uniform(0.5, 2.0, s),
    "unit": lambda r, s: r.uniform(-0.9, 0.9, s),
    "nonzero": lambda r, s: r.choice([-1.0, 1.0], s) * r.uniform(0.5, 2.0, s),
    "gt1": lambda r, s: r.uniform(1.5, 3.0, s),
}


# The same domains for complex inputs, away from the branch cuts of the functions drawn from
# them (log, sqrt: the negative real axis; arcsin, arctanh: |x| > 1 on the real axis;
# arccosh: x < 1 on the real axis)
COMPLEX_DOMAINS = {
    "real": lambda r, s: r.standard_normal(s) + 1j * r.standard_normal(s),
    "positive": lambda r, s: r.uniform(0.5, 2.0, s) + 1j * r.uniform(-1.0, 1.0, s),
    "unit": lambda r, s: r.uniform(-0.6, 0.6, s) + 1j * r.uniform(-0.6, 0.6, s),
    "nonzero": lambda r, s: (r.choice([-1.0, 1.0], s) * r.uniform(0.5, 2.0, s)
                             + 1j * r.uniform(-1.0, 1.0, s)),
    "gt1": lambda r, s: r.uniform(1.5, 3.0, s) + 1j * r.uniform(-1.0, 1.0, s),
}


def rand(shape, domain="real", seed=0, dtype=np.float64):
    """Random array of `shape` drawn from `domain` (see DOMAINS; COMPLEX_DOMAINS for a complex
    dtype); 0-d for shape ()."""
    r = np.random.default_rng(seed)
    domains = COMPLEX_DOMAINS if np.dtype(dtype).kind == "c" else DOMAINS
    return np.asarray(domains[domain](r, shape), dtype=dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def loop_over_batch(f, args, in_axes, out_axes=0):
    """Reference for fg.vmap(f, in_axes, out_axes)(*args): a Python loop over the batch, each
    example run by the reference interpreter, the results stacked on axis `out_axes`. As for
    vmap, in_axes is an int/None for every argument or one entry per argument, an int/None or
    a pytree of them matching the argument; out_axes an int or a pytree matching the output."""
    from funcgrad.api import evaluate
    from funcgrad.tree_util import tree_flatten, tree_unflatten

    def leaf_axes(axes, tree):
        if axes is None or isinstance(axes, int):
            return [axes] * len(tree_flatten(tree)[0])
        return tree_flatten(axes, is_leaf=lambda x: x is None)[0]

    leaves, in_tree = tree_flatten(tuple(args))
    if in_axes is None or isinstance(in_axes, int):
        axes = leaf_axes(in_axes, tuple(args))
    else:
        axes = [ax for a, arg in zip(in_axes, args) for ax in leaf_axes(a, arg)]
    assert len(axes) == len(leaves), "in_axes does not match the arguments"
    size = next(np.shape(x)[ax] for x, ax in zip(leaves, axes) if ax is not None)
    rows = []
    for b in range(size):
        ex = [x if ax is None else np.take(x, b, axis=ax) for x, ax in zip(leaves, axes)]
        rows.append(tree_flatten(evaluate(f, *tree_unflatten(in_tree, ex))))
    out_tree = rows[0][1]
    oaxes = leaf_axes(out_axes, tree_unflatten(out_tree, rows[0][0]))
    outs = [np.moveaxis(np.stack([np.asarray(r[0][k]) for r in rows]), 0, ax)
            for k, ax in enumerate(oaxes)]
    return tree_unflatten(out_tree, outs)
