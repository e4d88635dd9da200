"""Generate docs/api.md, the API reference, from the docstrings.

    .venv/bin/python docs/gen_api.py            # rewrites docs/api.md

Every public name of funcgrad and of its libraries (fg.nn, fg.random, fg.optim, fg.optimize, fg.scipy,
fg.scipy.special, fg.scipy.linalg, fg.scipy.stats.<distribution>, fg.tree_util,
fg.flatten_util, fg.testing) with its signature, the first paragraph of its docstring and the example
from it; funcgrad.numpy as the list of the NumPy names it provides.
tests/test_api_reference.py checks that the file is current and that every example runs.
"""
from __future__ import annotations

import inspect
import pathlib
import re
import sys

import funcgrad as fg
import funcgrad.numpy as fnp

OUT = pathlib.Path(__file__).resolve().parent / "api.md"
LIBRARIES = ["nn", "nn.initializers", "random", "lax", "optim", "optim.losses", "optimize", "scipy", "scipy.special", "scipy.linalg",
             *[f"scipy.stats.{d}" for d in fg.scipy.stats.__all__], "tree_util", "flatten_util", "testing", "dask"]


def public(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return [n for n in names if not inspect.ismodule(getattr(module, n, None))]


def signature(obj, name):
    try:     # (a default's repr may hold its address, which changes from run to run)
        return re.sub(r" at 0x[0-9a-f]+>", ">", f"{name}{inspect.signature(obj)}")
    except (TypeError, ValueError):
        return name


def summary(doc):
    """The docstring's first paragraph, as one line."""
    para = doc.strip().split("\n\n")[0]
    return " ".join(line.strip() for line in para.splitlines())


def example(doc):
    """The docstring's example: its `>>>` and `...` lines, prompts removed."""
    lines = [line.strip() for line in doc.splitlines()]
    code = [line[4:] for line in lines if line.startswith((">>> ", "... ")) or line in (
        ">>>", "...")]
    return "\n".join(code)


def entries():
    """(section, qualified name, object) for every documented name."""
    out = []
    for name in fg.__all__:
        obj = getattr(fg, name)
        if not inspect.ismodule(obj):
            out.append(("funcgrad", f"fg.{name}", obj))
    for lib in LIBRARIES:
        module = fg
        for part in lib.split("."):
            module = getattr(module, part)
        for name in public(module):
            out.append((f"fg.{lib}", f"fg.{lib}.{name}", getattr(module, name)))
    return out


def is_error(obj):
    return inspect.isclass(obj) and issubclass(obj, BaseException)


def render():
    parts = ["# API reference", "",
             "Generated from the docstrings by `docs/gen_api.py` (do not edit by hand; "
             "`tests/test_api_reference.py` checks it is current and runs every example). "
             "Examples assume `import numpy as np, funcgrad as fg, funcgrad.numpy as fnp`.", ""]
    section = None
    for sec, qual, obj in entries():
        if sec != section:
            section = sec
            parts += [f"## {sec}", ""]
        doc = inspect.getdoc(obj) or ""
        short = qual.rpartition(".")[2]
        head = qual if is_error(obj) or not callable(obj) else signature(obj, qual)
        parts += [f"### `{head}`" if len(head) < 160 else f"### `{qual}(...)`", ""]
        if head != qual and len(head) >= 160:
            parts += ["```", signature(obj, short), "```", ""]
        parts += [summary(doc) or "(no description)", ""]
        code = example(doc)
        if code:
            parts += ["```python", code, "```", ""]
    names = sorted(n for n in dir(fnp) if not n.startswith("_") and not inspect.ismodule(
        getattr(fnp, n)))
    subs = sorted(n for n in dir(fnp) if not n.startswith("_") and inspect.ismodule(
        getattr(fnp, n)) and getattr(fnp, n).__name__.startswith("funcgrad"))
    parts += ["## funcgrad.numpy", "",
              "`import funcgrad.numpy as fnp`: NumPy's functions with NumPy's signatures and "
              "semantics (broadcasting, dtypes, `axis`/`keepdims`), differentiable, on traced "
              "and plain arrays alike; plain `np.` calls on traced values reach the same "
              f"functions. {len(names)} names:", "",
              ", ".join(f"`{n}`" for n in names), ""]
    for sub in subs:
        module = getattr(fnp, sub)
        subnames = sorted(n for n in dir(module) if not n.startswith("_")
                          and callable(getattr(module, n)))
        parts += [f"`fnp.{sub}`: " + ", ".join(f"`{n}`" for n in subnames), ""]
    parts += options()
    return "\n".join(parts).rstrip() + "\n"


def options():
    """The table of every option (funcgrad/_config.py): the one place they are documented."""
    parts = ["## Options: fg.config", "",
             "Every option funcgrad has. Set one with the environment variable before funcgrad "
             "is imported, or in code: `fg.config.update(name, value)`, `fg.config.<name> = "
             "value`, or for a block `with fg.config.override(name=value):`. "
             "`fg.config.options()` lists them with their current values.", "",
             "| option | environment variable | takes | default | what it does |",
             "|---|---|---|---|---|"]
    for section in dict.fromkeys(row[4] for row in fg.config.table()):
        parts.append(f"| **{section}** | | | | |")
        for name, env, takes, default, sec, doc in fg.config.table():
            if sec == section:
                parts.append(f"| `{name}` | `{env}` | {takes} | `{default!r}` | {doc} |")
    return parts + [""]


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.exists() and OUT.read_text() == text else 1)
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text.splitlines())} lines)")
