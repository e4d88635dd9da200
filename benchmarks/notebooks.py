"""Notebook run times: every notebook in notebooks/, on a cold and on a warm kernel cache.

    .venv/bin/python benchmarks/notebooks.py [--only optimizers,physics] [--repeat 2]
                                             [--first-run] [--json PATH]

For each notebook and each repeat, a new empty kernel cache (FUNCGRAD_CACHE_DIR in a temporary
directory) and two fresh processes, each of which executes the whole notebook with nbclient in a
fresh kernel, as tests/test_notebooks.py does:
  cold  the empty cache: every kernel the notebook needs is compiled;
  warm  the same cache again: the kernels are read from disk (what a user's second run gets).
Numba's own cache of funcgrad's runtime functions (backend/runtime.py, lapack.py: compiled once
per machine) is left as the machine has it; `--first-run` gives each repeat a fresh one too
(NUMBA_CACHE_DIR), so that "cold" is a machine's very first funcgrad process.

wall: seconds from starting the process until it exits (the kernel's start, about 2 s,
included). cpu: user + system seconds of that process, of the kernel and of the kernel's
compile worker (backend/worker.py): cpu > wall means Numba compiled while the notebook ran. The table gives the median over the repeats (and the
spread) and the load average at the start: on a shared machine other work slows every number.
A notebook that fails (an exception in a cell) is printed loudly (!!!!!!!!) and the exit status
is 1.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def execute(path):
    """Run one notebook in a fresh kernel (the --child process); raises if a cell raises.

    Prints the CPU seconds of this process and of the kernel with its children (the compile
    worker), read after each cell while they live: getrusage would miss processes not reaped.
    """
    import nbclient
    import nbformat
    import psutil
    nb = nbformat.read(path, as_version=4)
    kernel_cpu = [0.0]

    def after_cell(**_):                   # the kernel and its compile worker (backend/worker.py)
        kernel = psutil.Process(client.km.provisioner.pid)
        t = kernel.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in kernel.children(recursive=True):
            try:
                t = child.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += t.user + t.system
        kernel_cpu[0] = total

    client = nbclient.NotebookClient(nb, timeout=1800, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}},
                                     on_cell_executed=after_cell)
    client.execute()
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cpu": own.ru_utime + own.ru_stime + kernel_cpu[0]}))


def timed_run(path, env):
    """(wall s, cpu s, error text or None) of one fresh process executing the notebook."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", str(path)], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        return wall, None, (proc.stderr or proc.stdout)[-3000:]
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])["cpu"], None


def measure(path, repeat, first_run):
    """{"cold": [(wall, cpu), ...], "warm": [...]} over `repeat` fresh caches."""
    runs = {"cold": [], "warm": []}
    for _ in range(repeat):
        scratch = tempfile.mkdtemp(prefix="funcgrad-nb-bench-")
        env = dict(os.environ, FUNCGRAD_CACHE_DIR=os.path.join(scratch, "kernels"))
        if first_run:
            env["NUMBA_CACHE_DIR"] = os.path.join(scratch, "numba")
        try:
            for kind in ("cold", "warm"):
                wall, cpu, error = timed_run(path, env)
                if error:
                    print(f"!!!!!!!! {path.name} ({kind}) failed:\n{error}", flush=True)
                    return None
                runs[kind].append((wall, cpu))
                print(f"  {path.stem:15s} {kind}: {wall:6.1f} s wall, {cpu:6.1f} s cpu", flush=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return runs


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else 0.5 * (values[mid - 1] + values[mid])


def cell(pairs, k):
    values = [p[k] for p in pairs]
    spread = f" ({min(values):.0f}-{max(values):.0f})" if len(values) > 1 else ""
    return f"{median(values):.0f}{spread}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated notebook names (without .ipynb)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--first-run", action="store_true",
                        help="a fresh Numba cache too (funcgrad's runtime functions compiled)")
    parser.add_argument("--json", help="also write the runs to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        execute(pathlib.Path(args.child))
        return 0
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.only:
        wanted = args.only.split(",")
        paths = [p for p in paths if p.stem in wanted]
    load = os.getloadavg()[0]
    print(f"{len(paths)} notebooks, {args.repeat} repeat(s), {os.cpu_count()} cores, load "
          f"average {load:.1f} at the start, {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    results, failed = {}, False
    for path in paths:
        runs = measure(path, args.repeat, args.first_run)
        failed |= runs is None
        if runs is not None:
            results[path.stem] = runs
    print(f"\nload average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"medians over {args.repeat} (min-max)\n")
    print("| notebook | cold: wall s | cold: cpu s | warm: wall s | warm: cpu s |")
    print("|---|--:|--:|--:|--:|")
    for name, runs in results.items():
        print(f"| {name} | {cell(runs['cold'], 0)} | {cell(runs['cold'], 1)} | "
              f"{cell(runs['warm'], 0)} | {cell(runs['warm'], 1)} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_average": load, "first_run": args.first_run, "runs": results}, f,
                      indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
