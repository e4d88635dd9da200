"""More of optax's optimizers: the Adam family's variants (Nesterov momentum, infinity norm,
rectification, a running maximum, belief, Yogi's additive second moment), layer-wise trust
ratios (LAMB, LARS, Fromage), and NovoGrad, AdaDelta, Rprop, noisy and optimistic gradient
descent. Each named optimizer is optax's composition of transformations, with optax's
argument names and defaults, and keeps its hyperparameters in its state as updates.py's do.
"""
from __future__ import annotations

import inspect
from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from .. import random
from ..numpy._complex import abs2
from ..tree_util import tree_flatten, tree_map, tree_unflatten
from .updates import (EmptyState, ScaleByAdamState, _bias_corrected, _count0, _full_like,
                      _moment, _transformation, _zeros_like, add_decayed_weights, chain,
                      inject_hyperparams, scale, scale_by_adam, scale_by_learning_rate, trace)
from .wrappers import ema, masked, scale_by_sign

__all__ = ["scale_by_nadam", "scale_by_adamax", "scale_by_radam", "scale_by_amsgrad",
           "scale_by_belief", "scale_by_yogi", "scale_by_novograd", "scale_by_trust_ratio",
           "scale_by_adadelta", "scale_by_rprop", "scale_by_optimistic_gradient", "add_noise",
           "nadam", "nadamw", "adamax", "adamaxw", "radam", "amsgrad", "adabelief", "yogi",
           "novograd", "lamb", "lars", "fromage", "adadelta", "rprop", "noisy_sgd",
           "optimistic_gradient_descent", "sign_sgd", "signum"]


class ScaleByAmsgradState(NamedTuple):
    count: Any
    mu: Any
    nu: Any
    nu_max: Any


class ScaleByNovogradState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByAdaDeltaState(NamedTuple):
    e_g: Any
    e_x: Any


class ScaleByRpropState(NamedTuple):
    step_sizes: Any
    prev_updates: Any


class ScaleByOptimisticGradientState(NamedTuple):
    is_initial_step: Any
    previous_gradient: Any


class AddNoiseState(NamedTuple):
    count: Any
    key: Any


def _adam_init(params):
    return ScaleByAdamState(_count0(), _zeros_like(params), _zeros_like(params))


def _first_moment_hat(updates, mu, b1, count, nesterov):
    """The bias-corrected first moment; with Nesterov momentum the next step's, looked ahead:
    b1 * mu / (1 - b1^(t+1)) + (1 - b1) * g / (1 - b1^t)."""
    if not nesterov:
        return _bias_corrected(mu, b1, count)
    return tree_map(lambda m, g: b1 * m / (1 - b1 ** (count + 1)) + (1 - b1) * g / (1 - b1 ** count),
                    mu, updates)


def scale_by_nadam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
    """Adam's direction with Nesterov momentum (Dozat 2016; optax's scale_by_adam with
    nesterov=True).

        >>> opt = fg.optim.scale_by_nadam()
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
    """
    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: _moment(g, m, b1, 1), updates, state.mu)
        nu = tree_map(lambda g, v: _moment(g, v, b2, 2), updates, state.nu)
        count = state.count + 1
        mu_hat, nu_hat = _first_moment_hat(updates, mu, b1, count, True), _bias_corrected(nu, b2, count)
        out = tree_map(lambda m, v: m / (fnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        return out, ScaleByAdamState(count, mu, nu)
    return _transformation(_adam_init, update)


def scale_by_adamax(b1=0.9, b2=0.999, eps=1e-8):
    """Adamax's direction (Kingma & Ba, section 7): the bias-corrected first moment over a
    decaying maximum of |g| (plus eps).

        >>> opt = fg.optim.scale_by_adamax()
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
    """
    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: _moment(g, m, b1, 1), updates, state.mu)
        nu = tree_map(lambda g, v: fnp.maximum(fnp.abs(g) + eps, b2 * v), updates, state.nu)
        count = state.count + 1
        return (tree_map(lambda m, v: m / v, _bias_corrected(mu, b1, count), nu),
                ScaleByAdamState(count, mu, nu))
    return _transformation(_adam_init, update)


def scale_by_radam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, nesterov=False):
    """Rectified Adam's direction (Liu et al. 2020): the first moment alone while the second
    moment's variance is intractable (rho < threshold), then Adam's times the rectification r.

        >>> opt = fg.optim.scale_by_radam()
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
    """
    rho_inf = 2.0 / (1.0 - b2) - 1.0

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: _moment(g, m, b1, 1), updates, state.mu)
        nu = tree_map(lambda g, v: _moment(g, v, b2, 2), updates, state.nu)
        count = state.count + 1
        b2t = b2 ** count
        rho = rho_inf - 2 * count * b2t / (1 - b2t)
        mu_hat, nu_hat = _first_moment_hat(updates, mu, b1, count, nesterov), _bias_corrected(nu, b2, count)
        tractable = rho >= threshold
        safe_rho = fnp.where(tractable, rho, threshold)     # (r's root is taken only there)
        r = fnp.sqrt((safe_rho - 4) * (safe_rho - 2) * rho_inf
                     / ((rho_inf - 4) * (rho_inf - 2) * safe_rho))
        out = tree_map(lambda m, v: fnp.where(tractable, r * m / (fnp.sqrt(v + eps_root) + eps), m),
                       mu_hat, nu_hat)
        return out, ScaleByAdamState(count, mu, nu)
    return _transformation(_adam_init, update)


