"""Writes: a drawn target (a view in one of draws.WRITE_LAYOUTS, optionally seen through a NumPy function that
NumPy documents as returning a view) written by one of the write patterns below, on both sides. What is
compared is the outcome (NumPy's exception class where NumPy refuses the write, e.g. into a read-only view) and
the whole base arrays afterwards: a write must land in the same places, and nothing else may change."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .compare import NO_REFERENCE, RAISED, assert_bases, assert_matches, note, outcome, side
from .differences import Case, relaxations
from .draws import ALL, HARNESS, WRITE_LAYOUTS, Draw, Operand

# How the target is seen before the write: NumPy returns a view for each of these (read-only for broadcast_to
# and diagonal), so a write through it reaches the base, or raises.
VIEWS = {
    "itself": lambda x: x,
    "slice": lambda x: x[1:] if x.ndim else x,
    "reversed": lambda x: x[::-1] if x.ndim else x,
    "reshape": lambda x: np.reshape(x, (-1,)),
    "ravel": np.ravel,
    "transpose": np.transpose,
    "swapaxes": lambda x: np.swapaxes(x, 0, -1) if x.ndim else x,
    "expand_dims": lambda x: np.expand_dims(x, 0),
    "squeeze": np.squeeze,
    "moveaxis": lambda x: np.moveaxis(x, 0, -1) if x.ndim else x,
    "flip": np.flip,
    "rot90": lambda x: np.rot90(x) if x.ndim >= 2 else x,
    "diagonal": lambda x: np.diagonal(x) if x.ndim >= 2 else x,
    "broadcast_to": lambda x: np.broadcast_to(x, (2, *x.shape)),
    "real": np.real,
    "imag": np.imag,
    "asarray": np.asarray,
    "copy.copy": copy.copy,
    "x.T": lambda x: x.T if x.ndim == 2 else x,  # the array API's x.T is 2-d only
    "x.real": lambda x: x.real,
    "x.imag": lambda x: x.imag,
}


def _copyto(t, v):
    np.copyto(t, v)


def _setitem_all(t, v):
    t[...] = v


def _setitem_first(t, v):
    t[(0,) * t.ndim if t.ndim else ()] = v


def _fill(t, v):
    t.fill(v)


def _flat(t, v):
    t.flat[0] = v


def _iadd(t, v):
    t += v


def _out(t, v):
    np.add(t, v, out=t)


def _ufunc_out(t, v):
    np.negative(v, out=t)


WRITES = {
    "copyto": _copyto,
    "setitem ...": _setitem_all,
    "setitem first": _setitem_first,
    "fill": _fill,
    "flat[0]": _flat,
    "+=": _iadd,
    "add out=": _out,
    "negative out=": _ufunc_out,
}


@pytest.mark.parametrize("write", sorted(WRITES))
@HARNESS
@given(data=st.data())
def test_write(write: str, data: st.DataObject) -> None:
    d = Draw(data, layouts=WRITE_LAYOUTS)
    target = d.array(min_dims=d.pick((0, 1, 2)), min_side=1, max_side=3)
    view = d.pick(sorted(VIEWS))
    if write in ("fill", "flat[0]") or d(st.booleans()):
        value = d.scalar()
    else:
        value = d.array(d.pick((target.dtype, *ALL)), shape=d.pick(((), (1,))), layouts=("contiguous",))
    check_write(write, view, target, value, d.operands)


def check_write(write: str, view: str, target: Operand, value, operands: list[Operand]) -> None:
    """``WRITES[write]`` into ``VIEWS[view](target)`` of ``value``, on both sides, compared."""
    for op in operands:
        op.build()
    case = Case(
        write,
        tuple(op.dtype for op in operands),
        tuple(op.layout for op in operands),
        (view,),
        {"value": value},
        kind="write",
        source="write",
    )
    note(f"{write} into {view}({target!r}) of {value!r}")

    def run(which: str):
        def go():
            t = VIEWS[view](side(target, which))
            WRITES[write](t, side(value, which))

        return outcome(go)

    want, got = run("np"), run("xp")
    note(f"NumPy: {want!r}\nNeuronArray side: {got!r}")
    relax = relaxations(case)
    documented = assert_matches(got, want, relax=relax, what=f"{write} through {view} into {target.layout}")
    if documented == NO_REFERENCE:
        return  # NumPy wrote nothing to compare the memory with
    assert_bases(
        operands,
        what=f"{write} through {view} into {target.layout}: memory",
        unchanged=documented == RAISED,
        close=1.0 if "ulp" in relax else None,
    )
