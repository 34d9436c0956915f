"""Data type functions against NumPy and array_api_strict (the reference for the standard's tables)."""

from __future__ import annotations

import itertools

import array_api_strict as strict
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import (
    COMPLEX_NAMES,
    DTYPE_NAMES,
    FLOAT_NAMES,
    INT_NAMES,
    assert_same,
    from_numpy,
    to_numpy,
)

DT = {name: getattr(xp, name) for name in DTYPE_NAMES}
PAIRS = list(itertools.product(DTYPE_NAMES, repeat=2))
KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
         "numeric")


def _strict(name: str):
    return getattr(strict, name)


def _name(strict_dtype) -> str:
    return str(strict_dtype).rsplit(".", 1)[-1]


# ---------------------------------------------------------------- astype

def _sample(name: str) -> np.ndarray:
    """Values every dtype holds exactly, so that any cast can be checked against NumPy."""
    return np.array([0, 1, 5, 100, 127], dtype=name) if name != "bool" else np.array([True, False, True])


@pytest.mark.parametrize("src, dst", [p for p in PAIRS if not (p[0] in COMPLEX_NAMES and p[1] not in
                                                               COMPLEX_NAMES + ("bool",))])
def test_astype_every_pair(src, dst):
    a = _sample(src)
    assert_same(xp.astype(from_numpy(a), DT[dst]), a.astype(dst))


def test_astype_unsigned_values_beyond_the_signed_range():
    a = np.array([2**64 - 1, 2**63, 7], dtype=np.uint64)
    for dst in ("float64", "float32", "uint32", "uint16", "int64", "int8", "complex128", "bool"):
        assert_same(xp.astype(from_numpy(a), DT[dst]), a.astype(dst))
    b = np.array([4e9, 1.0], dtype=np.float64)
    assert_same(xp.astype(from_numpy(b), xp.uint32), b.astype(np.uint32))
    c = np.array([1.8e19, 3.0])
    assert_same(xp.astype(from_numpy(c), xp.uint64), c.astype(np.uint64))


def _round_to_bits(v: int, bits: int) -> int:
    """v rounded once, to nearest with ties to even, to ``bits`` significant bits (float32: 24, float64: 53)."""
    shift = v.bit_length() - bits
    if shift <= 0:
        return v
    q, r = divmod(v, 1 << shift)
    half = 1 << (shift - 1)
    return (q + (r > half or (r == half and q % 2 == 1))) << shift


@st.composite
def _uint64_values(draw: st.DrawFn) -> int:
    """uint64 values, mostly from 2**63 up (stored as negative int64) and at or next to a float32 or float64
    rounding tie, where rounding twice goes wrong."""
    kind = draw(st.sampled_from(["tie", "tie", "high", "any"]))
    if kind == "any":
        return draw(st.integers(0, 2**64 - 1))
    if kind == "high":
        return draw(st.integers(2**63, 2**64 - 1))
    bits = draw(st.sampled_from([24, 53]))
    top = draw(st.just(63) | st.integers(bits, 63))  # the highest set bit
    shift = top - bits + 1  # the bits below the significand
    significand = draw(st.integers(1 << (bits - 1), (1 << bits) - 1))
    tie = (significand << shift) + (1 << (shift - 1))
    return min(tie + draw(st.integers(-2, 2)), 2**64 - 1)


FLOAT_BITS = {"float32": 24, "complex64": 24, "float64": 53, "complex128": 53}


@settings(max_examples=150)
@given(values=st.lists(_uint64_values(), min_size=1, max_size=16))
def test_uint64_to_floating_rounds_once(values):
    a = np.array(values, dtype=np.uint64)
    x = from_numpy(a)
    for name, bits in FLOAT_BITS.items():
        expected = a.astype(name)
        exact = np.array([_round_to_bits(v, bits) for v in values], dtype=np.float64).astype(name)
        np.testing.assert_array_equal(expected, exact)  # NumPy rounds once, the reference
        assert_same(xp.astype(x, DT[name]), expected)
        assert_same(xp.asarray(x, dtype=DT[name]), expected)
        assert_same(xp.asarray(a, dtype=DT[name]), expected)  # from NumPy data
    # promotion converts through the same cast: uint64 with a float array, a Python float, true division
    assert_same(xp.add(x, from_numpy(np.zeros(1, np.float64))), a.astype(np.float64))
    assert_same(xp.multiply(x, from_numpy(np.ones(1, np.float32))), a.astype(np.float32))
    assert_same(xp.add(x, from_numpy(np.zeros(1, np.complex64))), a.astype(np.complex64))
    assert_same(xp.add(x, 0.0), a.astype(np.float32))  # the default float
    assert_same(xp.divide(x, 1), a.astype(np.float32))


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_uint64_to_floating_at_known_double_rounding_cases(name):
    # 2**63 + 2**39 + 1 lies just above a float32 tie, 2**63 + 2**10 + 1 just above a float64 tie: rounding to
    # float64 first lands on the tie, and the second rounding goes down to 2**63 (to even) instead of up
    values = [2**63 + 2**39 + 1, 2**63 + 2**10 + 1, 2**64 - 1, 2**63 + 1025]
    a = np.array(values, dtype=np.uint64)
    got = to_numpy(xp.astype(from_numpy(a), DT[name]))
    assert got.tolist() == [float(_round_to_bits(v, FLOAT_BITS[name])) for v in values]


