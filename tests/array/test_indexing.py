"""Writes against NumPy: values that overlap the written array (views of it, in-place operators, NumPy's out=),
index arrays of every origin and integer dtype, keys mixing integers, slices and arrays, and property tests of
x[key] = value and x[key] over random keys."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import arrays, assert_same, from_numpy, shapes, to_numpy
from trn_backend import _array

WRITE_DTYPES = ("bool", "int8", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "complex64")


def _distinct(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Values that tell positions apart (alternating for bool)."""
    values = np.arange(math.prod(shape)).reshape(shape)
    return (values % 2 == 1) if dtype == "bool" else values.astype(dtype)


# ---------------------------------------------------------------- values that overlap the written array

OVERLAPPING_WRITES = {
    "x[:, 1:] = x[:, :-1]": lambda x: x.__setitem__((slice(None), slice(1, None)), x[:, :-1]),
    "x[:, :-1] = x[:, 1:]": lambda x: x.__setitem__((slice(None), slice(None, -1)), x[:, 1:]),
    "x[2::2] = x[:-2:2]": lambda x: x.__setitem__(slice(2, None, 2), x[:-2:2]),
    "x[1:] = x[:-1]": lambda x: x.__setitem__(slice(1, None), x[:-1]),
    "x[...] = x.mT": lambda x: x.__setitem__(Ellipsis, x.mT),
    "x[::-1] = x": lambda x: x.__setitem__(slice(None, None, -1), x),
    "x[:, ::-1] = x[:, :]": lambda x: x.__setitem__((slice(None), slice(None, None, -1)), x[:, :]),
    "x[[3, 0]] = x[:2]": lambda x: x.__setitem__([3, 0], x[:2]),
    "x[1:, 0] = x[0, :-1]": lambda x: x.__setitem__((slice(1, None), 0), x[0, :-1]),
}


@pytest.mark.parametrize("dtype", WRITE_DTYPES)
@pytest.mark.parametrize("write", sorted(OVERLAPPING_WRITES))
def test_value_overlapping_the_array_is_read_before_writing(write, dtype):
    a = _distinct((4, 4), dtype)
    x = from_numpy(a)
    OVERLAPPING_WRITES[write](x)
    OVERLAPPING_WRITES[write](a)  # NumPy buffers overlapping operands itself
    assert_same(x, a)


def test_overlap_through_separate_storages():
    # two tensors over overlapping NumPy memory: distinct torch storages, shared bytes
    buffer = np.arange(10)
    x = xp.NeuronArray(torch.from_numpy(buffer[:8]))
    y = xp.NeuronArray(torch.from_numpy(buffer[2:]))
    x[...] = y
    expected = np.arange(10)
    expected[:8] = expected[2:].copy()
    np.testing.assert_array_equal(buffer, expected)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "uint64"])
def test_index_array_that_is_a_view_of_the_array(dtype):
    a = np.array([1, 2, 0, 3], dtype=dtype)
    x = from_numpy(a)
    x[x] = from_numpy(np.array([5, 6, 7, 8], dtype=dtype))
    a[a.copy()] = [5, 6, 7, 8]
    assert_same(x, a)
    x = from_numpy(np.array([1, 2, 0, 3], dtype=dtype))
    x[x[:2]] = 0
    assert_same(x, np.array([1, 0, 0, 3], dtype=dtype))


@pytest.mark.parametrize("dtype", ["int64", "uint16", "uint32", "uint64", "float64"])
def test_inplace_operators_with_overlapping_operands(dtype):
    a = _distinct((4, 4), dtype)
    x = from_numpy(a)
    x += x.mT
    a += a.T
    assert_same(x, a)
    x[1:] += x[:-1]
    a[1:] += a[:-1]
    assert_same(x, a)
    x[:, ::-1] *= x[:, :]
    a[:, ::-1] *= a[:, :]
    assert_same(x, a)
    x[[2, 0]] -= x[:2]
    a[[2, 0]] -= a[:2]
    assert_same(x, a)


