"""NumPy array routines on NeuronArray (trn_backend/numpy_dispatch/routines.py) against NumPy on ndarrays.

Every case runs the NumPy function on NeuronArrays and on the same ndarrays and compares dtype, shape and values
(exactly for integers and booleans). Inputs live on the default device, so running this file with
TRN_BACKEND_DEVICE=cuda checks the routines there; results must stay on their input's device. Hypothesis draws
the index-heavy cases (insert, delete, pad, select) and the convolution lengths.
"""

from __future__ import annotations

import pathlib
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import to_numpy
from trn_backend.numpy_dispatch import handled_functions

rng = np.random.default_rng(7)
DEVICE = xp.asarray(np.zeros(1)).device
M = rng.standard_normal((3, 4))
I = rng.integers(-5, 6, (3, 4))
CPLX = rng.standard_normal(5) + 1j * rng.standard_normal(5)

REGISTERED = ["numpy.diag", "numpy.diagflat", "numpy.interp", "numpy.gradient", "numpy.ediff1d", "numpy.convolve",
              "numpy.correlate", "numpy.cross", "numpy.pad", "numpy.rot90", "numpy.append", "numpy.insert",
              "numpy.delete", "numpy.argwhere", "numpy.select", "numpy.lexsort", "numpy.linalg.lstsq",
              "numpy.polyval", "numpy.may_share_memory", "numpy.shares_memory", "numpy.save", "numpy.savez",
              "numpy.savez_compressed", "numpy.savetxt"]


# ---------------------------------------------------------------- comparison

def nd(value: Any) -> Any:
    """ndarrays (also inside lists and tuples) as NeuronArrays on the default device; other values as they are."""
    if isinstance(value, np.ndarray):
        return xp.asarray(value)
    if isinstance(value, list):
        return [nd(v) for v in value]
    if isinstance(value, tuple):
        return tuple(nd(v) for v in value)
    return value


def same(ours: Any, theirs: Any, *, rtol: float = 1e-12, atol: float = 0.0) -> None:
    """ours (NeuronArrays on DEVICE) equals theirs (NumPy's answer): dtype, shape, values; tuples element-wise."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), (type(ours), ours)
        for o, t in zip(ours, theirs, strict=True):
            same(o, t, rtol=rtol, atol=atol)
        return
    assert isinstance(ours, xp.NeuronArray), type(ours)
    assert ours.device == DEVICE, ours.device
    got, expected = to_numpy(ours), np.asarray(theirs)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def both(func: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """(func on NeuronArrays, func on the ndarrays); NumPy's warnings are silenced for its own call only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = func(*args, **kwargs)
    return func(*nd(args), **nd(kwargs)), theirs


def agree(func: Any, *args: Any, rtol: float = 1e-12, atol: float = 0.0, **kwargs: Any) -> None:
    ours, theirs = both(func, *args, **kwargs)
    same(ours, theirs, rtol=rtol, atol=atol)


def raises_like_numpy(exc: type[BaseException], func: Any, *args: Any, match: str | None = None,
                      **kwargs: Any) -> None:
    """NumPy raises exc for the ndarrays, and so do we for the NeuronArrays (our message may say more)."""
    with pytest.raises(exc):
        func(*args, **kwargs)
    with pytest.raises(exc, match=match):
        func(*nd(args), **nd(kwargs))


def test_registered_names() -> None:
    assert set(REGISTERED) <= set(handled_functions())


# ---------------------------------------------------------------- diagonals

@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "uint64", "float32", "complex64"])
@pytest.mark.parametrize("k", [-2, 0, 1, 5])
def test_diag_and_diagflat(dtype: str, k: int) -> None:
    v = rng.integers(0, 3, 4).astype(dtype)
    m = rng.integers(0, 9, (3, 4)).astype(dtype)
    agree(np.diag, v, k)
    agree(np.diag, m, k=k)
    agree(np.diagflat, m, k)
    agree(np.diagflat, np.asarray(v[0]), k)


def test_diag_of_a_matrix_is_a_copy() -> None:
    m = nd(np.arange(9.0).reshape(3, 3))
    d = np.diag(m)
    d[0] = 100.0
    assert float(m[0, 0]) == 0.0


