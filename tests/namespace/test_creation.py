"""Creation functions against NumPy: dtypes exact, values exact, copy semantics and error messages."""

from __future__ import annotations

import array
import inspect

import array_api_strict as strict
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import DTYPE_NAMES, INT_NAMES, assert_same, from_numpy, to_numpy

DT = {name: getattr(xp, name) for name in DTYPE_NAMES}


def shares(a: xp.NeuronArray, b: object) -> bool:
    return np.shares_memory(to_numpy(a), b if isinstance(b, np.ndarray) else to_numpy(b))


# ---------------------------------------------------------------- asarray


@pytest.mark.parametrize(
    "value, expected",
    [
        (True, np.bool_),
        (3, np.int64),
        (2.5, np.float64),
        (1 + 2j, np.complex128),
        ([True, 2], np.int64),
        ([1, 2.5], np.float64),
        ([1.0, 1j], np.complex128),
        ([], np.float64),
    ],
)
def test_asarray_python_default_dtypes(value, expected):
    # the CPU's default floating dtypes are NumPy's: float64 and complex128
    assert np.asarray(value).dtype == expected
    assert_same(xp.asarray(value), np.asarray(value, dtype=expected))


@settings(max_examples=30)
@given(st.sampled_from(INT_NAMES), st.data())
def test_asarray_nested_ints_every_integer_dtype(name, data):
    info = np.iinfo(name)
    values = data.draw(
        st.lists(st.lists(st.integers(int(info.min), int(info.max)), min_size=2, max_size=2), max_size=3)
    )
    assert_same(
        xp.asarray(values, dtype=DT[name]),
        np.array(values, dtype=name).reshape(len(values), -1) if values else np.zeros((0,), dtype=name),
    )


def test_asarray_unsigned_extremes_round_trip():
    for name in ("uint16", "uint32", "uint64"):
        top = int(np.iinfo(name).max)
        x = xp.asarray([0, top, top - 1], dtype=DT[name])
        assert [int(v) for v in x] == [0, top, top - 1]
    assert int(xp.asarray(2**64 - 1, dtype=xp.uint64)) == 2**64 - 1


def test_asarray_overflow_and_ragged_errors():
    with pytest.raises(OverflowError, match="asarray.*out of range for int64"):
        xp.asarray([1, 2**63])
    with pytest.raises(OverflowError, match="out of range for uint8"):
        xp.asarray([256], dtype=xp.uint8)
    with pytest.raises(ValueError, match="ragged"):
        xp.asarray([[1, 2], [3]])
    with pytest.raises(TypeError, match="imaginary"):
        xp.asarray([1j], dtype=xp.float64)
    with pytest.raises(TypeError, match="cannot convert"):
        xp.asarray(object())
    with pytest.raises(TypeError, match="not a dtype"):
        xp.asarray(1, dtype="float12")
    assert_same(xp.asarray(1, dtype="float32"), np.asarray(1, dtype=np.float32))  # any dtype spelling


def test_asarray_sequence_of_arrays_promotes_and_stacks():
    a = xp.asarray(1, dtype=xp.int8)
    b = xp.asarray(2, dtype=xp.int16)
    assert_same(xp.asarray([a, b, 3]), np.array([1, 2, 3], dtype=np.int16))
    assert_same(
        xp.asarray([xp.asarray([1.0, 2.0]), xp.asarray([3.0, 4.0])]), np.array([[1, 2], [3, 4]], dtype=np.float64)
    )
    f32 = xp.asarray([1.0, 2.0], dtype=xp.float32)
    assert_same(xp.asarray([f32, f32 + 2]), np.array([[1, 2], [3, 4]], dtype=np.float32))


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_asarray_numpy_keeps_dtype_and_shares_memory(name):
    a = np.arange(6).reshape(2, 3).astype(name)
    x = xp.asarray(a)
    assert_same(x, a)
    assert shares(x, a)
    assert not shares(xp.asarray(a, copy=True), a)
    assert shares(xp.asarray(a, copy=False), a)


