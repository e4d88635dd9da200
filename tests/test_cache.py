"""The persistent kernel cache (funcgrad/backend/cache.py): reuse across processes, keys that
change with versions, corrupt or untrusted entries ignored and rebuilt (never executed), the
environment switches, clear_cache, and the literal writer for objmode helper parameters.

Processes are real subprocesses. One cold run fills a seed cache (module fixture); each test
copies it into its own FUNCGRAD_CACHE_DIR, so most tests start one warm process only."""
import ast
import os
import re
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.backend import cache
from funcgrad.ir import Aval
from funcgrad.primitives import REGISTRY

# A small gradient with an objmode helper (searchsorted of float keys into integer edges: NumPy's
# own code, since it casts both to a common dtype), so the standalone module
# imports REGISTRY and rebuilds its helpers. {pre} runs before funcgrad traces anything; it is a
# single line, so the traced source positions (and the generated source) do not move.
CODE = """import sys, time, numpy as np, numba, funcgrad, funcgrad as fg, funcgrad.numpy as fnp
{pre}
def f(x):
    return fnp.sum(fnp.sin(fnp.sort(x)) * x) + x[fnp.searchsorted(np.arange(5), x[2])] ** 2
x = np.linspace(-1.0, 1.0, 7)
t = time.perf_counter()
g = fg.jit(fg.grad(f))(x)
dt = time.perf_counter() - t
from funcgrad.backend import cache as C
hits = sum(sum(fn.stats.cache_hits.values()) for fn in C.kernels.recent.values())
ok = np.allclose(g, fg.grad(f)(x), rtol=1e-12)     # against the reference interpreter
print("RESULT", "ok" if ok else "WRONG", dt, hits)
"""


def _run(cache_dir, pre="pass", **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("FUNCGRAD_", "NUMBA_"))}
    e.update(FUNCGRAD_CACHE_DIR=str(cache_dir), FUNCGRAD_CACHE_DEBUG="1", FUNCGRAD_JIT_BACKGROUND="0",
             **env)
    res = subprocess.run([sys.executable, "-c", CODE.format(pre=pre)], env=e, capture_output=True,
                         text=True, cwd=os.path.dirname(str(cache_dir)), timeout=120)
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULT"))
    _, verdict, dt, hits = line.split()
    assert verdict == "ok"
    events = re.findall(r"funcgrad-cache: (\w+) ([0-9a-f]{64})", res.stderr)
    return dict(time=float(dt), hits=int(hits), events=events, stderr=res.stderr)


def _entries(root):
    return sorted(p for p in os.listdir(root) if re.fullmatch(r"[0-9a-f]{32}", p))


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    root = tmp_path_factory.mktemp("seed") / "cache"
    run = _run(root)
    return root, run


@pytest.fixture
def warm(seed, tmp_path):
    """A copy of the seed cache (permissions kept) and its one entry directory."""
    root = tmp_path / "cache"
    shutil.copytree(seed[0], root)
    (entry,) = _entries(root)
    return root, root / entry


def test_cold_run_writes_a_private_standalone_entry(seed):
    root, run = seed
    assert [e for e, _ in run["events"]] == ["miss"] and run["hits"] == 0
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    (entry,) = _entries(root)
    kernel = root / entry / "kernel.py"
    assert stat.S_IMODE(os.stat(root / entry).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(kernel).st_mode) == 0o600
    text = kernel.read_text()
    header, body = text.split("\n", 1)
    key = run["events"][0][1]
    assert entry == key[:32] and f"key={key}" in header
    assert f"sha256={__import__('hashlib').sha256(body.encode()).hexdigest()}" in header
    assert "REGISTRY['searchsorted']" in body and "def kernel(" in body
    assert any(n.endswith(".nbi") for n in os.listdir(root / entry / "__pycache__"))


def test_second_process_reuses_the_entry_and_is_faster(seed, warm):
    root, _ = warm
    run = _run(root)
    assert [e for e, _ in run["events"]] == ["hit"]
    assert run["events"][0][1] == seed[1]["events"][0][1]
    assert run["hits"] >= 1                        # Numba loaded machine code: no LLVM compile
    assert run["time"] < seed[1]["time"], (run["time"], seed[1]["time"])


