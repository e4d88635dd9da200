"""Does any call wait for a compile? Un-jitted transforms and library loops called again and
again, as a notebook or a training script calls them, from a fresh process with an empty
kernel cache.

    .venv/bin/python benchmarks/stalls.py [--only gp_grad,fit] [--seconds 60] [--json PATH]

For each program, a fresh interpreter (`--child`) with its own empty FUNCGRAD_CACHE_DIR calls
it in a loop for up to --seconds (stopping 20 calls after every background compile it started
has finished) and records every call's wall time. Reported: the first call (which also pays
for the process's lazy imports), the median of the first 10 (interpreted) calls, the slowest
later call, when every kernel was ready and the median after that, how long each background
compile took, and the goal: no call after the first slower than 3x the interpreted median +
0.25 s. Library loops are called with freshly built optimizers and lambdas on every call (the
way the docs write them); the `shared` row keeps one object, for the ratio. Every result is
checked against the first.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import compile_programs as programs

HERE = os.path.dirname(os.path.abspath(__file__))


def make(key):
    """key -> call(): one call of the program, as its user writes it."""
    fg, fnp = programs.fg, programs.fnp
    if key in ("gp_grad", "gp_hessian"):
        nll, args = programs.gp_nll(fnp), programs.gp_args()
        g = (fg.grad if key == "gp_grad" else fg.hessian)(nll)
        return lambda: g(*args)
    if key == "per_example":
        loss = programs.small_mlp(programs._xp("funcgrad"))
        g = fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))
        args = programs.small_mlp_args()
        return lambda: g(*args)
    if key in ("fit", "fit_shared"):
        X, y = programs.logistic_data()
        shared = fg.optim.adam(programs.ADAM["lr"])
        return lambda: fg.optim.fit(
            programs.logistic_loss, np.zeros(X.shape[1]),
            shared if key == "fit_shared" else fg.optim.adam(programs.ADAM["lr"]),
            steps=programs.ADAM["steps"], data=(X, y)).params
    if key == "minimize":
        f, x0 = programs.rosen(fnp), programs.rosen_x0(20)
        return lambda: fg.optimize.minimize(lambda x: f(x), x0).x
    if key == "odeint":
        f = programs.lotka_volterra(fnp)
        return lambda: fg.odeint(lambda y, t, *p: f(y, t, *p), programs.LV["y0"],
                                 programs.LV["ts"], *programs.LV["p"], rtol=1e-8, atol=1e-8)
    raise KeyError(key)


KEYS = ["gp_grad", "gp_hessian", "per_example", "fit", "fit_shared", "minimize", "odeint"]


# an iterative solver run by the interpreter and by the kernel may take different last-bit
# rounding paths: results agree to the solver's tolerance, not to rounding
RTOL = {"minimize": 1e-5}


def child(key, seconds, out):
    programs.load("fg")
    from funcgrad.api import background
    compiles = []                       # (started, ready) of each background compile
    run = background.Pending._run

    def timed(self, build):
        t = time.perf_counter()
        try:
            run(self, build)
        finally:
            compiles.append((t, time.perf_counter()))
    background.Pending._run = timed
    call = make(key)
    times, first, native_at = [], None, None
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        res = call()
        times.append(time.perf_counter() - t)
        leaves = programs.fg.tree_util.tree_leaves(res)
        if first is None:
            first = leaves
        for a, b in zip(leaves, first):
            np.testing.assert_allclose(a, b, rtol=RTOL.get(key, 1e-7), atol=1e-9)
        busy = any(not p.ready for p in list(background._live))
        if native_at is None and compiles and not busy and len(times) > 1:
            native_at = len(times)         # the next call finds every kernel ready
        if native_at is not None and len(times) > native_at + 20:
            break
    with open(out, "w") as f:
        json.dump({"times": times, "native_at": native_at, "start": start,
                   "compiles": [(a - start, b - start) for a, b in compiles],
                   "since_start": [float(x) for x in np.cumsum(times)]}, f)


def summarise(key, r):
    t = np.array(r["times"])
    interp = float(np.median(t[:10]))
    k = r["native_at"]
    later = t[1:]                 # (the first call of a process also pays for lazy imports)
    row = {"program": key, "calls": len(t), "first_s": float(t[0]), "interpreted_s": interp,
           "max_s": float(later.max()), "slowest_call": int(later.argmax()) + 2,
           "goal_s": 3 * interp + 0.25,
           "compiles_s": [round(b - a, 2) for a, b in r["compiles"]],
           "native_after_s": None if k is None else r["since_start"][k - 1],
           "native_s": None if k is None else float(np.median(t[k:]))}
    row["ok"] = row["max_s"] <= row["goal_s"]
    return row


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--json")
    ap.add_argument("--child", nargs=3)
    a = ap.parse_args(argv)
    if a.child:
        child(a.child[0], float(a.child[1]), a.child[2])
        return 0
    rows = []
    for key in a.only.split(",") if a.only else KEYS:
        with tempfile.TemporaryDirectory() as cache:
            out = os.path.join(cache, "result.json")
            env = dict(os.environ, FUNCGRAD_CACHE_DIR=os.path.join(cache, "kernels"))
            env.pop("FUNCGRAD_JIT_BACKGROUND", None)
            subprocess.run([sys.executable, __file__, "--child", key, str(a.seconds), out],
                           env=env, check=True, cwd=HERE)
            with open(out) as f:
                rows.append(summarise(key, json.load(f)))
        r = rows[-1]
        fmt = lambda v, u="s": "-" if v is None else f"{v:.4f} {u}" if v < 1 else f"{v:.2f} {u}"
        print(f"{key:12s} calls {r['calls']:5d}  first {fmt(r['first_s'])}  interpreted "
              f"{fmt(r['interpreted_s'])}  slowest later {fmt(r['max_s'])} "
              f"(call {r['slowest_call']}; goal <= {fmt(r['goal_s'])}: "
              f"{'ok' if r['ok'] else 'MISSED'})  native after {fmt(r['native_after_s'])}, "
              f"then {fmt(r['native_s'])}; compiles {r['compiles_s']} s", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