def test_asarray_numpy_scalar_keeps_dtype():
    assert_same(xp.asarray(np.float64(1.5)), np.asarray(1.5))
    assert_same(xp.asarray(np.uint64(2**64 - 1)), np.asarray(2**64 - 1, dtype=np.uint64))


def test_asarray_numpy_that_cannot_be_shared():
    a = np.arange(5.0)
    a.flags.writeable = False
    x = xp.asarray(a)
    assert_same(x, a)
    assert not shares(x, a)
    with pytest.raises(ValueError, match="cannot be shared"):
        xp.asarray(a, copy=False)
    assert_same(xp.asarray(np.arange(5)[::-2]), np.arange(5)[::-2])
    assert_same(xp.asarray(np.arange(3, dtype=">i4")), np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match="NumPy dtype float128 is not a dtype of this namespace"):
        xp.asarray(np.zeros(2, dtype=np.longdouble))
    with pytest.raises(TypeError, match="NumPy dtype <U3 is not a dtype of this namespace"):
        xp.asarray(np.zeros(2, dtype="U3"))


def test_asarray_copy_keyword_on_arrays():
    x = from_numpy(np.arange(4, dtype=np.int32))
    assert shares(xp.asarray(x), x)
    assert not shares(xp.asarray(x, copy=True), x)
    assert shares(xp.asarray(x, copy=False), x)
    assert_same(xp.asarray(x, dtype=xp.float64), np.arange(4.0))
    with pytest.raises(ValueError, match=r"asarray\(copy=False\).*int32.*float64"):
        xp.asarray(x, dtype=xp.float64, copy=False)
    with pytest.raises(ValueError, match="no buffer"):
        xp.asarray([1, 2], copy=False)
    # uint64 -> int64 keeps the bits in torch (a view); copy=True must still give new memory
    u = from_numpy(np.array([2**64 - 1], dtype=np.uint64))
    v = xp.asarray(u, dtype=xp.int64, copy=True)
    assert_same(v, np.array([-1]))
    assert not shares(v, u)


def test_asarray_torch_tensor_buffer_and_dlpack_objects():
    t = torch.arange(3, dtype=torch.float64)
    x = xp.asarray(t)
    t[0] = 7
    assert float(x[0]) == 7.0
    assert_same(xp.asarray(array.array("d", [1.0, 2.0])), np.array([1.0, 2.0]))
    assert_same(xp.asarray(b"ab"), np.array([97, 98], dtype=np.uint8))
    assert_same(xp.asarray(strict.asarray([1, 2], dtype=strict.uint16)), np.array([1, 2], dtype=np.uint16))
    with pytest.raises(TypeError, match="torch.float8_e5m2 is not a dtype of this namespace"):
        xp.asarray(torch.zeros(2, dtype=torch.float8_e5m2))
    assert xp.asarray(torch.zeros(2, dtype=torch.float16)).dtype == np.float16  # an extension dtype


def test_asarray_device_argument():
    assert xp.asarray([1], device="cpu").device == torch.device("cpu")
    assert xp.asarray([1], device=torch.device("cpu")).device == torch.device("cpu")
    with pytest.raises(TypeError, match="expected a device"):
        xp.asarray([1], device=0)


# ---------------------------------------------------------------- from_dlpack


def test_from_dlpack_shares_and_copies():
    a = np.arange(4, dtype=np.uint32)
    x = xp.from_dlpack(a)
    assert_same(x, a)
    assert shares(x, a)
    assert not shares(xp.from_dlpack(a, copy=True), a)
    y = xp.from_dlpack(x, device="cpu", copy=False)
    assert shares(y, a)
    assert_same(xp.from_dlpack(torch.tensor([1.5])), np.array([1.5], dtype=np.float32))
    with pytest.raises(AttributeError, match="no __dlpack__"):
        xp.from_dlpack([1, 2])


