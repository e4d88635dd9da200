"""adjoint="backsolve": the continuous adjoint method for fg.odeint's reverse mode.

Instead of differentiating the solver's steps (which stores every step for the backward pass),
the backward pass solves the adjoint equations backwards in time from the last output:

    dy/dt = f(y, t, p)                 (y again, from the stored outputs, backwards)
    da/dt = -a . df/dy(y, t, p)        (a: the gradient with respect to y(t))
    dg/dt = -a . df/dp(y, t, p)        (g: the gradient with respect to the parameters)

adding each output's cotangent to a when the backward solve passes its time, and restarting y
from the stored forward solution at every output time (as JAX's odeint does). Memory is that of
the outputs alone; the gradient is that of the exact solution, up to the solver's tolerance
(not the exact derivative of the discrete solution that reverse mode through the steps gives).
The times' cotangents: dL/dt_k = g_k . f(y_k, t_k) for k >= 1, dL/dt_0 = -a(t_0) . f(y_0, t_0)
with a(t_0) the adjoint of the later outputs (y(t_0) = y_0 does not move with t_0).
"""
from __future__ import annotations

from .. import numpy as fnp
from ..api.gradients import vjp
from ..api.vmap import vmap
from ..higher_order import custom_vjp, scan

__all__ = ["backsolve"]


def backsolve(rhs, y0, ts, p, forward, backward):
    """ys = forward(f, y0, ts) for f(y, t) = rhs(y, t, p) (a flat state and flat parameters p),
    differentiated in reverse mode by the continuous adjoint, the backward solves made with
    backward(f_aug, z0, (s0, s1)) -> the state at s1. Returns forward's results: (ys, *info)."""
    n, m = y0.shape[0], p.shape[0]

    @custom_vjp
    def solve(y0, ts, p):
        return forward(lambda y, t: rhs(y, t, p), y0, ts)

    def fwd(y0, ts, p):
        out = solve(y0, ts, p)
        return out, (out[0], ts, p)

    def bwd(res, cts):
        ys, ts, p = res
        g = cts[0]

        def augmented(z, s):                 # in reversed time s = -t
            y, a = z[:n], z[n:2 * n]
            f, pull = vjp(lambda y, p: rhs(y, -s, p), y, p)
            ga_y, ga_p = pull(a)
            return fnp.concatenate([-f, ga_y, ga_p])

        def interval(carry, data):
            a, gp = carry
            yk, gk, tk, t_prev = data
            a = a + gk
            z = backward(augmented, fnp.concatenate([yk, a, gp]), fnp.stack([-tk, -t_prev]))
            return (z[n:2 * n], z[2 * n:]), None

        (a, gp), _ = scan(interval, (fnp.zeros(n), fnp.zeros(m)),
                          (ys[1:][::-1], g[1:][::-1], ts[1:][::-1], ts[:-1][::-1]))
        first = -fnp.sum(a * rhs(ys[0], ts[0], p))     # (ys[0] = y0 does not move with t0)
        a0 = a + g[0]
        later = fnp.sum(g[1:] * vmap(lambda y, t: rhs(y, t, p))(ys[1:], ts[1:]), axis=1)
        return a0, fnp.concatenate([first[None], later]), gp

    solve.defvjp(fwd, bwd)
    return solve(y0, ts, p)