def test_diag_errors() -> None:
    raises_like_numpy(ValueError, np.diag, np.zeros((2, 2, 2)), match="1-d or 2-d")


# ---------------------------------------------------------------- interp

POINTS = np.array([0.0, 1.0, 1.0, 2.5, 4.0])
VALUES = np.array([1.0, 3.0, -1.0, 2.0, 0.5])


@pytest.mark.parametrize("kwargs", [{}, {"left": -7.0}, {"right": 9}, {"left": -1.0, "right": np.float32(2.0)},
                                    {"period": 3.0}, {"period": -3.0, "left": 5.0}])
def test_interp(kwargs: dict[str, Any]) -> None:
    x = np.array([-1.0, 0.0, 0.5, 1.0, 1.7, 2.5, 4.0, 5.0, np.nan, np.inf, -np.inf])
    agree(np.interp, x, POINTS, VALUES, **kwargs)
    agree(np.interp, x.reshape(1, 11), POINTS, VALUES + 1j * VALUES[::-1], **kwargs)
    agree(np.interp, x.astype(np.float32), POINTS.astype(np.float32), VALUES.astype(np.float32), **kwargs)


def test_interp_integer_inputs_and_complex_ends() -> None:
    agree(np.interp, np.arange(-1, 6), np.array([0, 2, 4]), np.array([3, 1, 7]))
    agree(np.interp, np.array([-1.0, 0.5, 9.0]), np.array([0.0, 1.0]), np.array([1j, 2.0]), left=3j, right=1 + 1j)
    agree(np.interp, np.array([-1.0, 0.0, 2.0, np.nan]), np.array([0.0]), np.array([5.0]))


def test_interp_infinite_values_follow_numpy() -> None:
    fp = np.array([np.inf, -np.inf, 1.0, 1.0, np.inf])
    agree(np.interp, np.array([0.5, 1.0, 1.5, 2.5, 3.5, 3.0]), np.arange(5.0), fp)
    complex_fp = np.empty(5, dtype=np.complex128)
    complex_fp.real, complex_fp.imag = fp, fp[::-1]
    agree(np.interp, np.array([0.5, 2.5]), np.arange(5.0), complex_fp)


@settings(max_examples=40)
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=8, unique=True),
       st.lists(st.floats(-1e3, 1e3), min_size=8, max_size=8),
       st.lists(st.floats(-60, 60), min_size=0, max_size=10))
def test_interp_matches_numpy(points: list[float], values: list[float], x: list[float]) -> None:
    p = np.sort(np.array(points))
    agree(np.interp, np.array(x, dtype=np.float64), p, np.array(values[:len(p)]), rtol=1e-9, atol=1e-9)


def test_interp_errors() -> None:
    raises_like_numpy(ValueError, np.interp, np.ones(2), np.zeros(0), np.zeros(0), match="empty")
    raises_like_numpy(ValueError, np.interp, np.ones(2), np.zeros(3), np.zeros(2), match="same length")
    raises_like_numpy(ValueError, np.interp, np.ones(2), np.arange(3.0), np.zeros(3), period=0, match="non-zero")
    raises_like_numpy(TypeError, np.interp, np.ones(2) * 1j, np.arange(3.0), np.zeros(3), match="x must be real")
    raises_like_numpy(TypeError, np.interp, np.ones(2), np.arange(3.0), np.zeros(3), left=1j, match="left")


# ---------------------------------------------------------------- gradient and ediff1d

G2 = rng.standard_normal((4, 5))
G3 = rng.standard_normal((3, 4, 5))
COORDS = np.array([0.0, 0.5, 1.7, 2.0, 3.5])


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("case", [
    ((G2,), {}), ((G2, 0.5), {}), ((G2, 2.0, COORDS), {}), ((G2, np.float64(2.0), np.arange(5)), {}),
    ((G2, COORDS), {"axis": 1}), ((G2, COORDS), {"axis": -1}), ((G3,), {"axis": (0, 2)}),
    ((G3, 1.5, COORDS), {"axis": [0, 2]}), ((G2[:, 0],), {}), ((G2[:, 0], COORDS[:4]), {}),
    ((I,), {}), ((I.astype(np.uint8), 2), {}), ((G2.astype(np.float32), COORDS), {"axis": 1}),
    ((G2.astype(np.float32), 0.3), {}), ((G2 + 1j * G2[::-1], COORDS), {"axis": 1}), ((np.array(1.5),), {}),
])
def test_gradient(case: tuple[tuple[Any, ...], dict[str, Any]], edge_order: int) -> None:
    args, kwargs = case
    agree(np.gradient, *args, edge_order=edge_order, rtol=2e-6 if args[0].dtype == np.float32 else 1e-12,
          **kwargs)


