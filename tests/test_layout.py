"""Package layout: the whole dependency graph, one way, with no cycles (docs/architecture.md).

Layers, lowest first; a module imports modules of its own layer or lower ones, never higher:
  base          _errors, _version, tree_util, _config (fg.config's options), _recent (the
                caches' eviction rule)
  ir            ir (the IR, the trace stack, bind), ir_dot (pictures of programs; imports
                nothing of funcgrad), interpreter (runs a Program with NumPy)
  primitives    funcgrad/primitives/: every primitive, one define() block each, and the table
  tracer        tracer (Tracer values, trace_flat)
  numpy         funcgrad/numpy/: NumPy's API, compositions of primitives
  transforms    transforms/ (funcgrad.transforms): reverse and forward mode, batching, simplify
  tiering       tiering (when to compile; the long-loop hook jit fills), guards (the state a
                function reads, and the generated checks that it is unchanged)
  higher_order  funcgrad/higher_order/: loop, branch and custom-rule primitives (rules transform
                sub-programs)
  backend       funcgrad/backend/: reads only the IR and the primitive table
  api           funcgrad/api/, nn, optim, optimize, scipy, ode, testing, debug, dask: the public
                entry points
  package       funcgrad/__init__.py re-exports
Imports inside functions count like any other (they are how cycles hide).
"""
import ast
import inspect
import os
import subprocess
import sys
from collections import Counter

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "funcgrad")
TRANSFORMS = os.path.join(ROOT, "transforms")

LAYERS = [
    ("base", ["funcgrad._errors", "funcgrad._version", "funcgrad.tree_util", "funcgrad._nan_checks",
              "funcgrad._config", "funcgrad._recent"]),
    ("ir", ["funcgrad.ir", "funcgrad.ir_dot", "funcgrad.interpreter"]),
    ("primitives", ["funcgrad.primitives"]),
    ("tracer", ["funcgrad.tracer"]),
    ("numpy", ["funcgrad.numpy", "funcgrad.flatten_util"]),
    ("transforms", ["funcgrad.transforms"]),
    ("tiering", ["funcgrad.tiering", "funcgrad.guards", "funcgrad.reach"]),
    ("higher_order", ["funcgrad.higher_order"]),
    ("backend", ["funcgrad.backend"]),
    ("api", ["funcgrad.api", "funcgrad.nn", "funcgrad.optim", "funcgrad.optimize", "funcgrad.scipy",
             "funcgrad.ode", "funcgrad.testing", "funcgrad.debug", "funcgrad.dask"]),
    ("package", ["funcgrad"]),
]
# The backend reads the IR and the primitive table only (and its own modules).
BACKEND_READS = {"funcgrad._errors", "funcgrad._version", "funcgrad.ir", "funcgrad.interpreter",
                 "funcgrad.primitives", "funcgrad._nan_checks", "funcgrad._config",
                 "funcgrad._recent"}
# Edges the layering alone would refuse, each with its reason.
EXCEPTIONS = {
    ("funcgrad.guards", "funcgrad.backend.digest"):
        "tiering's guards hash array contents with digest's Numba kernel (imported lazily); "
        "digest imports nothing of funcgrad",
}


def _modules():
    """Every module of the installed package: dotted name -> (path, is a package __init__)."""
    out = {}
    for top, prefix in ((PKG, "funcgrad"), (TRANSFORMS, "funcgrad.transforms")):
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel = os.path.relpath(dirpath, top)
            parts = [prefix] + ([] if rel == "." else rel.split(os.sep))
            for f in filenames:
                if f.endswith(".py"):
                    init = f == "__init__.py"
                    out[".".join(parts + ([] if init else [f[:-3]]))] = (os.path.join(dirpath, f), init)
    return out


