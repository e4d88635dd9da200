"""Package layout and the one-way dependency direction (IR <- primitives <- tracer <- transforms)."""
import ast
import os
import subprocess
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "funcgrad")
TRANSFORMS = os.path.join(ROOT, "transforms")


def _imports(path):
    tree = ast.parse(open(path).read())
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            mods.add((node.level, node.module or ""))
        elif isinstance(node, ast.Import):
            mods.update((0, a.name) for a in node.names)
    return mods


def _internal(path, base):
    """funcgrad-relative module names imported by a file in package dir `base`."""
    names = set()
    for level, mod in _imports(path):
        if level == 0:
            if mod.split(".")[0] in ("funcgrad", "transforms"):
                names.add(mod)
            continue
        rel = os.path.relpath(os.path.dirname(path), base).split(os.sep)
        rel = [] if rel == ["."] else rel
        parts = rel[:len(rel) - (level - 1)] if level > 1 else rel
        names.add(".".join(parts + ([mod] if mod else [])))
    return names


def test_transforms_is_installed_from_top_level_folder():
    import funcgrad.transforms
    assert os.path.dirname(funcgrad.transforms.__file__) == TRANSFORMS


def test_transforms_use_relative_imports_only():
    for name in os.listdir(TRANSFORMS):
        if name.endswith(".py"):
            for level, mod in _imports(os.path.join(TRANSFORMS, name)):
                assert level > 0 or not mod.startswith(("transforms", "funcgrad")), (name, mod)


def test_dependency_direction():
    allowed = {
        "ir.py": {"_errors"},
        "tree_util.py": set(),
        "_errors.py": set(),
        "interpreter.py": {"ir", "_errors"},
    }
    for fname, ok in allowed.items():
        got = {m.split(".")[0] for m in _internal(os.path.join(PKG, fname), PKG)} - {""}
        assert got <= ok, (fname, got - ok)
    for name in os.listdir(os.path.join(PKG, "primitives")):
        if name.endswith(".py"):
            got = _internal(os.path.join(PKG, "primitives", name), PKG)
            bad = {m for m in got if m.removeprefix("funcgrad.").split(".")[0] in (
                "tracer", "api", "transforms", "interpreter", "testing", "numpy")}
            assert not bad, (name, bad)
    for name in os.listdir(os.path.join(PKG, "numpy")):      # NumPy compositions: below transforms
        if name.endswith(".py"):
            got = _internal(os.path.join(PKG, "numpy", name), PKG)
            bad = {m for m in got if m.removeprefix("funcgrad.").split(".")[0] not in (
                "primitives", "ir", "_errors", "tree_util", "tracer", "numpy")}
            assert not bad, (name, bad)
    got = _internal(os.path.join(PKG, "tracer.py"), PKG)
    assert not {m for m in got if m.split(".")[0] in ("api", "transforms", "testing")}


def test_import_from_clean_directory(tmp_path):
    code = "import funcgrad, funcgrad.numpy as fnp, funcgrad.transforms; print(fnp.sin)"
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([sys.executable, "-c", "import funcgrad, sys; print('numba' in sys.modules)"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.stdout.strip() == "False"


def test_every_primitive_has_every_rule_or_opts_out():
    """Each rule kind is given in the primitive's define() block or explicitly absent: the
    derivative (vjp, or vjp_split for loops) unless differentiable=False, and a batch rule unless
    the primitive is one of the few vmap runs example by example (test_vmap lists them)."""
    import funcgrad  # noqa: F401  (registers the control-flow rules too)
    from funcgrad.primitives import REGISTRY
    for name, p in REGISTRY.items():
        assert callable(p.impl) and callable(p.abstract), name
        assert not p.differentiable or p.vjp is not None or p.vjp_split is not None, name
        assert p.batch is None or callable(p.batch), name
