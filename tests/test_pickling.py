"""Compiled functions pickle (funcgrad/api/shipping.py): fg.jit objects travel as their traced
programs and run in another process without tracing the user's code again, their kernels
coming from a shared persistent cache; transformed functions (grad, value_and_grad, vmap,
jit of grad) travel with cloudpickle; programs pickle as plain data.

The receiving process is a real subprocess, started once for all the cross-process checks."""
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.interpreter import eval_program

cloudpickle = pytest.importorskip("cloudpickle")

X = np.linspace(-1.0, 2.0, 5)


def loss(w):
    return fnp.sum(fnp.sin(w) ** 2) + fg.fori_loop(0, 3, lambda i, c: c * 1.5, w)[0]


def test_programs_pickle_as_data_with_fresh_variables():
    prog = fg.make_ir(fg.grad(loss))(X)
    back = pickle.loads(pickle.dumps(prog))
    assert str(back) == str(prog)                           # same equations, names, lines
    old = {v.id for v in prog.in_vars} | {v.id for e in prog.eqns for v in e.outputs}
    assert not old & ({v.id for v in back.in_vars} | {v.id for e in back.eqns for v in e.outputs})
    np.testing.assert_array_equal(eval_program(back, X)[0], eval_program(prog, X)[0])


def test_unpickling_twice_in_one_process_gives_the_same_function():
    j = fg.jit(loss, background=False)
    j(X)
    a = pickle.loads(pickle.dumps(j))
    assert pickle.loads(cloudpickle.dumps(j)) is a          # (a Dask worker's tasks share it)
    assert a(X) == j(X)


RECEIVER = """
import json, pickle, sys, numpy as np
import funcgrad as fg
from funcgrad.backend import cache
x, x7 = np.linspace(-1.0, 2.0, 5), np.linspace(0.0, 1.0, 7)
out = {}
plain = pickle.load(open("plain.pkl", "rb"))
out["plain"] = float(plain(x))
out["plain_hits"] = cache.stats["hit"]
try:
    plain(x7)
except Exception as exc:
    out["plain_new"] = f"{type(exc).__name__}: {exc}"
shipped = pickle.load(open("cloud.pkl", "rb"))
out["grad"] = shipped["grad"](x).tolist()
out["value_and_grad"] = [float(shipped["value_and_grad"](x)[0]), shipped["value_and_grad"](x)[1].tolist()]
out["vmap"] = shipped["vmap"](np.stack([x, 2 * x])).tolist()
out["jit_grad"] = shipped["jit_grad"](x).tolist()
out["jit_grad_new"] = shipped["jit_grad"](x7).tolist()
out["hits"] = cache.stats["hit"]
print("RESULT" + json.dumps(out))
"""


def test_compiled_functions_run_in_another_process(tmp_path, monkeypatch):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FUNCGRAD_", "NUMBA_"))}
    env.update(FUNCGRAD_CACHE_DIR=str(tmp_path / "cache"), FUNCGRAD_JIT_BACKGROUND="0",
               PYTHONPATH=os.pathsep.join([os.path.dirname(__file__)] + sys.path))
    monkeypatch.setattr(fg.config, "cache_dir", str(tmp_path / "cache"))   # shared cache
    scale = 0.5
    plain = fg.jit(lambda w: fnp.sum(fnp.tanh(w * scale)), background=False)  # a lambda
    want_plain = float(plain(X))
    monkeypatch.setitem(sys.modules, "cloudpickle", None)    # plain pickle: the lambda stays
    (tmp_path / "plain.pkl").write_bytes(pickle.dumps(plain))
    monkeypatch.delitem(sys.modules, "cloudpickle")
    closure = lambda w: fnp.sum(fnp.exp(-scale * w * w))    # by value, with cloudpickle
    jit_grad = fg.jit(fg.grad(closure), background=False)
    shipped = {"grad": fg.grad(closure), "value_and_grad": fg.value_and_grad(closure),
               "vmap": fg.vmap(closure), "jit_grad": jit_grad}
    want = {"grad": shipped["grad"](X), "value_and_grad": shipped["value_and_grad"](X),
            "vmap": shipped["vmap"](np.stack([X, 2 * X])), "jit_grad": jit_grad(X)}
    (tmp_path / "cloud.pkl").write_bytes(cloudpickle.dumps(shipped))
    res = subprocess.run([sys.executable, "-c", RECEIVER], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    got = json.loads(next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULT"))[6:])
    assert got["plain"] == want_plain                         # exactly: the same kernel
    assert got["plain_hits"] >= 1                             # loaded from the shared cache
    assert "without its Python function" in got["plain_new"]  # and never traced again
    np.testing.assert_array_equal(got["grad"], want["grad"])
    assert got["value_and_grad"][0] == want["value_and_grad"][0]
    np.testing.assert_array_equal(got["value_and_grad"][1], want["value_and_grad"][1])
    np.testing.assert_array_equal(got["vmap"], want["vmap"])
    np.testing.assert_array_equal(got["jit_grad"], want["jit_grad"])
    x7 = np.linspace(0.0, 1.0, 7)                             # a new signature: f travelled
    np.testing.assert_allclose(got["jit_grad_new"], -2 * scale * x7 * np.exp(-scale * x7 ** 2),
                               rtol=1e-14)