def test_astype_copy_semantics():
    x = from_numpy(np.arange(3, dtype=np.int32))
    assert xp.astype(x, xp.int32, copy=False) is x
    y = xp.astype(x, xp.int32)
    assert y is not x and not np.shares_memory(to_numpy(y), to_numpy(x))
    u = from_numpy(np.array([2**64 - 1], dtype=np.uint64))
    v = xp.astype(u, xp.int64, copy=False)  # torch would reinterpret in place; the standard wants new memory
    assert_same(v, np.array([-1]))
    assert not np.shares_memory(to_numpy(v), to_numpy(u))
    assert xp.astype(x, xp.int32, device="cpu", copy=False) is x


def test_astype_errors():
    z = from_numpy(np.array([1 + 2j], dtype=np.complex64))
    with pytest.raises(TypeError, match=r"astype\(\).*complex64 to float32.*real\(x\) or imag\(x\)"):
        xp.astype(z, xp.float32)
    assert_same(xp.astype(z, xp.bool), np.array([True]))
    with pytest.raises(TypeError, match="astype.*not a dtype"):
        xp.astype(z, np.float32)
    with pytest.raises(TypeError, match="NeuronArray"):
        xp.astype(np.zeros(2), xp.float32)


# ---------------------------------------------------------------- can_cast, result_type, isdtype

@pytest.mark.parametrize("src, dst", PAIRS)
def test_can_cast_matches_the_standard(src, dst):
    assert xp.can_cast(DT[src], DT[dst]) == strict.can_cast(_strict(src), _strict(dst))
    assert xp.can_cast(from_numpy(np.zeros(1, dtype=src)), DT[dst]) == xp.can_cast(DT[src], DT[dst])


@pytest.mark.parametrize("a, b", PAIRS)
def test_result_type_matches_the_standard(a, b):
    try:
        expected = strict.result_type(_strict(a), _strict(b))
    except TypeError:
        return  # outside the standard's table (mixed kinds): implementation-defined
    assert xp.result_type(DT[a], DT[b]) == DT[_name(expected)]
    arrays = (xp.zeros((), dtype=DT[a]), xp.zeros((2,), dtype=DT[b]))  # 0-d arrays promote like any array
    assert xp.result_type(*arrays) == DT[_name(expected)]


@pytest.mark.parametrize("name", DTYPE_NAMES)
@pytest.mark.parametrize("scalar", [True, 1, 1.0, 1j])
def test_result_type_scalars_are_weak(name, scalar):
    try:
        expected = _name(strict.result_type(_strict(name), scalar))
    except TypeError:
        return  # the standard does not define this mix
    assert xp.result_type(DT[name], scalar) == DT[expected]
    assert xp.result_type(scalar, xp.zeros(1, dtype=DT[name])) == DT[expected]


def test_result_type_cross_kind_and_errors():
    assert xp.result_type(xp.int8, xp.float32, 1j) == xp.complex64
    assert xp.result_type(xp.bool, 1) == xp.int64
    with pytest.raises(ValueError, match="at least one array or dtype"):
        xp.result_type()
    with pytest.raises(ValueError, match="Python scalars alone"):
        xp.result_type(1, 2.0)
    with pytest.raises(TypeError, match="uint64 and int8"):
        xp.result_type(xp.uint64, xp.int8)
    with pytest.raises(TypeError, match="argument 1"):
        xp.result_type(xp.int8, "int16")


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_isdtype_matches_the_standard(name):
    dtype = DT[name]
    for kind in KINDS:
        assert xp.isdtype(dtype, kind) is strict.isdtype(_strict(name), kind)
    for other in DTYPE_NAMES:
        assert xp.isdtype(dtype, DT[other]) is (other == name)
    assert xp.isdtype(dtype, ("bool", "numeric")) is True
    assert xp.isdtype(dtype, (xp.int8, "complex floating")) is (name in ("int8",) + COMPLEX_NAMES)


def test_isdtype_errors():
    with pytest.raises(ValueError, match="unknown kind 'integer'"):
        xp.isdtype(xp.int8, "integer")
    with pytest.raises(TypeError, match="kind must be"):
        xp.isdtype(xp.int8, 3)
    with pytest.raises(TypeError, match="isdtype.*not a dtype"):
        xp.isdtype("int8", "integral")


# ---------------------------------------------------------------- finfo, iinfo

@pytest.mark.parametrize("name", FLOAT_NAMES + COMPLEX_NAMES)
def test_finfo(name):
    real = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    ref = np.finfo(real)
    for arg in (DT[name], xp.ones(1, dtype=DT[name])):
        fi = xp.finfo(arg)
        assert (fi.bits, fi.eps, fi.max, fi.min, fi.smallest_normal) == (
            ref.bits, float(ref.eps), float(ref.max), float(ref.min), float(ref.smallest_normal))
        assert all(type(v) is float for v in (fi.eps, fi.max, fi.min, fi.smallest_normal))
        assert fi.dtype is DT[real]


@pytest.mark.parametrize("name", INT_NAMES)
def test_iinfo(name):
    ref = np.iinfo(name)
    for arg in (DT[name], xp.ones(1, dtype=DT[name])):
        ii = xp.iinfo(arg)
        assert (ii.bits, ii.min, ii.max) == (ref.bits, int(ref.min), int(ref.max))
        assert type(ii.max) is int and ii.dtype is DT[name]


def test_info_errors():
    with pytest.raises(TypeError, match="finfo.*floating-point.*int32"):
        xp.finfo(xp.int32)
    with pytest.raises(TypeError, match="iinfo.*integer.*float64"):
        xp.iinfo(xp.float64)
    with pytest.raises(TypeError, match="iinfo.*bool"):
        xp.iinfo(xp.bool)
    with pytest.raises(TypeError, match="not a dtype"):
        xp.finfo(float)
