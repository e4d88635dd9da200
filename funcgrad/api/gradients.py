"""The public reverse-mode entry points: make_ir, grad, value_and_grad, vjp.

Each traces the call (calls.py), applies the reverse-mode transform (transforms/vjp.py) and
runs the result with the interpreter at first; tiering (funcgrad/tiering.py) swaps in the
compiled form (jit.py) once a signature is hot.
"""
from __future__ import annotations

import functools

import numpy as np

from ..interpreter import eval_program as _evaluate
from ..ir import Lit, Traced, aval_of
from ..primitives.elementwise import conjugate
from ..tiering import tiered
from ..transforms.vjp import vjp_program
from ..tree_util import tree_unflatten
from .calls import (Args, VjpPlan, argnums_tuple, check_holomorphic_inputs, check_scalar_output,
                    fn_name, split_out_aux,
                    to_numpy, trace_call, unflatten_grads)
from .jit import jit
from .vjp_jit import VjpJit

__all__ = ["make_ir", "eval_program", "grad", "value_and_grad", "vjp"]


def _holo(holomorphic):
    """The tiering kind's suffix: none for the usual real case (policy.explain's keys)."""
    return ("holomorphic",) if holomorphic else ()


def hashable_argnums(argnums):
    """argnums as part of a tiering kind (a list becomes a tuple)."""
    return tuple(argnums) if isinstance(argnums, list) else argnums


