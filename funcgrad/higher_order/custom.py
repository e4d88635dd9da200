"""User-controlled derivatives: stop_gradient, custom_vjp, custom_jvp, pure_callback, and
checkpoint (rematerialisation) with its policies and checkpoint_name.

    >>> @fg.custom_vjp
    ... def clip_grad(x): return x
    >>> clip_grad.defvjp(lambda x: (x, None), lambda res, g: (fnp.clip(g, -1, 1),))

A custom_vjp function runs `fwd` while tracing and records the outputs through one marker
equation (custom_vjp_call) whose derivative calls `bwd`; the primal computation inside fwd
gets no cotangent, so nothing is counted twice. `bwd` is traced like any other code, so it can
be differentiated again and compiled (write it with funcgrad operations; Python `if`/`while`
on its values is refused, with fg.cond / fg.while_loop to use instead: _BWD_WHY).
"""
from __future__ import annotations

import functools
import inspect
import threading

import numpy as np

from .._errors import ShapeError
from ..interpreter import eval_program
from ..ir import Aval, Eqn, Program, Traced, Var, aval_of, current_trace
from ..primitives.base import convert, define
from ..primitives.special import custom_vjp_p, pure_callback_p, remat_barrier, stop_gradient_p
from ..tracer import RULE_GIVEN, trace_flat
from ..transforms.vjp import active_vars, backward_pass, forward_pass, vjp_program
from ..tree_util import named_path, tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten

__all__ = ["stop_gradient", "custom_vjp", "custom_jvp", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "pure_callback", "host_holomorphic"]


def stop_gradient(x):
    """Identity on values; blocks derivatives in every mode and order (PyTorch: x.detach(),
    requires_grad=False). Works on pytrees.

        >>> fg.grad(lambda x: x * fg.stop_gradient(x))(3.0)
        3.0
    """
    return tree_map(lambda v: stop_gradient_p.bind(v) if isinstance(v, Traced) else v, x)


def _is_traced_tree(tree):
    return any(isinstance(v, Traced) for v in tree_flatten(tree)[0])


# Why a custom_vjp backward rule cannot branch on values (what ConcretizationError says there).
# Reverse mode records the rule into the gradient's program once, for every value of the
# residuals and cotangents: that program is what tiering and fg.jit compile and what fg.hessian
# differentiates again, so the rule must be traceable; calling it with the values of one call
# would give a gradient that neither compiles nor has a derivative of its own.
_BWD_WHY = ("it is traced inside a custom_vjp backward rule: reverse mode records the rule "
            "once for every value of its residuals and cotangents (the gradient's program, "
            "which fg.jit and tiering compile and fg.hessian differentiates again), not with "
            "one call's values")


class _Spec:
    """Static description of one custom_vjp call (hashable by identity)."""

    def __init__(self, bwd, nondiff, out_tree, out_avals, res_tree, res_slots, arg_tree, n_arg):
        self.rule, self.nondiff = bwd, tuple(nondiff)
        self.out_tree, self.out_avals = out_tree, out_avals
        self.res_tree, self.res_slots, self.arg_tree = res_tree, res_slots, arg_tree
        self.n_out = len(out_avals)
        self.n_res = sum(1 for s in res_slots if s is None)
        self.n_arg = n_arg
        self.identity = None

    @property
    def __trace_key__(self):
        """What makes two specs the same computation (tiering compares traces with it): the
        user's bwd, or for an internal rule (checkpoint) what it was built from."""
        return (self.identity or self.rule, self.nondiff, self.out_tree, self.out_avals,
                self.res_tree, self.res_slots, self.arg_tree, self.n_arg)

    def bwd(self, *args):
        """The user's backward rule applied to (nondiff args, residuals, cotangents), as reverse
        mode records it: Python control flow on its values is refused saying so (_BWD_WHY)."""
        trace = current_trace()
        if trace is None:
            return self.rule(*args)
        prev, trace.why = trace.why, _BWD_WHY
        try:
            return self.rule(*args)
        finally:
            trace.why = prev

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
        for k, (c, v) in enumerate(zip(leaves, arg_vals)):
            if c is None:
                continue
            got, want = aval_of(c), aval_of(v)
            if got.shape != want.shape:
                raise ShapeError(
                    f"custom_vjp: the bwd rule {self._rule_name()} returned a cotangent of shape "
                    f"{got.shape} for differentiable input {self._input_name(k)}, which has shape "
                    f"{want.shape}. bwd must return, for each differentiable argument, a value "
                    "of that argument's shape (sum over broadcast axes, e.g. g.sum(axis=0)).")
        return leaves

    def _rule_name(self):
        code = getattr(self.rule, "__code__", None)
        name = getattr(self.rule, "__name__", repr(self.rule))
        return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code else name

    def _input_name(self, k):
        """'args[1]' or 'args[0]["w"]': the k-th leaf of the differentiable arguments."""
        paths = tree_flatten_with_path(tree_unflatten(self.arg_tree, list(range(self.n_arg))))[0]
        return named_path("args", paths[k][0])

    def __repr__(self):
        return f"<bwd {getattr(self.rule, '__name__', self.rule)}>"


