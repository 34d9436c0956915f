"""The array object (trn_backend/_array.py): attributes, operators (plain, reflected, in-place), indexing,
conversions and protocols; the ndarray attributes NumPy users reach for (``.real``, ``.imag``, ``.fill``,
``.view``, ``.strides``, ``.flat``, ``.nbytes``, ``.itemsize``) and the zero-copy bridge to and from torch, each
against NumPy 2 on the same data; conversions to NumPy (``__array__``) and DLPack."""

from __future__ import annotations

import operator
import re
import warnings

import array_api_compat
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
    arrays,
    assert_same,
    from_numpy,
    shapes,
    to_numpy,
)
from trn_backend import _indexing


def test_namespace_identity_and_versions():
    x = from_numpy(np.ones(3))
    assert array_api_compat.array_namespace(x) is xp
    assert xp.__array_api_version__ == "2025.12"
    for version in (None, "2023.12", "2024.12", "2025.12"):
        assert x.__array_namespace__(api_version=version) is xp
    with pytest.raises(ValueError, match="unsupported array API version '2021.12'"):
        x.__array_namespace__(api_version="2021.12")


def test_attributes():
    x = from_numpy(np.zeros((2, 3, 4), dtype=np.float64))
    assert x.shape == (2, 3, 4) and isinstance(x.shape, tuple)
    assert x.ndim == 3 and x.size == 24
    assert x.dtype == xp.float64
    assert x.device == torch.device("cpu") and x.device == xp.__array_namespace_info__().default_device()
    assert x.mT.shape == (2, 4, 3)
    assert from_numpy(np.zeros((2, 5))).T.shape == (5, 2)
    with pytest.raises(ValueError, match="x.T needs a 2-dimensional array"):
        _ = x.T
    with pytest.raises(ValueError, match="x.mT needs at least 2 dimensions"):
        _ = from_numpy(np.zeros(3)).mT
    assert x.to_device("cpu").device == x.device
    with pytest.raises(TypeError, match="expected a device"):
        x.to_device(3)


def test_constructor_validates():
    with pytest.raises(TypeError, match="NeuronArray wraps a torch.Tensor, got list"):
        xp.NeuronArray([1, 2])
    with pytest.raises(TypeError, match="does not support torch dtype torch.float8_e4m3fn"):
        xp.NeuronArray(torch.zeros(2, dtype=torch.float8_e4m3fn))
    # the extension dtypes are held (their public dtypes are NumPy's float16 and ml_dtypes' bfloat16)
    assert xp.NeuronArray(torch.zeros(2, dtype=torch.bfloat16)).dtype == xp.bfloat16
    assert xp.NeuronArray(torch.zeros(2, dtype=torch.float16)).dtype == np.float16


BINARY_OPERATORS = {
    "__add__": np.add,
    "__sub__": np.subtract,
    "__mul__": np.multiply,
    "__truediv__": np.divide,
    "__floordiv__": np.floor_divide,
    "__mod__": np.remainder,
    "__pow__": np.power,
    "__and__": np.bitwise_and,
    "__or__": np.bitwise_or,
    "__xor__": np.bitwise_xor,
    "__lshift__": np.left_shift,
    "__rshift__": np.right_shift,
    "__lt__": np.less,
    "__le__": np.less_equal,
    "__gt__": np.greater,
    "__ge__": np.greater_equal,
    "__eq__": np.equal,
    "__ne__": np.not_equal,
}


def _operands(op: str, dtype: str):
    """Small positive integer operands keep every operator defined (no division by zero, no huge shifts)."""
    if dtype == "bool":
        return np.array([True, False, True]), np.array([True, True, False])
    a = np.array([7, 12, 5], dtype=dtype)
    b = np.array([2, 3, 1], dtype=dtype)
    return a, b


@pytest.mark.parametrize("op", sorted(BINARY_OPERATORS))
@pytest.mark.parametrize("dtype", ["int8", "uint16", "uint64", "int64", "float32", "float64", "bool"])
def test_binary_operators_plain_reflected_and_inplace(op, dtype):
    if dtype == "bool" and op not in ("__and__", "__or__", "__xor__", "__eq__", "__ne__"):
        return
    if dtype.startswith("float") and op in ("__and__", "__or__", "__xor__", "__lshift__", "__rshift__"):
        return
    a, b = _operands(op, dtype)
    expected = BINARY_OPERATORS[op](a, b)  # integer true division gives float64, the CPU's default float
    x, y = from_numpy(a), from_numpy(b)
    assert_same(getattr(x, op)(y), expected)
    # a Python scalar on either side
    scalar = True if dtype == "bool" else 2
    s_expected = BINARY_OPERATORS[op](a, np.asarray(scalar, dtype=dtype))
    assert_same(getattr(x, op)(scalar), s_expected)
    if op not in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        r_expected = BINARY_OPERATORS[op](np.asarray(scalar, dtype=dtype), a)
        assert_same(getattr(x, op.replace("__", "__r", 1))(scalar), r_expected)
        inplace = op.replace("__", "__i", 1)
        z = from_numpy(a)
        # NumPy's in-place rule: the result is cast back to x's dtype where same_kind casting allows it
        if np.can_cast(expected.dtype, a.dtype, "same_kind"):
            same_object = getattr(z, inplace)(y)
            assert same_object is z
            assert_same(z, expected.astype(a.dtype))
        else:
            with pytest.raises(
                TypeError, match=f"result cannot be stored in x of dtype {dtype} under NumPy's same_kind casting"
            ):
                getattr(z, inplace)(y)
            assert_same(z, a)  # unchanged


