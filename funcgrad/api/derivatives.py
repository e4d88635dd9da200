"""Forward mode and Jacobians: jvp, linearize, jacfwd, jacrev, hessian, hvp.

jvp uses transforms/jvp.py (forward mode derived from the reverse-mode rules); jacrev evaluates
one backward program per output element, jacfwd one linearized (tangent) program per input
element, so a function is traced once per call whatever the Jacobian's size. Inside another
transform (jit, grad) these loops unroll into the traced program.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from ..interpreter import eval_program
from ..ir import Lit, Program, Traced, aval_of
from ..numpy import reshape, transpose
from ..primitives.base import convert, zeros_like_aval
from ..tiering import tiered
from ..transforms.batching import vmap_program
from ..transforms.jvp import jvp_program
from ..transforms.vjp import split_program
from ..tree_util import tree_flatten, tree_unflatten
from .calls import (Args, VjpPlan, arg_names, argnums_tuple, fn_name, split_out_aux, to_numpy,
                    trace_call)
from .gradients import grad
from .jit import jit

__all__ = ["jvp", "linearize", "jacfwd", "jacrev", "hessian", "hvp"]


class _Linearized:
    """f's tangent map at fixed primals: forward part evaluated once, linear part per call."""

    def __init__(self, f, primals, has_aux=False):
        self.f = f
        self.args = a = Args(f, primals, {}, diff_argnums=tuple(range(len(primals))))
        prog, consts, out_tree = trace_call(f, a)
        main, aux, self.main_tree, self.aux_tree = split_out_aux(f, prog.outs, out_tree, has_aux)
        self.n_main, n_out = len(main), len(prog.outs)
        self.float_out = [o.aval.is_float for o in prog.outs]
        self.out_avals = [o.aval for o in prog.outs]
        jp = jvp_program(prog, [False] * len(consts) + a.diff_mask)
        fwd, self.lin, _ = split_program(jp, len(prog.in_vars), n_out)
        defined = {v.id for v in fwd.in_vars} | {v.id for e in fwd.eqns for v in e.outputs}
        if all(isinstance(o, Lit) or o.id in defined for o in fwd.outs):
            res = eval_program(fwd, *consts, *a.dyn_vals)
            self.outs, self.residuals = res[:n_out], res[n_out:]
        else:   # a loop computes values and tangents together: keep the whole program
            self.lin = Program(jp.in_vars, jp.eqns, jp.outs[n_out:])
            self.whole, self.n_out = jp, n_out        # (outputs computed when first asked)
            self.residuals = list(consts) + list(a.dyn_vals)
            self.outs = None
        self.primal_avals = [aval_of(v) for v, d in zip(a.dyn_vals, a.diff_mask) if d]

    def _outputs(self):
        if self.outs is None:           # the whole program, with zero tangents
            zeros = [zeros_like_aval(v.aval) for v in self.whole.in_vars[len(self.residuals):]]
            self.outs = eval_program(Program(self.whole.in_vars, self.whole.eqns,
                                             self.whole.outs[:self.n_out]), *self.residuals, *zeros)
        return self.outs

    def once(self, tangents):
        """The output tangents, computing the outputs in the same run where one program
        computes both (a loop): f runs once (fg.debug.print prints once)."""
        if self.outs is not None:
            return self(*tangents)
        res = eval_program(self.whole, *self.residuals, *self.tangent_leaves(tangents))
        self.outs, tans = res[:self.n_out], iter(res[self.n_out:])
        leaves = [to_numpy(next(tans)) if fl else np.zeros(av.shape, av.dtype)
                  for fl, av in zip(self.float_out, self.out_avals)]
        return tree_unflatten(self.main_tree, leaves[:self.n_main])

    def out(self):
        return tree_unflatten(self.main_tree, [to_numpy(o) for o in self._outputs()[:self.n_main]])

    def aux(self):
        return tree_unflatten(self.aux_tree, [to_numpy(o) for o in self._outputs()[self.n_main:]])

    def tangent_leaves(self, tangents):
        leaves, tree = tree_flatten(tuple(tangents))
        primal_tree = tree_flatten(tuple(self.args.rebuild(self.args.dyn_vals)[0]))[1]
        if tree != primal_tree or len(leaves) != len(self.primal_avals):
            raise ValueError(f"tangents {tree!r} do not match the primals' structure {primal_tree!r}")
        out = []
        for i, (t, av) in enumerate(zip(leaves, self.primal_avals)):
            if aval_of(t).shape != av.shape:
                raise ValueError(f"tangent {i} has shape {aval_of(t).shape}, but its primal has "
                                 f"shape {av.shape}")
            out.append(t if isinstance(t, Traced) and aval_of(t).dtype == av.dtype
                       else convert(t, av.dtype))
        return out

    def jacobian_blocks(self, in_avals):
        """The Jacobian, block per (output leaf, input leaf), from one batched (vmapped)
        tangent program applied to every one-hot tangent at once."""
        sizes = [a.size for a in in_avals]
        n, basis = _one_hot_rows(in_avals)
        zero = lambda oa, a: np.zeros(oa.shape + a.shape, a.dtype)   # (integer outputs too)
        if n == 0:
            return [[zero(oa, a) for a in in_avals] for oa in self.out_avals[:self.n_main]]
        n_res = len(self.residuals)
        batched = vmap_program(self.lin, [False] * n_res + [True] * len(basis), n)
        tans = iter(eval_program(batched, *self.residuals, *basis))
        stacked = [next(tans) if fl else None
                   for fl, av in zip(self.float_out, self.out_avals)][:self.n_main]
        blocks = []           # J[o][i]: out.shape + in.shape, cut from the stacked tangents
        for t, oa in zip(stacked, self.out_avals):
            if t is None:
                blocks.append([zero(oa, a) for a in in_avals])
                continue
            row, start = [], 0
            for a, size in zip(in_avals, sizes):
                part = _reshape(t[start:start + size], a.shape + oa.shape)
                part = _moveaxes(part, len(a.shape), len(oa.shape))
                row.append(part if isinstance(part, Traced) else to_numpy(part))
                start += size
            blocks.append(row)
        return blocks

    def __call__(self, *tangents):
        tans = iter(eval_program(self.lin, *self.residuals, *self.tangent_leaves(tangents)))
        leaves = [to_numpy(next(tans)) if fl else np.zeros(av.shape, av.dtype)
                  for fl, av in zip(self.float_out, self.out_avals)]
        return tree_unflatten(self.main_tree, leaves[:self.n_main])