def import_graph(modules):
    """name -> {imported funcgrad module: 'module' or 'function' (where the import is)}."""
    graph = {}
    for name, (path, is_init) in modules.items():
        package = name if is_init else name.rpartition(".")[0]
        edges = {}

        def add(target, where):
            while target not in modules and "." in target:      # `from .x import name`
                target = target.rpartition(".")[0]
            if target in modules and target != name:
                if edges.get(target) != "module":
                    edges[target] = where

        def visit(node, where):
            for child in ast.iter_child_nodes(node):
                inner = where
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    inner = "function"
                if isinstance(child, ast.ImportFrom):
                    if child.level:
                        base = package.split(".")
                        base = base[:len(base) - (child.level - 1)]
                        mod = ".".join(base + ([child.module] if child.module else []))
                    else:
                        mod = child.module or ""
                        if mod.split(".")[0] == "transforms":
                            mod = "funcgrad." + mod
                    for alias in child.names:
                        sub = f"{mod}.{alias.name}"
                        add(sub if sub in modules else mod, inner)
                elif isinstance(child, ast.Import):
                    for alias in child.names:
                        if alias.name.split(".")[0] == "funcgrad":
                            add(alias.name, inner)
                visit(child, inner)

        visit(ast.parse(open(path).read()), "module")
        graph[name] = edges
    return graph


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            connect(v)
    return found


