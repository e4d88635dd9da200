"""User-controlled derivatives: stop_gradient, custom_vjp, pure_callback.

    >>> @fg.custom_vjp
    ... def clip_grad(x): return x
    >>> clip_grad.defvjp(lambda x: (x, None), lambda res, g: (fnp.clip(g, -1, 1),))

A custom_vjp function runs `fwd` while tracing and records the outputs through one marker
equation (custom_vjp_call) whose derivative calls `bwd`; the primal computation inside fwd
gets no cotangent, so nothing is counted twice. `bwd` is traced like any other code, so it can
be differentiated again (write it with funcgrad operations).
"""
from __future__ import annotations

import functools

import numpy as np

from .ir import Aval, Traced
from .primitives.special import custom_vjp_p, pure_callback_p, remat_barrier, stop_gradient_p
from .tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["stop_gradient", "custom_vjp", "custom_jvp", "checkpoint", "pure_callback"]


def stop_gradient(x):
    """Identity on values; blocks derivatives in every mode and order (PyTorch: x.detach(),
    requires_grad=False). Works on pytrees.

        >>> fg.grad(lambda x: x * fg.stop_gradient(x))(3.0)
        3.0
    """
    return tree_map(lambda v: stop_gradient_p.bind(v) if isinstance(v, Traced) else v, x)


def _is_traced_tree(tree):
    return any(isinstance(v, Traced) for v in tree_flatten(tree)[0])


class _Spec:
    """Static description of one custom_vjp call (hashable by identity)."""

    def __init__(self, bwd, nondiff, out_tree, out_avals, res_tree, res_slots, arg_tree, n_arg):
        self.bwd, self.nondiff = bwd, tuple(nondiff)
        self.out_tree, self.out_avals = out_tree, out_avals
        self.res_tree, self.res_slots, self.arg_tree = res_tree, res_slots, arg_tree
        self.n_out = len(out_avals)
        self.n_res = sum(1 for s in res_slots if s is None)
        self.n_arg = n_arg

    def residuals(self, traced):
        it = iter(traced)
        return tree_unflatten(self.res_tree, [next(it) if s is None else s[0] for s in self.res_slots])

    def out_unflatten(self, cts):
        return tree_unflatten(self.out_tree, list(cts))

    def arg_cotangents(self, arg_cts, arg_vals):
        if not isinstance(arg_cts, (tuple, list)):
            raise TypeError(f"custom_vjp: bwd must return a tuple with one cotangent per "
                            f"differentiable argument; it returned {type(arg_cts).__name__}")
        leaves, tree = tree_flatten(tuple(arg_cts), is_leaf=lambda x: x is None)
        if tree != self.arg_tree:
            raise TypeError(f"custom_vjp: bwd returned cotangents of structure {tree!r}; the "
                            f"differentiable arguments have structure {self.arg_tree!r}")
        return [None if c is None else c for c in leaves]

    def __repr__(self):
        return f"<bwd {getattr(self.bwd, '__name__', self.bwd)}>"