# ---------------------------------------------------------------- filled arrays


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_zeros_ones_empty_full_every_dtype(name):
    dtype = DT[name]
    assert_same(xp.zeros((2, 3), dtype=dtype), np.zeros((2, 3), dtype=name))
    assert_same(xp.ones(3, dtype=dtype), np.ones(3, dtype=name))
    e = xp.empty((0, 2), dtype=dtype)
    assert e.shape == (0, 2) and e.dtype == dtype
    kind = np.dtype(name).kind
    value = int(np.iinfo(name).max) if kind == "u" else {"b": True, "i": -7, "f": 2.5, "c": 1 - 2j}[kind]
    assert_same(xp.full((2, 2), value, dtype=dtype), np.full((2, 2), value, dtype=name))
    x = from_numpy(np.ones((2, 1), dtype=np.int8))
    assert_same(xp.full_like(x, value, dtype=dtype), np.full((2, 1), value, dtype=name))
    assert_same(xp.zeros_like(x, dtype=dtype), np.zeros((2, 1), dtype=name))
    assert_same(xp.ones_like(x, dtype=dtype), np.ones((2, 1), dtype=name))
    assert xp.empty_like(x, dtype=dtype).dtype == dtype


def test_default_dtypes_and_like_keep_dtype():
    # the CPU's default dtypes are NumPy's
    assert xp.zeros(2).dtype == xp.ones(()).dtype == xp.empty(1).dtype == np.zeros(2).dtype == xp.float64
    assert_same(xp.full(3, True), np.full(3, True))
    assert_same(xp.full((), 5), np.full((), 5, dtype=np.int64))
    assert_same(xp.full(1, 0.5), np.full(1, 0.5))
    assert_same(xp.full(1, 1j), np.full(1, 1j))
    x = from_numpy(np.zeros((2, 2), dtype=np.uint16))
    assert_same(xp.ones_like(x), np.ones((2, 2), dtype=np.uint16))
    assert_same(xp.full_like(x, 65535), np.full((2, 2), 65535, dtype=np.uint16))
    assert xp.empty_like(x).dtype == xp.uint16 and xp.zeros_like(x, device="cpu").device == x.device


# NumPy's and ours on the CPU: the default floating dtypes are float64 and complex128 in both
DEFAULT_DTYPE_CALLS = {
    "ones(3)": lambda m: m.ones(3),
    "zeros((2, 2))": lambda m: m.zeros((2, 2)),
    "empty(2)": lambda m: m.empty(2),
    "asarray([1.5])": lambda m: m.asarray([1.5]),
    "asarray(1.5)": lambda m: m.asarray(1.5),
    "asarray([1j])": lambda m: m.asarray([1j]),
    "asarray([])": lambda m: m.asarray([]),
    "arange(0.0, 1.0, 0.25)": lambda m: m.arange(0.0, 1.0, 0.25),
    "linspace(0, 1, 5)": lambda m: m.linspace(0, 1, 5),
    "eye(3)": lambda m: m.eye(3),
    "full(2, 0.5)": lambda m: m.full(2, 0.5),
    "full(2, 1j)": lambda m: m.full(2, 1j),
    "int array * 0.5": lambda m: m.asarray([1, 2]) * 0.5,
    "int array / int": lambda m: m.asarray([1, 2]) / 2,
    "mean of ints": lambda m: m.mean(m.asarray([1, 2])),
    "sqrt of ints": lambda m: m.sqrt(m.asarray([1, 4])),
    "fft of ints": lambda m: m.fft.fft(m.asarray([1, 2, 3])),
    "rfftfreq(4)": lambda m: m.fft.rfftfreq(4),
    "linalg.inv of ints": lambda m: m.linalg.inv(m.asarray([[2, 0], [0, 4]])),
}


@pytest.mark.parametrize("call", sorted(DEFAULT_DTYPE_CALLS))
def test_cpu_default_dtypes_are_numpys(call):
    ours, theirs = DEFAULT_DTYPE_CALLS[call](xp), np.asarray(DEFAULT_DTYPE_CALLS[call](np))
    assert isinstance(ours, xp.NeuronArray) and ours.device == torch.device("cpu")
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    if not call.startswith("empty"):
        np.testing.assert_allclose(to_numpy(ours), theirs, rtol=1e-15)


