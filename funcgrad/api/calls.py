"""Arguments in, results out: what every public entry point (grad, vjp, jit, jacfwd, vmap...)
does around the transform it applies.

Flattens pytree arguments and decides which leaves are traced (arrays, and numbers being
differentiated) and which are static (other Python values of arguments not being
differentiated), checks inputs and outputs with clear errors, traces the call (`trace_call`),
holds the traced vjp of one signature (`VjpPlan`), and converts results to NumPy (NumPy scalars
for 0-d). The lowest module of the public API: gradients, derivatives, vmap and jit share it by
these public names, and it imports none of them.
"""
from __future__ import annotations

import inspect
import types

import numpy as np

from .._errors import IntegerInputError, NonScalarOutputError, SourceInfo, UnsupportedDtypeError
from ..interpreter import eval_program
from ..ir import Aval, Program, Traced, aval_of
from ..primitives.base import convert
from ..tracer import trace_flat
from ..transforms.vjp import split_program, vjp_program
from ..tree_util import named_path, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["Args", "VjpPlan", "argnums_tuple", "arg_names", "check_scalar_output", "evaluate",
           "fn_name", "fn_where", "split_out_aux", "to_numpy", "trace_call", "unflatten_grads"]


def fn_name(f):
    return getattr(f, "__name__", type(f).__name__)


def fn_where(f):
    """' (defined at file:line)' for a Python function, else ''."""
    code = getattr(inspect.unwrap(f), "__code__", None)
    if code is None:
        return ""
    return f" (defined at {SourceInfo(code.co_filename, code.co_firstlineno, code.co_name).long()})"


def arg_names(f, nargs):
    if type(f) is types.FunctionType and not hasattr(f, "__wrapped__") and not hasattr(
            f, "__signature__"):           # a plain function: its code says it (fast, per call)
        code = f.__code__
        pos = code.co_varnames[:code.co_argcount]
        return [pos[i] if i < len(pos) else f"args[{i}]" for i in range(nargs)]
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(nargs):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        else:
            names.append(f"args[{i}]")
    return names


def argnums_tuple(argnums, nargs, f):
    single = isinstance(argnums, (int, np.integer))
    nums = (int(argnums),) if single else tuple(int(a) for a in argnums)
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(f"argnums={argnums!r} but {fn_name(f)} was called with {nargs} "
                             "positional argument(s)")
    return tuple(a % nargs for a in nums), single


def _is_array_like(x):
    return isinstance(x, (Traced, np.ndarray, np.generic))


