"""Pinned draws: specific inputs the random draws reach only now and then (a few examples per entry point in
`make test`), run through the same comparisons (test_functions.check_call, test_writes.check_write) so every run
draws them. Each is a value that has exposed a bug class (see each comment); none is an expected failure: a
failure here is a bug, until it is fixed."""

from __future__ import annotations

import numpy as np
import pytest

from .draws import Operand
from .entries import all_entries
from .test_functions import check_call
from .test_writes import check_write

ENTRIES = {e.id: e for e in all_entries()}


def op(value, layout: str = "contiguous", dtype: str | None = None) -> Operand:
    a = (
        np.asarray(value)
        if dtype is None
        else np.asarray(value).astype(np.dtype(dtype) if dtype != "bfloat16" else __import__("ml_dtypes").bfloat16)
    )
    return Operand(a, "bfloat16" if dtype == "bfloat16" else str(a.dtype), layout)


# entry id, args, kwargs: Operands among the args are built on both sides
CALLS = {
    # complex products with nan/inf
    "vdot complex nan": ("numpy:vdot", (op([np.nan + 1j, 1 + 0j]), op([1 + 0j, 1j])), {}),
    "vecdot complex inf": ("namespace:vecdot", (op([np.inf + 0j, 1 + 1j]), op([1 + 0j, 1j])), {}),
    "linalg.vecdot complex nan": ("numpy:linalg.vecdot", (op([complex(1, np.nan)]), op([1j])), {}),
    # FFTs over an empty batch axis
    "fft empty batch": ("numpy:fft.fft", (op(np.zeros((0, 4))),), {}),
    "rfft empty batch": ("numpy:fft.rfft", (op(np.zeros((0, 4), np.float32)),), {}),
    "fftn empty batch": ("numpy:fft.fftn", (op(np.zeros((0, 2, 2), np.complex64)),), {"axes": (-2, -1)}),
    "xp fft empty batch": ("namespace:fft.fft", (op(np.zeros((2, 0, 3))),), {}),
    # an infinity in the shorter operand of convolve/correlate (zero padding times inf is nan)
    "convolve inf": ("numpy:convolve", (op([1.0, 2.0, 3.0]), op([1.0, np.inf])), {}),
    "correlate inf": ("numpy:correlate", (op([1.0, 2.0]), op([np.inf, 1.0, 1.0])), {"mode": "full"}),
    # constant_values beyond the dtype: NumPy raises OverflowError
    "pad out of range": ("numpy:pad", (op(np.zeros(2, np.int8)), 1), {"constant_values": 300}),
    "pad uint8 negative": ("numpy:pad", (op(np.zeros(2, np.uint8)), 1), {"constant_values": -1}),
    # ints beyond 2**53 next to floats in a list, converted to int64
    "asarray big int list": ("namespace:asarray", ([2**62 + 1, 1.0],), {"dtype": np.int64}),
    "asarray big int like": (
        "numpy:asarray",
        ([2**62 + 1, 1.0],),
        {"dtype": np.int64, "like": op(np.zeros(1, np.int64))},
    ),
    # a Python int beyond int64 beside a bfloat16 array: NumPy with ml_dtypes raises OverflowError (it has no
    # answer, differences.py); the logical ufunc takes the int's truth value
    "logical_and bfloat16 big int": (
        "ufunc:logical_and",
        (2**64 - 1, op(np.array([[np.nan], [2.0]]), dtype="bfloat16")),
        {},
    ),
    # NumPy functions whose host fallback answered an ndarray: they must give NeuronArrays
    "eigvals": ("numpy:linalg.eigvals", (op(np.eye(2)),), {}),
    "asfortranarray": ("numpy:asfortranarray", (x := op(np.eye(2)),), {"like": x}),
}

# write, view, target, value
WRITES = {
    # writes that land nowhere
    "copyto lazy conj": ("copyto", "itself", op([1 + 2j, 3 - 1j], "lazy_conj"), 5 + 5j),
    "copyto reshape of reversed": ("copyto", "itself", op([1.0, 2.0, 3.0, 4.0], "reshape_of_reversed"), 9.0),
    "copyto imag of real": ("copyto", "itself", op([1.0, 2.0], "imag_of_real"), 7.0),
    "setitem real part": ("setitem first", "itself", op([1.0, 2.0], "real_part"), 7.0),
    "broadcast_to writable": ("setitem first", "broadcast_to", op([1, 2, 3]), 9),
    "diagonal writable copy": ("setitem first", "diagonal", op(np.arange(4.0).reshape(2, 2)), 9.0),
    "flip copy": ("setitem first", "flip", op(np.arange(3.0)), 9.0),
    "rot90 copy": ("setitem first", "rot90", op(np.arange(4.0).reshape(2, 2)), 9.0),
    "copy.copy shares": ("setitem first", "copy.copy", op(np.arange(3.0)), 9.0),
    "read-only write": ("setitem first", "itself", op(np.arange(3.0), "readonly"), 9.0),
    # Python ints beyond int64 into bfloat16: the reference (NumPy with ml_dtypes) raises TypeError for fill and
    # x[...] = alike, so it has no answer (differences.py); both must still not crash here
    "bfloat16 fill big int": ("fill", "itself", op([0.0, 1.0], dtype="bfloat16"), 2**64),
    "bfloat16 setitem big int": ("setitem ...", "itself", op([0.0, 1.0], dtype="bfloat16"), 2**64),
    # a Python int that float32 cannot hold: NumPy rounds it twice (to float64, then float32), trn_backend once,
    # in fill and x[...] = alike (differences.py: within one ulp; tests/namespace/test_scalar_conversion.py
    # checks the rounding exactly)
    "float32 fill big int": ("fill", "itself", op([0.0], dtype="float32"), 2**60 + 2**36 + 1),
    "float32 setitem big int": ("setitem ...", "itself", op([0.0], dtype="float32"), 2**60 + 2**36 + 1),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_pinned_call(name: str) -> None:
    entry_id, args, kwargs = CALLS[name]
    operands = list({id(a): a for a in (*args, *kwargs.values()) if isinstance(a, Operand)}.values())
    check_call(ENTRIES[entry_id], args, kwargs, operands)


@pytest.mark.parametrize("name", sorted(WRITES))
def test_pinned_write(name: str) -> None:
    write, view, target, value = WRITES[name]
    check_write(write, view, target, value, [target])
