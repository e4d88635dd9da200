"""fg.vmap: vectorize a per-example function over a batch axis (transforms/batching.py).

    >>> per_example_grads = fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))(params, X, y)
"""
from __future__ import annotations

import functools

import numpy as np

from ..interpreter import eval_program
from ..ir import Aval, Traced, aval_of
from ..numpy import broadcast_to, moveaxis
from ..tiering import tiered
from ..tracer import trace_flat
from ..transforms.batching import vmap_program
from ..tree_util import named_path, tree_flatten, tree_flatten_with_path, tree_unflatten
from .calls import arg_names, fn_name, foreign_array_message, is_foreign_array, to_numpy
from .jit import jit

__all__ = ["vmap"]


_WHY = ("it is traced inside fg.vmap, which funcgrad records once for the whole batch (one "
        "value per example)")


def _leaf_axes(axes, args, what):
    """Expand in_axes (int, None, or one entry per argument, each int/None or a matching
    pytree) to one axis per leaf of args."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(tree_flatten(args)[0])
    axes = tuple(axes)
    if len(axes) != len(args):
        raise ValueError(f"vmap: {what} has {len(axes)} entries for {len(args)} arguments")
    out = []
    for ax, arg in zip(axes, args):
        n = len(tree_flatten(arg)[0])
        if ax is None or isinstance(ax, int):
            out += [ax] * n
        else:
            ax_leaves = tree_flatten(ax, is_leaf=lambda x: x is None)[0]
            if len(ax_leaves) != n:
                raise ValueError(f"vmap: {what} entry {ax!r} does not match its argument")
            out += ax_leaves
    return out


def _move(x, src, dst):
    if src == dst:
        return x
    return moveaxis(x, src, dst) if isinstance(x, Traced) else np.moveaxis(x, src, dst)


def _labels(f, args):
    """The leaves' names as the user wrote them (`params['w']`), for errors: "depends on
    argument 'x'"."""
    names = arg_names(f, len(args))
    return [named_path(names[i], path) for i, arg in enumerate(args)
            for path, _ in tree_flatten_with_path(arg)[0]]


def _prefix_axes(axes_tree, axes, out_tree):
    """One axis per output leaf from out_axes given as a pytree: each of its leaves (an int or
    None) applies to the whole subtree of the outputs at the same place (a prefix, as in_axes
    for an argument), or None when its structure is not a prefix of the outputs'."""
    if axes_tree.node_type is None:
        return [axes[0]] * out_tree.num_leaves
    if (axes_tree.node_type is not out_tree.node_type or axes_tree.aux != out_tree.aux
            or len(axes_tree.children) != len(out_tree.children)):
        return None
    res, k = [], 0
    for a, o in zip(axes_tree.children, out_tree.children):
        part = _prefix_axes(a, axes[k:k + a.num_leaves], o)
        if part is None:
            return None
        res += part
        k += a.num_leaves
    return res


def _out_leaf_axes(f, out_axes, out_tree):
    if out_axes is None or isinstance(out_axes, int):
        return [out_axes] * out_tree.num_leaves
    axes, axes_tree = tree_flatten(out_axes, is_leaf=lambda x: x is None)
    leaf_axes = _prefix_axes(axes_tree, axes, out_tree)
    if leaf_axes is None and len(axes) == out_tree.num_leaves:
        leaf_axes = axes                         # one per output leaf, in order
    if leaf_axes is None or not all(a is None or isinstance(a, int) for a in leaf_axes):
        raise ValueError(f"fg.vmap of {fn_name(f)}: out_axes {out_axes!r} does not match the "
                         f"outputs {out_tree!r}: give an int or None for all outputs, or a "
                         "structure like the outputs' (or a prefix of it) with an int or None "
                         "at each place")
    return leaf_axes


