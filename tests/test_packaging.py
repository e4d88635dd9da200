"""The package as users install it: pyproject's package list holds every package folder (a
missing one would be absent from the wheel), the metadata's license, fg.testing reachable
after `import funcgrad as fg`, and the error for a script beside a clone named funcgrad.
(.ci/run builds the wheel, installs it in a fresh venv and runs .ci/smoke.py against it.)"""
import os
import subprocess
import sys

import pytest

import funcgrad as fg
from conftest import check_grads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project():
    tomllib = pytest.importorskip("tomllib")          # (Python 3.11+)
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_every_package_folder_is_listed_for_the_wheel():
    tool = _project()["tool"]["setuptools"]
    listed = set(tool["packages"])
    found = set()
    for top, name in (("funcgrad", "funcgrad"), ("transforms", "funcgrad.transforms")):
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            if "__init__.py" in files:
                rel = os.path.relpath(folder, os.path.join(ROOT, top))
                found.add(name if rel == "." else name + "." + rel.replace(os.sep, "."))
    assert found == listed, (sorted(found - listed), sorted(listed - found))
    assert tool["package-dir"] == {"funcgrad.transforms": "transforms"}


def test_license_metadata_is_spdx_with_its_file():
    project = _project()["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    with open(os.path.join(ROOT, "LICENSE")) as f:
        assert f.readline().strip() == "MIT License"
    assert any(c.startswith("Programming Language :: Python :: 3") for c in project["classifiers"])


def test_testing_is_an_attribute_of_the_package():
    assert fg.testing.check_grads is check_grads


def test_a_script_beside_a_clone_named_funcgrad_is_told_what_happened(tmp_path):
    (tmp_path / "funcgrad").symlink_to(ROOT, target_is_directory=True)
    script = tmp_path / "script.py"
    script.write_text("import funcgrad as fg\nprint(fg.optimize)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, env=env, timeout=120)
    assert run.returncode != 0
    assert "a clone of funcgrad's repository, not the funcgrad package inside it" in run.stderr
    assert "run from another folder, or rename the clone" in run.stderr