INPLACE_NAMES = DTYPE_NAMES + ("float16", "bfloat16")


def _out_of_place(x: xp.NeuronArray, y: xp.NeuronArray):
    """The first of add and bitwise_or defined for the pair: (the in-place operator, the result), or None."""
    for inplace, func in (("__iadd__", xp.add), ("__ior__", xp.bitwise_or)):
        try:
            return inplace, func(x, y)
        except TypeError:
            continue
    return None


@pytest.mark.parametrize("x_name", INPLACE_NAMES)
@pytest.mark.filterwarnings("ignore:Casting complex values to real:UserWarning")  # bfloat16 += complex: torch's
def test_inplace_casting_follows_numpys_same_kind_rule(x_name):
    """x op= y stores the result of x op y cast back to x's dtype exactly where np.can_cast(result, x,
    "same_kind") holds (and the cast keeps the kind or raises it), over every dtype pair; elsewhere a TypeError,
    with x unchanged."""
    outcomes = set()
    for y_name in INPLACE_NAMES:
        a, b = np.ones(3, dtype=x_name), np.ones(3, dtype=y_name)
        x, y = xp.asarray(a.copy()), xp.asarray(b)
        found = _out_of_place(x, y)
        if found is None:  # no operator takes the pair: neither does its in-place form
            with pytest.raises(TypeError):
                x += y
            outcomes.add("undefined")
            continue
        inplace, result = found
        # never to a lower kind: ml_dtypes lets complex cast to bfloat16 under same_kind, NumPy's own dtypes do not
        lower_kind = result.dtype.kind == "c" and a.dtype.kind != "c"
        if np.can_cast(result.dtype, a.dtype, "same_kind") and not lower_kind:
            assert getattr(x, inplace)(y) is x
            assert x.dtype == a.dtype
            np.testing.assert_array_equal(np.asarray(x), np.asarray(result).astype(a.dtype))
            outcomes.add("stored")
        else:
            with pytest.raises(
                TypeError,
                match=f"the {result.dtype.name} result cannot be stored in x of dtype "
                f"{x_name} under NumPy's same_kind casting",
            ):
                getattr(x, inplace)(y)
            np.testing.assert_array_equal(np.asarray(x), a)  # unchanged
            outcomes.add("refused")
    # complex x stores every result; every other x refuses a wider kind (bfloat16 included, though ml_dtypes
    # counts complex -> bfloat16 as same_kind)
    assert "stored" in outcomes
    assert ("refused" in outcomes) is (x_name not in ("complex64", "complex128"))


def test_inplace_scalars_and_wider_operands():
    i = from_numpy(np.arange(3, dtype=np.int64))
    with pytest.raises(
        TypeError,
        match=r"in-place add: the float64 result cannot be stored in x of dtype int64 "
        r"under NumPy's same_kind casting; ",
    ):
        i += 1.5
    b = from_numpy(np.array([True, False]))
    with pytest.raises(TypeError, match="cannot be stored in x of dtype bool under NumPy's same_kind casting"):
        b += 1
    f = from_numpy(np.array([1.0, 2.0], dtype=np.float32))
    with pytest.raises(TypeError, match="complex64 result cannot be stored in x of dtype float32"):
        f *= 1j
    # a wider operand of the same kind: the result is cast back to x's dtype, as NumPy's a += b
    a = np.array([1.0, 2.0], dtype=np.float32)
    wide = np.array([0.1, 1e-9])
    f += from_numpy(wide)
    a += wide
    assert_same(f, a)
    n = np.arange(3, dtype=np.int8)
    i8 = from_numpy(n)
    i8 *= from_numpy(np.array([100, 2, 3], dtype=np.int64))  # wraps in int8, as NumPy's unsafe cast back
    n *= np.array([100, 2, 3], dtype=np.int64)
    assert_same(i8, n)


def test_inplace_keeps_the_shape_and_mutates_views():
    x = from_numpy(np.zeros((2, 3), dtype=np.float32))
    row = x[0]
    x += from_numpy(np.ones(3, dtype=np.float32))
    assert_same(row, np.ones(3, dtype=np.float32))
    with pytest.raises(ValueError, match="would change the shape of x from \\(3,\\) to \\(2, 3\\)"):
        v = from_numpy(np.zeros(3, dtype=np.float32))
        v += x