class custom_vjp:
    """A function with a hand-written reverse-mode derivative (PyTorch: autograd.Function).

    `fwd(*args) -> (out, residuals)`, `bwd(*nondiff_args, residuals, out_cotangent) -> tuple`
    with one cotangent per differentiable argument (None for zero).

        >>> f = fg.custom_vjp(lambda x: fnp.log1p(fnp.exp(x)))
        >>> f.defvjp(lambda x: (f(x), x), lambda x, g: (g / (1 + fnp.exp(-x)),))
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun, updated=())
        self.fun, self.nondiff_argnums = fun, tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        self._in_fwd = False

    @property
    def __funcgrad_reads__(self):
        """The user's rules, whose state tiering's guards walk as f's own (guards.py)."""
        return (self.fwd, self.bwd)

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
            with RULE_GIVEN:            # (bwd gives the derivative: float() in fwd drops none)
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
        spec.identity = getattr(self, "trace_identity", None)
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

        >>> import scipy.special
        >>> x = np.linspace(-1.0, 1.0, 3)
        >>> fg.pure_callback(scipy.special.erf, x, x)
        array([-0.84270079,  0.        ,  0.84270079])
    """
    aval = Aval(np.shape(result_shape_dtype), np.asarray(result_shape_dtype).dtype
                if not hasattr(result_shape_dtype, "dtype") else result_shape_dtype.dtype)
    spec = _CallbackSpec(fn, aval)
    if not any(isinstance(a, Traced) for a in args):
        return pure_callback_p.impl(*args, spec=spec)
    return pure_callback_p.bind(*args, spec=spec)


def host_holomorphic(fn, derivative):
    """fn, a NumPy function of one complex array (elementwise, holomorphic), called back from
    traced code (pure_callback), with derivative(z) -> f'(z), written with funcgrad operations,
    as its derivative in every mode and order. For SciPy's functions of a complex argument,
    which have no native code (fg.scipy.special.erf, erfc, digamma and fg.nn.erf)."""
    @custom_vjp
    def f(z):
        return pure_callback(fn, z, z)

    return f.defvjp(lambda z: (f(z), z), lambda z, ct: (ct * derivative(z),))


class custom_jvp:
    """A function with a hand-written forward-mode derivative.

    `rule(primals, tangents) -> (out, tangent_out)`, linear in the tangents and written with
    funcgrad operations. Reverse mode is derived by transposing the rule (reverse mode of
    `t -> rule(primals, t)[1]`), so grad, jvp, jit and vmap all use it.

        >>> f = fg.custom_jvp(lambda x: fnp.log1p(fnp.exp(x)))
        >>> f.defjvp(lambda p, t: (f(p[0]), t[0] / (1 + fnp.exp(-p[0]))))
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun, updated=())
        self.fun, self.nondiff_argnums = fun, tuple(nondiff_argnums)
        self._vjp = self._rule = None

    @property
    def __funcgrad_reads__(self):
        """The user's rule, whose state tiering's guards walk as f's own (guards.py)."""
        return (self._rule,)

    def defjvp(self, rule):
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
            return vjp_of(tangent_map, zeros, ct)

        self._vjp = custom_vjp(fun, nondiff_argnums=nd).defvjp(fwd, bwd)
        self._rule = rule
        return self

    def __call__(self, *args):
        if self._vjp is None:
            raise TypeError(f"custom_jvp function {self.__name__} has no rule: call "
                            ".defjvp(rule) first")
        return self._vjp(*args)


