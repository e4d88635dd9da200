"""fg.random's gamma family: gamma, loggamma, beta, dirichlet and the draws built on them
(chisquare, f, t, generalized_normal), each differentiable with respect to its shape
parameters by implicit reparameterisation, and poisson, exact rejection as gamma's;
fg.random re-exports them.

Sampling is Marsaglia & Tsang's (2000) squeeze and rejection method for a >= 1, made exact:
an fg.while_loop redraws, with counters of its own each round (fold_in of the round number),
the entries not yet accepted, until all are; for a < 1, Gamma(a) = Gamma(a + 1) U^(1/a),
taken in log space (loggamma) so that tiny a does not underflow to 0.

Derivatives (Figurnov, Mohamed & Mnih 2018, implicit reparameterisation): a draw z solves
P(a, z) = u for a fixed uniform u, P the regularised lower incomplete gamma function, so
dz/da = -(dP(a, z)/da) / p(z; a), p the Gamma(a) density. `_dlogz_da` gives d log z / da
= that over z without special functions (the density cancels term by term):
- z < a + 1: the series P = z^a e^-z sum_n z^n / Gamma(a + n + 1), differentiated term by
  term: d log z / da = -sum_n q_n (log z - psi(a + n + 1)), q_0 = 1/a, q_n = q_(n-1) z/(a + n);
- z >= a + 1: Q = 1 - P = p z F(a, z) with F Legendre's continued fraction 1/(z + 1 - a -
  1(1 - a)/(z + 3 - a - ...)), so d log z / da = (log z - psi(a)) F + dF/da, F and dF/da by
  the Wallis recurrences and their derivatives (rescaled every step).
Both run in fg.while_loop until every entry has converged (terms below 2^-55 of the sum), so
the rule compiles into the draw's kernel and batches. Against mpmath's derivative of the
incomplete gamma function it is within 1e-13 relative for a in [1e-3, 1e3] over the
quantiles 1e-6..1 - 1e-6 (tests/test_random_gamma.py checks 1e-10 against SciPy). The rule is
itself a custom_vjp of the same kind, so derivatives of every order follow.

Imports: funcgrad.numpy, higher_order, _prng (shared with random.py); never random.py.
"""
from __future__ import annotations

import numpy as np

from . import numpy as fnp
from ._prng import _check_key, _float, _result_shape, _unit, fold_in, split
from .higher_order import custom_vjp, stop_gradient, while_loop
from .ir import aval_of

__all__ = ["gamma", "loggamma", "beta", "dirichlet", "chisquare", "f", "t", "generalized_normal",
           "poisson"]

_TINY = 2.0 ** -55            # a term this far below the sum no longer changes it


def _digamma_minus_log(x):
    """psi(x) - log(x) for x > 0, within a few 1e-16 absolutely: below 10, ten steps of
    psi(x) = psi(x + 1) - 1/x; from 10 up, Stirling's asymptotic series (seven terms)."""
    small = x < 10.0
    y = fnp.where(small, x + 10.0, x)
    w = 1.0 / (y * y)
    s = -0.5 / y - w * (1 / 12 - w * (1 / 120 - w * (1 / 252 - w * (1 / 240 - w * (
        1 / 132 - w * (691 / 32760 - w / 12))))))
    shift = sum(1.0 / (x + j) for j in range(10))
    return fnp.where(small, s + fnp.log1p(10.0 / x) - shift, s)


def _series(a, logz):
    """d log z / da from the series of P (for z < a + 1)."""
    z = fnp.exp(logz)
    q = 1.0 / a
    c = logz - fnp.log(a + 1.0) - _digamma_minus_log(a + 1.0)      # log z - psi(a + 1)

    def more(s):
        n, _, _, total, term = s
        tail = fnp.abs(term) * z > _TINY * fnp.abs(total) * (a + n + 1.0 - z)
        return fnp.any((a + n + 1.0 <= z) | tail)

    def step(s):
        n, q, c, total, _ = s
        n = n + 1.0
        q = q * z / (a + n)
        c = c - 1.0 / (a + n)
        return n, q, c, total - q * c, q * c
    return while_loop(more, step, (fnp.zeros_like(a), q, c, -q * c, q * c))[3]