def test_unary_operators():
    a = np.array([1, -2, 3], dtype=np.int16)
    x = from_numpy(a)
    assert_same(-x, -a)
    assert_same(+x, a)
    assert_same(abs(x), np.abs(a))
    assert_same(~x, ~a)
    u = from_numpy(np.array([1, 2], dtype=np.uint32))
    assert_same(-u, -np.array([1, 2], dtype=np.uint32))


def test_matmul_operator():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4)
    assert_same(from_numpy(a) @ from_numpy(b), a @ b)


def test_unsupported_operand_types_defer():
    x = from_numpy(np.ones(2))
    with pytest.raises(TypeError):
        x + "a"
    assert (x == None) is False  # noqa: E711 - Python falls back to identity
    assert x.__add__([1]) is NotImplemented


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_python_conversions(dtype):
    one = from_numpy(np.array(1, dtype=dtype))
    assert bool(one) is True
    if dtype.startswith("complex"):
        assert complex(one) == 1 + 0j
        with pytest.raises(TypeError, match="complex"):
            int(one)
        with pytest.raises(TypeError, match="complex"):
            float(one)
    else:
        assert int(one) == 1 and float(one) == 1.0 and complex(one) == 1 + 0j
    if dtype in INT_NAMES:
        assert operator.index(one) == 1
        assert [10, 20][one] == 20
    else:
        with pytest.raises(TypeError, match="only integer arrays"):
            operator.index(one)
    # NumPy 2: bool() of several elements or none is an ambiguous truth value (ValueError); the numbers convert
    # only from 0-d arrays (TypeError for a one-element 1-d array), bool() from any one-element array
    for shape in ((2,), (0,)):
        with pytest.raises(ValueError, match="ambiguous"):
            bool(from_numpy(np.ones(shape, dtype=dtype)))
    single = from_numpy(np.ones(1, dtype=dtype))
    assert bool(single) is True
    for convert in (complex,) if dtype.startswith("complex") else (int, float, complex):
        with pytest.raises(TypeError, match="0-dimensional"):
            convert(single)


def test_uint64_scalar_conversion():
    big = from_numpy(np.array(2**64 - 1, dtype=np.uint64))
    assert int(big) == 2**64 - 1
    assert float(big) == float(2**64 - 1)


FORMAT_SPECS = {
    "b": ["", ">6"],
    "i": ["", "d", "x", ">8", "+"],
    "u": ["", "d", "x", ">8"],
    "f": ["", ".3f", "e", ".2e", "g", ">12.4f", "+.1f", ".0%"],
    "c": ["", ".3f", ">30"],
}


def _same_outcome(ours, theirs) -> None:
    """Both calls give equal values, or both raise the same exception type."""
    try:
        expected = theirs()
    except Exception as e:  # noqa: BLE001 - whichever NumPy raises, ours must too
        with pytest.raises(type(e)):
            ours()
        return
    assert ours() == expected


@settings(max_examples=50)
@given(data=st.data())
def test_0d_format_round_and_str_match_numpys_scalars(data):
    name = data.draw(st.sampled_from(DTYPE_NAMES))
    value = data.draw(arrays(name, ()))
    scalar = value[()]  # NumPy's scalar of that value
    x = from_numpy(value)
    assert str(x) == str(scalar)
    for spec in FORMAT_SPECS[value.dtype.kind]:
        _same_outcome(lambda spec=spec: format(x, spec), lambda spec=spec: format(scalar, spec))
        _same_outcome(lambda spec=spec: f"{x:{spec}}", lambda spec=spec: f"{scalar:{spec}}")
    if value.dtype.kind in "iuf":  # round() of NumPy's bool and complex scalars is a TypeError
        _same_outcome(lambda: round(x), lambda: round(scalar))
        if np.isfinite(scalar):
            assert type(round(x)) is int
        for ndigits in (0, 1, 3):
            with np.errstate(all="ignore"):
                expected = np.round(value, ndigits)
            rounded = round(x, ndigits)
            assert isinstance(rounded, xp.NeuronArray) and rounded.shape == ()
            assert_same(rounded, expected)


@settings(max_examples=30)
@given(data=st.data())
def test_str_prints_values_as_numpy(data):
    name = data.draw(st.sampled_from(DTYPE_NAMES))
    a = data.draw(arrays(name, shapes(max_dims=2)))
    assert str(from_numpy(a)) == str(a)
    assert str(xp.asarray([1.5, 2.5])) == "[1.5 2.5]"


