"""Pictures of programs: Graphviz DOT source (Program.to_dot) and the SVG a notebook shows.

One node per equation (primitive, short params, inputs -> outputs, the user's line), one per
program input and output, an edge from each variable's producer to each equation that reads
it; the sub-programs of loops, branches and custom rules are drawn as clusters.

Reads programs through their attributes only (Program: in_vars, eqns, outs; Eqn: prim,
inputs, outputs, params, src; a literal has .val, a sub-program has .eqns), so it imports
nothing of funcgrad; ir.py passes its printer's namer, so a picture uses the names that
`print(program)` shows. Every string placed in the DOT text goes through `quote`.
"""
from __future__ import annotations

import itertools
import subprocess
from collections import ChainMap

import numpy as np

PARAM_WIDTH = 24       # characters of one param value in a node label
LINE_WIDTH = 64        # characters of one line of a node label
SVG_MAX_NODES = 400    # equations drawn by a notebook's picture (to_dot draws all by default)

_HEADER = """digraph program {
  graph [compound="true", rankdir="TB", nodesep="0.25", ranksep="0.3",
         fontname="monospace", fontsize="10"];
  node [shape="box", style="rounded,filled", fillcolor="#eef3fb", height="0.3",
        fontname="monospace", fontsize="10"];
  edge [fontname="monospace", fontsize="8", arrowsize="0.6"];"""
_INPUT = {"shape": "invhouse", "fillcolor": "#e4f2e4"}
_OUTPUT = {"shape": "house", "fillcolor": "#fbebdf"}
_CLUSTER = 'style="rounded,dashed"; color="gray50"; labeljust="l"; fontsize="9";'


def quote(text) -> str:
    """`text` as a DOT quoted string. Quotes and backslashes are escaped, a newline becomes a
    DOT line break, other control characters and lone surrogates are shown as escapes (\\x07),
    so no string from user code can end the string or add DOT syntax."""
    out = ['"']
    for ch in str(text):
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append(" ")
        elif code < 32 or code == 127 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\\\x{code:02x}" if code < 256 else f"\\\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _clip(text, width):
    return text if len(text) <= width else text[:width - 1] + "…"


def _attrs(attrs):
    return ", ".join(f"{k}={quote(v)}" for k, v in attrs.items())


def _is_program(v):
    return hasattr(v, "eqns") and hasattr(v, "in_vars")


def _sub_programs(params):
    """(role, program) for the programs held in params, directly or in tuples, by name."""
    for key in sorted(params):
        v = params[key]
        if _is_program(v):
            yield key, v
        elif isinstance(v, tuple) and v and all(_is_program(p) for p in v):
            yield from ((f"{key}[{i}]", p) for i, p in enumerate(v))


def _param_text(v):
    if isinstance(v, np.dtype):
        return v.name
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return _clip(repr(v), PARAM_WIDTH)