def test_gradient_errors() -> None:
    raises_like_numpy(ValueError, np.gradient, np.ones(2), edge_order=2, match="at least 3")
    raises_like_numpy(ValueError, np.gradient, np.ones(5), edge_order=3, match="greater than 2")
    raises_like_numpy(TypeError, np.gradient, G2, 1.0, 2.0, 3.0, match="one spacing per axis")
    raises_like_numpy(ValueError, np.gradient, G2, np.ones((2, 2)), 1.0, match="1-d")
    raises_like_numpy(ValueError, np.gradient, G2, np.arange(3.0), 1.0, match="do not match")
    raises_like_numpy(TypeError, np.gradient, np.array([True, False, True]), match="boolean")


@pytest.mark.parametrize("case", [
    ((M,), {}), ((I.astype(np.int8) * 30,), {"to_begin": 5, "to_end": np.array([1, 2])}),
    ((M,), {"to_end": np.array([[1.0], [2.0]])}), ((np.array(3.0),), {"to_begin": 1.5}),
    ((I.astype(np.uint8),), {"to_begin": np.array([7], dtype=np.uint8)}), ((CPLX,), {"to_end": 2.5}),
])
def test_ediff1d(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.ediff1d, *args, **kwargs)


def test_ediff1d_errors() -> None:
    raises_like_numpy(TypeError, np.ediff1d, I, to_begin=1.5, match="same_kind")
    raises_like_numpy(TypeError, np.ediff1d, I.astype(np.int8), to_end=np.array([1.0]), match="to_end")


# ---------------------------------------------------------------- convolution and correlation

SEQUENCE_DTYPES = ["bool", "int8", "uint8", "int64", "uint16", "float32", "float64", "complex128"]


@settings(max_examples=50)
@given(st.integers(1, 7), st.integers(1, 7), st.sampled_from(SEQUENCE_DTYPES), st.sampled_from(SEQUENCE_DTYPES),
       st.sampled_from(["full", "same", "valid"]), st.data())
def test_convolve_and_correlate_match_numpy(la: int, lv: int, da: str, dv: str, mode: str, data: Any) -> None:
    def sequence(n: int, dtype: str) -> np.ndarray:
        values = data.draw(st.lists(st.integers(-60, 120), min_size=n, max_size=n))
        a = np.array(values)
        if np.dtype(dtype).kind == "c":
            return (a + 1j * a[::-1]).astype(dtype)
        return a.astype(dtype) if dtype != "bool" else a > 30

    a, v = sequence(la, da), sequence(lv, dv)
    rtol = 1e-5 if {da, dv} & {"float32"} else 1e-12
    agree(np.convolve, a, v, mode, rtol=rtol)
    agree(np.correlate, a, v, mode=mode, rtol=rtol)


def test_convolve_of_scalars_and_integer_modes() -> None:
    agree(np.convolve, np.array(3), np.array([1, 2]))
    agree(np.correlate, np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0]), 1)
    agree(np.correlate, CPLX, CPLX[:2])


def test_convolve_and_correlate_errors() -> None:
    for func in (np.convolve, np.correlate):
        raises_like_numpy(ValueError, func, np.zeros(0), np.ones(2), match="a cannot be empty")
        raises_like_numpy(ValueError, func, np.ones(2), np.zeros(0), match="v cannot be empty")
        raises_like_numpy(ValueError, func, np.ones((2, 2)), np.ones(2), match="1-d")
        raises_like_numpy(ValueError, func, np.ones(3), np.ones(2), mode="middle", match="mode must be one of")
    raises_like_numpy(ValueError, np.correlate, np.array(3.0), np.ones(2), match="1-d")


# ---------------------------------------------------------------- cross