def test_format_of_arrays_with_dimensions():
    x = from_numpy(np.array([1.5, 2.5]))
    assert f"{x}" == "[1.5 2.5]"
    with pytest.raises(TypeError, match=r"unsupported format string '.3f' for a NeuronArray of shape \(2,\)"):
        f"{x:.3f}"


def test_repr_shows_values_dtype_and_device():
    r = repr(from_numpy(np.array([1.5, 2.0], dtype=np.float32)))
    assert r == "NeuronArray([1.5, 2. ], dtype=float32, device='cpu')"


def test_dlpack_protocol_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    x = from_numpy(a)
    assert x.__dlpack_device__()[0] == 1  # kDLCPU
    back = np.from_dlpack(x)
    assert np.shares_memory(back, to_numpy(x)) or back.ctypes.data == x._t.data_ptr()
    np.testing.assert_array_equal(back, a)
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x._t.data_ptr()
    capsule = x.__dlpack__(max_version=(1, 0), copy=True)
    assert torch.from_dlpack(capsule).data_ptr() != x._t.data_ptr()


def test_array_conversion_numpy2_semantics():
    x = from_numpy(np.arange(4.0))
    a = np.asarray(x)
    assert a.ctypes.data == x._t.data_ptr()  # CPU: no copy
    c = np.array(x, copy=True)
    assert c.ctypes.data != x._t.data_ptr()
    with pytest.raises(ValueError, match="needs a copy"):
        np.asarray(x, dtype=np.float32, copy=False)
    lazy = xp.NeuronArray(torch.tensor([1 + 2j]).conj())
    assert np.asarray(lazy)[0] == 1 - 2j
    with pytest.raises(ValueError, match="lazy conjugate view"):
        np.asarray(lazy, copy=False)
    meta = xp.NeuronArray(torch.zeros(2, device="meta"))
    with pytest.raises(ValueError, match="copies it to the host"):
        np.asarray(meta, copy=False)


# ---------------------------------------------------------------- indexing


def _slices(size: int):
    bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
    step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
    return st.builds(slice, bound, bound, step)


@st.composite
def basic_keys(draw, shape):
    """Tuples of ints, slices (negative steps included), None and at most one Ellipsis."""
    key = []
    for size in shape:
        kind = draw(st.sampled_from(["slice", "int", "none"] if size else ["slice", "none"]))
        if kind == "int":
            key.append(draw(st.integers(-size, size - 1)))
        elif kind == "none":
            key.append(None)
            key.append(draw(_slices(size)))
        else:
            key.append(draw(_slices(size)))
    if key and draw(st.booleans()):
        i = draw(st.integers(0, len(key)))
        j = draw(st.integers(i, len(key)))
        key = key[:i] + [Ellipsis] + key[j:]
    return tuple(key)


@settings(max_examples=100)
@given(data=st.data())
def test_basic_indexing_matches_numpy(data):
    a = data.draw(arrays("int32", shapes(max_dims=3, max_side=5)))
    key = data.draw(basic_keys(a.shape))
    assert_same(from_numpy(a)[key], a[key])


@settings(max_examples=100)
@given(data=st.data())
def test_basic_setitem_matches_numpy(data):
    a = data.draw(arrays("float64", shapes(max_dims=3, max_side=5), elements=st.floats(-10, 10)))
    key = data.draw(basic_keys(a.shape))
    target_shape = a[key].shape
    # a value shape that broadcasts *to* the target: a suffix of it with some sides set to 1
    suffix = target_shape[data.draw(st.integers(0, len(target_shape))) :]
    value_shape = tuple(data.draw(st.sampled_from([side, 1])) for side in suffix)
    value = data.draw(arrays("float64", value_shape, elements=st.floats(-10, 10)))
    x = from_numpy(a)
    x[key] = from_numpy(value)
    expected = a.copy()
    expected[key] = value
    assert_same(x, expected)


@settings(max_examples=60)
@given(data=st.data())
def test_integer_array_and_mask_indexing_matches_numpy(data):
    a = data.draw(arrays("int64", shapes(min_dims=1, max_dims=3, max_side=4)))
    if 0 in a.shape:
        return
    idx = [data.draw(arrays("int64", (2,), elements=st.integers(-s, s - 1))) for s in a.shape]
    n = data.draw(st.integers(1, a.ndim))
    key = tuple(idx[:n])
    assert_same(from_numpy(a)[tuple(from_numpy(i) for i in key)], a[key])
    mask = data.draw(arrays("bool", a.shape))
    assert_same(from_numpy(a)[from_numpy(mask)], a[mask])
    x = from_numpy(a)
    x[from_numpy(mask)] = 0
    expected = a.copy()
    expected[mask] = 0
    assert_same(x, expected)


def test_indexing_with_unsigned_index_arrays_is_integer_indexing():
    a = np.arange(5)
    for dt in ("uint8", "uint16", "uint64", "int8"):
        idx = np.array([1, 0, 1], dtype=dt)
        assert_same(from_numpy(a)[from_numpy(idx)], a[idx.astype(np.int64)])


