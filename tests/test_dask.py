"""fg.dask: data-parallel values and gradients over the row chunks of Dask arrays, on a
distributed.LocalCluster of two worker processes; equal to the single-process run of the same
chunked sums (dask's synchronous scheduler) exactly, to the in-memory gradient to 1e-12;
warmup compiles on every worker; fg.dask.fit trains a logistic regression on data larger
than one chunk; bad arguments get clear errors."""
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")
cloudpickle.register_pickle_by_value(sys.modules[__name__])    # workers cannot import tests/

R = np.random.default_rng(0)
N, D = 3000, 6
X_NP = R.standard_normal((N, D))
Y_NP = (X_NP @ R.standard_normal(D) + 0.3 * R.standard_normal(N) > 0) * 1.0
W0 = 0.1 * R.standard_normal(D)
X = da.from_array(X_NP, chunks=(700, -1))          # 5 chunks, the last smaller
Y = da.from_array(Y_NP, chunks=700)


def logistic(w, X, y):                               # a sum over rows
    z = X @ w
    return fnp.sum(fnp.logaddexp(0.0, z) - y * z)


def mean_squares(w, X, y):                           # a mean over rows
    return fnp.mean((fnp.tanh(X @ w) - y) ** 2)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


def test_values_and_gradients_on_two_workers(client):
    vg = fg.dask.value_and_grad(logistic)
    assert set(fg.dask.warmup(client, vg, W0, X, Y).values()) == {2}   # chunk shapes 700, 200
    value, g = vg(W0, X, Y)
    ref_value, ref_g = vg.delayed(W0, X, Y).compute(scheduler="sync")
    assert value == ref_value and np.array_equal(g, ref_g)    # the same sums, in one process
    want_value, want_g = fg.value_and_grad(logistic)(W0, X_NP, Y_NP)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(g, want_g, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(fg.dask.grad(logistic)(W0, X, Y), g)
    mean = fg.dask.value_and_grad(mean_squares, reduction="mean")(W0, X, Y)
    want = fg.value_and_grad(mean_squares)(W0, X_NP, Y_NP)
    np.testing.assert_allclose(mean[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(mean[1], want[1], rtol=1e-12, atol=1e-15)


def test_pytree_parameters_and_rechunked_data(client):
    def loss(p, X, y):
        return fnp.sum((X @ p["w"] + p["b"] - y) ** 2)
    p = {"w": W0, "b": np.float64(0.5)}
    g = fg.dask.grad(loss)(p, X, Y.rechunk(1000))           # y's chunks follow X's
    want = fg.grad(loss)(p, X_NP, Y_NP)
    np.testing.assert_allclose(g["w"], want["w"], rtol=1e-12)
    np.testing.assert_allclose(g["b"], want["b"], rtol=1e-12)


def test_fit_a_logistic_regression_on_the_cluster(client):
    res = fg.dask.fit(logistic, W0, fg.optim.adam(0.05), steps=15, data=(X, Y))
    local = fg.optim.fit(logistic, W0, fg.optim.adam(0.05), steps=15, data=(X_NP, Y_NP))
    assert res.losses[-1] < 0.8 * res.losses[0]
    np.testing.assert_allclose(res.losses, local.losses, rtol=1e-10)
    np.testing.assert_allclose(res.params, local.params, rtol=1e-9)


def test_clear_errors():
    vg = fg.dask.value_and_grad(logistic)
    with pytest.raises(ValueError, match="names Dask data"):
        fg.dask.value_and_grad(logistic, argnums=1)(W0, X, Y)
    with pytest.raises(TypeError, match="no argument is a Dask array"):
        vg(W0, X_NP, Y_NP)
    with pytest.raises(ValueError, match="share their rows"):
        vg(W0, X, Y[:100])
    with pytest.raises(ValueError, match="reduction="):
        fg.dask.value_and_grad(logistic, reduction="max")


def test_the_core_does_not_import_dask():
    code = "import sys, funcgrad; assert 'dask' not in sys.modules; funcgrad.dask; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
