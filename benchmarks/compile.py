"""Compile cost: CPU seconds to native code in a fresh process, and where Numba spends them.

    .venv/bin/python benchmarks/compile.py [--only mlp,gp_hessian] [--no-jax] [--json PATH]

For each program, fresh interpreters (`--child`), each timed from building the function until
its second call returns (fg.jit with FUNCGRAD_JIT_BACKGROUND=0, so the first call waits for the
kernel; JAX: jax.jit ... block_until_ready):
  cold   empty kernel caches (fresh FUNCGRAD_CACHE_DIR and NUMBA_CACHE_DIR): CPU seconds of the
         process, all its threads and children (getrusage SELF + CHILDREN, user + sys);
  new    a new kernel on a machine that has run funcgrad before: a fresh FUNCGRAD_CACHE_DIR,
         Numba's cache the cold one filled (funcgrad's runtime functions, backend/runtime.py
         and lapack.py, compiled once per machine);
  warm   a second process on the cache the cold one filled;
  moved  a third one in which every function of compile_programs.py and workloads.py has its
         line numbers shifted by 3 (the same program moved down three lines in its file);
  jax    the same program in JAX (jax_enable_x64; optax's L-BFGS, diffrax's Kvaerno5 for the
         stiff ODE), fresh process, if JAX is importable.
Imports (numba + funcgrad, or jax) are timed separately and not included. The cold child also
records Numba's compile events (numba.core.event: "numba:compile" per function compiled,
"numba:run_pass" per compiler pass, "numba:llvm_lock" around LLVM's C++ work), each
function's own CPU time (time.thread_time, nested compiles subtracted), and the size of the
generated kernels: every `kernel.py` the cold run wrote into its kernel cache (the module text
funcgrad compiles, source locations left out; the same lines as `fg.jit(f).lower().source`),
which covers the kernels that library functions (odeint, fit, minimize) jit inside as well.

Every run checks its result before anything is reported: funcgrad against the interpreter
(fg.grad without jit), finite differences of SciPy solves, or a NumPy loop; JAX against
funcgrad's checked result. A failure is printed loudly (!!!!!!!!) and the exit status is 1.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import types

import numpy as np

import compile_programs as programs
from compile_programs import BY_KEY


def cpu_now():
    """User + system CPU seconds of this process (all threads) and its waited-for children."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


# ---- Numba's compile events -----------------------------------------------------------------

GROUPS = ["kernel", "objmode", "funcgrad helpers", "numba linalg", "numba strings/errors",
          "numba other", "other"]
_STRING_MODULES = ("numba.cpython.unicode", "numba.cpython.charseq",
                   "numba.cpython.unicode_support")
_STRING_NAMES = ("raise_with_shape_context", "ol_str", "ol_repr", "getattr", "format")


def classify(dispatcher):
    """(group, short name) of the function a "numba:compile" event compiles."""
    f = getattr(dispatcher, "py_func", None)
    mod = getattr(f, "__module__", None) or ""
    qual = getattr(f, "__qualname__", None) or type(dispatcher).__name__
    name = qual.split(".<locals>")[0]
    if "ObjMode" in type(dispatcher).__name__ or "Lifted" in type(dispatcher).__name__:
        return "objmode", "objmode block"
    if (mod.startswith("_funcgrad_kernel") or not mod) and (
            qual == "kernel" or qual.startswith("_part")):
        return "kernel", "kernel" if qual == "kernel" else "kernel parts (split)"
    if mod.startswith("funcgrad"):
        return "funcgrad helpers", f"{mod.rsplit('.', 1)[-1]}.{name}"
    if mod.startswith(_STRING_MODULES) or any(s in name for s in _STRING_NAMES):
        return "numba strings/errors", name
    if mod == "numba.np.linalg":
        return "numba linalg", name
    return ("numba other" if mod.startswith("numba") else "other"), name