def test_setitem_on_unsigned_arrays_and_negative_steps():
    a = np.arange(6, dtype=np.uint32)
    x = from_numpy(a)
    x[from_numpy(np.array([0, 5]))] = 2**32 - 1
    x[::-2] = from_numpy(np.array([7, 8, 9], dtype=np.uint32))
    a[[0, 5]] = 2**32 - 1
    a[::-2] = [7, 8, 9]
    assert_same(x, a)
    u = from_numpy(np.zeros(3, dtype=np.uint64))
    u[from_numpy(np.array([True, False, True]))] = 2**64 - 1
    assert_same(u, np.array([2**64 - 1, 0, 2**64 - 1], dtype=np.uint64))


def test_basic_keys_give_views_advanced_keys_copies():
    a = np.arange(12).reshape(3, 4)
    x = from_numpy(a)
    row, block, col = x[1], x[..., 1:3], x[from_numpy(np.array(2)), None]  # a 0-d integer array is an integer
    adv = x[[0, 1], 1:]
    x[...] = -1
    for view in (row, block, col):
        assert bool(xp.all(view == -1))
    assert_same(adv, a[[0, 1], 1:])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_simple_keys_skip_planning_and_give_views_of_every_dtype(dtype, monkeypatch):
    # ints, slices of positive step, None and one Ellipsis: torch's basic indexing is NumPy's, for every dtype
    planned = []
    real = _indexing.plan
    monkeypatch.setattr(_indexing, "plan", lambda t, key: planned.append(key) or real(t, key))
    a = np.arange(24).reshape(2, 3, 4).astype(dtype)
    x = from_numpy(a)
    simple = [
        1,
        -1,
        slice(1, 5),
        slice(None, None, 2),
        (slice(None), 2),
        Ellipsis,
        (Ellipsis, 0),
        (None, 1),
        (0, slice(-2, None), None),
        (),
        (1, Ellipsis, slice(1, 3, 2)),
    ]
    for key in simple:
        view = x[key]
        assert_same(view, a[key])
        assert view._t._base is x._t or view._t is x._t  # a view, never a copy
    assert planned == []
    # everything else is planned: negative steps, NumPy and bool scalars, arrays, two ellipses (an error)
    for key in (
        slice(None, None, -1),
        np.int64(1),
        True,
        (slice(None), np.intp(0)),
        [1, 0],
        (slice(None), slice(0, None, -2)),
    ):
        assert_same(x[key], a[key])
    with pytest.raises(IndexError, match="only have a single ellipsis"):
        x[..., 0, ...]
    assert len(planned) == 7


def test_simple_keys_keep_the_errors():
    x = from_numpy(np.arange(6).reshape(2, 3))
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="slice step cannot be zero"):  # not simple: planned, as NumPy says
        x[::0]


def test_indexing_errors():
    x = from_numpy(np.arange(6).reshape(2, 3))
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexError, match="integer or boolean, got float32"):
        x[from_numpy(np.array([0.0], dtype=np.float32))]
    with pytest.raises(IndexError, match="valid indices"):
        x[1.0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ::-1, ...]
    with pytest.raises(TypeError, match="cannot assign the complex value 1.5j into a int64 array"):
        x[0, 0] = 1.5j
    with pytest.raises(ValueError, match="value is on meta"):
        x[0] = xp.NeuronArray(torch.zeros(3, dtype=torch.int64, device="meta"))


def test_iteration_and_len():
    x = from_numpy(np.arange(6).reshape(3, 2))
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3 and rows[1].shape == (2,)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-dimensional array"):
        len(from_numpy(np.array(1)))


BOUND = st.one_of(st.none(), st.integers(-12, 12), st.integers(-12, 12).map(np.int64))


@settings(max_examples=60)
@given(BOUND, BOUND, st.one_of(st.none(), st.integers(-4, 4).filter(bool), st.integers(1, 4).map(np.int64)))
def test_every_slice_reads_as_numpy_and_positive_steps_give_views(start, stop, step):
    """Slices of Python ints with a positive step take the inline path; NumPy integers, negative steps and
    out-of-range bounds the general one: each reads what NumPy reads, and a positive step gives a view."""
    a = np.arange(10.0)
    x = from_numpy(a)
    key = slice(start, stop, step)
    got = x[key]
    assert_same(got, a[key])
    if step is None or step > 0:
        assert got._t.untyped_storage().data_ptr() == x._t.untyped_storage().data_ptr()


_PART = st.one_of(
    st.integers(-5, 5),
    st.integers(-5, 5).map(np.int64),
    st.just(True),
    st.builds(
        slice,
        st.one_of(st.none(), st.integers(-6, 6)),
        st.one_of(st.none(), st.integers(-6, 6)),
        st.one_of(st.none(), st.integers(-3, 3).filter(bool)),
    ),
    st.just(Ellipsis),
    st.none(),
)


