"""Pictures of programs: Program.to_dot (Graphviz DOT source) and the notebook's _repr_svg_."""
import ast
import re
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import ir_dot
from funcgrad._errors import SourceInfo
from funcgrad.ir import Eqn, Lit, Primitive, Program, Var, aval_of

EVIL = 'we"ird\\ name\n}]; PWNED -> n0 [label="x'      # quotes, backslash, newline, DOT syntax


def looped(x):
    def body(i, c):
        return c * 2.0 + fnp.sin(c)
    y = fg.fori_loop(0, 3, body, x)
    z = fg.cond(fnp.sum(y) > 0, lambda a: a * 2.0, lambda a: -a, y)
    c, ys = fg.scan(lambda c, xs: (c + xs, c * xs), 0.0, z)
    return c + fnp.sum(ys)


def split_dot(text):
    """(the text outside quoted strings, the decoded quoted strings); fails on an unbalanced
    quote, brace or bracket, or a raw newline inside a string."""
    outside, strings, depth, k = [], [], {"{": 0, "[": 0}, 0
    closing = {"}": "{", "]": "["}
    while k < len(text):
        ch = text[k]
        if ch == '"':
            j, buf = k + 1, []
            while text[j] != '"':
                assert text[j] != "\n", "raw newline inside a DOT string"
                if text[j] == "\\":
                    nxt = text[j + 1]
                    buf.append({"n": "\n", '"': '"', "\\": "\\"}.get(nxt, "\\" + nxt))
                    j += 2
                else:
                    buf.append(text[j])
                    j += 1
            strings.append("".join(buf))
            k = j + 1
            continue
        if ch in depth:
            depth[ch] += 1
        elif ch in closing:
            depth[closing[ch]] -= 1
            assert depth[closing[ch]] >= 0, "unbalanced close"
        outside.append(ch)
        k += 1
    assert depth == {"{": 0, "[": 0}
    return "".join(outside), strings


def check_syntax(text):
    """Outside strings, DOT text made by to_dot holds only keywords, generated ids, attribute
    names and punctuation."""
    outside, strings = split_dot(text)
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", outside))
    generated = {w for w in words if re.fullmatch(r"(n|cluster_)\d+", w)}
    assert words - generated <= {"digraph", "program", "subgraph", "graph", "node", "edge", "note",
                                 "label", "tooltip", "shape", "fillcolor", "style", "lhead",
                                 "arrowhead", "compound", "rankdir", "nodesep", "ranksep",
                                 "fontname", "fontsize", "height", "color", "labeljust",
                                 "arrowsize"}, words
    assert "->" in outside and re.search(r"[^\s\w{}\[\];,=\->]", outside) is None
    return strings


def render(text):
    """SVG from the `dot` program, or skip where Graphviz is not installed."""
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    res = subprocess.run(["dot", "-Tsvg"], input=text.encode(), capture_output=True, timeout=60)
    assert res.returncode == 0 and not res.stderr, res.stderr.decode()
    return res.stdout.decode()


def test_loops_and_branches_are_clusters_and_every_equation_a_node():
    prog = fg.make_ir(looped)(np.ones(3))
    text = prog.to_dot()
    strings = check_syntax(text)
    clusters = [s for s in strings if s.startswith(("scan:", "cond:", "while_loop:"))]
    assert clusters == ["scan: body", "cond: branches[0]", "cond: branches[1]", "scan: body"]
    assert text.count("subgraph cluster_") == 4

    def every_eqn(p):
        for e in p.eqns:
            yield e
            for sub in fg.ir.sub_programs(e.params):
                yield from every_eqn(sub)
    eqns = list(every_eqn(prog))
    heads = [s.split("\n")[0] for s in strings if "→" in s]
    assert len(heads) == len(eqns) and [h.split("[")[0] for h in heads] == [
        e.prim.name for e in eqns]
    assert any(s.endswith(f"test_graph.py:{looped.__code__.co_firstlineno + 2} (body)")
               for s in strings)                                    # the user's line
    assert "<svg" in render(text)


def test_the_gradient_program_renders_with_the_printed_names():
    prog = fg.make_ir(fg.grad(looped))(np.ones(3))
    text = prog.to_dot()
    strings = check_syntax(text)
    printed = str(prog)
    assert text.count("subgraph cluster_") >= 6                     # forward and backward loops
    for s in strings:
        if "→" in s:                        # inputs → outputs: the names print() uses
            for binder in s.split("\n")[1].split("→")[1].split():
                assert binder in printed
    render(text)