class Args:
    """Flattened call arguments: traced leaves (with labels), static leaves, and how to rebuild."""

    def __init__(self, f, args, kwargs, diff_argnums=(), static_argnums=(), trace_numbers=()):
        names = arg_names(f, len(args))
        self.tree_args = []
        self.dyn_vals, self.diff_mask = [], []
        self._where = []         # per traced leaf: (argument number, leaf number), for labels
        self._named = []         # per argument: (its name, the argument), for labels
        self.slots = []          # per leaf: index into dyn_vals, or ("static", value)
        all_args = list(args) + [kwargs]
        names = names + ["kwargs"]
        self.trees = []
        self.converted = False   # a leaf was converted (a byte-swapped array made native)
        for i, (arg, name) in enumerate(zip(all_args, names)):
            diff = i in diff_argnums
            static = i in static_argnums
            leaves, td = tree_flatten(arg)
            self.trees.append(td)
            self._named.append((name, arg))
            for j, leaf in enumerate(leaves):
                if isinstance(leaf, np.ndarray) and (type(leaf) is not np.ndarray
                                                     or not leaf.dtype.isnative):
                    leaf = self._plain_array(f, leaf, self._label(i, j))
                elif is_foreign_array(leaf):
                    raise TypeError(foreign_array_message(f, leaf, self._label(i, j)))
                if diff:
                    leaf = _check_diff_leaf(f, leaf, lambda: self._label(i, j))
                if not static and (_is_array_like(leaf) or diff or (
                        trace_numbers and isinstance(leaf, trace_numbers))):
                    self.slots.append(len(self.dyn_vals))
                    self.dyn_vals.append(leaf)
                    self._where.append((i, j))
                    self.diff_mask.append(diff)
                else:
                    self.slots.append(("static", leaf))
        self.nargs = len(args)

    @property
    def labels(self):
        """The traced leaves' names as the user wrote them (`params['w']`), for errors and IR
        (made when asked: a compiled call never needs them)."""
        paths = {}                   # argument number -> its leaves' paths
        for i, _ in self._where:
            if i not in paths:
                paths[i] = [p for p, _ in tree_flatten_with_path(self._named[i][1])[0]]
        return [named_path(self._named[i][0], paths[i][j]) for i, j in self._where]

    def _label(self, i, j):
        """The name of leaf j of argument i: `params['w']` (for an error about one leaf)."""
        name, arg = self._named[i]
        return named_path(name, tree_flatten_with_path(arg)[0][j][0])

    def _plain_array(self, f, x, label):
        """An ndarray subclass or a byte-swapped array as the plain native array it stands
        for, or a clear refusal where converting would change the meaning (a mask, np.matrix)."""
        if isinstance(x, np.ma.MaskedArray):
            raise UnsupportedDtypeError(
                f"{fn_name(f)}: argument {label} is a masked array; funcgrad would lose its mask. "
                f"Pass {label.split('[')[0]}.filled(value), or the data and the mask as two "
                "arguments and use fnp.where(mask, fill, x) inside the function (np.ma.getdata "
                "ignores the mask on purpose).")
        if isinstance(x, np.matrix):
            raise UnsupportedDtypeError(
                f"{fn_name(f)}: argument {label} is an np.matrix, whose * is a matrix product; "
                f"pass np.asarray({label.split('[')[0]}) and use @ for matrix products.")
        x = np.asarray(x)
        if not x.dtype.isnative:                # big-endian data: same values, native order
            x = x.astype(x.dtype.newbyteorder("="))
        self.converted = True
        return x

    def avals(self):
        """Avals of the traced leaves; Python numbers are weakly typed (promote like scalars)."""
        return [Aval((), np.asarray(v).dtype, weak=True) if type(v) in (int, float, complex)
                else aval_of(v) for v in self.dyn_vals]

    def rebuild(self, dyn):
        leaves = [dyn[s] if isinstance(s, int) else s[1] for s in self.slots]
        out, k = [], 0
        for td in self.trees:
            out.append(tree_unflatten(td, leaves[k:k + td.num_leaves]))
            k += td.num_leaves
        return out[:-1], out[-1]

    def leaf_counts(self):
        """Number of traced leaves per positional argument."""
        counts, k = [], 0
        for td in self.trees[:-1]:
            counts.append(sum(1 for s in self.slots[k:k + td.num_leaves] if isinstance(s, int)))
            k += td.num_leaves
        return counts


def is_foreign_array(x):
    """Another library's array (JAX, PyTorch, CuPy, pandas): it converts to a NumPy array."""
    return (hasattr(type(x), "__array__") and not isinstance(x, (np.ndarray, np.generic, Traced))
            and not isinstance(x, type))


def foreign_array_message(f, x, label):
    t = type(x)
    return (f"{fn_name(f)}: argument {label} is a {t.__module__}.{t.__qualname__}, not a NumPy "
            "array. funcgrad computes on NumPy arrays (its results are NumPy arrays too): pass "
            f"np.asarray({label.split('[')[0]}) (PyTorch: tensor.detach().numpy()).")


def _check_diff_leaf(f, leaf, label_of):
    """leaf, or an error naming it (label_of(): its name) when it cannot be differentiated."""
    if isinstance(leaf, float) or type(leaf) is np.ndarray and leaf.dtype.kind in "fc":
        return leaf
    label = label_of()
    if isinstance(leaf, (bool, np.bool_)) or isinstance(leaf, int):
        dtype = np.dtype(bool) if isinstance(leaf, (bool, np.bool_)) else np.dtype(int)
    elif _is_array_like(leaf):
        dtype = aval_of(leaf).dtype
    elif isinstance(leaf, (float, complex)):
        return leaf
    else:
        raise TypeError(f"{fn_name(f)}: argument {label} is a {type(leaf).__name__}, which cannot "
                        "be differentiated; pass a float or a NumPy array, or leave it out of argnums")
    if dtype.kind not in "fc":
        raise IntegerInputError(
            f"cannot differentiate {fn_name(f)} with respect to argument {label}: it has dtype "
            f"{dtype.name}, and only floating-point inputs have gradients. Pass a float array "
            f"(e.g. np.asarray({label.split('[')[0]}, dtype=float), or 3.0 instead of 3), or leave "
            "it out of argnums (PyTorch: requires_grad=False).")
    return leaf


