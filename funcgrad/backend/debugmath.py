"""Helpers of fg.debug_nans's elementwise checks in generated code (`_vm.debug_check`,
re-exported by vecmath): the value itself, or FloatingPointError(site) where it is NaN (not
finite) while no input of its equation is; the caller maps the site to the message."""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(inline="always", error_model="numpy")
def debug_check(y, site, inputs_bad):
    if y != y and not inputs_bad:
        raise FloatingPointError(site)
    return y


@numba.njit(inline="always", error_model="numpy")
def debug_check_inf(y, site, inputs_bad):
    if not np.isfinite(y) and not inputs_bad:
        raise FloatingPointError(site)
    return y


@numba.njit(error_model="numpy")
def has_nan(a):
    """Whether an array holds a NaN (one pass, no temporary array)."""
    for v in a.flat:
        if v != v:
            return True
    return False


@numba.njit(error_model="numpy")
def has_nonfinite(a):
    """Whether an array holds a NaN or an infinity."""
    for v in a.flat:
        if not np.isfinite(v):
            return True
    return False