class CompileEvents:
    """Per function compiled: count, own CPU seconds (time.thread_time; the time of compiles
    nested inside it, such as the overloads a kernel calls, belongs to those), and of that the
    type-inference pass, the lowering pass's Python part, and LLVM (inside numba:llvm_lock:
    mostly the lowering pass's finalisation, which optimises the function's module with the
    modules of everything it calls linked in, and emits machine code)."""

    def __init__(self):
        from numba.core import event as ev
        self.funcs = {}             # (group, name) -> {"n", "self", "typing", "lowering", "llvm"}
        self.direct = {}            # (group, name) -> [n, cpu-s with all it compiled in turn]
        self.local = threading.local()
        self.outside = {"llvm": 0.0, "passes": 0.0}   # (LLVM or passes outside any compile)

        class On(ev.Listener):
            def __init__(self, start, end):
                self.start, self.end = start, end

            def on_start(self, event):
                self.start(event)

            def on_end(self, event):
                self.end(event)
        ev.register("numba:compile", On(self._compile_start, self._compile_end))
        ev.register("numba:run_pass", On(self._pass_start, self._pass_end))
        ev.register("numba:llvm_lock", On(self._llvm_start, self._llvm_end))

    def _stack(self):
        loc = self.local                       # (per thread)
        if not hasattr(loc, "stack"):
            loc.stack, loc.depth, loc.t_llvm = [], 0, 0.0
        return loc.stack

    def _nearest_compile(self):
        return next((f for f in reversed(self._stack()) if f["kind"] == "compile"), None)

    def _compile_start(self, e):
        self._stack().append({"kind": "compile", "key": classify(e.data["dispatcher"]),
                              "t0": time.thread_time(), "nested": 0.0, "typing": 0.0,
                              "lowering": 0.0, "llvm": 0.0})

    def _compile_end(self, e):
        st = self._stack()
        fr = st.pop()
        dur = time.thread_time() - fr["t0"]
        for outer in reversed(st):          # pass frames up to and including the parent compile
            outer["nested"] += dur
            if outer["kind"] == "compile":
                break
        parent = next((f["key"] for f in reversed(st) if f["kind"] == "compile"), None)
        if fr["key"][0] != "kernel" and (parent is None or parent[0] == "kernel"):
            d = self.direct.setdefault(fr["key"], [0, 0.0])     # called by a kernel (or alone)
            d[0] += 1
            d[1] += dur
        rec = self.funcs.setdefault(fr["key"], dict(n=0, self=0.0, typing=0.0, lowering=0.0,
                                                    llvm=0.0))
        rec["n"] += 1
        rec["self"] += dur - fr["nested"]
        for k in ("typing", "lowering", "llvm"):
            rec[k] += fr[k]

    def _pass_start(self, e):
        name = e.data["name"].split(" [", 1)[0]          # "<pass name> [<qualname>]"
        self._stack().append({"kind": "pass", "name": name, "t0": time.thread_time(),
                              "nested": 0.0, "llvm": 0.0})

    def _pass_end(self, e):
        fr = self._stack().pop()
        own = time.thread_time() - fr["t0"] - fr["nested"]
        comp = self._nearest_compile()
        if comp is None:
            self.outside["passes"] += own
        elif fr["name"] == "nopython_type_inference":
            comp["typing"] += own
        elif fr["name"] in ("native_lowering", "native_parfor_lowering"):
            comp["lowering"] += own - fr["llvm"]         # (Python's part; LLVM's is "llvm")

    def _llvm_start(self, e):
        self._stack()
        self.local.depth += 1
        if self.local.depth == 1:
            self.local.t_llvm = time.thread_time()

    def _llvm_end(self, e):
        self.local.depth -= 1
        if self.local.depth == 0:
            dt = time.thread_time() - self.local.t_llvm
            st = self._stack()
            if st and st[-1]["kind"] == "pass":
                st[-1]["llvm"] += dt
            comp = self._nearest_compile()
            if comp is None:
                self.outside["llvm"] += dt
            else:
                comp["llvm"] += dt

    def summary(self):
        groups = {g: 0.0 for g in GROUPS}
        for (g, _), r in self.funcs.items():
            groups[g] += r["self"]
        kern = [r for (g, _), r in self.funcs.items() if g == "kernel"]
        top = sorted(self.funcs.items(), key=lambda kv: -kv[1]["self"])
        return {"events": sum(r["n"] for r in self.funcs.values()),
                "total": sum(groups.values()), "groups": groups,
                "kernel_split": {k: sum(r[k] for r in kern)
                                 for k in ("typing", "lowering", "llvm")},
                "llvm_all": sum(r["llvm"] for r in self.funcs.values()) + self.outside["llvm"],
                "outside": dict(self.outside),
                "top": [dict(group=g, name=n, **r) for (g, n), r in top[:15]],
                "direct": [dict(group=g, name=name, n=n, cpu=t) for (g, name), (n, t) in
                           sorted(self.direct.items(), key=lambda kv: -kv[1][1])[:12]]}