def trace_call(f, a: Args, concrete=True, guards=None):
    """Trace f on the arguments a. concrete: trace this one call, whose values Python
    control flow may read (funcgrad.tracer: dynamic Python), else a program for every value
    of the same shapes and dtypes (fg.jit, make_ir). Decisions go to the list `guards`."""
    tree_box = []

    def flat_fn(*tracers):
        args, kwargs = a.rebuild(tracers)
        out = f(*args, **kwargs)
        leaves, td = tree_flatten(out)
        tree_box.append(td)
        for leaf in leaves:
            if not (_is_array_like(leaf) or isinstance(leaf, (int, float, complex, bool))):
                raise TypeError(f"{fn_name(f)} returned a {type(leaf).__name__}; outputs must be "
                                "arrays, numbers, or containers (tuple/list/dict) of them")
        return leaves

    prog, consts = trace_flat(flat_fn, a.avals(), a.labels,
                              values=a.dyn_vals if concrete else None, guards=guards,
                              diff=a.diff_mask, why=None if concrete else _ABSTRACT_WHY)
    return prog, consts, tree_box[0]


_ABSTRACT_WHY = ("fg.make_ir records the function once for every value of the arguments' "
                 "shapes and dtypes")


def to_numpy(x):
    """An interpreted result as the caller gets it: a NumPy scalar for 0-d, else a fresh copy
    (the interpreter may hand back an argument, a captured constant, a stored residual or a
    view of one; copying costs little next to interpreting)."""
    if isinstance(x, Traced):
        return x
    x = np.asarray(x)
    if x.ndim == 0:
        return x[()]
    return x.copy()


def split_out_aux(f, out_leaves, out_tree, has_aux):
    """(main output leaves, aux leaves, main tree, aux tree)."""
    if not has_aux:
        return out_leaves, [], out_tree, None
    if out_tree.node_type not in (tuple, list) or len(out_tree.children) != 2:
        raise TypeError(f"has_aux=True requires {fn_name(f)} to return a pair (output, aux); "
                        f"it returned {out_tree!r}")
    main_tree, aux_tree = out_tree.children
    n = main_tree.num_leaves
    return out_leaves[:n], out_leaves[n:], main_tree, aux_tree


def check_scalar_output(f, prog, main_tree, has_aux, holomorphic=False):
    if main_tree.num_leaves != 1 or main_tree.node_type is not None:
        hint = "" if has_aux else " To return extra values, use has_aux=True and return (loss, aux)."
        raise NonScalarOutputError(
            f"grad requires {fn_name(f)}{fn_where(f)} to return one scalar, but it returned "
            f"a {main_tree!r}.{hint}")
    aval = prog.outs[0].aval
    if aval.size != 1:
        raise NonScalarOutputError(
            f"grad requires {fn_name(f)}{fn_where(f)} to return a scalar (or one-element array), "
            f"but it returned an array of shape {aval.shape}. For the gradient of a weighted sum "
            "of the outputs (PyTorch's y.backward(gradient=v)) use `out, f_vjp = fg.vjp(f, x); "
            "f_vjp(v)`; for a sum of outputs, return fnp.sum(...).")
    if not aval.is_float:
        raise TypeError(f"grad requires {fn_name(f)} to return a floating-point value; it "
                        f"returned dtype {aval.dtype.name}")
    if holomorphic and aval.dtype.kind != "c":
        raise TypeError(f"grad(holomorphic=True) requires {fn_name(f)}{fn_where(f)} to return "
                        f"a complex value; it returned dtype {aval.dtype.name}. For a "
                        "real-valued function of complex inputs leave holomorphic out.")
    if aval.dtype.kind == "c" and not holomorphic:
        raise TypeError(
            f"grad requires {fn_name(f)}{fn_where(f)} to return a real value; it returned "
            f"dtype {aval.dtype.name}. A complex output has no gradient unless the function is "
            "holomorphic: use fg.grad(f, holomorphic=True) for f'(z), return a real loss such "
            "as fnp.abs(out) ** 2 or fnp.real(out), or use fg.vjp / fg.jacfwd for the "
            "derivative of each part.")


def check_holomorphic_inputs(f, a):
    """holomorphic=True differentiates with respect to complex inputs only."""
    for leaf, diff, label in zip(a.dyn_vals, a.diff_mask, a.labels):
        if diff and aval_of(leaf).dtype.kind != "c":
            raise TypeError(
                f"grad(holomorphic=True) of {fn_name(f)}: argument {label} has dtype "
                f"{aval_of(leaf).dtype.name}; a holomorphic derivative is taken with respect to "
                f"complex inputs only. Pass it as complex ({label.split('[')[0]} + 0j) or "
                "leave it out of argnums.")


