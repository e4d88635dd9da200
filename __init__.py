"""The root folder of a clone of funcgrad's repository, not the package (funcgrad/ inside it).

Python imports this file as `funcgrad` when the folder holding the clone is on sys.path -- a
script run from beside a clone named `funcgrad`, or a notebook started there -- where the
repository folder would otherwise become an empty namespace package, failing later with
"module 'funcgrad' has no attribute ...". Say what happened instead. (Imported under another
name -- pytest collects this folder as a package, in importlib mode -- it does nothing.)
"""
import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
if __name__ == "funcgrad":
    raise ImportError(
        f"'import funcgrad' found the folder {_here}, a clone of funcgrad's repository, not "
        f"the funcgrad package inside it: the folder that holds the clone "
        f"({_os.path.dirname(_here)}) is on sys.path, most likely because your script or "
        f"notebook is there. Install funcgrad (pip install -e {_here}) and run from another "
        "folder, or rename the clone (e.g. funcgrad-repo).")
