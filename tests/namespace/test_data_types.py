"""Data type functions against NumPy and array_api_strict (the reference for the standard's tables)."""

from __future__ import annotations

import itertools

import array_api_strict as strict
import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import (
    COMPLEX_NAMES,
    DTYPE_NAMES,
    FLOAT_NAMES,
    INT_NAMES,
    assert_same,
    from_numpy,
    shapes,
    to_numpy,
)

DT = {name: getattr(xp, name) for name in DTYPE_NAMES}
PAIRS = list(itertools.product(DTYPE_NAMES, repeat=2))
KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric")


def _strict(name: str):
    return getattr(strict, name)


def _name(strict_dtype) -> str:
    return str(strict_dtype).rsplit(".", 1)[-1]


def _kind(name: str) -> str:
    return np.dtype(name).kind.replace("u", "i")  # signed and unsigned integers are one kind


# ---------------------------------------------------------------- astype


def _sample(name: str) -> np.ndarray:
    """Values every dtype holds exactly, so that any cast can be checked against NumPy."""
    return np.array([0, 1, 5, 100, 127], dtype=name) if name != "bool" else np.array([True, False, True])


@pytest.mark.parametrize(
    "src, dst", [p for p in PAIRS if not (p[0] in COMPLEX_NAMES and p[1] not in COMPLEX_NAMES + ("bool",))]
)
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
    assert_same(xp.add(x, 0.0), a.astype(np.float64))  # the CPU's default float
    assert_same(xp.divide(x, 1), a.astype(np.float64))
    assert_same(xp.add(x, from_numpy(np.zeros((), np.float32))), a.astype(np.float32))  # a 0-d array is not weak


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
        xp.astype(z, "float8")
    with pytest.raises(TypeError, match="astype.*not a dtype"):
        xp.astype(z, 3)
    with pytest.raises(TypeError, match="astype.*dtype <U3 is not supported"):
        xp.astype(z, np.dtype("U3"))
    with pytest.raises(TypeError, match="astype.*torch dtype torch.float8_e4m3fn is not supported"):
        xp.astype(z, torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="NeuronArray"):
        xp.astype(np.zeros(2), xp.float32)


# ---------------------------------------------------------------- can_cast, result_type, isdtype


@pytest.mark.parametrize("src, dst", PAIRS)
def test_can_cast_matches_the_standard(src, dst):
    if _kind(src) == _kind(dst):
        assert xp.can_cast(DT[src], DT[dst]) == strict.can_cast(_strict(src), _strict(dst))
    else:  # across kinds the standard leaves it to the library: NumPy's safe rule, as the dtypes are NumPy's
        assert xp.can_cast(DT[src], DT[dst]) == np.can_cast(src, dst, "safe")
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
    with pytest.raises(TypeError, match="argument 1: 'int12' is not a dtype"):
        xp.result_type(xp.int8, "int12")
    assert xp.result_type(xp.int8, "int16") == np.int16  # any dtype spelling, as in NumPy


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
        xp.isdtype("int12", "integral")
    assert xp.isdtype("int8", "integral") and xp.isdtype(np.float32, "real floating")


# ---------------------------------------------------------------- finfo, iinfo


@pytest.mark.parametrize("name", FLOAT_NAMES + COMPLEX_NAMES)
def test_finfo(name):
    real = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    ref = np.finfo(real)
    for arg in (DT[name], xp.ones(1, dtype=DT[name])):
        fi = xp.finfo(arg)
        assert (fi.bits, fi.eps, fi.max, fi.min, fi.smallest_normal) == (
            ref.bits,
            float(ref.eps),
            float(ref.max),
            float(ref.min),
            float(ref.smallest_normal),
        )
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
        xp.finfo(1.0)
    with pytest.raises(TypeError, match="not a dtype"):
        xp.iinfo(None)
    assert xp.finfo(float).dtype == np.float64 and xp.iinfo(int).dtype == np.int64  # Python types, as NumPy


# ---------------------------------------------------------------- dtype objects: NumPy's, in every spelling

EXTENSION = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
ALL_NAMES = DTYPE_NAMES + tuple(EXTENSION)


def _spellings(name: str) -> list:
    """The ways a user may name one dtype: ours, a NumPy dtype, NumPy's scalar type, its name, torch's."""
    public = getattr(xp, name)
    return [public, np.dtype(public), public.type, name, getattr(torch, name)]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_dtype_objects_are_numpy_dtypes(name):
    public = getattr(xp, name)
    assert isinstance(public, np.dtype) and public == EXTENSION.get(name, np.dtype(name)) and public.name == name
    assert public == public.type  # NumPy's own equality: x.dtype == np.float32 holds
    x = xp.zeros(2, dtype=public)
    assert isinstance(x.dtype, np.dtype) and x.dtype == public
    assert x._t.dtype is getattr(torch, name)  # the tensor inside holds torch's dtype
    assert np.asarray(x).dtype == public