@pytest.mark.parametrize("case", [
    ((rng.standard_normal(3), rng.standard_normal(3)), {}),
    ((rng.standard_normal((4, 3)), rng.standard_normal(3)), {}),
    ((rng.integers(-9, 9, (2, 3)).astype(np.int8), rng.integers(-9, 9, (5, 1, 3)).astype(np.int16)), {}),
    ((rng.standard_normal((3, 4)), rng.standard_normal((4, 3))), {"axisa": 0, "axisc": 0}),
    ((rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 2, 4))), {"axis": 0}),
    ((rng.standard_normal((2, 3)), rng.standard_normal((3, 2))), {"axisb": 0, "axisc": -2}),
    ((rng.integers(0, 9, (4, 3)).astype(np.uint8), rng.standard_normal((4, 3)).astype(np.float32)), {}),
    ((CPLX[:3], rng.standard_normal(3)), {}),
])
def test_cross(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.cross, *args, rtol=1e-6, **kwargs)


@pytest.mark.parametrize("shapes", [((2,), (2,)), ((4, 2), (2,)), ((2,), (3,)), ((3, 3), (3, 2))])
def test_cross_of_2_vectors_warns_as_numpy(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors are deprecated"):
        expected = np.cross(a, b)
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors are deprecated") as record:
        ours = np.cross(nd(a), nd(b))
    same(ours, expected)
    assert pathlib.Path(record[0].filename).name == pathlib.Path(__file__).name  # the user's line, as NumPy


def test_cross_errors() -> None:
    raises_like_numpy(ValueError, np.cross, np.ones(4), np.ones(3), match="dimension must be 2 or 3")
    raises_like_numpy(ValueError, np.cross, np.ones((3, 3)), np.ones(3), axisc=2)


# ---------------------------------------------------------------- pad

PAD_DTYPES = ["bool", "int8", "uint8", "uint16", "int64", "float32", "float64", "complex64"]


def _pad_input(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    a = rng.integers(-20, 60, shape)
    if dtype == "bool":
        return a > 20
    if np.dtype(dtype).kind == "c":
        return (a + 1j * a[..., ::-1]).astype(dtype)
    if np.dtype(dtype).kind == "u":
        return np.abs(a).astype(dtype)
    return a.astype(dtype)


@pytest.mark.parametrize("pad_width", [2, (1,), (1, 3), ((1, 3),), ((2, 0), (1, 4)), [[1], [2]], np.array([[0, 3],
                                       [2, 1]]), {1: 2}, {0: (3, 0), -1: 1}, {}])
def test_pad_width_spellings(pad_width: Any) -> None:
    agree(np.pad, I, pad_width, constant_values=-3)
    agree(np.pad, I, pad_width, mode="edge")


MODE_CASES = [
    ("constant", {}), ("constant", {"constant_values": 7}), ("constant", {"constant_values": ((1, 2), (3, 4))}),
    ("constant", {"constant_values": (-1.7, 2.6)}), ("edge", {}), ("wrap", {}), ("reflect", {}),
    ("reflect", {"reflect_type": "odd"}), ("symmetric", {}), ("symmetric", {"reflect_type": "odd"}),
    ("linear_ramp", {}), ("linear_ramp", {"end_values": (5, -4)}),
    ("linear_ramp", {"end_values": ((1, 2), (3, 4))}), ("maximum", {}), ("minimum", {"stat_length": 2}),
    ("mean", {}), ("mean", {"stat_length": ((1, 2), (3, 1))}), ("median", {}), ("median", {"stat_length": 2.4}),
    ("maximum", {"stat_length": None}),
]


@pytest.mark.parametrize("dtype", PAD_DTYPES)
@pytest.mark.parametrize(("mode", "options"), MODE_CASES)
def test_pad_modes(mode: str, options: dict[str, Any], dtype: str) -> None:
    array = _pad_input(dtype, (3, 4))
    if np.dtype(dtype).kind == "u" and options.get("constant_values") == (-1.7, 2.6):
        # -1 (the integer part of -1.7) is beyond an unsigned dtype: refused, as NumPy refuses it for int8 (for
        # unsigned dtypes NumPy wraps it to 2**bits - 1)
        with pytest.raises(OverflowError, match=f"numpy.pad.*-1 is out of range for {dtype}"):
            np.pad(nd(array), ((2, 7), (5, 1)), mode, **options)
        return
    agree(np.pad, array, ((2, 7), (5, 1)), mode, rtol=2e-6, **options)


def test_pad_empty_mode_gives_shape_and_dtype() -> None:
    ours = np.pad(nd(M), ((1, 2), (0, 3)), mode="empty")
    assert ours.shape == (6, 7) and to_numpy(ours).dtype == np.float64
    np.testing.assert_array_equal(to_numpy(ours)[1:4, :4], M)


def test_pad_of_empty_arrays() -> None:
    agree(np.pad, np.zeros((0, 3)), ((0, 0), (1, 2)), mode="edge")
    agree(np.pad, np.zeros((0, 3)), 2)
    raises_like_numpy(ValueError, np.pad, np.zeros((0, 3)), 1, mode="reflect", match="empty axis 0")


def test_pad_singleton_axis_reflects_as_edge() -> None:
    agree(np.pad, np.array([[1.0, 2.0, 4.0]]), 3, mode="reflect", reflect_type="odd")
    agree(np.pad, np.array([5]), (4, 2), mode="symmetric")


@settings(max_examples=50)
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data(),
       st.sampled_from([m for m, _ in MODE_CASES]), st.sampled_from(["even", "odd"]),
       st.sampled_from(["int16", "float64"]))
def test_pad_matches_numpy(shape: tuple[int, ...], data: Any, mode: str, reflect_type: str, dtype: str) -> None:
    widths = data.draw(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=len(shape),
                                max_size=len(shape)))
    options: dict[str, Any] = {}
    if mode in ("reflect", "symmetric"):
        options["reflect_type"] = reflect_type
    elif mode in ("maximum", "minimum", "mean", "median"):
        options["stat_length"] = data.draw(st.one_of(st.none(), st.integers(1, 5)))
    agree(np.pad, _pad_input(dtype, shape), widths, mode, **options)


