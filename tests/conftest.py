"""Shared test helpers: random inputs by domain, and the one gradient checker."""
import os
import tempfile

import numpy as np
import pytest

# Compiled kernels of the test run go to a private directory, not the user's cache (set
# FUNCGRAD_CACHE_DIR yourself to reuse kernels between runs).
os.environ.setdefault("FUNCGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="funcgrad-test-cache-"))

from funcgrad.testing import check_grads  # noqa: F401  (re-exported for tests)

DOMAINS = {
    "real": lambda r, s: r.standard_normal(s),
    "positive": lambda r, s: r.uniform(0.5, 2.0, s),
    "unit": lambda r, s: r.uniform(-0.9, 0.9, s),
    "nonzero": lambda r, s: r.choice([-1.0, 1.0], s) * r.uniform(0.5, 2.0, s),
    "gt1": lambda r, s: r.uniform(1.5, 3.0, s),
}


def rand(shape, domain="real", seed=0, dtype=np.float64):
    """Random array of `shape` drawn from `domain` (see DOMAINS); 0-d for shape ()."""
    r = np.random.default_rng(seed)
    return np.asarray(DOMAINS[domain](r, shape), dtype=dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