def test_a_moved_function_hits_the_cache(seed, warm):
    """The kernel's text holds no user file or line: the same function three lines further
    down (a notebook cell re-run, an edit above it) loads the same entry, no compile."""
    root, entry = warm
    body = (entry / "kernel.py").read_text()
    assert "<string>" not in body and "(in f)" not in body
    run = _run(root, pre="pass\n\n\n# moved down three lines")
    assert run["events"] == [("hit", seed[1]["events"][0][1])]
    assert run["hits"] >= 1


def test_one_kernel_wherever_the_code_lives_and_errors_name_each_ones_line():
    """Two copies of a function in two files, at different lines, share one compiled kernel;
    an index out of range and a failing objmode helper (inv of a singular matrix) still name
    each copy's own line."""
    from funcgrad.backend.compile import kernels_made
    src = ("def pick(x, i):\n    return fnp.sum(x[i] * 3.0)\n"
           "def invert(m):\n    return fnp.sum(fnp.linalg.inv(m) * 5.0)\n")
    copies = []
    for name, pad in (("first_file.py", 0), ("second_file.py", 7)):
        ns = {"fnp": fnp}
        exec(compile("\n" * pad + src, name, "exec"), ns)
        copies.append((name, pad, fg.jit(ns["pick"], background=False),
                       fg.jit(ns["invert"], background=False)))
    before = kernels_made()
    for name, pad, pick, invert in copies:
        assert pick(np.ones(3), np.array([0, 2])) == 6.0
        with pytest.raises(IndexError, match=rf"out of bounds.* at {name}:{pad + 2} \(in pick\)$"):
            pick(np.ones(3), np.array([0, 5]))
        assert np.isclose(invert(2 * np.eye(2)), 5.0)
        with pytest.raises(np.linalg.LinAlgError) as err:
            invert(np.zeros((2, 2)))
        assert f"funcgrad: inv failed on values computed at {name}:{pad + 4} (in invert)" in err.value.__notes__
    assert kernels_made() - before == 2          # pick's and invert's, not one per copy


RUNTIME_CODE = """import numpy as np, funcgrad as fg, funcgrad.numpy as fnp
from numba.core import event as ev
compiled = []
class On(ev.Listener):
    def on_start(self, e):
        compiled.append(getattr(e.data["dispatcher"].py_func, "__qualname__", "?"))
    def on_end(self, e):
        pass
ev.register("numba:compile", On())
M, b = np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0])
f = lambda m: fnp.sum(fnp.linalg.solve(m * {scale}, b) @ m) + fnp.sum(fnp.linalg.cholesky(m))
g = fg.jit(fg.grad(f))(M)
assert np.allclose(g, fg.grad(f)(M), rtol=1e-12)
print("COMPILED", " ".join(compiled))
"""


