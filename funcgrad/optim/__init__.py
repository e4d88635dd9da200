"""fg.optim: optimizers as optax-shaped gradient transformations, learning-rate schedules, and
whole training loops compiled as one kernel (`fit`).

    >>> loss = lambda p, x, y: fnp.sum((x * p["w"] + p["b"] - y) ** 2)
    >>> params, x, y = {"w": 0.0, "b": 0.0}, np.arange(4.0), 2.0 * np.arange(4.0) + 1.0
    >>> opt = fg.optim.adam(0.1)
    >>> state = opt.init(params)
    >>> for _ in range(300):
    ...     updates, state = opt.update(fg.grad(loss)(params, x, y), state, params)
    ...     params = fg.optim.apply_updates(params, updates)
    >>> round(float(params["w"]), 2), round(float(params["b"]), 2)
    (2.0, 1.0)

See updates.py (transformations and the named optimizers), adaptive.py and factored.py (more
of them, Adafactor), wrappers.py, clipping.py and stepwise.py, lbfgs_scaling.py and
linesearch.py (L-BFGS, the line searches and Polyak's step: their update also takes value=,
grad=, value_fn=), schedules.py, training.py and losses.py (optax's loss functions).
"""
from .schedules import (constant_schedule, cosine_decay_schedule, exponential_decay,
                        join_schedules, linear_schedule, piecewise_constant_schedule,
                        polynomial_schedule, warmup_cosine_decay_schedule)
from . import (adaptive, clipping, factored, lbfgs_scaling, linesearch, losses,  # noqa: F401
               stepwise, wrappers)
from .adaptive import *  # noqa: F401,F403  (adaptive.__all__: more named optimizers)
from .wrappers import *  # noqa: F401,F403  (wrappers.__all__: masked, MultiSteps, ...)
from .lbfgs_scaling import *  # noqa: F401,F403  (lbfgs, scale_by_lbfgs)
from .factored import *  # noqa: F401,F403  (adafactor, scale_by_factored_rms)
from .clipping import *  # noqa: F401,F403  (adaptive_grad_clip, per-example clipping)
from .stepwise import *  # noqa: F401,F403  (apply_every, conditionally_transform, ...)
from .linesearch import *  # noqa: F401,F403  (the line searches, value_and_grad_from_state)
from .training import FitResult, batch_indices, fit
from .updates import (GradientTransformation, GradientTransformationExtraArgs,
                      InjectHyperparamsState, adagrad, adam, adamw,
                      add_decayed_weights, apply_updates, chain, clip_by_global_norm, global_norm,
                      identity, inject_hyperparams, lion, rmsprop, scale, scale_by_adam,
                      scale_by_learning_rate, scale_by_lion, scale_by_rms, scale_by_rss,
                      scale_by_schedule, scale_by_stddev, sgd, trace)

__all__ = ["fit", "FitResult", "batch_indices", "GradientTransformation",
           "GradientTransformationExtraArgs", "InjectHyperparamsState", "adagrad", "adam", "adamw",
           "add_decayed_weights", "apply_updates", "chain", "clip_by_global_norm", "global_norm",
           "identity", "inject_hyperparams", "lion", "rmsprop", "scale", "scale_by_adam",
           "scale_by_learning_rate", "scale_by_lion", "scale_by_rms", "scale_by_rss",
           "scale_by_schedule", "scale_by_stddev", "sgd", "trace", "constant_schedule",
           "cosine_decay_schedule", "exponential_decay", "join_schedules", "linear_schedule",
           "piecewise_constant_schedule", "polynomial_schedule", "warmup_cosine_decay_schedule",
           "losses", *adaptive.__all__, *wrappers.__all__, *lbfgs_scaling.__all__,
           *linesearch.__all__, *factored.__all__, *clipping.__all__,
           *stepwise.__all__]
