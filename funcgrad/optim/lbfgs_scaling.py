"""L-BFGS as a gradient transformation (optax's names, arguments and semantics):
scale_by_lbfgs (the two-loop recursion over a fixed-size ring buffer of parameter and gradient
differences, kept in the state as arrays, so a loop of updates compiles with static shapes)
and lbfgs (that, a sign flip and a line search from linesearch.py, chained).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..tree_util import tree_map
from .linesearch import _vdot, scale_by_zoom_linesearch
from .updates import (_count0, _transformation, _zeros_like, chain, identity, scale,
                      scale_by_learning_rate)

__all__ = ["ScaleByLBFGSState", "scale_by_lbfgs", "lbfgs"]


class ScaleByLBFGSState(NamedTuple):
    """scale_by_lbfgs's state: the step count, the last parameters and updates, and the ring
    buffers of the last memory_size differences (stacked on a leading axis) and their weights
    1 / <dp, du>.

        >>> fg.optim.scale_by_lbfgs(memory_size=3).init(np.zeros(2)).diff_params_memory.shape
        (3, 2)
    """
    count: Any
    params: Any
    updates: Any
    diff_params_memory: Any
    diff_updates_memory: Any
    weights_memory: Any


# ---- L-BFGS's direction ------------------------------------------------------------------------

def _written(memory, index, new):
    """memory (a leading axis of slots) with slot `index` (traced or not) replaced by new."""
    slots = fnp.arange(memory.shape[0]).reshape((-1,) + (1,) * (memory.ndim - 1))
    return fnp.where(slots == index, fnp.asarray(new)[None], memory)


def _two_loop(g, dp, du, rho, gamma, oldest):
    """H g for the L-BFGS inverse-Hessian estimate H (Nocedal & Wright, Algorithm 7.4): the
    pairs (dp, du) in slots oldest, oldest + 1, ... (mod m) from oldest to newest; empty slots
    have rho = 0 and change nothing."""
    m = rho.shape[0]
    order = [(oldest + j) % m for j in range(m)]
    q, alphas = g, {}
    for j in reversed(range(m)):
        i = order[j]
        alphas[j] = rho[i] * _vdot(tree_map(lambda x: x[i], dp), q)
        q = tree_map(lambda v, y: v - alphas[j] * y[i], q, du)
    r = tree_map(lambda v: gamma * v, q)
    for j in range(m):
        i = order[j]
        beta = rho[i] * _vdot(tree_map(lambda y: y[i], du), r)
        r = tree_map(lambda v, s: v + (alphas[j] - beta) * s[i], r, dp)
    return r


def scale_by_lbfgs(memory_size=10, scale_init_precond=True):
    """L-BFGS's direction (Nocedal & Wright, Algorithms 7.4 and 7.5; Liu & Nocedal 1989): the
    updates times an inverse-Hessian estimate built from the last memory_size differences of
    parameters and of updates (the gradients) between calls. The initial estimate is gamma *
    I, gamma = <dp, du> / <du, du> of the newest pair with scale_init_precond (else 1); at
    the first call min(1, 1 / ||g||). The buffers are fixed-size arrays in the state, so a
    loop of updates compiles. Chain it with a negative scale and a line search: lbfgs does.

        >>> opt = fg.optim.scale_by_lbfgs()
        >>> params = np.array([1.0, 2.0])
        >>> opt.update(np.array([0.3, 0.4]), opt.init(params), params)[0]    # g / max(1, |g|)
        array([0.3, 0.4])
    """
    if memory_size < 1:
        raise ValueError(f"scale_by_lbfgs: memory_size must be >= 1, got {memory_size}")

    def init(params):
        stacked = tree_map(lambda p: fnp.zeros((memory_size,) + fnp.shape(p),
                                               fnp.asarray(p).dtype), params)
        return ScaleByLBFGSState(_count0(), _zeros_like(params), _zeros_like(params), stacked,
                                 stacked, np.zeros(memory_size))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_lbfgs needs the parameters: call update(grads, state, "
                             "params)")
        started = state.count > 0
        dp = tree_map(lambda p, q: fnp.where(started, p - q, 0.0), params, state.params)
        du = tree_map(lambda g, h: fnp.where(started, g - h, 0.0), updates, state.updates)
        curvature = _vdot(du, dp)
        weight = fnp.where(curvature == 0.0, 0.0, 1.0 / fnp.where(curvature == 0.0, 1.0,
                                                                     curvature))
        newest = (state.count - 1) % memory_size
        dp_mem = tree_map(lambda mem, d: _written(mem, newest, d), state.diff_params_memory, dp)
        du_mem = tree_map(lambda mem, d: _written(mem, newest, d), state.diff_updates_memory, du)
        rho = _written(state.weights_memory, newest, weight)
        if scale_init_precond:
            du2 = _vdot(du, du)
            later = fnp.where(du2 > 0.0, curvature / fnp.where(du2 > 0.0, du2, 1.0), 1.0)
            gnorm = fnp.sqrt(_vdot(updates, updates))
            first = fnp.minimum(1.0, 1.0 / fnp.where(gnorm > 0.0, gnorm, 1.0))
            gamma = fnp.where(started, later, fnp.where(gnorm > 0.0, first, 1.0))
        else:
            gamma = 1.0
        direction = _two_loop(updates, dp_mem, du_mem, rho, gamma, state.count % memory_size)
        return direction, ScaleByLBFGSState(state.count + 1, params, updates, dp_mem, du_mem, rho)
    return _transformation(init, update)


def lbfgs(learning_rate=None, memory_size=10, scale_init_precond=True,
          linesearch=scale_by_zoom_linesearch(max_linesearch_steps=20,
                                              initial_guess_strategy="one")):
    """L-BFGS (Liu & Nocedal 1989): scale_by_lbfgs's quasi-Newton direction, negated (or times
    -learning_rate), then scaled by a line search (by default the zoom search for the strong
    Wolfe conditions, first trying the step 1; None for none). For deterministic objectives.
    The update needs the objective: update(grads, state, params, value=, grad=, value_fn=);
    value_and_grad_from_state reuses the value and gradient the search computed. A loop
    written by hand (compiles as one kernel in fg.fori_loop under fg.jit); fg.optim.fit
    passes the objective itself:

        >>> f = lambda w: (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2     # Rosenbrock
        >>> opt, w = fg.optim.lbfgs(), np.array([-1.2, 1.0])
        >>> state, vg = opt.init(w), fg.optim.value_and_grad_from_state(f)
        >>> for _ in range(40):
        ...     value, grad = vg(w, state=state)
        ...     updates, state = opt.update(grad, state, w, value=value, grad=grad, value_fn=f)
        ...     w = fg.optim.apply_updates(w, updates)
        >>> np.round(w, 6)
        array([1., 1.])
    """
    return chain(scale_by_lbfgs(memory_size, scale_init_precond),
                 scale(-1.0) if learning_rate is None else scale_by_learning_rate(learning_rate),
                 identity() if linesearch is None else linesearch)