def test_runtime_helpers_are_compiled_once_per_machine(tmp_path):
    """np.linalg.solve, cholesky and the matrix products are called from kernels as funcgrad's
    runtime functions (backend/runtime.py and lapack.py, Numba's disk cache): a new process
    compiling a new kernel loads them instead of compiling them again (Numba's solve inlined
    in a kernel cost 6.5 cpu-s per process); Numba's own np.linalg.solve is never compiled."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FUNCGRAD_", "NUMBA_"))}
    env.update(FUNCGRAD_CACHE_DIR=str(tmp_path / "kernels"), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               FUNCGRAD_JIT_BACKGROUND="0")
    runs = []
    for scale in ("1.0", "2.0"):              # two different kernels
        res = subprocess.run([sys.executable, "-c", RUNTIME_CODE.format(scale=scale)], env=env,
                             capture_output=True, text=True, cwd=str(tmp_path), timeout=300)
        assert res.returncode == 0, res.stderr
        line = next(ln for ln in res.stdout.splitlines() if ln.startswith("COMPILED"))
        runs.append(line.split()[1:])
    first, second = runs
    numba_solve = ("solve_impl", "_system_copy_in_b", "raise_with_shape_context")
    helpers = {"lapack_solve", "lapack_cholesky", "dot"}
    assert helpers <= set(first) and "kernel" in first, first
    assert "kernel" in second                   # the new kernel is compiled, the helpers not
    assert not helpers & set(second), second
    assert not [n for n in first + second if n.startswith(numba_solve)], (first, second)


def test_version_change_gives_a_new_key(seed, warm):
    root, entry = warm
    run = _run(root, pre="import funcgrad._version; funcgrad._version.__version__ = '999.0'")
    (event, key), = run["events"]
    assert event == "miss" and key != seed[1]["events"][0][1]
    new = root / key[:32] / "kernel.py"
    old = entry / "kernel.py"
    assert new.read_text().split("\n", 1)[1] == old.read_text().split("\n", 1)[1]


@pytest.mark.parametrize("damage", ["truncate", "malicious"])
def test_corrupt_entry_is_never_executed_and_is_rebuilt(warm, tmp_path, damage):
    root, entry = warm
    kernel = entry / "kernel.py"
    good = kernel.read_bytes()
    marker = tmp_path / "executed"
    if damage == "truncate":
        kernel.write_bytes(good[: len(good) // 2])
    else:       # a consistent-looking file: the header is kept, the body creates a marker
        header = good.split(b"\n", 1)[0]
        evil = (f"open({str(marker)!r}, 'w').close()\n"
                f"def kernel(*args):\n    open({str(marker)!r}, 'w').close()\n").encode()
        kernel.write_bytes(header + b"\n" + evil)
    run = _run(root)
    assert [e for e, _ in run["events"]] == ["rebuild"]
    assert "CacheWarning" in run["stderr"] and "corrupt" in run["stderr"]
    assert not marker.exists()
    assert kernel.read_bytes() == good
    assert [e for e, _ in _run(root)["events"]] == ["hit"]


@pytest.mark.parametrize("what", ["dir-777", "entry-777", "file-666", "foreign-entry"])
def test_untrusted_cache_is_ignored_with_a_warning(warm, what):
    root, entry = warm
    if what == "foreign-entry":
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            pytest.skip("chown to another user needs root")
        os.chown(entry / "kernel.py", 65534, 65534)
    else:
        path = {"dir-777": root, "entry-777": entry, "file-666": entry / "kernel.py"}[what]
        os.chmod(path, 0o666 if what == "file-666" else 0o777)
    run = _run(root)
    assert "CacheWarning" in run["stderr"]
    if what == "dir-777":        # the whole cache is unused: compiled in memory
        assert run["events"] == [] and "not using the kernel cache" in run["stderr"]
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o777
    else:                        # the entry is thrown away and rebuilt privately
        assert [e for e, _ in run["events"]] == ["rebuild"]
        st = os.stat(entry / "kernel.py")
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
        assert stat.S_IMODE(os.stat(entry).st_mode) == 0o700


def test_disable_by_environment_or_config(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    run = _run(root, FUNCGRAD_DISABLE_CACHE="1")
    assert run["events"] == [] and not root.exists()
    for off in ("0", "off", "None", "false"):
        monkeypatch.setattr(fg.config, "cache_dir", off)
        assert cache.cache_dir() is None
    monkeypatch.setattr(fg.config, "cache_dir", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == str(tmp_path / "xdg" / "funcgrad")
    monkeypatch.setattr(fg.config, "disable_cache", True)
    assert cache.cache_dir() is None


def test_clear_cache_removes_only_entries(warm, monkeypatch):
    root, entry = warm
    (root / "notes.txt").write_text("keep")
    (root / "keep").mkdir()
    monkeypatch.setattr(fg.config, "cache_dir", str(root))
    assert cache.cache_dir() == str(root)
    assert cache.clear_cache() == 1
    assert not entry.exists() and _entries(root) == []
    assert (root / "notes.txt").exists() and (root / "keep").is_dir()


def test_in_process_compile_uses_cache_and_falls_back(tmp_path, monkeypatch):
    monkeypatch.setattr(fg.config, "cache_dir", str(tmp_path / "c"))
    f = lambda x: fnp.sum(fnp.cos(x) * x)
    x = np.linspace(0.0, 1.0, 3)
    np.testing.assert_allclose(fg.jit(fg.grad(f))(x), np.cos(x) - x * np.sin(x))
    assert len(_entries(tmp_path / "c")) == 1
    monkeypatch.setattr(fg.config, "cache_dir", str(tmp_path / "d"))
    monkeypatch.setattr(cache, "module_text", lambda source, impls: None)   # not writable
    g = lambda x: fnp.sum(fnp.cos(x) * x * 2.0)
    np.testing.assert_allclose(fg.jit(g)(x), 2 * np.sum(np.cos(x) * x))
    assert not (tmp_path / "d").exists()


def _helper_params(text):
    """The params dict literal of the one helper in a module text, evaluated."""
    call = next(n.value for n in ast.parse(text).body if isinstance(n, ast.Assign))
    return eval(compile(ast.Expression(call.args[1]), "<params>", "eval"), {"np": np})


def test_literal_writer_is_exact_and_strict():
    src = "def kernel(a):\n    return (a, )\n"
    aval = [Aval((2, 3), np.float32)]
    nasty = "x')\nimport os; os.system('echo pwned')  # \u00e9\\"
    params = {"s": nasty, "t": (1, -0.0, None, True, ("a", [2.5, float("inf")])),
              "d": np.dtype("float32"), "n": np.int32(7), "big": 2 ** 70}
    where = "/home/u/it's \"mine\".py:3 (in f)\nimport os"     # a user's path, escaped too
    text = cache.module_text(src, {"_impl0_gather": (REGISTRY["gather"], params, aval, where)})
    tree = ast.parse(text)
    assert [type(n).__name__ for n in tree.body] == (["Expr"] + ["Import"] * 3
                                                      + ["ImportFrom"] * 4 + ["Assign", "FunctionDef"])
    back = _helper_params(text)
    assert back["s"] == nasty and back["d"] == np.dtype("float32") and back["big"] == 2 ** 70
    assert type(back["n"]) is np.int32 and back["n"] == 7
    assert repr(back["t"]) == repr(params["t"])
    assert "Aval((2, 3, ), np.dtype('float32'))" in text
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "objmode_call")
    assert ast.literal_eval(call.args[3]) == where

    class S(str):
        def __repr__(self):
            return "__import__('os')"
    for bad in (object(), S("x"), np.dtype([("a", "f8")]), {"a": 1}, lambda: 0, np.ones(2)):
        assert cache.module_text(src, {"_impl0_gather": (REGISTRY["gather"], {"p": bad}, aval, None)}) is None
    fake = type(REGISTRY["gather"])("gather", impl=None, abstract=None)   # not the registered one
    assert cache.module_text(src, {"_impl0_gather": (fake, {}, aval, None)}) is None
    assert cache.module_text(src, {"_impl0_gather": (REGISTRY["gather"], {1: 2}, aval, None)}) is None
    assert cache.module_text(src, {}).endswith(src)


def test_the_key_covers_every_helper_module_kernels_inline(tmp_path, monkeypatch):
    """An edit to complexmath.py (or any module vecmath re-exports) changes every key."""
    here = os.path.dirname(cache.__file__)
    for name in os.listdir(here):
        if name.endswith(".py"):
            shutil.copy(os.path.join(here, name), tmp_path / name)
    monkeypatch.setattr(cache, "__file__", str(tmp_path / "cache.py"))
    digests = []
    for edit in (None, "complexmath.py", "debugmath.py", "vecmath.py"):
        if edit:
            with open(tmp_path / edit, "a") as fh:
                fh.write("\n# edited\n")
        monkeypatch.setattr(cache, "_VECMATH_DIGEST", None)
        digests.append(cache._vecmath_digest())
    assert len(set(digests)) == 4
