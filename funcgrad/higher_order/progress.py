"""Progress reports from long loops, also from compiled code: the `progress=` option of
fg.fori_loop, fg.scan, fg.while_loop (and fg.optim.fit).

Every k-th step the loop body calls back out of native code (an fg.cond whose taken branch
holds a debug_callback effect, so the other steps pay one comparison), with the number of
steps done. `progress=True` reports about 100 times over a loop of known length (every 1,000
steps for a while loop) with a tqdm bar when tqdm is installed, a line per report otherwise;
an int is the report interval; a callable `fn(step, total)` is called instead (total None
for a while loop). A kernel run again starts a new bar.
"""
from __future__ import annotations

import importlib.util
import sys

import numpy as np

from ..primitives.base import convert
from ..primitives.special import debug_callback_p
from .conditionals import cond

_HAS_TQDM = importlib.util.find_spec("tqdm") is not None


class Reporter:
    """Called with the number of steps done (1, ..., total) every `every` steps."""

    def __init__(self, label, total, fn=None):
        self.label, self.total, self.fn, self.bar = label, total, fn, None

    def __call__(self, done):
        done = int(done)
        if self.fn is not None:
            self.fn(done, self.total)
            return
        if _HAS_TQDM:
            import tqdm
            if self.bar is None or done <= self.bar.n:             # a new run of the loop
                if self.bar is not None:
                    self.bar.close()
                self.bar = tqdm.tqdm(total=self.total, desc=self.label)
            self.bar.update(done - self.bar.n)
            if self.total is not None and done >= self.total:
                self.bar.close()
                self.bar = None
            return
        of = "" if self.total is None else f"/{self.total}"
        print(f"{self.label}: step {done}{of}", file=sys.stdout, flush=True)

    def __repr__(self):
        return f"<progress of {self.label}>"


def plan(progress, total, label):
    """(every, Reporter) for a progress option, or None when off."""
    if progress is None or progress is False:
        return None
    if callable(progress) and not isinstance(progress, (bool, int, np.integer)):
        fn, every = progress, None
    elif progress is True:
        fn, every = None, None
    else:
        fn, every = None, int(progress)
        if every < 1:
            raise ValueError(f"{label}: progress must be True, a positive step interval or a "
                             f"function(step, total), got {progress!r}")
    if every is None:
        every = max(1, total // 100) if total is not None else 1000
    return every, Reporter(label, total, fn)


def report(done, every, total, reporter):
    """In a loop body: call the reporter when `done` (traced steps so far) is a multiple of
    `every` or the last step."""
    done = convert(done, np.int64)
    due = (done % every) == 0
    if total is not None:
        due = due | (done == total)

    def call(d):
        debug_callback_p.bind(d, spec=reporter)
        return d
    cond(due, call, lambda d: d, done)
