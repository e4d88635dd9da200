"""fg.dask: data-parallel gradients on Dask (optional: pip install "funcgrad[dask]").

A loss that is a sum (or a mean) over the rows of its data splits into one term per chunk of
rows. `fg.dask.value_and_grad(loss)` computes each chunk's value and gradient where the chunk
lives, with one compiled kernel (fg.jit of fg.value_and_grad, pickled as its program:
funcgrad/api/shipping.py), and adds the results pairwise in a tree, in chunk order, so the
result does not depend on which worker ran what:

    >>> from dask.distributed import Client
    >>> client = Client(n_workers=2)                  # or Client("scheduler-address:8786")
    >>> X = dask.array.from_array(X_np, chunks=(10_000, -1))
    >>> vg = fg.dask.value_and_grad(loss)              # loss(w, X, y): a sum over rows
    >>> fg.dask.warmup(client, vg, w, X, y)           # compile once per worker, ahead of time
    >>> value, g = vg(w, X, y)

Arguments that are Dask arrays are data, chunked along axis 0 (all with the same row chunks;
other axes are gathered into one chunk); every other argument (parameters: arrays, numbers,
pytrees) goes to every chunk whole. Gradients are taken with respect to `argnums`, which must
name parameters. Without a Dask client the default scheduler runs (threads in this process).
"""
from __future__ import annotations

import numpy as np

from .api.gradients import value_and_grad as _value_and_grad
from .api.jit import JitFunction, jit
from .optim import FitResult, apply_updates
from .tree_util import tree_map

__all__ = ["value_and_grad", "grad", "warmup", "fit", "DataParallel"]


def _dask():
    try:
        import dask
        import dask.array  # noqa: F401
    except ImportError:
        raise ImportError("fg.dask needs Dask: pip install 'funcgrad[dask]' (or "
                          "'dask[array,distributed]')") from None
    return dask


class DataParallel:
    """A loss's value and gradient over Dask data; see `value_and_grad`. `kernel` is the
    fg.jit function every chunk runs; `delayed(*args)` the result as a dask Delayed.

        >>> vg = fg.dask.value_and_grad(lambda w, X: fnp.sum(X @ w))
        >>> isinstance(vg, fg.dask.DataParallel), type(vg.kernel).__name__
        (True, 'JitFunction')
    """

    def __init__(self, loss, argnums=0, reduction="sum", value=True):
        if reduction not in ("sum", "mean"):
            raise ValueError(f"reduction={reduction!r}: 'sum' for a loss that adds its rows' "
                             "terms, 'mean' for one that averages them")
        self.loss, self.argnums, self.reduction, self.value = loss, argnums, reduction, value
        # one kernel for every chunk; background=False: a worker compiles on its first chunk
        self.kernel = jit(_value_and_grad(loss, argnums), background=False)
        self.__name__ = f"dask_value_and_grad_of_{getattr(loss, '__name__', 'loss')}"

    def _split(self, args):
        """(per-chunk argument lists of Delayed, rows per chunk)."""
        dask = _dask()
        da = dask.array
        data = [k for k, x in enumerate(args) if isinstance(x, da.Array)]
        if not data:
            raise TypeError(f"{self.__name__}: no argument is a Dask array; call "
                            "fg.value_and_grad(loss) for in-memory data")
        nums = (self.argnums,) if isinstance(self.argnums, int) else tuple(self.argnums)
        bad = [a for a in nums if a % len(args) in data]
        if bad:
            raise ValueError(f"argnums={self.argnums!r} names Dask data (argument {bad[0]}): the "
                             "gradient with respect to data rows is not a sum over chunks. "
                             "Differentiate with respect to parameters (in-memory arrays)")
        rows = args[data[0]].chunks[0]
        blocks = {}
        for k in data:
            x = args[k]
            if x.ndim == 0:
                raise ValueError(f"argument {k} is a 0-d Dask array: data needs rows (axis 0)")
            if x.shape[0] != args[data[0]].shape[0]:
                raise ValueError(f"the Dask arguments {data[0]} and {k} have {args[data[0]].shape[0]} "
                                 f"and {x.shape[0]} rows: data arguments share their rows")
            x = x.rechunk({0: rows, **{d: -1 for d in range(1, x.ndim)}})
            blocks[k] = list(x.to_delayed().reshape(-1))
        whole = {k: dask.delayed(x, traverse=False) for k, x in enumerate(args) if k not in blocks}
        chunks = [[blocks[k][i] if k in blocks else whole[k] for k in range(len(args))]
                  for i in range(len(rows))]
        return chunks, rows

    def delayed(self, *args):
        """The result as a dask Delayed (to compute together with other work)."""
        dask = _dask()
        chunks, rows = self._split(args)
        kernel = dask.delayed(self.kernel, traverse=False)
        total = sum(rows)
        # an empty chunk contributes nothing (the mean of its no rows would be NaN); data with
        # no rows at all runs once, as the loss would on it in memory
        kept = [i for i, n in enumerate(rows) if n] or [0]
        weights = [1.0 if self.reduction == "sum" or not total else rows[i] / total
                   for i in kept]
        parts = [dask.delayed(_chunk, pure=True)(kernel, w, *chunks[i])
                 for w, i in zip(weights, kept)]
        while len(parts) > 1:          # pairwise, in chunk order: the same sums everywhere
            parts = [dask.delayed(_add, pure=True)(parts[i], parts[i + 1]) if i + 1 < len(parts)
                     else parts[i] for i in range(0, len(parts), 2)]
        return parts[0] if self.value else dask.delayed(_second, pure=True)(parts[0])

    def __call__(self, *args):
        return self.delayed(*args).compute()

    def chunk_examples(self, args):
        """Argument tuples with every distinct chunk shape (zeros for data), for warmup."""
        chunks, rows = self._split(args)
        da = _dask().array
        out = []
        for n in sorted(set(n for n in rows if n) or {0}):
            out.append(tuple(np.zeros((n,) + x.shape[1:], x.dtype) if isinstance(x, da.Array)
                             else x for x in args))
        return out


