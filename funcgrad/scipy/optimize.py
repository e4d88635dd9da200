"""SciPy's optimizers driven by compiled derivatives: `fg.scipy.minimize` and
`fg.scipy.least_squares` take SciPy's arguments and return SciPy's result, with the gradient,
Hessian-vector product or Jacobian computed by funcgrad kernels instead of finite differences.

    >>> res = fg.scipy.minimize(loss, {"w": np.zeros(3), "b": 0.0}, args=(X, y))
    >>> res.x["w"], res.fun, res.nit

x0 may be a pytree; SciPy sees it as one flat float64 vector (fg.flatten_util.ravel_pytree),
and `res.x` (and `res.jac` for minimize) come back in x0's structure: integer and bool leaves
as float64 (SciPy's rule), float32 leaves as float32 (fun sees them in float32). `bounds`, constraints
and every other keyword go to SciPy unchanged and refer to that flat vector.
"""
from __future__ import annotations

import numpy as np

from ..api.derivatives import hessian, jacfwd, jacrev, jvp
from ..api.gradients import grad, value_and_grad
from ..api.jit import jit
from ..flatten_util import float_leaves, ravel_pytree

__all__ = ["minimize", "least_squares"]

# SciPy's methods that use a Hessian-vector product when given one
_HESSP = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
# those that need the Hessian itself (a dense matrix: for problems of modest size)
_HESS = {"trust-exact", "dogleg"}
# and those that take no gradient at all
_NO_JAC = {"nelder-mead", "powell", "cobyla", "cobyqa"}


def _flat_problem(fun, x0):
    """x0 as SciPy's float64 vector (integer leaves made float, as SciPy does: read back as
    integers they would hold the solver at x0), unravel, and fun on that vector."""
    flat0, unravel = ravel_pytree(float_leaves(x0))
    flat0 = np.asarray(flat0, np.float64)
    return flat0, unravel, (lambda x, *args: fun(unravel(x), *args))


def minimize(fun, x0, args=(), method="L-BFGS-B", **kwargs):
    """scipy.optimize.minimize(fun, x0, args, method, ...) with `jac` from one compiled
    value-and-gradient kernel (one call per SciPy evaluation) and, for Newton-CG,
    trust-constr and the trust-region Krylov methods, `hessp` from a compiled Hessian-vector
    product (forward-over-reverse); trust-exact and dogleg get `hess`, the compiled Hessian.
    `fun(x, *args)` returns a scalar. res.jac (res.grad for trust-constr) has x0's structure.

        >>> rosen = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        >>> res = fg.scipy.minimize(rosen, np.zeros(2))           # L-BFGS-B
        >>> res.x, res.nit
        (array([0.99999971, 0.9999994 ]), 21)
    """
    import scipy.optimize
    for given in ("jac", "hessp", "hess"):
        if given in kwargs:
            raise TypeError(f"fg.scipy.minimize computes {given} itself; call "
                            f"scipy.optimize.minimize directly to pass your own")
    flat0, unravel, f = _flat_problem(fun, x0)
    name = (method or "").lower() if isinstance(method, str) else ""
    if name in _NO_JAC:
        value = jit(f)
        res = scipy.optimize.minimize(lambda x, *a: float(value(x, *a)), flat0, args=args,
                                      method=method, **kwargs)
    else:
        vg = jit(value_and_grad(f))

        def fun_and_jac(x, *a):
            value, g = vg(x, *a)
            return float(value), np.asarray(g, np.float64)
        if name in _HESSP:
            hvp = jit(lambda x, p, *a: jvp(lambda y: grad(f)(y, *a), (x,), (p,))[1])
            kwargs["hessp"] = lambda x, p, *a: np.asarray(hvp(x, p, *a), np.float64)
        elif name in _HESS:
            h = jit(hessian(f))
            kwargs["hess"] = lambda x, *a: np.asarray(h(x, *a), np.float64)
        res = scipy.optimize.minimize(fun_and_jac, flat0, args=args, method=method, jac=True,
                                      **kwargs)
    res.x = unravel(res.x)
    # the objective's gradient: res.jac, except for trust-constr, whose res.jac holds the
    # constraints' Jacobians (a list) and res.grad the gradient
    field = "grad" if name == "trust-constr" else "jac"
    if field in res:
        res[field] = unravel(np.asarray(res[field], np.float64))
    return res


def least_squares(fun, x0, args=(), **kwargs):
    """scipy.optimize.least_squares(fun, x0, args=args, ...) with `jac` from a compiled
    Jacobian kernel (forward mode when there are fewer parameters than residuals, reverse
    mode otherwise). `fun(x, *args)` returns the residual vector.

        >>> t = np.linspace(0.0, 1.0, 5); y = 2.0 * np.exp(-1.5 * t)
        >>> fg.scipy.least_squares(lambda p: p[0] * fnp.exp(-p[1] * t) - y, np.ones(2)).x
        array([2. , 1.5])
    """
    import scipy.optimize
    if "jac" in kwargs:
        raise TypeError("fg.scipy.least_squares computes jac itself; call "
                        "scipy.optimize.least_squares directly to pass your own")
    flat0, unravel, f = _flat_problem(fun, x0)
    m = int(np.size(f(flat0, *args)))
    residuals, jac = jit(f), jit((jacfwd if flat0.size <= m else jacrev)(f))
    res = scipy.optimize.least_squares(
        lambda x, *a: np.asarray(residuals(x, *a), np.float64).ravel(), flat0, args=args,
        jac=lambda x, *a: np.asarray(jac(x, *a), np.float64).reshape(m, -1), **kwargs)
    res.x = unravel(res.x)
    return res
