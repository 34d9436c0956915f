"""Values that NumPy functions store into an array of a given dtype (pad's constant_values, insert's values,
full's and full_like's fill_value, and the functions NumPy runs itself on the host: put, place, putmask,
fill_diagonal, nan_to_num, copyto): converted as NumPy stores a Python scalar, an int beyond the dtype an
OverflowError and NaN into an integer dtype a ValueError. Oracle: NumPy on the same data; where NumPy's answer
depends on its internal conversions (pad of an unsigned array wraps -1 and stores 0 for NaN, where it refuses both
for a signed one), the refusal is the answer in every integer dtype."""

from __future__ import annotations

import math
import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import trn_backend as xp
from tests.support import assert_same, numpy_integer_store

INTS = ["int8", "int16", "int64", "uint8", "uint16", "uint64"]
VALUES = [300, -1, 1.5, -2.5, 255.9, math.nan, math.inf, 2**64, 2**63, 70000, 0]


def _numpy(f, *args, **kwargs) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return f(*args, **kwargs)
        except (OverflowError, ValueError, TypeError) as e:
            return e


def _python_rule(value: Any, dtype: str) -> type[Exception] | None:
    """The error NumPy raises storing the Python scalar ``value`` into ``dtype`` (None where it fits)."""
    stored = numpy_integer_store(value, dtype)
    return stored if isinstance(stored, type) else None


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("value", VALUES)
def test_pad_constant_values_are_range_checked(dtype: str, value: Any) -> None:
    a = np.array([[1, 2], [3, 4]], dtype=dtype)
    error = _python_rule(value, dtype)
    for constant in (value, (value, 0), ((0, 0), (1, value))):
        if error is not None:
            with pytest.raises(error, match="numpy.pad"):
                np.pad(xp.asarray(a), 1, constant_values=constant)
            theirs = _numpy(np.pad, a, 1, constant_values=constant)
            if np.dtype(dtype).kind == "i":  # NumPy refuses it in a signed dtype too
                assert isinstance(theirs, error), theirs
            continue
        assert_same(np.pad(xp.asarray(a), 1, constant_values=constant), np.pad(a, 1, constant_values=constant))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "bool"])
@pytest.mark.parametrize("value", VALUES + [1e300, -0.0])
def test_pad_constant_values_of_floating_and_bool_arrays(dtype: str, value: Any) -> None:
    a = np.array([1, 0, 2], dtype=dtype)
    assert_same(np.pad(xp.asarray(a), (2, 1), constant_values=value), _numpy(np.pad, a, (2, 1), constant_values=value))


def test_pad_bfloat16_with_an_int_beyond_int64() -> None:
    a = np.array([1, 2], dtype=ml_dtypes.bfloat16)
    got = np.asarray(np.pad(xp.asarray(a), 1, constant_values=2**64 - 1))
    np.testing.assert_array_equal(got.astype(np.float64), [2.0**64, 1, 2, 2.0**64])  # rounded once: 2**64


def test_pad_refuses_complex_into_real_arrays() -> None:
    with pytest.raises(TypeError, match=r"numpy.pad\(\): cannot pad a float64 array with the complex value"):
        np.pad(xp.asarray(np.zeros(2)), 1, constant_values=1 + 2j)
    assert_same(
        np.pad(xp.asarray(np.zeros(2, bool)), 1, constant_values=1j), np.pad(np.zeros(2, bool), 1, constant_values=1j)
    )


@pytest.mark.parametrize("dtype", INTS + ["float32", "bool"])
@pytest.mark.parametrize("value", VALUES + [[300, 1], [1.5, 2**62 + 1]])
def test_insert_values_convert_as_numpy(dtype: str, value: Any) -> None:
    a = np.array([1, 2, 3], dtype=dtype)
    obj = [1, 2] if isinstance(value, list) else 1
    theirs = _numpy(np.insert, a, obj, value)
    if isinstance(theirs, Exception):
        with pytest.raises(type(theirs)):
            np.insert(xp.asarray(a), obj, value)
        return
    assert_same(np.insert(xp.asarray(a), obj, value), theirs)


