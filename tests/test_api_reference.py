"""docs/api.md is generated from the docstrings (docs/gen_api.py): it must be current, every
public function and class must have an example, and every example must run as written."""
import inspect
import pathlib
import sys
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "docs"))
import gen_api  # noqa: E402

ENTRIES = gen_api.entries()


def test_the_reference_is_current():
    assert gen_api.OUT.read_text() == gen_api.render(), (
        "docs/api.md is out of date: run `.venv/bin/python docs/gen_api.py`")


def test_every_public_name_has_an_example():
    missing = [qual for _, qual, obj in ENTRIES if not gen_api.is_error(obj)
               and not gen_api.example(inspect.getdoc(obj) or "")]
    assert not missing, f"docstrings without a `>>>` example: {missing}"


@pytest.mark.parametrize("qual,obj", [(q, o) for _, q, o in ENTRIES if not gen_api.is_error(o)],
                         ids=[q for _, q, o in ENTRIES if not gen_api.is_error(o)])
def test_the_example_runs(qual, obj):
    code = gen_api.example(inspect.getdoc(obj) or "")
    if not code:
        pytest.skip("no example (test_every_public_name_has_an_example fails)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, f"<example of {qual}>", "exec"), {"np": np, "fg": fg, "fnp": fnp})


@pytest.mark.parametrize("module", ["tree_util", "nn", "random", "lax", "optim", "optimize",
                                    "flatten_util"])
def test_module_examples_run_and_print_what_they_say(module):
    import doctest
    mod = getattr(fg, module)
    test = doctest.DocTestParser().get_doctest(mod.__doc__, {"np": np, "fg": fg, "fnp": fnp},
                                               f"fg.{module}", None, 0)
    assert test.examples, f"fg.{module}'s docstring has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runner.run(test)
    assert runner.failures == 0, f"an example in fg.{module}'s docstring fails (output above)"
