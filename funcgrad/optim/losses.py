"""fg.optim.losses: loss functions with optax's names and signatures (optax.losses).

Each returns the loss per example (no mean over the batch: take fnp.mean yourself, as with
optax) and is written in a numerically stable form: cross-entropies through log_softmax /
log_sigmoid (log-sum-exp), never log(softmax(x)), so logits of +-1e4 give exact finite losses
and gradients. PyTorch's equivalents: nn.CrossEntropyLoss is
softmax_cross_entropy_with_integer_labels (+ mean), nn.BCEWithLogitsLoss is
sigmoid_binary_cross_entropy, nn.MSELoss is squared_error, nn.HuberLoss huber_loss,
nn.KLDivLoss(log_target=False) kl_divergence.

    >>> logits, labels = np.array([[2.0, -1.0, 0.5]]), np.array([0])
    >>> fg.optim.losses.softmax_cross_entropy_with_integer_labels(logits, labels)
    array([0.2413113])
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..nn import log_sigmoid, log_softmax, one_hot, sigmoid, softmax

__all__ = ["l2_loss", "squared_error", "huber_loss", "log_cosh", "cosine_similarity",
           "cosine_distance", "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels",
           "safe_softmax_cross_entropy", "poly_loss_cross_entropy", "sigmoid_binary_cross_entropy",
           "sigmoid_focal_loss", "kl_divergence", "kl_divergence_with_log_targets",
           "convex_kl_divergence", "hinge_loss", "multiclass_hinge_loss", "perceptron_loss",
           "multiclass_perceptron_loss", "smooth_labels", "triplet_margin_loss"]


def _errors(predictions, targets):
    return predictions if targets is None else predictions - targets


def squared_error(predictions, targets=None):
    """(predictions - targets) ** 2, elementwise (targets None: 0).

        >>> fg.optim.losses.squared_error(np.array([1.0, 3.0]), np.array([0.0, 1.0]))
        array([1., 4.])
    """
    return fnp.square(_errors(predictions, targets))


def l2_loss(predictions, targets=None):
    """Half the squared error, elementwise.

        >>> fg.optim.losses.l2_loss(np.array([1.0, 3.0]), np.array([0.0, 1.0]))
        array([0.5, 2. ])
    """
    return 0.5 * squared_error(predictions, targets)


def huber_loss(predictions, targets=None, delta=1.0):
    """Quadratic for errors up to delta, linear beyond: 0.5 e^2 or delta (|e| - delta / 2).

        >>> fg.optim.losses.huber_loss(np.array([0.5, 3.0]), delta=1.0)
        array([0.125, 2.5  ])
    """
    e = fnp.abs(_errors(predictions, targets))
    quadratic = fnp.minimum(e, delta)
    return 0.5 * quadratic ** 2 + delta * (e - quadratic)


def log_cosh(predictions, targets=None):
    """log(cosh(error)), without overflow for large errors (about |e| - log 2 there).

        >>> fg.optim.losses.log_cosh(np.array([0.0, 1000.0]))
        array([  0.        , 999.30685282])
    """
    e = _errors(predictions, targets)
    return fnp.logaddexp(e, -e) - np.log(2.0)


def cosine_similarity(predictions, targets, epsilon=0.0):
    """The cosine of the angle between predictions and targets along the last axis (each
    norm clipped below at epsilon).

        >>> fg.optim.losses.cosine_similarity(np.array([1.0, 0.0]), np.array([1.0, 1.0]))
        np.float64(0.7071067811865475)
    """
    def unit(v):
        return v / fnp.maximum(fnp.linalg.norm(v, axis=-1, keepdims=True), epsilon)
    return fnp.sum(unit(predictions) * unit(targets), axis=-1)


def cosine_distance(predictions, targets, epsilon=0.0):
    """1 - cosine_similarity.

        >>> fg.optim.losses.cosine_distance(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
        np.float64(1.0)
    """
    return 1.0 - cosine_similarity(predictions, targets, epsilon)


def softmax_cross_entropy(logits, labels, axis=-1):
    """-sum(labels * log_softmax(logits)) along axis; labels are probabilities (one-hot or
    smoothed).

        >>> fg.optim.losses.softmax_cross_entropy(np.array([1e4, 0.0]), np.array([0.0, 1.0]))
        np.float64(10000.0)
    """
    return -fnp.sum(labels * log_softmax(logits, axis=axis), axis=axis)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1):
    """logsumexp(logits - logits[label]) along axis: the cross-entropy of integer class labels
    (PyTorch's nn.CrossEntropyLoss before its mean); labels have logits' shape without axis.

        >>> fg.optim.losses.softmax_cross_entropy_with_integer_labels(np.array([[0.0, 0.0]]), np.array([1]))
        array([0.69314718])
    """
    logits = fnp.moveaxis(fnp.asarray(logits), axis, -1)
    picked = fnp.take_along_axis(logits, fnp.asarray(labels)[..., None], axis=-1)
    return fnp.logsumexp(logits - picked, axis=-1)    # (no cancellation of two large numbers)


def safe_softmax_cross_entropy(logits, labels, axis=-1):
    """softmax_cross_entropy where logits of -inf with label 0 contribute 0 (not NaN).

        >>> fg.optim.losses.safe_softmax_cross_entropy(np.array([0.0, -np.inf]), np.array([1.0, 0.0]))
        np.float64(0.0)
    """
    logp = log_softmax(logits, axis=axis)
    return fnp.sum(fnp.where(labels == 0, 0.0, -labels * fnp.where(labels == 0, 0.0, logp)),
                   axis=axis)


def poly_loss_cross_entropy(logits, labels, epsilon=2.0, axis=-1):
    """Poly-1 loss (Leng et al. 2022): cross-entropy + epsilon * (1 - p_label).

        >>> fg.optim.losses.poly_loss_cross_entropy(np.array([0.0, 0.0]), np.array([1.0, 0.0]))
        np.float64(1.6931471805599454)
    """
    one_minus_pt = fnp.sum(labels * (1.0 - softmax(logits, axis=axis)), axis=axis)
    return softmax_cross_entropy(logits, labels, axis) + epsilon * one_minus_pt


def sigmoid_binary_cross_entropy(logits, labels):
    """-labels log sigmoid(logits) - (1 - labels) log sigmoid(-logits), elementwise
    (PyTorch's nn.BCEWithLogitsLoss, unreduced); exact for large |logits|.

        >>> fg.optim.losses.sigmoid_binary_cross_entropy(np.array([-1e4, 0.0]), np.array([1.0, 1.0]))
        array([1.00000000e+04, 6.93147181e-01])
    """
    return -labels * log_sigmoid(logits) - (1.0 - labels) * log_sigmoid(-logits)


def sigmoid_focal_loss(logits, labels, alpha=None, gamma=2.0):
    """Focal loss (Lin et al. 2017): the binary cross-entropy times (1 - p_t) ** gamma, and by
    alpha (positives) / 1 - alpha (negatives) when alpha is given.

        >>> fg.optim.losses.sigmoid_focal_loss(np.array([2.0, -1.0]), np.array([1.0, 0.0]))
        array([0.00180356, 0.02265806])
    """
    p = sigmoid(logits)
    p_t = p * labels + (1.0 - p) * (1.0 - labels)
    loss = sigmoid_binary_cross_entropy(logits, labels) * (1.0 - p_t) ** gamma
    if alpha is not None:
        loss = (alpha * labels + (1.0 - alpha) * (1.0 - labels)) * loss
    return loss


def _xlogx(t):
    return fnp.where(t == 0, 0.0, t * fnp.log(fnp.where(t == 0, 1.0, t)))


def kl_divergence(log_predictions, targets, axis=-1):
    """KL(targets || predictions) = sum(targets * (log targets - log_predictions)) along axis,
    with 0 log 0 = 0 (PyTorch's nn.KLDivLoss, unreduced and summed over axis).

        >>> fg.optim.losses.kl_divergence(np.log(np.array([0.5, 0.5])), np.array([1.0, 0.0]))
        np.float64(0.6931471805599453)
    """
    return fnp.sum(_xlogx(targets) - targets * log_predictions, axis=axis)


def kl_divergence_with_log_targets(log_predictions, log_targets, axis=-1):
    """KL divergence with the targets as log-probabilities too.

        >>> fg.optim.losses.kl_divergence_with_log_targets(np.log([0.5, 0.5]), np.log([0.9, 0.1]))
        np.float64(0.3680642071684971)
    """
    return fnp.sum(fnp.exp(log_targets) * (log_targets - log_predictions), axis=axis)


def convex_kl_divergence(log_predictions, targets, axis=-1):
    """kl_divergence plus sum(predictions - targets): convex in the log-predictions, for
    unnormalised predictions.

        >>> fg.optim.losses.convex_kl_divergence(np.log([0.5, 0.5]), np.array([1.0, 0.0]))
        np.float64(0.6931471805599453)
    """
    return kl_divergence(log_predictions, targets, axis) + fnp.sum(
        fnp.exp(log_predictions) - targets, axis=axis)


def hinge_loss(predictor_outputs, targets):
    """max(0, 1 - outputs * targets), targets in {-1, +1}.

        >>> fg.optim.losses.hinge_loss(np.array([0.3, 2.0]), np.array([1.0, -1.0]))
        array([0.7, 3. ])
    """
    return fnp.maximum(0.0, 1.0 - predictor_outputs * targets)


def multiclass_hinge_loss(scores, labels):
    """max over classes of (score + 1 - [class == label]) minus the label's score (Crammer &
    Singer); labels are integers.

        >>> fg.optim.losses.multiclass_hinge_loss(np.array([[2.0, 0.5, 1.8]]), np.array([0]))
        array([0.8])
    """
    hot = one_hot(labels, fnp.shape(scores)[-1], dtype=fnp.asarray(scores).dtype)
    return fnp.max(scores + 1.0 - hot, axis=-1) - fnp.sum(scores * hot, axis=-1)


def perceptron_loss(predictor_outputs, targets):
    """max(0, -outputs * targets), targets in {-1, +1}.

        >>> fg.optim.losses.perceptron_loss(np.array([0.3, 2.0]), np.array([1.0, -1.0]))
        array([0., 2.])
    """
    return fnp.maximum(0.0, -predictor_outputs * targets)


def multiclass_perceptron_loss(scores, labels):
    """max(scores) minus the label's score; labels are integers.

        >>> fg.optim.losses.multiclass_perceptron_loss(np.array([[2.0, 0.5, 2.5]]), np.array([0]))
        array([0.5])
    """
    hot = one_hot(labels, fnp.shape(scores)[-1], dtype=fnp.asarray(scores).dtype)
    return fnp.max(scores, axis=-1) - fnp.sum(scores * hot, axis=-1)


def smooth_labels(labels, alpha):
    """(1 - alpha) * labels + alpha / num_classes (label smoothing of one-hot labels).

        >>> fg.optim.losses.smooth_labels(np.array([0.0, 1.0]), 0.2)
        array([0.1, 0.9])
    """
    return (1.0 - alpha) * labels + alpha / fnp.shape(labels)[-1]


def triplet_margin_loss(anchors, positives, negatives, axis=-1, norm_degree=2, margin=1.0,
                        eps=1e-6):
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0), d(u, v) = (sum |u - v| **
    norm_degree + eps) ** (1 / norm_degree) along axis (optax's; eps keeps the derivative
    finite where u = v; PyTorch's nn.TripletMarginLoss, unreduced, adds eps to u - v instead).

        >>> a, p, n = np.zeros((1, 2)), np.array([[0.0, 1.0]]), np.array([[3.0, 0.0]])
        >>> fg.optim.losses.triplet_margin_loss(a, p, n)
        array([0.])
    """
    def distance(u, v):
        return (fnp.sum(fnp.abs(u - v) ** norm_degree, axis=axis) + eps) ** (1.0 / norm_degree)
    return fnp.maximum(distance(anchors, positives) - distance(anchors, negatives) + margin, 0.0)