def unflatten_grads(a: Args, grads, argnums):
    """Input cotangents (flat, in traced-leaf order) -> one pytree per differentiated argument."""
    it = iter(grads)
    diff_positions = {i for i, d in enumerate(a.diff_mask) if d}
    per_arg, k = {}, 0
    for i, td in enumerate(a.trees[:-1]):
        slots = a.slots[k:k + td.num_leaves]
        per_arg[i] = tree_unflatten(td, [next(it) if isinstance(s, int) and s in diff_positions
                                         else None for s in slots])
        k += td.num_leaves
    return [per_arg[i] for i in argnums]


class VjpPlan:
    """The traced vjp of f for one signature: forward program (primals -> outputs and
    residuals) and backward program (residuals and cotangents -> input cotangents).
    guards: a list that receives the decisions of Python control flow on traced values; their
    values are then forward outputs too (after f's), for a compiled plan to check."""

    def __init__(self, f, primals, has_aux, concrete=True, guards=None):
        self.f, self.has_aux = f, has_aux
        self.nums = tuple(range(len(primals)))
        self.args = a = Args(f, primals, {}, diff_argnums=self.nums)
        prog, self.consts, out_tree = trace_call(f, a, concrete, guards)
        main, aux, self.main_tree, self.aux_tree = split_out_aux(f, prog.outs, out_tree, has_aux)
        self.n_guards = len(guards or ())
        if self.n_guards:
            prog = Program(prog.in_vars, prog.eqns, list(prog.outs) + [g[0] for g in guards])
        self.n_main, self.n_out = len(main), len(prog.outs)
        ct_mask = [o.aval.is_float for o in main] + [False] * (len(aux) + self.n_guards)
        joint = vjp_program(prog, [False] * len(self.consts) + a.diff_mask, ct_mask)
        self.fwd, self.bwd, _ = split_program(joint, len(prog.in_vars), self.n_out)
        self.out_avals = [o.aval for o in main]

    def cotangents(self, ct):
        """Check ct against the output structure; convert leaves to the outputs' dtypes."""
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != self.main_tree:
            raise ValueError(f"cotangent structure {ct_tree!r} does not match the output "
                             f"structure {self.main_tree!r} of {fn_name(self.f)}")
        cts = []
        for i, (c, av) in enumerate(zip(ct_leaves, self.out_avals)):
            if not av.is_float:
                continue
            cav = aval_of(c)
            if cav.shape != av.shape:
                raise ValueError(f"cotangent {i} has shape {cav.shape}, but output {i} of "
                                 f"{fn_name(self.f)} has shape {av.shape}")
            cts.append(c if isinstance(c, Traced) and cav.dtype == av.dtype
                       else convert(c, av.dtype))
        return cts

    def run(self, a, run_fwd, run_bwd):
        """Evaluate with the given program runners; returns (out, f_vjp[, aux])."""
        return self.finish(a, run_fwd(list(self.consts) + list(a.dyn_vals)), run_bwd)

    def guard_values(self, res):
        """The guards' values among the forward program's results."""
        return res[self.n_out - self.n_guards:self.n_out]

    def finish(self, a, res, run_bwd):
        """run() from the forward program's results."""
        outs, residuals = res[:self.n_out - self.n_guards], res[self.n_out:]

        def f_vjp(ct):
            grads = run_bwd(list(residuals) + self.cotangents(ct))
            return tuple(unflatten_grads(a, [to_numpy(g) for g in grads], self.nums))

        out = tree_unflatten(self.main_tree, [to_numpy(o) for o in outs[:self.n_main]])
        if self.has_aux:
            aux = tree_unflatten(self.aux_tree, [to_numpy(o) for o in outs[self.n_main:]])
            return out, f_vjp, aux
        return out, f_vjp


def evaluate(f, *args, **kwargs):
    """Trace f and run its program with the reference interpreter (what a compiled call
    computes; also gives traced-only features such as `.at[]` a plain-array entry point)."""
    a = Args(f, args, kwargs, trace_numbers=False)
    prog, consts, out_tree = trace_call(f, a)
    return tree_unflatten(out_tree, [to_numpy(o) for o in eval_program(prog, *consts, *a.dyn_vals)])