@pytest.mark.parametrize("name", ALL_NAMES)
def test_every_dtype_spelling_means_the_same_dtype(name):
    public = getattr(xp, name)
    source = from_numpy(np.array([0, 1], dtype=np.int8))
    for spelling in _spellings(name):
        for made in (
            xp.zeros(2, dtype=spelling),
            xp.astype(source, spelling),
            xp.asarray([0, 1], dtype=spelling),
            xp.full(1, 1, dtype=spelling),
            xp.empty_like(source, dtype=spelling),
        ):
            assert made.dtype == public and made._t.dtype is getattr(torch, name), (spelling, made.dtype)
        assert xp.result_type(spelling, public) == public
        assert xp.isdtype(spelling, public) and xp.can_cast(spelling, public)


@pytest.mark.parametrize(
    ("python_type", "name"), [(bool, "bool"), (int, "int64"), (float, "float64"), (complex, "complex128")]
)
def test_python_types_spell_numpys_dtypes(python_type, name):
    assert np.dtype(python_type) == getattr(xp, name)
    assert xp.zeros(1, dtype=python_type).dtype == getattr(xp, name)
    assert xp.astype(from_numpy(np.ones(1, np.int8)), python_type).dtype == getattr(xp, name)
    assert xp.result_type(python_type, getattr(xp, name)) == getattr(xp, name)


def test_inspection_results_are_numpy_dtypes():
    for dtype in (
        xp.result_type(xp.int8, xp.float32),
        xp.result_type(from_numpy(np.ones(1, np.uint8)), 1),
        xp.finfo(xp.complex64).dtype,
        xp.finfo(xp.float64).dtype,
        xp.iinfo(xp.uint16).dtype,
        xp.finfo(xp.bfloat16).dtype,
    ):
        assert isinstance(dtype, np.dtype), type(dtype)
    assert xp.finfo(xp.complex64).dtype == np.float32 and xp.iinfo(xp.uint16).dtype == np.uint16


@pytest.mark.parametrize("name", sorted(EXTENSION))
def test_extension_dtypes_finfo_matches_numpy(name):
    ref = ml_dtypes.finfo(EXTENSION[name])
    fi = xp.finfo(getattr(xp, name))
    assert (fi.bits, fi.eps, fi.max, fi.min, fi.smallest_normal) == (
        ref.bits,
        float(ref.eps),
        float(ref.max),
        float(ref.min),
        float(ref.smallest_normal),
    )
    assert fi.dtype == EXTENSION[name]


def test_extension_dtypes_are_not_the_standards():
    listed = xp.__array_namespace_info__().dtypes()
    assert "float16" not in listed and "bfloat16" not in listed
    assert xp.isdtype(xp.bfloat16, "real floating") and xp.isdtype(xp.float16, "real floating")


# ---------------------------------------------------------------- float16 and bfloat16 arrays


def _float32_values(shape) -> st.SearchStrategy:
    """float32 values without subnormals (torch flushes them on some CPUs), up to beyond float16's range."""
    floats = st.floats(width=32, allow_subnormal=False, min_value=-7e4, max_value=7e4) | st.sampled_from(
        [np.inf, -np.inf, np.nan, 0.0, -0.0]
    )
    return hnp.arrays(np.float32, shape, elements=floats)


def _extension_values(name: str, shape) -> st.SearchStrategy:
    """float32 values rounded once to the extension dtype by NumPy or ml_dtypes, the reference."""
    return _float32_values(shape).map(lambda a: _rounded(a, EXTENSION[name]))


