"""fnp.fft: every function against NumPy (values and dtypes, with n/s, axis/axes and norm),
derivatives against central differences at orders 1 and 2 in both modes (check_grads moves
complex inputs in both directions), closed forms (Parseval, the adjoint of the DFT), plain
np.fft on traced values, fg.jit (rocket-fft in compiled code) and fg.vmap equal to the
interpreter. The compiled forward and backward passes are also in the backend matrix."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from conftest import check_grads

F = fnp.fft
R = np.random.default_rng(7)
X = R.standard_normal((4, 6))
Z = X + 1j * R.standard_normal((4, 6))
Y = R.standard_normal(5)

# (name, arguments, keywords)
CASES = [
    ("fft", (Z,), {}), ("fft", (Y,), dict(n=8, norm="ortho")), ("fft", (X,), dict(n=4, axis=0)),
    ("ifft", (Z,), dict(axis=0, n=3)), ("ifft", (Z,), dict(norm="forward")),
    ("rfft", (X,), {}), ("rfft", (Y,), dict(n=9, norm="forward")), ("rfft", (X,), dict(axis=0, n=3)),
    ("irfft", (Z,), {}), ("irfft", (Z,), dict(n=7, norm="ortho", axis=0)), ("irfft", (Z[0],), dict(n=12)),
    ("fft2", (Z,), {}), ("ifft2", (Z,), dict(s=(3, 8))), ("rfft2", (X,), dict(norm="ortho")),
    ("irfft2", (Z,), {}), ("fftn", (Z,), {}), ("ifftn", (Z,), dict(axes=(0,))),
    ("rfftn", (X,), dict(s=(5, 4), axes=(0, 1))), ("irfftn", (Z,), dict(s=(4, 9), axes=(0, 1))),
    ("hfft", (Z,), {}), ("hfft", (Z[1],), dict(n=9, norm="ortho")), ("ihfft", (Y,), {}),
    ("ihfft", (X,), dict(norm="forward", axis=0)), ("fftshift", (X,), {}),
    ("ifftshift", (Z,), dict(axes=1)),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, _, kw in CASES]


@pytest.mark.parametrize("name, args, kw", CASES, ids=IDS)
def test_values_and_derivatives(name, args, kw):
    f = lambda *a: getattr(F, name)(*a, **kw)
    want = getattr(np.fft, name)(*args, **kw)
    got = evaluate(f, *args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    check_grads(f, args, order=2)
    # plain np.fft on a traced value reaches fnp.fft
    np.testing.assert_array_equal(fg.grad(lambda *a: fnp.sum(fnp.abs(getattr(np.fft, name)(*a, **kw))))(*args),
                                  fg.grad(lambda *a: fnp.sum(fnp.abs(f(*a))))(*args))


def test_closed_forms():
    # Parseval: sum |fft(x)|^2 = n sum |x|^2, so the gradient is 2 n x (real x) and 2 n z
    # (complex z: df/dx + i df/dy)
    n = X.shape[1]
    loss = lambda x: fnp.sum(fnp.abs(F.fft(x)) ** 2)
    np.testing.assert_allclose(fg.grad(loss)(X), 2 * n * X, rtol=1e-12)
    np.testing.assert_allclose(fg.grad(loss)(Z), 2 * n * Z, rtol=1e-12)
    # the vjp of fft is fft (the DFT matrix is symmetric), of rfft the real part of the
    # padded fft
    ct = R.standard_normal((4, 6)) + 1j * R.standard_normal((4, 6))
    np.testing.assert_allclose(fg.vjp(F.fft, Z)[1](ct)[0], np.fft.fft(ct), rtol=1e-12)
    half = ct[:, :4]
    padded = np.concatenate([half, np.zeros((4, 2))], axis=1)
    np.testing.assert_allclose(fg.vjp(F.rfft, X)[1](half)[0], np.fft.fft(padded).real, rtol=1e-12)
    # fftfreq with a traced spacing d: d/dd sum(f^2) = -2 sum(f^2) / d
    d = 0.1
    g = fg.grad(lambda d: fnp.sum(F.fftfreq(8, d) ** 2))(d)
    assert g == pytest.approx(-2 * np.sum(np.fft.fftfreq(8, d) ** 2) / d, rel=1e-12)
    np.testing.assert_array_equal(F.rfftfreq(9, 0.5), np.fft.rfftfreq(9, 0.5))


def test_jit_and_vmap_equal_interpreter():
    def spectral(x, z):
        smooth = F.irfft(F.rfft(x) * np.exp(-np.arange(4.0)), n=6)
        return fnp.sum(smooth ** 2) + fnp.sum(fnp.abs(F.ifft2(z * F.fft2(z))))
    args = (X, Z)
    for nums in ((0,), (1,)):
        vg = fg.value_and_grad(spectral, argnums=nums)
        want = vg(*args)
        got = fg.jit(vg)(*args)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        np.testing.assert_allclose(got[1][0], want[1][0], rtol=1e-12, atol=1e-13)
    batched = fg.vmap(lambda r: F.rfft(r, n=8, norm="ortho"))(X)
    np.testing.assert_allclose(batched, np.fft.rfft(X, n=8, norm="ortho"), rtol=1e-13)
    src = fg.jit(lambda z: F.fft(z)).lower(Z).source
    from funcgrad.backend.statements import ROCKET_FFT
    assert ("np.fft.fft(" in src) == ROCKET_FFT          # native unless rocket-fft is missing


def test_errors():
    with pytest.raises(ValueError, match="Invalid norm"):
        fg.jit(lambda x: F.fft(x, norm="unitary"))(X)
    with pytest.raises(TypeError, match=r"fnp.real\(a\)"):
        fg.jit(F.rfft)(Z)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        fg.jit(lambda x: F.fft(x, n=0))(X)
