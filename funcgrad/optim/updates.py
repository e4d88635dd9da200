"""Gradient transformations in optax's shape: `init(params) -> state` and
`update(grads, state, params=None) -> (updates, state)`, pure functions over pytrees.

    >>> opt = fg.optim.adam(1e-3)
    >>> state = opt.init(params)
    >>> grads = fg.grad(loss)(params, x, y)
    >>> updates, state = opt.update(grads, state, params)
    >>> params = fg.optim.apply_updates(params, updates)

Every function here works on NumPy arrays and on traced values alike, so a whole training
loop can be compiled: `fg.jit` of a step, or the steps inside `fg.fori_loop` / `fg.scan`
(`fg.optim.fit` does that for you). States are NamedTuples (pytrees); a step counter is an
int32 array. Updates keep the dtypes of the gradients and states keep theirs (float32
parameters train in float32 whatever the precision of the hyperparameters or the data). The named optimizers (sgd, adam, ...) keep their hyperparameters in the state,
readable and settable between steps: `state.hyperparams["learning_rate"]` (a schedule given
as the learning rate is evaluated there at every step), as optax's `inject_hyperparams` does.
PyTorch: `optimizer.step()` is `update` + `apply_updates`; `zero_grad` has no counterpart
(gradients are return values); `param_groups[0]["lr"] = x` is
`state.hyperparams["learning_rate"] = x`.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..numpy._complex import abs2          # (|g|^2: complex second moments are real)
from ..tree_util import tree_leaves, tree_map, tree_structure

__all__ = ["GradientTransformation", "GradientTransformationExtraArgs", "apply_updates", "chain",
           "identity", "scale", "scale_by_learning_rate", "scale_by_schedule", "scale_by_adam",
           "scale_by_rms", "scale_by_stddev", "scale_by_rss", "scale_by_lion", "trace", "add_decayed_weights",
           "clip_by_global_norm", "global_norm", "inject_hyperparams", "sgd", "adam", "adamw",
           "rmsprop", "adagrad", "lion"]


class GradientTransformation(NamedTuple):
    """A pair of pure functions: init(params) -> state, update(grads, state, params) ->
    (updates, new state).

        >>> double = fg.optim.GradientTransformation(
        ...     init=lambda params: (), update=lambda g, state, params=None: (2 * g, state))
        >>> double.update(np.ones(2), double.init(np.ones(2)))
        (array([2., 2.]), ())
    """
    init: Callable
    update: Callable


class GradientTransformationExtraArgs(GradientTransformation):
    """A GradientTransformation whose update also takes keyword arguments:
    update(grads, state, params, **extra_args) (optax's). Line searches read the objective
    from them (value=, grad=, value_fn=); chain passes them on to its members of this kind,
    and fg.optim.fit supplies them to an optimizer of this kind.

        >>> opt = fg.optim.lbfgs()
        >>> isinstance(opt, fg.optim.GradientTransformationExtraArgs)
        True
    """


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none."""


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


class ScaleByLionState(NamedTuple):
    count: Any
    mu: Any


class TraceState(NamedTuple):
    trace: Any


class ScaleByScheduleState(NamedTuple):
    count: Any


class InjectHyperparamsState(NamedTuple):
    """The state of the named optimizers (see inject_hyperparams): the step count, the
    hyperparameters by name, and the state of the transformation they make.

        >>> state = fg.optim.adam(1e-3).init(np.zeros(2))
        >>> state.count, state.hyperparams["learning_rate"]
        (array(0, dtype=int32), array(0.001))
    """
    count: Any
    hyperparams: dict
    inner_state: Any


def _count0():
    return np.zeros((), np.int32)


def _zeros_like(params):
    return tree_map(fnp.zeros_like, params)


def _full_like(params, value):
    return tree_map(lambda p: fnp.full_like(p, value), params)


def _dtype(p):
    return p.dtype if hasattr(p, "dtype") else np.asarray(p).dtype


def _cast_like(tree, like):
    """tree's leaves in the dtypes of like's (the same structure), else tree as it is."""
    if tree_structure(tree) != tree_structure(like):
        return tree
    return tree_map(lambda x, ref: x if _dtype(x) == _dtype(ref)
                    else fnp.asarray(x).astype(_dtype(ref)), tree, like)


def _transformation(init, update):
    """A GradientTransformation whose updates keep the dtypes of the incoming updates and whose
    state keeps its own (float32 gradients with float64 hyperparameters give float32 updates
    and moments, as in optax and PyTorch; a loop over steps then keeps its carry's types)."""
    def dtype_stable_update(updates, state, params=None):
        new_updates, new_state = update(updates, state, params)
        return _cast_like(new_updates, updates), _cast_like(new_state, state)
    return GradientTransformation(init, dtype_stable_update)


def _moment(g, m, decay, order):
    """(1 - decay) * g ** order + decay * m (an exponential moving average; order 2 is |g|^2)."""
    return (1 - decay) * (g if order == 1 else abs2(g)) + decay * m


def _bias_corrected(m, decay, count):
    return tree_map(lambda t: t / (1 - decay ** count), m)


def apply_updates(params, updates):
    """params + updates, leaf by leaf, each result in its parameter's dtype.

        >>> fg.optim.apply_updates({"w": np.ones(2)}, {"w": np.array([0.5, -0.5])})
        {'w': array([1.5, 0.5])}
    """
    return tree_map(lambda p, u: fnp.asarray(p + u).astype(_dtype(p)), params, updates)


def identity():
    """Passes the updates on unchanged.

        >>> opt = fg.optim.identity()
        >>> opt.update(np.ones(2), opt.init(np.ones(2)))
        (array([1., 1.]), EmptyState())
    """
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (updates, state))


