"""Size budget (tinygrad-style) and docstrings on the public API."""
import os

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FILE_LINES = 650        # aim for about 500


def _sources():
    for top in ("funcgrad", "transforms"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(".py"):
                    yield os.path.join(dirpath, name)


def test_files_stay_small():
    big = {os.path.relpath(p, ROOT): n for p in _sources()
           if (n := sum(1 for _ in open(p))) > MAX_FILE_LINES}
    assert not big, f"files over {MAX_FILE_LINES} lines: {big}"


def test_public_functions_have_docstrings():
    exported = [getattr(fg, name) for name in fg.__all__]
    functions = [f for f in exported if callable(f) and not isinstance(f, type)]
    public = functions + [fg.custom_vjp, fg.custom_jvp]
    public += [fg.tree_util.tree_map, fg.tree_util.tree_flatten, fg.tree_util.tree_unflatten]
    public += [getattr(fnp, n) for n in dir(fnp) if callable(getattr(fnp, n))
               and getattr(getattr(fnp, n), "__module__", "").startswith("funcgrad")]
    missing = [getattr(f, "__name__", f) for f in public if not (f.__doc__ or "").strip()]
    assert not missing


def test_check_grads_argnums_holds_other_arguments_fixed():
    import numpy as np
    idx = np.array([2, 0])
    check_grads(lambda x, i: fnp.sum(x[i] ** 3), (np.array([1.0, 2.0, 3.0]), idx), argnums=0)


def test_the_slow_list_names_existing_tests():
    """Every line of tests/slow_tests.txt (the tests only the full run runs) names a test
    function that exists: a renamed slow test would otherwise move to the quick run unseen."""
    import ast
    from conftest import slow_test_ids
    defined = {}
    missing = []
    for node_id in sorted(slow_test_ids()):
        path, _, name = node_id.partition("::")
        name = name.split("[", 1)[0]
        full = os.path.join(ROOT, path)
        if path not in defined:
            with open(full) as f:
                defined[path] = {n.name for n in ast.walk(ast.parse(f.read()))
                                 if isinstance(n, ast.FunctionDef)}
        if not name.startswith("test") or name not in defined[path]:
            missing.append(node_id)
    assert not missing, f"slow_tests.txt names tests that do not exist: {missing}"
