"""The compiled forms of one fg.jit signature and how a call reaches them.

Entry: one kernel, how arguments go in (0-d arrays as scalars) and results come out (fresh
arrays the caller owns; api/jit.py). Paths: the kernels of a function whose Python control
flow reads traced values, one per path, each returning its guards' values (and returning
early when an `if`/`while` decision fails, backend/codegen.py). fast_key / tree_key: the
dispatch keys of calls that can skip argument processing (flat arrays; pytrees of arrays).
"""
from __future__ import annotations

import numpy as np

from .._errors import FuncgradError
from ..tree_util import tree_unflatten

__all__ = ["Entry", "Paths", "MISS", "PASS_SCALARS", "STALE", "all_hold", "fast_key", "guard_exits",
           "owned", "to_scalar", "tree_key"]


class Entry:
    """One compiled signature: kernel, how to pass arguments, how to rebuild outputs."""

    __slots__ = ("compiled", "out_tree", "scalar_in", "out_types", "fast", "hot", "fast_keys")

    def __init__(self, compiled, out_tree, in_avals, out_avals):
        self.compiled, self.out_tree = compiled, out_tree
        self.hot, self.fast_keys = True, []     # used since the last eviction sweep; _fast keys
        self.scalar_in = [a.ndim == 0 for a in in_avals]
        self.out_types = [a.dtype.type if a.ndim == 0 else None for a in out_avals]
        self.fast = self._fast_call()

    def fast_tree(self, leaves):
        """The call from the flattened leaves of pytree arguments (tree_key)."""
        return tree_unflatten(self.out_tree, self.run(leaves))

    def precompile(self, vals, elsewhere=False):
        """Have Numba compile the kernel for these arguments without running it (elsewhere:
        in the compile worker, backend/worker.py)."""
        self.compiled.precompile([to_scalar(v) if s else v for v, s in zip(vals, self.scalar_in)],
                                 elsewhere)

    def run(self, vals):
        args = [to_scalar(v) if s else v for v, s in zip(vals, self.scalar_in)]
        res = self.compiled(*args)
        return owned([t(r) if t is not None else r for r, t in zip(res, self.out_types)],
                     self.compiled.fresh_outs, args, self.compiled.consts)

    def _fast_call(self):
        """The call used from the dispatch fast path (arrays and plain scalars, as they came):
        as little Python as possible."""
        fn, consts, tree = self.compiled.fn, tuple(self.compiled.consts), self.out_tree
        fresh, types = self.compiled.fresh_outs, self.out_types
        if tree is None:
            return None
        scalar = self.scalar_in
        if any(scalar):                # 0-d arguments go in as scalars, as on the first call
            if len(scalar) == 1:
                def call(args):
                    return fn(to_scalar(args[0]), *consts)
            else:
                def call(args):
                    return fn(*[to_scalar(v) if s else v for v, s in zip(args, scalar)],
                              *consts)
        else:
            def call(args):
                return fn(*args, *consts)
        one = tree.node_type is None and len(types) == 1
        if one and types[0] is not None:    # one scalar result (a loss, a derivative)
            t0 = types[0]
            return lambda args: t0(call(args)[0])
        if one and fresh[0]:                 # one array the kernel allocated
            return lambda args: call(args)[0]
        if one and not any(scalar):
            return lambda args: _own_one(call(args)[0], (*args, *consts))
        # (scalar arguments are not arrays: owned() looks only at arrays)
        return lambda args: tree_unflatten(tree, owned([t(r) if t is not None else r for r, t in
                                                        zip(call(args), types)],
                                                       fresh, args, consts))


def to_scalar(v):
    """A 0-d argument as the scalar the kernel takes."""
    t = type(v)
    if t is np.ndarray:
        return v[()]
    return v if t in PASS_SCALARS else np.asarray(v)[()]


def _own_one(r, sources):
    for s in sources:
        if r is s or type(s) is np.ndarray and np.may_share_memory(r, s):
            return r.copy()
    return r if r.flags.writeable else r.copy()


def owned(results, fresh, args, consts):
    """Compiled results as fresh arrays the caller owns: a result the kernel may not have
    allocated itself (fresh[i] False: an input returned as it is, a reshape's view, a loop's
    unchanged carry, a constant, the same value twice) is copied when it shares memory with
    an argument, a captured constant (the same object on every call) or another result."""
    if all(fresh):
        return results
    seen = [s for s in (*args, *consts) if type(s) is np.ndarray]
    seen += [r for r, f in zip(results, fresh) if f and type(r) is np.ndarray]
    for i, r in enumerate(results):
        if not fresh[i] and type(r) is np.ndarray and r.ndim:
            r = results[i] = _own_one(r, seen)
            seen.append(r)
    return results



# Arguments that Numba accepts as they are: arrays, and scalars of these types
PASS_SCALARS = frozenset([float, int, bool, np.float64, np.float32, np.int64, np.int32, np.bool_])