def test_pad_errors() -> None:
    raises_like_numpy(TypeError, np.pad, M, 1.5, match="integral")
    raises_like_numpy(ValueError, np.pad, M, -1, match="negative")
    raises_like_numpy(ValueError, np.pad, M, ((1, 2, 3),), match="pair")
    raises_like_numpy(ValueError, np.pad, M, 1, mode="nearest", match="not supported")
    raises_like_numpy(ValueError, np.pad, M, 1, mode="edge", constant_values=3, match="unsupported keyword")
    raises_like_numpy(ValueError, np.pad, M, 1, mode="maximum", stat_length=0, match="stat_length of 0")
    with pytest.raises(TypeError, match="callable mode"):
        np.pad(nd(M), 1, mode=lambda vector, width, axis, kwargs: None)


# ---------------------------------------------------------------- rot90, append, insert, delete

@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 3, 6])
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (2, 0), (-1, 1)])
def test_rot90(k: int, axes: tuple[int, int]) -> None:
    agree(np.rot90, rng.integers(0, 99, (2, 3, 4)).astype(np.uint16), k, axes)


def test_rot90_errors() -> None:
    raises_like_numpy(ValueError, np.rot90, M, axes=(0,))
    raises_like_numpy(ValueError, np.rot90, M, axes=(1, 1), match="different")
    raises_like_numpy(ValueError, np.rot90, M, axes=(0, -2), match="different")
    raises_like_numpy(ValueError, np.rot90, M, axes=(0, 3), match="out of range")


@pytest.mark.parametrize("case", [
    ((M, 5.0), {}), ((I, M), {}), ((I.astype(np.float32), np.array([1, 2])), {}),
    ((I, I[:1]), {"axis": 0}), ((I.astype(np.int8), np.array([[1], [2], [3]], dtype=np.int16)), {"axis": 1}),
    ((np.array(2), [3, 4]), {}),
])
def test_append(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.append, *args, **kwargs)


