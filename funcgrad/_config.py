"""fg.config: options that change how funcgrad reports what it cannot do exactly.

Owns the option table. Each option has a fixed set of values, a default, and an environment
variable FUNCGRAD_<NAME> (upper case) that sets it when funcgrad is imported; from Python,
`fg.config.update(name, value)` or `fg.config.<name> = value` sets it, and
`with fg.config.override(name=value):` sets it for a block (this thread and every other).
Imports nothing from funcgrad, so every part may read it.
"""
from __future__ import annotations

import contextlib
import os

__all__ = ["config", "Config"]


_SWITCH = {"1": True, "true": True, "yes": True, "on": True,
           "0": False, "false": False, "no": False, "off": False, "": False}


class Config:
    """funcgrad's options: read `fg.config.<name>`, set `fg.config.update(name, value)` (or
    assign), set for a block with `fg.config.override(name=value)`, list with
    `fg.config.options()`. Each also comes from the environment variable FUNCGRAD_<NAME>.

    - `dropped_derivative` ("warn", "error" or "ignore"; default "warn"): a value that depends
      on an argument being differentiated was converted to a Python float (float(x),
      math.sin(x), x.item(), writing x into a NumPy array), so its derivative is dropped.
      "warn" gives a DroppedDerivativeWarning at your line, "error" raises
      ConcretizationError there, "ignore" says nothing.
    - `jit_background` (True or False; default True): the first call of a new signature of
      fg.jit (and of a hot fg.grad & co., which compile through fg.jit) is answered by the
      interpreter while its kernel compiles in a worker process, and so are later calls
      until the kernel is ready; nothing waits for a compile unless a loop is too long to
      interpret. False compiles on the first call, which waits for it (as
      `fg.jit(f, background=False)` does for one function). Read at each call.
    - `unconverged_derivative` ("warn", "nan" or "ignore"; default "warn"): the implicit
      derivative of fg.optimize's minimize, root or least_squares is asked for, but the
      solver did not converge, so the condition the derivative relies on does not hold.
      "warn" gives an UnconvergedDerivativeWarning at your line, "nan" makes the derivative
      NaN, "ignore" returns it silently. Read when the derivative is traced.

        >>> fg.config.dropped_derivative
        'warn'
        >>> with fg.config.override(dropped_derivative="error"):
        ...     pass
    """

    def __init__(self):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_table", {})

    def define(self, name, default, choices, doc):
        """Add option `name` (values: `choices`; (True, False) for a switch, which the
        environment sets with 1/0, true/false, yes/no or on/off); its environment variable
        may set it."""
        self._table[name] = (tuple(choices), doc)
        env = os.environ.get(f"FUNCGRAD_{name.upper()}")
        self._values[name] = default
        if env is not None:
            if set(choices) == {True, False}:
                env = _SWITCH.get(env.strip().lower(), env)
            self.update(name, env, f"the environment variable FUNCGRAD_{name.upper()}")

    def options(self):
        """{name: (current value, allowed values, what it does)}."""
        return {n: (self._values[n], c, d) for n, (c, d) in self._table.items()}

    def update(self, name, value, source="fg.config"):
        if name not in self._table:
            raise AttributeError(f"{source}: funcgrad has no option {name!r}; the options are "
                                 f"{', '.join(sorted(self._table))}")
        choices = self._table[name][0]
        if value not in choices:
            raise ValueError(f"{source}: option {name} takes one of {', '.join(map(repr, choices))}; "
                             f"got {value!r}")
        self._values[name] = value

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"fg.config has no option {name!r}; the options are "
                             f"{', '.join(sorted(values))}")

    def __setattr__(self, name, value):
        self.update(name, value)

    @contextlib.contextmanager
    def override(self, **values):
        """Set options for the duration of a `with` block, then restore them."""
        old = {n: getattr(self, n) for n in values}
        for n, v in values.items():
            self.update(n, v)
        try:
            yield self
        finally:
            self._values.update(old)

    def __repr__(self):
        return "fg.config(" + ", ".join(f"{n}={v!r}" for n, v in self._values.items()) + ")"


config = Config()
config.define("dropped_derivative", "warn", ("warn", "error", "ignore"),
              "a value being differentiated converted to a Python float: warn, raise, or say nothing")
config.define("unconverged_derivative", "warn", ("warn", "nan", "ignore"),
              "the implicit derivative of an optimizer that did not converge: warn, NaN, or "
              "say nothing")
config.define("jit_background", True, (True, False),
              "compile new kernels in a worker process while the interpreter answers calls "
              "(False: the first call compiles and waits)")