def test_inplace_operator_whose_result_is_a_view_of_x(monkeypatch):
    # no namespace function returns a view of its input today; an in-place operator must not depend on that
    monkeypatch.setitem(_array.OPERATORS, "add", lambda x1, x2: xp.matrix_transpose(x1))
    a = np.arange(16.0).reshape(4, 4)
    x = from_numpy(a)
    x += 1
    assert_same(x, a.T)


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint16", "uint32", "uint64"])
def test_numpy_out_overlapping_the_inputs(dtype):
    def run(x, T):
        np.einsum("ij->ji", x, out=x)
        np.positive(T(x), out=x)
        np.add(x[:, :-1], 1, out=x[:, 1:])
        np.negative(x[0], out=x[:, 0])
        return x

    a = _distinct((4, 4), dtype)
    x = run(from_numpy(a), lambda v: v.mT)
    assert_same(x, run(a, lambda v: v.T))


# ---------------------------------------------------------------- index arrays of every origin

ORIGINS = {
    "numpy": lambda a: a,
    "torch": torch.from_numpy,
    "NeuronArray": from_numpy,
    "list": lambda a: a.tolist(),
}


@pytest.mark.parametrize("origin", sorted(ORIGINS))
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_integer_index_arrays_of_any_origin_are_integer_indices(origin, dtype):
    a = np.arange(10, 15)
    idx = np.array([1, 0, 1], dtype=dtype)
    key = ORIGINS[origin](idx)
    assert_same(from_numpy(a)[key], a[idx])
    unique = np.array([4, 0, 1], dtype=dtype)  # NumPy leaves the order of repeated writes open
    x = from_numpy(a)
    x[ORIGINS[origin](unique)] = from_numpy(np.array([7, 8, 9]))
    expected = a.copy()
    expected[unique] = [7, 8, 9]
    assert_same(x, expected)
    nested = ORIGINS[origin](np.array([[1, 0], [4, 4]], dtype=dtype))
    assert_same(from_numpy(a)[nested], a[np.array([[1, 0], [4, 4]])])


@pytest.mark.parametrize("origin", sorted(ORIGINS))
def test_boolean_arrays_of_any_origin_are_masks(origin):
    a = np.arange(10, 15)
    mask = np.array([True, False, True, False, True])
    assert_same(from_numpy(a)[ORIGINS[origin](mask)], a[mask])
    x = from_numpy(a)
    x[ORIGINS[origin](mask)] = 0
    expected = a.copy()
    expected[mask] = 0
    assert_same(x, expected)


@pytest.mark.parametrize("origin", sorted(ORIGINS))
def test_float_index_arrays_are_an_index_error(origin):
    x = from_numpy(np.arange(5))
    key = ORIGINS[origin](np.array([1.0, 0.0]))
    with pytest.raises(IndexError, match="arrays used as indices must be integer or boolean, got float"):
        x[key]
    with pytest.raises(IndexError, match="arrays used as indices must be integer or boolean, got float"):
        x[key] = 0


def test_empty_list_is_an_empty_integer_index():
    a = np.arange(6).reshape(2, 3)
    assert_same(from_numpy(a)[[]], a[[]])
    assert_same(from_numpy(a)[:, []], a[:, []])


def test_empty_masks_follow_numpy():
    # NumPy lets each side of an empty mask be 0 instead of the axis's side
    for shape, mask_shape in [((0, 1), (0, 0)), ((2, 3), (0, 3)), ((2, 3), (2, 0)), ((2, 3, 4), (0, 3))]:
        a = np.zeros(shape)
        mask = np.zeros(mask_shape, dtype=bool)
        assert_same(from_numpy(a)[mask], a[mask])
        x = from_numpy(a)
        x[mask] = 1.0
        assert_same(x, a)
    with pytest.raises(IndexError, match="along axis 0; size of axis is 2 but size of corresponding boolean axis is 1"):
        from_numpy(np.zeros((2, 3)))[np.zeros((1, 0), dtype=bool)]


def test_index_on_another_device_is_a_value_error():
    x = from_numpy(np.arange(5))
    for key in (
        torch.zeros(2, dtype=torch.int64, device="meta"),
        xp.NeuronArray(torch.zeros(2, dtype=torch.bool, device="meta")),
    ):
        with pytest.raises(ValueError, match="index array is on meta, the indexed array on cpu"):
            x[key]
        with pytest.raises(ValueError, match="index array is on meta, the indexed array on cpu"):
            x[key] = 1


# ---------------------------------------------------------------- keys mixing integers, slices and arrays