@pytest.mark.parametrize("case", [
    ((np.arange(5), 2, 9), {}), ((np.arange(5), -1, [7, 8]), {}), ((np.arange(5), 5, 1.9), {}),
    ((I, 1, 0), {}), ((I, 1, [10, 20, 30]), {"axis": 1}), ((I, [1], [[10], [20], [30]]), {"axis": 1}),
    ((I, 0, [1, 2, 3, 4]), {"axis": 0}), ((I, [2, 0, 2], [7, 8, 9]), {"axis": 1}),
    ((I, [2, 0, 2], np.array([[7], [8], [9]]).T), {"axis": 1}), ((I, slice(1, 3), 5), {"axis": 0}),
    ((I, slice(None, None, -2), [5, 6]), {"axis": 1}), ((np.arange(4), np.array([True, False, True]), 9), {}),
    ((np.arange(4), [], 3), {}), ((I.astype(np.uint8), np.array(2), [1, 2, 3]), {"axis": 1}),
])
def test_insert(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.insert, *args, **kwargs)


@settings(max_examples=50)
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), st.data())
def test_insert_matches_numpy(shape: tuple[int, ...], data: Any) -> None:
    arr = rng.integers(-9, 9, shape).astype(np.int32)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = arr.size if axis is None else shape[axis]
    obj = data.draw(st.one_of(st.integers(-n, n), st.lists(st.integers(-n, n), max_size=4),
                              st.builds(slice, st.integers(-5, 5), st.integers(-5, 5), st.sampled_from([1, 2, -1]))))
    count = len(range(*obj.indices(n))) if isinstance(obj, slice) else None if isinstance(obj, int) else len(obj)
    values = rng.integers(-99, 99, 1 if count is None else max(count, 1)).astype(np.float64)
    if count not in (None, 1) and count != len(values):
        values = values[:1]
    agree(np.insert, arr, obj, values, axis=axis)


@pytest.mark.parametrize("case", [
    ((np.arange(6), 2), {}), ((np.arange(6), -1), {}), ((I, 1), {}), ((I, 1), {"axis": 0}),
    ((I, [0, 2, -1]), {"axis": 1}), ((I, [[0], [2]]), {"axis": 1}), ((I, np.array([True, False, True])), {"axis": 0}),
    ((I, slice(None, None, 2)), {"axis": 1}), ((I, slice(3, 0, -2)), {"axis": 1}), ((I, slice(5, 9)), {"axis": 1}),
    ((I, []), {"axis": 0}), ((I, np.array([1])), {"axis": 1}), ((I.astype(np.uint64), [0, 0, 3]), {"axis": 1}),
])
def test_delete(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.delete, *args, **kwargs)


@settings(max_examples=50)
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_delete_matches_numpy(shape: tuple[int, ...], data: Any) -> None:
    arr = rng.standard_normal(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = arr.size if axis is None else shape[axis]
    obj = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(-n, n - 1), max_size=5),
                              st.lists(st.booleans(), min_size=n, max_size=n).map(np.array),
                              st.builds(slice, st.integers(-5, 5), st.integers(-5, 5), st.sampled_from([1, 3, -1]))))
    agree(np.delete, arr, obj, axis=axis)


def test_delete_with_a_device_mask_keeps_the_mask_on_its_device() -> None:
    mask = xp.asarray(np.array([True, False, False, True]))
    same(np.delete(nd(I), mask, axis=1), np.delete(I, [0, 3], axis=1))


def test_insert_and_delete_errors() -> None:
    raises_like_numpy(IndexError, np.insert, np.arange(3), 4, 1, match="out of bounds")
    raises_like_numpy(ValueError, np.insert, np.arange(3), [[1]], 1, match="1-d")
    raises_like_numpy(ValueError, np.insert, np.arange(3), [0, 1], [1, 2, 3], match="broadcast")
    raises_like_numpy(IndexError, np.delete, np.arange(3), 3, match="out of bounds")
    raises_like_numpy(IndexError, np.delete, np.arange(3), [0, 5], match="out of bounds")
    raises_like_numpy(ValueError, np.delete, np.arange(3), np.array([True, False]), match="axis length 3")
    raises_like_numpy(IndexError, np.delete, np.arange(3), np.array([0.0]), match="integers")
    raises_like_numpy(ValueError, np.delete, I, 0, axis=2)


# ---------------------------------------------------------------- argwhere, select, lexsort

@pytest.mark.parametrize("a", [I, I > 0, np.array(3), np.array(0.0), np.zeros((2, 0)), rng.standard_normal(4) > 0])
def test_argwhere(a: np.ndarray) -> None:
    agree(np.argwhere, a)


