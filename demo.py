"""funcgrad demo: gradients of ordinary NumPy code, checked and timed.

Run:  python demo.py
"""
import time

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp


class no_tiering:
    """Keep fg.grad interpreted (it would otherwise compile itself once hot)."""

    def __enter__(self):
        from funcgrad.tiering import policy
        self.old, policy.threshold = policy.threshold, 0

    def __exit__(self, *exc):
        from funcgrad.tiering import policy
        policy.threshold = self.old


def median_time(fn, *args, repeat=15):
    fn(*args)
    if hasattr(fn, "wait"):       # fg.jit: its kernel compiles in the background; wait for it
        fn.wait()
    fn(*args)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def rosenbrock(x):                       # plain NumPy code, unchanged
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad_by_hand(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def mlp_loss(params, x, labels):
    h = fnp.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    logp = logits - fnp.logsumexp(logits, axis=1, keepdims=True)
    return -fnp.mean(logp[np.arange(len(labels)), labels])


def main():
    print(f"funcgrad {fg.__version__}")
    # 1. the classic: y = x**2, loss = (y - 4)**2, dloss/dx = 4x(x**2 - 4)
    loss = lambda x: (x ** 2 - 4.0) ** 2
    print(f"d/dx (x^2-4)^2 at x=3: {fg.grad(loss)(3.0)}  (closed form {4 * 3 * (9 - 4)})")
    print(f"second derivative:     {fg.grad(fg.grad(loss))(3.0)}  (closed form {12 * 9 - 16})")

    # 2. the IR that funcgrad records
    print("\nThe typed IR of sum(sin(x) * exp(-x**2)):")
    print(fg.make_ir(lambda x: fnp.sum(fnp.sin(x) * fnp.exp(-x ** 2)))(np.ones(4)))

    # 3. gradients of plain NumPy code, against the hand-written adjoint, with timings
    print("\nRosenbrock gradient, N = 100,000 (medians):")
    x = np.random.default_rng(0).uniform(-1, 1, 100_000)
    g = fg.grad(rosenbrock)(x)
    assert np.allclose(g, rosenbrock_grad_by_hand(x), rtol=1e-12)
    t_f = median_time(rosenbrock, x)
    t_h = median_time(rosenbrock_grad_by_hand, x)
    with no_tiering():
        t_g = median_time(fg.grad(rosenbrock), x)
    fast_grad = fg.jit(fg.grad(rosenbrock))
    t0 = time.perf_counter()
    g_jit = fast_grad(x)            # answered by the interpreter while the kernel compiles
    t_first = time.perf_counter() - t0
    assert np.allclose(fast_grad.wait()(x), g, rtol=1e-12)     # the kernel, once ready
    t_native = time.perf_counter() - t0
    assert np.allclose(g_jit, g, rtol=1e-12)
    t_j = median_time(fast_grad, x)
    print(f"  NumPy loss (forward only)      {t_f * 1e3:8.3f} ms")
    print(f"  hand-written NumPy gradient    {t_h * 1e3:8.3f} ms")
    print(f"  fg.grad, interpreted           {t_g * 1e3:8.3f} ms  ({t_g / t_f:.1f}x the loss)")
    print(f"  fg.jit(fg.grad), compiled      {t_j * 1e3:8.3f} ms  ({t_j / t_f:.2f}x the loss; "
          f"first call {t_first:.2f} s, native after {t_native:.2f} s)")
    x3 = x[:3].copy()
    fast_grad(x3)                      # answered by the interpreter while its kernel compiles
    fast_grad.wait()(x3)
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        fast_grad(x3)
    print(f"  per-call latency at N=3        {(time.perf_counter() - t0) / n * 1e6:8.2f} us")

    # 4. a small MLP with parameters in a dict
    print("\nA 2-layer MLP 64-128-10 (parameters in a dict), three steps of gradient descent:")
    rng = np.random.default_rng(1)
    params = {"W1": rng.standard_normal((64, 128)) * 0.1, "b1": np.zeros(128),
              "W2": rng.standard_normal((128, 10)) * 0.1, "b2": np.zeros(10)}
    xb, labels = rng.standard_normal((256, 64)), rng.integers(0, 10, 256)
    value_and_grad = fg.value_and_grad(mlp_loss)
    for step in range(3):
        value, grads = value_and_grad(params, xb, labels)
        params = fg.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)
        print(f"  MLP step {step}: loss {value:.4f}")
    with no_tiering():
        t = median_time(value_and_grad, params, xb, labels, repeat=5)
    t_j = median_time(fg.jit(value_and_grad), params, xb, labels, repeat=5)
    print(f"  MLP 64-128-10, batch 256, value_and_grad: interpreted {t * 1e3:.2f} ms, "
          f"compiled {t_j * 1e3:.2f} ms")


    # 5. reverse mode through a while loop whose trip count is known only at run time
    def newton_sqrt(a):
        return fg.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12 * a,
                             lambda x: 0.5 * (x + a / x), a)
    d = fg.jit(fg.grad(newton_sqrt))
    print(f"\nd/da sqrt(a) through a Newton while_loop at a=2: {d(2.0)}  "
          f"(closed form {0.5 / np.sqrt(2.0)})")
    d.wait()(2.0)                       # (the kernel the first call started compiling)
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        d(2.0)
    print(f"  compiled, per call incl. dispatch  {(time.perf_counter() - t0) / n * 1e6:8.2f} us")


if __name__ == "__main__":
    main()