I = np.array([1, 2])
J = np.array([[0], [2]])
M3 = np.array([True, False, True])
M4 = np.array([True, False, True, True])
M5 = np.array([False, True, False, True, True])
M34 = np.zeros((3, 4), dtype=bool)
M34[0, 3] = M34[2, 1] = True
M45 = np.zeros((4, 5), dtype=bool)
M45[1, 4] = M45[3, 0] = True
MIXED_KEYS = {
    "0, :, i": (0, slice(None), I),
    "i, :, 0": (I, slice(None), 0),
    ":, i, 0": (slice(None), I, 0),
    "0, i": (0, I),
    "i, 0": (I, 0),
    "0, i, j": (0, I, J),
    "i, None, j": (I, None, J),
    "None, i, ..., 0": (None, I, Ellipsis, 0),
    "..., i, 0": (Ellipsis, I, 0),
    "i, ..., j": (I, Ellipsis, J),
    "0, ..., i": (0, Ellipsis, I),
    ":, i, ...": (slice(None), I, Ellipsis),
    "i, ::-1, 1": (I, slice(None, None, -1), 1),
    "1, ::-2, j": (1, slice(None, None, -2), J),
    "True, i": (True, I),
    ":, True, i": (slice(None), True, I),
    "0, True, :, i": (0, True, slice(None), I),
    "np.int64(0), :, i": (np.int64(0), slice(None), I),
    "0-d array, :, i": (np.array(0), slice(None), I),
    "0-d array, :, 0-d array": (np.array(0), slice(None), np.array(1)),
    "mask, i": (M3, I),
    ":, mask, 0": (slice(None), M4, 0),
    "0, :, mask": (0, slice(None), M5),
    "2-d mask, i": (M34, I),
    "i, 2-d mask": (I, M45),
}


@pytest.mark.parametrize("spelling", sorted(MIXED_KEYS))
def test_mixed_keys_follow_numpy_axis_order(spelling):
    a = np.arange(60).reshape(3, 4, 5)
    key = MIXED_KEYS[spelling]
    expected = a[key]
    for origin in ("numpy", "NeuronArray"):
        spelled = tuple(ORIGINS[origin](k) if isinstance(k, np.ndarray) else k for k in key)
        assert_same(from_numpy(a)[spelled], expected)
        x = from_numpy(a)
        x[spelled] = from_numpy(np.arange(expected.size).reshape(expected.shape) + 100)
        want = a.copy()
        want[key] = np.arange(expected.size).reshape(expected.shape) + 100
        assert_same(x, want)


def test_integer_and_array_apart_put_the_array_dimension_first():
    # torch reads the integer as basic indexing and gives (4, 2); NumPy counts it as an advanced index
    a = np.arange(60).reshape(3, 4, 5)
    i = np.array([1, 3])
    assert from_numpy(a)[0, :, from_numpy(i)].shape == (2, 4) == a[0, :, i].shape


def test_indexing_errors_name_the_problem():
    x = from_numpy(np.arange(24).reshape(2, 3, 4))
    with pytest.raises(
        IndexError,
        match=r"shape mismatch: indexing arrays could not be broadcast together with "
        r"shapes \(2,\) \(3,\)",
    ):
        x[[0, 1], :, [0, 1, 2]]
    with pytest.raises(
        IndexError,
        match="boolean index did not match indexed array along axis 1; size of axis "
        "is 3 but size of corresponding boolean axis is 2",
    ):
        x[:, np.array([True, False])]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        x[:, 3, [0]]
    with pytest.raises(IndexError, match="too many indices: array is 3-dimensional, but 4 were indexed"):
        x[0, 0, ::-1, 0]
    with pytest.raises(IndexError, match="got str"):
        x["a"]
    with pytest.raises(IndexError, match="got object"):
        x[[0, slice(None)]]
    with pytest.raises(ValueError, match=r"value of shape \(3,\) does not broadcast to the indexed shape \(2, 4\)"):
        x[[0, 1], 0] = from_numpy(np.arange(3))
    # NumPy drops leading unit dimensions of a value
    x[[0, 1], 0] = from_numpy(np.ones((1, 1, 4), dtype=np.int64))
    assert_same(x[:, 0], np.ones((2, 4), dtype=np.int64))


# ---------------------------------------------------------------- property tests against NumPy