def _fill_for(name: str):
    kind = np.dtype(name).kind
    return {"b": True, "i": 7, "u": 7, "f": 2.5, "c": 1 - 2j}[kind]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_full_takes_a_0d_array_fill_value(name):
    value = np.asarray(_fill_for(name), dtype=name)
    fill = from_numpy(value)
    assert_same(xp.full((2, 3), fill), np.full((2, 3), value))  # the fill's dtype when none is given
    for dst in DTYPE_NAMES:
        if value.dtype.kind == "c" and np.dtype(dst).kind not in "cb":
            with pytest.raises(TypeError, match=f"casting {name} to {dst} would drop the imaginary part"):
                xp.full(2, fill, dtype=DT[dst])
            continue
        assert_same(xp.full(2, fill, dtype=DT[dst]), np.full(2, value, dtype=dst))  # cast as NumPy casts it
        like = np.zeros((1, 2), dtype=dst)
        assert_same(xp.full_like(from_numpy(like), fill), np.full_like(like, value))


def test_full_fill_value_errors():
    with pytest.raises(ValueError, match=r"full\(\): fill value must be a scalar or a 0-d array, got shape \(2,\)"):
        xp.full(2, from_numpy(np.ones(2)))
    with pytest.raises(ValueError, match=r"full_like\(\): fill value must be a scalar or a 0-d array"):
        xp.full_like(from_numpy(np.ones(2)), from_numpy(np.ones((1, 1))))


def test_full_kind_and_shape_errors():
    assert_same(xp.full(2, 1.5, dtype=xp.int32), np.full(2, 1.5, dtype=np.int32))  # truncated, as NumPy's
    with pytest.raises(ValueError, match="full.*NaN"):
        xp.full(2, float("nan"), dtype=xp.int32)
    with pytest.raises(TypeError, match="full_like.*float64.*complex"):
        xp.full_like(xp.zeros(2, dtype=xp.float64), 1j)
    with pytest.raises(OverflowError, match="out of range for int8"):
        xp.full(2, 300, dtype=xp.int8)
    with pytest.raises(ValueError, match="zeros.*at least 0"):
        xp.zeros((2, -1))
    with pytest.raises(TypeError, match="ones.*must be an int"):
        xp.ones((2.0,))
    with pytest.raises(TypeError, match="NeuronArray"):
        xp.zeros_like(np.zeros(2))


# ---------------------------------------------------------------- ranges


@settings(max_examples=40)
@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(-7, 7).filter(bool))
def test_arange_integers(start, stop, step):
    assert_same(xp.arange(start, stop, step), np.arange(start, stop, step, dtype=np.int64))
    assert_same(xp.arange(start, stop, step, dtype=xp.float64), np.arange(start, stop, step, dtype=float))


@pytest.mark.parametrize("name", INT_NAMES)
def test_arange_integer_dtypes_to_the_top(name):
    top = int(np.iinfo(name).max)
    assert_same(xp.arange(top - 4, top + 1, 2, dtype=DT[name]), np.arange(top - 4, top + 1, 2, dtype=name))
    assert_same(xp.arange(3, dtype=DT[name]), np.arange(3, dtype=name))


@settings(max_examples=40)
@given(st.floats(-100, 100), st.floats(-100, 100), st.floats(0.1, 10), st.booleans())
def test_arange_floats(start, stop, step, negative):
    step = -step if negative else step
    out = xp.arange(start, stop, step)  # float64, the CPU's default float, as NumPy's
    expected = np.arange(start, stop, step)
    assert out.dtype == expected.dtype == xp.float64 and out.shape == expected.shape
    np.testing.assert_allclose(to_numpy(out), expected, rtol=1e-13, atol=1e-12)
    out32 = xp.arange(start, stop, step, dtype=xp.float32)
    assert out32.dtype == xp.float32 and out32.shape == expected.shape
    np.testing.assert_allclose(to_numpy(out32), expected.astype(np.float32), rtol=1e-6, atol=1e-5)