def test_user_strings_cannot_break_the_dot_text():
    prim = Primitive(EVIL, impl=lambda x, **p: x, abstract=lambda a, **p: a)
    x = Var(aval_of(np.ones(2)))
    y = Var(x.aval)
    src = SourceInfo(f"/tmp/{EVIL}.py", 3, EVIL + "\x00\x07\udcff\t{}<>|")
    params = {"note": EVIL}
    prog = Program([x], [Eqn(prim, [x, Lit(1.5)], [y], params, src)], [y, Lit(2.0)])
    text = prog.to_dot()
    strings = check_syntax(text)
    assert "PWNED" not in split_dot(text)[0]
    label = next(s for s in strings if s.startswith(EVIL))           # the name, decoded intact
    assert label.split("[note=")[0] == EVIL
    tooltip = f"/tmp/{EVIL}.py:3 (in {EVIL}\\x00\\x07\\udcff {{}}<>|)"
    assert tooltip in strings             # in full; control characters shown as escapes
    text.encode("utf-8")                                               # no lone surrogates
    assert "<svg" in render(text)


def test_a_traced_function_with_a_strange_name_and_file():
    code = compile("def f(x):\n    return fnp.sin(x) * 2.0\n", f"<{EVIL}>", "exec")
    space = {"fnp": fnp}
    exec(code, space)
    f = space["f"]
    f.__code__ = f.__code__.replace(co_name=EVIL)
    text = fg.make_ir(f)(np.ones(2)).to_dot()
    strings = check_syntax(text)
    assert f"<{EVIL}>:2 (in {EVIL})" in strings                         # the tooltips
    render(text)


def test_max_nodes_truncates_with_a_note_and_source_info_can_be_left_out():
    def long(x):
        for _ in range(30):
            x = fnp.sin(x)
        return x
    prog = fg.make_ir(long)(1.0)
    text = prog.to_dot(max_nodes=10, source_info=False)
    strings = check_syntax(text)
    assert sum("→" in s for s in strings) == 10
    assert "20 more equations not shown (max_nodes=10)" in strings
    assert not any("undefined" in s for s in strings)
    assert not any("test_graph.py" in s.split("\n")[-1] for s in strings if "→" in s)
    render(text)


def test_repr_svg_declines_without_graphviz(monkeypatch):
    prog = fg.make_ir(lambda x: fnp.sum(x ** 2))(np.ones(3))
    monkeypatch.setitem(sys.modules, "graphviz", None)                 # import fails
    assert prog._repr_svg_() is None
    assert "reduce_sum" in str(prog)                                    # the text form stays


def _fake_graphviz(pipe):
    """A stand-in graphviz module whose Source(text).pipe() returns pipe(module, text)."""
    not_found = type("ExecutableNotFound", (RuntimeError,), {})
    module = types.SimpleNamespace(ExecutableNotFound=not_found)

    class Source:
        def __init__(self, source):
            self.source = source

        def pipe(self, format, encoding):
            assert (format, encoding) == ("svg", "utf-8")
            return pipe(module, self.source)
    module.Source = Source
    return module


def test_repr_svg_uses_graphviz_and_declines_without_dot(monkeypatch):
    prog = fg.make_ir(lambda x: fnp.sum(x ** 2))(np.ones(3))
    seen = []
    monkeypatch.setitem(sys.modules, "graphviz", _fake_graphviz(
        lambda module, src: seen.append(src) or "<svg>drawn</svg>"))
    assert prog._repr_svg_() == "<svg>drawn</svg>"
    assert seen == [prog.to_dot(max_nodes=ir_dot.SVG_MAX_NODES)]

    def no_dot(module, src):
        raise module.ExecutableNotFound("dot")
    monkeypatch.setitem(sys.modules, "graphviz", _fake_graphviz(no_dot))
    assert prog._repr_svg_() is None


def test_ipython_shows_text_when_svg_declines(monkeypatch):
    formatters = pytest.importorskip("IPython.core.formatters")
    prog = fg.make_ir(lambda x: fnp.sum(x ** 2))(np.ones(3))
    monkeypatch.setitem(sys.modules, "graphviz", None)
    data, _ = formatters.DisplayFormatter().format(prog)
    assert "image/svg+xml" not in data and "reduce_sum" in data["text/plain"]


def test_ir_dot_imports_nothing_of_funcgrad():
    tree = ast.parse(open(ir_dot.__file__).read())
    mods = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    mods += [n.module or "." for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             and (n.level or (n.module or "").startswith("funcgrad"))]
    assert not [m for m in mods if m.startswith("funcgrad") or m == "."], mods