def _rounded(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore"):  # beyond float16's range: infinity, as intended
        return a.astype(dtype)


def _as_float32(a) -> np.ndarray:
    return np.asarray(a).astype(np.float32)  # NumPy's testing compares extension dtypes through float32


@pytest.mark.parametrize("name", sorted(EXTENSION))
@settings(max_examples=30)
@given(data=st.data())
def test_extension_dtypes_round_trip_through_numpy(name, data):
    raw = data.draw(_float32_values(shapes()))
    a = _rounded(raw, EXTENSION[name])
    x = xp.asarray(a)
    assert x.dtype == EXTENSION[name] and x._t.dtype is getattr(torch, name)
    back = np.asarray(x)
    assert back.dtype == EXTENSION[name]
    np.testing.assert_array_equal(back.view(np.uint16), a.view(np.uint16))  # bit for bit
    wide = a.astype(np.float32)
    for converted in (
        xp.asarray(raw, dtype=getattr(xp, name)),
        xp.astype(from_numpy(raw), name),
        xp.astype(from_numpy(raw), getattr(torch, name)),
    ):
        assert converted.dtype == EXTENSION[name]
        np.testing.assert_array_equal(_as_float32(converted), wide)  # float32 -> 16 bits rounds as NumPy
    assert_same(xp.astype(x, xp.float32), wide)  # and back exactly


@pytest.mark.parametrize("name", sorted(EXTENSION))
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
@settings(max_examples=25)
@given(data=st.data())
def test_extension_dtype_arithmetic_matches_numpy(name, op, data):
    # NumPy's float16 and ml_dtypes' bfloat16 compute in float32 and round once, as torch does
    shape = data.draw(shapes(min_dims=1))
    a, b = data.draw(_extension_values(name, shape)), data.draw(_extension_values(name, shape))
    with np.errstate(all="ignore"):
        expected = getattr(np, op)(a, b)
    got = getattr(xp, op)(xp.asarray(a), xp.asarray(b))
    assert got.dtype == expected.dtype == EXTENSION[name]
    np.testing.assert_array_equal(_as_float32(got), _as_float32(expected))


@pytest.mark.parametrize("name", sorted(EXTENSION))
def test_extension_dtype_promotion(name):
    x = xp.asarray(np.array([1.5, -2.0], dtype=EXTENSION[name]))
    assert (x * 0.5).dtype == (2 * x).dtype == EXTENSION[name]  # Python scalars are weak
    assert (x + from_numpy(np.ones(2, np.int8))).dtype == EXTENSION[name]
    assert (x + from_numpy(np.ones(2, np.float32))).dtype == xp.float32
    assert (x + from_numpy(np.ones(2, np.float64))).dtype == xp.float64
    assert (x + from_numpy(np.ones(2, np.complex64))).dtype == xp.complex64
    # float16 with bfloat16: neither holds the other, float32 holds both (as in JAX and torch)
    assert xp.result_type(xp.float16, xp.bfloat16) == xp.float32
    assert (xp.asarray(np.ones(2, np.float16)) + xp.asarray(np.ones(2, ml_dtypes.bfloat16))).dtype == xp.float32


@pytest.mark.parametrize("name", sorted(EXTENSION))
@pytest.mark.parametrize("subscripts", ["ij,jk->ik", "ij,ij->i", "bij,bjk->bik"])
def test_extension_dtype_einsum(name, subscripts):
    rng = np.random.default_rng(7)
    shapes_ = {
        "ij,jk->ik": ((4, 16), (16, 3)),
        "ij,ij->i": ((5, 16), (5, 16)),
        "bij,bjk->bik": ((2, 3, 16), (2, 16, 4)),
    }[subscripts]
    a, b = (rng.standard_normal(s).astype(EXTENSION[name]) for s in shapes_)
    got = xp.einsum(subscripts, xp.asarray(a), xp.asarray(b))
    assert got.dtype == EXTENSION[name]
    exact = np.einsum(subscripts, a.astype(np.float64), b.astype(np.float64))
    magnitude = np.einsum(subscripts, np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    # one rounding to the 16-bit dtype at the end (a float32 accumulator): at most eps |a||b| per element; a
    # 16-bit accumulator over K = 16 terms would exceed it
    eps = float(ml_dtypes.finfo(EXTENSION[name]).eps)
    assert np.all(np.abs(_as_float32(got).astype(np.float64) - exact) <= eps * magnitude)


def test_float64_to_float16_rounds_once():
    # each value lies just off a float16 rounding tie; float32 rounds it onto the tie first
    values = np.array([1.1967773426534207, -1.1987304402124648, -0.4576416136186497, 0.9147949167157082])
    assert_same(xp.astype(from_numpy(values), xp.float16), values.astype(np.float16))


def _nearest_bfloat16(value: float) -> float:
    """The bfloat16 nearest to ``value`` (ties to even), found exactly with fractions among its two neighbours."""
    from fractions import Fraction

    near = np.array([value], dtype=np.float32).astype(ml_dtypes.bfloat16)  # within a unit or two of value
    bits = int(near.view(np.uint16)[0])
    candidates = {float(np.array([bits + step], dtype=np.uint16).view(ml_dtypes.bfloat16)[0]) for step in range(-2, 3)}
    exact = Fraction(value)
    best = min(
        candidates,
        key=lambda c: (abs(Fraction(c) - exact), int(np.array([c], ml_dtypes.bfloat16).view(np.uint16)[0]) & 1),
    )
    return best


def test_float64_to_bfloat16_rounds_once():
    # ml_dtypes (and torch's own cast) go through float32 and round twice on these values
    values = np.array([-0.7363281468530085, -3.8836152363062215e-07])
    got = np.asarray(xp.astype(from_numpy(values), xp.bfloat16)).astype(np.float64)
    assert got.tolist() == [_nearest_bfloat16(v) for v in values]
    assert got.tolist() != values.astype(ml_dtypes.bfloat16).astype(np.float64).tolist()