def make_ir(f, static_argnums=()):
    """Trace `f` and return its typed IR Program (prints readably).

        >>> print(fg.make_ir(lambda x: fnp.sum(fnp.sin(x) ** 2))(np.ones(3)))
        { lambda a:f64[3] . let b:f64[3] = sin a ... in ( d ) }
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(f, updated=())
    def traced(*args, **kwargs):
        a = Args(f, args, kwargs, static_argnums=static, trace_numbers=(int, float, complex))
        prog, consts, _ = trace_call(f, a, concrete=False)
        return prog
    return traced


def eval_program(prog, *args):
    """Run a Program (from fg.make_ir) with NumPy: the list of its outputs, as fresh arrays the
    caller owns (NumPy scalars for 0-d results), like a call of the function it was traced
    from. (Under a trace, the traced values.)

        >>> prog = fg.make_ir(lambda x: fnp.sum(x ** 2))(np.ones(3))
        >>> fg.eval_program(prog, np.arange(3.0))
        [np.float64(5.0)]
    """
    outs = _evaluate(prog, *args)
    if any(isinstance(a, Traced) for a in args):
        return outs
    shared = [a for a in args if isinstance(a, np.ndarray)] + [
        o.val for o in prog.outs if isinstance(o, Lit)]
    result = []
    for out in outs:
        out = np.asarray(out)
        if out.ndim == 0:
            result.append(out[()])
            continue
        if any(np.may_share_memory(out, s) for s in shared + result) or not out.flags.writeable:
            out = out.copy()
        result.append(out)
    return result


def value_and_grad(f, argnums=0, has_aux=False, holomorphic=False):
    """f and its gradient in one pass: returns (value, grad) or ((value, aux), grad).
    Runs in the interpreter at first and compiles once hot (see funcgrad.tiering). Complex
    inputs: see `grad`.

        >>> fg.value_and_grad(lambda x: fnp.sum(x ** 2))(np.array([1.0, 2.0]))
        (5.0, array([2., 4.]))
    """
    def make_jit():
        return jit(_value_and_grad(f, argnums, has_aux, holomorphic), same_bits=False)
    vg = tiered(f, ("value_and_grad", hashable_argnums(argnums), has_aux) + _holo(holomorphic), make_jit,
                 _value_and_grad(f, argnums, has_aux, holomorphic))
    vg = functools.wraps(f, updated=())(vg)
    vg.__name__ = f"value_and_grad_of_{fn_name(f)}"
    return vg


def _steepest(g):
    """The gradient of a real function of complex inputs, df/dx + i df/dy, from the cotangent
    reverse mode gives, df/dx - i df/dy (docs/conventions.md)."""
    return conjugate(g) if aval_of(g).dtype.kind == "c" else g


def _value_and_grad(f, argnums=0, has_aux=False, holomorphic=False):
    @functools.wraps(f, updated=())
    def value_and_grad_f(*args, **kwargs):
        nums, single = argnums_tuple(argnums, len(args), f)
        a = Args(f, args, kwargs, diff_argnums=nums)
        prog, consts, out_tree = trace_call(f, a)
        main, aux, main_tree, aux_tree = split_out_aux(f, prog.outs, out_tree, has_aux)
        check_scalar_output(f, prog, main_tree, has_aux, holomorphic)
        if holomorphic:
            check_holomorphic_inputs(f, a)
        wrt = [False] * len(consts) + a.diff_mask
        joint = vjp_program(prog, wrt, [True] + [False] * len(aux))
        ct = np.ones(prog.outs[0].aval.shape, prog.outs[0].aval.dtype)
        res = _evaluate(joint, *consts, *a.dyn_vals, ct)
        n_out = len(prog.outs)
        value = to_numpy(res[0])
        fix = (lambda g: g) if holomorphic else _steepest
        grads = unflatten_grads(a, [to_numpy(fix(g)) for g in res[n_out:]], nums)
        g = grads[0] if single else tuple(grads)
        if has_aux:
            aux_val = tree_unflatten(aux_tree, [to_numpy(x) for x in res[1:n_out]])
            return (value, aux_val), g
        return value, g
    value_and_grad_f.__name__ = f"value_and_grad_of_{fn_name(f)}"
    return value_and_grad_f


def grad(f, argnums=0, has_aux=False, holomorphic=False):
    """Gradient of a scalar function with respect to argument(s) `argnums` (int or tuple).
    Runs in the interpreter at first and compiles once hot (see funcgrad.tiering); the
    compiled form computes the gradient only (the value is dead code there).

    Complex inputs z = x + iy of a real-valued f: the gradient is df/dx + i df/dy, the
    direction of steepest ascent (PyTorch's and autograd's convention), so `z - lr * grad`
    descends. holomorphic=True, for a complex-valued f holomorphic in complex inputs: the
    complex derivative f'(z). See docs/conventions.md.

        >>> fg.grad(lambda x: x ** 2)(3.0)
        6.0
        >>> fg.grad(lambda z: fnp.abs(z) ** 2)(1.0 + 2.0j)
        (2+4j)
    """
    vg = _value_and_grad(f, argnums, has_aux, holomorphic)

    def gradient(*args, **kwargs):
        (val, g) = vg(*args, **kwargs)
        return (g, val[1]) if has_aux else g

    def make_jit():
        return jit(gradient, same_bits=False)
    grad_f = functools.wraps(f, updated=())(
        tiered(f, ("grad", hashable_argnums(argnums), has_aux) + _holo(holomorphic), make_jit,
               gradient))
    grad_f.__name__ = f"grad_of_{fn_name(f)}"
    return grad_f


def vjp(f, *primals, has_aux=False):
    """Evaluate f at primals and return (out, f_vjp) — plus aux if has_aux — where
    f_vjp(ct) gives one cotangent per primal (PyTorch: out.backward(gradient=ct)).
    Runs in the interpreter at first and compiles once hot (see funcgrad.tiering).

        >>> y, f_vjp = fg.vjp(fnp.sin, np.zeros(3)); f_vjp(np.ones(3))
        (array([1., 1., 1.]),)
    """
    def make_jit():
        return VjpJit(f, has_aux)
    return tiered(f, ("vjp", has_aux), make_jit, lambda *p: _vjp_interpreted(f, p, has_aux))(
        *primals)


def _vjp_interpreted(f, primals, has_aux):
    plan = VjpPlan(f, primals, has_aux)
    return plan.run(plan.args, lambda vals: _evaluate(plan.fwd, *vals),
                    lambda vals: _evaluate(plan.bwd, *vals))
