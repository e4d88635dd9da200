"""fg.config: every option funcgrad has, in one table, read in one place.

Each option has a kind (a fixed set of values, a switch, a number with a lower bound, or a
path), a default, a line of documentation, and an environment variable FUNCGRAD_<NAME>
(upper case) that sets it when funcgrad is imported. From Python, `fg.config.update(name,
value)` or `fg.config.<name> = value` sets it, and `with fg.config.override(name=value):`
sets it for a block (this thread and every other). The table in docs/api.md ("Options") is
generated from this module (docs/gen_api.py). Reading an option is an attribute lookup (tens of
nanoseconds): the parts that use one read it where they decide, not at import. An option
whose state lives elsewhere (fg.debug_nans's mode) is defined with `get`/`set` hooks that the
owner installs (`hook`). Imports nothing from funcgrad, so every part may read it.
"""
from __future__ import annotations

import contextlib
import os

__all__ = ["config", "Config", "Switch", "Number", "Path"]


_SWITCH = {"1": True, "true": True, "yes": True, "on": True,
           "0": False, "false": False, "no": False, "off": False, "": False}


class Switch:
    """True or False (the environment: 1/0, true/false, yes/no, on/off)."""

    def parse(self, text):
        try:
            return _SWITCH[text.strip().lower()]
        except KeyError:
            raise ValueError(f"expected 1/0, true/false, yes/no or on/off, got {text!r}") from None

    def check(self, value):
        if value not in (True, False):
            raise ValueError(f"takes True or False; got {value!r}")
        return bool(value)

    def describe(self):
        return "True or False"


class Number:
    """An int or float of at least `low`."""

    def __init__(self, type_, low):
        self.type, self.low = type_, low

    def parse(self, text):
        try:
            return self.type(float(text)) if self.type is int else self.type(text)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None

    def check(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                self.type is int and value != int(value)):
            raise ValueError(f"takes {self.describe()}; got {value!r}")
        value = self.type(value)
        if not value >= self.low:
            raise ValueError(f"takes {self.describe()}; got {value!r}")
        return value

    def describe(self):
        return f"{'an integer' if self.type is int else 'a number'} >= {self.low}"


class Path:
    """A directory ("" for the default place; off/none/false/0/no for none at all)."""

    def parse(self, text):
        return text.strip()

    def check(self, value):
        if not isinstance(value, (str, os.PathLike)):
            raise ValueError(f"takes a path (a string); got {value!r}")
        return os.fspath(value)

    def describe(self):
        return "a directory path"


class _Choices:
    def __init__(self, choices):
        self.choices = tuple(choices)

    def parse(self, text):
        return text

    def check(self, value):
        if value not in self.choices:
            raise ValueError(f"takes one of {', '.join(map(repr, self.choices))}; got {value!r}")
        return value

    def describe(self):
        return " or ".join(map(repr, self.choices))


class Config:
    """funcgrad's options: read `fg.config.<name>`, set `fg.config.update(name, value)` (or
    assign), set for a block with `fg.config.override(name=value)`, list with
    `fg.config.options()`. Each also comes from the environment variable FUNCGRAD_<NAME> when
    funcgrad is imported. The table of all of them: docs/api.md, "Options".

        >>> fg.config.dropped_derivative
        'warn'
        >>> with fg.config.override(jit_background=False):
        ...     fg.jit(lambda x: x * 2.0)(np.ones(2))      # compiled on the first call
        array([2., 2.])
    """

    def __init__(self):
        object.__setattr__(self, "_table", {})      # name -> (kind, default, doc, section)
        object.__setattr__(self, "_hooks", {})      # name -> (get, set)

    def define(self, name, default, kind, doc, section="general"):
        """Add option `name`: kind is a tuple of choices, Switch(), Number(type, low) or
        Path(); its environment variable may set it."""
        if isinstance(kind, (tuple, list)):
            kind = _Choices(kind)
        self._table[name] = (kind, default, doc, section)
        object.__setattr__(self, name, default)
        env = os.environ.get(f"FUNCGRAD_{name.upper()}")
        if env is not None:
            source = f"the environment variable FUNCGRAD_{name.upper()}"
            try:
                value = kind.parse(env)
            except ValueError as exc:
                raise ValueError(f"{source}: {exc}") from None
            self.update(name, value, source)

    def hook(self, name, get, set):
        """The option's value lives with its owner: get() reads it, set(value) writes it."""
        value = getattr(self, name)
        self._hooks[name] = (get, set)
        object.__delattr__(self, name)          # (reads now go through __getattr__)
        set(value)

    def options(self):
        """{name: (current value, what it takes, what it does)}."""
        return {n: (getattr(self, n), k.describe(), d) for n, (k, _, d, _) in self._table.items()}

    def table(self):
        """[(name, environment variable, what it takes, default, section, what it does)]."""
        return [(n, f"FUNCGRAD_{n.upper()}", k.describe(), default, section, doc)
                for n, (k, default, doc, section) in self._table.items()]

    def update(self, name, value, source="fg.config"):
        if name not in self._table:
            raise AttributeError(f"{source}: funcgrad has no option {name!r}; the options are "
                                 f"{', '.join(sorted(self._table))}")
        try:
            value = self._table[name][0].check(value)
        except ValueError as exc:
            raise ValueError(f"{source}: option {name} {exc}") from None
        hooks = self._hooks.get(name)
        if hooks is not None:
            hooks[1](value)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        hooks = object.__getattribute__(self, "_hooks").get(name)
        if hooks is not None:
            return hooks[0]()
        raise AttributeError(f"fg.config has no option {name!r}; the options are "
                             f"{', '.join(sorted(self._table))}")

    def __setattr__(self, name, value):
        self.update(name, value)

    @contextlib.contextmanager
    def override(self, **values):
        """Set options for the duration of a `with` block, then restore them."""
        old = {n: getattr(self, n) for n in values if n in self._table}
        try:
            for n, v in values.items():
                self.update(n, v)
            yield self
        finally:
            for n, v in old.items():
                self.update(n, v)

    def __reduce__(self):
        """Pickled (cloudpickle copies the closures that read it) as a reference to the one
        table of the receiving process."""
        return "config"

    def __repr__(self):
        return "fg.config(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._table) + ")"