# ---- the generated source's size ------------------------------------------------------------

_KEEP = {"np", "_vm", "numba", "math", "range", "len", "min", "max", "abs"}


def _canonical(lines):
    """lines with every name renamed in order of appearance (v0, v1, ...): code that computes
    the same thing on other values reads the same."""
    import io
    import keyword
    import tokenize
    names, toks = {}, []
    for t in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
        if t.type == tokenize.NAME and not keyword.iskeyword(t.string) and t.string not in _KEEP:
            toks.append(names.setdefault(t.string, f"v{len(names)}"))
        elif t.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING):
            toks.append(t.string)
    return " ".join(toks)


def repeated_lines(body, seen):
    """Lines of a kernel's text in blocks that repeat a block seen before, in it or in the
    kernels before it (seen: canonical texts, updated). A block is what codegen writes under
    one comment, a fused group or a statement, when it has two lines or more; comments, blank
    lines and function heads are left out. The most that emitting each distinct block once,
    as a shared function, could take off what Numba types and lowers (issue 29, item 5)."""
    n, cur = 0, []
    for s in [ln.strip() for ln in body.splitlines()] + ["#"]:
        if s.startswith(("#", "def ", "@")) or not s:
            if len(cur) >= 2:
                c = _canonical(cur)
                n += len(cur) if c in seen else 0
                seen.add(c)
            cur = []
        else:
            cur.append(s)
    return n


def kernel_sizes(root):
    """Size of every kernel module in the kernel cache `root` (the part after the module's
    import/helper header): lines, numba.objmode blocks, np.* and vecmath (_vm.*) calls, and
    `repeated`, the lines of blocks that repeat code seen before (repeated_lines)."""
    import re
    out = dict(kernels=0, lines=0, objmode=0, np_calls=0, vm_calls=0, largest=0,
               repeated=0)
    seen = set()
    for entry in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        path = os.path.join(root, entry, "kernel.py")
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as fh:
            body = fh.read().split("\n\n\n", 1)[-1]
        n = body.count("\n") + 1
        out["kernels"] += 1
        out["lines"] += n
        out["largest"] = max(out["largest"], n)
        out["objmode"] += body.count("numba.objmode(")
        out["np_calls"] += len(re.findall(r"\bnp\.[\w.]+\(", body))
        out["vm_calls"] += len(re.findall(r"\b_vm\.[\w.]+\(", body))
        out["repeated"] += repeated_lines(body, seen)
    return out


# ---- one child process ----------------------------------------------------------------------

def flat(tree):
    if isinstance(tree, dict):
        return np.concatenate([flat(tree[k]) for k in sorted(tree)])
    if isinstance(tree, (tuple, list)):
        return np.concatenate([flat(t) for t in tree])
    return np.asarray(tree, dtype=np.float64).ravel()


def rel_err(a, b):
    a, b = flat(a), flat(b)
    if a.shape != b.shape:
        return math.inf
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _shifted(code, n):
    consts = tuple(_shifted(c, n) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + n, co_consts=consts)


def move_functions(n, modules):
    """Shift the line numbers of every function defined in `modules` by n: the same program
    as if each file had n more lines above it."""
    for mod in modules:
        for obj in list(vars(mod).values()):
            if isinstance(obj, types.FunctionType) and obj.__module__ == mod.__name__:
                obj.__code__ = _shifted(obj.__code__, n)