def test_arange_arguments_and_errors():
    assert_same(xp.arange(4), np.arange(4))
    assert_same(xp.arange(2, 5), np.arange(2, 5))
    assert_same(xp.arange(0.5, 2), np.arange(0.5, 2))
    assert_same(xp.arange(0.5, 2, dtype=xp.float32), np.arange(0.5, 2, dtype=np.float32))
    assert_same(xp.arange(5, 1), np.arange(5, 1))
    with pytest.raises(ValueError, match="step must not be 0"):
        xp.arange(0, 5, 0)
    assert_same(xp.arange(0.5, 3, dtype=xp.int32), np.arange(0.5, 3, dtype=np.int32))
    with pytest.raises(TypeError, match="bool"):
        xp.arange(3, dtype=xp.bool)
    with pytest.raises(TypeError, match="start must be"):
        xp.arange(1j)
    with pytest.raises(OverflowError, match="do not fit int8"):
        xp.arange(100, 200, dtype=xp.int8)
    with pytest.raises(ValueError, match="not finite"):
        xp.arange(float("inf"))


@pytest.mark.parametrize("name", ["bool", "int8", "uint16", "uint32", "uint64", "float64", "complex64"])
@pytest.mark.parametrize("rows, cols, k", [(3, None, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5), (0, 2, 0), (2, 2, -(2**70))])
def test_eye(name, rows, cols, k):
    assert_same(xp.eye(rows, cols, k=k, dtype=DT[name]), np.eye(rows, cols, k=max(-9, min(9, k)), dtype=name))


def test_eye_default_dtype_and_errors():
    assert_same(xp.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="n_rows must be at least 0"):
        xp.eye(-1)
    with pytest.raises(TypeError, match="k must be an int"):
        xp.eye(2, k=1.0)


@pytest.mark.parametrize("num", [0, 1, 2, 7])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace(num, endpoint):
    assert_same(
        xp.linspace(-1, 3, num, endpoint=endpoint, dtype=xp.float32),
        np.linspace(-1, 3, num, endpoint=endpoint).astype(np.float32),
    )
    assert_same(
        xp.linspace(-1, 3, num, endpoint=endpoint),  # float64, the CPU's default float
        np.linspace(-1, 3, num, endpoint=endpoint),
        rtol=1e-15,
    )
    assert_same(
        xp.linspace(0.1, 0.7, num, endpoint=endpoint, dtype=xp.float64),
        np.linspace(0.1, 0.7, num, endpoint=endpoint),
        rtol=1e-15,
    )
    assert_same(
        xp.linspace(0, 1 + 2j, num, endpoint=endpoint, dtype=xp.complex64),
        np.linspace(0, 1 + 2j, num, endpoint=endpoint).astype(np.complex64),
    )
    assert_same(
        xp.linspace(0, 1 + 2j, num, endpoint=endpoint), np.linspace(0, 1 + 2j, num, endpoint=endpoint), rtol=1e-15
    )


def test_linspace_errors():
    with pytest.raises(TypeError, match="imaginary"):
        xp.linspace(0, 1j, 3, dtype=xp.float32)
    with pytest.raises(ValueError, match="num must be at least 0"):
        xp.linspace(0, 1, -1)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("name", ["uint64", "float32", "complex128"])
def test_meshgrid(indexing, name):
    arrays = [np.arange(n).astype(name) for n in (2, 3, 4)]
    for k in range(4):
        out = xp.meshgrid(*(from_numpy(a) for a in arrays[:k]), indexing=indexing)
        expected = np.meshgrid(*arrays[:k], indexing=indexing)
        assert isinstance(out, tuple) and len(out) == k
        for o, e in zip(out, expected, strict=True):
            assert_same(o, e)
    grid = xp.meshgrid(from_numpy(arrays[0]), from_numpy(arrays[1]))[0]
    grid[0, 0] = 1  # a new array, not a broadcast view


def test_meshgrid_errors():
    a = xp.asarray([1, 2])
    with pytest.raises(ValueError, match="indexing must be"):
        xp.meshgrid(a, indexing="yx")
    with pytest.raises(ValueError, match=r"arrays\[1\] must be 1-dimensional"):
        xp.meshgrid(a, xp.ones((2, 2)))
    assert [g.dtype for g in xp.meshgrid(a, xp.ones(2))] == [a.dtype, xp.float64]  # each keeps its dtype