def scale_by_amsgrad(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
    """AMSGrad's direction (Reddi et al. 2018): Adam's with the running maximum of the
    bias-corrected second moment.

        >>> opt = fg.optim.scale_by_amsgrad()
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
    """
    def init(params):
        return ScaleByAmsgradState(_count0(), _zeros_like(params), _zeros_like(params),
                                   _zeros_like(params))

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: _moment(g, m, b1, 1), updates, state.mu)
        nu = tree_map(lambda g, v: _moment(g, v, b2, 2), updates, state.nu)
        count = state.count + 1
        nu_max = tree_map(fnp.maximum, state.nu_max, _bias_corrected(nu, b2, count))
        out = tree_map(lambda m, v: m / (fnp.sqrt(v + eps_root) + eps),
                       _bias_corrected(mu, b1, count), nu_max)
        return out, ScaleByAmsgradState(count, mu, nu, nu_max)
    return _transformation(init, update)


def scale_by_belief(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, nesterov=False):
    """AdaBelief's direction (Zhuang et al. 2020): the second moment is of the gradient's
    deviation from its first moment (the 'belief').

        >>> opt = fg.optim.scale_by_belief()
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
    """
    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: _moment(g, m, b1, 1), updates, state.mu)
        nu = tree_map(lambda g, m, v: _moment(g - m, v, b2, 2) + eps_root, updates, mu, state.nu)
        count = state.count + 1
        mu_hat, nu_hat = _first_moment_hat(updates, mu, b1, count, nesterov), _bias_corrected(nu, b2, count)
        return (tree_map(lambda m, v: m / (fnp.sqrt(v) + eps), mu_hat, nu_hat),
                ScaleByAdamState(count, mu, nu))
    return _transformation(_adam_init, update)


def scale_by_yogi(b1=0.9, b2=0.999, eps=1e-3, eps_root=0.0, initial_accumulator_value=1e-6):
    """Yogi's direction (Zaheer et al. 2018): the second moment moves additively, by
    (1 - b2) g^2 towards g^2, which keeps it from collapsing.

        >>> opt = fg.optim.scale_by_yogi()
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
    """
    def init(params):
        return ScaleByAdamState(_count0(), _full_like(params, initial_accumulator_value),
                                _full_like(params, initial_accumulator_value))

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: _moment(g, m, b1, 1), updates, state.mu)
        nu = tree_map(lambda g, v: v - (1 - b2) * fnp.sign(v - abs2(g)) * abs2(g),
                      updates, state.nu)
        count = state.count + 1
        return (tree_map(lambda m, v: m / (fnp.sqrt(v + eps_root) + eps),
                         _bias_corrected(mu, b1, count), _bias_corrected(nu, b2, count)),
                ScaleByAdamState(count, mu, nu))
    return _transformation(init, update)


def scale_by_novograd(b1=0.9, b2=0.25, eps=1e-6, eps_root=0.0, weight_decay=0.0):
    """NovoGrad's direction (Ginsburg et al. 2019): per-layer second moments (of the squared
    norm of each leaf's gradient), weight decay inside the momentum.

        >>> opt = fg.optim.scale_by_novograd()
        >>> params = np.ones(2)
        >>> opt.update(np.array([1.0, -2.0]), opt.init(params), params)[0]
    """
    def init(params):
        return ScaleByNovogradState(_count0(), _zeros_like(params),
                                    tree_map(lambda p: fnp.zeros((), fnp.asarray(p).dtype), params))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("novograd needs the parameters: call update(grads, state, params)")
        first = state.count == 0
        norms = tree_map(lambda g: fnp.sum(abs2(g)), updates)
        nu = tree_map(lambda n, v: fnp.where(first, n, _moment(n, v, b2, 1)), norms, state.nu)
        step = tree_map(lambda g, p, v: g / (fnp.sqrt(v + eps_root) + eps) + weight_decay * p,
                        updates, params, nu)
        mu = tree_map(lambda s, m: fnp.where(first, s, b1 * m + s), step, state.mu)
        return mu, ScaleByNovogradState(state.count + 1, mu, nu)
    return _transformation(init, update)