@pytest.mark.parametrize("case", [
    (([I > 0, I < -2], [I, -I]), {}), (([I > 0, I < -2], [I, 2.5]), {"default": -1}),
    (([I > 0], [I.astype(np.int8)]), {"default": 0}), (([I > 0], [I.astype(np.int8)]), {"default": np.int64(3)}),
    (([M > 0, np.array([True, False, True, False])], [1, 2]), {"default": 3.5}),
    (([np.array(True), M < 0], [M, 1j]), {}), (([I[0] > 0, I[:, :1] > 1], [I[0], I[:, 0:1]]), {}),
])
def test_select(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.select, *args, **kwargs)


@settings(max_examples=40)
@given(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), st.integers(1, 4), st.data())
def test_select_matches_numpy(shape: tuple[int, ...], count: int, data: Any) -> None:
    conditions = [data.draw(hnp.arrays(np.bool_, shape)) for _ in range(count)]
    choices = [data.draw(st.one_of(hnp.arrays(np.int16, shape, elements=st.integers(-99, 99)),
                                   st.integers(-99, 99), st.floats(-9, 9))) for _ in range(count)]
    agree(np.select, conditions, choices, default=data.draw(st.sampled_from([0, -1.5, np.int8(2)])))


def test_select_errors() -> None:
    raises_like_numpy(ValueError, np.select, [I > 0], [I, I], match="must match")
    raises_like_numpy(ValueError, np.select, [], [], match="empty")
    raises_like_numpy(TypeError, np.select, [I], [I], match="boolean")


@pytest.mark.parametrize("case", [
    (((np.array([1, 1, 0, 0, 1]), np.array([3, 1, 2, 1, 3])),), {}),
    ((np.array([[1, 1, 0, 0, 1], [3, 1, 2, 1, 3], [0, 1, 1, 0, 0]]),), {}),
    (((rng.integers(0, 2, (3, 6)), rng.integers(0, 3, (3, 6))),), {"axis": 0}),
    (((rng.integers(0, 2, (3, 6)).astype(np.uint64), rng.standard_normal((3, 6)) > 0),), {"axis": -1}),
    (((np.array([1.0, np.nan, 1.0, 0.0]), np.array([2.0, 2.0, np.nan, 2.0])),), {}),
    (((np.array([3, 1, 2, 1]), np.array([1 + 2j, 1 + 1j, 0 + 5j, 1 + 1j])),), {}),
    ((np.array([3, 1, 2]),), {}),
])
def test_lexsort(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.lexsort, *args, **kwargs)


def test_lexsort_errors() -> None:
    raises_like_numpy(ValueError, np.lexsort, (np.ones(3), np.ones(4)), match="same shape")
    with pytest.raises(TypeError, match="len > 0"):
        np.lexsort(nd(np.zeros((0, 3))))


# ---------------------------------------------------------------- lstsq and polyval

TALL = rng.standard_normal((6, 3))
WIDE = rng.standard_normal((3, 5))
DEFICIENT = np.outer(rng.standard_normal(5), rng.standard_normal(3))


