"""Pickling compiled functions: an fg.jit object travels as its traced programs, not as
Numba's compiled code (which does not pickle) or only as its Python function (which the
receiver would have to trace again, and which plain pickle cannot copy when it is a lambda
or a closure).

What a pickled JitFunction carries:
- its Python function, when it pickles (cloudpickle, when installed, copies lambdas and
  closures by value; plain pickle copies module-level functions by reference), pickled once,
  the first time the JitFunction is. Without it the receiver runs only the shipped
  signatures and says so for any other;
- for each signature compiled so far, the program as it is compiled (simplified, scalarized)
  and its output structure. The receiver compiles a shipped program on its first call of that
  signature without running the user's code: from the persistent kernel cache when it shares
  it (FUNCGRAD_CACHE_DIR, verified as always), else by compiling the same source once;
- a token: unpickling the same function again in one process (each Dask task does) gives the
  object already unpickled there, with its compiled kernels (the last MAX_RESTORED functions
  unpickled are kept).
"""
from __future__ import annotations

import collections
import pickle
import threading
import uuid

from .._errors import FuncgradError

__all__ = ["dumps", "restore_jit", "jit_state"]

# token -> JitFunction unpickled here, the most recent MAX_RESTORED kept alive with their kernels
# (a Dask worker unpickles the same function for every task: it compiles once)
_RESTORED: collections.OrderedDict = collections.OrderedDict()
MAX_RESTORED = 64
_LOCK = threading.Lock()


def dumps(obj):
    """obj as bytes (cloudpickle when installed: functions by value where they must be),
    or None when it cannot be pickled."""
    try:
        import cloudpickle
        return cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except ImportError:
        pass
    except Exception:               # (cloudpickle refuses what pickle refuses too)
        return None
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None


def jit_state(jf, entries):
    """The arguments of restore_jit for JitFunction jf; `entries`: (signature, program,
    output tree) of each compiled signature."""
    if getattr(jf, "_token", None) is None:
        jf._token = uuid.uuid4().hex
    f = getattr(jf, "_shipped_f", jf.f)       # (an unpickled function without its f: none)
    shipped = []
    for sig, prog, out_tree in entries:
        blob = dumps((sig, prog, out_tree))
        if blob is not None:
            shipped.append(blob)
    shipped += getattr(jf, "_shipped_blobs", {}).values()     # received, not yet compiled here
    if getattr(jf, "_f_blob", None) is None:        # (pickled once: Dask pickles every task)
        jf._f_blob = b"" if f is None else dumps(f) or b""
    return (jf._token, jf._f_blob or None, jf.static_argnums, jf.parallel, jf.background,
            tuple(shipped), jf.same_bits)


def restore_jit(make, token, f_blob, static_argnums, parallel, background, shipped,
                same_bits=None):
    """The JitFunction of a pickle: the one this process already unpickled under `token`, or
    a new one (`make(f, ...)`) holding the shipped programs until their signatures are
    called."""
    with _LOCK:
        jf = _RESTORED.get(token)
        if jf is not None:
            _RESTORED.move_to_end(token)
            return jf
        f = pickle.loads(f_blob) if f_blob is not None else None
        programs, blobs = {}, {}
        for blob in shipped:
            sig, prog, out_tree = pickle.loads(blob)
            programs[sig], blobs[sig] = (prog, out_tree), blob
        jf = make(f if f is not None else _without_function(programs), static_argnums,
                  parallel, background, same_bits)
        jf._token, jf._shipped, jf._shipped_blobs = token, programs, blobs
        jf._shipped_f = f
        _RESTORED[token] = jf
        while len(_RESTORED) > MAX_RESTORED:
            _RESTORED.popitem(last=False)
        return jf


def _without_function(programs):
    """The stand-in for a function that did not travel: tracing it raises."""
    def unavailable(*args, **kwargs):
        sigs = "; ".join(", ".join(map(repr, sig[2])) for sig in programs) or "none"
        raise FuncgradError(
            "This fg.jit function was unpickled without its Python function (plain pickle "
            "cannot copy a lambda, a closure or a function defined in __main__ of another "
            "process), so it runs only the signatures compiled before it was pickled "
            f"(arguments {sigs}), and these arguments need a new trace. Install cloudpickle "
            "(Dask does) or define the function at module level, importable where it runs.")
    unavailable.__name__ = "unpickled_jit_function"
    return unavailable
