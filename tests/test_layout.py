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
                function reads, and the generated checks that it is unchanged), reach, digest
  higher_order  funcgrad/higher_order/: loop, branch and custom-rule primitives (rules transform
                sub-programs)
  backend       funcgrad/backend/: reads only the IR and the primitive table
  api           funcgrad/api/, nn, optim, optimize, scipy, ode, testing, debug, dask: the public
                entry points
  package       funcgrad/__init__.py re-exports
Imports inside functions count like any other (they are how cycles hide). Where a lower layer
calls up, the higher one installs a hook; HOOKS lists them all (test_every_hook_is_listed).
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
    ("base", ["funcgrad._errors", "funcgrad._version", "funcgrad.tree_util", "funcgrad._debug_nans",
              "funcgrad._config", "funcgrad._recent"]),
    ("ir", ["funcgrad.ir", "funcgrad.ir_dot", "funcgrad.interpreter"]),
    ("primitives", ["funcgrad.primitives"]),
    ("tracer", ["funcgrad.tracer"]),
    ("numpy", ["funcgrad.numpy", "funcgrad.flatten_util"]),
    ("transforms", ["funcgrad.transforms"]),
    ("tiering", ["funcgrad.tiering", "funcgrad.guards", "funcgrad.reach", "funcgrad.digest"]),
    ("higher_order", ["funcgrad.higher_order"]),
    ("backend", ["funcgrad.backend"]),
    ("api", ["funcgrad.api", "funcgrad.nn", "funcgrad.random", "funcgrad.random_gamma", "funcgrad._prng", "funcgrad.lax", "funcgrad.optim", "funcgrad.optimize", "funcgrad.scipy",
             "funcgrad.ode", "funcgrad.testing", "funcgrad.debug", "funcgrad.dask"]),
    ("package", ["funcgrad"]),
]
# The backend reads the IR and the primitive table only (and its own modules).
BACKEND_READS = {"funcgrad._errors", "funcgrad._version", "funcgrad.ir", "funcgrad.interpreter",
                 "funcgrad.primitives", "funcgrad._debug_nans", "funcgrad._config",
                 "funcgrad._recent"}
# Edges the layering alone would refuse, each with its reason.
EXCEPTIONS = {}
# Every hook through which a lower layer calls up: (lower module, the table or setter) -> the
# modules that install it (prefixes) and what goes in. docs/architecture.md names each one.
HOOKS = {
    ("funcgrad.primitives.base", "define"): (("funcgrad.higher_order",),
                                             "higher-order primitives join REGISTRY"),
    ("funcgrad.primitives.base", "export"): (("funcgrad.numpy",),
                                             "funcgrad.numpy's functions fill NAMESPACE, LINALG, FFT"),
    ("funcgrad.primitives", "NAMESPACE"): (("funcgrad.numpy._assemble",), "np.r_ and np.c_"),
    ("funcgrad.primitives.base", "FOREIGN_UFUNCS"): (("funcgrad.scipy.special",),
                                                     "scipy.special's ufuncs on traced values"),
    ("funcgrad._errors", "FOREIGN_CALL_EXPLAINERS"): (
        ("funcgrad.numpy._scalar_types", "funcgrad.scipy._foreign"),
        "why a foreign call on a traced value fails"),
    ("funcgrad._debug_nans", "LISTENERS"): (("funcgrad.api.jit",),
                                           "fg.jit hears fg.debug_nans switch"),
    ("funcgrad.tiering", "set_loop_compiler"): (("funcgrad.api.jit",),
                                               "a long interpreted loop compiles"),
    ("funcgrad.ir", "_state"): (("funcgrad.tiering",),
                                "the observer that hears each top-level trace"),
}
# Calls that write a lower layer's state and are not hooks: they store values, not code.
NOT_HOOKS = {("funcgrad._config", "config"): "tiering's settings are fg.config options"}


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
    """funcgrad.numpy.linalg, funcgrad.numpy.fft and funcgrad.scipy mirror NumPy's (SciPy's)
    public module names on purpose; every other module has a name of its own (a family's
    compositions, funcgrad/numpy/_shape.py, sit beside its primitives, primitives/shape.py;
    linear algebra's and the FFT's are _linalg_compositions and _fft_compositions, as
    linalg names four modules already)."""
    mirrors = ("funcgrad.numpy.linalg", "funcgrad.numpy.fft")
    names = Counter(n.rpartition(".")[2] for n, (_, init) in _modules().items()
                    if not init and n not in mirrors and not n.startswith("funcgrad.scipy."))
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