def _slices(size: int) -> st.SearchStrategy:
    bound = st.one_of(st.none(), st.integers(-size - 1, size + 1))
    step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
    return st.builds(slice, bound, bound, step)


@st.composite
def _index_array(draw, size: int, length: int, unique: bool) -> np.ndarray:
    """``length`` indices into an axis of ``size`` (negative spellings included), 1-d or as a column."""
    dtype = draw(st.sampled_from(["uint8", "int64", "int32"]))
    values = draw(st.lists(st.integers(0, size - 1), min_size=length, max_size=length, unique=unique)) if length else []
    if dtype != "uint8":
        values = [v - size if draw(st.booleans()) else v for v in values]
    a = np.array(values, dtype=dtype)
    return a[:, None] if draw(st.booleans()) else a


@st.composite
def numpy_keys(draw, shape: tuple[int, ...], *, unique: bool = False, scalar_bools=(True,)) -> tuple:
    """Keys over ``shape``: per axis an int, a slice (negative steps included), an integer array or a mask (over
    one or two axes); None and boolean scalars anywhere; an Ellipsis in place of some entries, or trailing axes
    left out. Arrays and masks share one length, so that they broadcast (columns against rows); with ``unique``
    the indices of an array are distinct, so no position is selected twice."""
    plan, axis = [], 0
    while axis < len(shape):
        kind = draw(st.sampled_from(["array", "int", "slice", "mask", "mask2"]))
        if kind == "int" and shape[axis] == 0:
            kind = "slice"
        if kind == "mask2" and axis + 1 == len(shape):
            kind = "mask"
        plan.append((kind, axis))
        axis += 2 if kind == "mask2" else 1
    caps = [shape[ax] for kind, ax in plan if kind == "array"] + [
        shape[ax] * (shape[ax + 1] if kind == "mask2" else 1) for kind, ax in plan if kind.startswith("mask")
    ]
    length = draw(st.integers(min(1, *caps), min([3, *caps])) if caps else st.just(0))
    parts: list = []
    for kind, ax in plan:
        size = shape[ax]
        if kind == "int":
            parts.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            parts.append(draw(_slices(size)))
        elif kind == "array":
            parts.append(draw(_index_array(size, length, unique)))
        else:
            sides = shape[ax : ax + 2] if kind == "mask2" else shape[ax : ax + 1]
            mask = np.zeros(sides, dtype=bool)
            if length:
                mask.flat[
                    draw(st.lists(st.integers(0, mask.size - 1), min_size=length, max_size=length, unique=True))
                ] = True
            parts.append(mask)
    if parts and draw(st.booleans()):
        i = draw(st.integers(0, len(parts)))
        parts[i : draw(st.integers(i, len(parts)))] = [Ellipsis]
    else:
        del parts[len(parts) - draw(st.integers(0, len(parts))) :]
    for _ in range(draw(st.integers(0, 2))):
        parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from([None, None, *scalar_bools])))
    return tuple(parts)


@st.composite
def spelled(draw, key: tuple):
    """``key`` with each array given as a NumPy array, a NeuronArray, a torch tensor or a list (if nonempty: an
    empty list loses the dtype); sometimes a single entry outside a tuple."""

    def spell(k):
        if not isinstance(k, np.ndarray):
            return k
        return ORIGINS[draw(st.sampled_from(sorted(ORIGINS) if k.size else ["numpy", "torch", "NeuronArray"]))](k)

    parts = tuple(spell(k) for k in key)
    return parts[0] if len(parts) == 1 and draw(st.booleans()) else parts


# nonempty arrays of 2 or 3 dimensions first (where keys mix the most), then any of up to 3
ARRAY_SHAPES = st.one_of(
    hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4), shapes(min_dims=1, max_dims=3, max_side=4)
)


@given(data=st.data())
def test_getitem_matches_numpy(data):
    a = _distinct(data.draw(ARRAY_SHAPES), "int32")
    for _ in range(3):
        key = data.draw(numpy_keys(a.shape, scalar_bools=(True, False)))
        try:
            expected = a[key]
        except IndexError:
            with pytest.raises(IndexError):
                from_numpy(a)[data.draw(spelled(key))]
            continue
        assert_same(from_numpy(a)[data.draw(spelled(key))], expected)


