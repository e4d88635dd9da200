"""Execute every notebook in notebooks/ (they end in asserts); none prints a warning."""
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    for k, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("name") == "stderr" else ""
            assert "Warning" not in text, f"{path.name}, code cell {k + 1} warns:\n{text}"
