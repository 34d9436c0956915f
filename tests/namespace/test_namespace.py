"""The namespace has every name of the 2025.12 standard: 136 functions (with __array_namespace_info__), the
constants, the 13 dtypes, and the 25 linalg and 14 fft functions (names from the standard's API reference)."""

from __future__ import annotations

import inspect

import array_api_compat
import numpy as np
import pytest

import trn_backend as xp
from tests.support import DTYPE_NAMES, from_numpy

FUNCTIONS = (
    "__array_namespace_info__",
    "abs",
    "acos",
    "acosh",
    "add",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "argsort",
    "asarray",
    "asin",
    "asinh",
    "astype",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "broadcast_arrays",
    "broadcast_shapes",
    "broadcast_to",
    "can_cast",
    "ceil",
    "clip",
    "concat",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "diff",
    "divide",
    "empty",
    "empty_like",
    "equal",
    "exp",
    "expand_dims",
    "expm1",
    "eye",
    "finfo",
    "flip",
    "floor",
    "floor_divide",
    "from_dlpack",
    "full",
    "full_like",
    "greater",
    "greater_equal",
    "hypot",
    "iinfo",
    "imag",
    "isdtype",
    "isfinite",
    "isin",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "linspace",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "matrix_transpose",
    "max",
    "maximum",
    "mean",
    "meshgrid",
    "min",
    "minimum",
    "moveaxis",
    "multiply",
    "negative",
    "nextafter",
    "nonzero",
    "not_equal",
    "ones",
    "ones_like",
    "permute_dims",
    "positive",
    "pow",
    "prod",
    "real",
    "reciprocal",
    "remainder",
    "repeat",
    "reshape",
    "result_type",
    "roll",
    "round",
    "searchsorted",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sort",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "subtract",
    "sum",
    "take",
    "take_along_axis",
    "tan",
    "tanh",
    "tensordot",
    "tile",
    "tril",
    "triu",
    "trunc",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unstack",
    "var",
    "vecdot",
    "where",
    "zeros",
    "zeros_like",
)
CONSTANTS = ("e", "inf", "nan", "newaxis", "pi")
DTYPES = DTYPE_NAMES
LINALG = (
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
)
FFT = (
    "fft",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfftn",
    "rfft",
    "rfftfreq",
    "rfftn",
)


def test_the_counts_are_the_standards():
    assert (len(set(FUNCTIONS)), len(set(LINALG)), len(set(FFT))) == (136, 25, 14)


@pytest.mark.parametrize(
    ("module", "names"), [(xp, FUNCTIONS), (xp, CONSTANTS), (xp, DTYPES), (xp.linalg, LINALG), (xp.fft, FFT)]
)
def test_every_name_is_present(module, names):
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, missing
    if names is not CONSTANTS and names is not DTYPES:
        assert all(callable(getattr(module, n)) for n in names)


def _kinds(func) -> list[tuple[str, str]]:
    return [(p.name, p.kind.name) for p in inspect.signature(func).parameters.values()]


def test_functions_have_the_standards_signature_markers():
    # spot checks (the official suite checks every signature)
    assert _kinds(xp.add) == [("x1", "POSITIONAL_ONLY"), ("x2", "POSITIONAL_ONLY")]
    assert _kinds(xp.max) == [("x", "POSITIONAL_ONLY"), ("axis", "KEYWORD_ONLY"), ("keepdims", "KEYWORD_ONLY")]
    assert _kinds(xp.fft.fft) == [
        ("x", "POSITIONAL_ONLY"),
        ("n", "KEYWORD_ONLY"),
        ("axis", "KEYWORD_ONLY"),
        ("norm", "KEYWORD_ONLY"),
    ]


def test_array_api_compat_finds_this_namespace():
    x = from_numpy(np.zeros(2))
    assert array_api_compat.array_namespace(x) is xp
    assert array_api_compat.is_array_api_obj(x)