@settings(max_examples=150)
@given(
    st.sampled_from([(), (4,), (3, 4), (2, 3, 4), (0, 3)]),
    st.one_of(_PART, st.tuples(_PART, _PART), st.lists(_PART, max_size=4).map(tuple)),
)
def test_basic_keys_read_as_numpy_with_copies_of_single_elements(shape, key):
    """Ints, slices, Ellipsis, None and tuples of them (the inline path takes ints, slices of positive step, an
    Ellipsis and tuples of ints and such slices; NumPy integers, bools, None, negative steps and repeated
    Ellipses take the general one): each reads NumPy's values and shape, or raises IndexError where NumPy
    does, with torch's message naming the dimension where torch reads the key as NumPy; one element (an int for
    every dimension) is a copy, every other result of a key without booleans a view."""
    a = np.arange(float(np.prod(shape))).reshape(shape)
    x = from_numpy(a.copy())
    try:
        expected = a[key]
    except IndexError:
        with pytest.raises(IndexError):
            x[key]
        if _indexing.simple(key):  # torch's own indexing: its bounds error, as the general path raises it
            with pytest.raises(IndexError) as torch_error:
                x._t[key]
            with pytest.raises(IndexError, match=re.escape(str(torch_error.value))):
                x[key]
        return
    got = x[key]
    assert_same(got, np.asarray(expected))
    if any(type(p) is bool for p in (key if isinstance(key, tuple) else (key,))) or got.size == 0:
        return  # a boolean index is an advanced one: a copy, as in NumPy
    if not isinstance(expected, np.ndarray):
        x[...] = -1.0  # one element read as a scalar: the write does not reach it
        assert_same(got, np.asarray(expected))
    else:
        before = to_numpy(got).copy()
        x[...] = -1.0  # a view sees the write
        assert_same(got, np.full_like(before, -1.0))


# ---------------------------------------------------------------- the ndarray attributes NumPy users reach for

SURFACE_DTYPES = INT_NAMES + FLOAT_NAMES + COMPLEX_NAMES + ("bool", "uint16", "uint32", "uint64")


# slicings of a 3-d array whose NumPy views have the same strides as torch's (positive steps, transposes)
VIEWS = [
    lambda a: a,
    lambda a: a[1:],
    lambda a: a[:, ::2],
    lambda a: a[..., 1:3],
    lambda a: np.moveaxis(a, 0, -1) if isinstance(a, np.ndarray) else xp.moveaxis(a, 0, -1),
    lambda a: a[0],
]


# --- real and imag ---


@given(st.sampled_from(SURFACE_DTYPES).flatmap(lambda d: arrays(d, shapes())))
def test_real_and_imag_read_as_numpy(a):
    x = from_numpy(a)
    assert_same(x.real, a.real)
    assert_same(x.imag, a.imag)


@given(st.sampled_from(COMPLEX_NAMES).flatmap(lambda d: arrays(d, shapes(min_dims=2))), st.sampled_from(VIEWS[:4]))
def test_the_parts_of_a_complex_array_are_views_that_write_through(a, view):
    x, expected = from_numpy(a), a.copy()
    part_x, part_a = view(x).real, view(expected).real
    part_x[...] = 1.5
    part_a[...] = 1.5
    view(x).imag[...] = -2.0
    view(expected).imag[...] = -2.0
    assert_same(x, expected)
    x.real = 3.0  # the setters, as NumPy's
    expected.real = 3.0
    x.imag = xp.asarray(4.0)
    expected.imag = 4.0
    assert_same(x, expected)


def test_parts_of_a_view_with_negative_steps_write_into_its_base():
    a = np.array([1 + 2j, 3 + 4j, 5 + 6j], dtype=np.complex64)
    x, expected = from_numpy(a), a.copy()
    x[::-1].real[0] = 9.0
    expected[::-1].real[0] = 9.0
    x[::-1].imag[1] = 8.0
    expected[::-1].imag[1] = 8.0
    assert_same(x, expected)
    assert x[::-1].real.strides == expected[::-1].real.strides


def test_the_real_part_of_a_real_array_is_the_array_and_its_imag_is_read_only():
    a = np.arange(4.0)
    x = from_numpy(a)
    assert x.real is x and a.real is a  # NumPy's answer
    x.real[1] = 7.0
    assert to_numpy(x)[1] == 7.0
    zeros = x.imag
    with pytest.raises(ValueError, match="read-only"):  # NumPy: "assignment destination is read-only"
        zeros[0] = 1.0
    with pytest.raises(ValueError):
        a.imag[0] = 1.0
    with pytest.raises(TypeError, match="float64 has no imaginary part"):
        x.imag = 1.0
    with pytest.raises(TypeError):
        a.imag = 1.0


# --- fill ---

