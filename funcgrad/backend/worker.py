"""Compile kernels in a separate process, so that a background compile never holds this one's GIL.

Numba's compiler is mostly Python: compiling in a thread of the calling process takes the GIL
from the interpreter that answers the user's calls meanwhile (each then runs at a fraction of
its speed), and a crash in LLVM takes the user's process with it. So a background compile
(api/background.py) hands the kernel's module text and argument types to a worker process,
which compiles it into the on-disk kernel cache (cache.py); the caller then loads the machine
code from there, which takes milliseconds, and runs it.

The worker is one process per user process, started on the first background compile as
`python -m funcgrad.backend.worker` (never the user's `__main__`, which a multiprocessing
"spawn" would run again), fed one job at a time over a pipe. It exits when the pipe closes
(or when its parent is gone); at interpreter exit it is terminated, dropping a compile
in flight (Numba writes each cache file under a temporary name and renames it, so nothing
half-written is left). Where there is no usable disk cache, or the worker cannot be started,
dies, or fails on a job, `compile_elsewhere` says so and the caller compiles in its own thread
as before.
"""
from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
import time

__all__ = ["compile_elsewhere", "stats"]

_HEADER = struct.Struct("<Q")
MAX_STARTS = 3          # workers started per process: past this, compile in threads
stats = {"jobs": 0, "starts": 0, "failed": 0, "seconds": 0.0}


def _send(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream):
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None                     # the other side closed the pipe
    (n,) = _HEADER.unpack(head)
    data = stream.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


class _Worker:
    def __init__(self):
        from . import cache
        root = cache.cache_dir()
        env = dict(os.environ, FUNCGRAD_CACHE_DIR=root, FUNCGRAD_DISABLE_CACHE="0")
        # funcgrad imported from wherever this process found it
        home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (home, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen([sys.executable, "-m", "funcgrad.backend.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=home)

    def run(self, job):
        """The worker's reply to job, or None when it died."""
        try:
            _send(self.proc.stdin, job)
            return _receive(self.proc.stdout)
        except (OSError, ValueError, pickle.PickleError, EOFError):
            return None

    def stop(self):
        proc = self.proc
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:       # pragma: no cover
                proc.kill()
                proc.wait()
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:                         # pragma: no cover
                pass


_lock = threading.Lock()          # one job at a time; waiting for it releases the GIL
_worker: list = [None]
_closing = [False]


class Cancelled(Exception):
    """The process is exiting: a background compile was dropped."""


def compile_elsewhere(module, parallel, types):
    """Have the worker compile kernel module text `module` for Numba argument `types` into the
    disk cache. True: done (loading it from the cache is quick); False: not possible here or
    it failed (compile in this process instead). Raises Cancelled at interpreter exit."""
    if _closing[0]:
        raise Cancelled("the process is exiting")
    with _lock:
        if _closing[0]:
            raise Cancelled("the process is exiting")
        worker = _worker[0]
        if worker is None or worker.proc.poll() is not None:
            if worker is not None:
                worker.stop()
                _worker[0] = None
            if stats["starts"] >= MAX_STARTS:
                return False
            stats["starts"] += 1
            try:
                worker = _worker[0] = _Worker()
            except (OSError, ValueError, TypeError):     # no usable interpreter to start
                stats["starts"] = MAX_STARTS
                return False
        t0 = time.perf_counter()
        reply = worker.run((module, bool(parallel), tuple(types)))
        stats["seconds"] += time.perf_counter() - t0
        if _closing[0]:
            raise Cancelled("the process is exiting")
        if reply is None:                # it died (crashed, killed): a new one next time
            stats["failed"] += 1
            worker.stop()
            _worker[0] = None
            return False
        stats["jobs"] += 1
        if reply[0] is not None:
            stats["failed"] += 1
            return False
        return True


def _at_exit():
    """Terminate the worker; background compiles still waiting for it are cancelled."""
    _closing[0] = True
    worker, _worker[0] = _worker[0], None
    if worker is not None:
        worker.stop()


atexit.register(_at_exit)


def _after_fork():
    """A forked child (multiprocessing's fork, Dask) shares the parent's pipes to the worker:
    it forgets them (the parent keeps its worker) and starts its own when it needs one."""
    global _lock
    _lock = threading.Lock()            # (a thread of the parent may have held it)
    _worker[0] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _die_with_parent():
    """Exit when the parent process is gone, even in the middle of a compile (the pipe's end
    is seen only between jobs). (Not PR_SET_PDEATHSIG: that fires when the parent *thread*
    that started the worker ends.)"""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)
    threading.Thread(target=watch, daemon=True).start()


def main():
    """The worker: read (module text, parallel, types), compile into the disk cache, reply
    (None or the error's text,)."""
    _die_with_parent()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                       # anything printed goes to stderr, not into the replies
    sys.stdout = sys.stderr
    from . import cache
    requests = sys.stdin.buffer
    while True:
        job = _receive(requests)
        if job is None:
            return
        module, parallel, types = job
        try:
            fn = cache.load_kernel(module, parallel)
            if fn is None:
                raise RuntimeError("the kernel cache is not usable from the worker")
            fn.compile(types)
            error = None
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        _send(replies, (error,))


if __name__ == "__main__":
    main()