def vjp_of(fn, primals, ct):
    """The cotangents of fn's arguments at `primals` (None for non-float leaves) given the
    cotangent `ct` of its output: reverse mode (transforms/vjp.py) of fn traced there,
    evaluated at once (staged into the enclosing trace when ct is traced)."""
    leaves, in_tree = tree_flatten(list(primals))
    box = []

    def flat(*xs):
        out_leaves, out_tree = tree_flatten(fn(*tree_unflatten(in_tree, list(xs))))
        box.append(out_tree)
        return out_leaves
    avals = [Aval((), np.asarray(x).dtype, weak=True) if type(x) in (int, float, complex)
             else aval_of(x) for x in leaves]
    prog, consts = trace_flat(flat, avals, why=(
        "it is traced inside a custom_jvp rule, which reverse mode records once for every value "
        "(to transpose it)"))
    ct_leaves, ct_tree = tree_flatten(ct)
    if ct_tree != box[0]:
        raise ValueError(f"custom_jvp: the cotangent has structure {ct_tree!r}, the function's "
                         f"output {box[0]!r}")
    floats = [o.aval.is_float for o in prog.outs]
    for i, (c, o) in enumerate(zip(ct_leaves, prog.outs)):
        if aval_of(c).shape != o.aval.shape:
            raise ValueError(f"custom_jvp: cotangent {i} has shape {aval_of(c).shape}, but the "
                             f"rule's tangent output {i} has shape {o.aval.shape}")
    cts = [c if aval_of(c).dtype == o.aval.dtype else convert(c, o.aval.dtype)
           for c, o, f in zip(ct_leaves, prog.outs, floats) if f]
    wrt = [a.is_float for a in avals]
    joint = vjp_program(prog, [False] * len(consts) + wrt, floats)
    grads = iter(eval_program(joint, *consts, *leaves, *cts)[len(prog.outs):])
    return tuple(tree_unflatten(in_tree, [next(grads) if w else None for w in wrt]))


def checkpoint(f, policy=None, residual_dtype=None):
    """Rematerialisation (PyTorch: torch.utils.checkpoint): values computed inside f are not
    kept for the backward pass but recomputed from f's inputs, trading compute for memory.

    `policy(prim_name, params) -> bool` is asked once per equation of f's traced program
    whether that equation's outputs may be saved for the backward pass; saved values are
    stored, the rest is recomputed. See `fg.checkpoint_policies` for ready-made policies;
    None recomputes everything (same result as `checkpoint_policies.nothing_saveable`).

    `residual_dtype` (a floating dtype such as np.float32) stores what the checkpoint keeps
    for the backward pass (f's inputs and the values its policy saves) in that precision
    where theirs is higher, and converts them back there: float64 residuals take half the
    memory, and the gradient is computed from values rounded to float32 (relative error
    about 1e-7 per value, amplified by f's conditioning; not exact, so check_grads does not
    apply). f's outputs are unchanged; integers and constants f closes over are kept as
    they are. A value that is kept at full precision anyway (an argument the caller holds,
    or one another operation's derivative reads) is then stored twice: see what is stored
    with fg.saved_residuals. Chains of checkpointed blocks (h = block(h)) gain the most.

        >>> block = fg.checkpoint(lambda x: fnp.tanh(fnp.sin(x) * 3.0))
        >>> fg.grad(lambda x: fnp.sum(block(x)))(np.ones(3))    # sin and tanh recomputed
        >>> layer = lambda x: fnp.tanh(x @ np.eye(3))
        >>> mlp = fg.checkpoint(layer, policy=fg.checkpoint_policies.dots_saveable)
        >>> half = fg.checkpoint(layer, residual_dtype=np.float32)   # x kept as float32
    """
    policy = checkpoint_policies.nothing_saveable if policy is None else _check_policy(policy)
    return _checkpoint_with_policy(f, policy, _check_residual_dtype(residual_dtype))


# ---- checkpoint policies ----------------------------------------------------------------------

checkpoint_name_p = define(
    "checkpoint_name", exact=True, moves=True, impl=lambda x, *, name: x, abstract=lambda a, *, name: a, elementwise=True,
    vjp=lambda ct, x, *, out, name: (ct,),
    batch=lambda ins, fl, size, *, name: checkpoint_name_p.bind(ins[0], name=name),
    doc="Identity that names a value for a checkpoint policy (save_only_these_names). Only "
        "recorded while fg.checkpoint traces its function, which then removes it again, so "
        "it never reaches a compiled program.")
