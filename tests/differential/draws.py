"""Hypothesis strategies of the differential harness: dtypes, values (special ones included), shapes, and the
layouts a NeuronArray operand comes in, each built the same way on both sides (a NeuronArray and an ndarray
over copies of the same data), so a call can run on both and their base arrays can be compared afterwards."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
import torch
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp

# `make test` keeps the harness to a few examples per entry point (it has several hundred entry points);
# `make fuzz` raises TRN_FUZZ_EXAMPLES (and sets TRN_TEST_RANDOMIZE=1 for fresh examples).
# A failing example is shrunk only where TRN_FUZZ_SHRINK=1 (`make fuzz`): with several hundred entry points,
# shrinking every failure would multiply the suite's time; the unshrunk example is printed with its arguments.
EXAMPLES = int(os.environ.get("TRN_FUZZ_EXAMPLES", "6"))
SHRINK = os.environ.get("TRN_FUZZ_SHRINK") == "1"
HARNESS = settings(
    max_examples=EXAMPLES, phases=tuple(p for p in Phase if SHRINK or p is not Phase.shrink), report_multiple_bugs=False
)

BOOL = ("bool",)
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTS = SIGNED + UNSIGNED
FLOATS = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
INEXACT = FLOATS + COMPLEX
REAL = INTS + FLOATS
NUMERIC = REAL + COMPLEX
# Hypothesis' first examples take the first option of each choice: float64 first, so an entry point's first
# draw is not a bool one (a bool failure would hide everything else that entry point gets wrong)
ALL = (
    "float64",
    "int64",
    "complex128",
    "float32",
    "int32",
    "uint8",
    *BOOL,
    *(n for n in NUMERIC if n not in ("float64", "int64", "complex128", "float32", "int32", "uint8")),
)
# what torch's linear algebra and FFTs take (NumPy's take ints too: both are drawn, see recipes)
LINALG = ("float32", "float64", "complex64", "complex128")


def np_dtype(name: str) -> np.dtype:
    """NumPy's dtype of a name; bfloat16 is ml_dtypes' (what trn_backend.bfloat16 is)."""
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def specials(name: str) -> list[Any]:
    """The values where implementations disagree most: zeros of both signs, infinities, nan, the smallest
    subnormal and normal, the extremes of the dtype, and 1, -1."""
    if name == "bool":
        return [False, True]
    dt = np_dtype(name)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return [0, 1, info.max, info.min, info.max - 1, info.min + 1] + ([-1] if dt.kind == "i" else [])
    real = np_dtype({"complex64": "float32", "complex128": "float64"}.get(name, name))
    fi = ml_dtypes.finfo(real)
    tiny = float(fi.smallest_subnormal)
    values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        np.inf,
        -np.inf,
        np.nan,
        tiny,
        -tiny,
        float(fi.smallest_normal),
        float(fi.max),
        float(fi.min),
        0.5,
        2.0,
    ]
    if dt.kind == "c":
        values += [complex(np.nan, 0.0), complex(0.0, np.inf), complex(np.inf, np.nan), complex(-1.0, 1.0)]
    return values


def values(name: str) -> st.SearchStrategy:
    """Elements of a dtype: its special values half of the time, any value of it otherwise."""
    if name == "bool":
        return st.booleans()
    dt = np_dtype(name)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return st.one_of(
            st.sampled_from(specials(name)),
            st.integers(-3, 3).filter(lambda v: v >= info.min),
            st.integers(int(info.min), int(info.max)),
        )
    width = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64, "complex64": 32, "complex128": 64}[name]
    finite = st.one_of(st.integers(-4, 4).map(float), st.floats(width=width, allow_nan=False, allow_infinity=False))
    special = st.sampled_from([v for v in specials(name) if not isinstance(v, complex)])
    real = st.one_of(special, finite, finite)
    if dt.kind == "c":
        return st.one_of(
            st.builds(complex, real, real), st.sampled_from([v for v in specials(name) if isinstance(v, complex)])
        )
    return real


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 4) -> st.SearchStrategy:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def data_arrays(name: str, shape: tuple[int, ...]) -> st.SearchStrategy:
    """ndarrays of a dtype (bfloat16 drawn as float32 and rounded: hypothesis has no bfloat16)."""
    drawn = "float32" if name == "bfloat16" else name
    return hnp.arrays(np.dtype(drawn), shape, elements=values(name)).map(lambda a: a.astype(np_dtype(name)))


# Python scalars as the other operand: weak in NEP 50, and ints beyond int64/uint64 (NumPy raises OverflowError
# where one does not fit the array's dtype).
BIG_INTS = (2**63, 2**64, 2**63 - 1, -(2**63), -(2**63) - 1, 2**64 - 1, 2**100, -(2**100))
PY_SCALARS = st.one_of(
    st.sampled_from([0, 1, -1, 2, 255, 256, -129, *BIG_INTS]),
    st.sampled_from(
        [True, False, 0.5, -0.0, 1e300, float("inf"), float("nan"), 1e-310, complex(1, -1), complex(float("nan"), 0)]
    ),
    st.integers(-1000, 1000),
    st.floats(width=64),
)


# --- layouts: how the operand's memory is arranged. Each is built the same way on both sides from the logical
# value, over a base array that the harness compares after the call.

LAYOUTS = ("contiguous", "reversed", "strided", "transposed", "broadcast", "readonly")
# write targets only (see test_writes): views whose writes NumPy sends into the base
WRITE_LAYOUTS = (
    "contiguous",
    "reversed",
    "strided",
    "transposed",
    "reshape_of_reversed",
    "lazy_conj",
    "real_part",
    "imag_part",
    "imag_of_real",
    "readonly",
    "broadcast",
)


def neuron(a: np.ndarray) -> xp.NeuronArray:
    """A NeuronArray over a copy of ``a`` (xp.asarray of an ndarray shares it; the copy keeps the sides apart)."""
    return xp.asarray(np.array(a, copy=True, order="C"))


def _readonly_neuron(a: np.ndarray) -> xp.NeuronArray:
    """A read-only NeuronArray: one over a torch inference tensor (what trn_backend's read-only arrays are)."""
    t = neuron(a).to_torch()
    with torch.inference_mode():
        t = t.clone()
    return xp.from_torch(t)


def _transpose(x: Any) -> Any:
    axes = tuple(reversed(range(x.ndim)))
    return np.transpose(x, axes) if isinstance(x, np.ndarray) else xp.permute_dims(x, axes)


def _build(layout: str, a: np.ndarray, filler: np.ndarray | None) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """((ndarray view, ndarray base), (NeuronArray view, NeuronArray base)) holding ``a`` in ``layout``."""
    if layout == "contiguous":
        nb = a.copy()
        xb = neuron(nb)
        return (nb, nb), (xb, xb)
    if layout == "reversed":
        nb = np.flip(a, 0).copy() if a.ndim else a.copy()
        xb = neuron(nb)
        if a.ndim == 0:
            return (nb, nb), (xb, xb)
        return (nb[::-1], nb), (xb[::-1], xb)
    if layout == "strided":
        if a.ndim == 0:
            return _build("contiguous", a, filler)
        nb = np.repeat(a, 2, axis=0) if filler is None else filler.copy()
        nb[::2] = a
        xb = neuron(nb)
        return (nb[::2], nb), (xb[::2], xb)
    if layout == "transposed":
        nb = _transpose(a).copy()
        xb = neuron(nb)
        return (_transpose(nb), nb), (_transpose(xb), xb)
    if layout == "broadcast":
        if a.ndim == 0:
            return _build("contiguous", a, filler)
        nb = a[:1].copy()
        xb = neuron(nb)
        return (np.broadcast_to(nb, a.shape), nb), (xp.broadcast_to(xb, a.shape), xb)
    if layout == "readonly":
        nb = a.copy()
        nb.setflags(write=False)
        xb = _readonly_neuron(nb)
        return (nb, nb), (xb, xb)
    if layout == "reshape_of_reversed":
        # a view in NumPy: reshape of a 1-d reversed view
        nb = a.reshape(-1)[::-1].copy()
        xb = neuron(nb)
        return (nb[::-1].reshape(a.shape), nb), (xp.reshape(xb[::-1], a.shape), xb)
    if layout == "lazy_conj":
        # from_torch of a tensor with torch's lazy conjugate bit: NumPy's counterpart is a plain array
        nb = a.copy()
        xb = xp.from_torch(torch.from_numpy(np.conj(nb).copy()).conj())
        return (nb, nb), (xb, xb)
    if layout in ("real_part", "imag_part"):
        # a complex base; the operand is its .real or .imag (a strided view into the complex storage)
        nb = np.empty(a.shape, np.complex128 if a.dtype == np.float64 else np.complex64)
        nb.real, nb.imag = (a, 0.5) if layout == "real_part" else (0.5, a)
        xb = neuron(nb)
        part = "real" if layout == "real_part" else "imag"
        return (getattr(nb, part), nb), (getattr(xb, part), xb)
    if layout == "imag_of_real":
        nb = np.zeros_like(a)
        xb = neuron(nb)
        return (nb.imag, nb), (xb.imag, xb)
    raise ValueError(layout)


@dataclass(eq=False)
class Operand:
    """An array argument of a drawn call: its logical value, its dtype's name and layout; ``np`` and ``xp`` are
    the view each side calls with, ``np_base``/``xp_base`` what is compared after the call."""

    value: np.ndarray
    dtype: str
    layout: str = "contiguous"
    filler: np.ndarray | None = None
    built: tuple | None = field(default=None, repr=False)
    before: np.ndarray | None = field(default=None, repr=False)

    def build(self) -> None:
        self.built = _build(self.layout, self.value, self.filler)
        # the NeuronArray side's base before the call: where a documented difference makes the call raise instead
        # of writing, this is what its base must still hold
        self.before = np.array(np.asarray(self.xp_base))

    @property
    def np(self) -> Any:
        return self.built[0][0]

    @property
    def np_base(self) -> np.ndarray:
        return self.built[0][1]

    @property
    def xp(self) -> Any:
        return self.built[1][0]

    @property
    def xp_base(self) -> Any:
        return self.built[1][1]

    def __repr__(self) -> str:
        return f"Operand({self.layout}, {self.dtype}, {self.value!r})"


def layout_ok(layout: str, dtype: str, shape: tuple[int, ...]) -> bool:
    """Where a layout applies: part views need float parts; the lazy conjugate a complex dtype."""
    if layout in ("real_part", "imag_part", "imag_of_real"):
        return dtype in ("float32", "float64")
    if layout == "lazy_conj":
        return dtype in COMPLEX
    if layout == "reshape_of_reversed":
        return len(shape) >= 1
    return True


class Draw:
    """What a recipe draws with: ``d.array(...)`` an Operand (any dtype, shape and layout unless narrowed),
    ``d(strategy)`` any other value. The operands are kept, so the harness can build and compare them."""

    def __init__(self, data: st.DataObject, layouts: tuple[str, ...] = LAYOUTS) -> None:
        self.data = data
        self.layouts = layouts
        self.operands: list[Operand] = []

    def __call__(self, strategy: st.SearchStrategy) -> Any:
        return self.data.draw(strategy)

    def pick(self, options):
        return self(st.sampled_from(list(options)))

    def array(
        self,
        dtypes: tuple[str, ...] | str = ALL,
        shape: tuple[int, ...] | None = None,
        *,
        min_dims: int = 0,
        max_dims: int = 3,
        min_side: int = 0,
        max_side: int = 4,
        layouts: tuple[str, ...] | None = None,
        value: np.ndarray | None = None,
    ) -> Operand:
        dtype = dtypes if isinstance(dtypes, str) else self.pick(dtypes)
        if shape is None:
            shape = self(shapes(min_dims, max_dims, min_side, max_side))
        shape = tuple(shape)
        a = self(data_arrays(dtype, shape)) if value is None else value.astype(np_dtype(dtype))
        usable = [name for name in (layouts or self.layouts) if layout_ok(name, dtype, shape)]
        op = Operand(a, dtype, self.pick(usable))
        self.operands.append(op)
        return op

    def like(self, op: Operand, dtypes: tuple[str, ...] | str | None = None, broadcast: bool = True) -> Operand:
        """A second operand broadcastable with ``op``: its shape, a suffix of it, or it with 1s in places."""
        shape = op.value.shape
        if broadcast and shape:
            kind = self.pick(("same", "suffix", "ones"))
            if kind == "suffix":
                shape = shape[self(st.integers(0, len(shape))) :]
            elif kind == "ones":
                shape = tuple(1 if self(st.booleans()) else s for s in shape)
        return self.array(op.dtype if dtypes is None else dtypes, shape)

    def dtype_arg(self, dtypes: tuple[str, ...] = ALL, none: bool = False) -> np.dtype | None:
        """A dtype argument, as NumPy's dtype object (bfloat16 is ml_dtypes', which NumPy's strings lack)."""
        name = self.pick(((None,) if none else ()) + tuple(dtypes))
        return None if name is None else np_dtype(name)

    def axis(self, op: Operand, none: bool = True) -> int | None:
        n = op.value.ndim
        options = ([None] if none else []) + list(range(-n, n))
        return self.pick(options) if options else None

    def scalar(self) -> Any:
        return self(PY_SCALARS)