def jvp(f, primals, tangents, has_aux=False):
    """Forward mode: (f(*primals), J @ tangents) — plus aux if has_aux.

        >>> fg.jvp(fnp.sin, (0.5,), (1.0,))
        (0.479..., 0.877...)
    """
    return tiered(f, ("jvp", has_aux), lambda: _jit_jvp(f, has_aux),
                   lambda p, t: _jvp(f, p, t, has_aux))(tuple(primals), tuple(tangents))


def _jvp(f, primals, tangents, has_aux):
    lin = _Linearized(f, primals, has_aux)
    tans = lin.once(tangents)
    res = (lin.out(), tans)
    return res + (lin.aux(),) if has_aux else res


def _jit_jvp(f, has_aux):
    return jit(lambda p, t: _jvp(f, p, t, has_aux), same_bits=False)


def linearize(f, *primals):
    """(f(*primals), f_jvp) where f_jvp(*tangents) = J @ tangents, reusing the forward pass.

        >>> y, f_jvp = fg.linearize(fnp.sin, 0.5); f_jvp(1.0)
    """
    lin = _Linearized(f, primals)
    return lin.out(), lin


def _select(f, args, nums, kwargs=None):
    """f as a function of the arguments in `nums` only (the others, and keyword arguments,
    held fixed); it keeps their parameter names for error messages."""
    kwargs = kwargs or {}

    def g(*sel):
        full = list(args)
        for i, s in zip(nums, sel):
            full[i] = s
        return f(*full, **kwargs)
    g.__name__ = fn_name(f)
    names = arg_names(f, len(args))
    g.__signature__ = inspect.Signature([inspect.Parameter(names[i] if names[i].isidentifier()
                                                           else f"arg{i}",
                                                           inspect.Parameter.POSITIONAL_ONLY)
                                         for i in nums])
    return g


