"""Argument recipes, one per entry point name, grouped by family. A recipe draws a call: ``make(d)`` returns
``(args, kwargs)`` whose array arguments are Operands (draws.Draw.array), so the same call runs on NeuronArrays
and on ndarrays. One recipe serves every entry point of its name: NumPy's function on NeuronArrays (the dispatch
table or the host fallback), the namespace function, and the ufunc of that meaning.

``close`` marks the inexact results (transcendental functions, reductions that sum, decompositions): their
values are compared within ``close`` units of eps (compare.py); everything else is exact. ``check="shape"``
compares dtype and shape only (uninitialised memory, non-unique decompositions).

Names are short: ``sum``, ``linalg.svd``, ``fft.rfft``; NumPy's names map onto the namespace's where they differ
(``arccos`` -> ``acos``, see ALIASES).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from .draws import ALL, BOOL, FLOATS, INEXACT, LINALG, NUMERIC, REAL, Draw, Operand


@dataclass(frozen=True)
class Recipe:
    make: Callable[[Draw], tuple[tuple[Any, ...], dict[str, Any]]]
    close: float | None = None
    check: str = "values"


RECIPES: dict[str, Recipe] = {}


def add(
    names: str, make: Callable[[Draw], tuple[tuple, dict]], close: float | None = None, check: str = "values"
) -> None:
    for name in names.split():
        RECIPES[name] = Recipe(make, close, check)


def call(*args: Any, **kwargs: Any) -> tuple[tuple, dict]:
    return args, kwargs


# NumPy's spellings of the namespace's names (ufuncs and functions)
ALIASES = {
    "absolute": "abs",
    "arccos": "acos",
    "arccosh": "acosh",
    "arcsin": "asin",
    "arcsinh": "asinh",
    "arctan": "atan",
    "arctan2": "atan2",
    "arctanh": "atanh",
    "invert": "bitwise_invert",
    "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
    "conjugate": "conj",
    "power": "pow",
    "rint": "round",
    "concatenate": "concat",
    "transpose": "permute_dims",
    "amax": "max",
    "amin": "min",
    "around": "round",
}

# --- elementwise

EXACT_UNARY = (
    "abs ceil conj floor imag real isfinite isinf isnan logical_not negative positive round sign "
    "signbit square trunc bitwise_invert reciprocal"
)
TRANSCENDENTAL_UNARY = "acos acosh asin asinh atan atanh cos cosh exp expm1 log log10 log1p log2 sin sinh tan tanh"
add(EXACT_UNARY, lambda d: call(d.array()))
add(TRANSCENDENTAL_UNARY, lambda d: call(d.array()), close=8)
# IEEE's sqrt is correctly rounded (NumPy's is); torch's vectorized float64 CPU kernel can be an ulp off
add("sqrt", lambda d: call(d.array()), close=1)
# NaN and infinities replaced: NumPy's defaults, or given values (cast to the array's dtype, as NumPy's)
add(
    "nan_to_num",
    lambda d: call(d.array(), **d.pick(({}, {"nan": 1.5, "posinf": 7.0, "neginf": -7.0}, {"nan": -1, "posinf": 2}))),
)


def binary(d: Draw) -> tuple[tuple, dict]:
    """Two arrays (broadcastable, any two dtypes) or an array and a Python scalar on either side."""
    x = d.array()
    form = d.pick(("arrays", "arrays", "scalar right", "scalar left"))
    if form == "arrays":
        return call(x, d.like(x, d.pick((x.dtype, *ALL))))
    return call(x, d.scalar()) if form == "scalar right" else call(d.scalar(), x)


EXACT_BINARY = (
    "add subtract multiply divide floor_divide remainder bitwise_and bitwise_or bitwise_xor "
    "bitwise_left_shift bitwise_right_shift equal not_equal less less_equal greater greater_equal "
    "logical_and logical_or logical_xor maximum minimum copysign nextafter"
)
add(EXACT_BINARY, binary)
add("atan2 hypot logaddexp pow", binary, close=8)

# --- reductions and scans


def reduction(keepdims: bool = True, none: bool = True) -> Callable[[Draw], tuple]:
    def make(d: Draw) -> tuple[tuple, dict]:
        x = d.array()
        kwargs = {"axis": d.axis(x, none)}
        if keepdims and d(st.booleans()):
            kwargs["keepdims"] = True
        return call(x, **kwargs)

    return make


add("max min all any argmax argmin count_nonzero nanmax nanmin nanargmax nanargmin ptp", reduction())
add("sum prod mean nansum nanprod nanmean median nanmedian", reduction(), close=64)
add("std var nanstd nanvar", reduction(), close=256)
add("average", reduction(keepdims=False), close=64)
add("cumsum cumprod nancumsum nancumprod", reduction(keepdims=False), close=64)
add("cumulative_sum cumulative_prod", reduction(keepdims=False), close=64)
add("sort argsort", lambda d: call(x := d.array(min_dims=1), axis=d.axis(x, none=False)))
add("flip", reduction(keepdims=False))
add("diff", lambda d: call(x := d.array(min_dims=1), axis=d.axis(x, none=False)))
add(
    "ediff1d flatnonzero argwhere nonzero ravel atleast_1d atleast_2d atleast_3d copy shape ndim size",
    lambda d: call(d.array()),
)
# NumPy dispatches its conversions only through like= (without it, np.asarray(x) is the explicit conversion to an
# ndarray, docs/numpy.md); with like=x the answer must be a NeuronArray
add("asfortranarray ascontiguousarray asanyarray require", lambda d: call(x := d.array(), like=x))
# NumPy fixes only the kth position: the results are compared sorted along the axis
add("partition argpartition", lambda d: call(d.array(min_dims=1, min_side=1), 0, axis=-1), check="sorted")
add(
    "quantile percentile nanquantile nanpercentile",
    lambda d: call(x := d.array(REAL, min_dims=1, min_side=1), d.pick((0.0, 0.5, 1.0)), axis=d.axis(x)),
    close=64,
)

# --- data movement (exact)


def reshape(d: Draw) -> tuple[tuple, dict]:
    x = d.array()
    shape = d.pick(((-1,), (x.value.size,), (1, -1), x.value.shape[::-1], x.value.shape + (1,)))
    return call(x, shape)


add("reshape", reshape)
add(
    "squeeze",
    lambda d: call(
        x := d.array(shape=d(st.sampled_from([(1,), (1, 3), (3, 1, 2), (1, 1)]))),
        axis=d.pick([i for i, s in enumerate(x.value.shape) if s == 1]),
    ),
)
add("expand_dims", lambda d: call(x := d.array(), axis=d.pick(range(-x.value.ndim - 1, x.value.ndim + 1))))
add("permute_dims", lambda d: call(x := d.array(), tuple(d(st.permutations(range(x.value.ndim))))))
add("swapaxes", lambda d: call(x := d.array(min_dims=1), d.axis(x, False), d.axis(x, False)))
add("moveaxis", lambda d: call(x := d.array(min_dims=1), d.axis(x, False), d.axis(x, False)))
add("matrix_transpose linalg.matrix_transpose", lambda d: call(d.array(min_dims=2)))
add("tile", lambda d: call(d.array(), d.pick(((2,), (1, 2), (2, 1, 1), (0,)))))
add("repeat", lambda d: call(x := d.array(), d.pick((0, 1, 2)), axis=d.axis(x)))
add("broadcast_to", lambda d: call(x := d.array(max_dims=2), (2,) + x.value.shape))
add("broadcast_arrays", lambda d: call(x := d.array(), d.like(x)))
add("meshgrid", lambda d: call(d.array(min_dims=1, max_dims=1), d.array(min_dims=1, max_dims=1)))
add("asarray array", lambda d: call(x := d.array(), dtype=d.dtype_arg(none=True), like=x))
# the namespace's asarray takes no like=
add("namespace.asarray", lambda d: call(d.array(), dtype=d.dtype_arg(none=True)))
add("astype", lambda d: call(d.array(), d.dtype_arg()))
add("diag", lambda d: call(d.array(min_dims=1, max_dims=2), d.pick((0, 1, -1))))
add("diagflat", lambda d: call(d.array(max_dims=2), d.pick((0, 1, -1))))
add("diagonal", lambda d: call(d.array(min_dims=2), d.pick((0, 1, -1))))
add("linalg.diagonal", lambda d: call(d.array(min_dims=2), offset=d.pick((0, 1, -1))))
add("trace", lambda d: call(d.array(NUMERIC, min_dims=2), d.pick((0, 1, -1))), close=64)
add("linalg.trace", lambda d: call(d.array(NUMERIC, min_dims=2), offset=d.pick((0, 1, -1))), close=64)
add("tril triu", lambda d: call(d.array(min_dims=2), k=d.pick((0, 1, -1))))
add("rot90", lambda d: call(d.array(min_dims=2), d.pick((1, 2, 3, -1))))
add("roll", lambda d: call(x := d.array(), d.pick((0, 1, -2, 5)), axis=d.axis(x)))


def indices(d: Draw, x: Operand, axis: int | None) -> Operand:
    n = x.value.size if axis is None else x.value.shape[axis]
    values = st.lists(st.integers(-n, n - 1), max_size=4) if n else st.just([])
    return d.array(
        ("int64", "int32", "uint8") if n < 128 else ("int64",),
        value=np.array(d(values)),
        shape=None,
        layouts=("contiguous",),
    )


def take(d: Draw) -> tuple[tuple, dict]:
    x = d.array()
    axis = d.axis(x)
    return call(x, indices(d, x, axis), axis=axis)


add("take", take)
add(
    "take_along_axis",
    lambda d: call(
        x := d.array(min_dims=1),
        d.array("int64", value=np.zeros(x.value.shape, np.int64), layouts=("contiguous",)),
        axis=-1,
    ),
)
add("delete", lambda d: call(x := d.array(min_dims=1, min_side=1), 0, axis=d.axis(x)))
add("insert", lambda d: call(x := d.array(min_dims=1), 0, d.scalar(), axis=d.axis(x)))
add("append", lambda d: call(x := d.array(min_dims=1), d.like(x, broadcast=False), axis=d.axis(x)))
add(
    "pad",
    lambda d: call(
        d.array(),
        d.pick((1, (0, 2))),
        mode="constant",
        constant_values=d.pick((0, 1, -1, 300, 70000, 2**40, 2**70, -(2**64), 1.5, float("nan"), float("inf"))),
    ),
)


def splits(d: Draw) -> tuple[tuple, dict]:
    x = d.array(min_dims=1)
    return call(x, d.pick((1, 2, [1, 2])), axis=d.axis(x, none=False))


add("split array_split", splits)
add("hsplit", lambda d: call(d.array(min_dims=1), d.pick((1, [1]))))
add("vsplit", lambda d: call(d.array(min_dims=2), d.pick((1, [1]))))
add("dsplit", lambda d: call(d.array(min_dims=3), d.pick((1, [1]))))
add("unstack", lambda d: call(x := d.array(min_dims=1), axis=d.axis(x, none=False)))


def joins(d: Draw) -> tuple[tuple, dict]:
    x = d.array(min_dims=1)
    return call([x, d.like(x, d.pick((x.dtype, *ALL)), broadcast=False)], axis=d.axis(x, none=False))


add("concat stack", joins)
add("hstack vstack dstack column_stack", lambda d: call([x := d.array(), d.like(x, broadcast=False)]))
add("where", lambda d: call(c := d.array(BOOL), d.like(c, d.pick(ALL)), d.like(c, d.pick(ALL))))
add("clip", lambda d: call(d.array(REAL), d.pick((None, 0, -1)), d.pick((1, 100))))
add("select", lambda d: call([c := d.array(BOOL)], [d.like(c, NUMERIC, broadcast=False)], 0))
add("searchsorted", lambda d: call(d.array(REAL, value=np.arange(5), shape=(5,)), d.array(REAL)))
add("isin", lambda d: call(x := d.array(REAL), d.array(x.dtype)))
add("unique unique_values unique_counts unique_inverse unique_all", lambda d: call(d.array()))
add("lexsort", lambda d: call(d.array(REAL, shape=(2, 3))))
add(
    "bincount",
    lambda d: call(
        d.array(
            ("uint8", "int64", "int32"),
            min_dims=1,
            max_dims=1,
            value=np.array(d(st.lists(st.integers(0, 5), max_size=5))),
        )
    ),
)
add("histogram", lambda d: call(d.array(("float32", "float64", "int64")), bins=d.pick((1, 3))), close=8)
add(
    "interp",
    lambda d: call(
        d.array(FLOATS), d.array("float64", value=np.arange(4.0), shape=(4,)), d.array("float64", shape=(4,))
    ),
    close=8,
)
add("gradient", lambda d: call(d.array(("float32", "float64", "int64"), min_dims=1, min_side=2)), close=8)
add("polyval", lambda d: call(d.array(NUMERIC, min_dims=1, max_dims=1), d.array(NUMERIC)), close=64)
add(
    "convolve correlate",
    lambda d: call(
        d.array(NUMERIC, min_dims=1, max_dims=1, min_side=1),
        d.array(NUMERIC, min_dims=1, max_dims=1, min_side=1),
        d.pick(("full", "same", "valid")),
    ),
    close=64,
)
add("isclose", lambda d: call(x := d.array(NUMERIC), d.like(x)))
add("allclose array_equal", lambda d: call(x := d.array(NUMERIC), d.like(x, broadcast=False)))
add(
    "cov corrcoef",
    lambda d: call(d.array(("float32", "float64", "int64"), min_dims=1, max_dims=2, min_side=2)),
    close=256,
)
add("may_share_memory shares_memory", lambda d: call(x := d.array(), d.like(x)))
add(
    "ravel_multi_index",
    lambda d: call(
        (
            d.array("int64", value=np.array([0, 1, 2]), shape=(3,)),
            d.array("int64", value=np.array([1, 0, 2]), shape=(3,)),
        ),
        (3, 4),
    ),
)
add("unravel_index", lambda d: call(d.array(("int64", "int32"), value=np.array([0, 5, 11]), shape=(3,)), (3, 4)))

# --- products (sums: close)


def matrices(d: Draw, dtypes=NUMERIC) -> tuple[Operand, Operand]:
    n, k, m = (d(st.integers(0, 3)) for _ in range(3))
    batch = d.pick(((), (2,), (1,)))
    return (d.array(d.pick(dtypes), shape=batch + (n, k)), d.array(d.pick(dtypes), shape=(k, m)))


add("matmul linalg.matmul", lambda d: call(*matrices(d)), close=64)
add(
    "dot inner",
    lambda d: call(*matrices(d)) if d(st.booleans()) else call(x := d.array(max_dims=1), d.like(x, broadcast=False)),
    close=64,
)
add("vdot", lambda d: call(x := d.array(NUMERIC, min_dims=1, max_dims=1), d.like(x, broadcast=False)), close=64)
add("vecdot linalg.vecdot", lambda d: call(x := d.array(NUMERIC, min_dims=1), d.like(x)), close=64)
add("outer linalg.outer kron", lambda d: call(d.array(NUMERIC, max_dims=1), d.array(NUMERIC, max_dims=1)), close=8)
add("tensordot linalg.tensordot", lambda d: call(*matrices(d), axes=1), close=64)
add(
    "einsum",
    lambda d: call("ij,jk->ik", *matrices(d, LINALG)) if d(st.booleans()) else call("ii->i", d.array(shape=(3, 3))),
    close=64,
)
# the path report is opt_einsum's text (docs/numpy.md): only whether it raises is compared
add("einsum_path", lambda d: call("ij,jk->ik", *matrices(d, LINALG)), check="shape")
add("cross linalg.cross", lambda d: call(x := d.array(NUMERIC, shape=d.pick(((3,), (2, 3)))), d.like(x)), close=8)

# --- linear algebra: square matrices (batches too), floats and complex; decompositions compared where unique


def square(dtypes=LINALG + ("int64",), min_n: int = 0) -> Callable[[Draw], tuple]:
    def make(d: Draw) -> tuple[tuple, dict]:
        n = d(st.integers(min_n, 3))
        return call(d.array(d.pick(dtypes), shape=d.pick(((), (2,), (0,))) + (n, n)))

    return make


add(
    "linalg.det linalg.inv linalg.eigvals linalg.eigvalsh linalg.svdvals linalg.matrix_rank linalg.slogdet "
    "linalg.cholesky linalg.pinv",
    square(),
    close=4096,
)
add("linalg.eig linalg.eigh linalg.svd linalg.qr", square(), check="shape")
add("linalg.matrix_power", lambda d: call(square()(d)[0][0], d.pick((0, 1, 2, -1))), close=4096)
add("linalg.solve", lambda d: call(square()(d)[0][0], d.array(LINALG, shape=(2, 2))), close=4096)
add("linalg.lstsq", lambda d: call(d.array(LINALG, shape=(3, 2)), d.array(LINALG, shape=(3,)), rcond=None), close=4096)
add("linalg.norm linalg.matrix_norm", lambda d: call(d.array(NUMERIC, min_dims=2)), close=64)
add("linalg.vector_norm", lambda d: call(x := d.array(NUMERIC), axis=d.axis(x)), close=64)

# --- FFTs: any float or complex input; batch axes may be empty


def fft1(d: Draw) -> tuple[tuple, dict]:
    x = d.array(INEXACT + ("int64",), min_dims=1)
    kwargs = {"axis": d.axis(x, none=False)}
    if d(st.booleans()):
        kwargs["n"] = d.pick((1, 2, 5))
    return call(x, **kwargs)


def fftn(d: Draw) -> tuple[tuple, dict]:
    return call(d.array(INEXACT + ("int64",), min_dims=2), axes=(-2, -1))


add("fft.fft fft.ifft fft.rfft fft.irfft fft.hfft fft.ihfft", fft1, close=256)
add("fft.fftn fft.ifftn fft.rfftn fft.irfftn fft.fft2 fft.ifft2 fft.rfft2 fft.irfft2", fftn, close=256)
add("fft.fftshift fft.ifftshift", lambda d: call(d.array()))

# --- creation: NumPy dispatches these through like= (the namespace's take device= instead)


def like(d: Draw) -> Operand:
    return d.array(max_dims=1, layouts=("contiguous",))


add("zeros ones", lambda d: call(d.pick(((2,), (0, 3), ())), dtype=d.dtype_arg(), like=like(d)))
add("empty", lambda d: call(d.pick(((2,), (0, 3))), dtype=d.dtype_arg(), like=like(d)), check="shape")
add("full", lambda d: call((2,), d.scalar(), dtype=d.dtype_arg(none=True), like=like(d)))
add("zeros_like ones_like", lambda d: call(d.array(), dtype=d.dtype_arg(none=True)))
add("empty_like", lambda d: call(d.array(), dtype=d.dtype_arg(none=True)), check="shape")
add("full_like", lambda d: call(d.array(), d.scalar()))
add("eye identity", lambda d: call(d.pick((0, 1, 3)), dtype=d.dtype_arg(), like=like(d)))
add("tri", lambda d: call(d.pick((0, 1, 3)), dtype=d.dtype_arg(), like=like(d)))
add("arange", lambda d: call(d.pick((0, 3, 2.5, -2)), dtype=d.dtype_arg(REAL, none=True), like=like(d)))
add("fromfunction", lambda d: call(lambda i, j: i + j, (2, 3), dtype=d.dtype_arg(REAL), like=like(d)))
add("fromiter", lambda d: call((1, 2, 3), dtype=d.dtype_arg(REAL), like=like(d)))
add("frombuffer", lambda d: call(bytes(8), dtype=d.dtype_arg(("uint8", "int32", "float64")), like=like(d)))


# the namespace's creation functions: the same calls with the array API's signature (device= where NumPy has like=)
add("namespace.zeros namespace.ones", lambda d: call(d.pick(((2,), (0, 3), ())), dtype=d.dtype_arg(none=True)))
add("namespace.empty", lambda d: call(d.pick(((2,), (0, 3))), dtype=d.dtype_arg(none=True)), check="shape")
add("namespace.full", lambda d: call((2,), d.scalar(), dtype=d.dtype_arg(none=True)))
add("namespace.eye", lambda d: call(d.pick((0, 1, 3)), dtype=d.dtype_arg(none=True)))
add("namespace.arange", lambda d: call(d.pick((0, 3, 2.5, -2)), dtype=d.dtype_arg(REAL, none=True)))
