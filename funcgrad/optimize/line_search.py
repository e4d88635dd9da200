"""A strong-Wolfe line search (Nocedal & Wright, Numerical Optimization, Algorithms 3.5 and
3.6, with cubic interpolation in the zoom) written as one fg.while_loop, so that it runs inside
a compiled minimizer. Every trial costs one evaluation of the value and the gradient.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..higher_order.loops import while_loop

__all__ = ["strong_wolfe"]


def _cubic_min(a, fa, da, b, fb, db):
    """The minimiser of the cubic through (a, fa, da) and (b, fb, db), or nan."""
    d1 = da + db - 3 * (fa - fb) / (a - b)
    disc = d1 * d1 - da * db
    d2 = fnp.sign(b - a) * fnp.sqrt(fnp.maximum(disc, 0.0))
    out = b - (b - a) * (db + d2 - d1) / (db - da + 2 * d2)
    return fnp.where(disc >= 0, out, np.nan)


def strong_wolfe(value_and_grad, x, d, f0, g0, a0=1.0, *, c1=1e-4, c2=0.9, maxls=20,
                 project=None):
    """A step a along d with f(x + a d) <= f0 + c1 a g0.d and |g(x + a d).d| <= c2 |g0.d|.

    value_and_grad(x) -> (f, g); project(x), when given, maps a trial point back into the
    feasible set (bounds). Returns (a, f(x + a d), g(x + a d), evaluations, found): when no
    step satisfies both conditions within maxls trials, the best step found so far (0 if none
    lowered f) with found False.

        >>> vg = fg.value_and_grad(lambda x: fnp.sum(x ** 2))
        >>> x = np.array([1.0, 2.0]); f0, g0 = vg(x)
        >>> a, f, g, evaluations, found = fg.optimize.strong_wolfe(vg, x, -g0, f0, g0)
        >>> a, found                       # x - 0.5 g0 is the minimum
        (0.5, True)
    """
    dphi0 = fnp.sum(g0 * d)
    point = (lambda a: x + a * d) if project is None else (lambda a: project(x + a * d))

    def cond(s):
        return (~s["done"]) & (s["j"] < maxls)

    def body(s):
        a = s["a"]
        f, g = value_and_grad(point(a))
        dp = fnp.sum(g * d)
        zoom, lo, hi = s["zoom"], s["lo"], s["hi"]
        higher = (f > f0 + c1 * a * dphi0) | ((s["j"] > 0) & (f >= s["f_lo"])) | ~fnp.isfinite(f)
        accept = ~higher & (fnp.abs(dp) <= -c2 * dphi0)
        # the new bracket: [lo, hi] always contains a point satisfying both conditions
        to_hi = ~higher & ((zoom & (dp * (hi - lo) >= 0)) | (~zoom & (dp >= 0)))
        new = {"j": s["j"] + 1, "done": accept,
               "zoom": zoom | higher | to_hi,
               "hi": fnp.where(higher, a, fnp.where(to_hi, lo, hi)),
               "f_hi": fnp.where(higher, f, fnp.where(to_hi, s["f_lo"], s["f_hi"])),
               "d_hi": fnp.where(higher, dp, fnp.where(to_hi, s["d_lo"], s["d_hi"])),
               "lo": fnp.where(higher, lo, a),
               "f_lo": fnp.where(higher, s["f_lo"], f),
               "d_lo": fnp.where(higher, s["d_lo"], dp),
               "g_lo": fnp.where(higher, s["g_lo"], g)}
        lo2, hi2 = new["lo"], new["hi"]
        trial = _cubic_min(lo2, new["f_lo"], new["d_lo"], hi2, new["f_hi"], new["d_hi"])
        width = fnp.abs(hi2 - lo2)
        inside = (trial > fnp.minimum(lo2, hi2) + 0.1 * width) & (trial < fnp.maximum(lo2, hi2)
                                                                  - 0.1 * width)
        zoomed = fnp.where(inside, trial, 0.5 * (lo2 + hi2))
        new["a"] = fnp.where(new["zoom"], zoomed, 2.0 * a)
        return new

    zero = fnp.zeros_like(f0)
    init = {"j": np.int64(0), "done": np.bool_(False), "zoom": np.bool_(False),
            "a": fnp.asarray(a0, np.float64) + zero,
            "lo": zero, "f_lo": f0 + zero, "d_lo": dphi0 + zero, "g_lo": g0 + 0 * d,
            "hi": zero, "f_hi": f0 + zero, "d_hi": dphi0 + zero}
    s = while_loop(cond, body, init)
    return s["lo"], s["f_lo"], s["g_lo"], s["j"], s["done"]
