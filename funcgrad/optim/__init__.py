"""fg.optim: optimizers as optax-shaped gradient transformations, learning-rate schedules, and
whole training loops compiled as one kernel (`fit`).

    >>> opt = fg.optim.adam(1e-3)
    >>> state = opt.init(params)
    >>> updates, state = opt.update(fg.grad(loss)(params, x, y), state, params)
    >>> params = fg.optim.apply_updates(params, updates)

See updates.py (transformations and the named optimizers), schedules.py and training.py.
"""
from .schedules import (constant_schedule, cosine_decay_schedule, exponential_decay,
                        join_schedules, linear_schedule, piecewise_constant_schedule,
                        polynomial_schedule, warmup_cosine_decay_schedule)
from .training import FitResult, batch_indices, fit
from .updates import (GradientTransformation, InjectHyperparamsState, adagrad, adam, adamw,
                      add_decayed_weights, apply_updates, chain, clip_by_global_norm, global_norm,
                      identity, inject_hyperparams, lion, rmsprop, scale, scale_by_adam,
                      scale_by_learning_rate, scale_by_lion, scale_by_rms, scale_by_rss,
                      scale_by_schedule, scale_by_stddev, sgd, trace)

__all__ = ["fit", "FitResult", "batch_indices", "GradientTransformation", "InjectHyperparamsState", "adagrad", "adam", "adamw",
           "add_decayed_weights", "apply_updates", "chain", "clip_by_global_norm", "global_norm",
           "identity", "inject_hyperparams", "lion", "rmsprop", "scale", "scale_by_adam",
           "scale_by_learning_rate", "scale_by_lion", "scale_by_rms", "scale_by_rss",
           "scale_by_schedule", "scale_by_stddev", "sgd", "trace", "constant_schedule",
           "cosine_decay_schedule", "exponential_decay", "join_schedules", "linear_schedule",
           "piecewise_constant_schedule", "polynomial_schedule", "warmup_cosine_decay_schedule"]
