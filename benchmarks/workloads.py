"""The benchmark workloads: each loss written once against a small array namespace `xp`.

`ops(name)` gives that namespace for one framework (numpy, funcgrad, autograd, jax, torch); a
loss is built with `spec.loss(ops(name))`. Frameworks are imported only when asked for, so a
fresh process timing one implementation imports nothing else.
"""
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np

import handwritten as hw


# ---- the losses ---------------------------------------------------------------------------

def elementwise_loss(xp):
    def elementwise(x):
        return xp.sum(xp.sin(x) * xp.exp(-x ** 2) + xp.log1p(x ** 2))
    return elementwise


def rosenbrock_loss(xp):
    def rosenbrock(x):
        return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    return rosenbrock


def mlp_loss(xp):
    def mlp(params, x, onehot):
        h = xp.tanh(x @ params["W1"] + params["b1"])
        z = h @ params["W2"] + params["b2"]
        logp = z - xp.logsumexp_rows(z)
        return -xp.sum(onehot * logp) / x.shape[0]
    return mlp


# ---- inputs (the first argument is the one differentiated) ------------------------------

def vector_args(n):
    return (np.random.default_rng(0).uniform(-1.0, 1.0, n),)


def mlp_args(batch, n_in=64, n_hidden=128, n_out=10):
    rng = np.random.default_rng(1)
    params = {"W1": rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in),
              "b1": rng.standard_normal(n_hidden) * 0.1,
              "W2": rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden),
              "b2": rng.standard_normal(n_out) * 0.1}
    onehot = np.eye(n_out)[rng.integers(0, n_out, batch)]
    return params, rng.standard_normal((batch, n_in)), onehot


# ---- the workload table -------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    loss: Callable            # xp -> loss function
    make_args: Callable       # () -> tuple of NumPy arguments
    hand: Callable            # hand-written Numba gradient, same arguments as the loss
    hand_parallel: Callable = None
    unit: str = "ms"          # how the table prints this workload's times


WORKLOADS = [
    Workload("W1", "grad sum(sin(x)*exp(-x**2) + log1p(x**2)), n=10**6", elementwise_loss,
             lambda: vector_args(10 ** 6), hw.elementwise_grad,
             hand_parallel=hw.elementwise_grad_parallel),
    Workload("W2", "grad Rosenbrock, N=10**5", rosenbrock_loss,
             lambda: vector_args(10 ** 5), hw.rosenbrock_grad),
    Workload("W3", "grad Rosenbrock, N=3: latency per call", rosenbrock_loss,
             lambda: vector_args(3), hw.rosenbrock_grad, unit="us"),
    Workload("W4", "grad MLP 64-128-10 tanh, softmax xent, batch 256", mlp_loss,
             lambda: mlp_args(256), hw.mlp_grad),
]
BY_KEY = {w.key: w for w in WORKLOADS}


# ---- one array namespace per framework ----------------------------------------------------

def _np_logsumexp_rows(z):
    m = z.max(axis=1, keepdims=True)
    return m + np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))


def _namespace(mod, logsumexp_rows):
    return SimpleNamespace(sin=mod.sin, exp=mod.exp, log1p=mod.log1p, tanh=mod.tanh, sum=mod.sum,
                           logsumexp_rows=logsumexp_rows)


def ops(name):
    """The array namespace of framework `name`; raises ImportError if it is not installed."""
    if name == "numpy":
        return _namespace(np, _np_logsumexp_rows)
    if name == "funcgrad":
        import funcgrad.numpy as fnp
        return _namespace(fnp, lambda z: fnp.logsumexp(z, axis=1, keepdims=True))
    if name == "autograd":
        import autograd.numpy as anp
        from autograd.scipy.special import logsumexp
        return _namespace(anp, lambda z: logsumexp(z, axis=1, keepdims=True))
    if name == "jax":
        import jax
        import jax.numpy as jnp
        return _namespace(jnp, lambda z: jax.nn.logsumexp(z, axis=1, keepdims=True))
    if name == "torch":
        import torch
        return _namespace(torch, lambda z: torch.logsumexp(z, 1, keepdim=True))
    raise ValueError(name)