def _fraction(a, logz):
    """d log z / da from the continued fraction of Q (for z >= a + 1)."""
    z = fnp.exp(logz)
    c = logz - fnp.log(a) - _digamma_minus_log(a)                  # log z - psi(a)
    one, zero = fnp.ones_like(a), fnp.zeros_like(a)
    b0 = z + 1.0 - a
    # (n, A_(n-1), A_n, B_(n-1), B_n and their a-derivatives, the last two estimates)
    init = (zero, one, b0, zero, one, zero, -one, zero, zero, c / b0 + 1.0 / (b0 * b0), zero)

    most = 50.0 * fnp.sqrt(a) + 500.0   # (it needs O(sqrt(a)) terms: 98 at a = z = 1000)

    def more(s):                        # until |change| < 2^-46 |g| (rounding: ~4e-15)
        g, g_old = s[9], s[10]
        going = (fnp.abs(g - g_old) > 2.0 ** -46 * fnp.abs(g)) & (s[0] < most)
        return fnp.any((s[0] < 1.0) | going)

    def step(s):
        n, am, a0, bm, b0_, dam, da0, dbm, db0, g, _ = s
        n = n + 1.0
        bn, an = z + 2.0 * n + 1.0 - a, n * (a - n)
        a1, b1 = bn * a0 + an * am, bn * b0_ + an * bm
        da1 = bn * da0 - a0 + an * dam + n * am
        db1 = bn * db0 - b0_ + an * dbm + n * bm
        r = 1.0 / fnp.abs(a1)
        a1, b1, da1, db1 = a1 * r, b1 * r, da1 * r, db1 * r
        frac = b1 / a1
        return (n, a0 * r, a1, b0_ * r, b1, da0 * r, da1, db0 * r, db1,
                c * frac + (db1 * a1 - b1 * da1) / (a1 * a1), g)
    return while_loop(more, step, init)[9]


def _dlogz_da(a, logz):
    """d log z / da of a Gamma(a) draw z held at its quantile (a and logz of one shape); NaN
    where a is not positive and finite or z is not positive and finite."""
    ok = (a > 0.0) & (a < np.inf) & (fnp.abs(logz) < np.inf)
    a, logz = fnp.where(ok, a, 1.0), fnp.where(ok, logz, 0.0)
    use_series = logz < fnp.log(a + 1.0)
    s = _series(a, fnp.where(use_series, logz, fnp.log(a)))
    f = _fraction(a, fnp.where(use_series, fnp.log(a + 2.0), logz))
    return fnp.where(ok, fnp.where(use_series, s, f), np.nan)


def _implicit_log(a, logz):
    """logz (the log of a Gamma(a) draw), with d logz / da the implicit one."""
    return logz


def _implicit_log_bwd(res, g):
    a, logz = res
    return g * _dlogz_da(a, _implicit_log(a, logz)), None


_implicit_log = custom_vjp(_implicit_log)
_implicit_log.defvjp(lambda a, logz: (logz, (a, logz)), _implicit_log_bwd)


def _implicit(a, z):
    """z (a Gamma(a) draw), with dz / da the implicit one."""
    return z


def _implicit_bwd(res, g):
    a, z = res
    z = _implicit(a, z)
    pos = z > 0.0                       # (an underflowed draw: derivative 0 as well)
    logz = fnp.log(fnp.where(pos, z, 1.0))
    return fnp.where(pos, g * z * _dlogz_da(a, logz), 0.0), None


_implicit = custom_vjp(_implicit)
_implicit.defvjp(lambda a, z: (z, (a, z)), _implicit_bwd)


def _rounds(key, shape, n_uniform, propose, init):
    """Rejection rounds until every entry is accepted: round i draws n_uniform uniforms per
    entry from fold_in(key, i); propose(u) -> (candidates, which are accepted)."""
    def step(s):
        i, value, done = s
        u = _unit(fold_in(key, i), shape + (n_uniform,), np.float64)
        cand, ok = propose(u)
        return i + 1, fnp.where(done, value, cand), done | ok
    return while_loop(lambda s: ~fnp.all(s[2]), step,
                      (np.int64(0), init, fnp.zeros(shape, dtype=bool)))[1]