def _place(f, outs, flags, out_tree, out_axes, size):
    """The batched program's outputs as the caller gets them: the batch axis moved to its out
    axis (unbatched outputs broadcast along it first), or, for out_axes None, an output that
    does not depend on the batched inputs returned once."""
    paths = [p for p, _ in tree_flatten_with_path(tree_unflatten(out_tree, list(outs)))[0]]
    res = []
    for o, batched, ax, path in zip(outs, flags, _out_leaf_axes(f, out_axes, out_tree), paths):
        if ax is None:
            if batched:
                raise ValueError(
                    f"fg.vmap of {fn_name(f)}: out_axes is None for "
                    f"{named_path('output', path)}, but it depends on the batched inputs, so it has "
                    "one value per example. out_axes=None is for outputs that are the same for "
                    "every example; give this output an int out axis (0), or reduce over the "
                    "batch outside the function.")
            res.append(to_numpy(o))
            continue
        if not batched:
            o = broadcast_to(o, (size,) + tuple(aval_of(o).shape))
        nd = aval_of(o).ndim
        if not -nd <= ax < nd:
            raise ValueError(f"fg.vmap of {fn_name(f)}: out_axes {ax} is out of range for an "
                             f"output with {nd - 1} dimension(s) plus the batch axis")
        res.append(to_numpy(_move(o, 0, ax % nd)))
    return tree_unflatten(out_tree, res)


def vmap(f, in_axes=0, out_axes=0):
    """Map f over a batch axis without a Python loop: in_axes says which axis of each argument
    is the batch (None: not batched); out_axes where the batch axis goes in the outputs: an
    int or None for all, or per output as a structure like the outputs' (a tuple for a tuple
    of outputs). None returns an output once, unbatched: only for an output that does not
    depend on the batched inputs (else a ValueError). Interpreted at first, compiled once hot
    (see funcgrad.tiering), like fg.grad.

        >>> fg.vmap(lambda x: fnp.dot(x, x))(np.ones((5, 3)))        # five dot products
        array([3., 3., 3., 3., 3.])
        >>> fg.vmap(lambda x, w: (x * w, w ** 2), in_axes=(0, None), out_axes=(0, None))(
        ...     np.ones((5, 3)), np.arange(3.0))[1]
        array([0., 1., 4.])
    """
    @functools.wraps(f, updated=())
    def vf(*args, **kwargs):
        if kwargs:
            raise TypeError(f"fg.vmap of {fn_name(f)}: keyword arguments ({', '.join(kwargs)}) are "
                            "not mapped; pass them positionally (in_axes says which are batched), or "
                            "fix them with functools.partial to leave them unbatched")
        leaves, in_tree = tree_flatten(args)
        axes = _leaf_axes(in_axes, args, "in_axes")
        vals, avals, sizes = [], [], set()
        for x, ax in zip(leaves, axes):
            if is_foreign_array(x):
                raise TypeError(foreign_array_message(f, x, _labels(f, args)[len(vals)]))
            x = x if isinstance(x, Traced) else np.asarray(x)
            a = aval_of(x)
            if ax is not None:
                if not -a.ndim <= ax < a.ndim:
                    raise ValueError(f"vmap: in_axes {ax} is out of range for an argument of "
                                     f"shape {a.shape}")
                ax %= a.ndim
                x = _move(x, ax, 0)
                sizes.add(a.shape[ax])
                a = Aval(aval_of(x).shape[1:], a.dtype)
            elif type(leaves[len(vals)]) in (int, float, complex):
                a = Aval((), a.dtype, weak=True)     # promotes like the Python number, as in NumPy
            vals.append(x)
            avals.append(a)
        if len(sizes) != 1:
            raise ValueError(f"vmap of {fn_name(f)}: batched arguments must share one batch "
                             f"size, got sizes {sorted(sizes)}" if sizes else
                             f"vmap of {fn_name(f)}: no argument is batched (in_axes={in_axes!r})")
        size = sizes.pop()
        tree_box = []

        def flat_fn(*xs):
            out = f(*tree_unflatten(in_tree, list(xs)))
            out_leaves, out_tree = tree_flatten(out)
            tree_box.append(out_tree)
            return out_leaves

        prog, consts = trace_flat(flat_fn, avals, _labels(f, args), why=_WHY)
        batched = [False] * len(consts) + [ax is not None for ax in axes]
        bprog, flags = vmap_program(prog, batched, size, with_flags=True)
        outs = eval_program(bprog, *consts, *vals)
        return _place(f, outs, flags, tree_box[0], out_axes, size)
    vf.__name__ = f"vmap_of_{fn_name(f)}"

    def make_jit():
        return jit(vf, same_bits=False)
    vmapped = functools.wraps(f, updated=())(
        tiered(f, ("vmap", repr(in_axes), repr(out_axes)), make_jit, vf))
    vmapped.__name__ = vf.__name__
    return vmapped