FILL_VALUES = st.one_of(
    st.integers(-(2**65), 2**65),
    st.floats(-1e6, 1e6),
    st.booleans(),
    st.builds(complex, st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)),
)


@given(st.sampled_from(SURFACE_DTYPES), shapes(), FILL_VALUES)
def test_fill_converts_as_numpy_does(dtype, shape, value):
    a = np.zeros(shape, dtype=dtype)
    x = from_numpy(a)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy's ComplexWarning when a complex fills a real array
            a.fill(value)
    except (OverflowError, TypeError, ValueError) as e:  # NumPy refuses: so must we, with the same kind of error
        with pytest.raises(type(e)):
            x.fill(value)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert x.fill(value) is None
    assert_same(x, a)


def test_fill_writes_through_views_and_takes_0d_arrays():
    a = np.arange(6.0).reshape(2, 3)
    x, expected = from_numpy(a), a.copy()
    x[:, ::-1][0].fill(xp.asarray(5.0))
    expected[:, ::-1][0].fill(5.0)
    assert_same(x, expected)
    with pytest.raises(ValueError, match=r"scalar or a 0-d array, got shape \(2,\)"):
        x.fill(xp.asarray([1.0, 2.0]))


# --- view ---

VIEW_DTYPES = (
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "bool",
)


@given(
    st.sampled_from(VIEW_DTYPES[:-1]),
    hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4),
    st.sampled_from(VIEW_DTYPES[:-1]),
    st.integers(0, 2**31),
)
def test_view_reinterprets_the_bytes_as_numpy_does(source, shape, target, seed):
    raw = np.random.default_rng(seed).integers(
        0, 256, size=int(np.prod(shape)) * np.dtype(source).itemsize, dtype=np.uint8
    )
    a = raw.view(source).reshape(shape)
    x = from_numpy(a)
    try:
        expected = a.view(target)
    except ValueError:  # NumPy refuses (a 0-d array, or a last axis the new size does not divide): so do we
        with pytest.raises(ValueError, match=f"x.view\\({target}\\)"):
            x.view(target)
        return
    ours = x.view(target)
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    np.testing.assert_array_equal(_bytes(to_numpy(ours)), _bytes(expected))  # bit for bit (NaNs included)
    ours[...] = xp.zeros(ours.shape, dtype=ours.dtype)  # the same memory
    assert not _bytes(to_numpy(x)).any()


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


@pytest.mark.parametrize("view", VIEWS, ids=range(len(VIEWS)))
def test_view_of_a_strided_array_agrees_with_numpy_or_says_why_not(view):
    a = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    x = from_numpy(a)
    for target in ("int32", "float64", "complex64", "uint8"):
        try:
            expected = view(a).view(target)
        except ValueError:
            with pytest.raises(ValueError, match="x.view"):
                view(x).view(target)
            continue
        try:
            ours = view(x).view(target)
        except ValueError as e:  # torch's own alignment limit beyond NumPy's, stated
            assert "torch cannot view" in str(e)
            continue
        np.testing.assert_array_equal(to_numpy(ours), expected)


def test_view_errors_and_the_plain_view():
    x = from_numpy(np.arange(3.0))
    v = x.view()
    assert v is not x and v.shape == x.shape
    v[0] = 9.0
    assert to_numpy(x)[0] == 9.0
    with pytest.raises(ValueError, match=r"0-d array cannot change its item size \(8 -> 4 bytes\)"):
        from_numpy(np.array(1.0)).view(np.float32)
    with pytest.raises(ValueError, match=r"x.view\(complex128\) of a float64 array of shape \(3,\)"):
        x.view(xp.complex128)
    with pytest.raises(ValueError, match="runs backwards"):
        x[::-1].view(np.float32)
    with pytest.raises(TypeError, match="ndarray subclasses"):
        x.view(np.ndarray)
    with pytest.raises(TypeError):
        x.view("U4")


# --- strides, nbytes, itemsize ---


@given(
    st.sampled_from(SURFACE_DTYPES),
    hnp.array_shapes(min_dims=3, max_dims=3, min_side=1, max_side=5),
    st.sampled_from(VIEWS),
)
def test_strides_nbytes_and_itemsize_are_numpys(dtype, shape, view):
    a = np.zeros(shape, dtype=dtype)
    x, expected = view(from_numpy(a)), view(a)
    assert (x.strides, x.nbytes, x.itemsize) == (expected.strides, expected.nbytes, expected.itemsize)


def test_strides_of_broadcasts_and_negative_steps():
    a = np.arange(12.0).reshape(3, 4)
    x = from_numpy(a)
    assert xp.broadcast_to(x[0], (5, 4)).strides == np.broadcast_to(a[0], (5, 4)).strides
    r, expected = x[::-1, ::2], a[::-1, ::2]
    assert (r.strides, r.nbytes, r.itemsize) == (expected.strides, expected.nbytes, expected.itemsize)


