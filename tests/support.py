"""Test support: conversions to and from NumPy, hypothesis strategies over the standard's dtypes, and the one
comparison of a result with NumPy's (``assert_same``, whose docstring states the tolerance policy)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp

DTYPE_NAMES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
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


def eps(dtype: object) -> float:
    """The machine epsilon of a floating or complex dtype (bfloat16 included; a complex dtype's is its parts')."""
    dtype = np.dtype(dtype)
    if dtype == np.dtype(ml_dtypes.bfloat16):
        return float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)
    return float(np.finfo(dtype).eps)


def is_inexact(dtype: np.dtype) -> bool:
    """Floating or complex, bfloat16 included (NumPy gives ml_dtypes' bfloat16 the kind "V")."""
    return dtype.kind in "fc" or dtype == np.dtype(ml_dtypes.bfloat16)


def _host(x: xp.NeuronArray) -> np.ndarray:
    """A NeuronArray's values on the host (bfloat16, which torch cannot hand to NumPy, through np.asarray)."""
    return np.asarray(x) if x.dtype == xp.bfloat16 else to_numpy(x)


Tolerance = float | Mapping[str, float] | None


def _for(tolerance: Tolerance, dtype: np.dtype) -> float | None:
    """A tolerance given as one number, or by the name of the result's dtype (a dtype it leaves out: None)."""
    return tolerance.get(dtype.name) if isinstance(tolerance, Mapping) else tolerance


def assert_same(
    actual: xp.NeuronArray,
    expected: object,
    *,
    dtype: str | None = None,
    ulps: float | None = None,
    rtol: Tolerance = None,
    atol: Tolerance = 0.0,
    scaled: bool = False,
    nan_parts: bool = True,
    what: str = "result",
) -> None:
    """The one comparison of a NeuronArray result with NumPy's answer (or with a reference in a wider dtype). Its
    tolerance policy:

    - the result is a NeuronArray, and its dtype and shape always match: ``expected``'s dtype, or ``dtype`` where
      the reference is computed in a wider dtype than the result (then the reference is rounded to ``dtype``);
    - values are exact (NaNs in the same places, a complex value with a NaN part counting as NaN, as NumPy's
      testing counts it; -0.0 equals 0.0) unless the caller passes ``ulps`` or ``rtol``:
      integer and bool results, and every operation that NumPy and torch both round correctly (elementwise
      arithmetic, conversions, data movement), must agree bit for bit, and stay exact whatever tolerance is passed;
    - a floating or complex result with a tolerance, which the caller states with its reason (the operation's own
      error: a sum in another order, a decomposition, a transform):
      |got - expected| <= atol * S + rtol * |expected|, where S is 1, or with ``scaled`` the largest finite
      |expected| (at least 1: a transform's or a sum's error grows with its largest term, not with each output);
      ``ulps=k`` is rtol = atol = k eps of the result's dtype; ``rtol`` and ``atol`` are numbers, or mappings from
      the result dtype's name to its tolerance (a dtype left out compares exactly);
    - infinities equal in the same places; complex values: the real and imaginary parts each within the bound
      divided by sqrt(2) (so the complex difference is within it), and each part's NaNs in the same places
      (``nan_parts=False``: a complex NaN counts as one, as in the exact comparison).
    """
    assert isinstance(actual, xp.NeuronArray), f"{what}: {type(actual).__name__} where a NeuronArray was expected"
    assert_same_array(
        _host(actual),
        expected,
        dtype=dtype,
        ulps=ulps,
        rtol=rtol,
        atol=atol,
        scaled=scaled,
        nan_parts=nan_parts,
        what=what,
    )


def assert_same_array(
    got: np.ndarray,
    expected: object,
    *,
    dtype: str | None = None,
    ulps: float | None = None,
    rtol: Tolerance = None,
    atol: Tolerance = 0.0,
    scaled: bool = False,
    nan_parts: bool = True,
    what: str = "result",
) -> None:
    """assert_same's policy for a result that is an ndarray by design (a NeuronArray's base on the host, a
    library's NumPy path, a sharded array gathered): the same checks, without the NeuronArray one."""
    got, expected = np.asarray(got), np.asarray(expected)
    want = expected.dtype if dtype is None else np.dtype(dtype)
    assert got.dtype == want, f"{what}: dtype {got.dtype}, expected {want}"
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    expected = expected.astype(want, copy=False)
    if ulps is not None:
        assert rtol is None and not atol, "ulps= stands for rtol= and atol=: give one or the other"
        rtol = atol = ulps * eps(want) if is_inexact(want) else None
    rtol, atol = _for(rtol, want), _for(atol, want) or 0.0
    if want == np.dtype(ml_dtypes.bfloat16):  # exact in float32, which NumPy's functions handle
        got, expected = got.astype(np.float32), expected.astype(np.float32)
    if rtol is None or not is_inexact(want):
        np.testing.assert_array_equal(got, expected, err_msg=what)
        return
    g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    e = expected.astype(g.dtype)
    magnitude = np.where(np.isfinite(e), np.abs(e), 0.0)
    scale = max(1.0, float(magnitude.max(initial=0.0))) if scaled else 1.0
    bound = atol * scale + rtol * magnitude
    if g.dtype.kind == "c":
        bound = bound / np.sqrt(2)
        if not nan_parts:  # a complex NaN on both sides is the same value, whichever parts are NaN
            both = np.isnan(g) & np.isnan(e)
            g, e = np.where(both, np.nan, g), np.where(both, np.nan, e)
    for part in (np.real, np.imag) if g.dtype.kind == "c" else (np.asarray,):
        pg, pe = part(g), part(e)
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf where both are the same infinity
            difference = np.abs(pg - pe)
            ok = (pg == pe) | (np.isnan(pg) & np.isnan(pe)) | (difference <= bound)
        if not ok.all():
            raise AssertionError(
                f"{what}: {int((~ok).sum())} of {ok.size} values differ beyond atol={atol:g}"
                f"{f' x {scale:g}' if scaled else ''} + rtol={rtol:g} |expected| (the largest difference "
                f"{float(np.max(np.where(ok, 0.0, np.nan_to_num(difference, nan=np.inf)))):g})\n"
                f" got {got}\nwant {expected}"
            )


def assert_same_results(ours: object, theirs: object, **tolerance: Any) -> None:
    """assert_same over a call's whole answer: NumPy's arrays and NumPy scalars each against a NeuronArray (a
    NumPy scalar against a 0-d one), tuples and lists element by element (the same length), other Python values
    (shapes, ints, bools) by equality, and not as NeuronArrays. ``tolerance``: assert_same's keywords."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)), f"{type(ours).__name__} where NumPy gives {type(theirs).__name__}"
        assert len(ours) == len(theirs), (len(ours), len(theirs))
        for o, t in zip(ours, theirs, strict=True):
            assert_same_results(o, t, **tolerance)
        return
    if not isinstance(theirs, (np.ndarray, np.generic)):
        assert not isinstance(ours, xp.NeuronArray) and ours == theirs, (ours, theirs)
        return
    assert_same(ours, theirs, **tolerance)


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
        shapes.append(
            tuple(1 if term.count(c) == 1 and draw(st.booleans()) and draw(st.booleans()) else sizes[c] for c in term)
        )
        terms.append(term)
    present = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(present))[: draw(st.integers(0, len(present)))])
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