def _safe_norm(x, min_norm):
    """max(||x||, min_norm), with derivative 0 (not NaN) where ||x|| <= min_norm."""
    norm = fnp.sqrt(fnp.sum(abs2(x)))
    small = norm <= min_norm
    return fnp.where(small, min_norm, fnp.sqrt(fnp.sum(abs2(fnp.where(small, 1.0, x)))))


def scale_by_trust_ratio(min_norm=0.0, trust_coefficient=1.0, eps=0.0):
    """Each leaf's update times trust_coefficient * ||param|| / (||update|| + eps) (1 where a
    norm is 0): LAMB's and LARS's layer-wise scaling.

        >>> opt = fg.optim.scale_by_trust_ratio()
        >>> params = np.array([3.0, 4.0])
        >>> opt.update(np.array([0.1, 0.0]), opt.init(params), params)[0]
        array([5., 0.])
    """
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_trust_ratio needs the parameters: call "
                             "update(grads, state, params)")

        def scaled(u, p):
            pn, un = _safe_norm(p, min_norm), _safe_norm(u, min_norm)
            ratio = trust_coefficient * pn / (un + eps)
            return u * fnp.where((pn == 0.0) | (un == 0.0), 1.0, ratio)
        return tree_map(scaled, updates, params), state
    return _transformation(lambda params: EmptyState(), update)


def scale_by_adadelta(rho=0.9, eps=1e-6):
    """AdaDelta's direction (Zeiler 2012): g * sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps).

        >>> opt = fg.optim.scale_by_adadelta()
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
    """
    def update(updates, state, params=None):
        e_g = tree_map(lambda g, e: _moment(g, e, rho, 2), updates, state.e_g)
        out = tree_map(lambda g, eg, ex: fnp.sqrt(ex + eps) / fnp.sqrt(eg + eps) * g,
                       updates, e_g, state.e_x)
        e_x = tree_map(lambda u, e: _moment(u, e, rho, 2), out, state.e_x)
        return out, ScaleByAdaDeltaState(e_g, e_x)
    return _transformation(
        lambda params: ScaleByAdaDeltaState(_zeros_like(params), _zeros_like(params)), update)


def scale_by_rprop(learning_rate, eta_minus=0.5, eta_plus=1.2, min_step_size=1e-6,
                   max_step_size=50.0):
    """Rprop's steps (Riedmiller & Braun 1993; iRprop-): each entry's step grows by eta_plus
    while its gradient keeps its sign and shrinks by eta_minus when it flips (no step then);
    the direction is sign(g) times the step (negate it to descend: rprop does). The step
    taken is this call's (optax 0.2.8 returns the previous call's, one step late).

        >>> opt = fg.optim.scale_by_rprop(0.1)
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
        array([ 0.1, -0.1])
    """
    def init(params):
        return ScaleByRpropState(_full_like(params, learning_rate), _zeros_like(params))

    def update(updates, state, params=None):
        sign = tree_map(lambda g, prev: g * prev, updates, state.prev_updates)
        steps = tree_map(lambda s, step: fnp.where(
            s == 0, step, fnp.clip(step * fnp.where(s > 0, eta_plus, eta_minus),
                                   min_step_size, max_step_size)), sign, state.step_sizes)
        prev = tree_map(lambda s, g, step: fnp.where(s < 0, 0.0, step * fnp.sign(g)),
                        sign, updates, steps)
        out = tree_map(lambda s, p, old: fnp.where(s < 0, 0.0, p), sign, prev, state.prev_updates)
        return out, ScaleByRpropState(steps, prev)
    return _transformation(init, update)


