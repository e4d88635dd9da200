"""The Numba backend: Program -> readable Python source -> numba.njit.

Owns fusion (fusion.py: which equations share one loop nest), code generation (codegen.py:
one local per variable, named as `make_ir` prints them), array-level lowerings of the
non-elementwise primitives (lowerings.py), splitting large programs into several functions
(split.py), and compilation/caching (compile.py, cache.py).
Reads the IR only (never imports the primitive families or the tracer); imports numba lazily.
"""
