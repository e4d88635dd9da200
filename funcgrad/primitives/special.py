"""Primitives for user-controlled differentiation: stop_gradient, the output marker of
custom_vjp functions, and host callbacks (opaque NumPy code inside a traced function).

The public functions that bind them live in funcgrad/higher_order/custom.py.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .._errors import UnsupportedFunctionError, where
from ..ir import Aval
from .base import BatchRule, batched, define, full

stop_gradient_p = define(
    "stop_gradient", exact=True, moves=True, impl=lambda x: x, abstract=lambda a: a, differentiable=False, elementwise=True,
    doc="Identity forward; no derivative in any mode or order (PyTorch's detach).")


def _custom_vjp_abstract(*avals, spec):
    return tuple(avals[:spec.n_out])


def _custom_vjp_rule(cts, *ins, out, spec):
    """Call the user's bwd(residuals, output cotangents) -> one cotangent per differentiable
    argument (None means zero)."""
    n_out, n_res = spec.n_out, spec.n_res
    cts = [full(o.aval.shape if hasattr(o, "aval") else np.shape(o), 0, _dtype(o)) if c is None
           else c for c, o in zip(cts, out)]
    res = spec.residuals(ins[n_out:n_out + n_res])
    ct_tree = spec.out_unflatten(cts)
    arg_cts = spec.bwd(*spec.nondiff, res, ct_tree)
    return [None] * (n_out + n_res) + spec.arg_cotangents(arg_cts, ins[n_out + n_res:])


def _dtype(x):
    return x.aval.dtype if hasattr(x, "aval") else np.asarray(x).dtype


custom_vjp_p = define(
    "custom_vjp_call", exact=True, impl=lambda *xs, spec: tuple(xs[:spec.n_out]), abstract=_custom_vjp_abstract,
    vjp=_custom_vjp_rule, multiple_results=True, user_rule=True,
    doc="Marks the outputs of a custom_vjp function: identity on them; its vjp calls the "
        "user's bwd with the residuals of fwd.")


def _callback_impl(*xs, spec):
    out = np.asarray(spec.fn(*[np.asarray(x) for x in xs]))
    if out.shape != spec.aval.shape:
        raise ValueError(f"pure_callback: {spec.fn!r} returned shape {out.shape}, but "
                         f"result_shape_dtype says {spec.aval.shape}")
    return out.astype(spec.aval.dtype, copy=False)


def _callback_no_derivative(ct, *xs, out, spec):
    raise UnsupportedFunctionError(
        f"cannot differentiate through fg.pure_callback({getattr(spec.fn, '__name__', spec.fn)})"
        f"{where(ir._state.override[0])}: funcgrad cannot see inside NumPy code it calls back. "
        "Wrap the callback in an fg.custom_vjp and give its backward rule (PyTorch: "
        "torch.autograd.Function), or apply fg.stop_gradient to its inputs if no gradient "
        "should flow through it.")


pure_callback_p = define(
    "pure_callback", impl=_callback_impl, abstract=lambda *avals, spec: spec.aval,
    exact=True,                 # (the same NumPy code runs, interpreted or compiled)
    vjp=_callback_no_derivative, opaque=True, differentiable=False,
    doc="Calls a NumPy function on concrete arrays; shapes and dtypes of the results are given.")



def _debug_callback_impl(*xs, spec):
    spec(*[np.asarray(x) for x in xs])
    return np.bool_(True)


debug_callback_p = define(
    "debug_callback", exact=True, impl=_debug_callback_impl, abstract=lambda *avals, spec: Aval((), np.bool_),
    vjp=lambda ct, *xs, out, spec: (None,) * len(xs), differentiable=False, effect=True,
    doc="Calls spec.fn on the values for its effect (fg.debug.print, fg.debug.callback); the "
        "result is a dummy. Kept in program order, never removed as dead code.")


_barrier_ids = iter(range(1 << 62))


def _barrier_abstract(x, after, *, key):
    return x


remat_barrier_p = define(
    "remat_barrier", exact=True, moves=True, impl=lambda x, after, *, key: x, abstract=_barrier_abstract,
    vjp=lambda ct, x, after, *, out, key: (ct, None),
    batch=BatchRule(lambda prim: lambda ins, fl, size, *, key: prim.bind(
        batched(ins[0], fl[0], size), ins[1], key=key)), fresh_params=("key",),
    doc="Identity on x that is ordered after `after` and never merged with another equation: "
        "recomputation for checkpointing happens in the backward pass, not the forward.")


def remat_barrier(x, after):
    return remat_barrier_p.bind(x, after, key=next(_barrier_ids))


__all__ = ["stop_gradient_p", "custom_vjp_p", "pure_callback_p", "remat_barrier_p", "remat_barrier",
           "debug_callback_p"]