def scale_by_optimistic_gradient(alpha=1.0, beta=1.0):
    """(alpha + beta) g_t - beta g_{t-1} (optimistic gradient descent, Daskalakis et al.
    2018; the first step uses g_0 for g_{-1}).

        >>> opt = fg.optim.scale_by_optimistic_gradient()
        >>> opt.update(np.array([1.0, -2.0]), opt.init(np.zeros(2)))[0]
        array([ 1., -2.])
    """
    def init(params):
        return ScaleByOptimisticGradientState(np.array(True), _zeros_like(params))

    def update(updates, state, params=None):
        out = tree_map(lambda g, prev: (alpha + beta) * g - beta * fnp.where(
            state.is_initial_step, g, prev), updates, state.previous_gradient)
        return out, ScaleByOptimisticGradientState(np.array(False), updates)
    return _transformation(init, update)


def add_noise(eta, gamma, key):
    """updates + normal noise of variance eta / t^gamma (annealed; Neelakantan et al. 2015),
    drawn with fg.random from `key` (a key, or an integer seed), a new key each step.

        >>> opt = fg.optim.add_noise(0.01, 0.55, fg.random.key(0))
        >>> opt.update(np.zeros(3), opt.init(np.zeros(3)))[0].shape
        (3,)
    """
    def init(params):
        k = random.key(key) if np.ndim(key) == 0 else np.asarray(key, np.uint32)
        return AddNoiseState(_count0(), k)

    def update(updates, state, params=None):
        count = state.count + 1
        std = fnp.sqrt(eta / fnp.astype(count, np.float64) ** gamma)
        next_key, sub = random.split(state.key)
        leaves, tree = tree_flatten(updates)
        keys = random.split(sub, max(len(leaves), 1))
        noisy = [g + std * random.normal(keys[i], fnp.shape(g), fnp.asarray(g).dtype
                                         if fnp.asarray(g).dtype in (np.float32, np.float64)
                                         else np.float64)
                 for i, g in enumerate(leaves)]
        return tree_unflatten(tree, noisy), AddNoiseState(count, next_key)
    return _transformation(init, update)


# ---- the named optimizers (optax's compositions, arguments and defaults) -------------------

def _nadam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
    return chain(scale_by_nadam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def _nadamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, weight_decay=1e-4, mask=None):
    return chain(scale_by_nadam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def _adamax(learning_rate, b1=0.9, b2=0.999, eps=1e-8):
    return chain(scale_by_adamax(b1, b2, eps), scale_by_learning_rate(learning_rate))


def _adamaxw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-4, mask=None):
    return chain(scale_by_adamax(b1, b2, eps), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def _radam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, nesterov=False):
    return chain(scale_by_radam(b1, b2, eps, eps_root, threshold, nesterov),
                 scale_by_learning_rate(learning_rate))


