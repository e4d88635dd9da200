"""Smoke test of an installed funcgrad (the wheel, in a fresh venv, run from outside the
repository): one gradient, one fg.jit kernel, fg.odeint and fg.optim.fit, each against its
closed form. Run by .ci/run as `<venv>/bin/python -I .ci/smoke.py` (-I: neither the current
folder nor the script's is on sys.path, so only the installed package can be imported)."""
import os
import sys
import sysconfig

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp

site = os.path.realpath(sysconfig.get_paths()["purelib"])
where = os.path.realpath(fg.__file__)
assert where.startswith(site), f"funcgrad imported from {where}, not the venv's {site}"

x = np.array([0.3, -1.2, 2.0])
np.testing.assert_allclose(fg.grad(lambda v: fnp.sum(fnp.sin(v) ** 2))(x), np.sin(2 * x))

f = fg.jit(lambda v: fnp.sum(fnp.exp(v) * v))
np.testing.assert_allclose(f(x), np.sum(np.exp(x) * x))
np.testing.assert_allclose(fg.jit(fg.grad(lambda v: fnp.sum(fnp.exp(v) * v)))(x),
                           np.exp(x) * (1 + x))

t = np.linspace(0.0, 1.0, 5)
k = 0.7
ys = fg.odeint(lambda y, t, k: -k * y, np.array([1.0, 2.0]), t, k)
np.testing.assert_allclose(ys, np.exp(-k * t)[:, None] * [1.0, 2.0], rtol=1e-6)
dk = fg.grad(lambda k: fg.odeint(lambda y, t, k: -k * y, 1.0, t, k)[-1])(k)
np.testing.assert_allclose(dk, -np.exp(-k), rtol=1e-6)

result = fg.optim.fit(lambda p: fnp.sum((p - 3.0) ** 2), np.zeros(2), fg.optim.adam(0.1),
                      steps=500)
np.testing.assert_allclose(result.params, [3.0, 3.0], atol=1e-3)

print(f"smoke test passed: funcgrad from {os.path.dirname(where)} (Python {sys.version.split()[0]})")