class _Writer:
    def __init__(self, name, max_nodes, source_info):
        self.name, self.max_nodes, self.source_info = name, max_nodes, source_info
        self.lines, self.edges, self.ids = [_HEADER], {}, itertools.count()
        self.drawn = self.left_out = 0

    def node(self, pad, label, tooltip, **style):
        nid = f"n{next(self.ids)}"
        self.lines.append(f"{pad}{nid} [{_attrs({'label': label, 'tooltip': tooltip, **style})}];")
        return nid

    def edge(self, src, dst, **attrs):
        self.edges.setdefault((src, dst, attrs.get("label", "")), attrs)

    def binder(self, v):
        return f"{self.name(v)}:{v.aval}"

    def program(self, prog, scope, pad):
        """Draw prog's nodes at `pad`; returns its first node (the anchor of its cluster)."""
        scope, first = scope.new_child(), None
        for k, v in enumerate(prog.in_vars):
            nid = self.node(pad, self.binder(v), f"input {k}: {self.binder(v)}", **_INPUT)
            scope[v.id] = (nid, False)
            first = first or nid
        for e in prog.eqns:
            if self.max_nodes is not None and self.drawn >= self.max_nodes:
                self.left_out += 1 + sum(p.equation_count() for _, p in _sub_programs(e.params))
                scope.update((v.id, (None, False)) for v in e.outputs)     # not drawn
                continue
            nid = self.eqn(e, scope, pad)
            first = first or nid
        for k, o in enumerate(prog.outs):
            if hasattr(o, "val"):
                nid = self.node(pad, f"out {k} = {self.name(o)}", f"output {k}", **_OUTPUT)
                first = first or nid
                continue
            nid = self.node(pad, f"out {k}: {self.name(o)}", f"output {k}: {self.binder(o)}",
                            **_OUTPUT)
            self.read(o, nid, scope, pad)
            first = first or nid
        return first or self.node(pad, "(empty)", "an empty program", shape="plaintext")

    def read(self, v, dst, scope, pad):
        """An edge from v's producer to node dst (none if max_nodes left the producer out;
        v drawn as undefined if it has no producer)."""
        if v.id not in scope:
            scope.maps[-1][v.id] = (self.node(pad, f"{self.binder(v)} (undefined)",
                                              "a variable no equation defines",
                                              shape="plaintext"), False)
        src, several = scope[v.id]
        if src is not None:
            self.edge(src, dst, **({"label": self.name(v)} if several else {}))

    def eqn(self, e, scope, pad):
        self.drawn += 1
        subs = list(_sub_programs(e.params))
        skip = set(getattr(e.prim, "fresh_params", ())) | {role.split("[")[0] for role, _ in subs}
        params = ", ".join(f"{k}={_param_text(e.params[k])}" for k in sorted(e.params)
                           if k not in skip)
        head = e.prim.name + (f"[{params}]" if params else "")
        flow = " ".join(self.name(v) for v in e.inputs) + " → " + " ".join(
            self.binder(v) for v in e.outputs)
        label = [_clip(head, LINE_WIDTH), _clip(flow.strip(), LINE_WIDTH)]
        where = str(e.src) if e.src is not None else ""
        if self.source_info and where:
            label.append(_clip(where, LINE_WIDTH))
        long = getattr(e.src, "long", None)
        tooltip = long() if callable(long) else where or e.prim.name
        nid = self.node(pad, "\n".join(label), tooltip)
        for v in e.inputs:
            if not hasattr(v, "val"):
                self.read(v, nid, scope, pad)
        for v in e.outputs:
            scope[v.id] = (nid, len(e.outputs) > 1)
        for role, sub in subs:
            cluster = f"cluster_{next(self.ids)}"
            self.lines += [f"{pad}subgraph {cluster} {{",
                           f"{pad}  label={quote(f'{e.prim.name}: {role}')}; {_CLUSTER}"]
            anchor = self.program(sub, scope, pad + "  ")
            self.lines.append(f"{pad}}}")
            self.edge(nid, anchor, style="dashed", lhead=cluster, label=role, arrowhead="odot")
        return nid

    def text(self):
        lines = self.lines + [f"  {s} -> {d}" + (f" [{_attrs(a)}];" if a else ";")
                              for (s, d, _), a in self.edges.items()]
        if self.left_out:
            note = (f"{self.left_out} more equations not shown (max_nodes={self.max_nodes})")
            lines.append(f"  note [{_attrs({'label': note, 'shape': 'plaintext'})}];")
        return "\n".join(lines + ["}", ""])


def to_dot(prog, name, *, max_nodes=None, source_info=True) -> str:
    """The DOT source of prog; `name(atom)` gives the printed name of a variable or literal."""
    writer = _Writer(name, max_nodes, source_info)
    writer.program(prog, ChainMap(), "  ")
    return writer.text()


def svg(make_source):
    """The SVG of the DOT text make_source() returns, drawn by the graphviz package and its
    `dot` program; None when either is missing (a notebook then shows the text form)."""
    try:
        import graphviz
    except ImportError:
        return None
    try:
        return graphviz.Source(make_source()).pipe(format="svg", encoding="utf-8")
    except (graphviz.ExecutableNotFound, subprocess.CalledProcessError, OSError):
        return None
