"""Persistent kernel cache: compiled kernels are reused across processes.

Numba cannot cache functions made with `exec`, so each generated kernel is written as a small
standalone module, `<cache>/<key[:32]>/kernel.py`, and compiled with `numba.njit(cache=True)`,
which keeps its machine code in `__pycache__` beside the file. The key is a SHA-256 of the
module text (the generated source plus the objmode helpers it needs), the `parallel` flag and
the funcgrad, Numba, NumPy and Python versions. The text holds no user file or line
(codegen.without_locations): a function moved within or between files hits its entry.

Trust. The cache directory is created private (0o700) and must stay owned by the current user
and not writable by group or others; otherwise it is not used at all (one warning) and kernels
are compiled in memory. An entry whose directory or files are foreign-owned, group/world
writable or symlinks is removed and rebuilt (a warning); a `kernel.py` whose bytes differ from
the expected module (truncated, edited) is rebuilt. The file is never imported: the module is
executed from the text funcgrad just generated, and the file only gives Numba a stable path
and source stamp. Numba's own cache files are pickles, so they are trusted only through the
same ownership and permission checks.

Objmode helper parameters are written with a strict literal writer (numbers, bools, None,
strings via repr, tuples/lists, NumPy dtypes and scalars); a kernel with any other parameter
is not persisted, only compiled in memory.

Options (fg.config, or the environment variables FUNCGRAD_<NAME>): cache_dir relocates the
cache (`0`, `off`, `none` or `false` disable it), disable_cache disables it, cache_debug prints
`funcgrad-cache: hit|miss|rebuild <key>` to stderr. `clear_cache()` deletes the entries.
cache_max_mb (default 2048) limits the cache's size: adding a kernel past it deletes the least
recently used entries.
"""
from __future__ import annotations

import hashlib
import importlib.util
import linecache
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import warnings
import weakref

import numpy as np

from .. import _version
from .._config import config
from .._recent import Recent
from ..ir import Aval
from ..primitives import REGISTRY

__all__ = ["cache_dir", "clear_cache", "module_text", "load_kernel", "kernels", "KernelTable",
           "CacheWarning"]

_ENTRY_RE = re.compile(r"^[0-9a-f]{32}$")
_OFF = {"0", "off", "none", "false", "no"}
_warned: set = set()
stats = {"hit": 0, "miss": 0, "rebuild": 0}     # this process's lookups (for tests/debugging)


class CacheWarning(UserWarning):
    """The persistent kernel cache was not used, or an entry in it was rebuilt."""


def _warn(msg, once=True):
    if once:
        if msg in _warned:
            return
        _warned.add(msg)
    warnings.warn(msg, CacheWarning, stacklevel=4)


def _debug(event, key):
    stats[event] += 1
    if config.cache_debug:
        print(f"funcgrad-cache: {event} {key}", file=sys.stderr, flush=True)


def cache_dir():
    """The persistent kernel cache directory, or None when the cache is disabled.

    fg.config.cache_dir (FUNCGRAD_CACHE_DIR) if set, else $XDG_CACHE_HOME/funcgrad (default
    ~/.cache/funcgrad); None with fg.config.disable_cache or cache_dir "off".

        >>> fg.cache_dir()
        '/home/me/.cache/funcgrad'
    """
    if config.disable_cache:
        return None
    env = config.cache_dir.strip()
    if env:
        return None if env.lower() in _OFF else os.path.abspath(os.path.expanduser(env))
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if not base or not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "funcgrad")


def clear_cache():
    """Delete every cached kernel (on disk, and this process's table of compiled kernels).

    Only entries funcgrad made (`<32 hex digits>/` directories) are removed, so pointing
    fg.config.cache_dir at a shared directory never deletes anything else. Returns the number
    of entries removed. Kernels already held by jitted functions keep working.

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:       # a scratch cache, not your own
        ...     with fg.config.override(cache_dir=d):
        ...         fg.clear_cache()                       # nothing cached there yet
        0
    """
    kernels.clear()
    root = cache_dir()
    if root is None or not os.path.isdir(root):
        return 0
    removed = 0
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if _ENTRY_RE.match(name):
            if os.path.islink(path):
                os.unlink(path)
            else:
                shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


# -- the kernels of this process --------------------------------------------------------------

class KernelTable:
    """Kernels in this process by (module text, parallel): shared by every program that
    generates the same text while any jitted function uses them (`shared`, weakly), and the
    `keep` most recently used kept even when none does (`recent`: a fresh fg.jit(f) per
    notebook cell or loop iteration reuses them). `keep`: None for fg.config.max_kernels."""

    def __init__(self, keep=None):
        self.recent = Recent(lambda: config.max_kernels if keep is None else keep)   # strong
        self.shared = weakref.WeakValueDictionary()
        self.made = 0          # kernels compiled or loaded from the disk cache by this process
        self.lock = threading.Lock()

    def get_or_make(self, key, make):
        """The kernel of `key`, or make() (then kept); key None: make() and keep nothing."""
        with self.lock:
            fn = None if key is None else self.recent.get(key) or self.shared.get(key)
            if fn is None:
                self.made += 1
                fn = make()
            if key is not None:
                self.shared[key] = fn
                self.recent.put(key, fn)                  # the most recently used
            return fn

    def clear(self):
        with self.lock:
            self.recent.clear()
            self.shared.clear()


