"""fg.debug: seeing inside a computation (docs/debugging.md).

`fg.debug_nans()` / `fg.debug_infs()` (also `fg.debug.nans`, `fg.debug.infs`; PyTorch's
`torch.autograd.detect_anomaly`, JAX's `jax_debug_nans`): inside the block (or the decorated
function) the first equation that makes a NaN (or an infinity) from inputs without one raises
FloatingPointError naming the operation and your line, and for a derived equation its role:
"NaN produced in the backward pass of sqrt at model.py:12 (by its divide)". The interpreter
checks after each equation; compiled kernels carry the checks as generated code (fused into
their loops), so the report comes from the run that failed, without running anything again.
Interpreted loops report the step. Environment: FUNCGRAD_DEBUG_NANS=1, FUNCGRAD_DEBUG_INFS=1.

`fg.grad_hook(x, fn)` (PyTorch's `x.register_hook(fn)`): x unchanged; in the backward pass
fn sees x's cotangent and may replace it.

`fg.debug.print(fmt, *args, **kwargs)` and `fg.debug.callback(fn, *args, **kwargs)`: run with
the values, interpreted and compiled, in loops and branches, in program order. Loops report
progress with their own `progress=` option. See docs/debugging.md.
"""
from __future__ import annotations

import builtins
import contextlib

import numpy as np

from . import _debug_nans
from .higher_order import custom_vjp, pure_callback
from .ir import Traced
from .primitives.special import debug_callback_p
from .tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["debug_nans", "debug_infs", "nans", "infs", "grad_hook", "print", "callback"]


class _Checking(contextlib.ContextDecorator):
    def __init__(self, nans, infs):
        self.kw = dict(nans=nans, infs=infs)
        self._stack = []

    def __enter__(self):
        cm = _debug_nans.checking(**self.kw)
        cm.__enter__()
        self._stack.append(cm)
        return self

    def __exit__(self, *exc):
        return self._stack.pop().__exit__(*exc)


def debug_nans(enabled=True):
    """A context manager (or decorator): raise FloatingPointError at the first operation
    that produces a NaN from inputs without one, in the forward or backward pass, interpreted
    or compiled, naming it and your line. Off by default; costs time while on.
    `debug_nans(False)` turns it off inside a block.

        >>> with fg.debug_nans():
        ...     fg.grad(lambda x: fnp.sum(fnp.sqrt(x)))(np.array([1.0, 4.0]))
        array([0.5 , 0.25])
    """
    return _Checking(nans=bool(enabled), infs=None)


def debug_infs(enabled=True):
    """As debug_nans, for infinities too: the first operation that makes a NaN or an inf from
    finite inputs raises FloatingPointError (overflow, log(0), division by zero).

        >>> with fg.debug_infs():
        ...     fg.jit(lambda x: fnp.exp(x))(np.array([1.0]))
        array([2.71828183])
    """
    return _Checking(nans=bool(enabled) or None, infs=bool(enabled))


nans, infs = debug_nans, debug_infs


def _hook_call(fn):
    """The callback run on a cotangent: fn's array, or the cotangent where fn returns None."""
    def call(ct):
        out = fn(ct)
        if out is None:
            return ct
        out = np.asarray(out)
        if out.shape != ct.shape:
            raise ValueError(f"grad_hook: {getattr(fn, '__name__', fn)} returned shape "
                             f"{out.shape} for a cotangent of shape {ct.shape}; return an "
                             "array of the same shape, or None to keep it")
        return out.astype(ct.dtype, copy=False)
    return call


def _replaced(fn):
    """ct -> fn's replacement, whose own derivative is the identity (a hook does not change
    what higher derivatives see, other than through the values it returns)."""
    call = _hook_call(fn)
    replace = custom_vjp(lambda ct: pure_callback(call, ct, ct))
    return replace.defvjp(lambda ct: (pure_callback(call, ct, ct), None),
                          lambda _, g: (g,))


def grad_hook(x, fn):
    """x itself, with a hook on its gradient (PyTorch's `tensor.register_hook(fn)`): when a
    backward pass reaches x, `fn(cotangent)` is called with the cotangent as a NumPy array;
    if it returns an array (same shape), that replaces the cotangent from there on, else the
    cotangent flows on unchanged. For inspecting or clipping gradients mid-graph. x may be a
    pytree (fn is called per leaf). The call leaves compiled code (an object-mode round
    trip), so it costs about a microsecond per call; inside a loop it runs at every step of
    the backward pass, last step first. In higher derivatives (grad of grad) the hook runs
    whenever a backward pass runs and its replacement counts as the identity there.

        >>> seen = []
        >>> f = lambda x: fnp.sum(fg.grad_hook(fnp.sin(x), lambda g: seen.append(g.copy())))
        >>> fg.grad(f)(np.zeros(2)), seen
        (array([1., 1.]), [array([1., 1.])])
    """
    replace = _replaced(fn)
    hooked = custom_vjp(lambda v: v).defvjp(lambda v: (v, None), lambda _, g: (replace(g),))
    return tree_map(hooked, x)


class _Callback:
    """fn called with the arguments rebuilt from the equation's arrays and the static leaves."""

    def __init__(self, fn, tree, slots):
        self.fn, self.tree, self.slots = fn, tree, slots

    def __call__(self, *arrays):
        it = iter(arrays)
        leaves = [next(it) if s is None else s[0] for s in self.slots]
        leaves = [x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in leaves]
        args, kwargs = tree_unflatten(self.tree, leaves)
        self.fn(*args, **kwargs)

    def __repr__(self):
        return f"<{getattr(self.fn, '__name__', 'callback')}>"


def callback(fn, *args, **kwargs):
    """Call fn(*args, **kwargs) for its effect with the values of traced arguments (NumPy
    arrays, 0-d ones as NumPy scalars), whenever the computation runs: interpreted or compiled
    (a round trip out of native code), inside loops (every step) and branches (when taken),
    in program order. Its result is ignored. Under differentiation it runs in the forward
    pass with the primal values; under fg.vmap once per example; a program compiled once
    calls it on every run (it is not a trace-time print). JAX's jax.debug.callback.

        >>> fg.jit(lambda x: fg.debug.callback(print, "x is", x) or x * 2)(np.array([1.0]))
        x is [1.]
        array([2.])
    """
    leaves, tree = tree_flatten((args, kwargs))
    if not any(isinstance(x, Traced) for x in leaves):
        fn(*args, **kwargs)
        return None
    slots = [None if isinstance(x, (Traced, np.ndarray, np.generic)) else (x,) for x in leaves]
    arrays = [x for x, s in zip(leaves, slots) if s is None]
    debug_callback_p.bind(*arrays, spec=_Callback(fn, tree, slots))
    return None


def print(fmt, *args, **kwargs):      # noqa: A001  (fg.debug.print, as jax.debug.print)
    """Print `fmt.format(*args, **kwargs)` with the values of traced arguments when the
    computation runs (see `callback`): inside fg.jit, loops and branches too, where Python's
    print would show a traced placeholder once at trace time.

        >>> fg.jit(lambda x: fg.debug.print("step: {x:.2f}", x=x) or x)(np.float64(0.5))
        step: 0.50
        np.float64(0.5)
    """
    callback(lambda *a, **kw: builtins.print(fmt.format(*a, **kw)), *args, **kwargs)