def _assigned(node):
    """The targets (tuples unpacked) that an assignment statement writes."""
    targets = (node.targets if isinstance(node, ast.Assign) else
               [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
    return [el for t in targets for el in (t.elts if isinstance(t, ast.Tuple) else [t])]


def test_rules_are_given_where_the_primitive_is_defined():
    """No module attaches a rule to a primitive after define() (base.define alone stores the
    batch rule it builds)."""
    from funcgrad.ir import Primitive
    fields = set(inspect.signature(Primitive).parameters) - {"name", "doc"}     # every rule field
    assert {"vjp", "batch", "prune", "stored"} <= fields
    found = []
    for name, (path, _) in _modules().items():
        for node in ast.walk(ast.parse(open(path).read())):
            for el in _assigned(node):
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
    """The lowering table is complete when lowerings.py is imported: every primitive has an
    entry that says how to write it, or is one of the documented object-mode primitives."""
    import funcgrad  # noqa: F401
    from funcgrad.backend.lowerings import LOWERINGS, OBJECT_MODE, Lowering, lowering
    from funcgrad.ir import Primitive
    from funcgrad.primitives import REGISTRY
    assert not any("numba" in p for p in inspect.signature(Primitive).parameters)
    assert not any(hasattr(p, "numba") for p in REGISTRY.values())
    stale = sorted(set(LOWERINGS) - set(REGISTRY))
    assert stale == [], f"lowerings of primitives that do not exist: {stale}"
    for name, p in REGISTRY.items():
        low = lowering(p)
        assert (low.scalar is not None) == p.elementwise, name     # elementwise <=> a template
        if name in ("while_loop", "scan", "cond", "while_grad"):
            assert low.structured is not None, name
        says = [f for f in Lowering.__slots__ if f not in ("fresh", "check") and getattr(low, f)]
        assert bool(says) != (name in OBJECT_MODE), (name, says)


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


_MUTATORS = {"append", "extend", "update", "add", "setdefault", "insert"}


def _installers(tree, module_names):
    """A module's functions that write its module-level state: those that say `global`, those
    named set_/register/install, and those that write a public table (directly or through a
    local name bound to it, as `table = LINALG if ... else NAMESPACE`)."""
    found = set()
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        written, local = set(), {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Global):
                written.add("global")
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                local[n.targets[0].id] = {m.id for m in ast.walk(n.value)
                                          if isinstance(m, ast.Name)} & module_names
            bases = [n.func.value] if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                       and n.func.attr in _MUTATORS) else []
            bases += [t.value for t in _assigned(n) if isinstance(t, (ast.Subscript, ast.Attribute))]
            for b in bases:
                if isinstance(b, ast.Name):
                    written |= ({b.id} & module_names) | local.get(b.id, set())
        if ("global" in written or fn.name.startswith(("set_", "register", "install"))
                or any(not w.startswith("_") for w in written)) and written:
            found.add(fn.name)
    return found


def hooks(modules):
    """(installing module, lower module, name) for each write a module makes to a lower layer's
    state: a call of a lower module's installer, a mutating method on its table, an item or
    attribute assignment into it."""
    trees = {m: ast.parse(open(p).read()) for m, (p, _) in modules.items()}
    installers = {}
    for m, tree in trees.items():
        names = {n.id for node in tree.body for t in _assigned(node) for n in ast.walk(t)
                 if isinstance(n, ast.Name)}
        installers[m] = _installers(tree, names)
    found = set()
    for m, tree in trees.items():
        rank, is_init = layer_of(m)[0], modules[m][1]
        package = (m if is_init else m.rpartition(".")[0]).split(".")
        imported = {}                                   # local name -> (module, name or None)
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom):
                src = (".".join(package[:len(package) - n.level + 1] + ([n.module] if n.module else []))
                       if n.level else n.module or "")
                for a in n.names:
                    sub = f"{src}.{a.name}"
                    imported[a.asname or a.name] = (sub, None) if sub in modules else (src, a.name)

        def below(expr):
            """(module, name) when expr names a lower layer's module-level object."""
            if isinstance(expr, ast.Name) and expr.id in imported:
                mod, name = imported[expr.id]
            elif (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)
                  and imported.get(expr.value.id, (None, 1))[1] is None):
                mod, name = imported[expr.value.id][0], expr.attr
            else:
                return None
            return (mod, name) if name and mod in modules and layer_of(mod)[0] < rank else None

        for n in ast.walk(tree):
            hits = [below(t.value) for t in _assigned(n) if isinstance(t, (ast.Subscript, ast.Attribute))]
            if isinstance(n, ast.Call):
                f = n.func
                hits.append(below(f.value) if isinstance(f, ast.Attribute) and f.attr in _MUTATORS else None)
                called = below(f)
                hits.append(called if called and called[1] in installers[called[0]] else None)
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                for d in n.decorator_list:
                    called = below(d.func if isinstance(d, ast.Call) else d)
                    hits.append(called if called and called[1] in installers[called[0]] else None)
            found |= {(m,) + h for h in hits if h}
    return found


HOOKS_FOUND = hooks(_modules())


