"""`funcgrad.numpy`: NumPy's API, traceable and differentiable.

    >>> import funcgrad.numpy as fnp
    >>> fnp.sum(fnp.sin(x) ** 2)

Every function is registered by `export` in funcgrad.primitives' NAMESPACE (LINALG for
funcgrad.numpy.linalg, FFT for funcgrad.numpy.fft), which this module re-exports. Functions
that bind a primitive live beside it in funcgrad/primitives/; NumPy functions that are
compositions of others live here, in the private modules imported below (_shape, _arrange,
_assemble, _pad, _creation, _indexing, _elementwise, _complex, _reductions, _stats, _contract,
_counting, _nan_statistics, _linalg_compositions, _fft_compositions, _misc, _more_arrays,
_polynomials, _ranges, _ufunc_methods; _scalar_types explains np.int64(traced)). They may import funcgrad.primitives,
ir, _errors, tree_util and the tracer; nothing below them imports this package. NumPy's dtype
objects and constants are re-exported unchanged. On plain arrays these functions return what
NumPy does: export(numpy=np.<name>) hands such calls to NumPy's own function.
"""
import numpy as _np

from ..primitives import NAMESPACE as _NAMESPACE
from . import (_arrange, _assemble, _complex, _contract, _counting, _creation,  # noqa: F401
               _elementwise, _fft_compositions, _indexing, _linalg_compositions, _misc,
               _more_arrays, _nan_statistics, _pad, _polynomials, _ranges, _reductions,
               _scalar_types, _sets, _shape, _stats, _ufunc_methods, fft, linalg)

globals().update({k: v for k, v in _NAMESPACE.items() if not k.startswith("_")})

# NumPy's scalar types (every name NumPy has: longdouble and clongdouble, float128 where the
# platform has it, ...), constants and dtype queries, unchanged. A longdouble array is traced
# and computed in long double by the interpreter; compiled code (Numba has no long double)
# leaves such programs to the interpreter, as float16 ones.
for _name in ("float64", "float32", "float16", "float128", "longdouble", "int64", "int32",
              "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool_", "bool",
              "complex128", "complex64", "complex256", "clongdouble", "half", "single", "double",
              "csingle", "cdouble", "byte", "ubyte", "short", "ushort", "intc", "uintc", "intp",
              "uintp", "long", "ulong", "longlong", "ulonglong", "int_", "uint", "float_",
              "complex_", "integer", "signedinteger", "unsignedinteger", "inexact", "floating",
              "complexfloating", "number", "generic", "dtype", "ndarray", "pi", "e", "inf",
              "nan", "newaxis", "euler_gamma", "finfo", "iinfo", "result_type", "promote_types",
              "can_cast", "ndim", "shape", "size", "isscalar", "issubdtype"):
    if hasattr(_np, _name):
        globals().setdefault(_name, getattr(_np, _name))
del _name

# NumPy's version, as `numpy.__version__` (code written for NumPy checks it; autograd's numpy
# module re-exports it too); funcgrad's own is funcgrad.__version__.
__version__ = _np.__version__


def __dir__():
    return sorted(k for k in globals() if not k.startswith("_"))