@given(data=st.data())
def test_setitem_matches_numpy(data):
    dtype = data.draw(st.sampled_from(WRITE_DTYPES))
    a = _distinct(data.draw(ARRAY_SHAPES), dtype)
    x = from_numpy(a)
    for _ in range(3):
        _write(data, x, a, dtype)
        assert_same(x, a)


def _write(data, x: xp.NeuronArray, a: np.ndarray, dtype: str) -> None:
    """One random x[key] = value (or x[key] += value), and the same on ``a`` by NumPy's rules."""
    key = data.draw(numpy_keys(a.shape, unique=True))
    target = a[key].shape
    positions = np.arange(a.size).reshape(a.shape)[key]
    if np.unique(positions).size != positions.size:
        return  # NumPy leaves the order of repeated writes open
    source = data.draw(st.sampled_from(["view of x", "transposed view of x", "x[key] reversed", "fresh"]))
    n = math.prod(target)
    if source == "fresh" or n > a.size or (source == "transposed view of x" and len(target) < 2):
        # a value that broadcasts to the target: a suffix of its shape with some sides 1
        suffix = target[data.draw(st.integers(0, len(target))) :]
        value_shape = tuple(data.draw(st.sampled_from([side, 1])) for side in suffix)
        value = _distinct(value_shape, dtype)[::-1] if value_shape else _distinct((1,), dtype)[0]
        x[data.draw(spelled(key))] = from_numpy(np.asarray(value))
        a[key] = value
    elif source == "x[key] reversed":
        # a view of x where the key is basic
        value = x[data.draw(spelled(key))]
        x[data.draw(spelled(key))] = value[::-1] if value.ndim else value
        a[key] = a[key][::-1] if len(target) else a[key]
    else:
        # a view of x's own memory with the target's shape, plain or transposed
        start = data.draw(st.integers(0, a.size - n))
        flat, np_flat = x._t.view(-1)[start : start + n], a.reshape(-1)[start : start + n]
        if source == "view of x":
            view, np_view = flat.view(target), np_flat.reshape(target)
        else:
            view = flat.view(target[::-1]).permute(*reversed(range(len(target))))
            np_view = np_flat.reshape(target[::-1]).transpose()
        value = xp.NeuronArray(view)
        assert n == 0 or np.shares_memory(to_numpy(value), to_numpy(x))
        if dtype != "bool" and data.draw(st.booleans()):
            # x[key] += value: reads x[key], adds, writes back
            spelling = data.draw(spelled(key))
            x[spelling] += value
            a[key] += np_view
        else:
            x[data.draw(spelled(key))] = value
            a[key] = np_view


# ---------------------------------------------------------------- the value cast to x's dtype, as NumPy casts it