# --- flat ---


@given(st.sampled_from(SURFACE_DTYPES).flatmap(lambda d: arrays(d, shapes(min_dims=1))), st.data())
def test_flat_reads_as_numpy(a, data):
    x = from_numpy(a)
    assert len(x.flat) == len(a.flat)
    assert_same(x.flat.copy(), a.flat.copy())
    if a.size:
        i = data.draw(st.integers(-a.size, a.size - 1))
        assert_same(x.flat[i], np.asarray(a.flat[i]))
        s = data.draw(st.slices(a.size))
        assert_same(x.flat[s], a.flat[s])
    elements = list(x.flat)
    assert all(type(e) is xp.NeuronArray and e.shape == () for e in elements)
    np.testing.assert_array_equal(np.array([to_numpy(e) for e in elements], dtype=a.dtype).reshape(-1), a.reshape(-1))


def test_flat_reads_are_copies_and_writes_go_into_any_layout():
    a = np.arange(6.0).reshape(2, 3)
    x, expected = from_numpy(a), a.copy()
    part = x.flat[1:3]
    part[0] = -1.0
    assert to_numpy(x)[0, 1] == 1.0  # a copy, as NumPy's flatiter returns
    x.flat[[0, 5]] = 7.0
    expected.flat[[0, 5]] = 7.0
    assert_same(x, expected)
    x.T.flat[1] = -3.0  # strided, and reversed: written through x's own indexing
    expected.T.flat[1] = -3.0
    x[:, ::-1].flat[1:3] = 4.0
    expected[:, ::-1].flat[1:3] = 4.0
    assert_same(x, expected)
    with pytest.raises(IndexError):
        x.T.flat[6] = 1.0


# --- torch ---


@given(st.sampled_from(SURFACE_DTYPES).flatmap(lambda d: arrays(d, shapes(min_dims=1))))
def test_from_torch_and_to_torch_share_memory(a):
    t = torch.from_numpy(a.copy())
    x = xp.from_torch(t)
    assert x.to_torch() is t and x.dtype == a.dtype and x.shape == a.shape
    if a.size:
        t[(0,) * t.dim()] = 0
        assert x[(0,) * t.dim()].item() == 0  # a write through the tensor is seen by the array
        x[...] = xp.ones(x.shape, dtype=x.dtype)
        assert bool((t == 1).all())  # and the other way
    assert_same(xp.from_torch(torch.from_numpy(a)), a)


def test_the_torch_bridge_refuses_what_it_cannot_share():
    with pytest.raises(TypeError, match="from_torch\\(\\) wraps a torch.Tensor, got ndarray"):
        xp.from_torch(np.zeros(3))
    with pytest.raises(TypeError, match="from_torch\\(\\) does not support torch dtype torch.float8_e4m3fn"):
        xp.from_torch(torch.zeros(3, dtype=torch.float8_e4m3fn))
    with pytest.raises(ValueError, match="negative steps"):
        from_numpy(np.arange(3.0))[::-1].to_torch()
    assert torch.from_dlpack(from_numpy(np.arange(3.0))).tolist() == [0.0, 1.0, 2.0]  # DLPack, too


# --- conversions to NumPy and DLPack ---

M = np.random.default_rng(1234).standard_normal((3, 4))


def test_explicit_conversion_to_numpy() -> None:
    a = from_numpy(M)
    host = np.asarray(a)
    assert isinstance(host, np.ndarray) and np.shares_memory(host, to_numpy(a))
    np.testing.assert_array_equal(host, M)
    assert np.array(a).base is None or not np.shares_memory(np.array(a), to_numpy(a))
    assert np.asarray(a, copy=False).ctypes.data == a._t.data_ptr()
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(a, dtype=np.float32, copy=False)
    assert np.asarray(a, dtype=np.float32).dtype == np.float32
    for name in ("uint16", "uint32", "uint64", "bool", "complex64"):
        values = np.arange(3).astype(name)
        np.testing.assert_array_equal(np.asarray(from_numpy(values)), values)


def test_device_arrays_refuse_copy_false() -> None:
    on_device = xp.NeuronArray(torch.empty(3, device="meta"))
    with pytest.raises(ValueError, match="copies it to the host"):
        np.asarray(on_device, copy=False)


def test_dlpack_zero_copy_both_ways() -> None:
    a = from_numpy(M)
    host = np.from_dlpack(a)
    assert np.shares_memory(host, np.asarray(a))
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a._t.data_ptr()
    back = xp.from_dlpack(M)
    assert back._t.data_ptr() == M.ctypes.data
    tensor = torch.arange(4.0)
    assert xp.from_dlpack(tensor)._t.data_ptr() == tensor.data_ptr()
    host[0, 0] = 42.0
    assert float(a[0, 0]) == 42.0
