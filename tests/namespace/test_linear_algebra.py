"""matmul, matrix_transpose, tensordot and vecdot against NumPy, through the planner; their errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import NUMERIC_NAMES, assert_same, from_numpy, to_numpy
from trn_backend import config, kernels

DTYPES = NUMERIC_NAMES + ("bool",)


def _values(data, dtype: str, shape) -> np.ndarray:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)  # full range: products and sums wrap, exactly as NumPy's
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    real = rng.standard_normal(shape)
    return (real + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else real).astype(dtype)


def _check(got: xp.NeuronArray, expected: np.ndarray) -> None:
    tol = 1e-5 if expected.dtype in (np.float32, np.complex64) else 1e-12
    assert_same(got, expected, rtol=tol if expected.dtype.kind in "fc" else None, atol=tol * 10)


@settings(max_examples=60)
@given(
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
    st.integers(1, 4),
    st.integers(0, 4),
    st.integers(1, 4),
    st.sampled_from(DTYPES),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_matmul_matches_numpy(batch, m, k, n, dtype, vec1, vec2, data):
    s1 = (k,) if vec1 else batch.input_shapes[0] + (m, k)
    s2 = (k,) if vec2 else batch.input_shapes[1] + (k, n)
    a, b = _values(data, dtype, s1), _values(data, dtype, s2)
    with kernels.count_calls() as calls:
        got = xp.matmul(from_numpy(a), from_numpy(b))
    _check(got, np.matmul(a, b))
    assert sum(calls.values()) == 1


def test_matmul_operator_and_mixed_dtypes():
    a = from_numpy(np.arange(6, dtype=np.int16).reshape(2, 3))
    b = from_numpy(np.arange(3, dtype=np.uint8))
    assert_same(a @ b, np.arange(6, dtype=np.int16).reshape(2, 3) @ np.arange(3, dtype=np.uint8))
    f = from_numpy(np.ones((3, 2), dtype=np.float32))
    assert (a @ f).dtype == xp.float32


@settings(max_examples=40)
@given(st.sampled_from(NUMERIC_NAMES), st.data())
def test_tensordot_matches_numpy(dtype, data):
    shape_a = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3), label="shape_a")
    n = data.draw(st.integers(0, len(shape_a)), label="n")
    if data.draw(st.booleans(), label="int axes"):
        shape_b = shape_a[len(shape_a) - n :] + data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
        axes = n
    else:
        axes_a = data.draw(st.permutations(range(len(shape_a))), label="axes_a")[:n]
        extra = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), label="extra")
        order = data.draw(st.permutations(range(n + len(extra))), label="order")
        dims = [shape_a[i] for i in axes_a] + list(extra)
        shape_b = tuple(dims[i] for i in order)
        axes_b = [order.index(i) for i in range(n)]
        # negative axes count from the end
        axes = ([i - len(shape_a) if data.draw(st.booleans()) else i for i in axes_a], axes_b)
    a, b = _values(data, dtype, shape_a), _values(data, dtype, shape_b)
    expected = np.tensordot(a, b, axes=axes)
    _check(xp.tensordot(from_numpy(a), from_numpy(b), axes=axes), expected)
    _check(xp.tensordot(from_numpy(a), from_numpy(b), axes), expected)  # axes by position, as NumPy takes it


@settings(max_examples=40)
@given(
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=3),
    st.sampled_from(NUMERIC_NAMES),
    st.data(),
)
def test_vecdot_matches_numpy(shapes, dtype, data):
    s1, s2 = shapes.input_shapes
    axis = data.draw(st.integers(-min(len(s1), len(s2)), -1), label="axis")
    size = data.draw(st.integers(0, 3), label="size")  # the contracted axis does not broadcast
    s1, s2 = (s[: len(s) + axis] + (size,) + s[len(s) + axis + 1 :] for s in (s1, s2))
    a, b = _values(data, dtype, s1), _values(data, dtype, s2)
    expected = np.sum(np.conj(a) * b if a.dtype.kind == "c" else a * b, axis=axis, dtype=np.result_type(a, b))
    _check(xp.vecdot(from_numpy(a), from_numpy(b), axis=axis), np.asarray(expected))


def test_vecdot_conjugates_x1():
    x1, x2 = from_numpy(np.array([1j, 2j, 3j])), from_numpy(np.array([1, 2j, 3]))
    assert complex(xp.vecdot(x1, x2)) == pytest.approx(4 - 10j)


def test_matrix_transpose_is_a_view():
    t = torch.arange(24).reshape(2, 3, 4)
    out = xp.matrix_transpose(xp.NeuronArray(t))
    assert out.shape == (2, 4, 3) and out._t.data_ptr() == t.data_ptr()
    assert_same(out, np.swapaxes(t.numpy(), -1, -2))


def test_precision_keywords():
    a = xp.NeuronArray(torch.randn(4, 8))
    b = xp.NeuronArray(torch.randn(8, 3))
    with kernels.count_calls() as calls:
        xp.matmul(a, b, precision="dd")
        xp.tensordot(a, b, axes=1, precision="fast")
        xp.vecdot(a, a, precision="bf16x6")
    assert calls == {("matmul", "dd"): 1, ("matmul", "fast"): 1, ("bmm", "bf16x6"): 1}
    with pytest.raises(ValueError, match="not both"):
        xp.matmul(a, b, precision="dd", target_forward_error=1e-6)


_A = xp.NeuronArray(torch.ones(2, 3))
_B = xp.NeuronArray(torch.ones(3, 4))
_META = xp.NeuronArray(torch.ones(3, 4, device="meta"))


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: xp.matmul(xp.NeuronArray(torch.tensor(1.0)), _B), ValueError, "x1 is 0-dimensional"),
        (lambda: xp.matmul(_A, xp.NeuronArray(torch.tensor(1.0))), ValueError, "x2 is 0-dimensional"),
        (lambda: xp.matmul(_A, _A), ValueError, r"x1 has 3 columns but x2 has 2 rows \(shapes \(2, 3\) and \(2, 3\)\)"),
        (
            lambda: xp.matmul(xp.NeuronArray(torch.ones(2, 2, 3)), xp.NeuronArray(torch.ones(4, 3, 1))),
            ValueError,
            r"batch shapes \(2,\) and \(4,\) do not broadcast",
        ),
        (lambda: xp.matmul(_A, np.ones((3, 4))), TypeError, "matmul.*x2.*ndarray"),
        (lambda: xp.matmul(_A, _META), ValueError, "different devices"),
        (
            lambda: xp.matmul(
                xp.NeuronArray(torch.ones(2, dtype=torch.uint64)), xp.NeuronArray(torch.ones(2, dtype=torch.int64))
            ),
            TypeError,
            "matmul.*uint64",
        ),
        (lambda: xp.tensordot(_A, _B, axes=3), ValueError, "axes=3 must be between 0 and"),
        (lambda: xp.tensordot(_A, _B, axes=-1), ValueError, "axes=-1"),
        (lambda: xp.tensordot(_A, _B, axes=True), TypeError, "axes must be an int or a pair"),
        (lambda: xp.tensordot(_A, _B, axes="x"), TypeError, "axes must be an int or a pair"),
        (lambda: xp.tensordot(_A, _B, axes=([0], [0, 1])), ValueError, "name 1 axes of x1 but 2 of x2"),
        (lambda: xp.tensordot(_A, _B, axes=([0, 0], [0, 1])), ValueError, "repeat an axis of x1"),
        (lambda: xp.tensordot(_A, _B, axes=([5], [0])), IndexError, "axis 5 is out of bounds"),
        (
            lambda: xp.tensordot(_A, _B, axes=([0], [0])),
            ValueError,
            r"axis 0 of x1 has size 2 but axis 0 of x2 has size 3",
        ),
        (
            lambda: xp.tensordot(xp.NeuronArray(torch.ones(1, 3)), _B, axes=([0], [0])),
            ValueError,
            "size 1 but axis 0 of x2 has size 3",
        ),  # contracted axes never broadcast
        (lambda: xp.vecdot(_A, _A, axis=0), ValueError, "axis must be a negative int"),
        (lambda: xp.vecdot(_A, _A, axis=-3), IndexError, r"in \[-2, -1\]"),
        (lambda: xp.vecdot(_A, _A, axis=1.0), TypeError, "axis must be an int"),
        (lambda: xp.vecdot(_A, xp.NeuronArray(torch.ones(2, 1))), ValueError, "size 3 in x1 but 1 in x2"),
        (lambda: xp.vecdot(_A, xp.NeuronArray(torch.ones(4, 3))), ValueError, "do not broadcast"),
        (lambda: xp.matrix_transpose(xp.NeuronArray(torch.ones(3))), ValueError, "at least 2 dimensions"),
    ],
)
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_axes_are_checked_before_the_plan_cache():
    """2.0 and True hash like 2 and 1: once axes=2 (or axis=-1) is cached, the lookalikes must still be refused."""
    a, b = xp.NeuronArray(torch.ones(3, 3)), xp.NeuronArray(torch.ones(3, 3))
    for good, bad in ((2, 2.0), (1, True), (((1,), (0,)), ((1.0,), (0,))), ((1, 0), (True, 0))):
        xp.tensordot(a, b, axes=good)
        with pytest.raises(TypeError, match="axes must be an int or a pair of sequences of ints"):
            xp.tensordot(a, b, axes=bad)
    assert xp.tensordot(a, b, axes=np.int64(2)).shape == ()
    xp.vecdot(a, b, axis=-1)
    for bad in (-1.0, True):
        with pytest.raises(TypeError, match="vecdot\\(\\): axis must be an int"):
            xp.vecdot(a, b, axis=bad)
    assert xp.vecdot(a, b, axis=np.int64(-1)).shape == (3,)


def test_the_default_matmul_plan_gives_way_to_every_precision_choice():
    """``x @ y`` keeps its plan under the default mode by shapes, dtypes and device: a precision block, a
    per-call mode or target, and a reduced float32 matmul precision must each still decide the mode run."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    x, y = xp.asarray(a), xp.asarray(b)
    want = a.astype(np.float64) @ b.astype(np.float64)

    def modes(call):
        with kernels.count_calls() as calls:
            got = call()
        np.testing.assert_allclose(to_numpy(got), want, rtol=1e-4, atol=1e-4)
        return {mode for (_, mode), n in calls.items() if n}

    assert modes(lambda: x @ y) == {"native"}
    with xp.precision("dd"):
        assert modes(lambda: x @ y) == {"dd"}
    assert modes(lambda: x @ y) == {"native"}
    assert modes(lambda: xp.matmul(x, y, precision="bf16x6")) == {"bf16x6"}
    assert modes(lambda: xp.matmul(x, y, target_forward_error=1e-7)) - {"native"}  # beyond native in float32
    assert modes(lambda: xp.matmul(x, y, target_forward_error=2e-6)) == {"native"}  # within native's bound
    with xp.precision(target_forward_error=1e-7):
        assert modes(lambda: x @ y) - {"native"}
    with xp.precision(target_relative_error=1e-7) as report:
        modes(lambda: x @ y)
    assert len(report) == 1
    assert modes(lambda: x @ y) == {"native"}
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")  # native's float32 bound no longer holds: a target must avoid it
    try:
        assert "native" not in modes(lambda: xp.matmul(x, y, target_forward_error=2e-6))
        assert modes(lambda: x @ y) == {"native"}
    finally:
        torch.set_float32_matmul_precision(previous)