def _marsaglia_tsang(key, a, shape):
    """Gamma(a) draws for a >= 1 (float64, a of the result's shape): rounds of Marsaglia &
    Tsang's method until every entry is accepted (_rounds)."""
    d = a - 1.0 / 3.0
    c = 1.0 / fnp.sqrt(9.0 * d)

    def propose(u):
        x = fnp.sqrt(-2.0 * fnp.log1p(-u[..., 0])) * fnp.cos(2.0 * np.pi * u[..., 1])
        v = (1.0 + c * x) ** 3
        w = u[..., 2] + 2.0 ** -54                      # in (0, 1)
        pos = v > 0.0
        logv = fnp.log(fnp.where(pos, v, 1.0))
        ok = pos & ((w < 1.0 - 0.0331 * x ** 4) |
                    (fnp.log(w) < 0.5 * x * x + d * (1.0 - v + logv)))
        return d * v, ok
    return _rounds(key, shape, 3, propose, fnp.zeros(shape))


def _draw(key, a, shape):
    """(z, log b): Gamma(a) draws are z b, z from Marsaglia & Tsang's method with a + 1 below
    a = 1 and a above, b = U^(1/a) below a = 1 (its log, so that it cannot underflow) and 1
    above; z is NaN where a is not positive (or NaN). No derivative."""
    k_loop, k_boost = split(key)
    valid, small = a > 0.0, a < 1.0
    z = _marsaglia_tsang(k_loop, fnp.where(valid, fnp.where(small, a + 1.0, a), 1.0), shape)
    z = fnp.where(valid, z, np.nan)
    u = _unit(k_boost, shape, np.float64) + 2.0 ** -54
    return z, fnp.where(small, fnp.log(u) / fnp.where(small, a, 1.0), 0.0)


def _params(key, a, shape, name):
    key = _check_key(key, name)
    shape = _result_shape(shape, a)
    a = fnp.broadcast_to(fnp.astype(a, np.float64), shape)
    return key, a, shape


def loggamma(key, a, shape=None, dtype=np.float64):
    """The log of Gamma(a, 1) draws, accurate where the draws themselves underflow (a below
    about 0.01); differentiable with respect to a.

        >>> x = fg.random.loggamma(fg.random.key(0), 1e-3, (3,))
        >>> bool(np.all(x < -20))
        True
    """
    dt = _float(dtype)
    key, a, shape = _params(key, a, shape, "loggamma")
    z, log_b = _draw(key, a, shape)
    logz = fnp.log(z) + log_b
    return fnp.astype(_implicit_log(a, stop_gradient(logz)), dt)


def gamma(key, a, shape=None, dtype=np.float64):
    """Gamma(a, 1) draws (divide by a rate, multiply by a scale for others), differentiable with
    respect to a by implicit reparameterisation (dz/da = -(dP(a, z)/da) / p(z; a)).

        >>> z = fg.random.gamma(fg.random.key(0), np.array([0.5, 2.0, 30.0]))
        >>> z.shape
        (3,)
        >>> g = fg.grad(lambda a: fnp.sum(fg.random.gamma(fg.random.key(0), a, (4,))))(2.0)
    """
    dt = _float(dtype)
    key, a, shape = _params(key, a, shape, "gamma")
    z, log_b = _draw(key, a, shape)
    z = fnp.where(a < 1.0, fnp.exp(fnp.log(z) + log_b), z)
    return fnp.astype(_implicit(a, stop_gradient(z)), dt)


def _split_params(key, name, shape, *params):
    """(two keys, the result's shape, the parameters as float64 arrays broadcast to it)."""
    key = _check_key(key, name)
    shape = _result_shape(shape, *params)
    return split(key, 2), shape, [
        fnp.broadcast_to(fnp.astype(p, np.float64), shape) for p in params]