def fast_key(args):
    """The dispatch key of arguments that can go straight to a compiled kernel, else None."""
    if len(args) == 1:
        x = args[0]
        t = type(x)
        return (x.shape, x.dtype) if t is np.ndarray else t if t in PASS_SCALARS else None
    return _keyed(args, PASS_SCALARS, [])


_TREE_SCALARS = frozenset([float, np.float64, np.float32, np.int64, np.int32, np.bool_])


def tree_key(td, leaves):
    """The dispatch key of pytree arguments whose leaves are all arrays (native byte order:
    others are converted, so never registered) or scalars that are traced; else None."""
    return _keyed(leaves, _TREE_SCALARS, [td])


def _keyed(values, scalars, key):
    """key with each value's (shape, dtype), or its type if it is one of `scalars`; None if a
    value is neither."""
    for x in values:
        t = type(x)
        if t is np.ndarray:
            key.append((x.shape, x.dtype))
        elif t in scalars:
            key.append(t)
        else:
            return None
    return tuple(key)


def guard_exits(first, guards):
    """The guards a kernel checks itself, returning early when one fails: the truth values
    (`if`, `while`, and/or/not), as (output index, value) from output `first` on."""
    return tuple((first + k, bool(value)) for k, (_, value, kind, _) in enumerate(guards)
                 if kind == "bool")


def _holds(got, value, kind):
    if kind == "bool":
        return bool(got) == bool(value)
    return np.array_equal(got, value)


def all_hold(got, expected):
    """Whether the guards' values `got` are the (value, kind) pairs a path was traced with."""
    return all(_holds(r, v, kind) for r, (v, kind) in zip(got, expected))


MISS = object()        # no compiled path's guards held
# what a kernel of a path not taken may raise where the right path would not
STALE = (FuncgradError, ArithmeticError, IndexError, ValueError)


def _fast_path(entry, n_out, expected):
    """args -> f's outputs if the guards hold, else MISS: the kernel called directly, the
    decisions compared as one tuple of bools (the common case)."""
    if any(entry.scalar_in) or not all(kind == "bool" for _, kind in expected):
        def general(args):
            try:
                res = entry.run(args)
            except STALE:
                return MISS
            if all_hold(res[n_out:], expected):
                return tree_unflatten(entry.out_tree, res[:n_out])
            return MISS
        return general
    fn, consts = entry.compiled.fn, tuple(entry.compiled.consts)
    want = tuple(bool(v) for v, _ in expected)
    types, fresh, tree = entry.out_types[:n_out], entry.compiled.fresh_outs[:n_out], entry.out_tree
    one = tree.node_type is None and n_out == 1     # one result: a scalar (t0) or an array
    t0, single = types[0] if n_out else None, len(want) == 1
    w0 = want[0] if single else None

    def run(args):
        try:
            res = fn(*args, *consts)
        except STALE:
            return MISS
        if (bool(res[1]) != w0) if single and n_out == 1 else tuple(map(bool, res[n_out:])) != want:
            return MISS
        if one:
            r = res[0]
            return t0(r) if t0 is not None else r if fresh[0] else _own_one(r, (*args, *consts))
        return tree_unflatten(tree, owned([t(r) if t is not None else r
                                           for r, t in zip(res[:n_out], types)],
                                          fresh, args, consts))
    return run


class Paths:
    """The compiled paths of one signature: (entry, number of f's outputs, guards, their user
    lines, a fast runner). Each kernel returns its guards' values after f's outputs; a call
    runs the most recently useful path first and keeps the first whose guards all hold."""

    __slots__ = ("paths", "hot", "fast_keys", "warned")

    def __init__(self):
        self.paths, self.hot, self.fast_keys, self.warned = [], True, [], False

    def add(self, entry, n_out, guards):
        expected = [(value, kind) for _, value, kind, _ in guards]
        self.paths.insert(0, (entry, n_out, expected, [src for *_, src in guards],
                              _fast_path(entry, n_out, expected)))

    def run(self, vals):
        """f's outputs from the first path whose guards hold (tried most recently useful
        first), else MISS. vals: the traced leaves (arrays, and plain scalars where the
        kernel takes them), as the dispatch fast path passes them too."""
        for k, path in enumerate(self.paths):
            out = path[4](vals)
            if out is not MISS:
                if k:
                    self.paths.insert(0, self.paths.pop(k))
                return out
        return MISS

    fast = fast_tree = run

    def changed(self, guards):
        """The user line of the first decision that differs from the latest path's."""
        _, _, expected, srcs, _ = self.paths[0]
        for (_, value, kind, src), (v, _k) in zip(guards, expected):
            if not _holds(value, v, kind):
                return src
        return guards[-1][3] if len(guards) > len(expected) else srcs[-1] if srcs else None
