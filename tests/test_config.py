"""fg.config: every option in one table, each settable from the environment and from code,
read where it decides (funcgrad/_config.py)."""
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_no_part_of_funcgrad_reads_its_own_environment_variables_but_the_table():
    reads = []
    for path in [*ROOT.joinpath("funcgrad").rglob("*.py"), *ROOT.joinpath("transforms").rglob("*.py")]:
        if path.name == "_config.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"environ(\.get\(|\[)\s*[\"']FUNCGRAD_", line):
                reads.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not reads, "read FUNCGRAD_* through fg.config instead:\n" + "\n".join(reads)


def test_every_option_is_in_the_documented_table():
    text = ROOT.joinpath("docs", "api.md").read_text()
    for name, env, *_ in fg.config.table():
        assert f"| `{name}` | `{env}` |" in text


def test_values_are_checked_with_a_message_naming_the_option():
    with pytest.raises(ValueError, match="option jit_threshold takes an integer >= 0"):
        fg.config.update("jit_threshold", -1)
    with pytest.raises(ValueError, match="option jit_background takes True or False"):
        fg.config.jit_background = "yes"
    with pytest.raises(AttributeError, match="no option 'jit_treshold'"):
        fg.config.update("jit_treshold", 3)
    with fg.config.override(jit_threshold=3, cache_max_mb=10):
        assert fg.tiering.policy.threshold == 3 and fg.config.cache_max_mb == 10.0
    assert fg.config.jit_threshold == 10 and fg.config.cache_max_mb == 2048.0


def test_options_owned_elsewhere_are_read_and_set_through_the_table():
    f = lambda x: fnp.sum(fnp.log(x))
    with fg.config.override(debug_nans=True):
        with pytest.raises(FloatingPointError, match="test_config.py"), \
                np.errstate(invalid="ignore"):
            fg.grad(f)(np.array([-1.0, 2.0]))
        assert fg.config.debug_nans
    assert not fg.config.debug_nans
    with np.errstate(invalid="ignore"):    # off again: the NaN of log(-1) passes unchecked
        np.testing.assert_allclose(fg.grad(f)(np.array([-1.0, 2.0])), [-1.0, 0.5])
    with fg.debug_nans():                  # the context manager shows in the table
        assert fg.config.debug_nans


def test_the_environment_sets_options_at_import_and_bad_values_say_which_variable():
    code = ("import funcgrad as fg; print(fg.config.jit_threshold, fg.config.jit_background, "
            "fg.config.debug_infs, fg.config.loop_compile_seconds)")
    env = dict(os.environ, FUNCGRAD_JIT_THRESHOLD="3", FUNCGRAD_JIT_BACKGROUND="off",
               FUNCGRAD_DEBUG_INFS="1", FUNCGRAD_LOOP_COMPILE_SECONDS="0.25")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "False", "True", "0.25"]
    env["FUNCGRAD_JIT_THRESHOLD"] = "lots"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0
    assert "the environment variable FUNCGRAD_JIT_THRESHOLD: expected a number, got 'lots'" \
        in out.stderr