def test_the_hook_finder_sees_tables_setters_and_attributes(tmp_path):
    pkg = tmp_path / "funcgrad"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ir.py").write_text("TABLE = {}\n_hook = [None]\nclass S: pass\n_state = S()\n"
                               "def set_hook(f):\n    _hook[0] = f\n"
                               "def lookup(k):\n    return TABLE.get(k)\n")
    (pkg / "tracer.py").write_text("from .ir import TABLE, set_hook, lookup\nfrom . import ir\n"
                                   "TABLE['x'] = 1\nset_hook(print)\nlookup('x')\n"
                                   "def f():\n    ir._state.observer = []\n")
    mods = {"funcgrad": (str(pkg / "__init__.py"), True), "funcgrad.ir": (str(pkg / "ir.py"), False),
            "funcgrad.tracer": (str(pkg / "tracer.py"), False)}
    assert hooks(mods) == {("funcgrad.tracer", "funcgrad.ir", "TABLE"),
                           ("funcgrad.tracer", "funcgrad.ir", "set_hook"),
                           ("funcgrad.tracer", "funcgrad.ir", "_state")}


def test_every_hook_is_listed_installed_where_listed_and_documented():
    """A new way for a lower layer to call up fails here until HOOKS (and the docs) name it."""
    found = {(mod, name) for _, mod, name in HOOKS_FOUND} - set(NOT_HOOKS)
    assert found == set(HOOKS), (f"unlisted hooks: {sorted(found - set(HOOKS))}; "
                                 f"listed but gone: {sorted(set(HOOKS) - found)}")
    for installer, mod, name in HOOKS_FOUND:
        if (mod, name) in HOOKS:
            assert installer.startswith(HOOKS[mod, name][0]), f"{installer} installs {mod}.{name}"
    doc = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    assert [name for _, name in HOOKS if name not in doc] == []


def _name_tests(path):
    """Lines of a module that test a primitive's name: `<...>.prim.name == "x"`, `prim.name in
    (...)` and the like (reading a table keyed by name, `TABLE[prim.name]`, is not a test)."""
    found = []
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Compare):
            for side in [node.left] + node.comparators:
                if (isinstance(side, ast.Attribute) and side.attr == "name"
                        and isinstance(side.value, (ast.Name, ast.Attribute))
                        and (getattr(side.value, "id", None) == "prim"
                             or getattr(side.value, "attr", None) == "prim")):
                    found.append(node.lineno)
    return found


def test_the_backend_api_and_transforms_test_no_primitive_names():
    """Behaviour lives with the primitive (its define() rules) and its lowering entry: code
    that reads them never asks which primitive it has (issue: "the backend reads its table").
    Transforms whose rules are tables keyed by name (scalarize's LOOP_RULES) look names up."""
    bad = [f"{name}:{line}" for name, (path, _) in _modules().items()
           if name.startswith(("funcgrad.backend", "funcgrad.api", "funcgrad.transforms"))
           for line in _name_tests(path)]
    assert bad == []


def test_the_name_test_finder_sees_comparisons(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("if e.prim.name == 'scan':\n    pass\nok = prim.name in ('a', 'b')\n"
                 "x = TABLE[e.prim.name]\ny = e.prim.name\n")
    assert _name_tests(str(f)) == [1, 3]


def _numpy_openings(path):
    """Lines of a module that open a function with a hand-written "not traced: call NumPy"
    branch: `if not isinstance(x, Traced)` (or has_traced / is_traced / any(isinstance(...)),
    alone or joined with `and`) whose body returns a call of NumPy's (`np.`)."""
    def negated_check(test):
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return all(negated_check(v) for v in test.values)
        return (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
                and isinstance(test.operand, ast.Call)
                and getattr(test.operand.func, "id", None) in ("isinstance", "has_traced",
                                                               "is_traced", "any"))

    def calls_numpy(node):
        return any(isinstance(n, ast.Name) and n.id == "np" for n in ast.walk(node))

    found = []
    for node in ast.walk(ast.parse(open(path).read())):
        if (isinstance(node, ast.If) and negated_check(node.test) and node.body
                and isinstance(node.body[0], ast.Return) and node.body[0].value is not None
                and calls_numpy(node.body[0].value)):
            found.append(node.lineno)
    return found


def test_numpy_fallbacks_are_given_to_export_or_say_why_not():
    """Plain arrays get NumPy's answer through export(numpy=np.<name>) (issue: "the backend reads
    its table", item 5); a function that opens with its own branch says why on that line."""
    bad = []
    for name, (path, _) in _modules().items():
        if name.startswith(("funcgrad.numpy", "funcgrad.primitives")):
            lines = open(path).read().splitlines()
            bad += [f"{name}:{n}" for n in _numpy_openings(path) if "#" not in lines[n - 1]]
    assert bad == [], ("hand-written NumPy fallbacks without a reason: give np.<name> to "
                       "export(numpy=...) instead, or say on the `if` line why not")


def test_the_opening_finder_sees_negated_checks(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f(a, b):\n    if not isinstance(a, Traced):\n        return np.sin(a)\n"
                 "    if not has_traced(a) and not is_traced(b):\n        return np.asarray(a).T\n"
                 "    if not isinstance(a, int):\n        return a\n    if isinstance(a, T):\n"
                 "        return np.cos(a)\n")
    assert _numpy_openings(str(f)) == [2, 4]