def test_insert_of_an_array_casts_it() -> None:
    # an array of values is cast as NumPy casts arrays (300 into int8 wraps); a Python int is range-checked
    a = np.array([1, 2], dtype=np.int8)
    assert_same(np.insert(xp.asarray(a), 1, xp.asarray(np.array([300]))), np.insert(a, 1, np.array([300])))


@pytest.mark.parametrize("dtype", INTS + ["float32", "bool"])
@pytest.mark.parametrize("value", VALUES)
def test_full_and_full_like_fill_values(dtype: str, value: Any) -> None:
    like = xp.asarray(np.zeros(3, dtype=dtype))
    for ours, theirs in (
        (lambda: np.full(3, value, dtype=dtype, like=like), lambda: np.full(3, value, dtype=dtype)),
        (lambda: np.full_like(like, value), lambda: np.full_like(np.zeros(3, dtype=dtype), value)),
    ):
        error = _python_rule(value, dtype) if np.dtype(dtype).kind in "iu" else None
        if error is not None:
            with pytest.raises(error):
                ours()
            continue
        expected = _numpy(theirs)
        if isinstance(expected, Exception):
            # NumPy's copyto cannot take an int beyond C long even into bool: the same OverflowError
            with pytest.raises(type(expected)):
                ours()
            continue
        assert_same(ours(), expected)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32"])
@pytest.mark.parametrize("value", [300, -1, 1.5, math.nan])
def test_functions_numpy_runs_itself_store_as_numpy(dtype: str, value: Any) -> None:
    # put, place, putmask, fill_diagonal, copyto and nan_to_num run in NumPy on the array's host memory:
    # NumPy's answers and errors, written through to the NeuronArray
    calls = [
        lambda a: np.put(a, [0, 2], value),
        lambda a: np.place(a, np.array([True, False, True, False]), [value]),
        lambda a: np.putmask(a, np.array([True, False, False, True]), value),
        lambda a: np.copyto(a, value, casting="unsafe"),
    ]
    for call in calls:
        host = np.arange(4, dtype=dtype)
        theirs = _numpy(call, host)
        x = xp.asarray(np.arange(4, dtype=dtype))
        if isinstance(theirs, Exception):
            with pytest.raises(type(theirs)):
                call(x)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(x)
        assert_same(x, host)
    square = np.zeros((3, 3), dtype=dtype)
    theirs = _numpy(np.fill_diagonal, square, value)
    x = xp.asarray(np.zeros((3, 3), dtype=dtype))
    if isinstance(theirs, Exception):
        with pytest.raises(type(theirs)):
            np.fill_diagonal(x, value)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.fill_diagonal(x, value)
        assert_same(x, square)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
@pytest.mark.parametrize("replacements", [{}, {"nan": 7.0}, {"posinf": 1e300, "neginf": -1e300}, {"nan": 2**64}])
def test_nan_to_num_replacements(dtype: str, replacements: dict[str, Any]) -> None:
    a = np.array([np.nan, np.inf, -np.inf, 1.5], dtype=dtype)
    theirs = _numpy(np.nan_to_num, a, **replacements)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(np.nan_to_num(xp.asarray(a), **replacements), theirs)


def test_nan_to_num_keeps_integers_writes_in_place_and_stays_a_neuron_array() -> None:
    ints = xp.asarray(np.array([1, -2], dtype=np.int8))
    assert_same(np.nan_to_num(ints), np.array([1, -2], dtype=np.int8))
    x = xp.asarray(np.array([np.nan, -np.inf, 2.0]))
    assert np.nan_to_num(x, copy=False, nan=-1.0) is x
    assert_same(x, np.array([-1.0, np.finfo(np.float64).min, 2.0]))
    b = np.asarray(np.nan_to_num(xp.asarray(np.array([np.nan, np.inf], dtype=ml_dtypes.bfloat16)), nan=2**64 - 1))
    np.testing.assert_array_equal(b.astype(np.float64), [2.0**64, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)])
    with pytest.raises(TypeError, match=r"numpy.nan_to_num\(\)"):  # NumPy: a TypeError too
        np.nan_to_num(xp.asarray(np.array([1.0])), nan=1j)
