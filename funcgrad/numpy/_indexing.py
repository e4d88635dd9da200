"""NumPy's functions whose result's size depends on the values (nonzero, flatnonzero, argwhere):
NumPy's answer on plain arrays, a ConcretizationError naming the alternatives on traced ones.

Indexing itself (x[idx], x.at[idx], gather and scatter) is in funcgrad/primitives/indexing.py,
take and take_along_axis in funcgrad/primitives/shape.py.
"""
from __future__ import annotations

import numpy as np

from .._errors import ConcretizationError, user_frame, where
from ..ir import Traced
from ..primitives.base import export


def _value_dependent(name, replacement):
    def fn(a, *args, **kwargs):
        if isinstance(a, Traced):
            value = a.known_value()        # the call's value (dynamic Python): the indices
            if value is None:              # are integers, so nothing is lost by using it
                raise ConcretizationError(
                    f"np.{name} on a traced array{where(user_frame())}: the size of its result "
                    "depends on the values, and here (fg.vmap, a loop body, an fg.cond branch) "
                    f"one traced array stands for many. {replacement}")
            a = value
        return getattr(np, name)(a, *args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = (f"np.{name}: on a traced array, of its value in the call being traced (the "
                  "result's size depends on the values; a ConcretizationError where there is "
                  f"none).\n\n        >>> fnp.{name}(mask)\n")
    return export(name)(fn)


_MASK_HINT = ("Select with fnp.where(condition, x, y) or mask with a multiplication instead, or "
              "compute the indices from concrete (untraced) data.")
nonzero = _value_dependent("nonzero", _MASK_HINT)
flatnonzero = _value_dependent("flatnonzero", _MASK_HINT)
argwhere = _value_dependent("argwhere", _MASK_HINT)