def layer_of(name):
    best = None
    for rank, (layer, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and (best is None or len(p) > best[2]):
                best = (rank, layer, len(p))
    assert best is not None, f"{name} belongs to no layer: add it to LAYERS"
    return best[:2]


GRAPH = import_graph(_modules())


def test_the_graph_sees_function_level_imports_and_cycles(tmp_path):
    """The checker itself: a cycle hidden in a function-level import is found."""
    pkg = tmp_path / "funcgrad"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import g\n")
    mods = {"funcgrad": (str(pkg / "__init__.py"), True), "funcgrad.a": (str(pkg / "a.py"), False),
            "funcgrad.sub": (str(pkg / "sub" / "__init__.py"), True),
            "funcgrad.sub.b": (str(pkg / "sub" / "b.py"), False)}
    graph = import_graph(mods)
    assert graph["funcgrad.sub.b"] == {"funcgrad.a": "function"}
    assert cycles(graph) == [["funcgrad.a", "funcgrad.sub.b"]]


def test_no_import_cycles_at_module_or_function_level():
    assert cycles(GRAPH) == []


def test_every_import_points_down_the_layers():
    bad = []
    for name, edges in GRAPH.items():
        rank, layer = layer_of(name)
        for target, where in edges.items():
            if (name, target) in EXCEPTIONS:
                continue
            t_rank, t_layer = layer_of(target)
            if t_rank > rank:
                bad.append(f"{name} ({layer}) imports {target} ({t_layer}) at {where} level")
    assert not bad, "\n".join(bad)


def test_backend_reads_only_the_ir_and_the_primitive_table():
    bad = [f"{name} imports {target}" for name, edges in GRAPH.items()
           if name.startswith("funcgrad.backend") for target in edges
           if not target.startswith("funcgrad.backend") and target not in BACKEND_READS
           and (name, target) not in EXCEPTIONS]
    assert not bad, "\n".join(bad)


def test_exceptions_are_still_needed():
    for (name, target), why in EXCEPTIONS.items():
        assert target in GRAPH[name], f"stale exception {name} -> {target} ({why})"


def test_no_two_modules_share_a_file_name():
    """funcgrad.numpy (and funcgrad.scipy) mirror NumPy's (SciPy's) module names on purpose."""
    names = Counter(n.rpartition(".")[2] for n, (_, init) in _modules().items()
                    if not init and not n.startswith(("funcgrad.numpy.", "funcgrad.scipy.")))
    assert [n for n, k in names.items() if k > 1] == []


def test_transforms_is_installed_from_top_level_folder():
    import funcgrad.transforms
    assert os.path.dirname(funcgrad.transforms.__file__) == TRANSFORMS


def test_transforms_use_relative_imports_only():
    for name in os.listdir(TRANSFORMS):
        if name.endswith(".py"):
            tree = ast.parse(open(os.path.join(TRANSFORMS, name)).read())
            for node in ast.walk(tree):
                mods = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                        [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                        else [])
                assert not any(m.startswith(("transforms", "funcgrad")) for m in mods), (name, mods)


def test_import_from_clean_directory(tmp_path):
    code = "import funcgrad, funcgrad.numpy as fnp, funcgrad.transforms; print(fnp.sin)"
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([sys.executable, "-c", "import funcgrad, sys; print('numba' in sys.modules)"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.stdout.strip() == "False"


def _defines_primitives(path):
    """Whether a module creates primitives (define(...) or a helper that calls it)."""
    tree = ast.parse(open(path).read())
    makers = {"define", "_ufunc"}
    return any(isinstance(n, ast.Call) and getattr(n.func, "id", None) in makers
               for n in ast.walk(tree))


def test_primitives_hold_primitives_and_numpy_holds_compositions():
    for name, (path, init) in _modules().items():
        if name.startswith("funcgrad.primitives.") and not name.endswith(".base"):
            assert _defines_primitives(path), f"{name} defines no primitive: move it to funcgrad.numpy"
        if name.startswith("funcgrad.numpy"):
            assert not _defines_primitives(path), f"{name} defines a primitive: move it to primitives/"


def test_rules_are_given_where_the_primitive_is_defined():
    """No module attaches a rule to a primitive after define() (base.define alone stores the
    batch rule it builds)."""
    fields = {"impl", "abstract", "vjp", "jvp", "batch", "vjp_split", "elementwise", "singular",
              "opaque", "differentiable", "multiple_results"}
    found = []
    for name, (path, _) in _modules().items():
        for node in ast.walk(ast.parse(open(path).read())):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for t in targets:
                for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if (isinstance(el, ast.Attribute) and el.attr in fields
                            and not (isinstance(el.value, ast.Name) and el.value.id == "self")):
                        found.append(f"{name}:{el.lineno} sets .{el.attr}")
    assert found == ["funcgrad.primitives.base:%d sets .batch" % _define_batch_line()], found


def _define_batch_line():
    from funcgrad.primitives import base
    src, start = inspect.getsourcelines(base.define)
    return start + next(i for i, line in enumerate(src) if "prim.batch =" in line)


def test_every_primitive_has_every_rule_or_opts_out():
    """Each rule kind is given in the primitive's define() block or explicitly absent: the
    derivative (vjp, or vjp_split for loops) unless differentiable=False, and a batch rule unless
    the primitive is one of the few vmap runs example by example (test_vmap lists them)."""
    import funcgrad  # noqa: F401  (defines the higher-order primitives too)
    from funcgrad.primitives import REGISTRY
    for name, p in REGISTRY.items():
        assert callable(p.impl) and callable(p.abstract), name
        assert not p.differentiable or p.vjp is not None or p.vjp_split is not None, name
        assert p.batch is None or callable(p.batch), name


def test_primitives_carry_no_backend_detail_and_the_backend_has_one_table():
    import funcgrad  # noqa: F401
    from funcgrad.backend import loop_emitters  # noqa: F401  (adds the loop emitters)
    from funcgrad.backend.lowerings import LOWERINGS, lowering
    from funcgrad.ir import Primitive
    from funcgrad.primitives import REGISTRY
    assert not any("numba" in p for p in inspect.signature(Primitive).parameters)
    assert not any(hasattr(p, "numba") for p in REGISTRY.values())
    stale = sorted(set(LOWERINGS) - set(REGISTRY))
    assert stale == [], f"lowerings of primitives that do not exist: {stale}"
    for name, p in REGISTRY.items():
        low = lowering(p)
        assert (low.scalar is not None) == p.elementwise, name     # elementwise <=> a template
        if p.name in ("while_loop", "scan", "cond", "while_grad"):
            assert low.structured is not None, name


@pytest.mark.parametrize("layer", [layer for layer, _ in LAYERS])
def test_every_layer_has_modules(layer):
    """A renamed package would otherwise silently drop out of the checks above."""
    assert any(layer_of(name)[1] == layer for name in GRAPH), layer


def test_every_subpackage_is_installed():
    """pyproject lists every package (a non-editable install copies only those)."""
    import pathlib
    tomllib = pytest.importorskip("tomllib")          # (Python 3.11+)
    here = pathlib.Path(__file__).resolve().parent.parent
    listed = set(tomllib.loads((here / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(here).parts) for p in (here / "funcgrad").rglob("__init__.py")}
    found |= {"funcgrad.transforms"}
    assert found == listed, f"pyproject's packages: add {sorted(found - listed)}, drop {sorted(listed - found)}"
