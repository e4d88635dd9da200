"""What the library loops say when the user's function does not fit them or the iteration
fails (issue 33): the user's line, the function by where it is defined, and advice -- a
vector objective to minimize or fit, values that are not finite at the start or on the way,
a singular Jacobian in root (a Levenberg-Marquardt step instead of an error) and a
rank-deficient Gauss-Newton step."""
import os
import re
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

HERE = re.escape(os.path.basename(__file__))


def _one_warning(record, pattern):
    hits = [w for w in record if issubclass(w.category, RuntimeWarning) and re.search(pattern, str(w.message))]
    assert len(hits) == 1, [str(w.message) for w in record]
    assert os.path.basename(hits[0].filename) == os.path.basename(__file__)
    return str(hits[0].message)


def test_minimize_a_vector_objective_or_a_nan_start():
    with pytest.raises(fg.NonScalarOutputError, match=HERE + r":\d+.*shape \(2,\).*least_squares"):
        fg.optimize.minimize(lambda x: x ** 2 - 1.0, np.ones(2))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        res = fg.optimize.minimize(lambda x: fnp.sum(fnp.sqrt(x)), np.array([-1.0, 2.0]))
    message = _one_warning(record, "fg.optimize.minimize")
    assert "not finite at x0: its value is nan" in message and "fg.debug_nans" in message
    assert res.status == 5 and not res.success and res.nit == 0
    np.testing.assert_array_equal(res.x, [-1.0, 2.0])


def test_root_steps_past_a_singular_jacobian_and_reports_what_it_cannot_solve():
    # J = [[1, 1], [2, 2]] at the start: Newton's step is undefined there; the roots,
    # x0 = +-1 and x1 = 2 - x0, are simple
    F = lambda x: fnp.stack([x[0] + x[1] - 2.1 + 0.1 * x[0] ** 2, 2.0 * x[0] + 2.0 * x[1] - 4.0])
    res = fg.optimize.root(F, np.zeros(2))
    assert res.success, res.message
    assert np.max(np.abs(F(res.x))) <= 1e-10
    np.testing.assert_allclose(np.abs(res.x[0]), 1.0, rtol=1e-9)
    np.testing.assert_allclose(res.x[1], 2.0 - res.x[0], rtol=1e-9)
    # a stationary point of |F|^2 that is not a root, with J = 0: nowhere to go
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        stuck = fg.optimize.root(lambda x: fnp.stack([x[0] ** 2 + 1.0, x[1] ** 3 + 1.0]),
                                 np.zeros(2))
    assert stuck.status == 4 and not stuck.success
    assert "singular" in _one_warning(record, "fg.optimize.root")
    with pytest.raises(ValueError, match=HERE + r":\d+.*returned 3 values for 2 unknowns"):
        fg.optimize.root(lambda x: fnp.stack([x[0], x[1], x[0] * x[1]]), np.ones(2))
    # values that stop being finite: the last finite point is returned
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        bad = fg.optimize.root(lambda x: fnp.log(x) + 5.0, np.array([-1.0]))
    assert bad.status == 3 and "not finite at x0" in _one_warning(record, "fg.optimize.root")


def test_least_squares_refuses_a_nan_start_and_survives_rank_deficiency():
    with pytest.raises(ValueError, match=HERE + r":\d+.*not finite at x0 \(entry 0 is nan\)"):
        fg.optimize.least_squares(lambda x: fnp.log(x) - 1.0, np.array([-1.0, 2.0]))
    # two residuals in x0 + x1 only: J has rank 1 everywhere (Gauss-Newton's normal
    # equations are singular); the best fit is any point of x0 + x1 = 2
    r = lambda x: fnp.stack([x[0] + x[1] - 1.0, x[0] + x[1] - 3.0])
    for method in ("gauss-newton", "lm"):
        res = fg.optimize.least_squares(r, np.array([0.5, 0.0]), method=method)
        assert res.success, (method, res.message)
        np.testing.assert_allclose(res.cost, 1.0, rtol=1e-10)
        np.testing.assert_allclose(np.sum(res.x), 2.0, rtol=1e-8)


def test_odeint_names_nan_and_steps_around_a_trial_domain_error():
    with pytest.raises(fg.ODEError, match=HERE + r":\d+.*NaN or inf.*fg.debug_nans"):
        fg.odeint(lambda y, t: fnp.sqrt(y - 2.0), np.array([1.0]), np.linspace(0.0, 1.0, 3))
    # y' = -sqrt(y): y = (1 - t / 2)^2, reaching 0 at t = 2; large trial steps near the end
    # go below 0, where sqrt is NaN: they are rejected and the step shrunk
    t = np.array([0.0, 1.0, 1.9])
    ys = fg.odeint(lambda y, t: -fnp.sqrt(y), np.array([1.0]), t, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ys[:, 0], (1.0 - t / 2.0) ** 2, rtol=1e-6)


def test_fit_names_a_vector_loss_and_warns_where_the_loss_stops_being_finite():
    with pytest.raises(fg.NonScalarOutputError, match=HERE + r":\d+.*shape \(2,\).*fnp.mean"):
        fg.optim.fit(lambda p: p ** 2, np.array([1.0, 2.0]), fg.optim.sgd(0.1), steps=3)
    # log of a parameter that the first step pushes below 0: NaN from step 1 on
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        res = fg.optim.fit(lambda p: fnp.sum(fnp.log(p) + 2.0 * p), np.array([1.0]),
                           fg.optim.sgd(0.5), steps=4)
    message = _one_warning(record, "fg.optim.fit")
    first = int(np.flatnonzero(~np.isfinite(res.losses))[0])
    assert first > 0 and f"is nan at step {first} of 4" in message
    assert "fg.debug_nans(loss)" in message and "learning rate" in message
    assert np.all(np.isfinite(res.losses[:first]))


def test_root_is_scale_invariant_where_newton_is_defined_or_not():
    """The review's cases: a regular but badly scaled Jacobian keeps Newton's step (one
    iteration), and the LM step of a singular one does not depend on F's scale."""
    res = fg.optimize.root(lambda x: fnp.stack([1e6 * (x[0] - 1.0), 1e-10 * (x[1] - 3.0)]),
                           np.zeros(2))
    assert res.success and res.nit == 1
    np.testing.assert_allclose(res.x, [1.0, 3.0])
    for s in (1.0, 1e-6, 1e-10):
        res = fg.optimize.root(lambda x, s=s: s * fnp.stack([x[0] + x[1] - 2.0,
                                                             2.0 * x[0] + 2.0 * x[1] - 4.0]),
                               np.zeros(2), tol=1e-12 * s)
        assert res.success, (s, res.message)
        np.testing.assert_allclose(res.x, [1.0, 1.0])