def child(key, impl, phase, out_path):
    prog, res = BY_KEY[key], {"key": key, "impl": impl, "phase": phase}
    c0, w0 = cpu_now(), time.perf_counter()
    events = None
    if impl == "fg":
        import numba  # noqa: F401
        events = CompileEvents()           # (listeners from before funcgrad's import)
    workloads = programs.load(impl)
    if impl == "fg":
        from funcgrad.backend import cache
        from funcgrad.backend.compile import kernels_made
    if phase == "moved":
        move_functions(3, [programs, workloads])
    res["import_cpu"], res["import_wall"] = cpu_now() - c0, time.perf_counter() - w0
    res["startup_cpu"] = cpu_now()          # interpreter start + imports
    try:
        build = (prog.fg if impl == "fg" else prog.jax)()
    except ImportError as e:
        res["unavailable"] = str(e)
        return _write(out_path, res)
    c0, w0 = cpu_now(), time.perf_counter()
    run = build()
    r1 = run()
    w1 = time.perf_counter()
    r2 = run()
    res["cpu"], res["wall"] = cpu_now() - c0, time.perf_counter() - w0
    res["first_wall"] = w1 - w0
    if impl == "fg":
        res["events"] = events.summary()
        res["kernels_made"] = kernels_made()
        res["cache_stats"] = dict(cache.stats)
        if phase == "cold":
            res["source"] = src = kernel_sizes(os.environ["FUNCGRAD_CACHE_DIR"])
            src["in_memory"] = res["kernels_made"] - src["kernels"]     # (not in the cache)
        elif hasattr(run, "lower"):         # trace + transform + simplify, no code generation
            c1 = cpu_now()
            run.lower()
            res["trace_cpu"] = cpu_now() - c1
        ref = prog.ref()
        res["err"] = max(rel_err(r1, ref), rel_err(r2, ref))
        res["ok"] = res["err"] <= prog.rtol
    v = flat(r2)
    idx = np.unique(np.linspace(0, v.size - 1, min(v.size, 2000)).astype(int))
    res["sample"] = v[idx].tolist()
    return _write(out_path, res)


def _write(path, res):
    with open(path, "w") as fh:
        json.dump(res, fh)
    return 0


# ---- the parent: runs, checks, table --------------------------------------------------------

FAILURES = []


def loud(msg):
    print(f"!!!!!!!! {msg}", flush=True)
    FAILURES.append(msg)


def run_child(key, impl, phase, cache_dir, kernels="funcgrad"):
    env = dict(os.environ, FUNCGRAD_JIT_BACKGROUND="0", FUNCGRAD_JIT_THRESHOLD="0",
               FUNCGRAD_CACHE_DIR=os.path.join(cache_dir, kernels),
               NUMBA_CACHE_DIR=os.path.join(cache_dir, "numba"),
               JAX_ENABLE_COMPILATION_CACHE="false")
    for name in ("FUNCGRAD_DUMP", "FUNCGRAD_DISABLE_CACHE", "JAX_COMPILATION_CACHE_DIR"):
        env.pop(name, None)
    out = os.path.join(cache_dir, f"{impl}-{phase}.json")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", key, impl, phase,
                           out], env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode or not os.path.exists(out):
        tail = proc.stderr.strip().splitlines()[-3:] or [f"exit status {proc.returncode}"]
        return {"error": " | ".join(tail)}
    with open(out) as fh:
        res = json.load(fh)
    res["process_wall"] = time.perf_counter() - t0
    return res


def measure(prog, with_jax):
    cache_dir = tempfile.mkdtemp(prefix="fg-compile-bench-")
    for sub in ("numba", "funcgrad", "funcgrad-new"):
        os.mkdir(os.path.join(cache_dir, sub), 0o700)
    row = {"key": prog.key, "title": prog.title}
    try:
        row["cold"] = cold = run_child(prog.key, "fg", "cold", cache_dir)
        if "error" in cold or not cold.get("ok"):
            loud(f"{prog.key}: funcgrad " + (cold.get("error") or
                 f"result differs from the reference: {cold['err']:.2e} > {prog.rtol:g}"))
            return row
        row["new"] = r = run_child(prog.key, "fg", "new", cache_dir, kernels="funcgrad-new")
        if "error" in r or not r.get("ok"):
            loud(f"{prog.key}: funcgrad new: {r.get('error') or 'result differs'}")
        for phase in ("warm", "moved"):
            row[phase] = r = run_child(prog.key, "fg", phase, cache_dir)
            if "error" in r or not r.get("ok"):
                loud(f"{prog.key}: funcgrad {phase}: {r.get('error') or 'result differs'}")
        if with_jax and prog.jax is not None:
            row["jax"] = j = run_child(prog.key, "jax", "cold", cache_dir)
            if "error" in j:
                loud(f"{prog.key}: JAX {j['error']}")
            elif "sample" in j:
                j["err"] = rel_err(np.array(j["sample"]), np.array(cold["sample"]))
                if not j["err"] <= prog.jax_rtol:
                    loud(f"{prog.key}: JAX's result differs from funcgrad's: {j['err']:.2e}")
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    return row