@pytest.mark.parametrize("case", [
    ((TALL, rng.standard_normal(6)), {}), ((TALL, rng.standard_normal((6, 2))), {}),
    ((WIDE, rng.standard_normal(3)), {}), ((DEFICIENT, rng.standard_normal(5)), {}),
    ((TALL, rng.standard_normal(6)), {"rcond": 0.5}), ((TALL, rng.standard_normal(6)), {"rcond": -1}),
    ((np.arange(12).reshape(6, 2), np.arange(6)), {}), ((TALL + 1j * TALL[::-1], rng.standard_normal((6, 2))), {}),
    ((np.zeros((3, 0)), np.ones(3)), {}), ((np.zeros((0, 2)), np.ones(0)), {}), ((np.zeros((4, 2)), np.ones(4)), {}),
    ((TALL, np.zeros((6, 0))), {}),
])
def test_lstsq(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    (x, residuals, rank, s), expected = both(np.linalg.lstsq, *args, **kwargs)
    same((x, residuals, s), (expected[0], expected[1], expected[3]), rtol=1e-9, atol=1e-12)
    assert type(rank) is type(expected[2]) and rank == expected[2]


def test_lstsq_in_float32() -> None:
    a, b = TALL.astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
    (x, residuals, rank, s), expected = both(np.linalg.lstsq, a, b)
    same((x, residuals, s), (expected[0], expected[1], expected[3]), rtol=2e-4, atol=1e-5)
    assert rank == expected[2]


def test_lstsq_errors() -> None:
    raises_like_numpy(np.linalg.LinAlgError, np.linalg.lstsq, np.ones(3), np.ones(3), match="two-dimensional")
    raises_like_numpy(np.linalg.LinAlgError, np.linalg.lstsq, np.ones((3, 2)), np.ones(4), match="incompatible")


@pytest.mark.parametrize("case", [
    (np.array([3.0, 0.0, -1.0]), M), (np.array([2, -1, 5]), I), (np.array([2, -1, 5]), M.astype(np.float32)),
    (np.array([1.5, 2.0], dtype=np.float32), np.arange(4, dtype=np.int64)), (np.array([], dtype=np.float64), I),
    (np.array([1, 2j]), M), (np.array([4, 3], dtype=np.int8), np.array([100, 7], dtype=np.int8)),
    (np.array([1.0, -2.0]), 3.0),
])
def test_polyval(case: tuple[np.ndarray, Any]) -> None:
    agree(np.polyval, *case)


# ---------------------------------------------------------------- memory overlap

def test_share_memory_of_neuron_arrays() -> None:
    x = xp.asarray(np.arange(12.0).reshape(3, 4))
    other = xp.asarray(np.arange(12.0).reshape(3, 4))
    for func in (np.may_share_memory, np.shares_memory):
        assert func(x, x[1]) is True
        assert func(x[0], x[1]) is False
        assert func(x, other) is False
        assert func(x[:, :0], x) is False
    flat = xp.reshape(x, (-1,))
    interleaved = (flat[::2], flat[1::2])
    assert np.may_share_memory(*interleaved) is True  # bounds overlap
    assert np.shares_memory(*interleaved) is False  # no element in common
    assert np.may_share_memory(*interleaved, max_work=-1) is False


def test_share_memory_with_ndarrays_compares_host_memory() -> None:
    host = np.arange(10.0)
    t = torch.from_numpy(host)
    view = xp.NeuronArray(t[2:5])
    assert np.shares_memory(view, host) is True
    assert np.may_share_memory(host[5:], view) is False
    assert np.shares_memory(view, host[::3]) is True
    assert np.shares_memory(view, np.arange(3.0)) is False
    assert np.shares_memory(view, [2.0, 3.0]) is False


# ---------------------------------------------------------------- I/O

def test_save_and_load_round_trip(tmp_path: pathlib.Path) -> None:
    x = xp.asarray(M.astype(np.float32))
    np.save(tmp_path / "x.npy", x)
    loaded = np.load(tmp_path / "x.npy")
    assert type(loaded) is np.ndarray and loaded.dtype == np.float32
    np.testing.assert_array_equal(loaded, M.astype(np.float32))


@pytest.mark.parametrize("func", [np.savez, np.savez_compressed])
def test_savez_round_trip(tmp_path: pathlib.Path, func: Any) -> None:
    path = tmp_path / "arrays.npz"
    func(path, nd(I), np.arange(3), weights=nd(CPLX), out=nd(M > 0), allow_pickle=False)
    with np.load(path) as data:
        assert sorted(data.files) == ["arr_0", "arr_1", "out", "weights"]
        np.testing.assert_array_equal(data["arr_0"], I)
        np.testing.assert_array_equal(data["arr_1"], np.arange(3))
        np.testing.assert_array_equal(data["weights"], CPLX)
        np.testing.assert_array_equal(data["out"], M > 0)


def test_savetxt_round_trip(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "m.csv"
    np.savetxt(path, nd(M), fmt="%.17g", delimiter=",", header="a,b,c,d")
    np.testing.assert_array_equal(np.loadtxt(path, delimiter=","), M)
    assert path.read_text().startswith("# a,b,c,d\n")
    np.savetxt(path, nd(I), fmt="%d")
    np.testing.assert_array_equal(np.loadtxt(path, dtype=np.int64), I)