def chain(*transforms):
    """The transformations applied one after another; the state is the tuple of theirs.
    Keyword arguments of update (value=, grad=, value_fn= for a line search) go to the members
    that take them (GradientTransformationExtraArgs).

        >>> opt = fg.optim.chain(fg.optim.clip_by_global_norm(1.0), fg.optim.scale(-0.1))
        >>> updates, state = opt.update(np.array([3.0, 4.0]), opt.init(np.zeros(2)))
        >>> updates
        array([-0.06, -0.08])
    """
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None, **extra_args):
        new = []
        for t, s in zip(transforms, state):
            if isinstance(t, GradientTransformationExtraArgs):
                updates, s = t.update(updates, s, params, **extra_args)
            else:
                updates, s = t.update(updates, s, params)
            new.append(s)
        return updates, tuple(new)
    extra = any(isinstance(t, GradientTransformationExtraArgs) for t in transforms)
    return (GradientTransformationExtraArgs if extra else GradientTransformation)(init, update)


def scale(step_size):
    """updates * step_size.

        >>> opt = fg.optim.scale(-0.1)
        >>> opt.update(np.array([1.0, 2.0]), opt.init(np.zeros(2)))[0]
        array([-0.1, -0.2])
    """
    return _transformation(
        lambda params: EmptyState(),
        lambda updates, state, params=None: (tree_map(lambda g: g * step_size, updates), state))


def scale_by_schedule(step_size_fn):
    """updates * step_size_fn(count); count starts at 0 and grows by one per update.

        >>> opt = fg.optim.scale_by_schedule(lambda count: 0.5 ** count)
        >>> _, state = opt.update(np.ones(2), opt.init(np.zeros(2)))
        >>> opt.update(np.ones(2), state)[0]          # the second update: count 1
        array([0.5, 0.5])
    """
    def update(updates, state, params=None):
        step = step_size_fn(state.count)
        return tree_map(lambda g: g * step, updates), ScaleByScheduleState(state.count + 1)
    return _transformation(lambda params: ScaleByScheduleState(_count0()), update)