config = Config()
_define = config.define

# -- what funcgrad does when it cannot do something exactly
_define("dropped_derivative", "warn", ("warn", "error", "ignore"),
        "A value that depends on an argument being differentiated was converted to a Python "
        "float (float(x), math.sin(x), x.item(), writing x into a NumPy array), so its "
        "derivative is dropped: 'warn' gives a DroppedDerivativeWarning at your line, 'error' "
        "raises ConcretizationError there, 'ignore' says nothing.", "numerics")
_define("unconverged_derivative", "warn", ("warn", "nan", "ignore"),
        "The implicit derivative of fg.optimize's minimize, root or least_squares is asked "
        "for but the solver did not converge: 'warn' gives an UnconvergedDerivativeWarning at "
        "your line, 'nan' makes the derivative NaN, 'ignore' returns it silently. Read when "
        "the derivative is traced.", "numerics")
_define("strong_zero", True, Switch(),
        "Reverse mode: a zero cotangent through an operation whose derivative is infinite "
        "at that point (sqrt at 0, a branch fnp.where did not take) gives 0, not "
        "0 * inf = NaN; False restores IEEE arithmetic there. Read when a gradient is "
        "traced.", "numerics")
_define("debug_nans", False, Switch(),
        "fg.debug_nans everywhere: the first operation that makes a NaN from inputs without "
        "one raises FloatingPointError naming it and your line.", "debugging")
_define("debug_infs", False, Switch(),
        "fg.debug_infs everywhere: as debug_nans, for infinities too.", "debugging")
_define("dump", False, Switch(),
        "Print every kernel's generated source as it compiles.", "debugging")

# -- when and how code is compiled
_define("jit_background", True, Switch(),
        "The first call of a new signature of fg.jit (and of a hot fg.grad & co.) is answered "
        "by the interpreter while its kernel compiles in a worker process, and so are later "
        "calls until the kernel is ready; no call waits for a compile unless a loop is too "
        "long to interpret. False: the first call compiles and waits (fg.jit(f, "
        "background=False) for one function). Read at each new signature.", "compiling")
_define("jit_same_bits", True, Switch(),
        "fg.jit gives its kernel's bits from the first call: while a signature's kernel "
        "compiles, the interpreter answers only programs it computes bit for bit as the kernel "
        "does (arithmetic, comparisons, indexing, moving data: ir.Primitive.exact); a call of "
        "any other program (a sum, exp, a matrix product) waits for its kernel, saying so on "
        "stderr after 2 s. False: the interpreter answers every call meanwhile, and results "
        "may differ from the kernel's in the last bits until it is ready. Un-jitted fg.grad & "
        "co. and the library loops (fit, minimize, odeint) never wait: their answers come from "
        "the interpreter until the kernel is ready.", "compiling")
_define("jit_threshold", 3, Number(int, 0),
        "Tiering: fg.grad & co. compile a function for a signature only after this many "
        "interpreted calls traced to the same program (and once it pays, tier_payback); 0 "
        "turns tiering off.", "compiling")
_define("tier_payback", 0.02, Number(float, 0.0),
        "Tiering: a hot signature is compiled once the time spent interpreting it reaches "
        "this fraction of its compile's estimated CPU time (1.5 s + 0.06 s per equation): "
        "what is called rarely, or is quick to interpret, stays interpreted. 0: compile at "
        "jit_threshold calls.", "compiling")
_define("tier_max_equations", 1000, Number(int, 0),
        "Tiering compiles no program larger than this many equations (fg.jit compiles any).",
        "compiling")
_define("loop_compile_seconds", 0.5, Number(float, 0.0),
        "A loop met while interpreting whose interpreted run would take longer than this is "
        "compiled on its own (0: never).", "compiling")
_define("jit_max_signatures", 32, Number(int, 1),
        "Compiled signatures kept per fg.jit function (least recently used first out).",
        "compiling")
_define("jit_max_paths", 8, Number(int, 1),
        "Compiled paths kept per signature of a function whose Python control flow reads "
        "traced values; calls on other paths are interpreted.", "compiling")
_define("max_kernels", 32, Number(int, 0),
        "Kernels kept in memory after no function uses them (a fresh fg.jit(f) per cell "
        "reuses them).", "compiling")
_define("tune_malloc", True, Switch(),
        "On Linux with glibc, keep memory freed by one kernel call for the next (malloc's "
        "trim and mmap thresholds raised at the first compile).", "compiling")

# -- the persistent kernel cache
_define("cache_dir", "", Path(),
        "Where compiled kernels are kept across processes; '' for $XDG_CACHE_HOME/funcgrad "
        "or ~/.cache/funcgrad, off/none/false/0/no for no disk cache. Read at each compile.",
        "cache")
_define("disable_cache", False, Switch(),
        "No disk cache at all (as cache_dir=off).", "cache")
_define("cache_max_mb", 2048.0, Number(float, 0.0),
        "The disk cache's size limit; adding a kernel past it deletes the least recently "
        "used entries.", "cache")
_define("cache_debug", False, Switch(),
        "Print 'funcgrad-cache: hit|miss|rebuild <key>' to stderr at each lookup.", "cache")