def _chunk(kernel, weight, *args):
    value, g = kernel(*args)
    if weight != 1.0:
        value, g = value * weight, tree_map(lambda a: a * weight, g)
    return value, g


def _add(a, b):
    return tree_map(np.add, a, b)


def _second(pair):
    return pair[1]


def value_and_grad(loss, argnums=0, reduction="sum"):
    """`(value, gradient)` of `loss(*args)` over Dask data, computed chunk by chunk on the
    workers (see the module docstring). reduction: "sum" when the loss adds a term per row
    (the chunks' values and gradients are added), "mean" when it averages them (each chunk's
    are weighted by its share of the rows).

        >>> import dask.array as da
        >>> X = da.from_array(np.arange(12.0).reshape(6, 2), chunks=(2, -1))   # 3 chunks
        >>> value, g = fg.dask.value_and_grad(lambda w, X: fnp.sum((X @ w) ** 2))(np.ones(2), X)
        >>> float(value), g
        (1006.0, array([ 940., 1072.]))
    """
    return DataParallel(loss, argnums, reduction)


def grad(loss, argnums=0, reduction="sum"):
    """The gradient of `loss` over Dask data; see `value_and_grad`.

        >>> import dask.array as da
        >>> X = da.from_array(np.arange(12.0).reshape(6, 2), chunks=(2, -1))
        >>> fg.dask.grad(lambda w, X: fnp.sum((X @ w) ** 2))(np.ones(2), X)
        array([ 940., 1072.])
    """
    return DataParallel(loss, argnums, reduction, value=False)


def warmup(client, f, *example_args):
    """Compile f once on every worker of `client` ahead of the first step: a DataParallel (from
    value_and_grad / grad) for every chunk shape of these arguments, or a fg.jit function for
    these arguments. Workers load the kernels from the persistent cache when they share it
    (FUNCGRAD_CACHE_DIR); each worker keeps them for later tasks. Returns {worker: number of
    signatures compiled there}.

        >>> from dask.distributed import Client
        >>> with Client(processes=False, n_workers=1, dashboard_address=None) as client:
        ...     list(fg.dask.warmup(client, fg.jit(lambda x: x * 2.0), np.ones(3)).values())
        [1]
    """
    if isinstance(f, DataParallel):
        kernel, examples = f.kernel, f.chunk_examples(example_args)
    elif isinstance(f, JitFunction):
        kernel, examples = f, [example_args]
    else:
        raise TypeError("warmup takes what fg.dask.value_and_grad / fg.dask.grad or fg.jit "
                        f"returned, not {type(f).__name__}")
    return client.run(_warm, kernel, examples)


def _warm(kernel, examples):
    for args in examples:
        kernel(*args)
    return len(examples)


def fit(loss, params, optimizer, *, steps, data, reduction="sum", callback=None):
    """Train on Dask data: each step evaluates the loss and its gradient over all of `data`
    (a tuple of Dask arrays sharing their row chunks; loss(params, *data)) on the workers,
    then applies the fg.optim optimizer's update here (compiled once). Full-batch steps, in
    the same order as fg.optim.fit without batch_size; `callback(step, params, value)` after
    each step. Returns fg.optim.FitResult (params, opt_state, the loss of every step).

        >>> import dask.array as da
        >>> X = da.from_array(np.random.default_rng(0).standard_normal((40, 2)), chunks=(10, -1))
        >>> y = (X[:, 0] > 0).astype(float)
        >>> loss = lambda w, X, y: fnp.sum(fnp.logaddexp(0.0, X @ w) - y * (X @ w))
        >>> res = fg.dask.fit(loss, np.zeros(2), fg.optim.adam(0.1), steps=20, data=(X, y))
        >>> bool(res.losses[-1] < 0.5 * res.losses[0])
        True
    """
    vg = DataParallel(loss, 0, reduction)
    update = jit(lambda g, state, p: _step(optimizer, g, state, p), same_bits=False)   # (never waits)
    state = optimizer.init(params)
    losses = np.empty(steps)
    for k in range(steps):
        value, g = vg(params, *data)
        params, state = update(g, state, params)
        losses[k] = value
        if callback is not None:
            callback(k, params, value)
    return FitResult(params, state, losses)


def _step(optimizer, g, state, params):
    updates, state = optimizer.update(g, state, params)
    return apply_updates(params, updates), state
