"""Test support: conversions to and from NumPy and hypothesis strategies over the standard's dtypes."""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp

DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float32", "float64", "complex64", "complex128")
INT_NAMES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_NAMES = ("float32", "float64")
COMPLEX_NAMES = ("complex64", "complex128")
REAL_NAMES = INT_NAMES + FLOAT_NAMES
NUMERIC_NAMES = REAL_NAMES + COMPLEX_NAMES


def from_numpy(a: np.ndarray) -> xp.NeuronArray:
    """A NeuronArray holding a copy of a NumPy array (independent of the namespace's asarray)."""
    return xp.NeuronArray(torch.from_numpy(np.array(a, copy=True, order="C")))


def to_numpy(x: xp.NeuronArray) -> np.ndarray:
    return x._t.detach().cpu().resolve_conj().numpy()


def shapes(min_dims: int = 0, max_dims: int = 3, max_side: int = 4) -> st.SearchStrategy:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side)


def arrays(dtype_name: str, shape, *, elements=None) -> st.SearchStrategy:
    """NumPy arrays of a dtype; floats without subnormals (torch flushes them on some CPUs)."""
    dtype = np.dtype(dtype_name)
    if elements is None and dtype.kind in "fc":
        width = 32 if dtype_name in ("float32", "complex64") else 64
        floats = st.floats(width=width, allow_subnormal=False)
        elements = floats if dtype.kind == "f" else st.builds(complex, floats, floats)
    return hnp.arrays(dtype, shape, elements=elements)


def assert_same(actual: xp.NeuronArray, expected: np.ndarray, *, dtype: str | None = None, rtol: float | None = None,
                atol: float = 0.0, scaled: bool = False) -> None:
    """The one comparison of a NeuronArray result with NumPy's (or with a wider reference). Its tolerance policy:

    - the result's dtype and shape always match: ``expected``'s dtype, or ``dtype`` where the reference is
      computed in a wider dtype than the result (then only values are compared with it);
    - values are exact (NaNs in the same places) unless the caller passes ``rtol``: integer and bool results, and
      every operation that NumPy and torch both round correctly (elementwise arithmetic, conversions, data
      movement), must agree bit for bit;
    - with ``rtol`` (inexact results only: reductions summed in another order, decompositions, transforms),
      |got - expected| <= atol + rtol |expected|, with ``atol`` multiplied by max(1, max |expected|) where
      ``scaled`` (a transform's error grows with the signal, not with each output); the caller states the
      operation's own error in units of its dtype's eps;
    - complex values: the real and imaginary parts each within the bound divided by sqrt(2) (so the complex
      difference is within it), and the same infinities in the same places (a difference of two equal complex
      infinities is NaN).
    """
    assert isinstance(actual, xp.NeuronArray), type(actual)
    got = to_numpy(actual)
    expected = np.asarray(expected)
    want = expected.dtype if dtype is None else np.dtype(dtype)
    assert got.dtype == want, (got.dtype, want)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if rtol is None or got.dtype.kind not in "fc":
        assert dtype is None or expected.dtype == want, "an exact comparison needs the reference in the result's dtype"
        np.testing.assert_array_equal(got, expected)
        return
    if scaled:
        atol *= max(1.0, float(np.abs(expected).max(initial=0.0)))
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
        return
    bound = (np.where(np.isfinite(expected), np.abs(expected), 0) * rtol + atol) / np.sqrt(2)
    for part in (np.real, np.imag):
        g, e = part(got), part(expected)
        with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
            ok = (g == e) | (np.isnan(g) & np.isnan(e)) | (np.abs(g - e) <= bound)
        assert ok.all(), f"{part.__name__} parts differ:\n{got}\n{expected}"


@st.composite
def einsum_structures(draw, labels: str, max_operands: int = 4) -> tuple[list[str], list[tuple[int, ...]], str]:
    """(terms, shapes, output) of a random valid einsum over ``labels``: 1 to ``max_operands`` operands of up to
    3 labels each (repeats allowed), sizes 1-3 per label, any output order."""
    n = draw(st.integers(1, max_operands))
    sizes = {c: draw(st.integers(1, 3)) for c in labels}
    terms, shapes = [], []
    for _ in range(n):
        term = "".join(draw(st.lists(st.sampled_from(labels), min_size=0, max_size=3)))
        # a label that occurs once in an operand may be a size-1 dimension broadcast against the others
        shapes.append(tuple(1 if term.count(c) == 1 and draw(st.booleans()) and draw(st.booleans()) else sizes[c]
                            for c in term))
        terms.append(term)
    present = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(present))[:draw(st.integers(0, len(present)))])
    return terms, shapes, output


def numpy_integer_store(value: object, dtype: str) -> int | type[Exception]:
    """What NumPy's rule makes of the Python scalar ``value`` stored into the integer ``dtype``: the int stored,
    or the exception type NumPy raises (NaN: ValueError; an infinity or a value out of range: OverflowError)."""
    if isinstance(value, float):
        if math.isnan(value):
            return ValueError
        if math.isinf(value):
            return OverflowError
        value = int(value)
    info = np.iinfo(dtype)
    return int(value) if info.min <= value <= info.max else OverflowError  # type: ignore[operator]