def beta(key, a, b, shape=None, dtype=np.float64):
    """Beta(a, b) draws, X / (X + Y) for X ~ Gamma(a), Y ~ Gamma(b) (in log space, so that
    small a and b give no 0/0); differentiable with respect to a and b.

        >>> x = fg.random.beta(fg.random.key(0), 2.0, np.array([1.0, 5.0]))
        >>> bool(np.all((x > 0) & (x < 1)))
        True
    """
    keys, shape, (a, b) = _split_params(key, "beta", shape, a, b)
    lx, ly = loggamma(keys[0], a, shape), loggamma(keys[1], b, shape)
    return fnp.astype(fnp.exp(lx - fnp.logaddexp(lx, ly)), _float(dtype))


def dirichlet(key, alpha, shape=None, dtype=np.float64):
    """Dirichlet(alpha) draws (alpha's last axis holds the concentrations; shape is the batch
    shape, broadcast with alpha's other axes): gammas normalised along the last axis, in log
    space; differentiable with respect to alpha.

        >>> x = fg.random.dirichlet(fg.random.key(0), np.array([0.5, 1.0, 2.0]), (4,))
        >>> x.shape, bool(np.allclose(x.sum(axis=-1), 1.0))
        ((4, 3), True)
    """
    key = _check_key(key, "dirichlet")
    alpha = fnp.astype(alpha, np.float64)
    av = aval_of(alpha).shape
    batch = av[:-1] if shape is None else _result_shape(shape, np.empty(av[:-1]))
    lg = loggamma(key, alpha, tuple(batch) + av[-1:])
    top = stop_gradient(fnp.max(lg, axis=-1, keepdims=True))
    lse = top + fnp.log(fnp.sum(fnp.exp(lg - top), axis=-1, keepdims=True))
    return fnp.astype(fnp.exp(lg - lse), _float(dtype))


def chisquare(key, df, shape=None, dtype=np.float64):
    """Chi-square draws with df degrees of freedom (2 Gamma(df / 2)); differentiable with
    respect to df.

        >>> fg.random.chisquare(fg.random.key(0), 3.0, (2,)).shape
        (2,)
    """
    return fnp.astype(2.0 * gamma(_check_key(key, "chisquare"), 0.5 * fnp.asarray(df), shape),
                      _float(dtype))


def f(key, dfnum, dfden, shape=None, dtype=np.float64):
    """F draws, (X / dfnum) / (Y / dfden) for chi-squares X, Y (through loggamma);
    differentiable with respect to dfnum and dfden.

        >>> fg.random.f(fg.random.key(0), 4.0, 7.0, (2,)).shape
        (2,)
    """
    keys, shape, (n, d) = _split_params(key, "f", shape, dfnum, dfden)
    lx, ly = loggamma(keys[0], 0.5 * n, shape), loggamma(keys[1], 0.5 * d, shape)
    return fnp.astype(fnp.exp(lx - ly) * (d / n), _float(dtype))


def t(key, df, shape=(), dtype=np.float64):
    """Student's t draws, Z / sqrt(V / df) for a standard normal Z and a chi-square V;
    differentiable with respect to df.

        >>> fg.random.t(fg.random.key(0), 5.0, (3,)).shape
        (3,)
    """
    keys, shape, (df,) = _split_params(key, "t", shape, df)
    u = _unit(keys[0], shape + (2,), np.float64)
    z = fnp.sqrt(-2.0 * fnp.log1p(-u[..., 0])) * fnp.cos(2.0 * np.pi * u[..., 1])
    lv = loggamma(keys[1], 0.5 * df, shape)           # log(V / 2)
    return fnp.astype(z * fnp.exp(-0.5 * lv) * fnp.sqrt(0.5 * df), _float(dtype))