class custom_vjp:
    """A function with a hand-written reverse-mode derivative (PyTorch: autograd.Function).

    `fwd(*args) -> (out, residuals)`, `bwd(*nondiff_args, residuals, out_cotangent) -> tuple`
    with one cotangent per differentiable argument (None for zero).

        >>> f = fg.custom_vjp(lambda x: fnp.log1p(fnp.exp(x)))
        >>> f.defvjp(lambda x: (f(x), x), lambda x, g: (g / (1 + fnp.exp(-x)),))
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun, self.nondiff_argnums = fun, tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        self._in_fwd = False

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp function {self.__name__} has no rule: call "
                            ".defvjp(fwd, bwd) first")
        diff = [a for i, a in enumerate(args) if i not in self.nondiff_argnums]
        if self._in_fwd or not _is_traced_tree(diff):
            return self.fun(*args)          # plain call, or fwd calling the function itself
        self._in_fwd = True
        try:
            out, res = self.fwd(*args)
        finally:
            self._in_fwd = False
        out_leaves, out_tree = tree_flatten(out)
        res_leaves, res_tree = tree_flatten(res)
        arg_leaves, arg_tree = tree_flatten(tuple(diff))
        res_slots = [None if isinstance(r, (Traced, np.ndarray, np.generic)) else (r,)
                     for r in res_leaves]
        res_ops = [r for r, s in zip(res_leaves, res_slots) if s is None]
        nondiff = [args[i] for i in self.nondiff_argnums]
        out_avals = [Aval(np.shape(o), o.dtype if hasattr(o, "dtype") else np.asarray(o).dtype)
                     for o in out_leaves]
        spec = _Spec(self.bwd, nondiff, out_tree, out_avals, res_tree, res_slots, arg_tree,
                     len(arg_leaves))
        outs = custom_vjp_p.bind(*out_leaves, *res_ops, *arg_leaves, spec=spec)
        return tree_unflatten(out_tree, list(outs))


class _CallbackSpec:
    def __init__(self, fn, aval):
        self.fn, self.aval = fn, aval

    def __repr__(self):
        return f"<{getattr(self.fn, '__name__', 'callback')} -> {self.aval}>"


def pure_callback(fn, result_shape_dtype, *args):
    """Call a NumPy function `fn(*arrays)` from traced code (also from compiled code, through
    an interpreter round trip). `result_shape_dtype` is an array or anything with .shape and
    .dtype describing the result. No derivative of its own: combine with custom_vjp.

        >>> fg.pure_callback(scipy.special.erf, x, x)
    """
    aval = Aval(np.shape(result_shape_dtype), np.asarray(result_shape_dtype).dtype
                if not hasattr(result_shape_dtype, "dtype") else result_shape_dtype.dtype)
    spec = _CallbackSpec(fn, aval)
    if not any(isinstance(a, Traced) for a in args):
        return pure_callback_p.impl(*args, spec=spec)
    return pure_callback_p.bind(*args, spec=spec)


class custom_jvp:
    """A function with a hand-written forward-mode derivative.

    `rule(primals, tangents) -> (out, tangent_out)`, linear in the tangents and written with
    funcgrad operations. Reverse mode is derived by transposing the rule (reverse mode of
    `t -> rule(primals, t)[1]`), so grad, jvp, jit and vmap all use it.

        >>> f = fg.custom_jvp(lambda x: fnp.log1p(fnp.exp(x)))
        >>> f.defjvp(lambda p, t: (f(p[0]), t[0] / (1 + fnp.exp(-p[0]))))
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun, self.nondiff_argnums = fun, tuple(nondiff_argnums)
        self._vjp = None

    def defjvp(self, rule):
        from .api import vjp
        nd = self.nondiff_argnums
        fun = self.fun

        def split(args):
            return ([a for i, a in enumerate(args) if i not in nd],
                    [a for i, a in enumerate(args) if i in nd])

        def merge(diff, nondiff):
            it_d, it_n = iter(diff), iter(nondiff)
            return [next(it_n) if i in nd else next(it_d) for i in range(len(diff) + len(nondiff))]

        def fwd(*args):
            return fun(*args), args

        def bwd(*rest):
            nondiff, args, ct = rest[:-2], rest[-2], rest[-1]
            diff, _ = split(args)

            def tangent_map(*ts):
                return rule(tuple(merge(diff, nondiff)), tuple(merge(list(ts), [None] * len(nondiff))))[1]
            zeros = [tree_map(lambda a: a * 0.0, d) for d in diff]
            return vjp(tangent_map, *zeros)[1](ct)

        self._vjp = custom_vjp(fun, nondiff_argnums=nd).defvjp(fwd, bwd)
        self._rule = rule
        return self

    def __call__(self, *args):
        if self._vjp is None:
            raise TypeError(f"custom_jvp function {self.__name__} has no rule: call "
                            ".defjvp(rule) first")
        return self._vjp(*args)


def checkpoint(f, policy=None):
    """Rematerialisation (PyTorch: torch.utils.checkpoint): values computed inside f are not
    kept for the backward pass but recomputed from f's inputs, trading compute for memory.
    `policy` is reserved for choosing what may be saved; today nothing inside f is saved.

        >>> block = fg.checkpoint(lambda x: fnp.tanh(fnp.sin(x) * 3.0))
    """
    if policy is not None:
        raise NotImplementedError("checkpoint(policy=...) is not supported yet: everything "
                                  "inside the checkpointed function is recomputed")
    from .api import vjp

    def fwd(*args):
        return f(*args), args

    def bwd(args, ct):
        leaf = tree_flatten(ct)[0][0]
        fresh = [tree_map(lambda a: remat_barrier(a, leaf) if isinstance(a, Traced) else a, x)
                 for x in args]
        return vjp(f, *fresh)[1](ct)

    wrapped = custom_vjp(f).defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, f)
    return wrapped