def _reshape(x, shape):
    return reshape(x, shape) if isinstance(x, Traced) else np.asarray(x).reshape(shape)


def _moveaxes(x, n_in, n_out):
    """(in..., out...) -> (out..., in...)."""
    perm = tuple(range(n_in, n_in + n_out)) + tuple(range(n_in))
    return transpose(x, perm) if isinstance(x, Traced) else np.transpose(x, perm)


def _avals(leaves):
    return [aval_of(x if isinstance(x, Traced) else np.asarray(x)) for x in leaves]


def _one_hot_rows(avals):
    """Per aval, a (n, *shape) stack of one-hot arrays, n the total size: row r is 1 at the
    r-th element counted across all avals."""
    n = sum(a.size for a in avals)
    rows, start = [], 0
    for a in avals:
        eye = np.zeros((n, a.size), a.dtype)
        eye[start:start + a.size] = np.eye(a.size, dtype=a.dtype)
        rows.append(eye.reshape((n,) + a.shape))
        start += a.size
    return n, rows


def _reverse_blocks(g, sel, has_aux, in_avals):
    """Reverse-mode Jacobian blocks [out leaf][in leaf] (out.shape + in.shape), from one
    batched (vmapped) backward program applied to every one-hot output cotangent at once."""
    plan = VjpPlan(g, tuple(sel), has_aux)
    res = eval_program(plan.fwd, *plan.consts, *plan.args.dyn_vals)
    outs, residuals = res[:plan.n_out], res[plan.n_out:]
    out_leaves = [o if isinstance(o, Traced) else to_numpy(o) for o in outs[:plan.n_main]]
    out = tree_unflatten(plan.main_tree, out_leaves)
    aux = (tree_unflatten(plan.aux_tree, [o if isinstance(o, Traced) else to_numpy(o)
                                          for o in outs[plan.n_main:]]) if has_aux else None)
    float_avals = [a for a in plan.out_avals if a.is_float]
    n, rows = _one_hot_rows(float_avals)
    grads = [np.zeros((0,) + a.shape, a.dtype) for a in in_avals]
    if n:
        batched = vmap_program(plan.bwd, [False] * len(residuals) + [True] * len(rows), n)
        grads = eval_program(batched, *residuals, *rows)        # (n, *in.shape) per input leaf
    blocks, start = [], 0
    for oa in plan.out_avals:
        if not oa.is_float:
            blocks.append([np.zeros(oa.shape + a.shape, a.dtype) for a in in_avals])
            continue
        row = []
        for gr, a in zip(grads, in_avals):
            part = _reshape(gr[start:start + oa.size], oa.shape + a.shape)
            row.append(part if isinstance(part, Traced) else to_numpy(np.asarray(part, a.dtype)))
        blocks.append(row)
        start += oa.size
    return out, aux, plan.main_tree, blocks


def _check_complex(f, avals, holomorphic, what, mode):
    """Complex values in a Jacobian: only holomorphic functions have a complex one."""
    name = f"{mode}(holomorphic=True)" if holomorphic else mode
    for a in avals:
        if holomorphic and a.dtype.kind != "c":
            raise TypeError(f"{name} of {fn_name(f)}: its {what} must be complex, got "
                            f"{a.dtype.name}; leave holomorphic out for real functions")
        if not holomorphic and a.dtype.kind == "c":
            raise TypeError(
                f"{mode} of {fn_name(f)}: an {what} is complex ({a.dtype.name}), and a "
                "non-holomorphic function has no complex Jacobian. Pass holomorphic=True if "
                f"{fn_name(f)} is holomorphic (f'(z)); otherwise use fg.vjp / fg.jvp directly, "
                "fg.grad for a real loss, or the real and imaginary parts as real arrays.")