def generalized_normal(key, p, shape=(), dtype=np.float64):
    """Generalized normal draws, density proportional to exp(-|x|^p) (p = 2: normal with
    variance 1/2; p = 1: Laplace): a random sign times Gamma(1/p)^(1/p); differentiable with
    respect to p.

        >>> fg.random.generalized_normal(fg.random.key(0), 1.5, (3,)).shape
        (3,)
    """
    keys, shape, (p,) = _split_params(key, "generalized_normal", shape, p)
    sign = 2.0 * fnp.floor(2.0 * _unit(keys[0], shape, np.float64)) - 1.0
    return fnp.astype(sign * fnp.exp(loggamma(keys[1], 1.0 / p, shape) / p), _float(dtype))


_LOG_FACTORIALS = np.array([0.0] + list(np.cumsum(np.log(np.arange(1.0, 10.0)))))


def _log_factorial(k):
    """log k! for integers k >= 0 (float64): a table below 10, Stirling's series (seven terms,
    error below 1e-15) from 10 up."""
    x = fnp.maximum(k, 10.0) + 1.0
    w = 1.0 / (x * x)
    tail = (1 / 12 - w * (1 / 360 - w * (1 / 1260 - w * (1 / 1680 - w * (1 / 1188 - w * (
        691 / 360360 - w / 156)))))) / x
    big = (x - 0.5) * fnp.log(x) - x + 0.5 * np.log(2 * np.pi) + tail
    small = fnp.take(_LOG_FACTORIALS, fnp.astype(fnp.clip(k, 0.0, 9.0), np.int64))
    return fnp.where(k < 10.0, small, big)


def poisson(key, lam, shape=None, dtype=np.int64):
    """Poisson(lam) counts, exactly: below lam = 10, Knuth's method (multiply uniforms until
    the product falls below exp(-lam)); from 10 up, Hormann's (1993) transformed rejection
    (PTRS), each in rounds until every entry is done; -1 where lam is negative, infinite or
    NaN. No derivative (the draws are integers).

        >>> k = fg.random.poisson(fg.random.key(0), np.array([0.5, 4.0, 80.0]))
        >>> k.dtype
        dtype('int64')
    """
    key = _check_key(key, "poisson")
    shape = _result_shape(shape, lam)
    lam = stop_gradient(fnp.broadcast_to(fnp.astype(lam, np.float64), shape))
    k_small, k_big = split(key)
    good = (lam >= 0.0) & (lam < np.inf)
    small = lam < 10.0
    limit = fnp.exp(-fnp.where(small & good, lam, 0.0))

    def knuth(s):                       # count until the product of uniforms < exp(-lam)
        i, count, prod, done = s
        prod = prod * (_unit(fold_in(k_small, i), shape, np.float64) + 2.0 ** -54)
        stop = prod < limit
        return i + 1, fnp.where(done | stop, count, count + 1.0), prod, done | stop
    count = while_loop(lambda s: ~fnp.all(s[3]), knuth,
                       (np.int64(0), fnp.zeros(shape), fnp.ones(shape), ~(small & good)))[1]

    lam_b = fnp.where(good & ~small, lam, 10.0)
    loglam, b = fnp.log(lam_b), 0.931 + 2.53 * fnp.sqrt(lam_b)
    a = -0.059 + 0.02483 * b
    inv_alpha, vr = 1.1239 + 1.1328 / (b - 3.4), 0.9277 - 3.6224 / (b - 2.0)

    def ptrs(u):
        uu, v = u[..., 0] + (2.0 ** -54 - 0.5), u[..., 1] + 2.0 ** -54     # both open
        us = 0.5 - fnp.abs(uu)
        k = fnp.floor((2.0 * a / us + b) * uu + lam_b + 0.43)
        quick = (us >= 0.07) & (v <= vr)
        bad = (k < 0.0) | ((us < 0.013) & (v > us))
        logv = fnp.log(v) + fnp.log(inv_alpha) - fnp.log(a / (us * us) + b)
        full = logv <= -lam_b + k * loglam - _log_factorial(fnp.maximum(k, 0.0))
        return k, quick | (~bad & full)
    big = _rounds(k_big, shape, 2, ptrs, fnp.zeros(shape))
    return fnp.astype(fnp.where(good, fnp.where(small, count, big), -1.0), dtype)