def scale_by_learning_rate(learning_rate, flip_sign=True):
    """updates * -learning_rate (a number or a schedule step -> value); flip_sign=False keeps
    the sign (gradient ascent).

        >>> opt = fg.optim.scale_by_learning_rate(0.1)
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
        array([-0.1,  0.2])
    """
    sign = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * learning_rate)


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
    """Adam's direction (Kingma & Ba): bias-corrected first moment over the root of the
    bias-corrected second moment.

        >>> opt = fg.optim.scale_by_adam()
        >>> opt.update(np.array([1e-3, -5.0]), opt.init(np.zeros(2)))[0]   # about sign(g) at first
        array([ 0.99999, -1.     ])
    """
    def init(params):
        return ScaleByAdamState(_count0(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: _moment(g, m, b1, 1), updates, state.mu)
        nu = tree_map(lambda g, v: _moment(g, v, b2, 2), updates, state.nu)
        count = state.count + 1
        mu_hat, nu_hat = _bias_corrected(mu, b1, count), _bias_corrected(nu, b2, count)
        out = tree_map(lambda m, v: m / (fnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        return out, ScaleByAdamState(count, mu, nu)
    return _transformation(init, update)


def scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True):
    """updates / sqrt(EMA of their squares) (RMSProp's direction).

        >>> opt = fg.optim.scale_by_rms(decay=0.9)
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]    # g / sqrt(0.1 g^2)
        array([ 3.1622775 , -3.16227762])
    """
    def update(updates, state, params=None):
        nu = tree_map(lambda g, v: _moment(g, v, decay, 2), updates, state.nu)
        out = tree_map(lambda g, v: g * (1 / fnp.sqrt(v + eps)) if eps_in_sqrt
                       else g * (1 / (eps + fnp.sqrt(v))), updates, nu)
        return out, ScaleByRmsState(nu)
    return _transformation(lambda params: ScaleByRmsState(_full_like(params, initial_scale)),
                                  update)


def scale_by_stddev(decay=0.9, eps=1e-8, initial_scale=0.0):
    """updates / their running standard deviation (centered RMSProp's direction).

        >>> opt = fg.optim.scale_by_stddev(decay=0.9)
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]    # g / sqrt(0.09 g^2)
        array([ 3.33333315, -3.33333329])
    """
    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: _moment(g, m, decay, 1), updates, state.mu)
        nu = tree_map(lambda g, v: _moment(g, v, decay, 2), updates, state.nu)
        out = tree_map(lambda g, m, v: g * (1 / fnp.sqrt(v - m * m + eps)), updates, mu, nu)
        return out, ScaleByRStdDevState(mu, nu)
    return _transformation(
        lambda params: ScaleByRStdDevState(_zeros_like(params), _full_like(params, initial_scale)),
        update)


def scale_by_rss(initial_accumulator_value=0.1, eps=1e-7):
    """updates / sqrt(sum of all squared updates so far) (Adagrad's direction).

        >>> opt = fg.optim.scale_by_rss(initial_accumulator_value=0.0)
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]    # g / |g| at first
        array([ 0.99999995, -0.99999999])
    """
    def update(updates, state, params=None):
        sos = tree_map(lambda g, s: abs2(g) + s, updates, state.sum_of_squares)
        out = tree_map(lambda g, s: fnp.where(s > 0, 1 / fnp.sqrt(s + eps), 0.0) * g, updates, sos)
        return out, ScaleByRssState(sos)
    return _transformation(
        lambda params: ScaleByRssState(_full_like(params, initial_accumulator_value)), update)


def scale_by_lion(b1=0.9, b2=0.99):
    """Lion's direction (Chen et al. 2023): the sign of an interpolation of the gradient and
    its momentum; the momentum is updated with b2.

        >>> opt = fg.optim.scale_by_lion()
        >>> opt.update(np.array([1e-3, -5.0]), opt.init(np.zeros(2)))[0]
        array([ 1., -1.])
    """
    def init(params):
        return ScaleByLionState(_count0(), _zeros_like(params))

    def update(updates, state, params=None):
        out = tree_map(lambda g, m: fnp.sign((1 - b1) * g + b1 * m), updates, state.mu)
        mu = tree_map(lambda g, m: _moment(g, m, b2, 1), updates, state.mu)
        return out, ScaleByLionState(state.count + 1, mu)
    return _transformation(init, update)


def trace(decay, nesterov=False):
    """Momentum: t = g + decay * t; passes t on (g + decay * t with nesterov).

        >>> opt = fg.optim.trace(decay=0.9)
        >>> _, state = opt.update(np.ones(2), opt.init(np.zeros(2)))
        >>> opt.update(np.ones(2), state)[0]          # 1 + 0.9 * 1
        array([1.9, 1.9])
    """
    def update(updates, state, params=None):
        new = tree_map(lambda g, t: g + decay * t, updates, state.trace)
        out = tree_map(lambda g, t: g + decay * t, updates, new) if nesterov else new
        return out, TraceState(new)
    return _transformation(lambda params: TraceState(_zeros_like(params)), update)


def _masked(mask, params):
    """The mask as a pytree of bools like params (mask may be a function of params)."""
    m = mask(params) if callable(mask) else mask
    if tree_structure(m) != tree_structure(params):
        raise ValueError(f"mask has structure {tree_structure(m)!r}, params "
                         f"{tree_structure(params)!r}")
    return m


def add_decayed_weights(weight_decay=0.0, mask=None):
    """updates + weight_decay * params (decoupled weight decay, AdamW's); `mask` (a pytree of
    bools like params, or a function params -> that) limits it to the True leaves.

        >>> opt = fg.optim.add_decayed_weights(0.1, mask={"w": True, "b": False})
        >>> params = {"w": np.ones(2), "b": np.ones(2)}
        >>> opt.update({"w": np.zeros(2), "b": np.zeros(2)}, opt.init(params), params)[0]
        {'b': array([0., 0.]), 'w': array([0.1, 0.1])}
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("add_decayed_weights needs the parameters: call "
                             "update(grads, state, params)")
        on = tree_map(lambda p: True, params) if mask is None else _masked(mask, params)
        return tree_map(lambda g, p, m: g + weight_decay * p if m else g,
                        updates, params, on), state
    return _transformation(lambda params: EmptyState(), update)


def global_norm(updates):
    """sqrt of the sum of the squares of every leaf.

        >>> fg.optim.global_norm({"a": np.array([3.0]), "b": np.array([[4.0]])})
        5.0
    """
    return fnp.sqrt(sum(fnp.sum(abs2(g)) for g in tree_leaves(updates)))


def clip_by_global_norm(max_norm):
    """Scales the updates down to global norm max_norm when it is larger.

        >>> opt = fg.optim.clip_by_global_norm(1.0)
        >>> opt.update(np.array([3.0, 4.0]), opt.init(np.zeros(2)))[0]
        array([0.6, 0.8])
    """
    def update(updates, state, params=None):
        norm = global_norm(updates)
        small = norm < max_norm                     # (then not divided: no 0/0 at zero updates)
        scale = fnp.where(small, max_norm, norm)
        return tree_map(lambda g: fnp.where(small, g, g / scale * max_norm), updates), state
    return _transformation(lambda params: EmptyState(), update)


def _numeric(v):
    return (isinstance(v, (int, float, np.number, np.ndarray))
            and not isinstance(v, (bool, np.bool_)))


def inject_hyperparams(factory, static_args=()):
    """factory(**hyperparams) -> GradientTransformation, turned into one that keeps the
    numeric hyperparameters in its state (`state.hyperparams[name]`, float64, settable between
    steps; float32 updates and states stay float32) and evaluates those given as schedules (functions of the step) at every step. Other
    values (None, bools, and the names in static_args) are passed to factory as they are.

        >>> opt = fg.optim.inject_hyperparams(fg.optim.scale)(step_size=-0.1)
        >>> state = opt.init(np.zeros(2))
        >>> state.hyperparams["step_size"] = -0.05             # settable between steps
        >>> opt.update(np.ones(2), state)[0]
        array([-0.05, -0.05])
    """
    inner = getattr(factory, "injected", None)
    if inner is not None:    # a named optimizer injects its own: wrap what it wraps, once
        factory, static_args = inner[0], tuple(static_args) + inner[1]

    def make(**hyperparams):
        sched = {k: v for k, v in hyperparams.items() if callable(v) and k not in static_args}
        static = {k: v for k, v in hyperparams.items()
                  if k not in sched and (k in static_args or not _numeric(v))}

        def init(params):
            count = _count0()
            values = {k: np.asarray(sched[k](count) if k in sched else v, np.float64)
                      for k, v in hyperparams.items() if k not in static}
            return InjectHyperparamsState(count, values, factory(**static, **values).init(params))

        def update(updates, state, params=None):
            values = {k: fnp.asarray(sched[k](state.count), np.float64) if k in sched else v
                      for k, v in state.hyperparams.items()}
            updates, inner = factory(**static, **values).update(updates, state.inner_state, params)
            return updates, InjectHyperparamsState(state.count + 1, values, inner)
        return _transformation(init, update)
    make.__name__ = getattr(factory, "__name__", "optimizer")
    make.__doc__ = factory.__doc__
    return make


# ---- the named optimizers (optax's argument names and defaults) -----------------------------

def _sgd(learning_rate, momentum=None, nesterov=False):
    return chain(identity() if momentum is None else trace(momentum, nesterov),
                 scale_by_learning_rate(learning_rate))


def _adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
    return chain(scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def _adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, weight_decay=1e-4, mask=None):
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def _rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True,
             centered=False, momentum=None, nesterov=False):
    direction = (scale_by_stddev(decay, eps, initial_scale) if centered
                 else scale_by_rms(decay, eps, initial_scale, eps_in_sqrt))
    return chain(direction, scale_by_learning_rate(learning_rate),
                 identity() if momentum is None else trace(momentum, nesterov))


def _adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-7):
    return chain(scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(learning_rate))


def _lion(learning_rate, b1=0.9, b2=0.99, weight_decay=1e-3, mask=None):
    return chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def sgd(learning_rate, momentum=None, nesterov=False):
    """Stochastic gradient descent, with heavy-ball or Nesterov momentum (PyTorch's SGD with
    dampening 0: t = g + momentum * t; p -= lr * t).

        >>> loss = lambda p: fnp.sum((p - 3.0) ** 2)
        >>> opt, params = fg.optim.sgd(0.1, momentum=0.9), np.zeros(2)
        >>> updates, state = opt.update(fg.grad(loss)(params), opt.init(params), params)
        >>> fg.optim.apply_updates(params, updates)
        array([0.6, 0.6])
    """
    return inject_hyperparams(_sgd)(learning_rate=learning_rate, momentum=momentum,
                                    nesterov=nesterov)


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
    """Adam: p -= lr * m_hat / (sqrt(v_hat + eps_root) + eps).

        >>> loss = lambda p: fnp.sum((p - 3.0) ** 2)
        >>> opt, params = fg.optim.adam(0.1), np.zeros(2)
        >>> updates, state = opt.update(fg.grad(loss)(params), opt.init(params), params)
        >>> fg.optim.apply_updates(params, updates)          # each moves by lr at first
        array([0.1, 0.1])
    """
    return inject_hyperparams(_adam)(learning_rate=learning_rate, b1=b1, b2=b2, eps=eps,
                                     eps_root=eps_root)


def adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, weight_decay=1e-4, mask=None):
    """Adam with decoupled weight decay: p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p).

        >>> loss = lambda p: fnp.sum((p - 3.0) ** 2)
        >>> opt, params = fg.optim.adamw(0.1, weight_decay=1e-2), np.zeros(2)
        >>> updates, state = opt.update(fg.grad(loss)(params), opt.init(params), params)
        >>> fg.optim.apply_updates(params, updates)
        array([0.1, 0.1])
    """
    return inject_hyperparams(_adamw, ("mask",))(learning_rate=learning_rate, b1=b1, b2=b2, eps=eps,
                                      eps_root=eps_root, weight_decay=weight_decay, mask=mask)


def rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True,
            centered=False, momentum=None, nesterov=False):
    """RMSProp (optax's: eps inside the square root by default; centered divides by the
    running standard deviation).

        >>> loss = lambda p: fnp.sum((p - 3.0) ** 2)
        >>> opt, params = fg.optim.rmsprop(0.1), np.zeros(2)
        >>> updates, state = opt.update(fg.grad(loss)(params), opt.init(params), params)
        >>> fg.optim.apply_updates(params, updates)
        array([0.31622777, 0.31622777])
    """
    return inject_hyperparams(_rmsprop)(
        learning_rate=learning_rate, decay=decay, eps=eps, initial_scale=initial_scale,
        eps_in_sqrt=eps_in_sqrt, centered=centered, momentum=momentum, nesterov=nesterov)


def adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-7):
    """Adagrad: p -= lr * g / sqrt(sum of squared gradients + eps).

        >>> loss = lambda p: fnp.sum((p - 3.0) ** 2)
        >>> opt, params = fg.optim.adagrad(0.1), np.zeros(2)
        >>> updates, state = opt.update(fg.grad(loss)(params), opt.init(params), params)
        >>> fg.optim.apply_updates(params, updates)
        array([0.0998614, 0.0998614])
    """
    return inject_hyperparams(_adagrad)(learning_rate=learning_rate,
                                        initial_accumulator_value=initial_accumulator_value,
                                        eps=eps)


def lion(learning_rate, b1=0.9, b2=0.99, weight_decay=1e-3, mask=None):
    """Lion: p -= lr * (sign((1 - b1) g + b1 m) + wd * p); m = (1 - b2) g + b2 m.

        >>> loss = lambda p: fnp.sum((p - 3.0) ** 2)
        >>> opt, params = fg.optim.lion(0.1), np.zeros(2)
        >>> updates, state = opt.update(fg.grad(loss)(params), opt.init(params), params)
        >>> fg.optim.apply_updates(params, updates)          # lr * sign(-grad)
        array([0.1, 0.1])
    """
    return inject_hyperparams(_lion, ("mask",))(learning_rate=learning_rate, b1=b1, b2=b2,
                                     weight_decay=weight_decay, mask=mask)


for _named, _raw, _static in ((sgd, _sgd, ()), (adam, _adam, ()), (adamw, _adamw, ("mask",)),
                              (rmsprop, _rmsprop, ()), (adagrad, _adagrad, ()),
                              (lion, _lion, ("mask",))):
    _named.injected = (_raw, _static)       # (read by inject_hyperparams)
