"""Every function entry point (entries.py: the dispatch TABLE, NumPy's host fallback for the namespace's
functions, the namespace with linalg and fft, the ufuncs) on drawn NeuronArrays against NumPy 2 on the same
data: outcome (values, dtype, shape, exception class), and the operands' memory afterwards."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp

from .compare import Raised, assert_bases, assert_matches, note, outcome, side
from .differences import Case, relaxations
from .draws import HARNESS, Draw, Operand
from .entries import EXCLUDED, Entry, all_entries, recipe_for

ENTRIES = [e for e in all_entries() if e.id not in EXCLUDED]


def _sorted(result, axis=-1):
    """A partition's result sorted along its axis (NumPy fixes only the kth position)."""
    if isinstance(result, Raised):
        return result
    a = np.asarray(result)
    return np.sort(a, axis=axis) if a.ndim else a


def check_entry(entry: Entry, data: st.DataObject) -> None:
    recipe = recipe_for(entry)
    d = Draw(data)
    args, kwargs = recipe.make(d)
    check_call(entry, args, kwargs, d.operands)


def check_call(entry: Entry, args: tuple, kwargs: dict, operands: list[Operand]) -> None:
    """One call on both sides, compared (outcome, then the operands' memory)."""
    recipe = recipe_for(entry)
    for op in operands:
        op.build()
    d = types.SimpleNamespace(operands=operands)
    case = Case(
        entry.name,
        tuple(op.dtype for op in d.operands),
        tuple(op.layout for op in d.operands),
        args,
        kwargs,
        source=entry.id.split(":", 1)[0],
        nonfinite=any(_nonfinite(op.value) for op in d.operands),
    )
    relax = relaxations(case)
    np_kwargs = dict(kwargs, kind="stable") if "stable" in relax and entry.name in ("sort", "argsort") else kwargs
    note(f"{entry.id}: args={args!r} kwargs={kwargs!r}")
    want = outcome(entry.np_fn, *side(args, "np"), **side(np_kwargs, "np"))
    got = outcome(entry.xp_fn, *side(args, "xp"), **side(kwargs, "xp"))
    note(f"NumPy: {want!r}\nNeuronArray side: {got!r}")
    if recipe.check == "shape" or "shape" in relax:
        # uninitialised memory, or decompositions unique only up to signs/phases: dtype and shape only
        if isinstance(want, Raised) or isinstance(got, Raised):
            assert_matches(got, want, relax=relax, what=entry.id)
        else:
            for g, w in zip(_leaves(got), _leaves(want), strict=True):
                if "dtype" not in relax:  # a documented other dtype (differences.py)
                    assert_matches(g.dtype, w.dtype, what=f"{entry.id} dtype")
                assert_matches(tuple(g.shape), tuple(w.shape), what=f"{entry.id} shape")
    elif recipe.check == "sorted" and not isinstance(got, Raised) and not isinstance(want, Raised):
        assert isinstance(got, xp.NeuronArray), f"{entry.id}: {type(got).__name__} where NumPy returns an ndarray"
        assert_matches(np.asarray(got).dtype, want.dtype, what=f"{entry.id} dtype")
        assert_matches(_sorted(got).tolist(), _sorted(want).tolist(), what=entry.id)
    else:
        assert_matches(got, want, close=recipe.close, relax=relax, what=entry.id)
    assert_bases(d.operands, what=f"{entry.id} operands' memory")


def _nonfinite(value: np.ndarray) -> bool:
    a = np.asarray(value)
    if a.dtype.kind in "biu":
        return False
    with np.errstate(invalid="ignore"):
        return not np.isfinite(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)).all()


def _leaves(result):
    if isinstance(result, tuple | list):
        return [leaf for r in result for leaf in _leaves(r)]
    return [result] if hasattr(result, "dtype") else []


@pytest.mark.parametrize("entry", ENTRIES, ids=repr)
@HARNESS
@given(data=st.data())
def test_entry_point(entry: Entry, data: st.DataObject) -> None:
    check_entry(entry, data)
