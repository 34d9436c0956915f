"""ndarray's methods on NeuronArray run the NumPy dispatch table's implementation directly: no frame of NumPy's
own Python code runs between the method and the table (NumPy's function wrappers and their dispatcher helpers
cost more than a small reduction does). Every method of the class is checked, so a method added later is too.
Their values against NumPy are tested with dask's chunk calls (tests/ecosystem/test_dask.py)."""

from __future__ import annotations

import inspect
import sys

import dask.array as da
import numpy as np
import pytest

import trn_backend as xp
from tests.support import assert_same

# arguments for the methods that need some; every other method is called with none
ARGUMENTS = {
    "clip": (0, 3),
    "repeat": (2,),
    "reshape": (4, 3),
    "searchsorted": (3.5,),
    "swapaxes": (0, 1),
    "take": ([0, 2],),
    "astype": (np.float32,),
    "dot": (np.ones((4, 2)),),
    "trace": (),
    "diagonal": (),
}
METHODS = sorted(
    name
    for name, member in inspect.getmembers(xp.NeuronArray)
    if inspect.isfunction(member)
    and member.__qualname__.startswith("NdarrayMethods.")
    and not name.startswith("_")
    and name != "tolist"
)


def numpy_frames_called_from(name: str, call) -> list[str]:
    """The functions of NumPy's Python code that the method's own frame calls directly."""
    seen: list[str] = []

    def profile(frame, event, arg):
        if (
            event == "call"
            and frame.f_back is not None
            and frame.f_back.f_code.co_name == name
            and frame.f_back.f_code.co_filename.endswith("_ndarray.py")
        ):
            module = frame.f_globals.get("__name__", "")
            if module.startswith("numpy"):
                seen.append(f"{module}.{frame.f_code.co_name}")
        return None

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


def test_every_method_is_checked():
    assert {"sum", "mean", "reshape", "transpose", "astype", "copy", "flatten", "conj"} <= set(METHODS)


@pytest.mark.parametrize("name", METHODS)
def test_methods_skip_numpys_function_wrappers(name):
    a = np.arange(12, dtype=np.float64) if name == "searchsorted" else np.arange(12.0).reshape(3, 4) % 5
    x = xp.asarray(a)
    args = ARGUMENTS.get(name, ())
    assert numpy_frames_called_from(name, lambda: getattr(x, name)(*args)) == []
    result, expected = getattr(x, name)(*args), getattr(a.copy(), name)(*args)
    if name == "nonzero":  # a tuple of index arrays
        assert len(result) == len(expected)
        result, expected = np.stack([np.asarray(r) for r in result]), np.stack(expected)
    else:
        assert isinstance(result, xp.NeuronArray), type(result)
    np.testing.assert_array_equal(np.asarray(result), expected)


def test_methods_with_another_array_type_leave_the_decision_to_numpys_protocol():
    """An operand of another array type with its own __array_function__ goes through the NumPy function, so
    NumPy asks that type too (dask does not handle NeuronArrays: NumPy's TypeError names both types)."""
    x = xp.asarray(np.ones((3, 4)))
    with pytest.raises(TypeError, match="dask"):
        x.dot(da.ones((4, 2)))


# calls whose arguments take each road through the table: by position, by keyword, converted (dtype), out=,
# an argument the implementation lacks at NumPy's default (where=True), and errors
CALLS = [
    ("sum", (0,), {}),
    ("sum", (), {"axis": (0, 1), "keepdims": True}),
    ("sum", (1, np.float32), {}),
    ("sum", (), {"dtype": "int64"}),
    ("sum", (), {"where": True}),
    ("prod", (), {"axis": -1, "initial": 2}),
    ("mean", (0,), {"keepdims": True}),
    ("std", (), {"axis": 1, "ddof": 1}),
    ("var", (None, None, None, 1), {}),
    ("max", (), {"axis": 0, "initial": 7}),
    ("argmin", (1,), {}),
    ("cumsum", (), {"axis": 0, "dtype": np.float32}),
    ("any", (), {"axis": 1}),
    ("all", (0,), {"keepdims": True}),
    ("clip", (1, 3), {}),
    ("round", (1,), {}),
    ("take", ([2, 0],), {"axis": 1}),
    ("repeat", (2,), {"axis": 0}),
    ("swapaxes", (0, 1), {}),
]


@pytest.mark.parametrize("name, args, kwargs", CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CALLS)])
def test_method_calls_match_numpys_methods(name, args, kwargs):
    a = np.arange(12.0).reshape(3, 4) / 3
    assert_same(getattr(xp.asarray(a), name)(*args, **kwargs), getattr(a.copy(), name)(*args, **kwargs), rtol=1e-12)


def test_method_out_and_errors_follow_numpy():
    x = xp.asarray(np.arange(12.0).reshape(3, 4))
    out = xp.zeros(4)
    assert x.sum(0, out=out) is out and np.asarray(out).tolist() == [12.0, 15.0, 18.0, 21.0]
    with pytest.raises(TypeError, match="bogus"):
        x.sum(bogus=1)
    with pytest.raises(TypeError, match="where"):
        x.sum(where=np.ones((3, 4), bool))
    with pytest.raises(TypeError):
        x.sum(0, 1, 2, 3, 4, 5, 6, 7)
