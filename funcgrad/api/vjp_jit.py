"""fg.vjp compiled, for tiering: per signature, the forward and backward programs as two
kernels (api/jit.py has fg.jit, whose preparation and limits these share)."""
from __future__ import annotations

import numpy as np

from .._config import config
from .._errors import FuncgradError
from .._recent import Recent
from ..tiering import NOT_READY
from .background import Pending
from .calls import Args, VjpPlan, fn_name
from .entries import STALE, Entry, all_hold, guard_exits
from .jit import _too_many_paths, prepare, signature

__all__ = ["VjpJit"]


class VjpJit:
    """fg.vjp compiled: per signature, the forward and backward programs become two kernels
    (used by tiering once fg.vjp(f, ...) is hot). Where f's Python control flow reads traced
    values, one plan per path, as in JitFunction: the forward kernel returns the guards.
    A signature's first plan compiles in the background (fg.config.jit_background): until
    it is ready, calls return NOT_READY and tiering answers them from the interpreter."""

    def __init__(self, f, has_aux=False):
        self.f, self.has_aux, self._pending = f, has_aux, {}
        self._plans = Recent(lambda: config.jit_max_signatures)    # sig -> paths

    def __call__(self, *primals):
        a = Args(self.f, primals, {}, diff_argnums=tuple(range(len(primals))))
        sig = signature(a)
        pending = self._pending.get(sig)
        if pending is not None:
            if not pending.ready:
                return NOT_READY
            del self._pending[sig]
            self._keep(sig, pending.join())
        paths = self._plans.get(sig, [])
        for k, (plan, fwd, bwd, expected) in enumerate(paths):
            try:
                res = fwd.run(list(plan.consts) + list(a.dyn_vals))
            except STALE:
                continue
            if all_hold(plan.guard_values(res), expected):
                if k:
                    paths.insert(0, paths.pop(k))
                return plan.finish(a, res, bwd.run)
        guards = []
        plan = VjpPlan(self.f, primals, self.has_aux, guards=guards)
        if plan.consts:
            raise TypeError("vjp of a function that closes over traced values is not compiled")
        if len(paths) >= config.jit_max_paths:   # (tiering then interprets this signature)
            raise FuncgradError(_too_many_paths(self.f))
        exits = guard_exits(plan.n_out - plan.n_guards, guards)
        programs = [(prepare(plan.fwd), exits), (prepare(plan.bwd), ())]
        expected = [(value, kind) for _, value, kind, _ in guards]
        if not paths and config.jit_background:
            vals = list(a.dyn_vals)

            def build():
                fwd, bwd = _vjp_entries(programs)
                fwd.precompile(vals, elsewhere=True)       # (the backward pass's inputs:
                bwd.precompile([np.zeros(v.shape, v.dtype)  # their types are what counts)
                                for v in programs[1][0].in_avals], elsewhere=True)
                return plan, fwd, bwd, expected
            self._pending[sig] = Pending(build, None, fn_name(self.f))
            return NOT_READY
        fwd, bwd = _vjp_entries(programs)
        self._keep(sig, (plan, fwd, bwd, expected))
        return plan.run(a, fwd.run, bwd.run)

    def dispatch(self, args):
        """(as JitFunction.dispatch: tiering's hot calls call the VjpJit itself)"""
        return NOT_READY

    def forget(self, *primals):
        a = Args(self.f, primals, {}, diff_argnums=tuple(range(len(primals))))
        self._plans.pop(signature(a), None)

    def _keep(self, sig, compiled):
        """A new path for sig, tried first; past fg.config.jit_max_signatures the signature
        used longest ago goes (tiering keeps one VjpJit for all of f's signatures)."""
        self._plans.put(sig, [compiled] + self._plans.get(sig, []))


def _vjp_entries(programs):
    from ..backend.compile import compile_program
    return [Entry(compile_program(p, exits=x), None, p.in_avals, p.out_avals)
            for p, x in programs]
