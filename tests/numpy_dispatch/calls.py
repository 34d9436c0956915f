"""Running a NumPy function on NeuronArrays and on the same ndarrays, for the tests of
trn_backend/numpy_dispatch/: the conversions, the calls on both sides, the comparisons of their answers, the
``Case`` rows of the per-section ``CASES`` tables (each section's test file runs its own table through
``test_agrees_with_numpy``) with the operands they share, and the hypothesis strategies of the drawn tests."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import DTYPE_NAMES, arrays, assert_same_results, from_numpy, shapes, to_numpy

rng = np.random.default_rng(1234)
M = rng.standard_normal((3, 4))
N = rng.standard_normal((4, 5))
T3 = rng.standard_normal((2, 3, 4))
V = rng.standard_normal(4)
W = rng.standard_normal(4)
SQ = rng.standard_normal((3, 3))
SPD = SQ @ SQ.T + 3 * np.eye(3)
STACK_SPD = np.stack([SPD, 2 * SPD])
I = rng.integers(-5, 6, (3, 4))
SORTED = np.sort(rng.standard_normal(6))
BOOL = rng.standard_normal((3, 4)) > 0
CPLX = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
F32 = rng.standard_normal((3, 4)).astype(np.float32)
WITH_NAN = np.array([3.0, np.nan, 1.0, np.nan, 1.0, -2.0])


# the operands the tables drew inline, in the order they drew them
M52 = rng.standard_normal((5, 2))
M52B = rng.standard_normal((5, 2))
T342 = rng.standard_normal((3, 4, 2))
T243 = rng.standard_normal((2, 4, 3))
M24 = rng.standard_normal((2, 4))


# ---------------------------------------------------------------- comparison


def _neuron(value: Any) -> Any:
    """ndarrays (also inside lists and tuples) as NeuronArrays."""
    if isinstance(value, np.ndarray):
        return from_numpy(value)
    if isinstance(value, list):
        return [_neuron(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_neuron(v) for v in value)
    return value


def run_both(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            theirs = func(*args, **kwargs)
    return func(*_neuron(args), **_neuron(kwargs)), theirs


DEVICE = xp.asarray(np.zeros(1)).device

# Tolerances of answers computed in another order than NumPy's (sums, factorizations, transforms: torch's float32
# sums are pairwise), relative, by the result's dtype; assert_same keeps integer and bool results exact.
OTHER_ORDER = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-10, "complex128": 1e-10}
# the statistics add float16's (NumPy's float16 medians and quantiles interpolate in float16), with atol=1e-12
STATISTICS = {"float16": 1e-2, **OTHER_ORDER}


def assert_on_device(ours: Any) -> None:
    """Every NeuronArray of an answer is on DEVICE: inputs live on the default device, so running the tests with
    TRN_BACKEND_DEVICE=cuda checks the routines there."""
    if isinstance(ours, (tuple, list)):
        for o in ours:
            assert_on_device(o)
    elif isinstance(ours, xp.NeuronArray):
        assert ours.device == DEVICE, ours.device


def nd(value: Any) -> Any:
    """ndarrays (also inside lists and tuples) as NeuronArrays on the default device; other values as they are."""
    if isinstance(value, np.ndarray):
        return xp.asarray(value)
    if isinstance(value, list):
        return [nd(v) for v in value]
    if isinstance(value, tuple):
        return tuple(nd(v) for v in value)
    return value


def both(func: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """(func on NeuronArrays, func on the ndarrays); NumPy's warnings are silenced for its own call only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = func(*args, **kwargs)
    return func(*nd(args), **nd(kwargs)), theirs


def agree(func: Any, *args: Any, rtol: Any = None, atol: Any = 0.0, nan_parts: bool = True, **kwargs: Any) -> None:
    """func on NeuronArrays gives NumPy's answer on the ndarrays (assert_same's policy: exact unless ``rtol`` is
    given), every NeuronArray of it on DEVICE."""
    ours, theirs = both(func, *args, **kwargs)
    assert_on_device(ours)
    assert_same_results(ours, theirs, rtol=rtol, atol=atol, nan_parts=nan_parts)


def raises_like_numpy(exc: type[BaseException], func: Any, *args: Any, match: str | None = None, **kwargs: Any) -> None:
    """NumPy raises exc for the ndarrays, and so do we for the NeuronArrays (our message may say more)."""
    with pytest.raises(exc):
        func(*args, **kwargs)
    with pytest.raises(exc, match=match):
        func(*nd(args), **nd(kwargs))


def _neuron_array(value: Any) -> Any:
    return from_numpy(value) if isinstance(value, np.ndarray) else value


def numpy_quietly(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    """NumPy's answer and the messages of its RuntimeWarnings other than floating-point errors (which torch
    does not report)."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    return result, sorted({str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)})


def agrees(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """func on NeuronArrays gives NumPy's result on ndarrays, with the same RuntimeWarnings."""
    expected, numpy_warnings = numpy_quietly(func, *args, **kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = func(*(_neuron_array(a) for a in args), **{k: _neuron_array(v) for k, v in kwargs.items()})
    assert sorted({str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)}) == numpy_warnings
    assert_same_results(ours, expected, rtol=STATISTICS, atol=1e-12)
    return ours


# ---------------------------------------------------------------- the per-section tables


@dataclasses.dataclass
class Case:
    func: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    dtype: str | None = None  # the dtype we document where it differs from NumPy's
    atol: float = 0.0
    post: Callable[[Any], Any] | None = None  # applied to both answers (e.g. sign-free parts of a decomposition)

    def __str__(self) -> str:
        return f"{self.func.__module__}.{self.func.__name__}"


def _abs_parts(result: Any) -> Any:
    """Decompositions up to signs: compare magnitudes."""
    return type(result)(*(np.abs(np.asarray(r)) for r in result)) if isinstance(result, tuple) else result


def _abs(result: Any) -> Any:
    return np.abs(np.asarray(result))


def _apply(case: Case, result: Any) -> Any:
    return case.post(result) if case.post else result


def _numpy_tree(value: Any) -> Any:
    """Our answer as NumPy (for post-processing with NumPy functions), structure kept."""
    if isinstance(value, xp.NeuronArray):
        return to_numpy(value)
    if isinstance(value, tuple):
        return type(value)(*map(_numpy_tree, value)) if hasattr(value, "_fields") else tuple(map(_numpy_tree, value))
    if isinstance(value, list):
        return [_numpy_tree(v) for v in value]
    return value


# ---------------------------------------------------------------- hypothesis: shapes and dtypes


@st.composite
def array_and_axis(draw, dtype_names=DTYPE_NAMES, min_dims=0, elements=None):
    dtype_name = draw(st.sampled_from(dtype_names))
    a = draw(arrays(dtype_name, shapes(min_dims=min_dims), elements=elements and elements(dtype_name)))
    axis = draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    return a, axis


def _small(dtype_name: str) -> st.SearchStrategy:
    """Values whose sums and products stay in range, so only rounding separates us from NumPy."""
    kind = np.dtype(dtype_name).kind
    if kind == "b":
        return st.booleans()
    if kind in "iu":
        return st.integers(0 if kind == "u" else -3, 3)
    # multiples of 1/8: no subnormal products (whose rounding torch and NumPy may do differently)
    return st.integers(-32, 32).map(lambda i: i / 8)
