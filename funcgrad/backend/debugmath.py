"""Helpers of fg.debug_nans's checks of whole arrays in generated code (check_code.py;
re-exported by vecmath as `_vm.has_nan`, `_vm.has_nonfinite`)."""
from __future__ import annotations

import numba
import numpy as np


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