_naming = threading.local()   # .depth > 0 while fg.checkpoint traces f: checkpoint_name records


def checkpoint_name(x, name):
    """Identity on values that labels them `name` for the policy of an enclosing
    fg.checkpoint (`checkpoint_policies.save_only_these_names`); elsewhere it does nothing
    and records nothing. Works on pytrees.

        >>> W = np.eye(2)
        >>> f = fg.checkpoint(lambda x: fnp.sum(fg.checkpoint_name(fnp.tanh(x @ W), "hidden")),
        ...                   policy=fg.checkpoint_policies.save_only_these_names("hidden"))
        >>> fg.grad(f)(np.ones(2))              # tanh(x @ W) saved, not recomputed
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a str, got {type(name).__name__}")
    if not getattr(_naming, "depth", 0):
        return x
    return tree_map(lambda v: checkpoint_name_p.bind(v, name=name)
                    if isinstance(v, Traced) else v, x)


class checkpoint_policies:
    """Policies for `fg.checkpoint(f, policy=...)`. A policy is any callable
    `policy(prim_name: str, params: dict) -> bool`, asked once per equation of f's traced
    program (as printed by fg.make_ir: the primitive's name and its static parameters) whether
    the equation's outputs may be saved for the backward pass instead of being recomputed.

        >>> block = lambda x: fnp.exp(fnp.tanh(x @ np.eye(2)))
        >>> fg.checkpoint(block, policy=fg.checkpoint_policies.dots_saveable)
        >>> fg.checkpoint(block, policy=lambda name, params: name in ("contract", "exp"))
    """

    @staticmethod
    def everything_saveable(prim_name, params):
        """Save every intermediate (no recomputation; the memory use of no checkpoint)."""
        return True

    @staticmethod
    def nothing_saveable(prim_name, params):
        """Save nothing: recompute everything from f's inputs (the default)."""
        return False

    @staticmethod
    def dots_saveable(prim_name, params):
        """Save the results of matrix products (the `contract` primitive: matmul, dot,
        einsum, tensordot, ...); recompute the cheap elementwise work around them."""
        return prim_name == "contract"

    @staticmethod
    def save_only_these_names(*names):
        """A policy that saves exactly the values marked with fg.checkpoint_name(x, name)
        for a name in `names`.

            >>> policy = fg.checkpoint_policies.save_only_these_names("hidden")
        """
        bad = [n for n in names if not isinstance(n, str)]
        if bad:
            raise TypeError(f"save_only_these_names: names must be str, got {bad!r}")
        wanted = frozenset(names)

        def policy(prim_name, params):
            return prim_name == "checkpoint_name" and params.get("name") in wanted
        policy.__name__ = f"save_only_these_names{tuple(names)!r}"
        return policy


def _check_policy(policy):
    hint = ""
    if callable(policy):
        try:
            inspect.signature(policy).bind("contract", {})
            return policy
        except ValueError:            # no signature to inspect (a builtin): trust it
            return policy
        except TypeError:
            hint = " (it cannot be called with the two arguments prim_name, params)"
    elif isinstance(policy, str) and hasattr(checkpoint_policies, policy):
        hint = f" (did you mean fg.checkpoint_policies.{policy}?)"
    raise TypeError(f"checkpoint: policy must be a callable policy(prim_name, params) -> bool, "
                    f"such as fg.checkpoint_policies.dots_saveable; got {policy!r}{hint}")


def _check_residual_dtype(dtype):
    if dtype is None:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.kind != "f":
        raise TypeError(f"checkpoint: residual_dtype must be a floating dtype such as "
                        f"np.float32, got {dtype!r}")
    return dt


def _narrowed(aval, dtype):
    """The dtype a residual of `aval` is stored in under residual_dtype=dtype (None: as is)."""
    if dtype is None or aval.dtype.kind not in "fc":
        return None
    target = dtype if aval.dtype.kind == "f" else np.result_type(dtype, np.complex64)
    return target if target.itemsize < aval.dtype.itemsize else None


def _saved_vars(prog, policy):
    """The outputs of the equations that `policy` lets us save, in program order. Equations
    with a vjp_split rule (control flow) are always replayed: their backward pass needs
    values computed inside them."""
    return [v for e in prog.eqns if getattr(e.prim, "vjp_split", None) is None
            and policy(e.prim.name, dict(e.params)) for v in e.outputs]


def _without_names(prog, saved):
    """prog without its checkpoint_name equations (each use of a name reads the named value),
    and `saved` renamed to match (a saved name saves the value it names), less inputs and
    constants, which need no saving."""
    sub = {}
    read = lambda a: sub.get(a.id, a) if isinstance(a, Var) else a
    eqns = []
    for e in prog.eqns:
        if e.prim is checkpoint_name_p:
            sub[e.outputs[0].id] = read(e.inputs[0])
        else:
            eqns.append(Eqn(e.prim, [read(v) for v in e.inputs], e.outputs, e.params, e.src))
    inputs = {v.id for v in prog.in_vars}
    kept = {v.id: v for v in map(read, saved) if isinstance(v, Var) and v.id not in inputs}
    return Program(prog.in_vars, eqns, [read(o) for o in prog.outs]), list(kept.values())


def _checkpoint_with_policy(f, policy, residual_dtype=None):
    """checkpoint(f, policy): trace f to a Program, run it recording the values the policy
    saves as residuals, and in the backward pass replay the rest from the inputs (behind a
    remat_barrier, so it happens there and is never merged with the forward) and apply the
    vjp rules. Values f closes over from an enclosing transform are inputs too (they get
    their cotangents). residual_dtype: traced residuals of a wider float dtype are stored
    converted to it, and converted back behind the barrier."""
    @functools.wraps(f, updated=())
    def wrapped(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs))
        slots = [i for i, x in enumerate(leaves) if isinstance(x, Traced)]
        if not slots:
            return f(*args, **kwargs)
        out_box = []

        def flat_f(*tracers):
            full = list(leaves)
            for i, t in zip(slots, tracers):
                full[i] = t
            a, k = tree_unflatten(in_tree, full)
            out_leaves, out_tree = tree_flatten(f(*a, **k))
            out_box.append(out_tree)
            return out_leaves

        _naming.depth = getattr(_naming, "depth", 0) + 1
        try:
            prog, consts = trace_flat(flat_f, [leaves[i].aval for i in slots], why=(
                "it is traced inside a function given to fg.checkpoint, which funcgrad records "
                "once for every value (to replay it in the backward pass)"))
        finally:
            _naming.depth -= 1
        prog, saved = _without_names(prog, _saved_vars(prog, policy))
        active = active_vars(prog, [v.aval.is_float for v in prog.in_vars])

        def store(x, var):                # a residual as kept: narrowed by residual_dtype
            dtype = _narrowed(var.aval, residual_dtype) if isinstance(x, Traced) else None
            return x if dtype is None else convert(x, dtype)

        def fwd(*ins):
            res = eval_program(Program(prog.in_vars, prog.eqns, prog.outs + saved), *ins)
            outs, values = res[:len(prog.outs)], res[len(prog.outs):]
            return outs, ([store(x, v) for x, v in zip(ins, prog.in_vars)],
                          [store(x, v) for x, v in zip(values, saved)])

        def bwd(res, ct):
            ins, values = res
            leaf = next((c for c in ct if isinstance(c, Traced)), None)

            def bar(x, var):              # recompute after the cotangent exists: in backward
                if isinstance(x, Traced) and leaf is not None:
                    x = remat_barrier(x, leaf)
                return convert(x, var.aval.dtype)
            known = {v.id: bar(x, v) for v, x in zip(saved, values)}
            env, splits = forward_pass(prog, [bar(x, v) for x, v in zip(ins, prog.in_vars)],
                                       active, known)
            acc = backward_pass(prog, env, ct, active, splits)
            return tuple(acc.pop(v) for v in prog.in_vars)

        run = custom_vjp(lambda *ins: eval_program(prog, *ins)).defvjp(fwd, bwd)
        run.trace_identity = ("checkpoint", prog, saved, policy, residual_dtype)
        outs = run(*consts, *[leaves[i] for i in slots])
        return tree_unflatten(out_box[0], list(outs))
    wrapped.__funcgrad_reads__ = (policy,)     # (tiering's guards walk the policy too)
    return wrapped
