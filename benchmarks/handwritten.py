"""Hand-written Numba baselines: the gradient of each workload's loss, written by hand.

Each `*_grad` takes the same arguments as the workload's loss and returns the gradient with
respect to the first one, computed as a person would write it: one pass that evaluates the
forward quantities the adjoint needs, then the adjoint. Like `fg.grad`, they return only the
gradient, so a forward result the adjoint never uses (log1p in W1) is not computed.
@njit with fastmath=False (error_model="numpy", as funcgrad's backend uses: no Python
ZeroDivisionError checks); the MLP uses np.dot (BLAS) for its matrix products.

`python benchmarks/handwritten.py` checks every gradient against central finite differences
of the workload's NumPy loss.
"""
import numpy as np
from numba import njit, prange

OPTS = dict(fastmath=False, error_model="numpy", cache=True)


@njit(**OPTS)
def elementwise_grad(x):
    """d/dx sum(sin(x) * exp(-x**2) + log1p(x**2)), one loop."""
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        xi = x[i]
        e = np.exp(-xi * xi)
        g[i] = e * (np.cos(xi) - 2.0 * xi * np.sin(xi)) + 2.0 * xi / (1.0 + xi * xi)
    return g


@njit(parallel=True, **OPTS)
def elementwise_grad_parallel(x):
    """The same loop split over Numba's threads with prange."""
    g = np.empty_like(x)
    for i in prange(x.shape[0]):
        xi = x[i]
        e = np.exp(-xi * xi)
        g[i] = e * (np.cos(xi) - 2.0 * xi * np.sin(xi)) + 2.0 * xi / (1.0 + xi * xi)
    return g


@njit(**OPTS)
def rosenbrock_grad(x):
    """d/dx sum(100*(x[1:]-x[:-1]**2)**2 + (1-x[:-1])**2): the loop a person writes, one pass
    computing each g[i] from x[i-1], x[i], x[i+1] (it vectorises; a scatter-style loop,
    g[i] += ...; g[i+1] += ..., does not)."""
    n = x.shape[0]
    g = np.empty_like(x)
    if n == 1:
        g[0] = 0.0
        return g
    g[0] = -400.0 * x[0] * (x[1] - x[0] * x[0]) - 2.0 * (1.0 - x[0])
    for i in range(1, n - 1):
        g[i] = (-400.0 * x[i] * (x[i + 1] - x[i] * x[i]) - 2.0 * (1.0 - x[i])
                + 200.0 * (x[i] - x[i - 1] * x[i - 1]))
    g[n - 1] = 200.0 * (x[n - 1] - x[n - 2] * x[n - 2])
    return g


@njit(**OPTS)
def _mlp_grad_kernel(W1, b1, W2, b2, x, onehot):
    """Forward (tanh layer, linear layer, softmax) and the adjoint of mean cross-entropy."""
    batch = x.shape[0]
    h = np.tanh(np.dot(x, W1) + b1)
    z = np.dot(h, W2) + b2
    dz = np.empty_like(z)
    for i in range(batch):                    # d/dz of -sum(y * log_softmax(z)) / batch
        m = z[i].max()
        p = np.exp(z[i] - m)
        p /= p.sum()
        dz[i] = (p * onehot[i].sum() - onehot[i]) / batch
    da = np.dot(dz, W2.T) * (1.0 - h * h)
    return np.dot(x.T, da), da.sum(axis=0), np.dot(h.T, dz), dz.sum(axis=0)


def mlp_grad(params, x, onehot):
    """The MLP kernel behind the workload's interface: params is a dict, so is the gradient."""
    dW1, db1, dW2, db2 = _mlp_grad_kernel(params["W1"], params["b1"], params["W2"],
                                          params["b2"], x, onehot)
    return {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}


# ---- self-test: gradients against central finite differences ----------------------------

def _fd_check(name, loss, grad, args, eps=1e-6, rtol=1e-6):
    """Compare every gradient entry with a central difference of the NumPy loss."""
    got, wrt = grad(*args), args[0]
    worst = 0.0
    for key, leaf in (wrt.items() if isinstance(wrt, dict) else [(None, wrt)]):
        g = got[key] if key is not None else got
        for idx in np.ndindex(leaf.shape):
            old = leaf[idx]
            leaf[idx] = old + eps
            up = loss(*args)
            leaf[idx] = old - eps
            down = loss(*args)
            leaf[idx] = old
            fd = (up - down) / (2 * eps)
            worst = max(worst, abs(fd - g[idx]) / max(1.0, abs(fd)))
    print(f"  {name:24s} max rel err vs finite differences {worst:.1e}  "
          f"{'ok' if worst < rtol else 'FAILED'}")
    return worst < rtol


def self_test():
    """Check every hand-written gradient on small inputs; True if all pass."""
    from workloads import elementwise_loss, mlp_args, mlp_loss, ops, rosenbrock_loss
    xp = ops("numpy")
    x = np.random.default_rng(0).uniform(-2.0, 2.0, 17)
    cases = [("elementwise", elementwise_loss, elementwise_grad, (x,)),
             ("elementwise (prange)", elementwise_loss, elementwise_grad_parallel, (x,)),
             ("rosenbrock", rosenbrock_loss, rosenbrock_grad, (x,)),
             ("rosenbrock N=3", rosenbrock_loss, rosenbrock_grad, (x[:3].copy(),)),
             ("mlp", mlp_loss, mlp_grad, mlp_args(6, n_in=5, n_hidden=7, n_out=4))]
    return all([_fd_check(name, loss(xp), grad, args) for name, loss, grad, args in cases])


if __name__ == "__main__":
    print("hand-written Numba gradients, self-test:")
    raise SystemExit(0 if self_test() else 1)