def _amsgrad(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
    return chain(scale_by_amsgrad(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def _adabelief(learning_rate, b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, nesterov=False):
    return chain(scale_by_belief(b1, b2, eps, eps_root, nesterov), scale_by_learning_rate(learning_rate))


def _yogi(learning_rate, b1=0.9, b2=0.999, eps=1e-3):
    return chain(scale_by_yogi(b1, b2, eps), scale_by_learning_rate(learning_rate))


def _novograd(learning_rate, b1=0.9, b2=0.25, eps=1e-6, eps_root=0.0, weight_decay=0.0):
    return chain(scale_by_novograd(b1, b2, eps, eps_root, weight_decay),
                 scale_by_learning_rate(learning_rate))


def _lamb(learning_rate, b1=0.9, b2=0.999, eps=1e-6, eps_root=0.0, weight_decay=0.0, mask=None):
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_trust_ratio(), scale_by_learning_rate(learning_rate))


def _lars(learning_rate, weight_decay=0.0, weight_decay_mask=True, trust_coefficient=0.001,
          eps=0.0, trust_ratio_mask=True, momentum=0.9, nesterov=False):
    return chain(masked(add_decayed_weights(weight_decay), weight_decay_mask),
                 masked(scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps),
                        trust_ratio_mask),
                 scale_by_learning_rate(learning_rate), trace(momentum, nesterov))


def _fromage(learning_rate, min_norm=1e-6):
    mult = 1 / fnp.sqrt(1 + learning_rate ** 2)
    return chain(scale_by_trust_ratio(min_norm), scale_by_learning_rate(learning_rate * mult),
                 add_decayed_weights(mult - 1))


def _adadelta(learning_rate=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, weight_decay_mask=None):
    return chain(add_decayed_weights(weight_decay, weight_decay_mask), scale_by_adadelta(rho, eps),
                 scale_by_learning_rate(learning_rate))


def _rprop(learning_rate, eta_minus=0.5, eta_plus=1.2, min_step_size=1e-6, max_step_size=50.0):
    return chain(scale_by_rprop(learning_rate, eta_minus, eta_plus, min_step_size, max_step_size),
                 scale(-1.0))


def _noisy_sgd(learning_rate, eta=0.01, gamma=0.55, key=0):
    return chain(add_noise(eta, gamma, key), scale_by_learning_rate(learning_rate))


def _optimistic_gradient_descent(learning_rate, alpha=1.0, beta=1.0):
    return chain(scale_by_optimistic_gradient(alpha, beta), scale_by_learning_rate(learning_rate))


def _sign_sgd(learning_rate):
    return chain(scale_by_sign(), scale_by_learning_rate(learning_rate))


def _signum(learning_rate, beta=0.9, accumulator_dtype=None):
    return chain(ema(beta, debias=False, accumulator_dtype=accumulator_dtype), scale_by_sign(),
                 scale_by_learning_rate(learning_rate))


def _named(factory, static=(), doc="", example=""):
    def make(*args, **kwargs):
        return inject_hyperparams(factory, static)(**_bound(factory, args, kwargs))
    make.__name__ = make.__qualname__ = factory.__name__.lstrip("_")
    make.__doc__ = (f"{doc}\n\n        >>> loss = lambda p: fnp.sum((p - 3.0) ** 2)\n"
                    f"        >>> opt, params = fg.optim.{make.__name__}({example}), np.zeros(2)\n"
                    "        >>> updates, state = opt.update(fg.grad(loss)(params), "
                    "opt.init(params), params)\n")
    make.__signature__ = inspect.signature(factory)
    return make


def _bound(factory, args, kwargs):
    bound = inspect.signature(factory).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


nadam = _named(_nadam, doc="Adam with Nesterov momentum (NAdam, Dozat 2016).", example="0.1")
nadamw = _named(_nadamw, ("mask",), "NAdam with decoupled weight decay.", "0.1")
adamax = _named(_adamax, doc="Adamax: Adam with the infinity norm (Kingma & Ba 2015).",
                example="0.1")
adamaxw = _named(_adamaxw, ("mask",), "Adamax with decoupled weight decay.", "0.1")
radam = _named(_radam, doc="Rectified Adam (RAdam, Liu et al. 2020).", example="0.1")
amsgrad = _named(_amsgrad, doc="AMSGrad: Adam with the running maximum of the second moment "
                 "(Reddi et al. 2018).", example="0.1")
adabelief = _named(_adabelief, doc="AdaBelief (Zhuang et al. 2020).", example="0.1")
yogi = _named(_yogi, doc="Yogi (Zaheer et al. 2018).", example="0.1")
novograd = _named(_novograd, doc="NovoGrad: layer-wise second moments (Ginsburg et al. 2019).",
                  example="0.1")
lamb = _named(_lamb, ("mask",), "LAMB: Adam's direction with layer-wise trust ratios (You et "
              "al. 2020), for large batches.", "0.1")
lars = _named(_lars, ("weight_decay_mask", "trust_ratio_mask"), "LARS: momentum SGD with "
              "layer-wise trust ratios (You et al. 2017), for large batches.", "0.1")
fromage = _named(_fromage, doc="Fromage (Bernstein et al. 2020): steps relative to each "
                 "layer's norm.", example="0.1")
adadelta = _named(_adadelta, ("weight_decay_mask",), "AdaDelta (Zeiler 2012); learning_rate 1.0 "
                  "is the original method.", "1.0")
rprop = _named(_rprop, doc="Rprop: sign-based steps that adapt per entry (Riedmiller & Braun "
               "1993); full-batch gradients.", example="0.1")
noisy_sgd = _named(_noisy_sgd, ("key",), "SGD with annealed Gaussian gradient noise "
                   "(Neelakantan et al. 2015); `key` a fg.random key or an integer seed.",
                   "0.1, key=fg.random.key(0)")
optimistic_gradient_descent = _named(
    _optimistic_gradient_descent, doc="Optimistic gradient descent (Daskalakis et al. 2018), "
    "for min-max games.", example="0.1")
sign_sgd = _named(_sign_sgd, doc="signSGD (Bernstein et al. 2018): steps of lr times the "
                  "sign of each gradient entry.", example="0.1")
signum = _named(_signum, ("accumulator_dtype",), "Signum (Bernstein et al. 2018): signSGD on "
                "a momentum (an EMA of the gradients, kept in accumulator_dtype).", "0.1")