def _same_assignment(x: xp.NeuronArray, a: np.ndarray, key, value) -> None:
    """x[key] = value stores what NumPy's a[key] = value stores, or raises the exception type NumPy raises
    (writing nothing)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns where a float overflows to inf
            a[key] = value
    except (TypeError, ValueError, OverflowError) as e:
        before = to_numpy(x).copy()
        with pytest.raises(type(e)):
            x[key] = value
        np.testing.assert_array_equal(to_numpy(x), before)
        return
    x[key] = value
    assert_same(x, a)


PYTHON_SCALARS = st.one_of(
    st.booleans(),
    st.integers(-300, 300),
    st.integers(-(2**65), 2**65),
    st.floats(-1e3, 1e3),
    st.floats(allow_subnormal=False),
    st.sampled_from(
        [
            0.5,
            -0.5,
            1.9,
            -1.9,
            127.9,
            128.0,
            255.5,
            256.0,
            -129.0,
            2.0**63,
            -(2.0**63),
            2.0**64,
            1e300,
            math.nan,
            math.inf,
            -math.inf,
        ]
    ),
)


@settings(max_examples=50)
@given(
    dtype=st.sampled_from(WRITE_DTYPES + ("int16", "int32", "complex128")),
    value=PYTHON_SCALARS,
    key=st.sampled_from([0, slice(None), Ellipsis, (slice(None, None, -2),)]),
)
def test_python_scalar_assignment_casts_as_numpy(dtype, value, key):
    a = np.zeros(3, dtype=dtype)
    _same_assignment(from_numpy(a.copy()), a, key, value)


@pytest.mark.parametrize(
    ("dtype", "value", "expected"),
    [
        ("int64", 1.9, 1),
        ("int64", -1.9, -1),
        ("uint8", 255.9, 255),
        ("int8", -128.5, -128),
        ("bool", 2.5, True),
        ("bool", 0.0, False),
        ("bool", -3, True),
        ("float32", 2**24 + 1, 2.0**24),
        ("uint64", 2.0**63, 2**63),
    ],
)
def test_scalar_assignment_examples(dtype, value, expected):
    x = from_numpy(np.zeros(2, dtype=dtype))
    x[:] = value
    assert_same(x, np.full(2, expected, dtype=dtype))


@pytest.mark.parametrize(
    ("dtype", "value", "error", "match"),
    [
        ("int64", math.nan, ValueError, "cannot assign nan into a int64 array"),
        ("uint8", math.inf, OverflowError, "cannot assign inf into a uint8 array"),
        ("int32", -math.inf, OverflowError, "cannot assign -inf into a int32 array"),
        ("int8", 128.0, OverflowError, "128 is out of range for int8"),
        ("uint16", -1.5, OverflowError, "-1 is out of range for uint16"),
        ("float64", 1 + 2j, TypeError, "cannot assign the complex value \\(1\\+2j\\) into a float64 array"),
        ("int64", 1j, TypeError, "cannot assign the complex value 1j into a int64 array"),
    ],
)
def test_scalar_assignment_errors(dtype, value, error, match):
    x = from_numpy(np.arange(2, dtype=dtype))
    with pytest.raises(error, match=match):
        x[0] = value
    assert_same(x, np.arange(2, dtype=dtype))


def _value_elements(src: str, dst: str):
    """Values of ``src`` whose cast to ``dst`` NumPy defines: a float into an integer only within its range
    (NumPy's cast of NaN, infinities and values beyond the range is platform-dependent)."""
    if np.dtype(src).kind not in "fc" or np.dtype(dst).kind not in "iu":
        return None
    low = 0.0 if np.dtype(dst).kind == "u" else -100.0
    floats = st.floats(low, 100.0, width=32 if src in ("float32", "complex64") else 64, allow_subnormal=False)
    return floats if np.dtype(src).kind == "f" else st.builds(complex, floats, floats)


CAST_NAMES = ("bool", "int8", "int64", "uint8", "uint16", "uint64", "float32", "float64", "complex64", "complex128")


@settings(max_examples=50)
@given(data=st.data())
def test_array_assignment_casts_as_numpy(data):
    src = data.draw(st.sampled_from(CAST_NAMES), label="src")
    dst = data.draw(st.sampled_from(CAST_NAMES), label="dst")
    assume(not (src.startswith("complex") and dst == "bool"))  # test_complex_array_into_bool_is_nonzero
    shape = data.draw(shapes(min_dims=1, max_dims=2), label="shape")
    value = data.draw(arrays(src, shape, elements=_value_elements(src, dst)), label="value")
    a = np.zeros(shape, dtype=dst)
    x = from_numpy(a.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's ComplexWarning and float overflow
        a[...] = value
    if src.startswith("complex") and not dst.startswith("complex"):
        with pytest.warns(np.exceptions.ComplexWarning, match=f"assigning a {src} value into a {dst} array"):
            x[...] = from_numpy(value)
    else:
        x[...] = from_numpy(value)
    assert_same(x, a)


def test_complex_array_into_bool_is_nonzero():
    value = np.array([1j, 0, 2 + 0j], dtype=np.complex64)
    a = np.zeros(3, dtype=bool)
    a[...] = value
    x = from_numpy(np.zeros(3, dtype=bool))
    x[...] = from_numpy(value)
    assert_same(x, a)


def test_numpy_scalars_assign_as_strong_values() -> None:
    ours, theirs = xp.zeros(2, dtype=xp.uint8), np.zeros(2, dtype=np.uint8)
    ours[0] = theirs[0] = np.int64(-3)  # a NumPy scalar is cast like an array, not range-checked like an int
    np.testing.assert_array_equal(np.asarray(ours), theirs)
    f = xp.zeros(1, dtype=xp.float32)
    with pytest.warns(np.exceptions.ComplexWarning):
        f[0] = np.complex128(2 + 3j)
    assert float(f[0]) == 2.0
    b = xp.zeros(1, dtype=xp.bfloat16)
    b[0] = np.float32(1.5)
    assert float(b[0]) == 1.5