@settings(max_examples=60)
@given(
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
    st.integers(1, 4),
    st.integers(0, 4),
    st.integers(1, 4),
    st.sampled_from(DTYPES),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_a_repeated_matmul_matches_numpy(batch, m, k, n, dtype, vec1, vec2, data):
    """The second ``x @ y`` of a shape, dtype and device reuses the step the first one planned (for 2-D operands,
    and 3-D ones of one batch size, one kernel call on the operands as they are): the same values as NumPy's
    every time, and one kernel call."""
    s1 = (k,) if vec1 else batch.input_shapes[0] + (m, k)
    s2 = (k,) if vec2 else batch.input_shapes[1] + (k, n)
    a, b = _values(data, dtype, s1), _values(data, dtype, s2)
    x, y = from_numpy(a), from_numpy(b)
    for _ in range(3):
        with kernels.count_calls() as calls:
            got = x @ y
        _check(got, np.matmul(a, b))
        assert sum(calls.values()) == 1


def test_a_repeated_matmul_goes_where_the_routing_sends_it():
    """The kernel routing is decided per call: after ``x @ y`` ran torch, ``config.nki = "model"`` sends the same
    call to the NKI kernel on the CPU model of the NeuronCore, and back to torch after the block."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    x, y = xp.asarray(a), xp.asarray(b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = xp.error_bound("native", xp.float32, 16) * (np.abs(a).astype(np.float64) @ np.abs(b))
    for nki in ("auto", "model", "auto"):
        for _ in range(2):
            with config.set(nki=nki, nki_min_flops=0), kernels.count_calls() as calls:
                got = to_numpy(x @ y)
            assert calls["nki.matmul", "native"] == (nki == "model"), calls
            assert calls["matmul", "native"] == 1
            assert np.all(np.abs(got - want) <= bound)


def test_a_repeated_matmul_keeps_its_errors_and_promotions():
    """After the cached 2-D call, the calls that differ from it in any way plan their own step: 1-D operands,
    other shapes and mixed dtypes give NumPy's results, and wrong shapes the error naming matmul."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = from_numpy(a)
    assert_same(x @ from_numpy(a.T.copy()), a @ a.T)
    assert_same(x @ from_numpy(a.T.copy()), a @ a.T)
    v = np.arange(4, dtype=np.float32)
    assert_same(x @ from_numpy(v), a @ v)
    assert_same(from_numpy(v[:3]) @ x, v[:3] @ a)
    assert_same(x @ from_numpy(a.T.astype(np.float64)), a @ a.T.astype(np.float64))
    assert_same(
        from_numpy(a.astype(np.int32)) @ from_numpy(a.T.astype(np.int32)), a.astype(np.int32) @ a.T.astype(np.int32)
    )
    with pytest.raises(ValueError, match=r"matmul\(\): x1 has 4 columns but x2 has 3 rows"):
        x @ x
    with pytest.raises(ValueError, match=r"matmul\(\): x2 is 0-dimensional"):
        x @ from_numpy(np.float32(1.0).reshape(()))


def test_matmul_operands_are_checked_on_every_path():
    """The call without precision arguments checks two CPU arrays inline: other operands keep their errors naming
    matmul (not an array; arrays on different devices), with and without a precision argument."""
    x = xp.ones((2, 2))
    on_meta = xp.NeuronArray(torch.empty((2, 2), dtype=torch.float64, device="meta"))
    for kwargs in ({}, {"precision": "native"}):
        with pytest.raises(TypeError, match=r"matmul\(\) expects x2 to be a NeuronArray"):
            xp.matmul(x, np.ones((2, 2)), **kwargs)
        with pytest.raises(TypeError, match=r"matmul\(\) expects x1 to be a NeuronArray"):
            xp.matmul(torch.ones((2, 2), dtype=torch.float64), x, **kwargs)
        with pytest.raises(ValueError, match=r"matmul\(\): x1 and x2 are on different devices"):
            xp.matmul(x, on_meta, **kwargs)
    assert (on_meta @ on_meta).device.type == "meta"