def _jacobian(f, argnums, has_aux, forward, holomorphic=False):
    """The Jacobian function, interpreted at first and compiled once hot (funcgrad.tiering)."""
    jac = _jacobian_interpreted(f, argnums, has_aux, forward, holomorphic)

    def make_jit():
        return jit(jac, same_bits=False)
    kind = ("jacfwd" if forward else "jacrev", repr(argnums), has_aux) + (
        ("holomorphic",) if holomorphic else ())
    return functools.wraps(f, updated=())(tiered(f, kind, make_jit, jac))


def _jacobian_interpreted(f, argnums, has_aux, forward, holomorphic=False):
    @functools.wraps(f, updated=())
    def jac(*args, **kwargs):
        nums, single = argnums_tuple(argnums, len(args), f)
        g = _select(f, args, nums, kwargs)
        sel = [args[i] for i in nums]
        sel_leaves, sel_tree = tree_flatten(tuple(sel))
        in_avals = _avals(sel_leaves)
        mode = "jacfwd" if forward else "jacrev"
        _check_complex(f, [a for a in in_avals if a.is_float], holomorphic, "input", mode)
        if forward:
            lin = _Linearized(g, sel, has_aux)
            out, aux = lin.out(), (lin.aux() if has_aux else None)
            out_tree = tree_flatten(out)[1]
            blocks = lin.jacobian_blocks(in_avals)
        else:
            out, aux, out_tree, blocks = _reverse_blocks(g, sel, has_aux, in_avals)
            _check_complex(f, _avals(tree_flatten(out)[0]), holomorphic, "output", mode)
        per_out = [tree_unflatten(sel_tree, row) for row in blocks]
        result = tree_unflatten(out_tree, [r[0] if single else r for r in per_out])
        return (result, aux) if has_aux else result
    return jac


def jacrev(f, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian by reverse mode (the backward pass batched over every output element): best
    for few outputs.
    Each output leaf of shape S_o gets, per differentiated argument leaf of shape S_a, an
    array of shape S_o + S_a. Complex inputs or outputs need holomorphic=True (the Jacobian
    of f'(z)); see docs/conventions.md.

        >>> fg.jacrev(lambda x: fnp.sin(x) * x)(np.ones(3)).shape
        (3, 3)
    """
    j = _jacobian(f, argnums, has_aux, forward=False, holomorphic=holomorphic)
    j.__name__ = f"jacrev_of_{fn_name(f)}"
    return j


def jacfwd(f, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian by forward mode (the tangent pass batched over every input element): best for
    few inputs. Complex inputs need holomorphic=True; a real input may have complex outputs.

        >>> fg.jacfwd(lambda x: fnp.sin(x) * x)(np.ones(3)).shape
        (3, 3)
    """
    j = _jacobian(f, argnums, has_aux, forward=True, holomorphic=holomorphic)
    j.__name__ = f"jacfwd_of_{fn_name(f)}"
    return j


def hessian(f, argnums=0, holomorphic=False):
    """Hessian of a scalar function, forward-over-reverse (jacfwd of jacrev); interpreted at
    first, compiled once hot (funcgrad.tiering).

        >>> fg.hessian(lambda x: fnp.sum(x ** 3))(np.ones(2))
        array([[6., 0.], [0., 6.]])
    """
    interpreted = _jacobian_interpreted(
        _jacobian_interpreted(f, argnums, False, False, holomorphic), argnums, False, True,
        holomorphic)

    def make_jit():
        return jit(interpreted, same_bits=False)
    kind = ("hessian", repr(argnums)) + (("holomorphic",) if holomorphic else ())
    h = functools.wraps(f, updated=())(tiered(f, kind, make_jit,
                                               interpreted))
    h.__name__ = f"hessian_of_{fn_name(f)}"
    return h


def hvp(f, primals, tangents):
    """Hessian-vector product without forming the Hessian: jvp of grad (forward-over-reverse).

        >>> fg.hvp(lambda x: fnp.sum(x ** 3), (np.ones(2),), (np.array([1.0, 0.0]),))
        array([6., 0.])
    """
    nums = tuple(range(len(primals)))
    g = grad(f, nums)
    out = jvp(lambda *p: g(*p), tuple(primals), tuple(tangents))[1]
    return out[0] if len(primals) == 1 else out