kernels = KernelTable()


# -- the module text --------------------------------------------------------------------------

def _lit(v):
    """Python source for v, or TypeError. Exact types only: no subclass reprs are trusted."""
    t = type(v)
    if v is None or t is bool or t is int:
        return repr(v)
    if t is float:
        return repr(v) if math.isfinite(v) else f"float({repr(str(v))})"
    if t is str:
        return repr(v)
    if t is tuple:
        return "(" + "".join(_lit(x) + ", " for x in v) + ")"
    if t is list:
        return "[" + ", ".join(_lit(x) for x in v) + "]"
    if isinstance(v, np.dtype):
        return _dtype_lit(v)
    if isinstance(v, np.generic) and type(v) is np.dtype(type(v)).type:
        return f"{_dtype_lit(v.dtype)}.type({_lit(v.item())})"
    raise TypeError(f"cannot write {t.__name__} into a cached kernel")


def _dtype_lit(dt):
    if dt.kind not in "biufc" or dt.fields is not None or dt.subdtype is not None:
        raise TypeError(f"cannot write dtype {dt} into a cached kernel")
    text = dt.name if np.dtype(dt.name) == dt else dt.str
    return f"np.dtype({text!r})"


def _aval_lit(a):
    if type(a) is not Aval:
        raise TypeError("output aval is not an Aval")
    return f"Aval({_lit(tuple(a.shape))}, {_dtype_lit(a.dtype)}{', True' if a.weak else ''})"


def module_text(source, impls):
    """The standalone module for a generated kernel, or None when a helper cannot be written
    as literals (then the kernel is compiled in memory only)."""
    lines = ['"""A kernel generated by funcgrad (funcgrad.backend.cache); safe to delete."""',
             "import math", "import numba", "import numpy as np",
             "from funcgrad.backend import vecmath as _vm"]
    if impls:
        lines += ["from funcgrad.backend.compile import objmode_call", "from funcgrad.ir import Aval",
                  "from funcgrad.primitives import REGISTRY", ""]
        try:
            for name in sorted(impls):
                prim, params, avals, where = impls[name]
                if (not name.isidentifier() or REGISTRY.get(prim.name) is not prim
                        or type(params) is not dict or any(type(k) is not str for k in params)):
                    return None
                items = ", ".join(f"{_lit(k)}: {_lit(params[k])}" for k in sorted(params))
                lines.append(f"{name} = objmode_call(REGISTRY[{_lit(prim.name)}], {{{items}}}, "
                             f"[{', '.join(_aval_lit(a) for a in avals)}], {_lit(where)})")
        except TypeError:
            return None
    return "\n".join(lines) + "\n\n\n" + source


def _versions():
    import numba
    return (f"funcgrad {_version.__version__}; numba {numba.__version__}; numpy {np.__version__}; "
            f"python {sys.version.split()[0]} {sys.implementation.name}; "
            f"vecmath {_vecmath_digest()}")


def _vecmath_digest():
    """Kernels inline vecmath's functions and those of the backend modules it re-exports
    (complexmath, debugmath, ...): a change to any of those files must not reuse old machine
    code."""
    global _VECMATH_DIGEST
    if _VECMATH_DIGEST is None:
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "vecmath.py"), "rb") as fh:
            text = fh.read()
        h = hashlib.sha256(text)
        for name in sorted(set(re.findall(rb"^from \.(\w+) import", text, re.M))):
            with open(os.path.join(here, name.decode() + ".py"), "rb") as fh:
                h.update(fh.read())
        _VECMATH_DIGEST = h.hexdigest()[:16]
    return _VECMATH_DIGEST


_VECMATH_DIGEST = None