@pytest.mark.parametrize("name", DTYPE_NAMES)
@pytest.mark.parametrize("k", [-1, 0, 2, 2**70])
def test_tril_triu_stacks(name, k):
    a = (np.arange(2 * 3 * 4).reshape(2, 3, 4) % 5).astype(name)
    kk = max(-9, min(9, k))
    assert_same(xp.tril(from_numpy(a), k=k), np.tril(a, kk))
    assert_same(xp.triu(from_numpy(a), k=k), np.triu(a, kk))


def test_tril_needs_a_matrix():
    with pytest.raises(ValueError, match="tril.*at least 2 dimensions"):
        xp.tril(xp.ones(3))


def test_signatures_have_positional_and_keyword_markers():
    params = inspect.signature(xp.asarray).parameters
    assert params["obj"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert all(params[p].kind is inspect.Parameter.KEYWORD_ONLY for p in ("dtype", "device", "copy"))
    assert inspect.signature(xp.linspace).parameters["num"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD


def test_asarray_sequences_of_other_arrays_and_ranges():
    assert_same(
        xp.asarray([np.array([1, 2], dtype=np.int8), np.array([3, 4], dtype=np.int8)]),
        np.array([[1, 2], [3, 4]], dtype=np.int8),
    )
    assert_same(xp.asarray([torch.tensor(1.5, dtype=torch.float64), 2]), np.array([1.5, 2.0]))
    assert_same(xp.asarray(range(3)), np.arange(3))
    with pytest.raises(TypeError, match="cannot convert str"):
        xp.asarray("12")


def test_device_changes_copy_and_mixed_devices_are_refused():
    # torch's "meta" device stands in for a second device on a CPU-only machine
    x = xp.asarray([1, 2])
    m = xp.asarray(x, device="meta")
    assert m.device.type == "meta" and m.dtype == xp.int64
    with pytest.raises(ValueError, match=r"asarray\(copy=False\).*on cpu.*on meta"):
        xp.asarray(x, device="meta", copy=False)
    with pytest.raises(ValueError, match=r"from_dlpack\(copy=False\)"):
        xp.from_dlpack(np.arange(2), device="meta", copy=False)
    assert xp.from_dlpack(np.arange(2), device="meta").device.type == "meta"
    assert xp.zeros(2, device="meta").device.type == "meta"
    assert xp.full_like(x, 3, device="meta").device.type == "meta"
    assert xp.astype(x, xp.int64, device="meta", copy=False).device.type == "meta"
    with pytest.raises(ValueError, match="meshgrid.*different devices"):
        xp.meshgrid(x, m)


# negative values into unsigned dtypes are left out: NumPy's float-to-unsigned cast of them is platform-dependent
@pytest.mark.parametrize(
    ("dtype", "start", "stop", "num", "endpoint"),
    [
        (dtype, *args)
        for dtype in ("int8", "int64", "uint8", "uint64", "bool", "float16")
        for args in ((-1, 1, 5, True), (0, 10, 4, True), (-7.5, 3.2, 9, False), (0, 1, 3, True), (0.1, 0.7, 7, True))
        if not (np.dtype(dtype).kind == "u" and args[0] < 0)
    ],
)
def test_linspace_into_integer_bool_and_half_dtypes_as_numpy(dtype, start, stop, num, endpoint):
    # integers take the floor (NumPy 2), bool the nonzero-ness, float16 one rounding from the float64 values
    expected = np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    assert_same(xp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype), expected)


def test_numpy_long_long_arrays_convert() -> None:
    a = np.array([2**63], dtype="Q")  # 'Q' equals uint64 but torch.from_numpy refuses it
    np.testing.assert_array_equal(np.asarray(xp.asarray(a)), a)
    np.testing.assert_array_equal(np.asarray(xp.asarray(np.array([-5], dtype="q"))), [-5])