def _num(r, field, fmt="{:.2f}"):
    return fmt.format(r[field]) if r and field in r else "-"


def short_top(ev, n=4):
    return ", ".join(f"{t['name']} {t['self']:.1f}" for t in ev["top"][:n])


def _in_memory(src):
    return f" (+{src['in_memory']} in memory, not counted)" if src.get("in_memory") else ""


def jax_ratio(row):
    j, c = row.get("jax") or {}, row.get("cold") or {}
    return c["cpu"] / j["cpu"] if "cpu" in j and c.get("ok") else None


def print_table(rows):
    print()
    for row in rows:
        print(f"  {row['key']:12s} {row['title']}")
    print("\n| program | funcgrad cold cpu-s | new kernel, helpers cached | warm-process cpu-s "
          "(wall) | moved 3 lines | JAX cpu-s | ratio | kernels | lines (repeated) | objmode "
          "| np calls | top Numba compiles (own cpu-s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        c, n, w, m, j = (row.get(k) or {} for k in ("cold", "new", "warm", "moved", "jax"))
        src = c.get("source", {})
        ratio = jax_ratio(row)
        jx = _num(j, "cpu") if "cpu" in j else ("n/a" if "unavailable" in j else "-")
        cold = _num(c, "cpu") if c.get("ok") else "ERROR" if "error" in c else "MISMATCH"
        print(f"| {row['key']} | {cold} | {_num(n, 'cpu')} | {_num(w, 'cpu')} ({_num(w, 'wall')}) | "
              f"{_num(m, 'cpu')} | {jx} | {f'{ratio:.1f}x' if ratio else '-'} | "
              f"{src.get('kernels', '-')}{_in_memory(src)} | {src.get('lines', '-')} "
              f"({src.get('repeated', '-')}) | "
              f"{src.get('objmode', '-')} | "
              f"{src.get('np_calls', '-')} | {short_top(c['events']) if 'events' in c else '-'} |")
    imp = [r["cold"]["import_cpu"] for r in rows if "import_cpu" in (r.get("cold") or {})]
    jimp = [r["jax"]["import_cpu"] for r in rows if "import_cpu" in (r.get("jax") or {})]
    print(f"\nImports, not included above (median cpu-s): numba + funcgrad "
          f"{np.median(imp) if imp else float('nan'):.2f}"
          + (f", jax {np.median(jimp):.2f}" if jimp else ""))
    ratios = [jax_ratio(r) for r in rows if BY_KEY[r["key"]].in_mean and jax_ratio(r)]
    if ratios:
        print(f"Ratio to JAX over {len(ratios)} programs (trivial excluded): geometric mean "
              f"{math.exp(np.mean(np.log(ratios))):.1f}x, max {max(ratios):.1f}x "
              "(goal: at most 1.5x, none above 3x)")
    news = [r["new"]["cpu"] / r["jax"]["cpu"] for r in rows if BY_KEY[r["key"]].in_mean
            and "cpu" in (r.get("new") or {}) and "cpu" in (r.get("jax") or {})]
    if news:
        print(f"The same for a new kernel on a machine whose runtime helpers are cached: "
              f"geometric mean {math.exp(np.mean(np.log(news))):.1f}x, max {max(news):.1f}x")
    warm = [(r["key"], r["warm"]["cpu"]) for r in rows if "cpu" in (r.get("warm") or {})]
    slow = [f"{k} {t:.2f}" for k, t in warm if t >= 0.5]
    print(f"Warm process to native under 0.5 cpu-s: {len(warm) - len(slow)} of {len(warm)}"
          + (f" (not: {', '.join(slow)})" if slow else ""))


def print_breakdown(rows):
    print("\nWhere the cold compile's CPU goes (own cpu-s of Numba's compile events by group; "
          "'kernel' split into typing / lowering / LLVM; 'not compiling' = the rest: tracing, "
          "transforms, code generation, cache I/O, running)")
    print("\n| program | cold cpu-s | kernel (typing/lowering/LLVM) | objmode | funcgrad helpers "
          "| numba linalg | numba strings/errors | numba other | not compiling | events |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        c = row.get("cold") or {}
        if "events" not in c:
            continue
        ev, g = c["events"], c["events"]["groups"]
        ks = ev["kernel_split"]
        print(f"| {row['key']} | {c['cpu']:.2f} | {g['kernel']:.2f} ({ks['typing']:.1f}/"
              f"{ks['lowering']:.1f}/{ks['llvm']:.1f}) | {g['objmode']:.2f} | "
              f"{g['funcgrad helpers']:.2f} | {g['numba linalg']:.2f} | "
              f"{g['numba strings/errors']:.2f} | {g['numba other'] + g['other']:.2f} | "
              f"{c['cpu'] - ev['total']:.2f} | {ev['events']} |")
    print("\nThe warm process (same cache): its CPU seconds to native, the Numba compiles it still "
          "made, and the CPU of tracing + transforming + simplifying the program again (a fresh "
          "fg.jit(...).lower(*args), after the timed calls; fg.jit programs only)")
    print("\n| program | warm cpu-s | wall s | Numba compiles (n, cpu-s) | trace cpu-s | "
          "kernel cache hits | moved: cpu-s, hits |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        w, m = row.get("warm") or {}, row.get("moved") or {}
        if "cpu" not in w:
            continue
        ev = w["events"]
        print(f"| {row['key']} | {w['cpu']:.2f} | {w['wall']:.2f} | {ev['events']}, "
              f"{ev['total']:.2f} | {_num(w, 'trace_cpu')} | {w['cache_stats']['hit']} of "
              f"{w['kernels_made']} | {_num(m, 'cpu')}, "
              f"{(m.get('cache_stats') or {}).get('hit', '-')} |")
    for row in rows:
        c = row.get("cold") or {}
        if "events" not in c:
            continue
        print(f"\n{row['key']}: top Numba compiles (own cpu-s, count, group; LLVM share)")
        for t in c["events"]["top"][:10]:
            print(f"  {t['self']:7.2f} s {t['n']:4d}x  {t['group']:22s} {t['name']}"
                  f"  (LLVM {t['llvm']:.2f})")
        print("  the functions the kernels call, each with all it compiled in turn:")
        for t in c["events"]["direct"][:6]:
            print(f"  {t['cpu']:7.2f} s {t['n']:4d}x  {t['group']:22s} {t['name']}")


def versions():
    from importlib import metadata
    out = {}
    for name in ("funcgrad", "numba", "llvmlite", "numpy", "jax", "jaxlib", "optax", "diffrax"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated program keys: " + ",".join(BY_KEY))
    ap.add_argument("--no-jax", action="store_true", help="skip the JAX runs")
    ap.add_argument("--json", help="save the raw results here")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(*a.child)
    keys = a.only.split(",") if a.only else list(BY_KEY)
    unknown = [k for k in keys if k not in BY_KEY]
    if unknown:
        ap.error(f"unknown programs {unknown}; choose from {list(BY_KEY)}")
    import importlib.util
    with_jax = not a.no_jax and importlib.util.find_spec("jax") is not None
    if not a.no_jax and not with_jax:
        print("(JAX not importable: no JAX column)")
    meta = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
            "load_average": os.getloadavg(), "versions": versions()}
    print(f"compile cost, {meta['cores']} cores, {meta['date']}, load average "
          f"{meta['load_average'][0]:.1f}; {meta['versions']}\nprograms: {', '.join(keys)}",
          flush=True)
    rows = []
    for k in keys:
        t0 = time.perf_counter()
        rows.append(measure(BY_KEY[k], with_jax))
        c = rows[-1].get("cold", {})
        print(f"  {k}: {time.perf_counter() - t0:.0f} s"
              + (f" (cold {c['cpu']:.1f} cpu-s, check {c['err']:.1e})" if "cpu" in c else ""),
              flush=True)
    print_table(rows)
    print_breakdown(rows)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(dict(meta, rows=rows), fh, indent=1)
    if FAILURES:
        print(f"\n{len(FAILURES)} failure(s):\n  " + "\n  ".join(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