def kernel_key(text, parallel):
    h = hashlib.sha256()
    for part in (_versions(), f"parallel={bool(parallel)}", text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _file_bytes(key, text):
    body = text.encode()
    header = f"# funcgrad-kernel key={key} sha256={hashlib.sha256(body).hexdigest()}\n"
    return header.encode() + body


# -- trust checks -----------------------------------------------------------------------------

_UID = os.getuid() if hasattr(os, "getuid") else None


def _untrusted(st, kind):
    """Why a stat result (from lstat) cannot be trusted, or None."""
    if not kind(st.st_mode):
        return "wrong file type (a link?)"
    if _UID is not None and st.st_uid != _UID:
        return f"owned by uid {st.st_uid}, not {_UID}"
    if _UID is not None and st.st_mode & 0o022:
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _tree_untrusted(entry):
    """Check an entry directory, its kernel.py and Numba's __pycache__ (every file in it)."""
    why = _untrusted(os.lstat(entry), stat.S_ISDIR)
    if why:
        return why
    for name in os.listdir(entry):
        path = os.path.join(entry, name)
        st = os.lstat(path)
        if name == "__pycache__":
            why = _untrusted(st, stat.S_ISDIR) or next(
                (w for n in os.listdir(path)
                 if (w := _untrusted(os.lstat(os.path.join(path, n)), stat.S_ISREG))), None)
        else:
            why = _untrusted(st, stat.S_ISREG)
        if why:
            return f"{name}: {why}"
    return None


def _root():
    """The cache directory, created private; None (after one warning) if it cannot be trusted."""
    root = cache_dir()
    if root is None:
        return None
    try:
        if not os.path.isdir(root):
            os.makedirs(os.path.dirname(root), exist_ok=True)
            try:
                os.mkdir(root, 0o700)
                os.chmod(root, 0o700)
            except FileExistsError:
                pass
        st = os.stat(root)          # the directory itself may be reached through a link
        why = _untrusted(st, stat.S_ISDIR)
    except OSError as e:
        why = str(e)
    if why:
        _warn(f"funcgrad: not using the kernel cache {root!r}: {why}; compiling in memory "
              "(fix the directory, set FUNCGRAD_CACHE_DIR, or FUNCGRAD_DISABLE_CACHE=1)")
        return None
    return root


def _write_atomic(path, data):
    """Write data to path (mode 0o600) via a temporary file, fsync and link/replace, so readers
    see either nothing or the whole file. An existing file is left alone (another process won)."""
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".kernel-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _read(path):
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _prepare_entry(root, key, data):
    """Make sure <root>/<key[:32]>/kernel.py holds exactly `data`; return (path, event)."""
    entry = os.path.join(root, key[:32])
    path = os.path.join(entry, "kernel.py")
    event = "hit"
    if os.path.lexists(entry):
        why = _tree_untrusted(entry)
        if why is None and os.path.lexists(path) and _read(path) != data:
            why = "kernel.py is corrupt or was modified"
        if why:
            event = "rebuild"
            _warn(f"funcgrad: ignoring and rebuilding cached kernel {entry!r}: {why}", once=False)
            if os.path.islink(entry) or not os.path.isdir(entry):
                os.unlink(entry)
            else:
                shutil.rmtree(entry)
    if not os.path.lexists(entry):
        try:
            os.mkdir(entry, 0o700)
            os.chmod(entry, 0o700)
        except FileExistsError:         # another process made it just now
            pass
        os.makedirs(os.path.join(entry, "__pycache__"), mode=0o700, exist_ok=True)
    if not os.path.lexists(path):
        event = "miss" if event == "hit" else event
        _write_atomic(path, data)
        if _read(path) != data:
            raise OSError(f"{path} does not hold the kernel just written")
    return path, event


def max_bytes():
    """The disk cache's size limit: fg.config.cache_max_mb (default 2048 MB)."""
    return int(config.cache_max_mb * 2 ** 20)


def _touch(entry):
    try:
        os.utime(entry)
    except OSError:
        pass


def _entry_bytes(entry):
    total = 0
    for folder, _, files in os.walk(entry):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def _prune(root, keep):
    """Past the size limit, delete the least recently used entries (by the time an entry was
    last made or loaded) until the cache is at 3/4 of the limit; never `keep`, the entry in
    use. Runs when a kernel is added, not on hits."""
    limit = max_bytes()
    entries, total = [], 0
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if not _ENTRY_RE.match(name) or os.path.islink(path) or path == keep:
            continue
        try:
            used = os.stat(path).st_mtime
        except OSError:
            continue
        size = _entry_bytes(path)
        entries.append((used, size, path))
        total += size
    total += _entry_bytes(keep)
    if total <= limit:
        return
    for _, size, path in sorted(entries):
        shutil.rmtree(path, ignore_errors=True)
        total -= size
        if total <= limit * 3 // 4:
            break


def load_kernel(text, parallel):
    """The Numba dispatcher for module `text` with the on-disk cache, or None when the cache is
    disabled or unusable (the caller then compiles in memory)."""
    root = _root()
    if root is None:
        return None
    key = kernel_key(text, parallel)
    data = _file_bytes(key, text)
    try:
        path, event = _prepare_entry(root, key, data)
    except OSError as e:
        _warn(f"funcgrad: kernel cache {root!r} unusable ({e}); compiling in memory")
        return None
    _debug(event, key)
    entry = os.path.dirname(path)
    if event == "hit":
        _touch(entry)                   # recency, for the size limit's least-recently-used order
    else:
        _prune(root, keep=entry)
    import numba
    name = f"_funcgrad_kernel_{key[:32]}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        text = data.decode()            # the verified bytes; the file is not read again
        linecache.cache[path] = (len(text), None, text.splitlines(True), path)
        code = compile(text, path, "exec")
        sys.modules[name] = module     # Numba finds the globals of a cached kernel by module name
        try:
            exec(code, module.__dict__)
        except BaseException:
            del sys.modules[name]
            raise
    return numba.njit(error_model="numpy", parallel=parallel, cache=True)(module.kernel)
