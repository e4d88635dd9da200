"""fg.optim.fit: a whole training loop -- gradient, optimizer update, mini-batch selection --
compiled as one kernel.

    >>> result = fg.optim.fit(loss, params, fg.optim.adam(1e-2), steps=1000,
    ...                       data=(X, y), batch_size=64)
    >>> result.params, result.losses[-1]

is the same computation as this loop written by hand, which is what it builds:

    >>> opt = fg.optim.adam(1e-2)
    >>> @fg.jit
    ... def run(params, state, X, y, batches):          # batches: (steps, batch_size) indices
    ...     def step(carry, idx):
    ...         params, state = carry
    ...         value, grads = fg.value_and_grad(loss)(params, X[idx], y[idx])
    ...         updates, state = opt.update(grads, state, params)
    ...         return (fg.optim.apply_updates(params, updates), state), value
    ...     (params, state), losses = fg.scan(step, (params, state), batches)
    ...     return params, state, losses
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from ..api.gradients import value_and_grad
from ..api.jit import jit
from ..higher_order.loops import scan
from .. import random
from ..optimize.failures import first_bad, named, require_scalar, warn
from ..optimize.runners import cached_runner
from ..tree_util import tree_leaves, tree_map
from .updates import GradientTransformationExtraArgs, apply_updates

__all__ = ["fit", "FitResult", "batch_indices"]


class FitResult(NamedTuple):
    """What fit returns: the final parameters and optimizer state, the loss of every step
    (evaluated at the parameters before that step's update), and with has_aux the auxiliary
    output of every step, stacked.

        >>> res = fg.optim.fit(lambda p: fnp.sum((p - 3.0) ** 2), np.zeros(2), fg.optim.sgd(0.1),
        ...                    steps=5)
        >>> res.params, res.losses[0]
        (array([2.01696, 2.01696]), 18.0)
    """
    params: Any
    opt_state: Any
    losses: np.ndarray
    aux: Any = None


def batch_indices(n, batch_size, steps, seed=0):
    """(steps, batch_size) row indices: each epoch a fresh permutation of range(n) from `seed`,
    cut into n // batch_size batches (the last n % batch_size rows of an epoch are skipped, so
    every batch has the same size).

        >>> fg.optim.batch_indices(5, batch_size=2, steps=3)     # 2 batches per epoch of 5 rows
        array([[2, 4],
               [3, 0],
               [4, 1]])
    """
    if not 0 < batch_size <= n:
        raise ValueError(f"fit: batch_size must be between 1 and the number of rows ({n}), "
                         f"got {batch_size}")
    per_epoch = n // batch_size
    rng = np.random.default_rng(seed)
    epochs = -(-steps // per_epoch)
    rows = np.concatenate([rng.permutation(n)[:per_epoch * batch_size] for _ in range(epochs)])
    return rows[:steps * batch_size].reshape(steps, batch_size)


def _rows(data):
    sizes = {np.shape(x)[0] if np.ndim(x) else None for x in tree_leaves(data)}
    if len(sizes) != 1 or None in sizes:
        raise ValueError("fit: every array in data needs the same leading (row) axis; got "
                         f"leading sizes {sorted(map(str, sizes))}")
    return sizes.pop()


def fit(loss, params, optimizer, *, steps, data=None, batch_size=None, has_aux=False,
        log_every=None, seed=0, opt_state=None, progress=None, key=None):
    """Run `steps` updates of `optimizer` on loss(params, *data) in one compiled loop.

    data: a tuple of arrays sharing their leading axis (rows), passed to loss after params
    (a single array or a dict is passed as one argument); None calls loss(params).
    batch_size: each step uses that many rows, drawn without replacement, reshuffled every
    epoch from `seed` (see batch_indices); None uses all rows every step.
    log_every: print the mean loss every that many steps (the loop then runs in chunks of
    that length, one compiled kernel reused for each).
    opt_state: continue from this optimizer state instead of optimizer.init(params).
    progress: report progress from inside the compiled loop (True: a tqdm bar if tqdm is
    installed, else a line about every 1% of the steps; an int: every that many steps;
    fn(step, total): called instead); see fg.scan.
    key: a fg.random key; each step then calls loss(params, *batch, step_key) with a key of its
    own (fg.random.split(key, steps)[step]): dropout, noise, sampled losses.
    An optimizer that evaluates the objective itself (a GradientTransformationExtraArgs: lbfgs,
    a line search) gets update(grads, state, params, value=, grad=, value_fn=) with value_fn
    the loss on the step's batch (fit then evaluates the gradient once more per step than a
    hand-written loop with value_and_grad_from_state does).
    Returns a FitResult(params, opt_state, losses, aux).

        >>> X = np.random.default_rng(0).normal(size=(64, 2)); y = X @ np.array([2.0, -1.0])
        >>> loss = lambda w, X, y: fnp.mean((X @ w - y) ** 2)
        >>> fg.optim.fit(loss, np.zeros(2), fg.optim.adam(0.1), steps=200, data=(X, y),
        ...              batch_size=16).params                       # close to [2, -1]
        array([ 1.99996424, -0.9999818 ])
    """
    steps = int(steps)
    if steps < 0:
        raise ValueError(f"fit: steps must be >= 0, got {steps}")
    args = () if data is None else tuple(data) if isinstance(data, tuple) else (data,)
    state = optimizer.init(params) if opt_state is None else opt_state
    if batch_size is None:
        batches = np.zeros((steps, 0), np.int64)
    else:
        batches = batch_indices(_rows(args), int(batch_size), steps, seed)
    full = batch_size is None
    keyed = key is not None
    extra = isinstance(optimizer, GradientTransformationExtraArgs)
    step_keys = random.split(key, steps) if keyed else None

    def make():
        @functools.wraps(loss)
        def checked(p, *rest):        # (a vector loss: said at the user's line, with advice)
            out = loss(p, *rest)
            if not has_aux or isinstance(out, (tuple, list)):
                require_scalar("fg.optim.fit", loss, out[0] if has_aux else out, _VECTOR_ADVICE)
            return out
        grad_fn = value_and_grad(checked, has_aux=has_aux)

        @jit(same_bits=False)          # (a library loop never waits: jit_same_bits)
        def run(params, state, args, xs):
            def step(carry, x):
                (p, s), (idx, k) = carry, (x if keyed else (x, None))
                batch = args if full else tree_map(lambda a: a[idx], args)
                rest = (*batch, *((k,) if keyed else ()))
                value, grads = grad_fn(p, *rest)
                if extra:          # a line search: the objective on this step's batch
                    updates, s = optimizer.update(
                        grads, s, p, value=value[0] if has_aux else value, grad=grads,
                        value_fn=lambda q: loss(q, *rest)[0] if has_aux else loss(q, *rest))
                else:
                    updates, s = optimizer.update(grads, s, p)
                return (apply_updates(p, updates), s), value
            (p, s), values = scan(step, (params, state), xs, progress=progress)
            return p, s, values
        return run
    # the compiled loop is reused by later fits of an equal loss and optimizer (made anew or
    # not; hyperparameters in the optimizer's state are inputs of the loop) while nothing
    # they read from outside their arguments changes (optimize/runners.py)
    run = cached_runner(loss, ("fit", has_aux, full, progress, keyed, extra), make,
                        also=(optimizer.update,))

    if steps == 0:
        return FitResult(params, state, np.zeros(0))
    chunk = steps if not log_every else max(1, int(log_every))
    losses, auxes, done = [], [], 0
    while done < steps:
        n = min(chunk, steps - done)
        xs = batches[done:done + n]
        params, state, values = run(params, state, args,
                                    (xs, step_keys[done:done + n]) if keyed else xs)
        value, aux = values if has_aux else (values, None)
        losses.append(np.asarray(value))
        auxes.append(aux)
        done += n
        if log_every:
            print(f"fit: step {done}/{steps}: mean loss {np.mean(value):.6g}")
    aux = None
    if has_aux:
        aux = tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *auxes)
    losses = np.concatenate(losses)
    bad = first_bad(losses)
    if bad is not None:
        warn("fg.optim.fit", f"the loss of {named(loss)} is {float(losses[bad])!r} at step "
             f"{bad} of {steps} (the losses from there on are in the result; the parameters "
             "returned are those after the last step).", _NOT_FINITE_ADVICE)
    return FitResult(params, state, losses, aux)


_VECTOR_ADVICE = ("A loss must be one number per step: return fnp.mean(...) or fnp.sum(...) "
                  "of the per-example losses (with has_aux=True, return (loss, aux)).")
_NOT_FINITE_ADVICE = (
    "fg.debug_nans(loss)(params, *batch) names the operation that made the first NaN or inf. "
    "Usual causes: a learning rate too large (the loss grows, then overflows: lower it, or "
    "clip with fg.optim.clip_by_global_norm), or log / sqrt / division reaching 0 or below "
    "(use the stable forms: fg.optim.losses, fnp.logaddexp, fg.nn.log_softmax). "
    "fg.optim.apply_if_finite skips the updates that are not finite.")
